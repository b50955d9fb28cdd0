# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_stall.py: the stall watch on a /sys/block tree written here (its counters are what a disk's stat
file holds), with a clock the test moves; then through _proc.run with a real command the watch stops. The lab's
real stall (a device that holds its I/O) is tests/integration/test_fault_stall.py's."""
from __future__ import annotations

import sys
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _proc, _stall


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def seconds_pass(self, watch, seconds):
        """The watch called once a second for this many seconds."""
        for _second in range(seconds):
            self.now += 1.0
            watch()


def write_stat(sys_root, reads, writes, in_flight, device="vdb"):
    """A /sys/block/<device>/stat line of the kernel's 17 fields (reads, merges, sectors, ticks; writes ...)."""
    directory = sys_root / "block" / device
    directory.mkdir(parents=True, exist_ok=True)
    fields = [reads, 0, reads * 8, 10, writes, 0, writes * 8, 10, in_flight, 20, 20] + [0] * 6
    (directory / "stat").write_text(" ".join("%8d" % field for field in fields) + "\n")


def watch_at(tmp_path, clock, limit_s=5.0):
    return _stall.StallWatch("vdb", limit_s, sys_root=str(tmp_path), clock=clock, read_every_s=1.0)


def test_frozen_completions_with_io_in_flight_stop_the_job_after_the_limit(tmp_path):
    clock = Clock()
    write_stat(tmp_path, 100, 200, 3)
    watch = watch_at(tmp_path, clock)
    watch()                          # not read at the start
    assert watch.completed is None
    clock.now += 1.0
    watch()                          # first reading, a second in: the baseline
    assert watch.completed == 300
    clock.seconds_pass(watch, 4)     # 4 s frozen: under the limit
    clock.now += 1.0
    with pytest.raises(_stall.Stalled) as stop:
        watch()
    assert (stop.value.in_flight, stop.value.seconds) == (3, 5.0)
    assert str(stop.value) == "stalled: no I/O completed on vdb for 5 s with 3 requests in flight (stall_timeout_s 5)"


def test_completions_reset_the_clock_and_an_idle_disk_never_stalls(tmp_path):
    clock = Clock()
    write_stat(tmp_path, 100, 200, 1)
    watch = watch_at(tmp_path, clock)
    clock.now += 1.0
    watch()
    clock.now += 4.0
    watch()
    write_stat(tmp_path, 100, 201, 1)     # one write completed: the disk moves
    clock.now += 1.0
    watch()
    clock.now += 4.0
    watch()                                # 4 s since it moved
    write_stat(tmp_path, 100, 201, 0)     # nothing in flight: the tool is thinking, the disk is not stalled
    clock.seconds_pass(watch, 20)
    write_stat(tmp_path, 100, 201, 1)     # I/O in flight again: the limit counts from here
    clock.now += 4.0
    watch()
    clock.now += 1.0
    with pytest.raises(_stall.Stalled, match="for 5 s with 1 request in flight"):
        watch()


def test_reads_at_most_once_a_second(tmp_path):
    clock = Clock()
    write_stat(tmp_path, 1, 1, 1)
    watch = watch_at(tmp_path, clock)
    clock.now += 1.0
    watch()
    (tmp_path / "block" / "vdb" / "stat").unlink()
    clock.now += 0.5
    watch()                                # not read again yet: no error for the missing file either
    assert watch.read_at == 1001.0


def test_unknown_counters_judge_nothing(tmp_path):
    clock = Clock()
    clock.seconds_pass(_stall.StallWatch("nosuch", 1.0, sys_root=str(tmp_path), clock=clock), 10)
    # an old kernel's short stat line: no in-flight count
    directory = tmp_path / "block" / "old"
    directory.mkdir(parents=True)
    (directory / "stat").write_text("1 0 8 0 2 0 16\n")
    clock.seconds_pass(_stall.StallWatch("old", 1.0, sys_root=str(tmp_path), clock=clock), 10)


@pytest.mark.parametrize(("device", "limit", "watching"), [
    ("vdb", 120.0, True), (None, 120.0, False), ("", 120.0, False), ("vdb", 0, False), ("vdb", None, False),
    ("vdb", -1.0, False)])
def test_watch_for(device, limit, watching):
    watch = _stall.watch_for(device, limit)
    assert (watch is not None) == watching
    if watching:
        assert (watch.device, watch.limit_s) == (device, limit)


def test_message_names_the_command_and_the_processes_left_stuck():
    stall = _stall.Stalled("loop3", 2, 7.0, 5.0)
    assert stall.message("fio") == ("stalled: no I/O completed on loop3 for 7 s with 2 requests in flight "
                                    "(stall_timeout_s 5); fio was stopped (its process group killed)")
    stall.left_running = [4242]
    assert stall.message("fio").endswith("; 1 process still stuck in the kernel after SIGKILL (pid 4242): "
                                         "the device holds its I/O")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: /proc and process groups")
def test_run_kills_the_group_when_the_watch_stops_it(tmp_path):
    # A real command (sleep 60) and a real clock; the disk's counters are frozen with I/O in flight.
    write_stat(tmp_path, 5, 5, 2)
    watch = _stall.StallWatch("vdb", 0.5, sys_root=str(tmp_path), read_every_s=0.1)
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(_stall.Stalled) as stop:
        _proc.run(["sh", "-c", 'echo $$ > "$1"; exec sleep 60', "sh", str(pid_file)], check=watch, grace_s=1.0)
    assert time.monotonic() - started < 10
    pid = int(pid_file.read_text())
    fields = _proc._stat_fields(pid)
    assert fields is None or fields[0] == "Z"      # gone (or a zombie the test machine's PID 1 reaps late)
    assert stop.value.left_running == []            # sleep died on SIGTERM: nothing stuck
