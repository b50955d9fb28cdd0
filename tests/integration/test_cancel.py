"""A cancelled job leaves nothing running and nothing written on the host (issue 14, "Cancel is clean").

An AWX/AAP cancel sends SIGTERM to ansible-playbook and SIGKILL 5 s later. The module on the host
gets no signal at all: the controller's ssh client dies, sshd closes the channel and with it the read
end of the module's stdout pipe. Each case starts playbooks/validate.yml on a real lab host (lab
`bcancel`, bcancel_lab.yml: one 1 GiB ext4 disk at 20 MiB/s), waits until the benchmark tool of
this run is running, and cancels exactly as AWX does:

- during dd (dd_seq_write, writing this run's test file),
- during fio (fio_rand_write on the test file),
- during sysbench (sysbench_rndrd, its run phase, in its work directory inside the run directory).

Proves, measured from the SIGTERM: within 5 s none of the tool's processes (the PIDs seen before the
cancel) is alive, no process on the host has this run's directory open or as its working directory
(/proc/*/fd and /proc/*/cwd, so an unlinked file still being written counts, and lsof agrees), and
neither the test file nor the run directory exists; then the next validate.yml run restores the
service the cancelled run stopped (cron), completes with exit code 0 and measures the same tests.

Real lab (tools/lab), real ansible-playbook, real dd, fio and sysbench. Root only.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

from labhelpers import (BIN, REPO, ansible_env, cron_status, inventory_path, leftover_fences, needs_root, on_host,
                        running_lab, start_service_everywhere)

SPEC = Path(__file__).resolve().parent / "bcancel_lab.yml"
LAB = "bcancel"
HOST = "bcancel-n01"
TARGET = "/srv/diskproof/d0"
DEADLINE_S = 5.0          # what the issue asks: nothing left 5 s after the SIGTERM
KILL_AFTER_S = 5.0        # AWX: SIGKILL 5 s after the SIGTERM

pytestmark = needs_root


@pytest.fixture(scope="module")
def bcancel():
    with running_lab(LAB, SPEC):
        yield


def start_validate(tmp_path: Path, tests: List[str], run_id: str, runtime_s: int) -> subprocess.Popen:
    log = open(tmp_path / ("%s.log" % run_id), "w")
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory_path(LAB)), "playbooks/validate.yml",
            "-e", json.dumps({"benchmark_tests": tests, "benchmark_repeats": 1, "benchmark_max_repeats": 1,
                              "benchmark_fio_runtime_s": runtime_s, "benchmark_run_id": run_id})]
    try:
        return subprocess.Popen(argv, cwd=REPO, env=ansible_env(DISKPROOF_REPORT_DIR=str(tmp_path / run_id)),
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log.close()


def users_of(run_dir: str) -> Dict[int, str]:
    """PID -> what of it points into run_dir (an open file, deleted ones included, or its working directory),
    read on the host itself (its mount namespace names the paths)."""
    command = ("find /proc/[0-9]*/fd /proc/[0-9]*/cwd -maxdepth 1 \\( -lname '%s' -o -lname '%s/*' \\) "
               "-printf '%%p %%l\\n' 2>/dev/null; true" % (run_dir, run_dir))
    found: Dict[int, str] = {}
    for line in on_host(LAB, HOST, command).stdout.splitlines():
        link, _space, target = line.partition(" ")
        found[int(link.split("/")[2])] = target
    return found


def lsof_users(run_dir: str) -> List[str]:
    """lsof's view: open files under run_dir's filesystem whose name is in run_dir (deleted ones too)."""
    output = on_host(LAB, HOST, "lsof -n -w %s 2>/dev/null; true" % TARGET).stdout
    return [line for line in output.splitlines() if run_dir in line]


def cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running, not a zombie (the lab's PID 1 reaps slowly; a zombie holds no file and does no I/O)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def parent_of(pid: int) -> int:
    with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def tool_tree(pids: Set[int], tool: str) -> Tuple[Set[int], Set[int]]:
    """(the tool's processes: pids and their ancestors that are the tool too, e.g. fio's main process that holds
    no file of the run; the processes that started them: bench_facts)."""
    tools, modules = set(pids), set()
    for pid in pids:
        parent = parent_of(pid)
        while parent > 1 and tool in cmdline(parent).split(" ")[0]:
            tools.add(parent)
            parent = parent_of(parent)
        modules.add(parent)
    return tools, modules - tools


def fences_of(module_pids: Set[int]) -> List[str]:
    """Cache-fence cgroups these module processes made (named diskproof-<module pid>-<hex>); other labs on this
    machine may have fences of their own at the same time."""
    return [path for path in leftover_fences()
            if any(os.path.basename(path).startswith("diskproof-%d-" % pid) for pid in module_pids)]


def wait_for_tool(process: subprocess.Popen, run_dir: str, tool: str, marker: str, log: Path) -> Set[int]:
    """PIDs of this run's tool: processes using run_dir whose command line names the tool (and marker)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        pids = {pid for pid in users_of(run_dir) if tool in cmdline(pid) and marker in cmdline(pid)}
        if pids:
            time.sleep(1.0)   # well inside the run, past the tool's start-up
            return pids | {pid for pid in users_of(run_dir) if tool in cmdline(pid)}
        time.sleep(0.3)
    raise AssertionError("%s never ran in %s:\n%s" % (tool, run_dir, log.read_text()))


