"""module_utils/_proc.py with real processes: own session, output, the group killed on an interrupt or on a
hangup of the controller's pipe (a grandchild that ignores SIGTERM included), strays, PR_SET_PDEATHSIG.

Every command here is real (sh, sleep, python); nothing is mocked. Linux only (/proc, prctl).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _proc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: /proc and prctl")

# A group of two: the leader (sh) and a grandchild that ignores SIGTERM; both PIDs written to a file.
STUBBORN_GROUP = textwrap.dedent("""\
    sh -c 'trap "" TERM; echo $$ >> "$1"; exec sleep 60' grandchild "$1" &
    echo $$ >> "$1"
    wait
""")


def alive(pid):
    """Running and not a zombie (a zombie is dead: the test machine's PID 1 may reap it late)."""
    fields = _proc._stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def pids_in(path, count, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            pids = [int(line) for line in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.02)
    raise AssertionError("the command never wrote %d PIDs to %s" % (count, path))


class Alarm(Exception):
    """What a signal handler raises in the module (bench_run raises Interrupted)."""


@pytest.fixture
def alarm_in():
    """alarm_in(seconds, handler): SIGALRM after seconds runs handler; undone after the test."""
    saved = signal.getsignal(signal.SIGALRM)

    def arm(seconds, handler):
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    yield arm
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, saved)


def test_exit_code_and_output_exactly():
    done = _proc.run(["sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 3"])
    assert (done.rc, done.stdout, done.stderr, done.strays) == (3, b"out\n", b"err\n", 0)


def test_large_output_on_both_streams_does_not_deadlock():
    # 1 MiB on each stream: far more than a pipe holds, written interleaved.
    script = "import os\nfor _ in range(256):\n os.write(1, b'o' * 4096)\n os.write(2, b'e' * 4096)\n"
    done = _proc.run([sys.executable, "-c", script])
    assert done.rc == 0 and done.stdout == b"o" * (1 << 20) and done.stderr == b"e" * (1 << 20)


def test_runs_in_its_own_session_and_group_with_cwd_env_and_executable(tmp_path):
    done = _proc.run(["renamed", "-c", 'echo "$(ps -o sid= -o pgid= -p $$) $$ $PWD $WHO $0"'], executable="/bin/sh",
                     cwd=str(tmp_path), env=dict(os.environ, WHO="me"))
    sid, pgid, pid, cwd, who, name = done.stdout.decode().split()
    assert sid == pgid == pid == str(done.pid)
    assert os.getsid(0) != done.pid and os.getpgid(0) != done.pid
    assert (cwd, who, name) == (str(tmp_path), "me", "renamed")


def test_cancel_signals_have_their_default_action_in_the_child_even_when_the_module_ignores_them():
    saved = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        done = _proc.run(["sh", "-c", "kill -TERM $$; sleep 5; echo survived"])
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert done.rc == -signal.SIGTERM and done.stdout == b""


def test_an_exception_from_a_signal_handler_kills_the_whole_group_first(tmp_path, alarm_in):
    pids = tmp_path / "pids"

    def interrupted(_signum, _frame):
        raise Alarm()

    alarm_in(0.5, interrupted)
    started = time.monotonic()
    with pytest.raises(Alarm):
        _proc.run(["sh", "-c", STUBBORN_GROUP, "group", str(pids)], grace_s=0.5)
    took = time.monotonic() - started
    for pid in pids_in(pids, 2):
        assert not alive(pid), pid      # the grandchild ignored SIGTERM: SIGKILL got it
    assert took < 0.5 + 0.5 + 2.0, took                       # the alarm, the grace, reaping


def test_a_hangup_of_a_watched_pipe_kills_the_group_and_raises_controller_gone(tmp_path, alarm_in):
    """The module's stdout is the pipe to sshd: closing its read end is what a cancelled controller does."""
    pids = tmp_path / "pids"
    reader, writer = os.pipe()
    assert _proc.hangup_watch([writer]) == [writer] and _proc.hung_up([writer]) == []
    alarm_in(0.5, lambda _signum, _frame: os.close(reader))
    started = time.monotonic()
    try:
        with pytest.raises(_proc.ControllerGone, match="hung up"):
            _proc.run(["sh", "-c", STUBBORN_GROUP, "group", str(pids)], watch=[writer], grace_s=0.5)
        took = time.monotonic() - started
        assert _proc.hung_up([writer]) == [writer]
    finally:
        os.close(writer)
    for pid in pids_in(pids, 2):
        assert not alive(pid), pid
    assert took < 0.5 + 0.5 + 2.0, took


def test_running_past_the_time_limit_kills_the_whole_group_and_raises_timed_out(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    with pytest.raises(_proc.TimedOut, match=r"(?s)^sh -c .* did not end within 0.5 s \(it was stopped\)$"):
        _proc.run(["sh", "-c", STUBBORN_GROUP, "group", str(pids)], grace_s=0.5, timeout_s=0.5)
    took = time.monotonic() - started
    for pid in pids_in(pids, 2):
        assert not alive(pid), pid      # the grandchild ignored SIGTERM: SIGKILL got it
    assert 0.5 <= took < 0.5 + 0.5 + 2.0, took                # the limit, the grace, reaping


def test_a_command_that_ends_within_its_limit_is_not_cut_short():
    done = _proc.run(["sh", "-c", "sleep 0.2; echo done"], timeout_s=5)
    assert (done.rc, done.stdout) == (0, b"done\n")


def test_watch_takes_only_pipe_write_ends(tmp_path):
    reader, writer = os.pipe()
    with open(tmp_path / "file", "w") as handle:
        try:
            assert _proc.hangup_watch([handle.fileno(), reader, writer, 987]) == [writer]
        finally:
            os.close(reader)
            os.close(writer)


def test_a_live_reader_is_no_hangup():
    reader, writer = os.pipe()
    try:
        done = _proc.run(["sh", "-c", "sleep 0.3; echo done"], watch=[writer])
    finally:
        os.close(reader)
        os.close(writer)
    assert (done.rc, done.stdout) == (0, b"done\n")


def test_processes_the_command_leaves_behind_are_killed(tmp_path):
    pids = tmp_path / "pids"
    # The background sleep keeps no pipe of ours: the command exits at once, the stray would run on.
    done = _proc.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $! > \"$1\"", "leaver", str(pids)])
    (stray,) = pids_in(pids, 1)
    assert done.rc == 0 and done.strays == 1
    assert not alive(stray)


