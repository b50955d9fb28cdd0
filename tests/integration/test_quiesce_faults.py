"""Fault injection for the quiesce role on a lab of its own (qfault_lab.yml, lab `qfault`,
10.231.46.0/24: qfault-n01 runs SysV init, qfault-n02 a real systemd), driving real ansible-playbook
runs of quiesce_run.yml. Scenarios 1-3 run on both hosts in one play, so each fault is proven on
both inits at the cost of one:

1. ansible-playbook is SIGKILLed (by its PID) while the hosts are quiesced; the next run restores
   each host first (its quiesce reports the dead run as recovered) and completes.
2. The hosts are cut off the network mid-run (tools/lab cut), healed, the next run does the same.
3. Two concurrent runs on the same hosts: the second is refused with a message naming the holder
   (run id, start time, controller); the first is unharmed and restores the hosts at its end.
4. A dd already reading the target disk: the run is refused before anything is stopped, naming it
   (on the systemd host).

"Restored" is judged per host with its own init's tool (labhelpers.unit_states): on the systemd
host `systemctl is-active` / `is-enabled` of cron.service and of every timer, on the SysV host
`service cron status`, each the same after the restore as before the run; what the dead run had
stopped (active before, not active while it held the host) is exactly what the rerun recovered.

Root only (the lab needs network namespaces and loop devices); skipped otherwise. The lab is torn
down in the fixture's finalizer, which also kills every process in its hosts' namespaces (the
crons started here die with it). Run: .venv/bin/pytest -s tests/integration/test_quiesce_faults.py
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import labhelpers
from labhelpers import BIN, CRON_UNIT, LAB_TOOL, REPO, host_init, inventory_path, lab, needs_root, unit_states, wait_for

SPEC = Path(__file__).resolve().parent / "qfault_lab.yml"
PLAYBOOK = Path(__file__).resolve().parent / "quiesce_run.yml"
LAB = "qfault"
INVENTORY = inventory_path(LAB)
STATE_DIR = "/srv/diskproof-state"
HOSTS = ("qfault-n01", "qfault-n02")
INITS = {"qfault-n01": "sysv", "qfault-n02": "systemd"}   # what qfault_lab.yml asks for

pytestmark = needs_root

TIMINGS: dict[str, float] = {}


def on_host(host: str, command: str) -> subprocess.CompletedProcess:
    return labhelpers.on_host(LAB, host, command)


def cron_status(host: str) -> int:
    """0 when cron runs on the host, 3 when not, by the host's own tool (`service cron status` reading its own
    pidfile on the SysV host, `systemctl is-active cron.service` on the systemd host)."""
    return labhelpers.cron_status(LAB, host)


def states(host: str) -> dict:
    return unit_states(LAB, host)


def stopped_between(before: dict, during: dict) -> set:
    """The units a run stopped, as the host's own tool sees them: active before, not active while quiesced."""
    return {unit for unit, (active, _enabled) in before.items() if active == "active" and during[unit][0] != "active"}


def read_json(host: str, path: str):
    result = on_host(host, "cat %s 2>/dev/null" % path)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def quiesced_lock(host: str):
    """The lock, once the host is fully quiesced (lock and state file both in phase quiesced)."""
    lock = read_json(host, STATE_DIR + "/quiesce.lock")
    state = read_json(host, STATE_DIR + "/quiesce-state.json")
    if lock and state and lock["phase"] == "quiesced" and state["phase"] == "quiesced":
        return lock
    return None


