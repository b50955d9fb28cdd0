# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cache fence: a memory cgroup whose limit bounds the page cache the commands inside it can use.

``cgroup_version``, ``fence_layout`` (of /proc/self/cgroup, parsed by _parse/proc_cgroup.py),
``plan_fence`` and ``CacheFence``; ``remove_stale_fences`` removes what a killed module left. Used by
bench_run (module_utils/_run.py) and bench_plan (which checks a fence can be made before the quiesce).
No Ansible imports.
"""

from __future__ import annotations

import errno
import os
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

from ._parse.proc_cgroup import parse_proc_cgroup

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_SELF_CGROUP = "/proc/self/cgroup"
FENCE_PREFIX = "diskproof"


class FenceError(Exception):
    """A cgroup layout the fence cannot use (no memory controller, an unreadable /proc/self/cgroup)."""


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def cgroup_version(cgroup_root: str = CGROUP_ROOT) -> Optional[int]:
    """2 for a unified hierarchy (cgroup.controllers at the root), 1 for a mounted v1 memory
    controller, None for neither."""
    if os.path.isfile(os.path.join(cgroup_root, "cgroup.controllers")):
        return 2
    if os.path.isfile(os.path.join(cgroup_root, "memory", "memory.limit_in_bytes")):
        return 1
    return None


def memory_controller_enabled(subtree_control: str) -> bool:
    """True when cgroup.subtree_control lists memory (children get the memory controller)."""
    return "memory" in subtree_control.split()


def fence_name(pid: int, token: str) -> str:
    return "%s-%d-%s" % (FENCE_PREFIX, pid, token)


class FenceLayout(NamedTuple):
    """Where a fence lives and which files it uses."""

    version: int
    path: str             # the fence cgroup directory
    home: str             # the cgroup directory the process returns to
    limit_file: str       # memory.max (v2) / memory.limit_in_bytes (v1)
    peak_file: str        # memory.peak (v2) / memory.max_usage_in_bytes (v1)


def _join(base: str, cgroup_path: str) -> str:
    relative = cgroup_path.strip("/")
    return os.path.join(base, relative) if relative else base


def fence_layout(version: int, own: Mapping[str, str], name: str, cgroup_root: str = CGROUP_ROOT) -> FenceLayout:
    """The fence of a process whose /proc/self/cgroup entries are ``own``.

    v2: ``<root>/<name>`` (a child of the root, whose subtree_control must list memory: a non-root
    cgroup holding processes cannot give its children controllers). v1: ``<root>/memory/<the
    process's own memory cgroup>/<name>``, a child of the cgroup the process is in, so whatever
    limit and accounting apply to it still apply inside the fence; that is ``<root>/memory/<name>``
    when the process is in the root memory cgroup.
    """
    if version == 2:
        if "" not in own:
            raise FenceError("cgroup v2 but /proc/self/cgroup has no unified (0::) entry")
        return FenceLayout(2, os.path.join(cgroup_root, name), _join(cgroup_root, own[""]),
                           "memory.max", "memory.peak")
    if version == 1:
        if "memory" not in own:
            raise FenceError("cgroup v1 but /proc/self/cgroup has no memory controller entry")
        memory_root = os.path.join(cgroup_root, "memory")
        home = _join(memory_root, own["memory"])
        return FenceLayout(1, os.path.join(home, name), home, "memory.limit_in_bytes", "memory.max_usage_in_bytes")
    raise FenceError("unknown cgroup version %r" % (version,))


def plan_fence(pid: int, token: str, cgroup_root: str = CGROUP_ROOT,
               proc_cgroup: str = PROC_SELF_CGROUP) -> FenceLayout:
    """The fence layout for this machine, or FenceError saying what is missing."""
    version = cgroup_version(cgroup_root)
    if version is None:
        raise FenceError("no memory cgroup controller: neither %s/cgroup.controllers (cgroup v2) nor "
                         "%s/memory/memory.limit_in_bytes (cgroup v1) exists" % (cgroup_root, cgroup_root))
    text = _read(proc_cgroup)
    if text is None:
        raise FenceError("cannot read %s" % proc_cgroup)
    layout = fence_layout(version, parse_proc_cgroup(text), fence_name(pid, token), cgroup_root)
    if version == 2:
        control = _read(os.path.join(cgroup_root, "cgroup.subtree_control"))
        if control is None or not memory_controller_enabled(control):
            raise FenceError("cgroup v2: the memory controller is not enabled for children of %s (its "
                             "cgroup.subtree_control lists %r); enable it with: echo +memory > %s/cgroup.subtree_control"
                             % (cgroup_root, (control or "").strip(), cgroup_root))
    if not os.path.isdir(layout.home):
        raise FenceError("the module's own cgroup %s does not exist" % layout.home)
    return layout


# A fence younger than this is never taken for stale: a module in another pid namespace (a container, a lab host on
# one kernel) shows no live pid here, and its new fence is empty for a moment between mkdir and entering it.
STALE_AFTER_S = 300.0


def stale_fences(home: str, alive: Callable[[int], bool], now: Optional[float] = None,
                 min_age_s: float = STALE_AFTER_S) -> List[str]:
    """Fence cgroups under ``home`` whose module is gone (SIGKILLed, OOM-killed: it could not remove its own).

    A fence is named ``diskproof-<module pid>-<token>``; it is stale when that pid no longer runs here, no process
    is inside it (a module in another pid namespace is invisible to ``alive`` but sits in its own fence), and it
    was made more than ``min_age_s`` ago. Removing it is an rmdir, which the kernel refuses while any process is
    still inside, so a live fence is never hit.
    """
    try:
        names = os.listdir(home)
    except OSError:
        return []
    moment = time.time() if now is None else now
    stale = []
    for name in sorted(names):
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != FENCE_PREFIX or not parts[1].isdigit() or alive(int(parts[1])):
            continue
        path = os.path.join(home, name)
        try:
            made = os.stat(path).st_mtime
        except OSError:
            continue
        procs = _read(os.path.join(path, "cgroup.procs"))
        if os.path.isdir(path) and moment - made >= min_age_s and (procs is None or not procs.strip()):
            stale.append(path)
    return stale


def remove_stale_fences(home: str, alive: Callable[[int], bool], now: Optional[float] = None,
                        min_age_s: float = STALE_AFTER_S) -> Tuple[List[str], List[str]]:
    """(removed, problems): rmdir every stale fence under ``home``."""
    removed, problems = [], []
    for path in stale_fences(home, alive, now, min_age_s):
        try:
            os.rmdir(path)
            removed.append(path)
        except OSError as error:
            problems.append("stale cache fence cgroup %s not removed (%s)" % (path, error))
    return removed, problems


def fence_setup_advice(error_number: Optional[int]) -> str:
    """What to do when a cache fence cgroup cannot be created or entered, by the errno the kernel gave
    (a lab run once saw ENODEV under load, where "run with become" was no help)."""
    if error_number in (errno.EACCES, errno.EPERM):
        return "run with become: true"
    if error_number == errno.EROFS:
        return ("the memory cgroup hierarchy is mounted read-only here (a container?): mount it read-write, or set "
                "diskproof_cache_fence_bytes: 0 to size buffered tests at 2 x RAM instead")
    if error_number in (errno.ENODEV, errno.ENOSPC, errno.EBUSY, errno.EAGAIN):
        return ("the kernel refused a new memory cgroup (too many cgroups, dying ones included, or its parent being "
                "removed): run again; if it persists, set diskproof_cache_fence_bytes: 0 to size buffered tests at "
                "2 x RAM")
    return "check that the memory cgroup controller is mounted and writable, or set diskproof_cache_fence_bytes: 0"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


class CacheFence:
    """A memory cgroup capped at ``limit_bytes``; ``enter`` moves the calling process into it (the
    commands it starts afterwards inherit it), ``leave`` moves it back, ``remove`` reads the peak
    and removes the cgroup. ``leave`` and ``remove`` never raise: they return problems."""

    def __init__(self, layout: FenceLayout, limit_bytes: int, pid: int,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.layout = layout
        self.limit_bytes = limit_bytes
        self.pid = pid
        self.created = False
        self.inside = False
        self.peak_bytes: Optional[int] = None
        self._sleep = sleep

    def describe(self) -> Dict[str, Any]:
        return {"bytes": self.limit_bytes, "version": self.layout.version, "cgroup": self.layout.path,
                "peak_bytes": self.peak_bytes}

    def create(self) -> None:
        os.mkdir(self.layout.path)
        self.created = True
        _write(os.path.join(self.layout.path, self.layout.limit_file), "%d\n" % self.limit_bytes)

    def enter(self) -> None:
        _write(os.path.join(self.layout.path, "cgroup.procs"), "%d\n" % self.pid)
        self.inside = True

    def leave(self) -> List[str]:
        if not self.inside:
            return []
        try:
            _write(os.path.join(self.layout.home, "cgroup.procs"), "%d\n" % self.pid)
        except OSError as error:
            return ["cannot move the module (pid %d) back to its cgroup %s: %s" % (self.pid, self.layout.home, error)]
        self.inside = False
        return []

    def read_peak(self) -> Optional[int]:
        text = _read(os.path.join(self.layout.path, self.layout.peak_file))
        if text is None or not text.strip().isdigit():
            return None
        return int(text.strip())

    def remove(self, attempts: int = 20, pause: float = 0.1) -> List[str]:
        """rmdir the fence, retrying while it is busy (processes still exiting)."""
        if not self.created:
            return []
        self.peak_bytes = self.read_peak()
        last: Optional[OSError] = None
        for attempt in range(attempts):
            try:
                os.rmdir(self.layout.path)
                self.created = False
                return []
            except FileNotFoundError:
                self.created = False
                return []
            except OSError as error:
                last = error
                if error.errno not in (errno.EBUSY, errno.ENOTEMPTY) or attempt == attempts - 1:
                    break
                self._sleep(pause)
        return ["cache fence cgroup %s not removed (%s): remove it with rmdir once the processes in its "
                "cgroup.procs have exited" % (self.layout.path, last)]
