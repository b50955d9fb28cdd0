# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the report store's baseline can be trusted: the store key, the signature of each run's SHA256SUMS, and
what a baseline that lacks a host the store judged before means for the judge.

Controller only (the action diskproof.fleet.store_signature; the judge reads ``lost_baseline_hosts``). The store
host never sees the key: the controller computes SHA256SUMS over the report directory before the copy and signs it
(HMAC-SHA256 over a statement naming the run, its scope, its verdict and that SHA256SUMS, module_utils/_store.py's
layout); the store only checks that its copy matches those sums. Before a baseline is used, the controller checks
the signature, that the SHA256SUMS it covers is the run's, that the fetched report.json is the one those sums
record, and that the signed statement says the run passed and judged the whole fleet. Pure: no Ansible imports.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from typing import Any, Dict, Iterator, Optional, Tuple

from ansible_collections.diskproof.fleet.plugins.module_utils import _store

KEY_VARIABLE = "diskproof_store_key"
KEY_FILE_VARIABLE = "diskproof_store_key_file"
KEY_ENV = "DISKPROOF_STORE_KEY"
KEY_FILE_ENV = "DISKPROOF_STORE_KEY_FILE"
KEY_MIN_CHARS = 32
KEY_FILE_MAX_BYTES = 4096
# What the copy of the baseline carries besides the report: which run it is, and the hosts it lacks.
STORE_BASELINE_KEY = "store_baseline"
KEY_ADVICE = ("give the controller the store's key: %s (a file, 0600, e.g. from an AWX credential), or %s, %s, %s; "
              "make one with `openssl rand -hex 32` (docs/report-store.md, Threat model)"
              % (KEY_FILE_ENV, KEY_FILE_VARIABLE, KEY_VARIABLE, KEY_ENV))


class TrustError(ValueError):
    """A key or a baseline that cannot be used; the message says what to do."""


# ---------------------------------------------------------------------------------------------
# the key


def _key_text(text: str, where: str) -> bytes:
    key = text.strip()
    if len(key) < KEY_MIN_CHARS:
        raise TrustError("the store key from %s has %d characters, fewer than %d: %s"
                         % (where, len(key), KEY_MIN_CHARS, KEY_ADVICE))
    return key.encode("utf-8")


