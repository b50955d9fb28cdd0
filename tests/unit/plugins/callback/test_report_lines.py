# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The callback's per-entry writers against their reference spellings: results.csv lines against
csv.writer, junit.xml testcases spelled host by host (deferred) against add_case in report order."""
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


def _varied_entries(aggregate):
    """Entries of every shape a row can take: quoting, odd types, errors, host problems, no serial."""
    records_by_host = {
        "h1": [_record("dd_seq_write", "/srv/d0", 200e6), _record("dd_seq_write", "/srv/d1", 120e6, serial="S2"),
               _record("fio_rand_read", "/srv/d0", 4e8, read_iops=97000.5, serial="S3")],
        'h,"2"': [_record("dd_seq_write", '/srv/"d0",x', 201e6, serial="S4"), _record("dd_seq_write", "/srv/d0\r", 199e6, serial=""),
                  _record("dd_seq_write", "/srv/d1", 198e6, serial=None, wwn=None)],
        "h3": [_record("dd_seq_write", "/srv/d0", None, error="dd: I/O error,\nline 2", serial="S5"),
               _record("dd_seq_write", "/srv/d1", "fast", seconds="12", bytes=True, serial=7),
               _record("dd_seq_write", "/srv/d2", 202e6, seconds=-1.0, tool=None, serial="S,6", model='M "2"'),
               _record("dd_seq_write", "/srv/d3", float("inf"), seconds=float("nan"), serial="S7"),
               _record(None, None, 203e6, serial="S8", device=None)],
    }
    statuses = {host: {"status": "ok", "problems": []} for host in records_by_host}
    statuses["h4"] = {"status": "unreachable", "problems": [{"task": "t", "status": "unreachable", "message": 'refused, "no"'}]}
    statuses["h5"] = {"status": "ok", "problems": []}
    facts_by_host = {host: [(record, aggregate.record_facts(record)) for record in records] for host, records in records_by_host.items()}
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


def test_junit_written_host_by_host_is_add_case_in_report_order(report_module):
    aggregate, junit = report_module._aggregate, report_module._junit
    entries = _varied_entries(aggregate)
    report = {"run": {"started": "2026-11-22T00:00:00Z", "controller_hostname": "c"},
              "hosts": {host: {"status": "ok"} for host in sorted({entry.host for entry in entries} | {"idle"})}}
    direct, deferred = junit.JunitWriter(report), junit.JunitWriter(report)
    for entry in entries:
        direct.add_case(entry.host, *report_module._junit_fields(entry))
        deferred.defer(entry.host, entry)
    expected, written = io.StringIO(), io.StringIO()
    direct.write(expected.write)
    deferred.write(written.write, report_module._junit_fields)
    assert written.getvalue() == expected.getvalue()
    assert '<testsuite name="idle"' in written.getvalue()
    with pytest.raises(ValueError):
        again = junit.JunitWriter(report)
        again.defer("h1", entries[0])
        again.write(io.StringIO().write)
