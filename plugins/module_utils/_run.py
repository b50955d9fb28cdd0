# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job-runner logic of bench_facts, without Ansible: repeats, sweeps, write cache, cache fence.

No Ansible imports; bench_facts runs the commands and calls these helpers, pytest reaches them
directly.

- Repeats: ``primary_value`` (the figure the report judges, ``_aggregate.primary_metric``),
  ``needs_more_runs`` (coefficient of variation above ``max_cv``), ``select_median`` (the REAL
  run whose figure is the median, the lower-middle one for an even count) and
  ``add_repeat_fields``.
- Sweeps (ZCAV): ``sweep_result`` turns the dd read of every offset into one partial record.
- Device counters: ``bypass_reason`` is ``_aggregate.cache_bypass`` with a configurable fraction.
- Volatile write cache: ``write_cache_transport`` (ata, scsi or nvme from /sys), the command table
  ``write_cache_commands`` (hdparm, sdparm, nvme-cli) and the parsers of their output.
- Cache fence: ``cgroup_version``, ``parse_proc_cgroup``, ``fence_layout`` and ``CacheFence``, a
  memory cgroup whose limit bounds the page cache the commands inside it can use.
- ``remove_tree``: removes a directory the module created without following symlinks or crossing
  into other filesystems.
- Out of space: ``out_of_space_advice`` explains an ENOSPC during a run (``ENOSPC_TEXT`` in a tool's error).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ._aggregate import CACHE_BYPASS_MIN_FRACTION, cache_bypass, coefficient_of_variation, primary_metric
from ._parse.records import empty_metrics

SYS_ROOT = "/sys"
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_SELF_CGROUP = "/proc/self/cgroup"
FENCE_PREFIX = "diskproof"


class RunError(Exception):
    """Something the runner cannot work with (unreadable tool output, unusable cgroup layout)."""


# ---------------------------------------------------------------------------------------------
# repeats
# ---------------------------------------------------------------------------------------------

def primary_value(record: Mapping[str, Any]) -> Optional[float]:
    """The figure the report judges a record on (IOPS or bytes/s), None when it has none."""
    metric = primary_metric(record)
    return None if metric is None else float(metric["value"])


def sample_cv(samples: Sequence[Optional[float]]) -> Optional[float]:
    """Sample stdev / mean of the samples; None with fewer than 2, a missing figure or a mean <= 0."""
    if any(sample is None for sample in samples):
        return None
    return coefficient_of_variation([float(sample) for sample in samples if sample is not None])


def needs_more_runs(samples_by_index: Sequence[Sequence[Optional[float]]], max_cv: float) -> bool:
    """True when the samples of any record index vary by more than max_cv (a CV that cannot be
    computed never asks for more runs: more runs would not make it computable)."""
    for samples in samples_by_index:
        cv = sample_cv(samples)
        if cv is not None and cv > max_cv:
            return True
    return False


def select_median(samples: Sequence[Optional[float]]) -> int:
    """Index of the run whose figure is the median (the lower-middle one for an even count; ties
    keep run order). Runs without a figure are not ranked; when none has one, the first run."""
    ranked = sorted((value, index) for index, value in enumerate(samples) if value is not None)
    if not ranked:
        return 0
    return ranked[(len(ranked) - 1) // 2][1]


def add_repeat_fields(record: Dict[str, Any], samples: Sequence[Optional[float]],
                      device_ios: Sequence[Optional[Dict[str, int]]]) -> Dict[str, Any]:
    """record with samples, cv, runs and sample_device_io (in run order) added."""
    record["samples"] = list(samples)
    record["cv"] = sample_cv(samples)
    record["runs"] = len(samples)
    record["sample_device_io"] = [None if device_io is None else dict(device_io) for device_io in device_ios]
    return record


def select_repeats(runs: Sequence[Sequence[Dict[str, Any]]],
                   notes: Optional[Sequence[Sequence[Optional[str]]]] = None) -> List[Dict[str, Any]]:
    """One record per record index: the real run whose figure is the median of that index, with the
    repeat fields added. ``runs`` holds the records of each successful run, all of equal length;
    ``notes[run][index]`` is a finding about that run's record (a failed cache-bypass proof) that
    the chosen record then also carries, as "run N: ..." (its own is already in its warnings)."""
    if not runs:
        return []
    chosen = []
    for index in range(len(runs[0])):
        column = [run[index] for run in runs]
        samples = [primary_value(record) for record in column]
        median_run = select_median(samples)
        record = column[median_run]
        for number in range(len(column)):
            note = notes[number][index] if notes is not None else None
            if note and number != median_run:
                record["warnings"].append("run %d: %s" % (number + 1, note))
        chosen.append(add_repeat_fields(record, samples, [sibling["device_io"] for sibling in column]))
    return chosen


# ---------------------------------------------------------------------------------------------
# device counters
# ---------------------------------------------------------------------------------------------

def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def bypass_reason(record: Mapping[str, Any], min_fraction: float = CACHE_BYPASS_MIN_FRACTION) -> Optional[str]:
    """Why the device counters do not prove the tool's bytes reached the disk, or None.

    At the report's own fraction (0.95) this is exactly ``_aggregate.cache_bypass``; another
    fraction applies the same rule (a write-only record's written bytes, a read-only record's read
    bytes, both summed for a mixed record, compared with ``bytes``) with that fraction.
    """
    if abs(min_fraction - CACHE_BYPASS_MIN_FRACTION) < 1e-12:
        return cache_bypass(record)[0]
    return device_shortfall(record, min_fraction)


def device_shortfall(record: Mapping[str, Any], min_fraction: float) -> Optional[str]:
    """The rule of ``_aggregate.cache_bypass`` with any fraction (the reason, or None)."""
    moved = _number(record.get("bytes"))
    metrics = record.get("metrics") if isinstance(record.get("metrics"), Mapping) else {}
    reads = any(_number(metrics.get(key)) is not None for key in ("read_bytes_per_s", "read_iops"))
    writes = any(_number(metrics.get(key)) is not None for key in ("write_bytes_per_s", "write_iops"))
    device_io = record.get("device_io")
    if moved is None or moved <= 0 or not (reads or writes) or not isinstance(device_io, Mapping):
        return None
    read_bytes, write_bytes = _number(device_io.get("read_bytes")), _number(device_io.get("write_bytes"))
    if reads and writes:
        seen, what = (None if read_bytes is None or write_bytes is None else read_bytes + write_bytes), "read and wrote"
    elif writes:
        seen, what = write_bytes, "wrote"
    else:
        seen, what = read_bytes, "read"
    if seen is None or seen >= min_fraction * moved:
        return None
    return ("cache bypass not proven: the device %s %d of the %d bytes the tool moved (%.1f%%, < %s%%)"
            % (what, seen, moved, 100.0 * seen / moved, "%g" % (min_fraction * 100)))


# ---------------------------------------------------------------------------------------------
# sweeps (ZCAV)
# ---------------------------------------------------------------------------------------------

class SweepStep(NamedTuple):
    """One dd read of a sweep: where it read and what dd said."""

    offset_bytes: int
    bytes: Optional[int]
    seconds: Optional[float]
    error: Optional[str] = None
    warnings: Tuple[str, ...] = ()


def sweep_result(steps: Sequence[SweepStep], tool_version: Optional[str] = None) -> Dict[str, Any]:
    """The one partial record of a sweep: ``metrics.zcav`` = [{offset_bytes, read_bytes_per_s}]
    (bytes / seconds of each read), ``metrics.read_bytes_per_s`` = total bytes / total seconds,
    ``bytes`` and ``seconds`` the totals. A failed step ends the sweep: its error is the record's."""
    points = []
    total_bytes = 0
    total_seconds = 0.0
    warnings = []
    error = None
    for number, step in enumerate(steps, 1):
        where = "step %d (offset %d)" % (number, step.offset_bytes)
        warnings.extend("%s: %s" % (where, warning) for warning in step.warnings)
        if step.error is not None:
            error = "%s: %s" % (where, step.error)
            break
        if step.bytes is None or step.seconds is None:
            error = "%s: dd printed no byte count and time" % where
            break
        rate = step.bytes / step.seconds if step.seconds > 0 else None
        points.append({"offset_bytes": step.offset_bytes, "read_bytes_per_s": rate})
        total_bytes += step.bytes
        total_seconds += step.seconds
    metrics = empty_metrics()
    metrics["read_bytes_per_s"] = total_bytes / total_seconds if total_seconds > 0 else None
    metrics["zcav"] = points
    return {
        "tool": "dd",
        "tool_version": tool_version,
        "job": {"name": None, "index": 0, "groupid": None, "client": None},
        "metrics": metrics,
        "bytes": total_bytes if points else None,
        "seconds": total_seconds if points else None,
        "warnings": warnings,
        "error": error,
    }


# ---------------------------------------------------------------------------------------------
# volatile write cache
# ---------------------------------------------------------------------------------------------

TRANSPORT_ATA = "ata"
TRANSPORT_SCSI = "scsi"
TRANSPORT_NVME = "nvme"

# Whole-disk names that never have a volatile write cache control of their own.
_NO_CONTROL = (
    (re.compile(r"^loop\d+$"), "a loop device (its backing file's disk has the cache)"),
    (re.compile(r"^(ram|zram)\d+$"), "a RAM disk"),
    (re.compile(r"^md\d+"), "an md RAID device (set it on each member disk)"),
    (re.compile(r"^dm-\d+$"), "a device-mapper device (set it on each underlying disk)"),
    (re.compile(r"^(vd[a-z]+|xvd[a-z]+)$"), "a virtio/Xen virtual disk (the hypervisor owns its cache)"),
    (re.compile(r"^(nbd|rbd)\d+$"), "a network block device"),
    (re.compile(r"^mmcblk\d+$"), "an MMC/SD card"),
    (re.compile(r"^sr\d+$"), "an optical drive"),
)
_NVME_NAMESPACE = re.compile(r"^nvme\d+n\d+$")
_SCSI_DISK = re.compile(r"^sd[a-z]+$")


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def write_cache_transport(device: str, sys_root: str = SYS_ROOT) -> Tuple[Optional[str], str]:
    """(ata | scsi | nvme, how it was told) for a whole disk, or (None, why it has no control).

    NVMe namespaces by name (nvme0n1). sd disks by /sys/block/<disk>/device/vendor: libata reports
    the vendor "ATA" (hdparm speaks ATA to it), anything else is SCSI/SAS (sdparm, mode page 08h).
    """
    name = os.path.basename(device)
    if not os.path.isdir(os.path.join(sys_root, "block", name)):
        return None, "/sys/block/%s does not exist (not a whole disk)" % name
    for pattern, what in _NO_CONTROL:
        if pattern.match(name):
            return None, "%s is %s" % (name, what)
    device_dir = os.path.join(sys_root, "block", name, "device")
    if _NVME_NAMESPACE.match(name):
        return TRANSPORT_NVME, "NVMe namespace"
    if _SCSI_DISK.match(name) and os.path.isdir(device_dir):
        vendor = (_read(os.path.join(device_dir, "vendor")) or "").strip()
        if vendor == "ATA":
            return TRANSPORT_ATA, "SCSI disk with vendor ATA (libata)"
        return TRANSPORT_SCSI, "SCSI disk, vendor %r" % vendor
    if not os.path.exists(device_dir):
        return None, "%s has no /sys/block/%s/device (a virtual device)" % (name, name)
    return None, "%s is neither an sd (ATA, SCSI, SAS) disk nor an NVMe namespace" % name


class WriteCacheCommands(NamedTuple):
    """argv lists reading and setting one disk's volatile write cache."""

    tool: str
    get: List[str]
    off: List[str]
    on: List[str]


def write_cache_commands(transport: str, device: str) -> WriteCacheCommands:
    """The commands for /dev/<device>. nvme-cli's value goes as --value=: since nvme-cli 2.7 the
    short -v means --verbose, and "-v 1" then silently sets 0 (linux-nvme/nvme-cli#2465)."""
    node = device if device.startswith("/dev/") else "/dev/" + device
    if transport == TRANSPORT_ATA:
        return WriteCacheCommands("hdparm", ["hdparm", "-W", node], ["hdparm", "-W0", node], ["hdparm", "-W1", node])
    if transport == TRANSPORT_SCSI:
        return WriteCacheCommands("sdparm", ["sdparm", "--get=WCE", node], ["sdparm", "--clear=WCE", node],
                                  ["sdparm", "--set=WCE", node])
    if transport == TRANSPORT_NVME:
        return WriteCacheCommands("nvme", ["nvme", "get-feature", node, "-f", "6"],
                                  ["nvme", "set-feature", node, "-f", "6", "--value=0"],
                                  ["nvme", "set-feature", node, "-f", "6", "--value=1"])
    raise ValueError("unknown transport %r" % transport)


class WriteCacheState(NamedTuple):
    """A write cache reading: enabled, and whether the setting can be changed (None: not said)."""

    enabled: bool
    changeable: Optional[bool] = None


_HDPARM = re.compile(r"^\s*write-caching\s*=\s*(\d+)\s*\((on|off)\)\s*$")
_HDPARM_UNSUPPORTED = re.compile(r"^\s*write-caching\s*=\s*not supported")
_SDPARM = re.compile(r"^\s*WCE\s+(\d+)(?:\s+\[(?P<flags>[^\]]*)\])?\s*$")
_SDPARM_CHANGEABLE = re.compile(r"cha:\s*([yn])")
_NVME = re.compile(r"^\s*get-feature:\s*(?:0x)?0*6\b.*Current value:\s*(?:0x)?([0-9a-fA-F]+)\s*$")


def _lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if line.strip()]


def _offending(text: str) -> str:
    lines = _lines(text)
    return repr(lines[-1].strip()) if lines else "(no output)"


def parse_hdparm_write_cache(text: str) -> WriteCacheState:
    """``hdparm -W /dev/X`` (and -W0/-W1, which print the new reading last): the last
    ``write-caching =  N (on|off)`` line. ``not supported`` and anything else: RunError."""
    found = None
    for line in _lines(text):
        if _HDPARM_UNSUPPORTED.match(line):
            raise RunError("hdparm says write-caching is not supported")
        match = _HDPARM.match(line)
        if match:
            value, word = int(match.group(1)), match.group(2)
            if (value != 0) != (word == "on"):
                raise RunError("hdparm write-caching line contradicts itself: %r" % line.strip())
            found = WriteCacheState(enabled=value != 0)
    if found is None:
        raise RunError("expected a 'write-caching = N (on|off)' line from hdparm -W, last line %s" % _offending(text))
    return found


def parse_sdparm_wce(text: str) -> WriteCacheState:
    """``sdparm --get=WCE /dev/X``: the ``WCE  <current>  [cha: y|n, def: .., sav: ..]`` line
    (older sdparm prints only the value). ``cha: n`` means the setting cannot be changed."""
    for line in _lines(text):
        match = _SDPARM.match(line)
        if match:
            flags = match.group("flags") or ""
            changeable = _SDPARM_CHANGEABLE.search(flags)
            return WriteCacheState(enabled=int(match.group(1)) != 0,
                                   changeable=None if changeable is None else changeable.group(1) == "y")
    raise RunError("expected a 'WCE <value>' line from sdparm --get=WCE, last line %s" % _offending(text))


def parse_nvme_volatile_write_cache(text: str) -> WriteCacheState:
    """``nvme get-feature /dev/X -f 6``: ``get-feature:0x06 (Volatile Write Cache), Current
    value:0x00000001`` (nvme-cli prints 0 as ``00000000``, older versions ``0x6`` and 6 digits);
    bit 0 is WCE."""
    for line in _lines(text):
        match = _NVME.match(line)
        if match:
            return WriteCacheState(enabled=bool(int(match.group(1), 16) & 1))
    raise RunError("expected 'get-feature:0x06 (Volatile Write Cache), Current value:...' from nvme get-feature, "
                   "last line %s" % _offending(text))


WRITE_CACHE_PARSERS: Dict[str, Callable[[str], WriteCacheState]] = {
    TRANSPORT_ATA: parse_hdparm_write_cache,
    TRANSPORT_SCSI: parse_sdparm_wce,
    TRANSPORT_NVME: parse_nvme_volatile_write_cache,
}


def parse_write_cache(transport: str, text: str) -> WriteCacheState:
    return WRITE_CACHE_PARSERS[transport](text)


# ---------------------------------------------------------------------------------------------
# cache fence (memory cgroup)
# ---------------------------------------------------------------------------------------------

def cgroup_version(cgroup_root: str = CGROUP_ROOT) -> Optional[int]:
    """2 for a unified hierarchy (cgroup.controllers at the root), 1 for a mounted v1 memory
    controller, None for neither."""
    if os.path.isfile(os.path.join(cgroup_root, "cgroup.controllers")):
        return 2
    if os.path.isfile(os.path.join(cgroup_root, "memory", "memory.limit_in_bytes")):
        return 1
    return None


def parse_proc_cgroup(text: str) -> Dict[str, str]:
    """{controller: path} from /proc/<pid>/cgroup; the v2 (unified) entry is under ""."""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        _hierarchy, controllers, path = parts
        if not controllers:
            found[""] = path
            continue
        for controller in controllers.split(","):
            found[controller] = path
    return found


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
            raise RunError("cgroup v2 but /proc/self/cgroup has no unified (0::) entry")
        return FenceLayout(2, os.path.join(cgroup_root, name), _join(cgroup_root, own[""]),
                           "memory.max", "memory.peak")
    if version == 1:
        if "memory" not in own:
            raise RunError("cgroup v1 but /proc/self/cgroup has no memory controller entry")
        memory_root = os.path.join(cgroup_root, "memory")
        home = _join(memory_root, own["memory"])
        return FenceLayout(1, os.path.join(home, name), home, "memory.limit_in_bytes", "memory.max_usage_in_bytes")
    raise RunError("unknown cgroup version %r" % (version,))


def plan_fence(pid: int, token: str, cgroup_root: str = CGROUP_ROOT, proc_cgroup: str = PROC_SELF_CGROUP) -> FenceLayout:
    """The fence layout for this machine, or RunError saying what is missing."""
    version = cgroup_version(cgroup_root)
    if version is None:
        raise RunError("no memory cgroup controller: neither %s/cgroup.controllers (cgroup v2) nor "
                       "%s/memory/memory.limit_in_bytes (cgroup v1) exists" % (cgroup_root, cgroup_root))
    text = _read(proc_cgroup)
    if text is None:
        raise RunError("cannot read %s" % proc_cgroup)
    layout = fence_layout(version, parse_proc_cgroup(text), fence_name(pid, token), cgroup_root)
    if version == 2:
        control = _read(os.path.join(cgroup_root, "cgroup.subtree_control"))
        if control is None or not memory_controller_enabled(control):
            raise RunError("cgroup v2: the memory controller is not enabled for children of %s (its "
                           "cgroup.subtree_control lists %r); enable it with: echo +memory > %s/cgroup.subtree_control"
                           % (cgroup_root, (control or "").strip(), cgroup_root))
    if not os.path.isdir(layout.home):
        raise RunError("the module's own cgroup %s does not exist" % layout.home)
    return layout


def stale_fences(home: str, alive: Callable[[int], bool]) -> List[str]:
    """Fence cgroups under ``home`` whose module is gone (SIGKILLed, OOM-killed: it could not remove its own).

    A fence is named ``diskproof-<module pid>-<token>``; one whose pid no longer runs is stale. Removing it
    is an rmdir, which the kernel refuses while any process is still inside, so a live fence is never hit.
    """
    try:
        names = os.listdir(home)
    except OSError:
        return []
    stale = []
    for name in sorted(names):
        parts = name.split("-")
        if len(parts) != 3 or parts[0] != FENCE_PREFIX or not parts[1].isdigit():
            continue
        if not alive(int(parts[1])) and os.path.isdir(os.path.join(home, name)):
            stale.append(os.path.join(home, name))
    return stale


def remove_stale_fences(home: str, alive: Callable[[int], bool]) -> Tuple[List[str], List[str]]:
    """(removed, problems): rmdir every stale fence under ``home``."""
    removed, problems = [], []
    for path in stale_fences(home, alive):
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


# ---------------------------------------------------------------------------------------------
# work directory
# ---------------------------------------------------------------------------------------------

def identity(path: str) -> Tuple[int, int]:
    """(st_dev, st_ino) of path itself (not of a symlink target)."""
    info = os.lstat(path)
    return info.st_dev, info.st_ino


def _clear_directory(fd: int, device: int, where: str, problems: List[str]) -> None:
    with os.scandir(fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        path = os.path.join(where, name)
        try:
            if is_dir:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if info.st_dev != device:
                    problems.append("%s is on another filesystem (a mount point?): left in place" % path)
                    continue
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    _clear_directory(child, device, path, problems)
                finally:
                    os.close(child)
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        except OSError as error:
            problems.append("%s: %s" % (path, error.strerror or error))


def remove_tree(path: str, expected: Tuple[int, int]) -> List[str]:
    """Remove the directory path and everything in it; returns the problems (empty when all went).

    Refuses when path is no longer the directory identified by ``expected`` (dev, inode): replaced
    by a symlink or another directory. Symlinks inside are removed, never followed; directories
    on another filesystem (mounted inside) are left alone.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as error:
        return ["%s: %s" % (path, error)]
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) != tuple(expected):
        return ["%s is not the directory this run created (replaced while running): not removed" % path]
    problems: List[str] = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        return ["%s: %s" % (path, error)]
    try:
        _clear_directory(fd, info.st_dev, path, problems)
    finally:
        os.close(fd)
    if not problems:
        try:
            os.rmdir(path)
        except OSError as error:
            problems.append("%s: %s" % (path, error))
    return problems


# ---------------------------------------------------------------------------------------------
# out of space (ENOSPC) during a run
# ---------------------------------------------------------------------------------------------

# strerror(ENOSPC) in the C locale the tools run in (LC_ALL=C): dd, fio, sysbench and bonnie++ all print it.
ENOSPC_TEXT = "No space left on device"


def _size(value: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return "%.1f %s" % (value / scale, unit)
    return "%d B" % value


def free_space(path: str) -> Optional[Tuple[int, int]]:
    """(bytes available to unprivileged users, filesystem size) of the filesystem holding path, or None."""
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize


def out_of_space_advice(path: str, space: Optional[Tuple[int, int]], removed: Optional[str]) -> str:
    """What an ENOSPC during a run means and what to do, for the filesystem of the target path.

    The benchmark role's plan refuses a filesystem without room for the test files plus a reserve before
    anything is written, so running out during the run means something else took the space meanwhile.
    """
    where = "out of space (ENOSPC) on the filesystem of %s during the test" % path
    if removed:
        where += "; the partial test file %s was removed" % removed
    if space is not None:
        where += "; %s of %s free now" % (_size(space[0]), _size(space[1]))
    return ("%s. The plan checks the free space before anything is written, so something else wrote to this "
            "filesystem since (or its space is shared: thin provisioning, quotas, snapshots): free space on it, "
            "or test a smaller file (diskproof_cache_fence_bytes), and run again" % where)


# ---------------------------------------------------------------------------------------------
# evidence files (keep_raw)
# ---------------------------------------------------------------------------------------------

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


def evidence_stem(test: str) -> str:
    """The test id as a file name stem (anything outside [A-Za-z0-9._+-] becomes _)."""
    stem = _SAFE_NAME.sub("_", test) or "test"
    return "_" + stem if stem.startswith(".") else stem


def evidence_name(test: str, kind: str, number: Optional[int] = None) -> str:
    """<test>.<n>.out (measured run n), <test>.fio (job file), <test>.setup.<n>.out,
    <test>.cleanup.<n>.out."""
    stem = evidence_stem(test)
    if kind == "run":
        return "%s.%d.out" % (stem, number)
    if kind == "fio":
        return "%s.fio" % stem
    if kind in ("setup", "cleanup"):
        return "%s.%s.%d.out" % (stem, kind, number)
    raise ValueError("unknown evidence kind %r" % kind)


def existing_evidence(directory: str, test: str) -> List[str]:
    """Files in directory that a run of test would write (so a run never overwrites evidence)."""
    stem = re.escape(evidence_stem(test))
    pattern = re.compile(r"^%s\.(\d+\.out|fio|setup\.\d+\.out|cleanup\.\d+\.out)$" % stem)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, name) for name in names if pattern.match(name))


def last_line(text: str) -> str:
    """The last non-empty line, stripped; '(no output)' when there is none."""
    lines = _lines(text)
    return lines[-1].strip() if lines else "(no output)"
