"""A host cut off the network in the middle of validate.yml: it is UNREACHABLE within seconds,
the other hosts finish and are judged, and the report lists the cut host as `not_measured`.
Then the host is healed: it is still quiesced (cron stopped, the state file and lock of the cut run
in place, since the play's `always:` restore could not reach it), and the next validate.yml run
restores it first from that saved state (its quiesce reports the repair as `changed`), measures it
and leaves cron running and nothing of either run on its disk.

Real lab (tools/lab, lab `rcut`), real ansible-playbook with the report callback. Root only.
test_quiesce_faults.py covers the same cut-and-heal with the quiesce-only playbook; this is the full
benchmark run.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from labhelpers import (BIN, REPO, ansible_env, cron_status, inventory_path, lab, needs_root, on_host, playbook,
                        running_lab, wait_for)

SPEC = Path(__file__).resolve().parent / "rcut_lab.yml"
LAB = "rcut"
HOSTS = ["rcut-n01", "rcut-n02", "rcut-n03"]
CUT_HOST = "rcut-n02"
TARGET = "/srv/diskproof/d0"
STATE_DIR = "/srv/diskproof-state"      # the lab inventory's quiesce_state_dir

pytestmark = needs_root


@pytest.fixture
def rcut_lab():
    # cron runs on every host, so the quiesce has something to stop and the restore something to start.
    with running_lab(LAB, SPEC):
        try:
            yield
        finally:
            lab("heal", "--name", LAB, CUT_HOST, check=False)


def read_json(host: str, path: str):
    result = on_host(LAB, host, "cat %s 2>/dev/null" % path)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def test_cut_host_is_not_measured_the_rest_are_judged_and_a_rerun_restores_it(rcut_lab, tmp_path):
    assert [cron_status(LAB, host) for host in HOSTS] == [0, 0, 0]
    report_dir = tmp_path / "report"
    log_path = tmp_path / "validate.log"
    started = time.monotonic()
    with open(log_path, "w") as log:
        run = subprocess.Popen(
            [str(BIN / "ansible-playbook"), "-i", str(inventory_path(LAB)), "playbooks/validate.yml",
             "-e", "benchmark_fio_runtime_s=5",
             "-e", '{"benchmark_tests": ["dd_seq_write", "dd_seq_read", "fio_rand_read"], "benchmark_repeats": 1}'],
            cwd=REPO, env=ansible_env(DISKPROOF_REPORT_DIR=str(report_dir)), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
    try:
        # Cut the host once its dd write is under way: its test file exists.
        wait_for("the write on %s to start" % CUT_HOST,
                 lambda: run.poll() is not None or on_host(LAB, CUT_HOST, "test -e %s/diskproof-*/diskproof.testfile"
                                                           % TARGET).returncode == 0, 90)
        assert run.poll() is None, "the play ended before the write started:\n" + log_path.read_text()
        assert cron_status(LAB, CUT_HOST) == 3          # quiesced while it writes
        cut_at = time.monotonic()
        lab("cut", "--name", LAB, CUT_HOST)
        wait_for("%s to be declared UNREACHABLE" % CUT_HOST,
                 lambda: "UNREACHABLE" in log_path.read_text() or run.poll() is not None, 60, 0.2)
        unreachable_after = time.monotonic() - cut_at
        returncode = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    finished = time.monotonic()
    output = log_path.read_text()

    assert returncode == 4, output  # ansible-playbook's code for an unreachable host
    assert re.search(r"fatal: \[%s\]: UNREACHABLE!" % CUT_HOST, output), output
    # ServerAlive (2 s x 2) in the lab inventory: seconds, not the TCP timeout's minutes (margin for a loaded machine).
    assert unreachable_after < 30, "UNREACHABLE only %.1f s after the cut" % unreachable_after
    report = json.loads((report_dir / "report.json").read_text())
    by_host: dict[str, list] = {}
    for entry in report["results"]:
        by_host.setdefault(entry["host"], []).append(entry)
    assert sorted(by_host) == HOSTS
    assert [entry["verdict"] for entry in by_host[CUT_HOST]] == ["not_measured"] * len(by_host[CUT_HOST])
    assert any("unreachable" in entry["reason"] for entry in by_host[CUT_HOST])
    for host in ("rcut-n01", "rcut-n03"):
        assert sorted(entry["test"] for entry in by_host[host]) == ["dd_seq_read", "dd_seq_write", "fio_rand_read"]
        assert all(entry["verdict"] == "pass" for entry in by_host[host]), by_host[host]
        assert cron_status(LAB, host) == 0              # restored by the play's always:
    print("\ncut after %.1f s of the play; UNREACHABLE %.1f s after the cut; play ended %.1f s after the cut "
          "(%.1f s in all)" % (cut_at - started, unreachable_after, finished - cut_at, finished - started))

    # Heal: the host is as the cut left it, quiesced, with the cut run's saved state.
    lab("heal", "--name", LAB, CUT_HOST)
    wait_for("ssh to %s after the heal" % CUT_HOST, lambda: on_host(LAB, CUT_HOST, "true").returncode == 0, 30)
    assert cron_status(LAB, CUT_HOST) == 3
    state = read_json(CUT_HOST, STATE_DIR + "/quiesce-state.json")
    lock = read_json(CUT_HOST, STATE_DIR + "/quiesce.lock")
    assert state is not None and lock is not None
    assert state["phase"] == "quiesced" and state["run_id"] == lock["run_id"]
    assert [(service["unit"], service["was_running"], service["stopped"]) for service in state["services"]] == [
        ("cron", True, True)]
    # The cut run's directory and test file are still on the disk (its always: cleanup could not reach it); its
    # note names this host and the lock of the cut run.
    left = on_host(LAB, CUT_HOST, "ls -A %s" % TARGET).stdout.split()
    assert len(left) == 2 and left[0].startswith("diskproof-") and left[1] == "lost+found", left
    leftover = "%s/%s" % (TARGET, left[0])
    assert on_host(LAB, CUT_HOST, "test -f %s/diskproof.testfile" % leftover).returncode == 0
    note = on_host(LAB, CUT_HOST, "cat %s/.diskproof-run" % leftover).stdout.splitlines()
    assert note[1:] == ["host: %s" % CUT_HOST, "lock_run_id: %s" % state["run_id"]], note

    # Rerun (what docs/quiesce.md promises: the next run restores the host first), on the healed host only.
    rerun_at = time.monotonic()
    returncode, output, report = playbook(inventory_path(LAB), REPO / "playbooks" / "validate.yml",
                                          tmp_path / "rerun", "diskproof_hosts=%s" % CUT_HOST,
                                          {"benchmark_tests": ["dd_seq_write"], "benchmark_repeats": 1,
                                           "quiesce_idle_window": 1})
    assert returncode == 0, output
    # The quiesce reports a change only when it restored a dead run's leftovers first; the plan then removed the
    # cut run's directory (before it read the free space).
    assert re.search(r"TASK \[diskproof\.fleet\.quiesce : Lock the host[^\n]*\*+\nchanged: \[%s\]" % CUT_HOST,
                     output), output
    assert "removed %s, left by the aborted run %s" % (leftover, state["run_id"]) in output, output
    assert [(entry["host"], entry["test"], entry["verdict"]) for entry in report["results"]] == [
        (CUT_HOST, "dd_seq_write", "pass")]
    assert cron_status(LAB, CUT_HOST) == 0
    assert read_json(CUT_HOST, STATE_DIR + "/quiesce-state.json") is None
    assert read_json(CUT_HOST, STATE_DIR + "/quiesce.lock") is None
    assert on_host(LAB, CUT_HOST, "ls -A %s" % TARGET).stdout.split() == ["lost+found"]
    print("rerun restored and measured %s in %.1f s" % (CUT_HOST, time.monotonic() - rerun_at))
