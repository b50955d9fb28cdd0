"""A lab disk that returns wrong data (SPEC `flip_byte_at`, `stale_region_at`, `stale_region_bytes`): planted faults.

A disk can be fast and still hand back the wrong data. The lab imitates two such faults with one small process
per disk, started by `tools/lab up` and stopped by `down`; it works on the disk's backing image (what the loop
device reads and writes), polling it every POLL_S:

- `flip_byte_at: N`: each time a write lands on the 4 KiB block holding byte N (its content changes), the
  process flips one bit of byte N (XOR 0x10): silent corruption after the write, found by the next read-back.
- `stale_region_at: N` (+ `stale_region_bytes`, default 64 KiB, the region size CERN's disk checks found most):
  the region keeps the first data written to it (once it has not changed for SETTLE_S); every later write to
  it is undone, the region put back as it was: writes acknowledged and never landed.

What the disk's own page cache holds is not this process's business: the tools read a raw lab disk with
O_DIRECT, which reads through to the image. It writes what it did to a small JSON file (`status` shows it):
how many flips and put-backs, and the wall-clock time of the first of each. On SIGTERM it stops between polls.

Run by fleet.py as: python3 datafault.py STATE_FILE IMAGE FLIP_AT STALE_AT STALE_BYTES (-1: that fault not
planted).
"""
from __future__ import annotations

import os
import signal
import sys
import time
from types import FrameType

try:
    from .fob import write_state   # imported as labkit.datafault (fleet.py, the tests)
except ImportError:
    from fob import write_state    # run as a script (fleet.py starts it so): its folder is sys.path[0]

POLL_S = 0.02
SETTLE_S = 1.0
BLOCK = 4096
FLIP_MASK = 0x10
DEFAULT_STALE_BYTES = 64 * 1024


def read_at(fd: int, offset: int, length: int) -> bytes:
    return os.pread(fd, length, offset)


def write_at(fd: int, offset: int, data: bytes) -> None:
    os.pwrite(fd, data, offset)
    os.fdatasync(fd)


class Flipper:
    """Flips bit 4 of byte `at` after each write that lands on its block."""

    def __init__(self, fd: int, at: int) -> None:
        self.fd, self.at, self.block = fd, at, at // BLOCK * BLOCK
        self.seen = read_at(fd, self.block, BLOCK)
        self.count, self.first = 0, None

    def poll(self) -> None:
        now = read_at(self.fd, self.block, BLOCK)
        if now == self.seen:
            return
        flipped = bytearray(now)
        flipped[self.at - self.block] ^= FLIP_MASK
        write_at(self.fd, self.block, bytes(flipped))
        self.seen = bytes(flipped)
        self.count += 1
        self.first = self.first or time.time()


class StaleRegion:
    """Keeps the first data written to [at, at + length); puts it back after every later write."""

    def __init__(self, fd: int, at: int, length: int) -> None:
        self.fd, self.at, self.length = fd, at, length
        self.initial = read_at(fd, at, length)
        self.kept: bytes | None = None
        self.last, self.changed_at = self.initial, 0.0
        self.count, self.first = 0, None

    def poll(self) -> None:
        now = read_at(self.fd, self.at, self.length)
        if self.kept is None:
            if now != self.last:
                self.last, self.changed_at = now, time.monotonic()
            elif now != self.initial and time.monotonic() - self.changed_at >= SETTLE_S:
                self.kept = now     # the first write is complete: from now on the region is frozen
            return
        if now == self.kept:
            return
        write_at(self.fd, self.at, self.kept)
        self.count += 1
        self.first = self.first or time.time()


def main(argv: list[str]) -> int:
    state_file, image = argv[0], argv[1]
    flip_at, stale_at, stale_bytes = (int(value) for value in argv[2:5])
    stop: list[bool] = []

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.append(True)

    signal.signal(signal.SIGTERM, on_term)
    fd = os.open(image, os.O_RDWR)
    flipper = Flipper(fd, flip_at) if flip_at >= 0 else None
    stale = StaleRegion(fd, stale_at, stale_bytes if stale_bytes > 0 else DEFAULT_STALE_BYTES) if stale_at >= 0 else None

    def state() -> dict:
        return {"flips": flipper.count if flipper else None, "first_flip": flipper.first if flipper else None,
                "put_backs": stale.count if stale else None, "first_put_back": stale.first if stale else None,
                "stale_region_kept": (stale.kept is not None) if stale else None}

    written = state()
    write_state(state_file, written)
    try:
        while not stop:
            for fault in (flipper, stale):
                if fault is not None:
                    fault.poll()
            if state() != written:
                written = state()
                write_state(state_file, written)
            time.sleep(POLL_S)
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
