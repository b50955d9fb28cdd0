# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stall watch: a job whose disk has I/O in flight and completes none for ``stall_timeout_s`` is stopped.

fio has no timeout for an I/O that never completes (fio issue 2012): ``max_latency`` only judges the I/Os that did
complete, and a hung drive holds the tool, and the whole fleet run, until the task's own timeout. While a job runs
bench_run reads the disk's own counters (``/sys/block/<dev>/stat``: requests completed, requests in flight) about
once a second; when requests are in flight and none completed for the limit, the job's process group is killed as
a cancel kills it, and the record's error says ``stalled``, with the in-flight count and the seconds. A process
still stuck in the kernel after SIGKILL (state D: the device holds its I/O) is named, not waited for.

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from . import _blockdev
from ._proc import WatchStop

# How often the counters are read while a job runs.
READ_EVERY_S = 1.0


class Stalled(WatchStop):
    """The disk completed no request for ``seconds`` with ``in_flight`` requests outstanding."""

    def __init__(self, device: str, in_flight: int, seconds: float, limit_s: float) -> None:
        super().__init__("stalled: no I/O completed on %s for %.0f s with %d request%s in flight (stall_timeout_s %g)"
                         % (device, seconds, in_flight, "" if in_flight == 1 else "s", limit_s))
        self.device, self.in_flight, self.seconds, self.limit_s = device, in_flight, seconds, limit_s

    def message(self, command: str) -> str:
        """The record's error: the stall, what was done about it, and any process the kernel still holds."""
        text = "%s; %s was stopped (its process group killed)" % (self, command)
        left = self.left_running
        if left:
            text += ("; %d process%s still stuck in the kernel after SIGKILL (pid %s): the device holds its I/O"
                     % (len(left), "" if len(left) == 1 else "es", ", ".join(str(pid) for pid in left)))
        return text


class StallWatch:
    """A check for _proc.run: raises Stalled once the disk has had requests in flight and completed none for
    limit_s seconds."""

    def __init__(self, device: str, limit_s: float, sys_root: str = _blockdev.SYS_ROOT,
                 clock: Callable[[], float] = time.monotonic, read_every_s: float = READ_EVERY_S) -> None:
        self.device, self.limit_s, self.sys_root, self.clock = device, limit_s, sys_root, clock
        self.read_every_s = read_every_s
        # The first reading a period after the start: a run shorter than that is never read (nothing to judge).
        self.read_at = clock()      # type: float
        self.completed = None       # type: Optional[int]
        self.moved_at = self.read_at

    def __call__(self) -> None:
        now = self.clock()
        if now - self.read_at < self.read_every_s:
            return
        self.read_at = now
        counters = _blockdev.read_stat(self.device, self.sys_root)
        if counters is None or "in_flight" not in counters:
            return          # counters unknown: nothing to judge by
        completed = counters["reads"] + counters["writes"]
        if completed != self.completed or not counters["in_flight"]:
            self.completed, self.moved_at = completed, now
            return
        if now - self.moved_at >= self.limit_s:
            raise Stalled(self.device, counters["in_flight"], now - self.moved_at, self.limit_s)


def watch_for(device: Optional[str], limit_s: Optional[float]) -> Optional[StallWatch]:
    """The watch of a job on device (None: no device known, or limit_s 0 or unset: no watch)."""
    if not device or not limit_s or limit_s <= 0:
        return None
    return StallWatch(device, float(limit_s))
