"""bench_run cancelled mid-run, in-process with real child processes: on SIGTERM, and when the controller goes
away (the reader of the module's stdout pipe closes, as sshd does when ansible-playbook is cancelled), the
tool's whole process group is killed (a grandchild that ignores SIGTERM included), the teardown runs
(cleanup commands, work directory), and remove_on_cancel removes this run's directories - only those whose
.diskproof-run note proves it (module_utils/_cancel.py).

The "tool" is a stand-in shell script named dd: what matters here is the process handling, not the figures.
"""
from __future__ import annotations

import os
import signal
import socket
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _cancel, _proc
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import run_main

# The stand-in tool: a grandchild that ignores SIGTERM, both PIDs in $PIDS, then (optionally) a signal to the
# module ($PPID), then waits for 30 s.
TOOL = """#!/bin/sh
sh -c 'trap "" TERM; echo $$ >> "$1"; exec sleep 30' grandchild "$PIDS" &
echo $$ >> "$PIDS"
%s
sleep 30
"""


def make_run_dir(parent, run_id, host=None):
    run_dir = parent / ("diskproof-" + run_id)
    run_dir.mkdir()
    (run_dir / _cancel.NOTE).write_text("diskproof run %s, created 2026-11-25T00:00:00Z by diskproof.fleet.bench_plan; "
                                        "removed at the end of the run\nhost: %s\nlock_run_id: lock-1\n"
                                        % (run_id, host or socket.gethostname()))
    (run_dir / "diskproof.testfile").write_bytes(b"x" * 4096)
    return run_dir


def alive(pid):
    fields = _proc._stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def run_module(capsys, **args):
    # These tests run commands on this machine's shared disk, where other tests write at the same time: no wait
    # for an idle disk before each run (settle_s, tested in test_bench_run_settle.py).
    args.setdefault("settle_s", 0)
    return run_main(bench_run, capsys, args)


@pytest.fixture
def tool(tmp_path, monkeypatch):
    def make(extra=""):
        path = tmp_path / "bin" / "dd"
        path.parent.mkdir(exist_ok=True)
        path.write_text(TOOL % extra)
        path.chmod(0o755)
        monkeypatch.setenv("PIDS", str(tmp_path / "pids"))
        return str(path)
    return make


def started_pids(tmp_path):
    return [int(pid) for pid in (tmp_path / "pids").read_text().split()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["TERM", "INT", "HUP"])
def test_a_signal_kills_the_group_cleans_up_and_removes_this_runs_directories(capsys, tmp_path, tool, signum):
    ours = make_run_dir(tmp_path, "20261125T000000Z-aaaa")
    other_host = make_run_dir(tmp_path, "20261125T000000Z-bbbb", host="somewhere-else")
    log = tmp_path / "cleanup.log"
    argv = [tool('sleep 0.3; kill -%d $PPID' % signum)]
    cleanup = tmp_path / "bin" / "cleanup"
    cleanup.write_text("#!/bin/sh\necho cleaned >> %s\n" % log)
    cleanup.chmod(0o755)
    started = time.monotonic()
    code, result = run_module(capsys, argv=argv, direction="write", device_io=False, workdir=str(ours / "work"),
                              chdir=str(ours / "work"), cleanup=[[str(cleanup)]],
                              remove_on_cancel=[str(ours), str(other_host)])
    took = time.monotonic() - started
    assert code == 1
    assert result["msg"].startswith("interrupted by signal %d" % signum), result["msg"]
    assert "%s left alone: its .diskproof-run note names host 'somewhere-else'" % other_host in result["msg"]
    assert log.read_text() == "cleaned\n"                 # the teardown ran, after the group was gone
    assert not ours.exists() and other_host.exists()
    for pid in started_pids(tmp_path):
        assert not alive(pid), pid                         # the grandchild ignored SIGTERM: SIGKILL got it
    assert took < 10, took                                 # not the stand-in's 30 s


def test_a_signal_during_a_setup_command_kills_it_and_cleanup_still_runs(capsys, tmp_path, tool):
    """sysbench's prepare is a setup command: it runs in its own group too, and is killed the same way."""
    ours = make_run_dir(tmp_path, "20261125T000000Z-ffff")
    log = tmp_path / "cleanup.log"
    cleanup = tmp_path / "bin" / "cleanup"
    cleanup.parent.mkdir(exist_ok=True)
    cleanup.write_text("#!/bin/sh\necho cleaned >> %s\n" % log)
    cleanup.chmod(0o755)
    setup = tool('sleep 0.3; kill -TERM $PPID')
    code, result = run_module(capsys, argv=["true"], tool="dd", setup=[[setup]], cleanup=[[str(cleanup)]],
                              remove_on_cancel=[str(ours)])
    assert code == 1 and result["msg"].startswith("interrupted by signal %d" % signal.SIGTERM), result["msg"]
    assert log.read_text() == "cleaned\n" and not ours.exists()
    for pid in started_pids(tmp_path):
        assert not alive(pid), pid


