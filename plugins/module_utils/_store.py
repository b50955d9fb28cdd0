# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The durable report store: every run's files under ``<store>/<run id>/``, the ``latest`` and ``last-pass``
pointers, ``index.json``/``index.csv``, retention. Runs on the store host (the controller or a file server), so
stdlib only.

The store is a private directory (_paths.private_directory_problem, the rule of the quiesce state directory): not a
symlink, owned by the user publishing, writable by nobody else, below parents only root or that user can change; its
upload directory ``.incoming`` likewise. Both are opened once with ``O_NOFOLLOW`` and every name in them (runs,
pointers, index, uploads) is reached relative to those descriptors, never through a path another user could swap.
Every run id read back from disk (index.json, a pointer, a directory name) is checked as a new one is, and only real
directories directly in the store, owned by the publishing user, are pruned.

Publishing is two steps. ``prepare_incoming`` makes ``<store>/.incoming/<run id>.tmp`` (the role copies the run's
files into it); ``publish`` then checks the files against the SHA256SUMS the controller computed (and signed, with a
key the store host never sees: plugin_utils/_baseline_trust.py), writes SHA256SUMS and its signature
(``SHA256SUMS.hmac``) and, under an exclusive ``flock`` on ``<store>/.lock`` (sliced jobs publish at the same time),
renames the directory to ``<store>/<run id>``, rewrites the index and moves the pointers - each step a rename, so a
failure at any point leaves every earlier run as it was. A cancel signal (SIGTERM, SIGINT, SIGHUP) waits until the run
directory, the index and the pointers have all moved; a run left out of the index by a SIGKILL in between is indexed
again by the next publish.