def _key_file(path: str, where: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise TrustError("the store key file %s (%s) is not a regular file" % (path, where))
            if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise TrustError("the store key file %s (%s) has mode %04o: others may read it; chmod 600 %s"
                                 % (path, where, stat.S_IMODE(info.st_mode), path))
            data = handle.read(KEY_FILE_MAX_BYTES + 1)
    except OSError as error:
        raise TrustError("the store key file %s (%s) cannot be read: %s" % (path, where, error.strerror or error)) \
            from error
    if len(data) > KEY_FILE_MAX_BYTES:
        raise TrustError("the store key file %s (%s) is longer than %d bytes: is it the key?"
                         % (path, where, KEY_FILE_MAX_BYTES))
    return _key_text(data.decode("utf-8", "replace"), "%s (%s)" % (path, where))


def store_key(variables: Mapping[str, Any], environ: Mapping[str, str]) -> Optional[Tuple[bytes, str]]:
    """(key, where it came from) from the first of: the variable diskproof_store_key, the controller file the
    variable diskproof_store_key_file names, the environment's DISKPROOF_STORE_KEY, the file DISKPROOF_STORE_KEY_FILE
    names; None when none is set. Read on the controller only."""
    sources = ((variables.get(KEY_VARIABLE), "variable " + KEY_VARIABLE, False),
               (variables.get(KEY_FILE_VARIABLE), "variable " + KEY_FILE_VARIABLE, True),
               (environ.get(KEY_ENV), "environment " + KEY_ENV, False),
               (environ.get(KEY_FILE_ENV), "environment " + KEY_FILE_ENV, True))
    for value, where, is_file in sources:
        if value in (None, ""):
            continue
        return (_key_file(str(value), where) if is_file else _key_text(str(value), where)), where
    return None


def key_id(key: bytes) -> str:
    """A name for the key that says nothing about it: the first 16 hex digits of an HMAC of a fixed text."""
    return hmac.new(key, b"diskproof store key id", hashlib.sha256).hexdigest()[:16]


def sign(key: bytes, run_id: str, scope: str, passed: bool, sums: str) -> str:
    """The SHA256SUMS.hmac text of a run: the signed statement and its HMAC-SHA256."""
    statement = _store.signed_statement(run_id, scope, passed, hashlib.sha256(sums.encode("utf-8")).hexdigest(),
                                        key_id(key))
    return statement + "hmac-sha256: %s\n" % hmac.new(key, statement.encode("utf-8"), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------------------------
# publish: the report directory's SHA256SUMS, signed before the copy


def _report_dir_files(root: str) -> Iterator[Tuple[str, str]]:
    """(relative path, sha256) of every file of the report directory as ansible.builtin.copy copies it: a symbolic
    link is followed and copied as what it points to."""
    for directory, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()
        for name in files:
            relative = os.path.relpath(os.path.join(directory, name), root)
            if relative in (_store.SUMS, _store.SIGNATURE):
                raise TrustError("%s holds %s: the store writes that file itself; remove it from the report directory"
                                 % (root, relative))
            with open(os.path.join(directory, name), "rb") as handle:
                yield relative, _store.sha256_stream(handle)


def seal(key: Optional[bytes], report_dir: str, run_id: str, scope: str) -> Dict[str, Any]:
    """What the publish hands the store: the SHA256SUMS text of the report directory, the signature (None without
    a key) and whether report.json says the run passed."""
    _store.check_run_id(run_id)
    _store.check_scope(scope)
    try:
        with open(os.path.join(report_dir, _store.REPORT_JSON), "rb") as handle:
            report = _store.read_report(handle.read(), os.path.join(report_dir, _store.REPORT_JSON))
        sums = _store.sums_text(_report_dir_files(report_dir))
    except (OSError, _store.StoreError) as error:
        raise TrustError("cannot checksum the report directory %s: %s" % (report_dir, error)) from error
    passed = report["summary"].get("passed") is True
    signature = sign(key, run_id, scope, passed, sums) if key is not None else None
    return {"sums": sums, "signature": signature, "passed": passed, "key_id": key_id(key) if key else None}


# ---------------------------------------------------------------------------------------------
# baseline: the run last-pass names, checked on the controller before it is used


def pick_command(store: str, store_host: str, run_id: str) -> str:
    host = "" if store_host in ("", "localhost") else " -e diskproof_report_store_host=%s" % store_host
    return ("ansible-playbook diskproof.fleet.store_pick -e diskproof_report_store=%s -e diskproof_report_store_pick=%s%s"
            % (store, run_id, host))


def _remedy(store: str, store_host: str, run_id: str) -> str:
    return ("if you trust run %s (check it), sign it with this controller's key and make it the baseline: %s; or pick "
            "another run the same way; or judge against a report you trust with -e diskproof_baseline_file=PATH"
            % (run_id, pick_command(store, store_host, run_id)))


def _copy_report(copy: str, sums: str, run_id: str) -> Dict[str, Any]:
    """The fetched report.json, once its sha256 is the one the run's SHA256SUMS records and it says it passed."""
    try:
        with open(copy, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise TrustError("the copy of run %s's report.json, %s, cannot be read: %s" % (run_id, copy, error)) from error
    if hashlib.sha256(data).hexdigest() != _store.recorded_sum(sums, _store.REPORT_JSON):
        raise TrustError("the copy of run %s's report.json brought to the controller (%s) does not match its "
                         "SHA256SUMS: it changed on the way, or after it was checked; run again, or judge against a "
                         "report you trust with -e diskproof_baseline_file=PATH" % (run_id, copy))
    try:
        report = json.loads(data)
    except ValueError as error:
        raise TrustError("run %s's report.json is not JSON (%s); pick another run, or judge against a report you "
                         "trust with -e diskproof_baseline_file=PATH" % (run_id, error)) from error
    if not isinstance(report, dict) or not isinstance(report.get("summary"), dict) \
            or report["summary"].get("passed") is not True:
        raise TrustError("run %s's report.json does not say it passed (summary.passed): a baseline must have passed; "
                         "pick another run, or judge against a report you trust with -e diskproof_baseline_file=PATH"
                         % run_id)
    return report


def verify_baseline(key: Optional[Tuple[bytes, str]], found: Mapping[str, Any], copy: str, store: str,
                    store_host: str) -> Dict[str, Any]:
    """Check the baseline run the store's query returned (``found``: run_id, sums, signature, entry, hosts_missing)
    and its report.json fetched to ``copy``; write into the copy what the judge needs to know of it (which run, the
    hosts it lacks: STORE_BASELINE_KEY) and return that. TrustError, saying how to re-sign or pick a run, for an
    unsigned, badly signed, failed or partial baseline."""
    run_id = found["run_id"]
    sums = found.get("sums") or ""
    signature = found.get("signature")
    if signature is None:
        raise TrustError("the report store's baseline, run %s (last-pass), has no signature (%s): it was published "
                         "without a store key or by an older diskproof.fleet, and anyone who can write the store could "
                         "have made it; %s" % (run_id, _store.SIGNATURE, _remedy(store, store_host, run_id)))
    if key is None:
        raise TrustError("the report store's baseline, run %s (last-pass), is signed, but no store key is configured "
                         "on this controller to check it: %s; or judge against a report you trust with "
                         "-e diskproof_baseline_file=PATH" % (run_id, KEY_ADVICE))
    secret, where = key
    try:
        fields = _store.parse_signature(signature)
    except _store.StoreError as error:
        raise TrustError("the signature of run %s is damaged (%s); %s"
                         % (run_id, error, _remedy(store, store_host, run_id))) from error
    expected = hmac.new(secret, fields["signed"].encode("utf-8"), hashlib.sha256).hexdigest()
    if fields["key_id"] != key_id(secret) or not hmac.compare_digest(expected, fields["hmac"]):
        raise TrustError("the signature of run %s does not verify with this controller's store key (%s, key id %s; the "
                         "signature names key id %s): the run's SHA256SUMS.hmac was changed, or it was signed with "
                         "another key; %s" % (run_id, where, key_id(secret), fields["key_id"],
                                              _remedy(store, store_host, run_id)))
    if fields["sha256sums"] != hashlib.sha256(sums.encode("utf-8")).hexdigest():
        raise TrustError("the SHA256SUMS of run %s does not match its signature: its files were changed after it was "
                         "published and SHA256SUMS recomputed; restore the run, or %s"
                         % (run_id, _remedy(store, store_host, run_id)))
    if fields["run_id"] != run_id:
        raise TrustError("the signature in run %s is run %s's: a signature was copied from another run; %s"
                         % (run_id, fields["run_id"], _remedy(store, store_host, run_id)))
    if fields["passed"] != "true" or fields["scope"] not in _store.BASELINE_SCOPES:
        raise TrustError("run %s is signed as %s, scope %s: a baseline must have passed and judged the whole fleet (a "
                         "full run or a merge); pick another run: %s; or judge against a report you trust with "
                         "-e diskproof_baseline_file=PATH"
                         % (run_id, "passed" if fields["passed"] == "true" else "failed", fields["scope"],
                            pick_command(store, store_host, "RUN_ID")))
    report = _copy_report(copy, sums, run_id)
    carried = {"run_id": run_id, "scope": fields["scope"], "key_id": fields["key_id"],
               "hosts_missing": dict(found.get("hosts_missing") or {})}
    report[STORE_BASELINE_KEY] = carried
    _write_json(copy, report)
    return carried


def sign_run(key: Optional[Tuple[bytes, str]], found: Mapping[str, Any], copy: str) -> str:
    """store_pick: the signature of a run an operator vouches for (the store checked it passed, is not partial and
    its files match its SHA256SUMS; here: the fetched report.json matches those sums and says it passed)."""
    if key is None:
        raise TrustError("no store key on this controller to sign run %s with: %s" % (found["run_id"], KEY_ADVICE))
    entry = found.get("entry") or {}
    scope = entry.get("scope", "full")
    if scope is None:
        scope = "full"      # indexed again from its directory, unsigned: the operator vouches for it
    if scope not in _store.BASELINE_SCOPES:
        raise TrustError("run %s is a partial run (scope %s): only a full run or a merge can be the baseline"
                         % (found["run_id"], scope))
    _copy_report(copy, found.get("sums") or "", found["run_id"])
    return sign(key[0], found["run_id"], scope, True, found.get("sums") or "")


def _write_json(path: str, document: Any) -> None:
    descriptor, temporary = tempfile.mkstemp(prefix=".baseline.", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# ---------------------------------------------------------------------------------------------
# the judge: a disk whose host had a baseline and now has none


def lost_baseline_hosts(baseline: Any) -> Dict[str, str]:
    """host -> why its disks have no baseline although the store judged the host before: another passing run of the
    whole fleet measured it, the baseline run did not. Empty for a baseline that is not the store's (a
    diskproof_baseline_file of your own) or that lacks no host. Computed once per report; the judge gives it to an
    entry of that host that finds no baseline value, in place of "no baseline for this disk and test"."""
    carried = baseline.get(STORE_BASELINE_KEY) if isinstance(baseline, Mapping) else None
    missing = carried.get("hosts_missing") if isinstance(carried, Mapping) else None
    if not isinstance(missing, Mapping):
        return {}
    reasons: Dict[str, str] = {}
    for host, run_id in missing.items():
        reasons[str(host)] = ("no baseline for this disk and test: the report store's passing run %s measured this "
                              "host, the baseline run %s did not (judged without a baseline; docs/report-store.md, "
                              "Threat model)" % (run_id, carried.get("run_id")))
    return reasons
