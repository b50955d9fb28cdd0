# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipeline's files (plugin_utils/_report.py): results.csv lines against csv.writer, and the same files
whether the records were spooled (the callback) or kept in memory (a merge, the filter)."""
from __future__ import annotations

import csv
import io
import json

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as aggregate
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report

GIB = 2 ** 30


def _record(test, path, rate, serial="S1", **changes):
    record = {
        "schema": 1, "test": test, "tool": "dd", "seconds": 12.5, "bytes": GIB,
        "target": {"path": path, "device": "sdb", "model": "M 1", "firmware": "F1", "size_bytes": 4000787030016, "rotational": False,
                   "transport": "sata", "serial": serial, "wwn": "0x5000"},
        "metrics": {"read_bytes_per_s": None, "write_bytes_per_s": rate, "read_iops": None, "write_iops": None, "fsyncs_per_s": None,
                    "latency_ns": {"read": None, "write": {"p99": 2.5e6}}},
        "params": {"block_size": 1048576, "direct": True},
        "device_io": {"read_bytes": 0, "write_bytes": GIB},
        "error": None,
    }
    for key, value in changes.items():
        if key in ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "fsyncs_per_s"):
            record["metrics"][key] = value
        elif key in ("device", "model", "wwn"):
            record["target"][key] = value
        else:
            record[key] = value
    return record


def _varied_fleet():
    """Records and host statuses giving entries of every shape a row can take: quoting, odd types,
    errors, host problems, no serial, a dd rate of unknown direction."""
    no_direction = _record("dd_seq_write", "/srv/d4", None, serial="S9")
    no_direction["metrics"]["transfer_bytes_per_s"] = 49e6
    records_by_host = {
        "h1": [_record("dd_seq_write", "/srv/d0", 200e6), _record("dd_seq_write", "/srv/d1", 120e6, serial="S2"),
               _record("fio_rand_read", "/srv/d0", 4e8, read_iops=97000.5, serial="S3")],
        'h,"2"': [_record("dd_seq_write", '/srv/"d0",x', 201e6, serial="S4"), _record("dd_seq_write", "/srv/d0\r", 199e6, serial=""),
                  _record("dd_seq_write", "/srv/d1", 198e6, serial=None, wwn=None)],
        "h3": [_record("dd_seq_write", "/srv/d0", None, error="dd: I/O error,\nline 2", serial="S5"),
               _record("dd_seq_write", "/srv/d1", "fast", seconds="12", bytes=True, serial=7),
               _record("dd_seq_write", "/srv/d2", 202e6, seconds=-1.0, tool=None, serial="S,6", model='M "2"'),
               _record("dd_seq_write", "/srv/d3", float("inf"), seconds=float("nan"), serial="S7"),
               _record(None, None, 203e6, serial="S8", device=None), no_direction],
    }
    statuses = {host: {"status": "ok", "problems": []} for host in records_by_host}
    statuses["h4"] = {"status": "unreachable", "problems": [{"task": "t", "status": "unreachable", "message": 'refused, "no"'}]}
    statuses["h5"] = {"status": "ok", "problems": []}
    return records_by_host, statuses


def _varied_entries():
    records_by_host, statuses = _varied_fleet()
    facts_by_host = {host: [(record, aggregate.record_facts(record)) for record in records]
                     for host, records in records_by_host.items()}
    _report_sections, entries = aggregate.judge_report(facts_by_host, statuses, {}, settings=aggregate.make_settings())
    return entries


def test_csv_lines_read_back_as_the_rows():
    """One line per entry, ending in "\n" only, that csv.reader reads back as the entry's row
    (None empty, a float its repr)."""
    entries = _varied_entries()
    assert {entry.verdict for entry in entries} >= {"pass", "error", "not_measured", "outlier"}
    lines = _report.CsvLines()
    for entry in entries:
        line = lines.line(entry)
        assert line.endswith("\n") and not line.endswith("\r\n")
        row = _report.csv_row(entry)
        assert list(csv.reader(io.StringIO(line))) == [["" if value is None else repr(value) if isinstance(value, float) else str(value)
                                                        for value in row]]


def _collected(records):
    collection = _report.Collection(records)
    records_by_host, statuses = _varied_fleet()
    for host, status in statuses.items():
        collection.host(host)
        for problem in status["problems"]:
            collection.mark(host, problem["status"], problem)
    for host, host_records in records_by_host.items():
        collection.add_records(host, host_records)
    return collection


def test_spooled_records_and_records_in_memory_give_the_same_files(tmp_path):
    """The callback spools each record (its JSON text and facts, never the record); a merge keeps the records
    as dicts: judged and written by the one pipeline, the files are the same, byte for byte."""
    inputs = _report.Inputs(aggregate.make_settings(), "", None, None, [], None, None, [], [])
    run = {"playbook": "p", "started": "2026-11-22T00:00:00Z"}
    written = {}
    for name, records in (("spool", _report.RecordSpool()), ("memory", _report.RecordsInMemory())):
        judgement = _report.judge_and_write(_collected(records), inputs._replace(report_dir=str(tmp_path / name)), run)
        records.close()
        written[name] = {path.rsplit("/", 1)[-1]: open(path, "rb").read() for path in judgement.paths}
    assert written["spool"] == written["memory"]
    assert sorted(written["spool"]) == sorted(_report.REPORT_FILES)
    report = json.loads(written["spool"]["report.json"])
    records_by_host, _statuses = _varied_fleet()
    assert sorted(json.dumps(entry["record"]) for entry in report["results"] if entry["record"] is not None) == sorted(
        json.dumps(record) for records in records_by_host.values() for record in records)
    found = [(entry["verdict"], entry["reason"]) for entry in report["results"]]
    assert ("not_measured", "dd rate 49.0 MB/s of unknown direction (metrics.transfer_bytes_per_s) is not judged: "
            "parse again with direction=read, write or copy") in found
    # The filter's report is this report.json, read back (compared as JSON: a NaN figure is not equal to itself).
    records_by_host, statuses = _varied_fleet()
    assert json.dumps(_report.build_report(records_by_host, statuses, run)) == json.dumps(report)
