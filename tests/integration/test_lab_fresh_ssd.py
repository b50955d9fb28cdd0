"""The lab's fresh-SSD disks (SPEC `fob_bytes`, `steady_write_iops`, `unsteady_period_s`), measured
with fio on a real lab host (lab `labfob`, labfob_lab.yml).

Proves: a disk with fob_bytes writes at its fresh IOPS until that many bytes reached it, then at
steady_write_iops for good (fio's per-second IOPS log shows the step, at the byte count the SPEC
gave); a disk with unsteady_period_s alternates between the two after its fresh bytes (it never
settles); `status` shows each disk's phase; `down` stops the watchers and leaves no throttle rule.
Root only.
"""
from __future__ import annotations

import os
import re
import statistics
from pathlib import Path

import yaml

from labhelpers import inventory_path, lab, needs_root, on_host

SPEC = Path(__file__).resolve().parent / "labfob_lab.yml"
LAB = "labfob"
HOST = "labfob-n01"
FRESH_IOPS, STEADY_IOPS = 400, 100

pytestmark = needs_root


def iops_series(device: str, seconds: int) -> list:
    """fio 4 KiB random writes, QD32, direct, for `seconds`: IOPS of each second (fio's own log)."""
    log = "/var/tmp/labfob-%s" % device
    command = ("fio --name=w --filename=/dev/%s --rw=randwrite --bs=4k --iodepth=32 --ioengine=libaio --direct=1 "
               "--runtime=%d --time_based --write_iops_log=%s --log_avg_msec=1000 --output=/dev/null && cat %s_iops.1.log"
               % (device, seconds, log, log))
    result = on_host(LAB, HOST, command)
    assert result.returncode == 0, result.stdout + result.stderr
    return [int(line.split(",")[1]) for line in result.stdout.splitlines() if line.strip()]


def near(seconds: list, iops: int) -> bool:
    """Every second within 10 % of iops but for at most one that is lower, and the mean of the others within 5 %.
    Within 10 %: the throttle dispatches in 100 ms slices, so one second's count can be up to a slice's worth off
    while its neighbours make up for it (CI runs saw 426, 414, 378, 422, 395 at 400 IOPS, and 90, 110, 90 at 100,
    whose median, 90, was 10 % off while their mean is 3 %): a mean, as slices shifted between seconds cancel in
    it. One lower second left out of it: a second in which fio itself did not get the CPU (make test runs four test
    files at once on two cores) lacks what it never submitted, and the throttle gives no credit for it later (a CI
    run saw 400, 312, 400, 400, 400); the throttle's model can only be wrong by a rate off in most seconds, which
    the mean of the others still catches. docs/lab.md says so too."""
    lower = [value for value in seconds if value < 0.90 * iops]
    kept = list(seconds)
    if lower and len(kept) > 1:
        kept.remove(lower[0])   # that one second only
    return (abs(statistics.mean(kept) - iops) <= 0.05 * iops
            and all(value <= 1.10 * iops for value in seconds) and len(lower) <= 1)


def throttle_rules(major_minors: set) -> list:
    with open("/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device", encoding="ascii") as handle:
        return [line for line in handle if line.split()[0] in major_minors]


def test_fresh_ssd_disks_step_down_or_never_settle_and_leave_nothing():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        disks = yaml.safe_load(inventory_path(LAB).read_text())["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"]
        settling, wobbling = disks[0]["device"], disks[1]["device"]
        major_minors = {disks[0]["major_minor"], disks[1]["major_minor"]}

        # 8 MiB at 400 IOPS x 4 KiB = 5.1 s fresh, then 100 IOPS: 9 s show both sides of the step.
        series = iops_series(settling, 9)
        print("settling disk, IOPS per second:", series)
        assert near(series[1:5], FRESH_IOPS) and near(series[6:9], STEADY_IOPS), series
        fresh_bytes = sum(series[:5]) * 4096
        assert fresh_bytes <= 8 << 20 <= fresh_bytes + series[5] * 4096, fresh_bytes
        # ... and it stays steady.
        later = iops_series(settling, 4)
        assert near(later[1:], STEADY_IOPS), later

        # 4 MiB fresh (2.6 s), then 2 s steady and 2 s fresh in turn.
        wobble = iops_series(wobbling, 12)
        print("never-settling disk, IOPS per second:", wobble)
        after = wobble[4:]
        assert any(value <= 1.1 * STEADY_IOPS for value in after) and any(value >= 0.9 * FRESH_IOPS for value in after)
        changes = sum(1 for a, b in zip(after, after[1:]) if (a > 250) != (b > 250))
        assert changes >= 3, wobble

        status = lab("status", "--name", LAB, check=False).stdout
        print(status)
        assert re.search(r"d0 .*fresh SSD: steady, ", status), status
        assert re.search(r"d1 .*fresh SSD: unsteady-(steady|fresh), .*alternating every 2 s", status), status
    finally:
        down = lab("down", "--name", LAB, check=False)
    assert down.returncode == 0, down.stderr
    assert throttle_rules(major_minors) == []
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _names(pid, b"/dev/shm/diskproof-lab-labfob/fob/")]


def _names(pid: str, text: bytes) -> bool:
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            return text in handle.read()
    except OSError:
        return False
