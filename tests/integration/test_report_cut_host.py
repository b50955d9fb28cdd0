"""Hosts cut off the network in the middle of validate.yml: they are UNREACHABLE within seconds,
the other hosts finish and are judged, and the report lists the cut hosts as `not_measured`.
Then the hosts are healed: each is still quiesced (cron stopped, the state file and lock of the cut
run in place, since the play's `always:` restore could not reach it), and the next validate.yml run
restores it first from that saved state (its quiesce reports the repair as `changed`), measures it
and leaves every unit as before the cut run and nothing of either run on its disk.

The lab (rcut_lab.yml) is mixed: one SysV and one systemd host are cut, a SysV host is judged, so
the cut, the leftover state and the repair are proven on both inits in one run. A host that finishes is restored
by its last test (benchmark_restore_when_done in validate.yml), on both inits too: the judged SysV host in the
first run and both healed hosts in the rerun, whose restore task is skipped. Unit states are
read with each host's own tool (labhelpers.unit_states: `systemctl is-active`/`is-enabled` of
cron.service and every timer on a systemd host, `service cron status` on a SysV host).

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

from labhelpers import (BIN, CRON_UNIT, REPO, ansible_env, cron_status, host_init, inventory_path, lab, needs_root,
                        on_host, playbook, running_lab, unit_states, wait_for)

SPEC = Path(__file__).resolve().parent / "rcut_lab.yml"
LAB = "rcut"
INITS = {"rcut-n01": "sysv", "rcut-n02": "sysv", "rcut-n03": "systemd"}  # what rcut_lab.yml asks for
HOSTS = sorted(INITS)
CUT_HOSTS = ["rcut-n02", "rcut-n03"]    # one SysV, one systemd
JUDGED_HOSTS = ["rcut-n01"]
TARGET = "/srv/diskproof/d0"
STATE_DIR = "/srv/diskproof-state"      # the lab inventory's quiesce_state_dir

# Alone (no other lab up): the cut must land while the cut hosts' write runs, and their healthy peers must pass;
# beside other labs a CI run saw a cut host's test end before the cut took effect.
pytestmark = [needs_root, pytest.mark.alone]


@pytest.fixture
def rcut_lab():
    # cron runs on every host, so the quiesce has something to stop and the restore something to start.
    with running_lab(LAB, SPEC):
        try:
            assert {host: host_init(LAB, host) for host in HOSTS} == INITS
            yield
        finally:
            for host in CUT_HOSTS:
                lab("heal", "--name", LAB, host, check=False)


def read_json(host: str, path: str):
    result = on_host(LAB, host, "cat %s 2>/dev/null" % path)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def restore_task_lines(output: str) -> list:
    """The host lines of validate.yml's restore task (the quiesce role's restore entry point), sorted."""
    # The restore is an include (validate.yml) that only a host the last test did not restore runs.
    task = re.search(r"TASK \[Restore the host \(exactly[^\n]*\*+\n((?:\w+: \[[^\n]*\n)+)", output)
    assert task, output
    return sorted(task.group(1).splitlines())


def test_cut_host_is_not_measured_the_rest_are_judged_and_a_rerun_restores_it(rcut_lab, tmp_path):
    assert [cron_status(LAB, host) for host in HOSTS] == [0] * len(HOSTS)
    before = {host: unit_states(LAB, host) for host in HOSTS}
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
        # Cut the hosts once their dd writes are under way: their test files exist.
        for host in CUT_HOSTS:
            wait_for("the write on %s to start" % host,
                     lambda: run.poll() is not None or on_host(LAB, host, "test -e %s/diskproof-*/diskproof.testfile"
                                                               % TARGET).returncode == 0, 90)
        assert run.poll() is None, "the play ended before the write started:\n" + log_path.read_text()
        for host in CUT_HOSTS:
            assert cron_status(LAB, host) == 3          # quiesced while it writes
        cut_at = time.monotonic()
        for host in CUT_HOSTS:
            lab("cut", "--name", LAB, host)
        wait_for("%s to be declared UNREACHABLE" % " and ".join(CUT_HOSTS),
                 lambda: all("fatal: [%s]: UNREACHABLE!" % host in log_path.read_text() for host in CUT_HOSTS)
                 or run.poll() is not None, 60, 0.2)
        unreachable_after = time.monotonic() - cut_at
        returncode = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    finished = time.monotonic()
    output = log_path.read_text()

    assert returncode == 4, output  # ansible-playbook's code for an unreachable host
    for host in CUT_HOSTS:
        assert re.search(r"fatal: \[%s\]: UNREACHABLE!" % host, output), output
    # ServerAlive (2 s x 2) in the lab inventory: seconds, not the TCP timeout's minutes (margin for a loaded machine).
    assert unreachable_after < 30, "UNREACHABLE only %.1f s after the cut" % unreachable_after
    report = json.loads((report_dir / "report.json").read_text())
    by_host: dict[str, list] = {}
    for entry in report["results"]:
        by_host.setdefault(entry["host"], []).append(entry)
    assert sorted(by_host) == HOSTS
    for host in CUT_HOSTS:
        assert [entry["verdict"] for entry in by_host[host]] == ["not_measured"] * len(by_host[host])
        assert any("unreachable" in entry["reason"] for entry in by_host[host])
    for host in JUDGED_HOSTS:
        assert sorted(entry["test"] for entry in by_host[host]) == ["dd_seq_read", "dd_seq_write", "fio_rand_read"]
        assert all(entry["verdict"] == "pass" for entry in by_host[host]), by_host[host]
        assert unit_states(LAB, host) == before[host], host      # restored by its last test
    # The judged host's last test restored it (benchmark_restore_when_done): the always: restore skipped its call.
    assert restore_task_lines(output) == ["skipping: [%s]" % host for host in JUDGED_HOSTS], output
    print("\ncut after %.1f s of the play; UNREACHABLE %.1f s after the cut; play ended %.1f s after the cut "
          "(%.1f s in all)" % (cut_at - started, unreachable_after, finished - cut_at, finished - started))

    # Heal: each host is as the cut left it, quiesced, with the cut run's saved state.
    leftovers = {}
    for host in CUT_HOSTS:
        lab("heal", "--name", LAB, host)
    for host in CUT_HOSTS:
        wait_for("ssh to %s after the heal" % host, lambda: on_host(LAB, host, "true").returncode == 0, 30)
        assert cron_status(LAB, host) == 3
        quiesced = unit_states(LAB, host)
        assert quiesced[CRON_UNIT[INITS[host]]][0] == "inactive", (host, quiesced)
        assert {unit: enabled for unit, (_active, enabled) in quiesced.items()} == {
            unit: enabled for unit, (_active, enabled) in before[host].items()}, host
        state = read_json(host, STATE_DIR + "/quiesce-state.json")
        lock = read_json(host, STATE_DIR + "/quiesce.lock")
        assert state is not None and lock is not None
        assert state["phase"] == "quiesced" and state["run_id"] == lock["run_id"]
        assert state["service_manager"] == INITS[host]
        # The cut run's directory and test file are still on the disk (its always: cleanup could not reach it); its
        # note names this host and the lock of the cut run.
        left = on_host(LAB, host, "ls -A %s" % TARGET).stdout.split()
        assert len(left) == 2 and left[0].startswith("diskproof-") and left[1] == "lost+found", left
        leftover = "%s/%s" % (TARGET, left[0])
        assert on_host(LAB, host, "test -f %s/diskproof.testfile" % leftover).returncode == 0
        note = on_host(LAB, host, "cat %s/.diskproof-run" % leftover).stdout.splitlines()
        assert note[1:] == ["host: %s" % host, "lock_run_id: %s" % state["run_id"]], note
        leftovers[host] = (leftover, state["run_id"])

    # Rerun (what docs/quiesce.md promises: the next run restores the host first), on the healed hosts only.
    rerun_at = time.monotonic()
    returncode, output, report = playbook(inventory_path(LAB), REPO / "playbooks" / "validate.yml",
                                          tmp_path / "rerun", "diskproof_hosts=%s" % ":".join(CUT_HOSTS),
                                          {"benchmark_tests": ["dd_seq_write"], "benchmark_repeats": 1,
                                           "quiesce_idle_window": 1})
    assert returncode == 0, output
    # The quiesce reports a change only when it restored a dead run's leftovers first; the plan then removed the
    # cut run's directory (before it read the free space).
    lock_task = re.search(r"TASK \[diskproof\.fleet\.quiesce : Lock the host[^\n]*\*+\n((?:\w+: \[[^\n]*\n)+)",
                          output)
    assert lock_task, output
    for host in CUT_HOSTS:
        assert "changed: [%s]" % host in lock_task.group(1), lock_task.group(0)
        assert "removed %s, left by the aborted run %s" % leftovers[host] in output, output
    assert sorted((entry["host"], entry["test"], entry["verdict"]) for entry in report["results"]) == [
        (host, "dd_seq_write", "pass") for host in CUT_HOSTS]
    # Both inits restored by the rerun's last test (a systemd and a SysV host), not by the restore task.
    assert restore_task_lines(output) == ["skipping: [%s]" % host for host in CUT_HOSTS], output
    for host in CUT_HOSTS:
        assert unit_states(LAB, host) == before[host], host
        assert read_json(host, STATE_DIR + "/quiesce-state.json") is None
        assert read_json(host, STATE_DIR + "/quiesce.lock") is None
        assert on_host(LAB, host, "ls -A %s" % TARGET).stdout.split() == ["lost+found"]
    print("rerun restored and measured %s in %.1f s" % (" and ".join(CUT_HOSTS), time.monotonic() - rerun_at))
