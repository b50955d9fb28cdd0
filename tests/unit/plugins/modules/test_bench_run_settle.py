# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench_run waits for an idle disk before each measured run (settle_s), after the cache drop and before the
device counters are read: the order and the warning are checked here with a stand-in for the wait (this machine's
disk is shared with other tests); _blockdev.wait_until_idle itself is tested in test_blockdev.py, and what the wait
does for the lab's figures is measured by benchmarks/lab_writes.py (docs/lab.md)."""
from __future__ import annotations

import shutil

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import records, run_main

needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")


@pytest.fixture
def calls(monkeypatch):
    """What happened, in order: drop_caches, the wait (device, quiet, limit) and the stat reads around the run."""
    seen = []
    monkeypatch.setattr(_blockdev, "drop_caches", lambda: seen.append(("drop_caches",)))
    real_read_stat = _blockdev.read_stat

    def read_stat(device, *args, **kwargs):
        seen.append(("read_stat", device))
        return real_read_stat(device, *args, **kwargs)

    monkeypatch.setattr(_blockdev, "read_stat", read_stat)
    return seen


def fake_wait(calls, idle):
    def wait_until_idle(device, quiet_s, limit_s):
        calls.append(("wait", device, quiet_s, limit_s))
        return _blockdev.Settle(idle, limit_s if not idle else quiet_s, 0 if idle else 37)
    return wait_until_idle


@needs_dd
def test_each_measured_run_waits_after_the_cache_drop_and_before_the_counters(capsys, tmp_path, calls, monkeypatch):
    monkeypatch.setattr(_blockdev, "wait_until_idle", fake_wait(calls, idle=True))
    out = tmp_path / "diskproof.testfile"
    code, result = run_main(bench_run, capsys, dict(
        argv=["dd", "if=/dev/zero", "of=%s" % out, "bs=65536", "count=4", "conv=fdatasync"], creates=str(out),
        target={"path": str(tmp_path), "device": "loop42"}, drop_caches=True, repeats=2, settle_s=0.25))
    assert code == 0, result
    run_steps = [step[0] for step in calls if step[0] in ("drop_caches", "wait") or step == ("read_stat", "loop42")]
    # per run: drop, wait, counters before, counters after
    assert run_steps == ["drop_caches", "wait", "read_stat", "read_stat"] * 2
    assert [step for step in calls if step[0] == "wait"] == [("wait", "loop42", 0.25, 5.0)] * 2
    assert not any("not idle" in warning for record in records(result) for warning in record["warnings"])


@needs_dd
def test_a_disk_that_never_went_quiet_is_measured_with_a_warning(capsys, tmp_path, calls, monkeypatch):
    monkeypatch.setattr(_blockdev, "wait_until_idle", fake_wait(calls, idle=False))
    out = tmp_path / "diskproof.testfile"
    code, result = run_main(bench_run, capsys, dict(
        argv=["dd", "if=/dev/zero", "of=%s" % out, "bs=65536", "count=4"], creates=str(out),
        target={"path": str(tmp_path), "device": "loop42"}))
    assert code == 0, result
    (record,) = records(result)
    assert ("the disk was not idle before run 1: 37 requests in the 5.0 s spent waiting for 0.3 s without I/O "
            "(another process using it?)") in record["warnings"]


@needs_dd
def test_settle_zero_does_not_wait(capsys, tmp_path, calls, monkeypatch):
    monkeypatch.setattr(_blockdev, "wait_until_idle", fake_wait(calls, idle=True))
    out = tmp_path / "diskproof.testfile"
    code, result = run_main(bench_run, capsys, dict(
        argv=["dd", "if=/dev/zero", "of=%s" % out, "bs=65536", "count=4"], creates=str(out),
        target={"path": str(tmp_path), "device": "loop42"}, settle_s=0))
    assert code == 0, result
    assert not [step for step in calls if step[0] == "wait"]