``last-pass`` (the next run's baseline) moves only to a signed run that passed and judged the whole fleet: a full
run or a merge, never a partial one (a slice, a ``--limit`` run). The store cannot check a signature (it has no key):
the controller does, before a baseline is used; the store only refuses a signature that names another run, scope,
verdict or SHA256SUMS than the one it publishes.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import errno
import hashlib
import io
import json
import os
import re
import secrets
import stat
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import _proc
from ._csv_cells import neutralised
from ._flock import wait_for_flock
from ._paths import ancestor_problem, owner_name, private_directory_problem, write_file_at
from ._tree import remove_tree_at

INCOMING = ".incoming"
LOCK = ".lock"
LATEST = "latest"
LAST_PASS = "last-pass"
INDEX_JSON = "index.json"
INDEX_CSV = "index.csv"
SUMS = "SHA256SUMS"
SIGNATURE = "SHA256SUMS.hmac"
REPORT_JSON = "report.json"
INDEX_SCHEMA = 1
RESERVED = frozenset((LATEST, LAST_PASS, INDEX_JSON, INDEX_CSV, INCOMING, LOCK))
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
RUN_ID_MAX = 128
STALE_UPLOAD_S = 7 * 24 * 3600    # an upload this old in .incoming belongs to a job that died
# A partial run no merge has named yet is kept this long whatever keep says: its merge may still read it.
PENDING_MERGE_S = STALE_UPLOAD_S
# full: every host the playbook targets; merge: record sets judged as one fleet; partial: a slice or a --limit run.
SCOPES = ("full", "partial", "merge")
BASELINE_SCOPES = ("full", "merge")
SUMS_MAX_BYTES = 1 << 20          # SHA256SUMS and its signature are read back whole for the controller
SIGNATURE_MAX_BYTES = 4096
CSV_LEADING = ("run_id", "time", "published", "playbook", "passed", "scope", "signed", "total")
CSV_TRAILING = ("hosts", "path")
PICK_COMMAND = ("ansible-playbook diskproof.fleet.store_pick -e diskproof_report_store=%s "
                "-e diskproof_report_store_pick=RUN_ID")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_HEX16 = re.compile(r"[0-9a-f]{16}\Z")


class StoreError(Exception):
    """The store cannot be used, or this publish cannot go on; the message says what to do."""


# ---------------------------------------------------------------------------------------------
# names


def check_run_id(run_id: str) -> str:
    """The run id as given, or StoreError: it names a directory of the store, so letters, digits, '.', '_', '-'
    only, not starting with '.', at most 128 characters, and none of the store's own names."""
    if not run_id:
        raise StoreError("the run id is empty; leave diskproof_report_store_run_id unset to get one made")
    if not isinstance(run_id, str):
        raise StoreError("run id %r is not a string" % (run_id,))
    if run_id in RESERVED:
        raise StoreError("run id %r is reserved (the store's own names: %s); choose another"
                         % (run_id, ", ".join(sorted(RESERVED))))
    if len(run_id) > RUN_ID_MAX:
        raise StoreError("run id %r is longer than %d characters; choose a shorter one" % (run_id[:40], RUN_ID_MAX))
    if not RUN_ID.match(run_id):
        raise StoreError("run id %r must be letters, digits, '.', '_' and '-', starting with a letter or digit"
                         % run_id)
    return run_id


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise StoreError("scope %r is not one of %s" % (scope, ", ".join(SCOPES)))
    return scope


def new_run_id(when: datetime.datetime, awx_job_id: Optional[str]) -> str:
    """``<UTC time>-awx<job id>`` under AWX, else ``<UTC time>-<8 random hex digits>``: sorts by time and never
    repeats for two runs starting in the same second."""
    stamp = when.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    suffix = "awx%s" % awx_job_id if awx_job_id not in (None, "") else secrets.token_hex(4)
    return check_run_id("%s-%s" % (stamp, suffix))


# ---------------------------------------------------------------------------------------------
# the signature file: its layout (the controller computes and checks the HMAC, plugin_utils/_baseline_trust.py)

SIGNATURE_HEADER = "diskproof-store-signature: 1"


def signed_statement(run_id: str, scope: str, passed: bool, sums_sha256: str, key_id: str) -> str:
    """The text an HMAC signs: which run, what it judged (scope), whether it passed, which SHA256SUMS (and so which
    files), and which key. SHA256SUMS.hmac is this text followed by ``hmac-sha256: <hex>``."""
    return "%s\nrun_id: %s\nscope: %s\npassed: %s\nsha256sums: %s\nkey_id: %s\n" % (
        SIGNATURE_HEADER, run_id, scope, "true" if passed else "false", sums_sha256, key_id)


def parse_signature(text: str) -> Dict[str, str]:
    """The fields of a SHA256SUMS.hmac text (run_id, scope, passed, sha256sums, key_id, hmac) and ``signed``, the
    exact text the HMAC covers; StoreError when it is not one."""
    lines = text.split("\n")
    keys = ("run_id", "scope", "passed", "sha256sums", "key_id", "hmac-sha256")
    if len(lines) != len(keys) + 2 or lines[0] != SIGNATURE_HEADER or lines[-1] != "":
        raise StoreError("not a diskproof store signature (%s, then %s)" % (SIGNATURE_HEADER, ", ".join(keys)))
    fields: Dict[str, str] = {}
    for key, line in zip(keys, lines[1:]):
        name, separator, value = line.partition(": ")
        if name != key or not separator:
            raise StoreError("not a diskproof store signature: line %r where %s was expected" % (line[:80], key))
        fields[key] = value
    if fields["passed"] not in ("true", "false") or fields["scope"] not in SCOPES \
            or not _HEX64.match(fields["sha256sums"]) or not _HEX16.match(fields["key_id"]) \
            or not _HEX64.match(fields["hmac-sha256"]):
        raise StoreError("not a diskproof store signature: a field has the wrong form")
    check_run_id(fields["run_id"])
    fields["hmac"] = fields.pop("hmac-sha256")
    fields["signed"] = text[:text.rindex("hmac-sha256: ")]
    return fields


# ---------------------------------------------------------------------------------------------
# the store directory


def _refuse_unusable(path: str) -> None:
    """StoreError when path is neither a directory nor something the first publish can make."""
    if not os.path.lexists(path):
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise StoreError("diskproof_report_store %s does not exist and neither does its parent %s; create the "
                             "store directory (or mount the share) on the store host, or correct the path"
                             % (path, parent))
    elif not os.path.isdir(path):
        raise StoreError("diskproof_report_store %s is not a directory; point diskproof_report_store at a directory "
                         "(or remove what is there)" % path)


def _fix(path: str, euid: int) -> str:
    return ("make it private to %s (chown %d %s; chmod go-w %s) after checking nobody else changed its runs, run the "
            "store's tasks as its owner (diskproof_report_store_become), or choose another store (docs/report-store.md, "
            "Threat model)" % (owner_name(euid), euid, path, path))


class StoreDir:
    """The store, opened once (O_DIRECTORY|O_NOFOLLOW) and checked like the quiesce state directory; every name in
    it is reached relative to that descriptor. ``create`` makes a missing store (0755) below an existing parent."""

    def __init__(self, path: str, create: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.euid = os.geteuid()
        self.fd: Optional[int] = None
        _refuse_unusable(self.path)
        if create and not os.path.lexists(self.path):
            try:
                os.mkdir(self.path, 0o755)
            except FileExistsError:
                pass                                    # another slice made it meanwhile
            except OSError as error:
                raise StoreError("diskproof_report_store %s could not be created: %s; create it on the store host "
                                 "for the user that publishes" % (self.path, error.strerror)) from error
        current = os.path.dirname(self.path)
        while True:
            problem = ancestor_problem("diskproof_report_store %s" % self.path, current, os.stat(current), self.euid)
            if problem:
                raise StoreError(problem)
            if current == os.path.dirname(current):
                break
            current = os.path.dirname(current)
        self.fd = self._open_private(None, self.path, "diskproof_report_store", "give the real directory")

    def _open_private(self, parent: Optional[int], path: str, what: str, link_fix: str) -> int:
        """A descriptor of the private directory path (relative to parent when given), checked; StoreError else."""
        name = os.path.basename(path) if parent is not None else path
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise StoreError("%s %s is a symbolic link: %s" % (what, path, link_fix)) from error
            raise
        problem = private_directory_problem(what, path, os.fstat(fd), self.euid, _fix(self.path, self.euid))
        if problem:
            os.close(fd)
            raise StoreError(problem)
        return fd

    def open_incoming(self, create: bool) -> int:
        """A descriptor of ``.incoming``, checked as the store is (made 0755 when ``create``)."""
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(INCOMING, 0o755, dir_fd=self.fd)
        return self._open_private(self.fd, self.path_of(INCOMING), "the store's upload directory",
                                  "remove the link (the store makes its own %s)" % INCOMING)

    def open_run(self, run_id: str, parent: Optional[int] = None, where: Optional[str] = None) -> int:
        """A descriptor of the run directory run_id (or of an upload in ``parent``): a real directory owned by the
        publishing user; StoreError naming what is there instead."""
        where = where or self.path_of(run_id)
        try:
            fd = os.open(run_id, _DIR_FLAGS, dir_fd=self.fd if parent is None else parent)
        except OSError as error:
            raise StoreError("%s is not a run directory of the store (%s): a run is a real directory directly in the "
                             "store" % (where, error.strerror or error)) from error
        info = os.fstat(fd)
        if info.st_uid != self.euid:
            os.close(fd)
            raise StoreError("%s is owned by %s, not by %s that publishes: %s"
                             % (where, owner_name(info.st_uid), owner_name(self.euid), _fix(self.path, self.euid)))
        return fd

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def path_of(self, *names: str) -> str:
        return os.path.join(self.path, *names)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "StoreDir":
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()


def check_store(path: str) -> str:
    """The store's absolute path once it is a usable private directory; a missing store is created (mode 0755) when
    its parent exists. StoreError otherwise, saying what to do."""
    with StoreDir(path, create=True) as root:
        return root.path


@contextlib.contextmanager
def store_lock(root: StoreDir, timeout: float) -> Iterator[None]:
    """An exclusive flock on ``<store>/.lock`` for the block: publishes of concurrent jobs take turns."""
    where = root.path_of(LOCK)
    descriptor = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=root.fd)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise StoreError("%s is not a regular file; remove it" % where)
        try:
            locked = wait_for_flock(descriptor, timeout, poll_s=0.05)
        except OSError as error:
            raise StoreError("cannot lock %s: %s; the store's filesystem must support flock (NFS v4 does)"
                             % (where, error.strerror)) from error
        if not locked:
            raise StoreError("another publish has held %s for more than %.0f s; wait for it or raise "
                             "diskproof_report_store_lock_timeout" % (where, timeout))
        yield
    finally:
        os.close(descriptor)                        # releases the lock


def point(root: StoreDir, name: str, run_id: str) -> None:
    """``<store>/<name>`` -> ``<run id>`` (relative, so the store can be mounted anywhere), replaced in one rename
    of a new symlink made under a temporary name."""
    temporary = ".%s.%s.tmp" % (name, secrets.token_hex(4))
    os.symlink(check_run_id(run_id), temporary, dir_fd=root.fd)
    try:
        os.rename(temporary, name, src_dir_fd=root.fd, dst_dir_fd=root.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=root.fd)
        raise


def pointer(root: StoreDir, name: str) -> Optional[str]:
    """The run id a pointer names, None when there is no pointer; StoreError when it is not the store's own."""
    path = root.path_of(name)
    try:
        info = os.stat(name, dir_fd=root.fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        raise StoreError("%s is not a symbolic link (the store keeps %s as a link to a run directory); move it out "
                         "of the store and publish again" % (path, name))
    target = os.readlink(name, dir_fd=root.fd)
    try:
        return check_run_id(target)
    except StoreError as error:
        raise StoreError("%s points to %r, not to a run of the store; remove the link and publish again"
                         % (path, target)) from error


# ---------------------------------------------------------------------------------------------
# checksums


def sha256_stream(handle: Any) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def sums_text(files: Iterable[Tuple[str, str]]) -> str:
    """SHA256SUMS text of (relative path, sha256) pairs, as ``sha256sum -c`` reads it (``<hex>  <path>``), sorted by
    path; StoreError for names sha256sum would have to escape. The one layout, for the store and the controller."""
    lines = []
    for relative, digest in sorted(files):
        if "\n" in relative or "\\" in relative:
            raise StoreError("%s: a file name with a newline or backslash cannot be checksummed; rename it" % relative)
        lines.append("%s  %s\n" % (digest, relative))
    return "".join(lines)


def _files_at(directory: int, where: str, prefix: str = "") -> Iterator[Tuple[str, str]]:
    """(relative path, sha256) of every regular file under the directory open as ``directory``, never following a
    symlink (StoreError for one, and for anything but files and directories); SHA256SUMS and its signature at the
    top are not the run's files."""
    for name in os.listdir(directory):
        if not prefix and name in (SUMS, SIGNATURE):
            continue
        path = os.path.join(where, name)
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            child = os.open(name, _DIR_FLAGS, dir_fd=directory)
            try:
                yield from _files_at(child, path, prefix + name + "/")
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            with os.fdopen(os.open(name, _FILE_FLAGS, dir_fd=directory), "rb") as handle:
                yield prefix + name, sha256_stream(handle)
        else:
            raise StoreError("%s is not a regular file or directory; only plain files are published" % path)


def _read_at(directory: int, name: str, where: str, limit: Optional[int] = None) -> Optional[bytes]:
    """The bytes of the regular file name in directory (never through a symlink), None when there is none."""
    try:
        descriptor = os.open(name, _FILE_FLAGS, dir_fd=directory)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreError("cannot read %s: %s (a symbolic link is never followed in the store)"
                         % (where, error.strerror or error)) from error
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise StoreError("%s is not a regular file" % where)
        if limit is not None and info.st_size > limit:
            raise StoreError("%s is %d bytes, more than the %d it may hold" % (where, info.st_size, limit))
        return handle.read()


def recorded_sum(sums: str, relative: str) -> Optional[str]:
    """The sha256 a SHA256SUMS text records for one of its files, None when it records none."""
    for line in sums.splitlines():
        digest, _separator, name = line.partition("  ")
        if name == relative:
            return digest
    return None


# ---------------------------------------------------------------------------------------------
# the index


def read_report(data: Optional[bytes], where: str) -> Dict[str, Any]:
    if data is None:
        raise StoreError("no report.json in %s: the report callback wrote nothing there; check "
                         "diskproof_report_dir and that the callback diskproof.fleet.report is enabled"
                         % os.path.dirname(where))
    try:
        report = json.loads(data)
    except ValueError as error:
        raise StoreError("report.json %s is not a diskproof report (%s); publish the callback's own file"
                         % (where, error)) from error
    if not isinstance(report, dict) or not isinstance(report.get("summary"), dict):
        raise StoreError("report.json %s is not a diskproof report (no summary); publish the callback's own file"
                         % where)
    return report


def index_entry(run_id: str, run_dir: str, report: Dict[str, Any], published: str, scope: Optional[str],
                signed: bool, report_sha256: Optional[str], merged: Sequence[str] = ()) -> Dict[str, Any]:
    """One run of index.json: what the report says about itself, what the publish made of it, where it lives."""
    run = report.get("run") if isinstance(report.get("run"), dict) else {}
    summary = report["summary"]
    counts = summary.get("counts") if isinstance(summary.get("counts"), dict) else {}
    hosts = report.get("hosts") if isinstance(report.get("hosts"), dict) else {}
    entry = {
        "run_id": run_id,
        "time": run.get("finished") or run.get("started") or published,
        "published": published,
        "playbook": run.get("playbook"),
        "passed": summary.get("passed") is True,     # a report that does not say it passed did not pass
        "scope": scope,
        "signed": signed,
        "report_sha256": report_sha256,
        "total": summary.get("total"),
        "counts": dict(counts),
        "hosts": sorted(hosts),
        "path": run_dir,
    }
    if scope == "merge":
        entry["merged"] = sorted(set(merged))
    return entry


def _index_problem(run: Any) -> Optional[str]:
    """Why one entry of index.json cannot be trusted as one of the store's runs, or None."""
    if not isinstance(run, dict):
        return "an entry that is not a mapping"
    try:
        check_run_id(run.get("run_id"))
    except StoreError:
        return "run_id %r, which is no run of the store" % (run.get("run_id"),)
    if not isinstance(run.get("published"), str) or not isinstance(run.get("passed"), bool):
        return "run %s without its published time or passed flag" % run["run_id"]
    if run.get("scope", "full") not in SCOPES + (None,):
        return "run %s with scope %r" % (run["run_id"], run.get("scope"))
    return None


def read_index(root: StoreDir, warnings: List[str]) -> List[Dict[str, Any]]:
    """The runs of index.json, oldest first. An index that cannot be read, or names anything that is not one of the
    store's runs (a forged run_id such as a path outside the store), is rebuilt from the run directories, with a
    warning: no name read back from disk is used unchecked."""
    where = root.path_of(INDEX_JSON)
    try:
        data = _read_at(root.fd, INDEX_JSON, where)
        if data is None:
            return []
        runs = json.loads(data)["runs"]
        if not isinstance(runs, list):
            raise ValueError("runs is not a list of runs")
        problem = next((found for found in map(_index_problem, runs) if found), None)
        if problem:
            raise ValueError("it names %s" % problem)
        return runs
    except (StoreError, ValueError, KeyError, TypeError) as error:
        runs = rebuild_index(root)
        warnings.append("%s was unreadable or not the store's (%s); rebuilt it from the %d run directories"
                        % (where, error, len(runs)))
        return runs


def _utc(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(text: Any) -> Optional[float]:
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


def _rebuilt_entry(root: StoreDir, name: str) -> Optional[Dict[str, Any]]:
    """The index entry of run directory name, from its own files, None when it is not a published run. The scope
    is what its signature says (None without one: unknown, never a baseline)."""
    try:
        run_fd = root.open_run(name)
    except StoreError:
        return None
    try:
        where = root.path_of(name)
        sums_info = os.stat(SUMS, dir_fd=run_fd, follow_symlinks=False)
        sums = (_read_at(run_fd, SUMS, os.path.join(where, SUMS), SUMS_MAX_BYTES) or b"").decode("utf-8", "replace")
        report = read_report(_read_at(run_fd, REPORT_JSON, os.path.join(where, REPORT_JSON)), where)
        signature = _read_at(run_fd, SIGNATURE, os.path.join(where, SIGNATURE), SIGNATURE_MAX_BYTES)
        scope = None
        if signature is not None:
            with contextlib.suppress(StoreError, UnicodeDecodeError):
                scope = parse_signature(signature.decode("utf-8"))["scope"]
        return index_entry(name, where, report, _utc(sums_info.st_mtime), scope, signature is not None,
                           recorded_sum(sums, REPORT_JSON))
    except (OSError, StoreError):
        return None
    finally:
        os.close(run_fd)


def rebuild_index(root: StoreDir, skip: frozenset = frozenset()) -> List[Dict[str, Any]]:
    """Index entries of the run directories (each with report.json and SHA256SUMS) not named in ``skip``, oldest
    first; published is when SHA256SUMS was written."""
    runs = []
    for name in sorted(os.listdir(root.fd)):
        if name in skip or name in RESERVED or not RUN_ID.match(name) or len(name) > RUN_ID_MAX:
            continue
        entry = _rebuilt_entry(root, name)
        if entry is not None:
            runs.append(entry)
    return sorted(runs, key=lambda run: run["published"])


def adopt_unindexed(root: StoreDir, runs: List[Dict[str, Any]], warnings: List[str]) -> List[Dict[str, Any]]:
    """The index's runs plus any run directory it does not name: what a publish killed with SIGKILL between its
    rename and the index leaves (cancel signals wait for that step, SIGKILL cannot). Each one found is indexed
    again, with a warning; oldest first."""
    found = rebuild_index(root, frozenset(run["run_id"] for run in runs))
    for run in found:
        warnings.append("run %s was in the store but not in its index (a publish was killed before it wrote the "
                        "index): indexed again" % run["run_id"])
    return sorted(runs + found, key=lambda run: run["published"]) if found else runs


def _cell(value: Any) -> Any:
    text = {True: "true", False: "false", None: ""}[value] if isinstance(value, (bool, type(None))) else value
    return neutralised(text)


def index_csv(runs: List[Dict[str, Any]]) -> str:
    """index.csv: one row per run, the verdict counts as columns (the verdicts the reports name, in their order: the
    judge defines them, not this file), ``hosts`` as a count. Every cell, header included, through the one CSV
    neutraliser (module_utils/_csv_cells.py): verdict names come from report.json files."""
    verdicts: List[str] = []
    for run in runs:
        verdicts.extend(verdict for verdict in run.get("counts") or {} if verdict not in verdicts)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_cell(name) for name in CSV_LEADING + tuple(verdicts) + CSV_TRAILING])
    for run in runs:
        counts = run.get("counts") or {}
        row = [run.get(name) for name in CSV_LEADING] + [counts.get(verdict, 0) for verdict in verdicts] \
            + [len(run.get("hosts") or []), run.get("path")]
        writer.writerow([_cell(value) for value in row])
    return out.getvalue()


def write_index(root: StoreDir, runs: List[Dict[str, Any]]) -> None:
    document = {"schema": INDEX_SCHEMA, "runs": runs}
    write_file_at(root.fd, INDEX_JSON, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8"), 0o644)
    write_file_at(root.fd, INDEX_CSV, index_csv(runs).encode("utf-8"), 0o644)


def run_scope(run: Mapping[str, Any]) -> Optional[str]:
    """A run's scope; an entry written before scopes existed judged what its playbook targeted: full."""
    return run.get("scope", "full")


def is_baseline(run: Mapping[str, Any]) -> bool:
    """Whether a run may be last-pass: signed, passed, and judged the whole fleet (a full run or a merge)."""
    return run.get("passed") is True and run.get("signed") is True and run_scope(run) in BASELINE_SCOPES


def pending_merge(runs: Sequence[Mapping[str, Any]], now: float) -> List[str]:
    """Partial runs (slices, --limit runs) no merge of the index has named yet, published less than PENDING_MERGE_S
    ago: a merge may still read them, so retention keeps them."""
    merged = {digest for run in runs if run_scope(run) == "merge" for digest in run.get("merged") or ()}
    pending = []
    for run in runs:
        published = _epoch(run.get("published"))
        if run_scope(run) == "partial" and run.get("report_sha256") not in merged \
                and published is not None and now - published < PENDING_MERGE_S:
            pending.append(run["run_id"])
    return pending


def to_prune(runs: List[Dict[str, Any]], keep: int, protected: Sequence[Optional[str]]) -> List[str]:
    """Run ids to remove, oldest first, so that at most ``keep`` runs stay (0: keep all); a protected run (a
    pointer's, one a pending merge names) is never removed, even when that leaves more than ``keep``."""
    if keep <= 0 or len(runs) <= keep:
        return []
    excess = len(runs) - keep
    pruned = []
    for run in runs:
        if len(pruned) == excess:
            break
        if run["run_id"] not in protected:
            pruned.append(run["run_id"])
    return pruned


# ---------------------------------------------------------------------------------------------
# publish


def incoming_path(store: str, run_id: str) -> str:
    return os.path.join(store, INCOMING, check_run_id(run_id) + ".tmp")


def prepare_incoming(store: str, run_id: str) -> str:
    """``<store>/.incoming/<run id>.tmp``, new and empty, for the role to copy the run's files into. Refused when
    the store already holds that run or another job is publishing it."""
    check_run_id(run_id)
    with StoreDir(store, create=True) as root:
        if root.exists(run_id):
            raise StoreError("the store %s already holds a run %s; a run directory is never replaced - publish under "
                             "another diskproof_report_store_run_id" % (root.path, run_id))
        incoming = root.open_incoming(create=True)
        path = incoming_path(root.path, run_id)
        try:
            os.mkdir(run_id + ".tmp", 0o755, dir_fd=incoming)
        except FileExistsError as error:
            raise StoreError("%s exists: run %s is being published (or a publish of it failed: remove that directory "
                             "after checking no job is publishing it)" % (path, run_id)) from error
        finally:
            os.close(incoming)
    return path


def check_signature(signature: str, run_id: str, scope: str, passed: bool, sums: str) -> Dict[str, str]:
    """The fields of a signature that is about this run as published (the store cannot check the HMAC: it has no
    key); StoreError naming what differs."""
    fields = parse_signature(signature)
    expected = {"run_id": run_id, "scope": scope, "passed": "true" if passed else "false",
                "sha256sums": hashlib.sha256(sums.encode("utf-8")).hexdigest()}
    differs = ["%s %s (the run: %s)" % (key, fields[key], value) for key, value in expected.items()
               if fields[key] != value]
    if differs:
        raise StoreError("the signature names %s; sign this run's SHA256SUMS on the controller and publish again"
                         % ", ".join(differs))
    return fields


def publish(store: str, run_id: str, keep: int = 0, lock_timeout: float = 60.0, now: Optional[float] = None,
            scope: str = "full", sums: Optional[str] = None, signature: Optional[str] = None,
            merged: Sequence[str] = ()) -> Dict[str, Any]:
    """Turn ``<store>/.incoming/<run id>.tmp`` into the run ``<store>/<run id>`` (with SHA256SUMS, checked against
    ``sums`` when the controller gave them, and its ``signature``), add it to the index, point ``latest`` at it (and
    ``last-pass`` when it is a baseline: is_baseline), prune beyond ``keep``. ``merged``: for a merge, the sha256 of
    each record set it read (partial runs it consumed). Returns run_dir, entry, latest, last_pass, pruned and
    warnings."""
    check_run_id(run_id)
    check_scope(scope)
    now = time.time() if now is None else now
    with StoreDir(store) as root:
        source_path = incoming_path(root.path, run_id)
        try:
            incoming = root.open_incoming(create=False)
        except FileNotFoundError as error:
            raise StoreError("%s is not there: copy the run's files into it first (state=incoming makes it)"
                             % source_path) from error
        try:
            try:
                source = root.open_run(run_id + ".tmp", incoming, source_path)
            except StoreError as error:
                raise StoreError("%s is not there: copy the run's files into it first (state=incoming makes it)"
                                 % source_path) from error
            try:
                return _publish(root, incoming, source, run_id, keep, lock_timeout, now, scope, sums, signature,
                                merged)
            finally:
                os.close(source)
        finally:
            os.close(incoming)


def _publish(root: StoreDir, incoming: int, source: int, run_id: str, keep: int, lock_timeout: float, now: float,
             scope: str, sums: Optional[str], signature: Optional[str], merged: Sequence[str]) -> Dict[str, Any]:
    source_path = incoming_path(root.path, run_id)
    report_data = _read_at(source, REPORT_JSON, os.path.join(source_path, REPORT_JSON))
    report = read_report(report_data, os.path.join(source_path, REPORT_JSON))
    computed = sums_text(_files_at(source, source_path))
    if sums is not None and sums != computed:
        raise StoreError("the files in %s are not the ones the controller checksummed (their SHA256SUMS differs): they "
                         "changed on the way or after the copy; publish again" % source_path)
    passed = report["summary"].get("passed") is True
    if signature:
        check_signature(signature, run_id, scope, passed, computed)
    write_file_at(source, SUMS, computed.encode("utf-8"), 0o644)
    if signature:
        write_file_at(source, SIGNATURE, signature.encode("utf-8"), 0o644)
    run_dir = root.path_of(run_id)
    entry = index_entry(run_id, run_dir, report, _utc(now), scope, bool(signature),
                        hashlib.sha256(report_data or b"").hexdigest(), merged)
    warnings: List[str] = []
    with store_lock(root, lock_timeout):
        # Checked before anything moves: a pointer the store cannot replace fails the publish, not half of it.
        last_pass = pointer(root, LAST_PASS)
        pointer(root, LATEST)
        if root.exists(run_id):
            raise StoreError("the store %s already holds a run %s; a run directory is never replaced - publish "
                             "under another diskproof_report_store_run_id" % (root.path, run_id))
        runs = adopt_unindexed(root, [run for run in read_index(root, warnings) if run["run_id"] != run_id], warnings)
        # The run directory, the index and the pointers change together: a cancel (AWX's SIGTERM, Ctrl-C) arriving
        # now waits until they all have, so it never leaves a run in the store that the index does not name.
        with _proc.cancel_signals_held():
            os.rename(run_id + ".tmp", run_id, src_dir_fd=incoming, dst_dir_fd=root.fd)
            os.fsync(root.fd)
            runs.append(entry)
            if is_baseline(entry):
                last_pass = run_id
            pruned = to_prune(runs, keep, [run_id, last_pass] + pending_merge(runs, now))
            runs = [run for run in runs if run["run_id"] not in pruned]
            write_index(root, runs)
            point(root, LATEST, run_id)
            if is_baseline(entry):
                point(root, LAST_PASS, run_id)
            os.fsync(root.fd)
        for pruned_id in pruned:
            _remove_run(root, incoming, pruned_id, warnings)
        _sweep_incoming(root, incoming, now, warnings)
    return {"run_dir": run_dir, "entry": entry, "latest": run_id, "last_pass": last_pass, "pruned": pruned,
            "warnings": warnings}


def _remove_run(root: StoreDir, incoming: int, run_id: str, warnings: List[str]) -> None:
    """A pruned run: only a real directory directly in the store, owned by the publishing user, moved out of sight
    into .incoming first (one rename between the two descriptors), then removed without following any link."""
    path = root.path_of(check_run_id(run_id))
    try:
        info = os.stat(run_id, dir_fd=root.fd, follow_symlinks=False)
    except FileNotFoundError:
        warnings.append("pruned run %s had no directory %s" % (run_id, path))
        return
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != root.euid:
        warnings.append("pruned run %s: %s is not a run directory of the store (a symbolic link, a file, or owned by "
                        "%s): left in place" % (run_id, path, owner_name(info.st_uid)))
        return
    doomed = "%s.pruned-%s" % (run_id, secrets.token_hex(4))
    os.rename(run_id, doomed, src_dir_fd=root.fd, dst_dir_fd=incoming)
    warnings.extend(remove_tree_at(incoming, doomed, root.path_of(INCOMING, doomed)))


def _sweep_incoming(root: StoreDir, incoming: int, now: float, warnings: List[str]) -> None:
    """Remove what killed jobs left in .incoming: a prune's leftovers, and uploads older than STALE_UPLOAD_S
    (no job copies a report for that long). Only names this module makes, only real directories."""
    for name in os.listdir(incoming):
        pruned = ".pruned-" in name
        if not (pruned or name.endswith(".tmp")):
            continue
        info = os.stat(name, dir_fd=incoming, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode) or not (pruned or now - info.st_mtime > STALE_UPLOAD_S):
            continue
        path = root.path_of(INCOMING, name)
        problems = remove_tree_at(incoming, name, path)
        warnings.extend(problems)
        if not problems:
            warnings.append("removed %s, left by a publish that did not finish" % path)


# ---------------------------------------------------------------------------------------------
# query and pick


def _pick_advice(root: StoreDir) -> str:
    return ("pick a passing run of the whole fleet (after checking it): %s, with -e diskproof_report_store_host=HOST for a "
            "store on another host (docs/report-store.md, Pointers)" % (PICK_COMMAND % root.path))


def _indexed(root: StoreDir, runs: Sequence[Mapping[str, Any]], run_id: str, what: str) -> Mapping[str, Any]:
    """The index entry of a run that may be a baseline (passed, not partial); StoreError naming why not. ``what``
    says how the run was named ("last-pass points to run X", "run X")."""
    entry = next((run for run in runs if run["run_id"] == run_id), None)
    if entry is None:
        raise StoreError("%s, which is not in %s: a baseline must be a run the store published and indexed; %s"
                         % (what, root.path_of(INDEX_JSON), _pick_advice(root)))
    if entry.get("passed") is not True:
        raise StoreError("%s, but index.json says run %s did not pass; a baseline must have passed; %s"
                         % (what, run_id, _pick_advice(root)))
    if run_scope(entry) == "partial":
        raise StoreError("%s, but index.json says run %s is a partial run (a slice or a --limit run), which judged part "
                         "of the fleet only; %s" % (what, run_id, _pick_advice(root)))
    return entry


def _run_files(root: StoreDir, run_id: str, whole: bool) -> Dict[str, Any]:
    """report.json of a run checked against its SHA256SUMS (every file with ``whole``), and the SHA256SUMS and
    signature texts the controller checks the signature with."""
    run_dir = root.path_of(run_id)
    run_fd = root.open_run(run_id)
    try:
        report_json = os.path.join(run_dir, REPORT_JSON)
        data = _read_at(run_fd, SUMS, os.path.join(run_dir, SUMS), SUMS_MAX_BYTES)
        sums = data.decode("utf-8", "replace") if data is not None else ""
        try:
            with os.fdopen(os.open(REPORT_JSON, _FILE_FLAGS, dir_fd=run_fd), "rb") as handle:
                digest = sha256_stream(handle)
        except FileNotFoundError as error:
            raise StoreError("run %s has no report.json; %s" % (run_id, _pick_advice(root))) from error
        if recorded_sum(sums, REPORT_JSON) != digest:
            raise StoreError("%s does not match its SHA256SUMS (changed after it was published); restore it, or %s"
                             % (report_json, _pick_advice(root)))
        if whole and sums_text(_files_at(run_fd, run_dir)) != sums:
            raise StoreError("the files of run %s do not match its SHA256SUMS (changed after it was published); "
                             "restore them or pick another run" % run_id)
        signature = _read_at(run_fd, SIGNATURE, os.path.join(run_dir, SIGNATURE), SIGNATURE_MAX_BYTES)
    finally:
        os.close(run_fd)
    return {"run_id": run_id, "run_dir": run_dir, "report_json": report_json, "sha256": digest, "sums": sums,
            "signature": signature.decode("utf-8", "replace") if signature is not None else None}


def hosts_missing_from(runs: Sequence[Mapping[str, Any]], baseline: Mapping[str, Any]) -> Dict[str, str]:
    """Hosts that another passing run of the whole fleet measured but the baseline run did not: host -> the newest
    such run. Their disks have no baseline although the store judged them before (the judge reports it)."""
    in_baseline = set(baseline.get("hosts") or ())
    missing: Dict[str, str] = {}
    for run in runs:
        if run.get("passed") is True and run_scope(run) in BASELINE_SCOPES and run["run_id"] != baseline["run_id"]:
            for host in run.get("hosts") or ():
                if isinstance(host, str) and host not in in_baseline:
                    missing[host] = run["run_id"]      # runs are oldest first: the newest one stays
    return missing


def query(store: str, run_id: Optional[str] = None) -> Dict[str, Any]:
    """What the store's pointers name (nothing for a store not made yet whose parent exists): ``last_pass`` - the run
    last-pass names, refused unless the index says it passed and judged the whole fleet: run_id, run_dir, report_json
    (checked against its SHA256SUMS), sha256, sums, signature, entry, hosts_missing - or None; ``latest`` run id or
    None; ``runs`` in the index. With ``run_id``, that run instead of last-pass (store_pick), every file checked."""
    store = os.path.abspath(store)
    _refuse_unusable(store)
    if not os.path.lexists(store):
        return {"last_pass": None, "latest": None, "runs": 0, "warnings": []}   # a new store: the first publish makes it
    with StoreDir(store) as root:
        warnings: List[str] = []
        runs = read_index(root, warnings)
        found: Dict[str, Any] = {"last_pass": None, "latest": pointer(root, LATEST), "runs": len(runs),
                                 "warnings": warnings}
        chosen = pointer(root, LAST_PASS) if run_id is None else check_run_id(run_id)
        if chosen is None:
            return found
        entry = _indexed(root, runs, chosen, ("last-pass points to run %s" if run_id is None else "run %s") % chosen)
        found["last_pass"] = dict(_run_files(root, chosen, whole=run_id is not None), entry=dict(entry),
                                  hosts_missing=hosts_missing_from(runs, entry))
        return found


def pick(store: str, run_id: str, signature: str, lock_timeout: float = 60.0) -> Dict[str, Any]:
    """Make run_id the baseline: write the signature the controller made for it (after checking the run on the
    controller) and point last-pass at it. Refused unless the index says it passed and is not partial, every file
    matches its SHA256SUMS and the signature names this run, its scope and that SHA256SUMS."""
    check_run_id(run_id)
    with StoreDir(store) as root:
        with store_lock(root, lock_timeout):
            warnings: List[str] = []
            runs = read_index(root, warnings)
            entry = _indexed(root, runs, run_id, "run %s" % run_id)
            files = _run_files(root, run_id, whole=True)
            fields = parse_signature(signature)
            scope = fields["scope"]
            if scope not in BASELINE_SCOPES:
                raise StoreError("the signature says scope %s: only a full run or a merge can be the baseline" % scope)
            check_signature(signature, run_id, scope, True, files["sums"])
            previous = pointer(root, LAST_PASS)
            run_fd = root.open_run(run_id)
            try:
                write_file_at(run_fd, SIGNATURE, signature.encode("utf-8"), 0o644)
            finally:
                os.close(run_fd)
            with _proc.cancel_signals_held():
                for run in runs:
                    if run["run_id"] == run_id:
                        run.update(signed=True, scope=scope, report_sha256=files["sha256"])
                write_index(root, runs)
                point(root, LAST_PASS, run_id)
                os.fsync(root.fd)
    return {"run_id": run_id, "last_pass": run_id, "previous": previous, "entry": dict(entry, signed=True, scope=scope),
            "warnings": warnings}