class Run:
    """One ansible-playbook of quiesce_run.yml in its own session, output in a log file."""

    def __init__(self, tmp_path: Path, name: str, hosts: str, hold_s: int, env: dict):
        self.log_path = tmp_path / ("%s.log" % name)
        self.record = "/var/tmp/qfault-%s.json" % name
        self.started = time.monotonic()
        argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(PLAYBOOK),
                "-e", "run_hosts=%s" % hosts, "-e", "hold_s=%d" % hold_s, "-e", "record=%s" % self.record]
        self.argv = argv
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self, timeout: float = 120) -> int:
        return self.process.wait(timeout=timeout)

    @property
    def output(self) -> str:
        return self.log_path.read_text()

    def kill_leftovers(self):
        """What outlives a SIGKILLed ansible-playbook: its forked workers (same argv, their own
        session, reparented to PID 1) and their children (ssh clients), killed by PID."""
        table = {}
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()
                argv = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")[:-1]
            except (OSError, ValueError):
                continue
            table[int(entry)] = (int(stat[1]), [part.decode() for part in argv])
        ours = {pid for pid, (_ppid, argv) in table.items() if argv[1:] == self.argv}
        children = {pid for pid, (ppid, _argv) in table.items() if ppid in ours}
        for pid in sorted(ours | children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return sorted(ours | children)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    started = time.monotonic()
    lab("up", "--replace", str(SPEC))
    environment = labhelpers.checkout_collection_env(tmp_path_factory.mktemp("report"))
    try:
        start = subprocess.run([str(BIN / "ansible"), "-i", str(INVENTORY), "lab", "-m", "ansible.builtin.service",
                                "-a", "name=cron state=started"], cwd=REPO, env=environment, capture_output=True,
                               text=True, timeout=120, check=False)
        assert start.returncode == 0, start.stdout + start.stderr
        assert {host: host_init(LAB, host) for host in HOSTS} == INITS
        TIMINGS["lab up + cron start"] = time.monotonic() - started
        yield environment
    finally:
        down = time.monotonic()
        lab("down", "--name", LAB, check=False)
        TIMINGS["lab down"] = time.monotonic() - down
        print("\nqfault timings: " + ", ".join("%s %.1f s" % item for item in TIMINGS.items()))


def all_quiesced() -> dict:
    """{host: its lock} once every host is fully quiesced, else None."""
    locks = {host: quiesced_lock(host) for host in HOSTS}
    return locks if all(locks.values()) else None


def assert_stopped(host: str, before: dict, during: dict) -> set:
    """While quiesced: cron stopped (by the host's own tool), nothing that was inactive started, every unit's
    enabled state untouched. Returns what the run stopped."""
    stopped = stopped_between(before, during)
    assert CRON_UNIT[INITS[host]] in stopped, (host, before, during)
    assert cron_status(host) == 3
    for unit, (active, enabled) in before.items():
        assert during[unit][1] == enabled, (host, unit, before[unit], during[unit])
        if active != "active":
            assert during[unit][0] == active, (host, unit, before[unit], during[unit])
    return stopped


def assert_restored(host: str, record: dict, dead_run: str, dead_stopped: set, before: dict):
    """The rerun restored what the dead run had stopped, first, then quiesced and restored the host itself;
    every unit is as it was before the dead run (is-active and is-enabled), no lock or state file is left."""
    recovered = record["quiesce"]["recovered"]
    assert recovered["run_id"] == dead_run
    assert "is gone" in recovered["reason"]
    assert set(recovered["started"]) == dead_stopped, (host, recovered)
    assert set(record["quiesce"]["stopped"]) == dead_stopped, (host, record["quiesce"]["stopped"])
    assert sorted(record["restore"]["started"]) == sorted(record["quiesce"]["stopped"])
    assert states(host) == before
    assert cron_status(host) == 0
    assert read_json(host, STATE_DIR + "/quiesce.lock") is None
    assert read_json(host, STATE_DIR + "/quiesce-state.json") is None


def test_sigkilled_controller_then_rerun_restores_first(env, tmp_path):
    started = time.monotonic()
    before = {host: states(host) for host in HOSTS}
    assert all(cron_status(host) == 0 for host in HOSTS)
    first = Run(tmp_path, "killed", "lab", 60, env)
    locks = wait_for("the hosts to be quiesced", all_quiesced, 60)
    during = {host: states(host) for host in HOSTS}
    dead_stopped = {host: assert_stopped(host, before[host], during[host]) for host in HOSTS}
    assert {lock["controller"]["pid"] for lock in locks.values()} == {first.process.pid}
    os.kill(first.process.pid, signal.SIGKILL)
    first.wait(10)
    assert first.kill_leftovers(), "expected the killed run's worker to outlive it"
    for host in HOSTS:                                 # the dead run left the hosts quiesced
        assert states(host) == during[host], host
    second = Run(tmp_path, "after-kill", "lab", 1, env)
    assert second.wait() == 0, second.output
    for host in HOSTS:
        assert_restored(host, read_json(host, second.record), locks[host]["run_id"], dead_stopped[host], before[host])
    TIMINGS["sigkill scenario"] = time.monotonic() - started


def test_host_cut_off_then_healed_rerun_restores_first(env, tmp_path):
    started = time.monotonic()
    before = {host: states(host) for host in HOSTS}
    assert all(cron_status(host) == 0 for host in HOSTS)
    first = Run(tmp_path, "cut", "lab", 60, env)
    locks = wait_for("the hosts to be quiesced", all_quiesced, 60)
    during = {host: states(host) for host in HOSTS}
    dead_stopped = {host: assert_stopped(host, before[host], during[host]) for host in HOSTS}
    try:
        for host in HOSTS:
            lab("cut", "--name", LAB, host)
        rc = first.wait(90)
    finally:
        for host in HOSTS:
            lab("heal", "--name", LAB, host, check=False)
    assert rc == 4, first.output                       # hosts unreachable; the run ends without restoring them
    for host in HOSTS:
        assert "fatal: [%s]: UNREACHABLE!" % host in first.output, first.output
    for host in HOSTS:
        wait_for("ssh to %s after heal" % host, lambda: on_host(host, "true").returncode == 0, 30)
        assert states(host) == during[host], host     # left quiesced
    second = Run(tmp_path, "after-cut", "lab", 1, env)
    assert second.wait() == 0, second.output
    for host in HOSTS:
        assert_restored(host, read_json(host, second.record), locks[host]["run_id"], dead_stopped[host], before[host])
    TIMINGS["cut scenario"] = time.monotonic() - started


def test_second_concurrent_run_is_refused_and_the_first_is_unharmed(env, tmp_path):
    started = time.monotonic()
    before = {host: states(host) for host in HOSTS}
    assert all(cron_status(host) == 0 for host in HOSTS)
    first = Run(tmp_path, "first", "lab", 20, env)
    locks = wait_for("the hosts to be quiesced", all_quiesced, 60)
    during = {host: states(host) for host in HOSTS}
    for host in HOSTS:
        assert_stopped(host, before[host], during[host])
    second = Run(tmp_path, "second", "lab", 1, env)
    assert second.wait() == 2, second.output
    for host in HOSTS:
        lock = locks[host]
        refusal = "refusing to quiesce: the host is locked by run %s (started %s from controller %s" % (
            lock["run_id"], lock["started"], socket.gethostname())
        assert refusal in second.output
        record = read_json(host, second.record)
        assert record["quiesce"]["holder"]["run_id"] == lock["run_id"]
        assert "left alone" in record["restore"]["msg"]  # its always-restore did not touch the first run's host
        assert read_json(host, STATE_DIR + "/quiesce.lock") == lock
        assert states(host) == during[host], host       # still as the first run quiesced it
    assert first.process.poll() is None
    assert first.wait() == 0, first.output
    for host in HOSTS:
        record = read_json(host, first.record)
        assert record["quiesce"]["recovered"] is None
        assert set(record["restore"]["started"]) == stopped_between(before[host], during[host]), (host, record)
        assert states(host) == before[host], host
        assert read_json(host, STATE_DIR + "/quiesce.lock") is None
    TIMINGS["concurrent scenario"] = time.monotonic() - started


def test_run_is_refused_while_another_dd_reads_the_target(env, tmp_path):
    host = "qfault-n02"                                # the systemd host: its own PID namespace, its own ps
    started = time.monotonic()
    assert cron_status(host) == 0
    inventory = yaml.safe_load(INVENTORY.read_text())
    device = inventory["all"]["children"]["lab"]["hosts"][host]["diskproof_lab_disks"][0]["device"]
    reader = subprocess.Popen([sys.executable, str(LAB_TOOL), "ssh", "--name", LAB, host, "--",
                               "dd if=/dev/%s of=/dev/null bs=4k count=4000 iflag=direct" % device],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for("the dd to run", lambda: "dd if=/dev/%s" % device in on_host(host, "ps -eo args").stdout, 10, 0.2)
        run = Run(tmp_path, "competing", host, 1, env)
        assert run.wait() == 2, run.output
    finally:
        reader.wait(60)
    assert "refusing to quiesce: dd (pid " in run.output
    assert "uses the targets: fd 0 /dev/%s (on %s)" % (device, device) in run.output
    record = read_json(host, run.record)
    assert record["quiesce"]["stopped"] == [] and record["restore"]["started"] == []
    assert cron_status(host) == 0                      # refused before anything was stopped
    assert read_json(host, STATE_DIR + "/quiesce.lock") is None
    TIMINGS["competing dd scenario"] = time.monotonic() - started