def cancel_like_awx(process: subprocess.Popen, run_dir: str, pids: Set[int]) -> Dict[str, Optional[float]]:
    """SIGTERM ansible-playbook, SIGKILL it 5 s later if still there; meanwhile watch the host. Returns the seconds
    from the SIGTERM until no tool PID was alive and until nothing used or held run_dir (None: never within 15 s)."""
    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    killed = False
    times: Dict[str, Optional[float]] = {"processes": None, "files": None}
    while time.monotonic() - started < 15:
        now = time.monotonic() - started
        if not killed and now >= KILL_AFTER_S:
            if process.poll() is None:
                process.kill()
            killed = True
        if times["processes"] is None and not any(alive(pid) for pid in pids):
            times["processes"] = now
        if times["files"] is None:
            listing = on_host(LAB, HOST, "ls -A %s" % TARGET).stdout.split()
            if listing == ["lost+found"] and not users_of(run_dir):
                times["files"] = time.monotonic() - started
        if times["processes"] is not None and times["files"] is not None and killed:
            break
        time.sleep(0.2)
    process.wait(timeout=30)
    return times


CASES = {
    # test id: (tests to run, tool, a word of the measured run's command line)
    "dd_seq_write": (["dd_seq_write"], "dd", "of=%s/diskproof.testfile"),
    "fio_rand_write": (["dd_seq_write", "fio_rand_write"], "fio", "--output-format=json"),
    "sysbench_rndrd": (["sysbench_rndrd"], "sysbench", "--file-test-mode=rndrd"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cancel_leaves_no_process_and_no_file_and_the_next_run_completes(bcancel, tmp_path, case):
    tests, tool, marker = CASES[case]
    run_id = "cancel-%s-%s" % (case.replace("_", "-"), secrets.token_hex(3))
    run_dir = "%s/diskproof-%s" % (TARGET, run_id)
    if cron_status(LAB, HOST) != 0:        # an earlier case failed before its rerun restored it
        start_service_everywhere(LAB)
    process = start_validate(tmp_path, tests, run_id, runtime_s=40)
    try:
        log = tmp_path / ("%s.log" % run_id)
        pids, modules = tool_tree(wait_for_tool(process, run_dir, tool, marker % run_dir if "%s" in marker else marker,
                                                log), tool)
        assert cron_status(LAB, HOST) == 3               # quiesced: the cancel comes in the middle of the run
        assert modules and all("python" in cmdline(pid) for pid in modules), {pid: cmdline(pid) for pid in modules}
        times = cancel_like_awx(process, run_dir, pids)
    finally:
        if process.poll() is None:                       # the test failed before the cancel: end the run
            process.terminate()
            process.wait(timeout=60)
    print("%s: cancelled; tool PIDs %s gone after %s s, run directory and open files gone after %s s"
          % (case, sorted(pids), times["processes"], times["files"]))
    survivors = {pid: cmdline(pid) for pid in pids | modules if alive(pid)}
    assert survivors == {}, "still running 15 s after the cancel: %s" % survivors
    assert times["processes"] is not None and times["processes"] <= DEADLINE_S, times
    assert users_of(run_dir) == {} and lsof_users(run_dir) == []
    assert on_host(LAB, HOST, "ls -A %s" % TARGET).stdout.split() == ["lost+found"]
    assert times["files"] is not None and times["files"] <= DEADLINE_S, times
    assert fences_of(modules) == []

    # The next run: the quiesce restores what the cancelled run stopped, everything is measured.
    next_id = "after-%s" % run_id
    rerun = start_validate(tmp_path, tests, next_id, runtime_s=5)
    returncode = rerun.wait(timeout=600)
    output = (tmp_path / ("%s.log" % next_id)).read_text()
    assert returncode == 0, output
    report = json.loads((tmp_path / next_id / "report.json").read_text())
    measured = {entry["test"]: entry for entry in report["results"]}
    for test in tests:
        assert measured[test]["verdict"] != "error", measured[test]
    assert cron_status(LAB, HOST) == 0
    assert on_host(LAB, HOST, "ls -A %s" % TARGET).stdout.split() == ["lost+found"]