def test_controller_gone_kills_the_group_and_removes_this_runs_directory(capsys, tmp_path, tool):
    """fd 1 is a pipe whose reader closes half a second in: what sshd does when ansible-playbook is cancelled."""
    ours = make_run_dir(tmp_path, "20261125T000000Z-cccc")
    reader, writer = os.pipe()
    saved_stdout = os.dup(1)
    os.dup2(writer, 1)
    os.close(writer)
    saved_alarm = signal.signal(signal.SIGALRM, lambda _signum, _frame: os.close(reader))
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    started = time.monotonic()
    try:
        code, result = run_module(capsys, argv=[tool()], direction="write", device_io=False,
                                  remove_on_cancel=[str(ours)], creates=str(ours / "diskproof.testfile.2"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved_alarm)
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    took = time.monotonic() - started
    assert code == 1
    assert result["msg"].startswith("the controller went away"), result["msg"]
    assert not ours.exists()
    for pid in started_pids(tmp_path):
        assert not alive(pid), pid
    assert took < 10, took


def test_a_job_that_ends_normally_never_uses_remove_on_cancel(capsys, tmp_path):
    ours = make_run_dir(tmp_path, "20261125T000000Z-dddd")
    code, result = run_module(capsys, argv=["true"], tool="dd", direction="write", device_io=False,
                              fail_on_error=False, remove_on_cancel=[str(ours)])
    assert ours.exists() and (ours / "diskproof.testfile").exists(), result


@pytest.mark.parametrize("tool_exit", [0, 1], ids=["done", "tool-failed"])
def test_remove_when_done_removes_this_runs_directories_however_the_job_ends(capsys, tmp_path, tool_exit):
    ours = make_run_dir(tmp_path, "20261125T000000Z-ffff")
    source = "/dev/zero" if tool_exit == 0 else str(tmp_path / "missing")   # real dd; a missing input fails it
    code, result = run_module(capsys, argv=["dd", "if=" + source, "of=%s" % (ours / "out"), "bs=4096", "count=4"],
                              direction="write", device_io=False, remove_when_done=[str(ours)],
                              remove_on_cancel=[str(ours)])
    assert not ours.exists(), result
    assert result["removed_run_dirs"] == [str(ours)]
    assert (code, bool(result.get("failed"))) == ((0, False) if tool_exit == 0 else (1, True)), result
    assert len(result["ansible_facts"]["diskproof_results"]) == 1, result


def test_remove_when_done_leaves_an_unproven_directory_and_fails_saying_why(capsys, tmp_path):
    ours = make_run_dir(tmp_path, "20261125T000000Z-gggg")
    other_host = make_run_dir(tmp_path, "20261125T000000Z-hhhh", host="somewhere-else")
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=%s" % (ours / "out"), "bs=4096", "count=4"],
                              direction="write", device_io=False, remove_when_done=[str(ours), str(other_host)])
    assert code == 1 and result["failed"], result
    assert not ours.exists() and (other_host / "diskproof.testfile").exists()
    # Present although one was left alone: the role's cleanup must not remove that one blindly.
    assert result["removed_run_dirs"] == [str(ours)]
    reason = "%s left alone: its .diskproof-run note names host 'somewhere-else'" % other_host
    assert reason in result["msg"], result["msg"]
    assert result["ansible_facts"]["diskproof_results"], result


def test_without_remove_when_done_there_is_no_removed_run_dirs(capsys, tmp_path):
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=%s" % (tmp_path / "out"), "bs=4096", "count=4"],
                              direction="write", device_io=False)
    assert code == 0 and "removed_run_dirs" not in result, result


@pytest.mark.parametrize("case, reason", [
    ("no-note", "no .diskproof-run note"),
    ("other-run", "its .diskproof-run note names another run"),
    ("symlink", "not a directory (a symlink or a file)"),
    ("badname", "not an absolute path named diskproof-<run id>"),
    ("gone", "gone already"),
])
def test_only_what_the_note_proves_is_removed(tmp_path, case, reason):
    host = socket.gethostname()
    if case == "no-note":
        path = tmp_path / "diskproof-r1"
        path.mkdir()
    elif case == "other-run":
        path = make_run_dir(tmp_path, "r2")
        (path / _cancel.NOTE).write_text("diskproof run r3, created x\nhost: %s\n" % host)
    elif case == "symlink":
        real = make_run_dir(tmp_path, "r4")
        path = tmp_path / "elsewhere" / "diskproof-r4"
        path.parent.mkdir()
        path.symlink_to(real)
    elif case == "badname":
        path = tmp_path / "userdata"
        path.mkdir()
    else:
        path = tmp_path / "diskproof-r5"
    assert _cancel.not_ours(str(path), host) == reason
    removed, problems = _cancel.remove_run_dirs([str(path)], host)
    assert removed == []
    assert problems == ([] if case == "gone" else ["%s left alone: %s" % (path, reason)])
    if case != "gone":
        assert os.path.lexists(path)
    if case == "symlink":
        assert (tmp_path / "diskproof-r4" / "diskproof.testfile").exists()


def test_a_proven_run_directory_is_removed_whole(tmp_path):
    path = make_run_dir(tmp_path, "20261125T000000Z-eeee")
    (path / "sysbench_rndrd").mkdir()
    (path / "sysbench_rndrd" / "test_file.0").write_bytes(b"y")
    assert _cancel.remove_run_dirs([str(path)], socket.gethostname()) == ([str(path)], [])
    assert not path.exists()
