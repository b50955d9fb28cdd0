"""A lab disk that behaves like a fresh SSD (SPEC `fob_bytes`, `steady_write_iops`, `unsteady_period_s`).

A new SSD writes fast until its clean blocks are used up ("fresh out of the box"), then settles
at its steady-state speed. The lab imitates that with one small process per such disk, started
by `tools/lab up` and stopped by `down`: it watches the loop device's written-sector counter
(/sys/block/loopN/stat, field 7: what passed the blkio throttle and reached the device) and,
once `fob_bytes` have been written since it started, writes `steady_write_iops` into the root
blkio cgroup's write-IOPS throttle of the device. With `unsteady_period_s` it then alternates
between the fresh and the steady IOPS every that many seconds: a disk that never settles.

It writes its phase to a small JSON file (`status` shows it) and restores nothing itself: `down`
stops it first (SIGTERM, by PID and start time) and then removes the throttles it recorded.

Run by fleet.py as: python3 fob.py STATE_FILE DEVICE MAJ:MIN FOB_BYTES FRESH_IOPS STEADY_IOPS PERIOD_S
(FRESH_IOPS 0: unthrottled when fresh; PERIOD_S 0: settles for good.)
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from types import FrameType

SECTOR_BYTES = 512
POLL_S = 0.05
# The root blkio cgroup's throttle files, by SPEC key: every lab tool writes its rules through write_throttle.
BLKIO_DIR = "/sys/fs/cgroup/blkio"
THROTTLE_FILES = {
    "read_bytes_per_s": "blkio.throttle.read_bps_device",
    "write_bytes_per_s": "blkio.throttle.write_bps_device",
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
}


def written_bytes(device: str) -> int:
    with open(f"/sys/block/{device}/stat", encoding="ascii") as handle:
        return int(handle.read().split()[6]) * SECTOR_BYTES


def write_throttle(key: str, major_minor: str, value: int) -> None:
    """The device's rule for this SPEC key (THROTTLE_FILES); 0 removes it (the kernel's own convention)."""
    fd = os.open(os.path.join(BLKIO_DIR, THROTTLE_FILES[key]), os.O_WRONLY)
    try:
        os.write(fd, f"{major_minor} {value}\n".encode())
    finally:
        os.close(fd)


def phase_at(written: int, fob_bytes: int, settled_at: float | None, now: float, period_s: int) -> str:
    """fresh until fob_bytes are written; then steady, or (with a period) steady and fresh in turn."""
    if written < fob_bytes or settled_at is None:
        return "fresh"
    if period_s and int((now - settled_at) // period_s) % 2 == 1:
        return "unsteady-fresh"
    return "steady" if not period_s else "unsteady-steady"


def write_state(path: str, state: dict) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(temporary, path)


def main(argv: list[str]) -> int:
    state_file, device, major_minor = argv[0], argv[1], argv[2]
    fob_bytes, fresh_iops, steady_iops, period_s = (int(value) for value in argv[3:7])
    stop = []

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.append(True)

    signal.signal(signal.SIGTERM, on_term)
    baseline = written_bytes(device)
    settled_at: float | None = None
    current = "fresh"
    switches = 0
    write_state(state_file, {"phase": current, "written_bytes": 0, "fob_bytes": fob_bytes, "switches": 0})
    while not stop:
        written = written_bytes(device) - baseline
        now = time.monotonic()
        if settled_at is None and written >= fob_bytes:
            settled_at = now
        phase = phase_at(written, fob_bytes, settled_at, now, period_s)
        if phase != current:
            write_throttle("write_iops", major_minor, fresh_iops if phase.endswith("fresh") else steady_iops)
            current, switches = phase, switches + 1
            write_state(state_file, {"phase": current, "written_bytes": written, "fob_bytes": fob_bytes,
                                     "switches": switches, "write_iops": fresh_iops if phase.endswith("fresh") else steady_iops})
        time.sleep(POLL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
