# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Record sets: the report.json of a run read back as the records and host outcomes it judged.

Controller only (the lookup diskproof.fleet.record_sets and the action diskproof.fleet.replay_records).
A merge replays every host of several record sets through the one judge, the report callback; nothing
here judges. Pure: no Ansible imports.

Index first (``index_record_sets``, once per merge): every file is read and checked, every problem
of every file is collected, and each host becomes one ``host entry`` (a plain dict: it travels as a
host variable) naming its record set, the byte ranges of its records in it, its status and problems.
Replay then (``host_records``, once per host): only those byte ranges are read again, from a file that
must still be the one indexed - the same device, inode, size, modification and change time (a
same-length edit whose modification time was put back with utime still moves the change time).

A record set larger than ``RECORD_SET_MAX_BYTES`` is refused before it is read (indexing holds the
file and its parsed entries in memory: about 8 times its size). Host names are compared as the
merge's ``add_host`` will make them (the caller's ``inventory_name``): ``n07`` and ``n07:22`` are one
inventory host, and a name add_host would change is no name the report callback writes.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate

REPORT_JSON = "report.json"
# The largest record set indexed (diskproof_record_sets_max_bytes): a 5,000-host fleet's quick-profile report is about
# 55 MB; indexing one costs about 8 times its size in memory.
RECORD_SET_MAX_BYTES = 128 * 1024 * 1024
# report.json schemas whose results carry every record in full and whose hosts section carries
# each host's status and problems: a record set.
RECORD_SET_SCHEMAS = (1, 2)
HOST_STATUSES = (_aggregate.HOST_OK, _aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE)
ENTRY_KEYS = ("host", "source", "identity", "sha256", "status", "problems", "records", "spans", "collection_version")


class RecordSetError(ValueError):
    """A record set that cannot be merged; the message lists every problem and what to do."""


# ---------------------------------------------------------------------------------------------
# finding the files
# ---------------------------------------------------------------------------------------------

def record_set_files(specs: Sequence[Any]) -> list[str]:
    """The report.json files named by ``specs``: files, directories holding a report.json, or glob
    patterns of either. Absolute, real paths in the order given, each once."""
    if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence):
        raise RecordSetError("diskproof_record_sets must be a list of report.json files, directories or glob "
                             "patterns, got %s" % type(specs).__name__)
    if not specs:
        raise RecordSetError("no record set to merge: give the report.json of every slice or site in "
                             "diskproof_record_sets (files, directories holding one, or glob patterns), or as "
                             "diskproof_record_set_<name> variables")
    found: list[str] = []
    problems: list[str] = []
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


# ---------------------------------------------------------------------------------------------
# reading one file
# ---------------------------------------------------------------------------------------------

def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _expect(text: str, index: int, char: str) -> int:
    index = _skip_space(text, index)
    if index >= len(text) or text[index] != char:
        raise ValueError("expected %r at character %d" % (char, index))
    return index + 1


def _items(text: str, index: int, closer: str, read_item: Callable[[int], int]) -> int:
    """The items of a JSON object or array, from index (after its opening bracket) to closer, separated by commas:
    read_item(start) reads one and returns where it ends. Returns the index after closer."""
    index = _skip_space(text, index)
    if text.startswith(closer, index):
        return index + 1
    while True:
        index = _skip_space(text, read_item(_skip_space(text, index)))
        if not text.startswith(",", index):
            return _expect(text, index, closer)
        index += 1


def _scan_report(text: str) -> tuple[dict[str, Any], list[tuple[Any, int, int]]]:
    """(top-level keys but results, [(entry, start, end)] of results) of a report.json text, any JSON
    layout: each entry is decoded where it stands, so its character span is known."""
    decode = json.JSONDecoder().raw_decode
    top: dict[str, Any] = {}
    entries: list[tuple[Any, int, int]] = []

    def read_entry(start: int) -> int:
        entry, end = decode(text, start)
        entries.append((entry, start, end))
        return end

    def read_member(start: int) -> int:
        key, index = decode(text, start)
        index = _skip_space(text, _expect(text, index, ":"))
        if key == "results" and text.startswith("[", index):
            top[key] = True
            return _items(text, index + 1, "]", read_entry)
        top[key], index = decode(text, index)
        return index

    index = _items(text, _expect(text, 0, "{"), "}", read_member)
    if _skip_space(text, index) != len(text):
        raise ValueError("text after the JSON document at character %d" % index)
    return top, entries


def collection_major(version: Any) -> str | None:
    """The major version of a collection version string ("0.1.0" -> "0"), None when unknown."""
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        return None
    return version.split(".")[0]


def _host_problems(path: str, host: str, status: Any, problems: list[str]) -> None:
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


