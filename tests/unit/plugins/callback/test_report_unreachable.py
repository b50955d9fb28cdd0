# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host cut off in the middle of a loop task (the benchmark role's one task per test) is reported with its
connection error, not with Ansible's loop summary ("All items completed").

Real ansible-playbook, real ssh: the cut host runs its first item over the local connection (it returns a record),
then its connection becomes ssh to 127.0.0.1 port 1, where nothing listens, so every later item is refused by the
kernel as a host cut off the network would be; the second case is a host unreachable from the first item on."""
from __future__ import annotations

import json
import sys

import pytest

from test_report import D0, seq_write, unreachable_host

REFUSED = "Failed to connect to the host via ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused"
LOOP_SUMMARY = "All items completed"
TASK = "Run each test"


def loop_playbook(cut_after_first):
    return [{
        "name": "Benchmark with one task per test",
        "hosts": "fleet",
        "gather_facts": False,
        "vars": {"records": [seq_write(D0, "sdb", 200e6)], "cut_after_first": cut_after_first},
        "tasks": [{
            "name": TASK,
            "ansible.legacy.emit_records": {"records": "{{ records }}"},
            "loop": ["first", "second", "third"],
            # Connection variables are templated per loop item: n01 always, the cut host only for "first".
            "vars": {"ansible_connection": "{{ 'local' if inventory_hostname == 'n01'"
                                           " or (cut_after_first and item == 'first') else 'ssh' }}"},
        }],
    }]


def inventory():
    cut = dict(unreachable_host(), ansible_python_interpreter=sys.executable)
    del cut["ansible_connection"]   # the task's vars choose it per item
    return {"all": {"children": {"fleet": {"hosts": {
        "n01": {"ansible_python_interpreter": sys.executable}, "cut": cut}}}}}


@pytest.mark.parametrize("cut_after_first", [True, False], ids=["cut-after-first-item", "unreachable-from-the-start"])
def test_a_host_cut_off_in_a_loop_is_reported_with_its_connection_error(playbook_runner, tmp_path, cut_after_first):
    report_dir = tmp_path / "report"
    run = playbook_runner.run(inventory(), loop_playbook(cut_after_first),
                              extra_env={"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert run.returncode == 4, run.stdout + run.stderr    # ansible-playbook: a host was unreachable
    report = json.loads((report_dir / "report.json").read_text())

    cut = report["hosts"]["cut"]
    assert cut["status"] == "unreachable"
    assert cut["records"] == (1 if cut_after_first else 0)
    unreachable = [problem for problem in cut["problems"] if problem["status"] == "unreachable"]
    assert unreachable == [{"task": TASK, "status": "unreachable", "message": REFUSED}], cut["problems"]
    assert all(problem["message"] != LOOP_SUMMARY for problem in cut["problems"])
    # Its items that could not connect are not failures of their own: the one problem is the host unreachable.
    assert [problem["status"] for problem in cut["problems"]] == ["unreachable"], cut["problems"]

    reasons = [entry["reason"] for entry in report["results"]
               if entry["host"] == "cut" and entry["verdict"] == "not_measured"]
    assert "unreachable: " + REFUSED in reasons
    assert "unreachable: " + LOOP_SUMMARY not in reasons
    # The summary table printed at the end of the run: the cut host's line names the connection error.
    table = run.stdout[run.stdout.index("diskproof fleet report:"):]
    assert any(line.startswith("cut ") and "unreachable: Failed to connect to the host via ssh" in line
               for line in table.splitlines()), table
    assert LOOP_SUMMARY not in table
