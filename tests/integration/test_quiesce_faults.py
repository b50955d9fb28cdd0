"""Fault injection for the quiesce role on a lab of its own (qfault_lab.yml, lab `qfault`,
10.231.46.0/24), driving real ansible-playbook runs of quiesce_run.yml:

1. ansible-playbook is SIGKILLed (by its PID) while the host is quiesced; the next run restores
   the host first (its quiesce reports the dead run as recovered) and completes; cron runs after.
2. The host is cut off the network mid-run (tools/lab cut), healed, the next run does the same.
3. Two concurrent runs on one host: the second is refused with a message naming the holder (run
   id, start time, controller); the first is unharmed and restores the host at its end.
4. A dd already reading the target disk: the run is refused before anything is stopped, naming it.

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
from labhelpers import BIN, LAB_TOOL, REPO, inventory_path, lab, needs_root, wait_for

SPEC = Path(__file__).resolve().parent / "qfault_lab.yml"
PLAYBOOK = Path(__file__).resolve().parent / "quiesce_run.yml"
LAB = "qfault"
INVENTORY = inventory_path(LAB)
STATE_DIR = "/srv/diskproof-state"

pytestmark = needs_root

TIMINGS: dict[str, float] = {}


def on_host(host: str, command: str) -> subprocess.CompletedProcess:
    return labhelpers.on_host(LAB, host, command)


def cron_status(host: str) -> int:
    """Exit code of `service cron status` on the host (0 running, 3 not running): the host's own pidfile."""
    return labhelpers.cron_status(LAB, host)


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
    collection = REPO / ".ansible" / "collections" / "ansible_collections" / "diskproof" / "fleet"
    if not collection.exists():
        collection.parent.mkdir(parents=True, exist_ok=True)
        collection.symlink_to(Path("..", "..", "..", ".."))
    started = time.monotonic()
    lab("up", "--replace", str(SPEC))
    environment = dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")),
                       ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                       ANSIBLE_COLLECTIONS_PATH=str(REPO / ".ansible" / "collections"),
                       DISKPROOF_REPORT_DIR=str(tmp_path_factory.mktemp("report")),
                       ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    try:
        start = subprocess.run([str(BIN / "ansible"), "-i", str(INVENTORY), "lab", "-m", "ansible.builtin.service",
                                "-a", "name=cron state=started"], cwd=REPO, env=environment, capture_output=True,
                               text=True, timeout=120, check=False)
        assert start.returncode == 0, start.stdout + start.stderr
        TIMINGS["lab up + cron start"] = time.monotonic() - started
        yield environment
    finally:
        down = time.monotonic()
        lab("down", "--name", LAB, check=False)
        TIMINGS["lab down"] = time.monotonic() - down
        print("\nqfault timings: " + ", ".join("%s %.1f s" % item for item in TIMINGS.items()))


def assert_restored(host: str, record: dict, dead_run: str):
    recovered = record["quiesce"]["recovered"]
    assert recovered["run_id"] == dead_run
    assert "is gone" in recovered["reason"]
    assert recovered["started"] == ["cron"]
    assert record["quiesce"]["stopped"] == ["cron"]
    assert record["restore"]["started"] == ["cron"]
    assert cron_status(host) == 0
    assert read_json(host, STATE_DIR + "/quiesce.lock") is None
    assert read_json(host, STATE_DIR + "/quiesce-state.json") is None


def test_sigkilled_controller_then_rerun_restores_first(env, tmp_path):
    host = "qfault-n01"
    started = time.monotonic()
    assert cron_status(host) == 0
    first = Run(tmp_path, "killed", host, 60, env)
    lock = wait_for("the host to be quiesced", lambda: quiesced_lock(host), 60)
    assert cron_status(host) == 3
    assert lock["controller"]["pid"] == first.process.pid
    os.kill(first.process.pid, signal.SIGKILL)
    first.wait(10)
    assert first.kill_leftovers(), "expected the killed run's worker to outlive it"
    assert cron_status(host) == 3                      # the dead run left cron stopped
    second = Run(tmp_path, "after-kill", host, 1, env)
    assert second.wait() == 0, second.output
    assert_restored(host, read_json(host, second.record), lock["run_id"])
    TIMINGS["sigkill scenario"] = time.monotonic() - started


def test_host_cut_off_then_healed_rerun_restores_first(env, tmp_path):
    host = "qfault-n02"
    started = time.monotonic()
    assert cron_status(host) == 0
    first = Run(tmp_path, "cut", host, 60, env)
    lock = wait_for("the host to be quiesced", lambda: quiesced_lock(host), 60)
    lab("cut", "--name", LAB, host)
    try:
        rc = first.wait(90)
    finally:
        lab("heal", "--name", LAB, host)
    assert rc == 4, first.output                       # host unreachable; the run ends without restoring it
    assert "UNREACHABLE" in first.output
    wait_for("ssh after heal", lambda: on_host(host, "true").returncode == 0, 30)
    assert cron_status(host) == 3                      # left quiesced
    second = Run(tmp_path, "after-cut", host, 1, env)
    assert second.wait() == 0, second.output
    assert_restored(host, read_json(host, second.record), lock["run_id"])
    TIMINGS["cut scenario"] = time.monotonic() - started


def test_second_concurrent_run_is_refused_and_the_first_is_unharmed(env, tmp_path):
    host = "qfault-n01"
    started = time.monotonic()
    assert cron_status(host) == 0
    first = Run(tmp_path, "first", host, 20, env)
    lock = wait_for("the host to be quiesced", lambda: quiesced_lock(host), 60)
    second = Run(tmp_path, "second", host, 1, env)
    assert second.wait() == 2, second.output
    refusal = "refusing to quiesce: the host is locked by run %s (started %s from controller %s" % (
        lock["run_id"], lock["started"], socket.gethostname())
    assert refusal in second.output
    record = read_json(host, second.record)
    assert record["quiesce"]["holder"]["run_id"] == lock["run_id"]
    assert "left alone" in record["restore"]["msg"]      # its always-restore did not touch the first run's host
    assert read_json(host, STATE_DIR + "/quiesce.lock") == lock
    assert cron_status(host) == 3
    assert first.process.poll() is None
    assert first.wait() == 0, first.output
    record = read_json(host, first.record)
    assert record["quiesce"]["recovered"] is None
    assert record["restore"]["started"] == ["cron"]
    assert cron_status(host) == 0
    assert read_json(host, STATE_DIR + "/quiesce.lock") is None
    TIMINGS["concurrent scenario"] = time.monotonic() - started


def test_run_is_refused_while_another_dd_reads_the_target(env, tmp_path):
    host = "qfault-n02"
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
