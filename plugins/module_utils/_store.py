# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The durable report store: every run's files under ``<store>/<run id>/``, the ``latest`` and ``last-pass``
pointers, ``index.json``/``index.csv``, retention. Runs on the store host (the controller or a file server), so
stdlib only.

Publishing is two steps. ``prepare_incoming`` makes ``<store>/.incoming/<run id>.tmp`` (the role copies the run's
files into it); ``publish`` then, under an exclusive ``flock`` on ``<store>/.lock`` (sliced jobs publish at the
same time), writes ``SHA256SUMS``, renames the directory to ``<store>/<run id>``, rewrites the index and moves
the pointers - each step a rename, so a failure at any point leaves every earlier run as it was. A cancel signal
(SIGTERM, SIGINT, SIGHUP) waits until the run directory, the index and the pointers have all moved; a run left out of
the index by a SIGKILL in between is indexed again by the next publish.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional

from ansible_collections.diskproof.fleet.plugins.module_utils import _proc
from ._flock import wait_for_flock

INCOMING = ".incoming"
LOCK = ".lock"
LATEST = "latest"
LAST_PASS = "last-pass"
INDEX_JSON = "index.json"
INDEX_CSV = "index.csv"
SUMS = "SHA256SUMS"
REPORT_JSON = "report.json"
INDEX_SCHEMA = 1
RESERVED = frozenset((LATEST, LAST_PASS, INDEX_JSON, INDEX_CSV, INCOMING, LOCK))
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
RUN_ID_MAX = 128
STALE_UPLOAD_S = 7 * 24 * 3600    # an upload this old in .incoming belongs to a job that died
CSV_LEADING = ("run_id", "time", "published", "playbook", "passed", "total")
CSV_TRAILING = ("hosts", "path")
# A spreadsheet runs a cell starting with one of these as a formula (OWASP CSV injection); such a cell gets a
# leading apostrophe. The callback's own rule (plugin_utils/_csv_cells.py) is controller code, not shipped here.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class StoreError(Exception):
    """The store cannot be used, or this publish cannot go on; the message says what to do."""


# ---------------------------------------------------------------------------------------------
# names


def check_run_id(run_id: str) -> str:
    """The run id as given, or StoreError: it names a directory of the store, so letters, digits, '.', '_', '-'
    only, not starting with '.', at most 128 characters, and none of the store's own names."""
    if not run_id:
        raise StoreError("the run id is empty; leave diskproof_report_store_run_id unset to get one made")
    if run_id in RESERVED:
        raise StoreError("run id %r is reserved (the store's own names: %s); choose another"
                         % (run_id, ", ".join(sorted(RESERVED))))
    if len(run_id) > RUN_ID_MAX:
        raise StoreError("run id %r is longer than %d characters; choose a shorter one" % (run_id[:40], RUN_ID_MAX))
    if not RUN_ID.match(run_id):
        raise StoreError("run id %r must be letters, digits, '.', '_' and '-', starting with a letter or digit"
                         % run_id)
    return run_id


def new_run_id(when: datetime.datetime, awx_job_id: Optional[str]) -> str:
    """``<UTC time>-awx<job id>`` under AWX, else ``<UTC time>-<8 random hex digits>``: sorts by time and never
    repeats for two runs starting in the same second."""
    stamp = when.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    suffix = "awx%s" % awx_job_id if awx_job_id not in (None, "") else secrets.token_hex(4)
    return check_run_id("%s-%s" % (stamp, suffix))


# ---------------------------------------------------------------------------------------------
# the store directory