def test_a_stray_holding_the_pipes_does_not_hang_the_run(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    done = _proc.run(["sh", "-c", "sleep 60 & echo $! > \"$1\"; echo bye", "holder", str(pids)])
    (stray,) = pids_in(pids, 1)
    assert done.rc == 0 and done.stdout == b"bye\n" and done.strays == 1
    assert not alive(stray)
    assert time.monotonic() - started < 5


def test_the_child_dies_with_a_sigkilled_parent(tmp_path):
    """PR_SET_PDEATHSIG: the module SIGKILLed (no cleanup possible) still takes its tool with it."""
    pids = tmp_path / "pids"
    parent = textwrap.dedent("""\
        import sys
        from ansible_collections.diskproof.fleet.plugins.module_utils import _proc
        _proc.run(["sh", "-c", 'echo $$ > "$1"; exec sleep 60', "tool", sys.argv[1]])
    """)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    module = subprocess.Popen([sys.executable, "-c", parent, str(pids)], env=environment)
    try:
        (tool,) = pids_in(pids, 1)
        assert alive(tool)
        module.kill()
        module.wait(timeout=10)
        deadline = time.monotonic() + 5
        while alive(tool) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(tool)
    finally:
        if module.poll() is None:
            module.kill()


def test_a_command_that_cannot_start_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        _proc.run([str(tmp_path / "missing")])


def test_kill_group_of_an_exited_group_is_quick_and_empty():
    process = subprocess.Popen(["true"], start_new_session=True)
    process.wait()
    started = time.monotonic()
    assert _proc.kill_group(process) == []
    assert time.monotonic() - started < 0.5


def test_output_keeps_a_stream_whole_up_to_its_limit():
    output = _proc.Output(limit=100)
    for _line in range(10):
        output.add(b"0123456789"[:9] + b"\n")
    assert output.value() == b"012345678\n" * 10 and output.bytes_left_out == 0


def test_output_keeps_the_first_and_last_half_and_says_what_it_left_out():
    output = _proc.Output(limit=100)
    lines = [b"line %03d\n" % number for number in range(100)]     # 9 bytes each, 900 in all
    for line in lines:
        output.add(line)
    text = output.value()
    kept = text.split(b"\n")
    # whole lines on both sides of the gap: 5 lines (45 of the first 50 bytes), the last 5 lines (45 of the last 50)
    assert kept[:5] == [line.rstrip(b"\n") for line in lines[:5]]
    assert kept[-6:-1] == [line.rstrip(b"\n") for line in lines[-5:]]
    assert output.bytes_left_out == 900 - 45 - 45
    assert b"[diskproof: 810 bytes of this output left out here: it kept its first and last 50 bytes]\n" in text


def test_run_bounds_what_a_flooding_command_prints(monkeypatch):
    # A real command printing 8 MiB of lines to stderr (as fio does for a disk that fails its verify everywhere)
    # and a little to stdout, under a limit of 1 MiB a stream.
    monkeypatch.setattr(_proc, "OUTPUT_LIMIT_BYTES", 1 << 20)
    script = textwrap.dedent("""\
        import sys
        sys.stdout.write("{}\\n")
        line = "verify: bad magic header 0, wanted acca at file x offset %012d, length 4096\\n"
        for number in range((8 << 20) // 80):
            sys.stderr.write(line % number)
        """)
    done = _proc.run([sys.executable, "-c", script])
    assert done.rc == 0 and done.stdout == b"{}\n"
    lines = done.stderr.decode().splitlines()
    assert lines[0].endswith("offset %012d, length 4096" % 0)
    assert lines[-1].endswith("offset %012d, length 4096" % ((8 << 20) // 80 - 1))
    (note,) = [line for line in lines if line.startswith("[diskproof:")]
    assert note == ("[diskproof: %d bytes of this output left out here: it kept its first and last 524288 bytes]"
                    % done.left_out)
    assert len(done.stderr) < (1 << 20) + 200 and done.left_out > (7 << 20)