def file_identity(stat: os.stat_result) -> list[int]:
    """What must not change between indexing a record set and replaying it: device, inode, size, modification and
    change time (utime can put the modification time back, never the change time)."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def read_record_set(path: str, collection_version: str | None, max_bytes: int | None = None) -> list[dict[str, Any]]:
    """The host entries of one report.json, hosts sorted; RecordSetError listing every problem.

    ``collection_version``: this collection's; a record set of another major version is refused
    (its records may mean something else). ``spans`` are the byte ranges of each host's records
    in the file (one per results entry that holds a record), or None when the file is not ASCII
    (the callback writes ASCII; a file re-encoded by hand is then read whole at replay).
    """
    limit = RECORD_SET_MAX_BYTES if max_bytes is None else max_bytes
    try:
        with open(path, "rb") as stream:
            stat = os.fstat(stream.fileno())
            if stat.st_size > limit:
                raise RecordSetError("%s is %d bytes, more than the %d a record set may hold (indexing one takes about "
                                     "8 times its size in memory): merge smaller slices, or raise "
                                     "diskproof_record_sets_max_bytes if the controller has the memory"
                                     % (path, stat.st_size, limit))
            data = stream.read(limit + 1)
    except OSError as exc:
        raise RecordSetError("%s: cannot read it: %s" % (path, exc.strerror or exc)) from exc
    if len(data) > limit:
        raise RecordSetError("%s grew past the %d bytes a record set may hold while it was read: merge it again "
                             "once it is complete" % (path, limit))
    try:
        text = data.decode("utf-8")
        top, entries = _scan_report(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordSetError("%s: not a report.json (%s); give the report.json the diskproof.fleet.report callback "
                             "wrote, unchanged" % (path, exc)) from exc
    problems: list[str] = []
    schema = top.get("report_schema", 1)
    if schema not in RECORD_SET_SCHEMAS:
        problems.append("%s: report_schema %r; this collection merges report schemas %s: judge it with the "
                        "collection version that wrote it" % (path, schema, ", ".join(map(str, RECORD_SET_SCHEMAS))))
    run = top.get("run")
    written_by = run.get("collection_version") if isinstance(run, Mapping) else None
    if collection_major(written_by) is None:
        problems.append("%s: run.collection_version is %r: cannot tell which diskproof.fleet wrote it; merge only "
                        "report.json files the report callback wrote" % (path, written_by))
    elif collection_major(collection_version) not in (None, collection_major(written_by)):
        problems.append("%s: written by diskproof.fleet %s, this is %s: a record set is merged only by the same "
                        "major version; run the merge with diskproof.fleet %s.x" % (
                            path, written_by, collection_version, collection_major(written_by)))
    hosts = top.get("hosts")
    if not isinstance(hosts, Mapping) or "results" not in top:
        problems.append("%s: no hosts or results: not a report.json of diskproof.fleet.report" % path)
        raise RecordSetError("; ".join(problems))
    for host, status in hosts.items():
        _host_problems(path, host, status, problems)
    ascii_text = data.isascii()
    spans: dict[str, list[list[int]]] = {host: [] for host in hosts}
    for position, (entry, start, end) in enumerate(entries):
        host = entry.get("host") if isinstance(entry, Mapping) else None
        if host not in spans:
            problems.append("%s: results[%d] names host %r, which is not in its hosts section" % (path, position, host))
            continue
        record = entry.get("record")
        if record is None:
            continue  # a host problem's entry: the hosts section holds the problem itself
        if not isinstance(record, Mapping):
            problems.append("%s: results[%d].record is not a mapping" % (path, position))
            continue
        spans[host].append([start, end - start])
    for host, status in hosts.items():
        count = status.get("records") if isinstance(status, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool) and count != len(spans[host]):
            problems.append("%s: hosts.%s.records says %d, results hold %d: the file is incomplete or was edited"
                            % (path, host, status["records"], len(spans[host])))
    if problems:
        raise RecordSetError("; ".join(problems))
    digest = hashlib.sha256(data).hexdigest()
    return [{
        "host": host,
        "source": path,
        "identity": file_identity(stat),
        "sha256": digest,
        "status": hosts[host]["status"],
        "problems": [dict(problem) for problem in hosts[host]["problems"]],
        "records": len(spans[host]),
        "spans": spans[host] if ascii_text else None,
        "collection_version": written_by,
    } for host in sorted(hosts)]


def index_record_sets(paths: Sequence[str], collection_version: str | None,
                      inventory_name: Callable[[str], str] | None = None,
                      max_bytes: int | None = None) -> list[dict[str, Any]]:
    """One host entry per host of every record set (read_record_set), sorted by host. A host in two
    record sets is refused, naming both: slices and sites hold disjoint hosts. Names are compared as
    ``inventory_name`` makes them (the name add_host gives the host: the lookup passes Ansible's own
    parsing), and a name it changes is refused. Every problem of every file is listed in one
    RecordSetError."""
    problems: list[str] = []
    by_host: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            host_entries = read_record_set(path, collection_version, max_bytes)
        except RecordSetError as exc:
            problems.append(str(exc))
            continue
        for entry in host_entries:
            name = entry["host"] if inventory_name is None else inventory_name(entry["host"])
            if name != entry["host"]:
                problems.append("%s: host %s is host %s once add_host reads it (it takes what follows ':' for an SSH "
                                "port): the report callback never writes such a name; was the file edited?"
                                % (entry["source"], entry["host"], name))
            first = by_host.get(name)
            if first is not None:
                problems.append("host %s is in two record sets, %s and %s%s: each host may be in one only (slices and "
                                "sites hold disjoint hosts; was a run given twice, or a merged report with its slices?)"
                                % (name, first["source"], entry["source"],
                                   "" if entry["host"] == name else " (as %s)" % entry["host"]))
                continue
            by_host[name] = entry
    if problems:
        raise RecordSetError("cannot merge: " + "; ".join(problems))
    return [by_host[host] for host in sorted(by_host)]


# ---------------------------------------------------------------------------------------------
# replaying one host
# ---------------------------------------------------------------------------------------------

def check_host_entry(entry: Any, host: str) -> None:
    """RecordSetError unless ``entry`` is a host entry (index_record_sets) of ``host``."""
    if not isinstance(entry, Mapping) or set(ENTRY_KEYS) - set(entry):
        raise RecordSetError("record_set must be this host's entry from the lookup diskproof.fleet.record_sets, "
                             "passed unchanged (keys %s)" % ", ".join(ENTRY_KEYS))
    if entry["host"] != host:
        raise RecordSetError("record_set is host %s's entry, not %s's: pass each host its own entry (the host "
                             "variable that playbooks/merge.yml sets with add_host)" % (entry["host"], host))


def host_records(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records of a host entry, read again from its record set, in the file's order.
    RecordSetError when the file changed since it was indexed or does not hold them any more."""
    path, host = entry["source"], entry["host"]
    try:
        with open(path, "rb") as stream:
            if file_identity(os.fstat(stream.fileno())) != list(entry["identity"]):
                raise RecordSetError("%s changed after the merge indexed it (another file, or its size, modification "
                                     "or change time differ): run the merge again" % path)
            if entry["spans"] is None:
                _top, entries = _scan_report(stream.read().decode("utf-8"))
                records = [item.get("record") for item, _start, _end in entries
                           if isinstance(item, Mapping) and item.get("host") == host and item.get("record") is not None]
            else:
                records = []
                for start, length in entry["spans"]:
                    item = json.loads(os.pread(stream.fileno(), length, start))
                    if not isinstance(item, Mapping) or item.get("host") != host:
                        raise ValueError("the result at byte %d is not one of %s's" % (start, host))
                    records.append(item.get("record"))
    except OSError as exc:
        raise RecordSetError("%s: cannot read it: %s" % (path, exc.strerror or exc)) from exc
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, RecordSetError):
            raise
        raise RecordSetError("%s: %s's records cannot be read back (%s): run the merge again"
                             % (path, host, exc)) from exc
    if len(records) != entry["records"] or not all(isinstance(record, Mapping) for record in records):
        raise RecordSetError("%s: %d records of %s expected, found %d: run the merge again"
                             % (path, entry["records"], host, len(records)))
    return records


