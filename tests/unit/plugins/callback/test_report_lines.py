# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The callback's per-entry writers against their reference spellings: results.csv lines against
csv.writer, junit.xml from the compact entries against the report's entries as dicts."""
from __future__ import annotations

import csv
import importlib
import io
import sys

import pytest

GIB = 2 ** 30


@pytest.fixture(scope="module")
def report_module(collections_path):
    """plugins/callback/report.py, imported as ansible_collections.diskproof.fleet (as ansible-playbook does)."""
    if str(collections_path) not in sys.path:
        sys.path.insert(0, str(collections_path))
    return importlib.import_module("ansible_collections.diskproof.fleet.plugins.callback.report")


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


def _varied_entries(aggregate):
    records_by_host, statuses = _varied_fleet()
    facts_by_host = {host: [(record, aggregate.record_facts(record)) for record in records]
                     for host, records in records_by_host.items()}
    _report, entries = aggregate.judge_report(facts_by_host, statuses, {}, settings=aggregate.make_settings())
    return entries


def test_csv_lines_read_back_as_the_rows(report_module):
    """One line per entry, ending in "\n" only, that csv.reader reads back as the entry's row
    (None empty, a float its repr)."""
    aggregate = report_module._aggregate
    entries = _varied_entries(aggregate)
    assert {entry.verdict for entry in entries} >= {"pass", "error", "not_measured", "outlier"}
    lines = report_module.CsvLines()
    for entry in entries:
        reason = aggregate.entry_reason(entry)
        line = lines.line(entry, reason)
        assert line.endswith("\n") and not line.endswith("\r\n")
        row = report_module._csv_row(entry, aggregate.entry_target(entry), reason)
        assert list(csv.reader(io.StringIO(line))) == [["" if value is None else repr(value) if isinstance(value, float) else str(value)
                                                        for value in row]]


def test_junit_from_compact_entries_is_junit_of_the_report(report_module):
    """The callback's junit.xml (its entries spelled by _junit_fields) is render_junit of the same
    report with its entries as dicts (what the filter's report holds)."""
    aggregate, junit = report_module._aggregate, report_module._junit
    entries = _varied_entries(aggregate)
    report = {"run": {"started": "2026-11-22T00:00:00Z", "controller_hostname": "c"}, "rules": {"unstable_fails": True},
              "hosts": {host: {"status": "ok"} for host in sorted({entry.host for entry in entries} | {"idle"})}}
    writer = junit.JunitWriter(report, report_module._junit_fields)
    for entry in entries:
        writer.add(entry.host, entry)
    written = io.StringIO()
    writer.write(written.write)
    as_dicts = dict(report, results=[aggregate.entry_dict(entry) for entry in entries])
    assert written.getvalue() == junit.render_junit(as_dicts)
    assert '<testsuite name="idle"' in written.getvalue()


def test_the_callback_judges_its_spool_as_the_filter_judges_the_records(report_module):
    """The callback judges from its spool (a place and the facts per record, never the record):
    every entry is what build_report, the filter's judge, makes of the records themselves."""
    aggregate = report_module._aggregate
    records_by_host, statuses = _varied_fleet()
    spool = report_module.RecordSpool()
    try:
        facts_by_host = {host: [spool.add(record) for record in records] for host, records in records_by_host.items()}
        sections, entries = aggregate.judge_report(facts_by_host, statuses, {}, settings=aggregate.make_settings())
        report = aggregate.build_report(records_by_host, statuses, {}, settings=aggregate.make_settings())
        assert sections == dict(report, results=[])
        assert [aggregate.entry_fields(entry) for entry in entries] == [
            {key: value for key, value in entry.items() if key != "record"} for entry in report["results"]]
        found = [(entry.verdict, aggregate.entry_reason(entry)) for entry in entries]
        assert ("not_measured", "dd rate 49.0 MB/s of unknown direction (metrics.transfer_bytes_per_s) is not judged: "
                "parse again with direction=read, write or copy") in found
    finally:
        spool.close()