def check_store(path: str) -> str:
    """The store's absolute path once it is a writable directory; a missing store is created (mode 0755) when
    its parent exists. StoreError otherwise, saying what to do."""
    path = os.path.abspath(path)
    _refuse_unusable(path)
    if not os.path.lexists(path):
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass                                    # another slice made it meanwhile
        except OSError as error:
            raise StoreError("diskproof_report_store %s could not be created: %s; create it on the store host "
                             "with write access for the ssh user" % (path, error.strerror)) from error
    _refuse_unusable(path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError("diskproof_report_store %s is not writable by uid %d; give that user write access "
                         "(or set diskproof_report_store_become), or choose another store" % (path, os.geteuid()))
    return path


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


@contextlib.contextmanager
def store_lock(store: str, timeout: float) -> Iterator[None]:
    """An exclusive flock on ``<store>/.lock`` for the block: publishes of concurrent jobs take turns."""
    descriptor = os.open(os.path.join(store, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            locked = wait_for_flock(descriptor, timeout, poll_s=0.05)
        except OSError as error:
            raise StoreError("cannot lock %s: %s; the store's filesystem must support flock (NFS v4 does)"
                             % (os.path.join(store, LOCK), error.strerror)) from error
        if not locked:
            raise StoreError("another publish has held %s for more than %.0f s; wait for it or raise "
                             "diskproof_report_store_lock_timeout" % (os.path.join(store, LOCK), timeout))
        yield
    finally:
        os.close(descriptor)                        # releases the lock


def _fsync_dir(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_atomic(directory: str, name: str, data: bytes, mode: int = 0o644) -> None:
    """``directory/name`` replaced in one rename by a complete, fsynced file (readers see old or new)."""
    descriptor, temporary = tempfile.mkstemp(prefix=".%s." % name, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.rename(temporary, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def point(store: str, name: str, run_id: str) -> None:
    """``<store>/<name>`` -> ``<run id>`` (relative, so the store can be mounted anywhere), replaced in one rename
    of a new symlink made under a temporary name."""
    temporary = os.path.join(store, ".%s.%s.tmp" % (name, secrets.token_hex(4)))
    os.symlink(run_id, temporary)
    try:
        os.rename(temporary, os.path.join(store, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def pointer(store: str, name: str) -> Optional[str]:
    """The run id a pointer names, None when there is no pointer; StoreError when it is not the store's own."""
    path = os.path.join(store, name)
    if not os.path.lexists(path):
        return None
    if not os.path.islink(path):
        raise StoreError("%s is not a symbolic link (the store keeps %s as a link to a run directory); move it out "
                         "of the store and publish again" % (path, name))
    target = os.readlink(path)
    try:
        return check_run_id(target)
    except StoreError as error:
        raise StoreError("%s points to %r, not to a run of the store; remove the link and publish again"
                         % (path, target)) from error


# ---------------------------------------------------------------------------------------------
# checksums


def _files(root: str) -> List[str]:
    """Every regular file under root as a sorted relative path; StoreError for anything else (a symlink could
    point out of the store) and for names sha256sum would have to escape."""
    found = []
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if "\n" in relative or "\\" in relative:
                raise StoreError("%s: a file name with a newline or backslash cannot be checksummed; rename it"
                                 % path)
            if os.path.islink(path) or not (os.path.isdir(path) or os.path.isfile(path)):
                raise StoreError("%s is not a regular file or directory; only plain files are published" % path)
            if name in files:
                found.append(relative)
    return sorted(found)


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256sums(root: str) -> str:
    """SHA256SUMS text for every file under root, as ``sha256sum -c`` reads it (``<hex>  <path>``)."""
    return "".join("%s  %s\n" % (sha256_file(os.path.join(root, relative)), relative)
                   for relative in _files(root) if relative != SUMS)


def recorded_sum(run_dir: str, relative: str) -> Optional[str]:
    """The sha256 SHA256SUMS of a run records for one of its files, None when it records none."""
    with contextlib.suppress(FileNotFoundError):
        with open(os.path.join(run_dir, SUMS), encoding="utf-8") as handle:
            for line in handle:
                digest, _separator, name = line.rstrip("\n").partition("  ")
                if name == relative:
                    return digest
    return None


# ---------------------------------------------------------------------------------------------
# the index


def read_report(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except FileNotFoundError as error:
        raise StoreError("no report.json in %s: the report callback wrote nothing there; check "
                         "diskproof_report_dir and that the callback diskproof.fleet.report is enabled"
                         % os.path.dirname(path)) from error
    except (OSError, ValueError) as error:
        raise StoreError("report.json %s is not a diskproof report (%s); publish the callback's own file"
                         % (path, error)) from error
    if not isinstance(report, dict) or not isinstance(report.get("summary"), dict):
        raise StoreError("report.json %s is not a diskproof report (no summary); publish the callback's own file"
                         % path)
    return report


def index_entry(run_id: str, run_dir: str, report: Dict[str, Any], published: str) -> Dict[str, Any]:
    """One run of index.json: what the report says about itself, and where the run lives."""
    run = report.get("run") if isinstance(report.get("run"), dict) else {}
    summary = report["summary"]
    counts = summary.get("counts") if isinstance(summary.get("counts"), dict) else {}
    hosts = report.get("hosts") if isinstance(report.get("hosts"), dict) else {}
    return {
        "run_id": run_id,
        "time": run.get("finished") or run.get("started") or published,
        "published": published,
        "playbook": run.get("playbook"),
        "passed": summary.get("passed") is True,     # a report that does not say it passed did not pass
        "total": summary.get("total"),
        "counts": dict(counts),
        "hosts": sorted(hosts),
        "path": run_dir,
    }


def read_index(store: str, warnings: List[str]) -> List[Dict[str, Any]]:
    """The runs of index.json, oldest first; an unreadable index is rebuilt from the run directories (each with
    report.json and SHA256SUMS), with a warning."""
    path = os.path.join(store, INDEX_JSON)
    try:
        with open(path, encoding="utf-8") as handle:
            index = json.load(handle)
        runs = index["runs"]
        if not isinstance(runs, list) or not all(isinstance(run, dict) and "run_id" in run for run in runs):
            raise ValueError("runs is not a list of runs")
        return runs
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as error:
        runs = rebuild_index(store)
        warnings.append("%s was unreadable (%s); rebuilt it from the %d run directories" % (path, error, len(runs)))
        return runs


def rebuild_index(store: str, skip: frozenset = frozenset()) -> List[Dict[str, Any]]:
    """Index entries of the run directories (each with report.json and SHA256SUMS) not named in ``skip``, oldest
    first; published is when SHA256SUMS was written."""
    runs = []
    for name in sorted(os.listdir(store)):
        run_dir = os.path.join(store, name)
        if name in skip or name in RESERVED or name.startswith(".") or os.path.islink(run_dir) \
                or not os.path.isdir(run_dir):
            continue
        if not os.path.isfile(os.path.join(run_dir, SUMS)):
            continue
        with contextlib.suppress(StoreError):
            published = _utc(os.stat(os.path.join(run_dir, SUMS)).st_mtime)
            runs.append(index_entry(name, run_dir, read_report(os.path.join(run_dir, REPORT_JSON)), published))
    return sorted(runs, key=lambda run: run["published"])


def adopt_unindexed(store: str, runs: List[Dict[str, Any]], warnings: List[str]) -> List[Dict[str, Any]]:
    """The index's runs plus any run directory it does not name: what a publish killed with SIGKILL between its
    rename and the index leaves (cancel signals wait for that step, SIGKILL cannot). Each one found is indexed
    again, with a warning; oldest first."""
    found = rebuild_index(store, frozenset(run["run_id"] for run in runs))
    for run in found:
        warnings.append("run %s was in the store but not in its index (a publish was killed before it wrote the "
                        "index): indexed again" % run["run_id"])
    return sorted(runs + found, key=lambda run: run["published"]) if found else runs


def _cell(value: Any) -> str:
    text = {True: "true", False: "false", None: ""}.get(value, value) if isinstance(value, (bool, type(None))) \
        else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def index_csv(runs: List[Dict[str, Any]]) -> str:
    """index.csv: one row per run, the verdict counts as columns (the verdicts the reports name, in
    their order: the judge defines them, not this file), ``hosts`` as a count."""
    verdicts: List[str] = []
    for run in runs:
        verdicts.extend(verdict for verdict in run.get("counts") or {} if verdict not in verdicts)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_LEADING + tuple(verdicts) + CSV_TRAILING)
    for run in runs:
        counts = run.get("counts") or {}
        row = [run.get("run_id"), run.get("time"), run.get("published"), run.get("playbook"), run.get("passed"),
               run.get("total")] + [counts.get(verdict, 0) for verdict in verdicts] \
            + [len(run.get("hosts") or []), run.get("path")]
        writer.writerow([_cell(value) for value in row])
    return out.getvalue()


def write_index(store: str, runs: List[Dict[str, Any]]) -> None:
    document = {"schema": INDEX_SCHEMA, "runs": runs}
    write_atomic(store, INDEX_JSON, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    write_atomic(store, INDEX_CSV, index_csv(runs).encode("utf-8"))


def to_prune(runs: List[Dict[str, Any]], keep: int, protected: List[Optional[str]]) -> List[str]:
    """Run ids to remove, oldest first, so that at most ``keep`` runs stay (0: keep all); a pointer's run is never
    removed, even when that leaves more than ``keep``."""
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


def _utc(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# publish and query


def incoming_path(store: str, run_id: str) -> str:
    return os.path.join(store, INCOMING, check_run_id(run_id) + ".tmp")


def prepare_incoming(store: str, run_id: str) -> str:
    """``<store>/.incoming/<run id>.tmp``, new and empty, for the role to copy the run's files into. Refused when
    the store already holds that run or another job is publishing it."""
    store = check_store(store)
    check_run_id(run_id)
    if os.path.lexists(os.path.join(store, run_id)):
        raise StoreError("the store %s already holds a run %s; a run directory is never replaced - publish under "
                         "another diskproof_report_store_run_id" % (store, run_id))
    with contextlib.suppress(FileExistsError):
        os.mkdir(os.path.join(store, INCOMING), 0o755)
    path = incoming_path(store, run_id)
    try:
        os.mkdir(path, 0o755)
    except FileExistsError as error:
        raise StoreError("%s exists: run %s is being published (or a publish of it failed: remove that directory "
                         "after checking no job is publishing it)" % (path, run_id)) from error
    return path


def publish(store: str, run_id: str, keep: int = 0, lock_timeout: float = 60.0,
            now: Optional[float] = None) -> Dict[str, Any]:
    """Turn ``<store>/.incoming/<run id>.tmp`` into the run ``<store>/<run id>`` (with SHA256SUMS), add it to the
    index, point ``latest`` (and ``last-pass`` when the report passed) at it, prune beyond ``keep``. Returns
    run_dir, entry, latest, last_pass, pruned and warnings."""
    store = check_store(store)
    source = incoming_path(store, run_id)
    run_dir = os.path.join(store, run_id)
    if not os.path.isdir(source) or os.path.islink(source):
        raise StoreError("%s is not there: copy the run's files into it first (state=incoming makes it)" % source)
    report = read_report(os.path.join(source, REPORT_JSON))
    write_atomic(source, SUMS, sha256sums(source).encode("utf-8"))
    published = _utc(time.time() if now is None else now)
    entry = index_entry(run_id, run_dir, report, published)
    warnings: List[str] = []
    with store_lock(store, lock_timeout):
        # Checked before anything moves: a pointer the store cannot replace fails the publish, not half of it.
        last_pass = pointer(store, LAST_PASS)
        pointer(store, LATEST)
        if os.path.lexists(run_dir):
            raise StoreError("the store %s already holds a run %s; a run directory is never replaced - publish "
                             "under another diskproof_report_store_run_id" % (store, run_id))
        runs = adopt_unindexed(store, [run for run in read_index(store, warnings) if run["run_id"] != run_id], warnings)
        # The run directory, the index and the pointers change together: a cancel (AWX's SIGTERM, Ctrl-C) arriving
        # now waits until they all have, so it never leaves a run in the store that the index does not name.
        with _proc.cancel_signals_held():
            os.rename(source, run_dir)
            _fsync_dir(store)
            runs.append(entry)
            if entry["passed"]:
                last_pass = run_id
            pruned = to_prune(runs, keep, [run_id, last_pass])
            runs = [run for run in runs if run["run_id"] not in pruned]
            write_index(store, runs)
            point(store, LATEST, run_id)
            if entry["passed"]:
                point(store, LAST_PASS, run_id)
            _fsync_dir(store)
        for pruned_id in pruned:
            _remove_run(store, pruned_id, warnings)
        _sweep_incoming(store, time.time() if now is None else now, warnings)
    return {"run_dir": run_dir, "entry": entry, "latest": run_id, "last_pass": last_pass, "pruned": pruned,
            "warnings": warnings}


def _remove_run(store: str, run_id: str, warnings: List[str]) -> None:
    """A pruned run: moved out of sight into .incoming first (one rename), then deleted."""
    path = os.path.join(store, run_id)
    if os.path.islink(path) or not os.path.isdir(path):
        warnings.append("pruned run %s had no directory %s" % (run_id, path))
        return
    doomed = os.path.join(store, INCOMING, "%s.pruned-%s" % (run_id, secrets.token_hex(4)))
    os.rename(path, doomed)
    shutil.rmtree(doomed)


def _sweep_incoming(store: str, now: float, warnings: List[str]) -> None:
    """Remove what killed jobs left in .incoming: a prune's leftovers, and uploads older than STALE_UPLOAD_S
    (no job copies a report for that long). Only names this module makes, only directories."""
    incoming = os.path.join(store, INCOMING)
    for name in os.listdir(incoming):
        path = os.path.join(incoming, name)
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        stale_upload = name.endswith(".tmp") and now - os.lstat(path).st_mtime > STALE_UPLOAD_S
        if ".pruned-" in name or stale_upload:
            shutil.rmtree(path, ignore_errors=True)
            warnings.append("removed %s, left by a publish that did not finish" % path)


def query(store: str) -> Dict[str, Any]:
    """What the store's pointers name (nothing for a store not made yet whose parent exists): ``last_pass``
    (run_id, run_dir, report_json - the run directory's own path, which a later publish does not move - and its
    sha256, checked against the run's SHA256SUMS) or None; ``latest`` run id or None; ``runs`` in the index."""
    store = os.path.abspath(store)
    _refuse_unusable(store)
    if not os.path.lexists(store):
        return {"last_pass": None, "latest": None, "runs": 0}     # a new store: the first publish makes it
    found: Dict[str, Any] = {"last_pass": None, "latest": pointer(store, LATEST), "runs": len(read_index(store, []))}
    run_id = pointer(store, LAST_PASS)
    if run_id is None:
        return found
    run_dir = os.path.join(store, run_id)
    report_json = os.path.join(run_dir, REPORT_JSON)
    if not os.path.isfile(report_json):
        raise StoreError("last-pass points to %s, which has no report.json; point last-pass at an intact run "
                         "(ln -sfn RUN_ID %s) or remove the link" % (run_dir, os.path.join(store, LAST_PASS)))
    digest = sha256_file(report_json)
    if recorded_sum(run_dir, REPORT_JSON) != digest:
        raise StoreError("%s does not match its SHA256SUMS (changed after it was published); restore it, or point "
                         "last-pass at another run" % report_json)
    found["last_pass"] = {"run_id": run_id, "run_dir": run_dir, "report_json": report_json, "sha256": digest}
    return found