def replay_result(entry: Mapping[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The task result that makes the report callback see this host as it saw it in its own run.

    The callback keeps records from ``ansible_facts.diskproof_results`` of ok and failed results;
    a failed result without records is a problem (its ``msg``), an unreachable one too. Ansible
    shows one outcome per task (the worst problem's message); the callback reads every problem,
    with its original task, from ``diskproof_replay`` (returned always).
    """
    problems = list(entry["problems"])
    status = entry["status"]
    replay = {"source": entry["source"], "status": status, "problems": problems, "records": len(records),
              "collection_version": entry["collection_version"]}
    result: dict[str, Any] = {"changed": False, "diskproof_replay": replay}
    worst = next((problem for problem in problems if problem.get("status") == _aggregate.HOST_UNREACHABLE), None)
    if worst is None:
        worst = problems[0] if problems else None
    if records:
        result["ansible_facts"] = {"diskproof_results": records}
    if worst is not None and worst.get("status") == _aggregate.HOST_UNREACHABLE and not records:
        result.update(unreachable=True, msg=str(worst.get("message") or ""))
    elif status != _aggregate.HOST_OK:
        # Failed with records (bench_facts failing with an error record) or a task that failed.
        result.update(failed=True, msg=str(worst.get("message") or "") if worst is not None
                      else "failed in the run of record set %s (its records are replayed)" % entry["source"])
    else:
        result["msg"] = "%d records of %s replayed from %s" % (len(records), entry["host"], entry["source"])
    return result


def collection_version(root: str) -> str | None:
    """The version of the collection at ``root``: MANIFEST.json (installed) or galaxy.yml (source tree)."""
    try:
        manifest = os.path.join(root, "MANIFEST.json")
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as stream:
                version = json.load(stream).get("collection_info", {}).get("version")
        else:
            import yaml  # controller only: ansible-core requires PyYAML
            with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as stream:
                version = (yaml.safe_load(stream) or {}).get("version")
    except (OSError, ValueError, AttributeError, ImportError):
        return None
    return None if version is None else str(version)
