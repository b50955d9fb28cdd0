# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record sets: the report.json of a run read back as the records and host outcomes it judged.

A merge (the action diskproof.fleet.report with record_sets, playbooks/merge.yml) reads several record
sets into one Collection (plugin_utils/_report.py) and hands it to the one report pipeline, which judges
the whole fleet once. Nothing here judges. Pure: no Ansible imports.

Each file is read once: refused over ``RECORD_SET_MAX_BYTES`` before it is read (it is held in memory,
parsed, about 8 times its size), checked whole (schema, the collection's major version, a hosts section
with each host's status and problems, as many records per host as that section counts), and its sha256
taken from the very bytes parsed. Every problem of every file is listed in one RecordSetError, and a host
in two record sets is refused, naming both: slices and sites hold disjoint hosts.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _report

REPORT_JSON = "report.json"
# The largest record set read (diskproof_record_sets_max_bytes): a 5,000-host fleet's quick-profile report is about
# 55 MB; reading one costs about 8 times its size in memory.
RECORD_SET_MAX_BYTES = 128 * 1024 * 1024
# report.json schemas whose results carry every record in full and whose hosts section carries
# each host's status and problems: a record set.
RECORD_SET_SCHEMAS = (1, 2)
HOST_STATUSES = (_aggregate.HOST_OK, _aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE)


class RecordSetError(ValueError):
    """A record set that cannot be merged; the message lists every problem and what to do."""


def record_set_files(specs: Sequence[Any]) -> List[str]:
    """The report.json files named by ``specs``: files, directories holding a report.json, or glob
    patterns of either. Absolute, real paths in the order given, each once."""
    if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence):
        raise RecordSetError("diskproof_record_sets must be a list of report.json files, directories or glob "
                             "patterns, got %s" % type(specs).__name__)
    if not specs:
        raise RecordSetError("no record set to merge: give the report.json of every slice or site in "
                             "diskproof_record_sets (files, directories holding one, or glob patterns), or as "
                             "diskproof_record_set_<name> variables")
    found: List[str] = []
    problems: List[str] = []
    for spec in specs:
        if not isinstance(spec, str) or not spec:
            problems.append("%r: not a path" % (spec,))
            continue
        matches = sorted(glob.glob(spec)) if glob.has_magic(spec) else [spec]
        if not matches:
            problems.append("%s: the pattern matches nothing" % spec)
        for match in matches:
            path = os.path.join(match, REPORT_JSON) if os.path.isdir(match) else match
            if not os.path.isfile(path):
                why = " (the directory holds no report.json)" if os.path.isdir(match) else ""
                problems.append("%s: no such file%s" % (path, why))
                continue
            real = os.path.realpath(path)
            if real not in found:
                found.append(real)
    if problems:
        raise RecordSetError("record sets not found: %s; give each slice's report.json (or its report directory)"
                             % "; ".join(problems))
    return found


def collection_major(version: Any) -> Optional[str]:
    """The major version of a collection version string ("0.1.0" -> "0"), None when unknown."""
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        return None
    return version.split(".")[0]


