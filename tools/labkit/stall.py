"""A lab disk that stalls (SPEC `stall_after_bytes`, `stall_s`): a planted fault.

A drive can stop completing I/O without failing it: a firmware hang, a controller waiting on a lost command. The
requests it has accepted stay in flight, nothing completes, and a tool waiting on them waits for ever (fio has no
timeout for an I/O that never completes, fio issue 2012). The lab imitates that with two loop devices: the host's
disk is a loop device (direct I/O) over a second loop device over the image, and the hold is a throttle of 1 byte/s
on the lower one. The host's disk then has its requests in flight and completes none, as a hung drive shows in its
/sys/block/<dev>/stat. (A throttle on the host's own disk would not do: blk-throttle holds the I/O before it
becomes a request, and the disk would look idle.)

One small process per such disk, started by `tools/lab up` and stopped by `down`: it watches the host disk's
counters; once `stall_after_bytes` have been read or written through it since `up`, it holds the lower device's
I/O for `stall_s` seconds, once, then releases it (the drive comes back; queued requests complete) and exits. It
writes what it did to a small JSON file (`status` shows it): when the stall began and ended. On SIGTERM it releases the hold
first.

Run by fleet.py as: python3 stall.py STATE_FILE HOST_DEVICE LOWER_MAJ:MIN AFTER_BYTES STALL_S
"""
from __future__ import annotations

import signal
import sys
import time
from types import FrameType

try:
    from .fob import write_state, write_throttle   # imported as labkit.stall (fleet.py, the tests)
except ImportError:
    from fob import write_state, write_throttle    # run as a script (fleet.py starts it so): its folder is sys.path[0]

POLL_S = 0.02
SECTOR = 512
# 1 byte/s: any request waits far longer than any test (a 4 KiB read: 68 minutes) until the rule goes.
HOLD_BYTES_PER_S = 1


def moved_bytes(device: str) -> int:
    """Bytes read and written through /dev/<device> since it was made (its stat's sector counters)."""
    with open(f"/sys/block/{device}/stat", encoding="ascii") as handle:
        fields = handle.read().split()
    return (int(fields[2]) + int(fields[6])) * SECTOR


def hold(major_minor: str, held: bool) -> None:
    """Hold (1 byte/s) or release (the rule removed) every read and write of the device."""
    for key in ("read_bytes_per_s", "write_bytes_per_s"):
        write_throttle(key, major_minor, HOLD_BYTES_PER_S if held else 0)


def main(argv: list[str]) -> int:
    state_file, device, lower = argv[0], argv[1], argv[2]
    after_bytes, stall_s = int(argv[3]), float(argv[4])
    stop: list[bool] = []

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.append(True)

    signal.signal(signal.SIGTERM, on_term)
    start = moved_bytes(device)
    state: dict[str, object] = {"stalls": 0, "in_stall": False, "stalled_at": None, "released_at": None}
    write_state(state_file, state)
    while not stop and moved_bytes(device) - start < after_bytes:
        time.sleep(POLL_S)
    if stop:
        return 0
    hold(lower, True)
    state.update(stalls=1, in_stall=True, stalled_at=time.time())
    write_state(state_file, state)
    try:
        deadline = time.monotonic() + stall_s
        while not stop and time.monotonic() < deadline:
            time.sleep(min(POLL_S * 5, max(0.0, deadline - time.monotonic())))
    finally:
        hold(lower, False)
        state.update(in_stall=False, released_at=time.time())
        write_state(state_file, state)
    return 0    # once: the state file keeps what happened


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
