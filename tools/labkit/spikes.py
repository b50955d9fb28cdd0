"""A lab disk with latency spikes (SPEC `latency_spike_ms`, `latency_spike_period_s`): a planted fault.

A drive that fails slowly first shows it in its tail: most requests complete as fast as ever, a few
wait hundreds of milliseconds (firmware retries, a controller that stalls now and then). The lab
imitates that with one small process per such disk, started by `tools/lab up` and stopped by `down`:
every `latency_spike_period_s` seconds it drops the device's read and write IOPS throttles (root
blkio cgroup) to 1 for `latency_spike_ms` milliseconds, then puts the SPEC's values back (none: the
rule removed). Requests queued in the throttle wait out the spike, so the tail grows while the mean
barely moves. Measured on a 400 IOPS loop disk, fio 4 KiB random reads QD32 for 10 s: without
spikes p99 104 ms, max 105 ms, 403 IOPS; a 200 ms spike every 2 s: p99 296 ms, max 300 ms, 374 IOPS.

It writes how many spikes it made to a small JSON file (`status` shows it). On SIGTERM it ends a
spike in progress first; `down` stops it (by PID and start time) before it removes the throttles.

Run by fleet.py as: python3 spikes.py STATE_FILE MAJ:MIN SPIKE_MS PERIOD_S READ_IOPS WRITE_IOPS
(READ_IOPS / WRITE_IOPS 0: no rule outside a spike.)
"""
from __future__ import annotations

import signal
import sys
import time
from types import FrameType

try:
    from .fob import write_state, write_throttle   # imported as labkit.spikes (fleet.py, the tests)
except ImportError:
    from fob import write_state, write_throttle    # run as a script (fleet.py starts it so): its folder is sys.path[0]

SPIKE_IOPS = 1


def main(argv: list[str]) -> int:
    state_file, major_minor = argv[0], argv[1]
    spike_ms, period_s, read_iops, write_iops = (int(value) for value in argv[2:6])
    normal = {"read_iops": read_iops, "write_iops": write_iops}
    stop: list[bool] = []

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.append(True)

    signal.signal(signal.SIGTERM, on_term)
    spikes = 0
    write_state(state_file, {"spikes": 0, "in_spike": False})
    next_spike = time.monotonic() + period_s
    while not stop:
        time.sleep(min(0.05, max(0.0, next_spike - time.monotonic())))
        if time.monotonic() < next_spike:
            continue
        for key in normal:
            write_throttle(key, major_minor, SPIKE_IOPS)
        write_state(state_file, {"spikes": spikes, "in_spike": True})
        # Sleep the spike out even when told to stop during it: the throttles must be put back below.
        deadline = time.monotonic() + spike_ms / 1000
        while time.monotonic() < deadline:
            time.sleep(max(0.0, min(0.05, deadline - time.monotonic())))
        for key, iops in normal.items():
            write_throttle(key, major_minor, iops)
        spikes += 1
        write_state(state_file, {"spikes": spikes, "in_spike": False})
        next_spike += period_s
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