def _read(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > limit:
                raise RecordSetError("%s is %d bytes, more than the %d a record set may hold (reading one takes about "
                                     "8 times its size in memory): merge smaller slices, or raise "
                                     "diskproof_record_sets_max_bytes if the controller has the memory" % (path, size, limit))
            data = stream.read(limit + 1)
    except OSError as exc:
        raise RecordSetError("%s: cannot read it: %s" % (path, exc.strerror or exc)) from exc
    if len(data) > limit:
        raise RecordSetError("%s grew past the %d bytes a record set may hold while it was read: merge it again "
                             "once it is complete" % (path, limit))
    return data


def _host_problems(path: str, host: str, status: Any, problems: List[str]) -> None:
    if not isinstance(status, Mapping):
        problems.append("%s: hosts.%s is not a mapping" % (path, host))
        return
    if status.get("status") not in HOST_STATUSES:
        problems.append("%s: hosts.%s.status is %r, not one of %s" % (path, host, status.get("status"),
                                                                      ", ".join(HOST_STATUSES)))
    listed = status.get("problems")
    if not isinstance(listed, list) or not all(
            isinstance(problem, Mapping) and problem.get("status") in HOST_STATUSES[1:] for problem in listed):
        problems.append("%s: hosts.%s.problems is not a list of {task, status: failed|unreachable, message}"
                        % (path, host))
    if type(status.get("records")) is not int:  # pylint: disable=unidiomatic-typecheck
        problems.append("%s: hosts.%s.records is not a count" % (path, host))


def check_record_set(path: str, report: Any, collection_version: Optional[str]) -> List[str]:
    """Every problem of one decoded report.json as a record set ([] when it can be merged).

    ``collection_version``: this collection's; a record set of another major version is refused
    (its records may mean something else)."""
    if not isinstance(report, Mapping):
        return ["%s: not a report.json (a %s); give the report.json the diskproof.fleet.report callback wrote, "
                "unchanged" % (path, type(report).__name__)]
    problems: List[str] = []
    schema = report.get("report_schema", 1)
    if schema not in RECORD_SET_SCHEMAS:
        problems.append("%s: report_schema %r; this collection merges report schemas %s: judge it with the "
                        "collection version that wrote it" % (path, schema, ", ".join(map(str, RECORD_SET_SCHEMAS))))
    run = report.get("run")
    written_by = run.get("collection_version") if isinstance(run, Mapping) else None
    if collection_major(written_by) is None:
        problems.append("%s: run.collection_version is %r: cannot tell which diskproof.fleet wrote it; merge only "
                        "report.json files the report callback wrote" % (path, written_by))
    elif collection_major(collection_version) not in (None, collection_major(written_by)):
        problems.append("%s: written by diskproof.fleet %s, this is %s: a record set is merged only by the same "
                        "major version; run the merge with diskproof.fleet %s.x" % (
                            path, written_by, collection_version, collection_major(written_by)))
    hosts, results = report.get("hosts"), report.get("results")
    if not isinstance(hosts, Mapping) or not isinstance(results, list):
        problems.append("%s: no hosts or results: not a report.json of diskproof.fleet.report" % path)
        return problems
    for host, status in hosts.items():
        _host_problems(path, host, status, problems)
    counted = {host: 0 for host in hosts}
    for position, entry in enumerate(results):
        host = entry.get("host") if isinstance(entry, Mapping) else None
        if host not in counted:
            problems.append("%s: results[%d] names host %r, which is not in its hosts section" % (path, position, host))
            continue
        record = entry.get("record")
        if record is None:
            continue  # a host problem's entry: the hosts section holds the problem itself
        if not isinstance(record, Mapping):
            problems.append("%s: results[%d].record is not a mapping" % (path, position))
            continue
        counted[host] += 1
    for host, status in hosts.items():
        count = status.get("records") if isinstance(status, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool) and count != counted[host]:
            problems.append("%s: hosts.%s.records says %d, results hold %d: the file is incomplete or was edited"
                            % (path, host, count, counted[host]))
    return problems


def read_record_sets(paths: Sequence[str], collection_version: Optional[str],
                     max_bytes: Optional[int] = None) -> Tuple[_report.Collection, List[Dict[str, str]]]:
    """(one Collection of every host of every record set, [{path, sha256}] of each file read); RecordSetError
    listing every problem of every file, and every host found in two of them."""
    limit = RECORD_SET_MAX_BYTES if max_bytes is None else max_bytes
    problems: List[str] = []
    reports = []
    first_seen: Dict[str, str] = {}
    for path in paths:
        try:
            data = _read(path, limit)
            report = json.loads(data.decode("utf-8"))
        except RecordSetError as exc:
            problems.append(str(exc))
            continue
        except ValueError as exc:  # bad UTF-8 or JSON
            problems.append("%s: not a report.json (%s); give the report.json the diskproof.fleet.report callback "
                            "wrote, unchanged" % (path, exc))
            continue
        found = check_record_set(path, report, collection_version)
        if found:
            problems.extend(found)
            continue
        for host in report["hosts"]:
            if host in first_seen:
                problems.append("host %s is in two record sets, %s and %s: each host may be in one only (slices and "
                                "sites hold disjoint hosts; was a run given twice, or a merged report with its slices?)"
                                % (host, first_seen[host], path))
            first_seen.setdefault(host, path)
        reports.append((path, hashlib.sha256(data).hexdigest(), report))
    if problems:
        raise RecordSetError("cannot merge: " + "; ".join(problems))
    collection = _report.Collection(_report.RecordsInMemory())
    for _path, _digest, report in reports:
        part = _report.collection_of(report)
        collection.by_host.update(part.by_host)
        collection.host_statuses.update(part.host_statuses)
    return collection, [{"path": path, "sha256": digest} for path, digest, _report_ in reports]
