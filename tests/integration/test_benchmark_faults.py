"""Faults in the middle of a benchmark, on a real lab host:

- the benchmark process (dd, by its PID) killed mid-run: the test is an `error` in the report, no
  test file or run directory is left, cron (stopped by the quiesce) runs again, no memory cgroup
  (cache fence) is left behind;
- fio killed the same way mid-run: an `error` saying so, and the rest cleaned up the same way.

Real lab (tools/lab, lab `bkill`), real ansible-playbook. Root only.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from labhelpers import BIN, REPO, lab, leftover_fences, needs_root

SPEC = Path(__file__).resolve().parent / "bkill_lab.yml"
LAB = "bkill"
HOST = "bkill-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
TARGET = "/srv/diskproof/d0"

pytestmark = needs_root


def on_host(command: str) -> subprocess.CompletedProcess:
    return lab("ssh", "--name", LAB, HOST, "--", command, check=False)


def host_pgrep(pattern: str) -> str:
    """pgrep on the host for its own processes only: a SysV lab host shares this machine's PID namespace, so a
    bare pgrep also finds the other labs' tools (every lab's disk is /srv/diskproof/d0, every run directory
    diskproof-<timestamp>...), and a kill -9 of one would end another test's run."""
    return "pgrep --ns $$ --nslist net -f -- '%s' || true" % pattern


def cron_status() -> int:
    return int(on_host("service cron status >/dev/null 2>&1; echo $?").stdout.strip())


@pytest.fixture(scope="module")
def bkill():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        environment = dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1")
        started = subprocess.run([str(BIN / "ansible"), "-i", str(INVENTORY), "lab", "-m", "ansible.builtin.service",
                                  "-a", "name=cron state=started"], cwd=REPO, env=environment, capture_output=True,
                                 text=True, timeout=120, check=False)
        assert started.returncode == 0, started.stdout + started.stderr
        yield environment
    finally:
        lab("down", "--name", LAB)


def start_validate(environment, tmp_path, tests):
    env = dict(environment, DISKPROOF_REPORT_DIR=str(tmp_path / "report"))
    log = open(tmp_path / "validate.log", "w")  # closed by finish()
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), "playbooks/validate.yml",
            "-e", json.dumps({"benchmark_tests": tests, "benchmark_repeats": 1, "benchmark_fio_runtime_s": 20})]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL), log


def finish(process, log, tmp_path):
    try:
        returncode = process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    return returncode, (tmp_path / "validate.log").read_text(), {entry["test"]: entry for entry in report["results"]}


def wait_for_pids(pattern: str, process, tmp_path) -> list:
    """PIDs of the processes on the host whose command line matches pattern (a regex written so it
    does not match the shell that runs pgrep, e.g. '[d]d ...'; fio's job runs in a child with the
    same command line as its parent, so both are returned)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, (tmp_path / "validate.log").read_text()
        found = [int(pid) for pid in on_host(host_pgrep(pattern)).stdout.split()]
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError("no process matching %s:\n%s" % (pattern, (tmp_path / "validate.log").read_text()))


def assert_clean_and_restored():
    assert on_host("ls -A %s" % TARGET).stdout.split() == ["lost+found"]
    assert on_host(host_pgrep("[d]iskproof-[0-9]{8}T")).stdout.split() == []   # no tool left running
    assert cron_status() == 0
    assert leftover_fences(LAB) == []


def test_dd_killed_mid_write_is_an_error_and_everything_is_cleaned(bkill, tmp_path):
    assert cron_status() == 0
    process, log = start_validate(bkill, tmp_path, ["dd_seq_write", "dd_seq_read"])
    # The dd writing this run's test file, found by its exact of= operand, never by a broad name.
    pids = wait_for_pids("[o]f=%s/diskproof-[^/]*/diskproof.testfile" % TARGET, process, tmp_path)
    assert len(pids) == 1
    assert cron_status() == 3                     # quiesced while dd runs
    on_host("kill -9 %d" % pids[0])
    returncode, output, results = finish(process, log, tmp_path)
    assert returncode != 0
    write = results["dd_seq_write"]
    assert write["verdict"] == "error", write
    assert "killed by signal 9 (SIGKILL)" in write["reason"], write["reason"]
    # The last test (dd_seq_read) removed the run directory however it ended (remove_when_done): the role's
    # cleanup task had nothing left to do on this host.
    cleanup = output.split("Remove the run directories this run created", 1)[1].splitlines()[1:3]
    assert "skipping: [%s]" % HOST in cleanup, cleanup
    assert_clean_and_restored()


def test_fio_killed_mid_run_is_an_error_and_everything_is_cleaned(bkill, tmp_path):
    process, log = start_validate(bkill, tmp_path, ["fio_rand_read"])
    pids = wait_for_pids("[f]io --output-format=json --readonly", process, tmp_path)
    on_host("kill -9 %s" % " ".join(str(pid) for pid in pids))
    returncode, _output, results = finish(process, log, tmp_path)
    assert returncode != 0
    assert results["dd_seq_write"]["verdict"] != "error"
    assert results["fio_rand_read"]["verdict"] == "error", results["fio_rand_read"]
    assert "killed by signal 9 (SIGKILL)" in results["fio_rand_read"]["reason"]
    assert_clean_and_restored()
