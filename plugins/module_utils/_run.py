# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job runner of bench_run, without Ansible imports.

``run_task(module)`` is the task both modules call: option checks, then ``run_job`` - the ``Job``
state machine (preflight checks, setup, measured runs or a sweep, cleanup, and the teardown that
undoes whatever the job changed on every exit path, a cancel included). ``module`` is the
AnsibleModule (params, check_mode, get_bin_path, run_command, warn); everything else below is
pure, typed helpers that pytest reaches directly:

- Repeats: ``primary_value`` (the figure the report judges, ``_metrics.primary_metric``),
  ``needs_more_runs`` (coefficient of variation above ``max_cv``), ``select_median`` (the REAL
  run whose figure is the median, the lower-middle one for an even count) and
  ``add_repeat_fields``.
- Sweeps (ZCAV): ``sweep_result`` turns the dd read of every offset into one partial record.
- Device counters: ``bypass_reason`` is ``_metrics.cache_bypass`` with a configurable fraction.
- The volatile write cache (_write_cache.py), the cache fence (_fence.py) and removing what the
  job created (_tree.py) are modules of their own: the quiesce and bench_plan modules use them
  without shipping this runner and every tool parser to the host.
- Out of space: ``out_of_space_advice`` explains an ENOSPC during a run (``ENOSPC_TEXT`` in a tool's error).
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import errno
import os
import pwd
import re
import secrets
import shlex
import signal
import socket
import stat
import tempfile
import time
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ._metrics import CACHE_BYPASS_MIN_FRACTION, cache_bypass, coefficient_of_variation, primary_metric
from ._parse.records import (
    apply_exit_code,
    empty_metrics,
    job_ident,
    join_output,
    make_record,
    partial_result,
    sha256_hex,
    tool_errors,
)
from ._parse.errors import ParseError
from ._results import NotRun, TaskFailed, complete_target, failure_message, parse_results, tool_name
from ._tree import remove_tree
from ._version_probe import ask_version
from . import _blockdev, _cancel, _paths, _proc, _stall, _state_dir
# The cache fence, the write cache, raw grants and SSD steady state are imported where a job needs them: AnsiballZ
# ships source, and each call compiles what it imports (most jobs use none of them).


class RunError(Exception):
    """Something the runner cannot work with: a command it cannot start, a write cache it cannot read."""


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


class Stage(NamedTuple):
    """One stage of measured runs (Job.run_stage): its runs' records, their bypass notes, the failed run's records
    (None: none failed), where the window of agreeing runs starts (None: none agreed), the runs of an earlier stage
    this one replaced, and the length of these runs relative to the planned one."""

    runs: List[List[Dict[str, Any]]]
    notes: List[List[Optional[str]]]
    failed: Optional[List[Dict[str, Any]]]
    window: Optional[int]
    earlier: Sequence[List[Dict[str, Any]]] = ()
    length_factor: int = 1


# A figure whose repeats still disagree after max_repeats runs is measured once more with runs this many times as
# long, when its length is a time (lengthened): a disturbance of fixed duration weighs half as much in each run.
LONGER_FACTOR = 2
_FIO_RUNTIME = re.compile(r"^(\s*runtime\s*=\s*)(\d+)(s?)(\s*)$")
_FIO_TIME_BASED = re.compile(r"^\s*time_based\s*=\s*1\s*$")
_FIO_STEADY = re.compile(r"^\s*steadystate\s*=")
_SYSBENCH_TIME = re.compile(r"^--time=(\d+)$")


def lengthened(argv: Sequence[str], job_file: Optional[str], factor: int) -> Optional[Tuple[List[str], Optional[str]]]:
    """(argv, job file text) of the same job running factor times as long, for jobs whose length is a time: a fio job
    file with time_based=1 and one runtime=N (not a steady-state job, whose runtime is a time limit), sysbench with
    --time=N. None for the others (dd, bonnie++, ioping: their length is a size or a count, set by the cache rules)."""
    if job_file is not None:
        lines = job_file.split("\n")
        runtimes = [index for index, line in enumerate(lines) if _FIO_RUNTIME.match(line)]
        if (len(runtimes) != 1 or not any(_FIO_TIME_BASED.match(line) for line in lines)
                or any(_FIO_STEADY.match(line) for line in lines)):
            return None
        match = _FIO_RUNTIME.match(lines[runtimes[0]])
        lines[runtimes[0]] = "%s%d%s%s" % (match.group(1), int(match.group(2)) * factor, match.group(3), match.group(4))
        return list(argv), "\n".join(lines)
    if argv and os.path.basename(argv[0]) == "sysbench":
        times = [index for index, arg in enumerate(argv) if _SYSBENCH_TIME.match(arg)]
        if len(times) == 1:
            longer = list(argv)
            longer[times[0]] = "--time=%d" % (int(_SYSBENCH_TIME.match(argv[times[0]]).group(1)) * factor)
            return longer, None
    return None


def set_aside_note(earlier: Sequence[Optional[float]], runs_total: int, length_factor: int, max_cv: float) -> str:
    """The record's warning when runs were set aside: which figures, and what was kept instead."""
    shown = ", ".join("null" if value is None else "%.6g" % value for value in earlier)
    if length_factor != 1:
        return ("repeats varied by more than %.1f%% after %d runs (%s): measured again with runs %d times as long; "
                "the figure is from those (%d runs in all)" % (max_cv * 100, len(earlier), shown, length_factor, runs_total))
    return ("%d earlier run(s) set aside (%s): the figure is from the last runs, which agree within %.1f%% "
            "(%d runs in all)" % (len(earlier), shown, max_cv * 100, runs_total))


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

def bypass_reason(record: Mapping[str, Any], min_fraction: float = CACHE_BYPASS_MIN_FRACTION) -> Optional[str]:
    """Why the device counters do not prove the tool's bytes reached the disk, or None: the report's
    rule (``_metrics.cache_bypass``) at the job's ``min_device_fraction``."""
    return cache_bypass(record, min_fraction)[0]


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
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


# ---------------------------------------------------------------------------------------------
# the task: options, then the Job
# ---------------------------------------------------------------------------------------------

LOCALE_C = {"LANG": "C", "LC_ALL": "C"}

# Before each measured run the disk must have been idle this long (its /sys/block counters unchanged, nothing in
# flight), at most SETTLE_LIMIT_S: the cache drop's sync and the previous run's journal commits are not timed with
# the run. It also keeps a blk-throttle (the lab's disks) from crediting the next run with the idle time left in
# its open 100 ms slice (docs/lab.md: a dd started within 0.15 s of other I/O on the disk read 2-5 % high).
SETTLE_S = 0.3
SETTLE_LIMIT_S = 5.0
# A measured run whose disk has requests in flight and completes none this long is stopped (_stall.py). Past the
# kernel's own command timeouts (SCSI 30 s, NVMe 30 s) and a retry or two: a slow disk is not a stalled one.
STALL_TIMEOUT_S = 120.0
# nvme get-feature for the disk state: an answer from the controller's memory, not the media; a drive that holds it
# longer is worth a reason, not a wait.
DISK_STATE_PROBE_S = 10.0

# The options of a run (bench_run's argument spec, beside the record options it shares with bench_facts).
_RUN_OPTIONS: Dict[str, Dict[str, Any]] = dict(
    argv=dict(type="list", elements="str"),
    sweep=dict(type="list", elements="dict", options=dict(
        offset_bytes=dict(type="int", required=True),
        argv=dict(type="list", elements="str", required=True),
    )),
    creates=dict(type="path"),
    drop_caches=dict(type="bool", default=False),
    settle_s=dict(type="float", default=SETTLE_S),
    stall_timeout_s=dict(type="float", default=STALL_TIMEOUT_S),
    device_io=dict(type="bool"),
    repeats=dict(type="int", default=1),
    max_repeats=dict(type="int"),
    max_cv=dict(type="float", default=0.05),
    min_device_fraction=dict(type="float", default=0.95),
    setup=dict(type="list", elements="raw"),
    cleanup=dict(type="list", elements="raw"),
    chdir=dict(type="path"),
    workdir=dict(type="path"),
    workdir_owner=dict(type="str"),
    job_file=dict(type="str"),
    cache_fence_bytes=dict(type="int"),
    write_cache=dict(type="str", default="unchanged", choices=["unchanged", "off"]),
    state_dir=dict(type="path"),
    lock_run_id=dict(type="str"),
    keep_raw=dict(type="path"),
    remove_on_cancel=dict(type="list", elements="path"),
    remove_when_done=dict(type="list", elements="path"),
    restore_when_done=dict(type="bool", default=False),
    disk_state=dict(type="bool", default=False),
    sys_root=dict(type="path", default="/"),
    lock_controller=dict(type="dict"),
    run_dir=dict(type="dict", options=dict(
        path=dict(type="path", required=True),
        resolved=dict(type="path"),
        device=dict(type="int", required=True),
        inode=dict(type="int", required=True),
    )),
)
# Options that need another one (AnsibleModule required_by, required_if).
RUN_REQUIRED_BY = {"creates": "argv", "job_file": "argv", "workdir_owner": "workdir", "lock_run_id": "state_dir"}
RUN_REQUIRED_IF = [("write_cache", "off", ("state_dir",)),
                   ("restore_when_done", True, ("state_dir", "lock_run_id", "lock_controller"))]


def run_options() -> Dict[str, Dict[str, Any]]:
    """A fresh copy of the run options' argument spec (a module may change the spec it is given)."""
    return copy.deepcopy(_RUN_OPTIONS)


def run_task(module: Any) -> Dict[str, Any]:
    """The task of bench_run: option checks, then the job; in check
    mode nothing is run. TaskFailed on any failure, after everything the job changed was undone."""
    params = module.params
    normalize_command_lists(params)
    check_run_options(params)
    target = complete_target(params["target"])
    if module.check_mode:
        first = params["argv"][0] if params["argv"] is not None else params["sweep"][0]["argv"][0]
        return dict(changed=False, created=[], ansible_facts={"diskproof_results": []},
                    msg="check mode: %s not run" % first)
    return run_job(module, target)


class Interrupted(Exception):
    """SIGTERM, SIGINT or SIGHUP while running: the tool's process group is killed, then the teardown runs."""


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def drop_caches() -> None:
    try:
        _blockdev.drop_caches()
    except OSError as error:
        raise TaskFailed("drop_caches=true but the page cache cannot be dropped (%s: %s); run with become: true "
                         "on a host where /proc/sys is writable" % (_blockdev.DROP_CACHES, error))


class Job:
    """One argv or sweep task: checks, setup, measured runs, cleanup, and undoing everything it
    changed (fence, write cache, work directory, job file) whatever happened."""

    def __init__(self, module: Any, target: Dict[str, Any]) -> None:
        self.module = module
        self.params = module.params
        self.target = target
        self.device = target.get("device")
        self.sweep = self.params["sweep"]
        self.argv = self.params["argv"] if self.sweep is None else self.sweep[0]["argv"]
        self.tool = "dd" if self.sweep is not None else tool_name(module.params, self.argv)
        self.test = self.params["test"] or self.tool
        self.repeats = self.params["repeats"]
        self.max_repeats = self.params["max_repeats"] if self.params["max_repeats"] is not None else self.repeats
        self.cwd = self.params["chdir"]
        self.records = []
        self.created = []
        self.raw_files = []
        self.record_warnings = []   # cleanup findings: added to every record
        self.problems = []          # what could not be undone: fails the task
        self.binaries = {}
        self.version = None
        self.version_known = False
        self.started_anything = False
        self.workdir_identity = None
        self.verified_runs = 0      # tool runs the run-directory check let through (creates= may exist after one)
        self.job_path = None
        self.job_text = self.params["job_file"]   # the job file that ran (a lengthened one after LONGER_FACTOR)
        self.fence = None
        self.fence_layout = None
        self.write_cache_plan = None
        self.write_cache = None
        self.write_cache_touched = False
        self.last_command = None
        self.last_rc = None
        self.succeeded = False      # set by run_job before the teardown: the job ran and no tool failed
        self.partial_removed = None
        self.removed_run_dirs = None   # those of remove_when_done this call removed; None without that option
        self.restored = None           # restore_when_done: the quiesce restore's result once it restored the host
        # The module's stdout when it is the pipe to sshd: its reader gone means the controller went away.
        self.controller_pipe = _proc.hangup_watch()
        self.tearing_down = False   # the teardown's own commands are never cut short

    # ------------------------------------------------------------------ checks (nothing changed yet)

    def resolve(self, argv, what):
        if not argv:
            raise TaskFailed("%s is an empty command: give each command as a non-empty list of arguments" % what)
        binary = self.module.get_bin_path(argv[0])
        if binary is None:
            raise TaskFailed("%s: %s not found in PATH (or not executable); install it or give its full path"
                             % (what, argv[0]))
        self.binaries[argv[0]] = binary
        return binary

    def preflight(self):
        params = self.params
        if self.sweep is not None:
            for number, step in enumerate(self.sweep, 1):
                self.resolve(step["argv"], "sweep step %d" % number)
        else:
            self.resolve(self.argv, "argv")
        for kind in ("setup", "cleanup"):
            for number, argv in enumerate(params[kind] or [], 1):
                self.resolve(argv, "%s command %d" % (kind, number))
        self.check_run_dir()
        creates = params["creates"]
        if creates and os.path.lexists(creates):
            raise TaskFailed("creates=%s exists already: refusing to run over a file this run did not create "
                             "(remove the leftover test file first)" % creates, created=[])
        if params["keep_raw"] is not None:
            if not os.path.isdir(params["keep_raw"]):
                raise TaskFailed("keep_raw=%s is not an existing directory: create it first" % params["keep_raw"])
            existing = existing_evidence(params["keep_raw"], self.test)
            if existing:
                raise TaskFailed("keep_raw=%s already holds output of test %s (%s): give each target and run its own "
                                 "directory, or move those files away" % (params["keep_raw"], self.test,
                                                                          ", ".join(existing[:3])))
        workdir = params["workdir"]
        if workdir is not None:
            if os.path.lexists(workdir):
                raise TaskFailed("workdir=%s exists already: not created by this run, and the module removes its "
                                 "workdir at the end; remove it or name a directory that does not exist" % workdir)
            parent = os.path.dirname(os.path.abspath(workdir))
            if not os.path.isdir(parent):
                raise TaskFailed("workdir=%s: its parent %s is not an existing directory; create the parent first"
                                 % (workdir, parent))
            if params["workdir_owner"] is not None:
                try:
                    pwd.getpwnam(params["workdir_owner"])
                except KeyError:
                    raise TaskFailed("workdir_owner=%s is not a user on this host" % params["workdir_owner"])
        if self.cwd is not None and not self.inside_workdir(self.cwd) and not os.path.isdir(self.cwd):
            raise TaskFailed("chdir=%s is not an existing directory: create it first (or make it the workdir)"
                             % self.cwd)
        if params["write_cache"] == "off":
            self.plan_write_cache()
        if params["cache_fence_bytes"] is not None:
            from ._fence import FenceError, plan_fence
            try:
                self.fence_layout = plan_fence(os.getpid(), secrets.token_hex(4))
            except FenceError as error:
                raise TaskFailed("cache_fence_bytes needs a memory cgroup: %s" % error)
        self.renew_lease()

    def inside_workdir(self, path):
        workdir = self.params["workdir"]
        if workdir is None:
            return False
        workdir = os.path.abspath(workdir)
        path = os.path.abspath(path)
        return path == workdir or path.startswith(workdir + os.sep)

    def plan_write_cache(self):
        if not self.device:
            raise TaskFailed("write_cache=off needs the whole disk in target.device (for example sdb or nvme0n1); "
                             "it is unknown for target.path %r" % self.target.get("path"))
        from ._write_cache import write_cache_commands, write_cache_transport
        transport, why = write_cache_transport(self.device)
        if transport is None:
            raise TaskFailed("write_cache=off: %s has no volatile write cache control (%s); run without write_cache "
                             "on this target" % (self.device, why))
        commands = write_cache_commands(transport, self.device)
        binary = self.module.get_bin_path(commands.tool)
        if binary is None:
            raise TaskFailed("write_cache=off: %s (%s) needs %s, which is not installed; install it (package %s)"
                             % (self.device, why, commands.tool,
                                "nvme-cli" if commands.tool == "nvme" else commands.tool))
        self.binaries[commands.tool] = binary
        self.write_cache_plan = (transport, commands)

    # ------------------------------------------------------------------ running commands

    def run(self, argv, check=None):
        """(rc, stdout bytes, stderr bytes) of argv, in chdir, LC_ALL=C, no shell; check: _proc.run's."""
        binary = self.binaries.get(argv[0]) or self.module.get_bin_path(argv[0]) or argv[0]
        if self.cwd is not None and not os.path.isdir(self.cwd):
            # say which option is wrong (Popen would only name the missing directory)
            raise RunError("cannot run %s: chdir=%s is not a directory" % (shlex.join(argv), self.cwd))
        watch = [] if self.tearing_down else self.controller_pipe
        if _proc.hung_up(watch):
            raise _proc.ControllerGone("the controller went away before %s started" % shlex.join(argv))
        self.started_anything = True
        try:
            # Its own process group, killed and reaped on a signal or when the controller goes away (_proc.py).
            done = _proc.run(argv, executable=binary, cwd=self.cwd, env=dict(os.environ, **LOCALE_C), watch=watch,
                             check=check)
        except OSError as error:
            raise RunError("cannot run %s: %s" % (shlex.join(argv), error))
        if done.strays:
            self.warn("%s left %d process(es) running after it exited: killed" % (shlex.join(argv), done.strays))
        if done.left_out:
            self.warn("%s printed more than %d MiB on a stream: %d bytes in its middle were not kept (the raw "
                      "output says where)" % (shlex.join(argv), _proc.OUTPUT_LIMIT_BYTES >> 20, done.left_out))
        return done.rc, done.stdout, done.stderr

    def keep(self, kind, number, data):
        if self.params["keep_raw"] is None:
            return
        path = os.path.join(self.params["keep_raw"], evidence_name(self.test, kind, number))
        try:
            with open(path, "xb") as handle:
                handle.write(data)
        except OSError as error:
            self.warn("keep_raw: cannot write %s: %s" % (path, error))
            return
        self.raw_files.append(path)

    def warn(self, message):
        self.module.warn(message)
        self.record_warnings.append(message)

    def run_aux(self, kind, number, argv):
        """A setup or cleanup command: (rc, message when it failed)."""
        try:
            rc, stdout, stderr = self.run(argv)
        except RunError as error:
            return None, "%s command %d: %s" % (kind, number, error)
        self.keep(kind, number, join_output(stdout, stderr))
        if rc == 0:
            return rc, None
        words = last_line(stderr.decode("utf-8", "replace")) if stderr.strip() else \
            last_line(stdout.decode("utf-8", "replace"))
        return rc, "%s command %d failed (exit code %s): %s; command: %s" % (kind, number, rc, words, shlex.join(argv))

    # ------------------------------------------------------------------ the job

    def execute(self):
        self.hold_and_verify_raw_grant()
        if (self.params["params"] or {}).get("burnin_cycle") is not None:
            self.begin_burnin_cycle()
        if self.params["workdir"] is not None:
            self.make_workdir()
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise TaskFailed("chdir=%s is not an existing directory: create it first (or make it the workdir)"
                             % self.cwd)
        measured = self.argv
        if self.params["job_file"] is not None:
            measured = self.argv + [self.write_job_file(self.job_text)]
        if self.write_cache_plan is not None:
            self.switch_write_cache_off()
        if self.fence_layout is not None:
            self.enter_fence()
        self.read_disk_state("before")
        try:
            for number, argv in enumerate(self.params["setup"] or [], 1):
                self.check_run_dir()
                rc, message = self.run_aux("setup", number, argv)
                if message:
                    raise TaskFailed(message)
            if self.sweep is not None:
                self.run_sweep()
            else:
                self.run_repeats(measured)
        except (Interrupted, _proc.ControllerGone):
            raise       # a cancel: the teardown comes first, no reading
        except Exception:
            self.read_disk_state("after")   # the records of a failed run get it too
            raise
        self.read_disk_state("after")
        if self.burnin is not None:
            progress = self.burnin.end(self.records)
            for record in self.records:
                record["burnin"] = {"cycle": self.burnin.number, "cycles": self.burnin.cycles,
                                    "budget_s": self.burnin.budget_s, "progress": progress}

    # ------------------------------------------------------------------ disk state (module_utils/_disk_state.py)

    disk_state = None       # {"before": reading, "after": reading or None} when params.disk_state

    def read_disk_state(self, when):
        """The target disk's state now, kept for every record; a reading never fails the task."""
        if not self.params["disk_state"]:
            return
        from . import _disk_state
        from ._health import probe_health
        sys_root = self.params["sys_root"]

        def read_health(disk):
            return probe_health(self.module.get_bin_path, "/dev/" + disk, disk.startswith("nvme"))

        def probe_tool(argv):
            binary = self.module.get_bin_path(argv[0])
            if binary is None:
                return None, "", "%s is not installed" % argv[0]
            return _proc.probe([binary] + list(argv[1:]), timeout_s=DISK_STATE_PROBE_S)

        try:
            number = _blockdev.device_number(self.target["path"]) if self.target.get("path") else None
            partition = _disk_state.partition_of(number, sys_root) if number else None
            # health from /dev/<disk> even under another sys_root (a lab's stand-in smartctl answers there);
            # read_disk_state itself asks nvme get-feature only of the host's own /sys
            reading = _disk_state.read_disk_state(self.device, sys_root, partition, read_health, probe_tool)
        except (Interrupted, _proc.ControllerGone):
            raise       # a cancel while a probe ran is still a cancel
        except Exception as error:   # a reader's bug must not cost the run its figures
            reading = {"disk": self.device, "unknown": ["disk state: not read (%s: %s)" % (type(error).__name__,
                                                                                           error)]}
        if self.disk_state is None:
            self.disk_state = {"before": None, "after": None}
        # after: only what changed since before (_disk_state.changes; state_after puts the whole back together)
        self.disk_state[when] = reading if when == "before" else _disk_state.changes(self.disk_state["before"], reading)

    # ------------------------------------------------------------------ burn-in (module_utils/_burnin.py)

    burnin = None           # the _burnin.Cycle of a burn-in job

    def begin_burnin_cycle(self):
        """A burn-in cycle: _burnin.NotRun (nothing runs) past the budget or after the burn-in stopped; else the
        disk's health baseline is known. Its state lives in state_dir."""
        from . import _burnin
        if not self.params["state_dir"]:
            raise TaskFailed("a burn-in cycle (params.burnin_cycle) needs state_dir: where its cycles keep their state")
        self.burnin = _burnin.Cycle(self.params["state_dir"], self.params["params"],
                                    self.target.get("device_path") or ("/dev/" + self.device if self.device else None),
                                    self.module.get_bin_path)
        try:
            self.burnin.begin()
        except _state_dir.QuiesceError as error:
            raise TaskFailed("burn-in state: %s" % error)

    def end_burnin(self, cancelled):
        """The target's last planned cycle, or a cancel: its burn-in state file goes."""
        if self.burnin is not None and (self.burnin.last or cancelled):
            try:
                self.burnin.finish()
            except (_state_dir.QuiesceError, OSError) as error:
                self.problems.append("cannot remove the burn-in state in %s: %s" % (self.params["state_dir"], error))

    # ------------------------------------------------------------------ raw grants (module_utils/_identity.py)

    device_hold = None   # O_EXCL descriptor of the device for the whole raw_write job

    def hold_and_verify_raw_grant(self):
        """A raw job runs only on the disk discover granted: its identity read again now and, for raw_write,
        the disk still unused and held with O_EXCL until the teardown (a mount of it then fails with EBUSY;
        dd and fio open it without O_EXCL and still run)."""
        grant = self.target.get("grant") if self.target.get("kind") == "raw" else None
        if grant is None:
            return
        from . import _identity
        from ._parse.wipefs import wipefs_result
        try:
            grant = _identity.check_grant(grant)
        except _identity.IdentityError as error:
            raise TaskFailed("raw job refused before anything ran: %s" % error)
        writes = grant.get("class") == "raw_write"
        exclusive_error = None
        if writes:
            try:
                self.device_hold = os.open(self.target.get("device_path") or self.target["path"],
                                           os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
            except OSError as error:
                exclusive_error = "%s: %s" % (errno.errorcode.get(error.errno, error.errno), error.strerror)
        observed = dict((disk.get("name"), _identity.observe(disk.get("name"))) for disk in grant["disks"])
        mountinfo, signatures, signature_errors = None, {}, {}
        if writes:
            try:
                with open("/proc/self/mountinfo", "r", encoding="utf-8", errors="surrogateescape") as handle:
                    mountinfo = handle.read()
            except OSError:
                mountinfo = None
            wipefs = self.module.get_bin_path("wipefs")
            for name, seen in observed.items():
                if not seen.get("present"):
                    continue
                if wipefs is None:
                    signature_errors[name] = "wipefs is not installed"
                    continue
                # The probe discover made (wipefs -n: no-act, reads only), with its time limit.
                rc, out, err = _proc.probe([wipefs, "-n", "-J", "/dev/" + name])
                signatures[name], signature_errors[name] = ([], err) if rc is None else wipefs_result(rc, out, err)
        problems = _identity.verify_grant(grant, observed, mountinfo, signatures, signature_errors, exclusive_error)
        if problems:
            raise TaskFailed(_identity.refusal_message(grant, problems))

    def release_device_hold(self):
        if self.device_hold is not None:
            os.close(self.device_hold)
            self.device_hold = None

    def make_workdir(self):
        path = self.params["workdir"]
        # Directly inside the run directory: made relative to its verified descriptor, never by path.
        run_fd = self.open_run_dir() if self.in_run_dir(path) else None
        name = os.path.basename(os.path.normpath(path))
        where = {} if run_fd is None else {"dir_fd": run_fd}
        try:
            try:
                os.mkdir(name if where else path, 0o700, **where)
                info = os.stat(name if where else path, follow_symlinks=False, **where)
                self.workdir_identity = (info.st_dev, info.st_ino)
            except OSError as error:
                raise TaskFailed("cannot create workdir=%s: %s" % (path, error))
            owner = self.params["workdir_owner"]
            if owner is not None:
                user = pwd.getpwnam(owner)
                try:
                    os.chown(name if where else path, user.pw_uid, user.pw_gid, follow_symlinks=False, **where)
                except OSError as error:
                    raise TaskFailed("cannot give workdir=%s to %s: %s; run with become: true" % (path, owner, error))
        finally:
            if run_fd is not None:
                os.close(run_fd)

    # ------------------------------------------------------------------ the run directory (bench_plan's identity)

    def in_run_dir(self, path):
        """Whether path names an entry directly inside O(run_dir) (as the jobs name it)."""
        run_dir = self.params["run_dir"]
        return bool(run_dir and path) and \
            os.path.dirname(os.path.normpath(path)) == os.path.normpath(run_dir["path"])

    def open_run_dir(self):
        """A descriptor of the run directory while it is still the one bench_plan created (walked from / with
        O_NOFOLLOW, same device and inode, root's, not writable by others) and its path as the tools open it
        leads there too; None without run_dir; TaskFailed naming the swap otherwise."""
        run_dir = self.params["run_dir"]
        if run_dir is None:
            return None
        expected = (run_dir["device"], run_dir["inode"])
        try:
            fd = _paths.verify_directory(run_dir["resolved"] or run_dir["path"], expected, _paths.trusted_uids())
        except _paths.PathError as error:
            raise TaskFailed(str(error))
        problem = _paths.same_identity(run_dir["path"], expected)
        if problem:
            os.close(fd)
            raise TaskFailed("the run directory %s was swapped after the plan created it: %s; refusing to run a tool "
                             "that would write through it - find out who replaced it, remove it and run again"
                             % (run_dir["path"], problem))
        return fd

    def check_run_dir(self):
        """Right before a tool runs: the run directory is still ours, and creates= is not something we did not
        make (a file or symlink put there before the first run; anything but a regular file later)."""
        run_fd = self.open_run_dir()
        if run_fd is None:
            return
        try:
            creates = self.params["creates"]
            if creates and self.in_run_dir(creates):
                try:
                    info = os.stat(os.path.basename(creates), dir_fd=run_fd, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                if info is not None and (not self.verified_runs or not stat.S_ISREG(info.st_mode)):
                    raise TaskFailed("creates=%s exists already (%s) in the run directory: not made by this run; "
                                     "refusing to run a tool that would write through it - remove it and run again"
                                     % (creates, "a symlink" if stat.S_ISLNK(info.st_mode) else
                                        "mode %o" % info.st_mode))
        finally:
            os.close(run_fd)

    def write_job_file(self, text):
        handle, path = self.new_job_file()
        self.job_path = path
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        if self.params["keep_raw"] is not None:
            self.keep("fio", None, text.encode("utf-8", "surrogateescape"))
        # A named clock source spares the check fio's multi-threaded TSC test (0.14 -> 0.07 CPU-s per start here);
        # it only parses, so its clock does not matter. The measured run keeps fio's own choice.
        check = [self.argv[0], "--parse-only", "--clocksource=clock_gettime", path]
        try:
            rc, stdout, stderr = self.run(check)
        except RunError as error:
            raise TaskFailed("job_file: %s" % error)
        if rc != 0:
            output = join_output(stdout, stderr).decode("utf-8", "replace").replace(path, "<job_file>")
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            raise TaskFailed("job_file rejected by %s --parse-only (exit code %s): %s; fix the job file"
                             % (self.argv[0], rc, " | ".join(lines[-8:]) or "(no output)"))
        return path

    def new_job_file(self):
        """(descriptor, path): in the state directory when it exists and is ours, where a SIGKILLed step's file is
        removed by the next fio step or the restore (remove_dead_job_files); else in the temporary directory."""
        if self.params["state_dir"]:
            try:
                with _state_dir.StateDir(self.params["state_dir"]) as state:
                    if state.exists:
                        state.remove_dead_job_files()
                        return state.new_job_file()
            except (_state_dir.QuiesceError, OSError):
                pass
        return tempfile.mkstemp(prefix="diskproof-", suffix=".fio")

    def read_write_cache(self, commands):
        """The disk's write cache as the tool reads it; RunError when it cannot be read."""
        from ._parse.write_cache import parse_write_cache
        transport = self.write_cache_plan[0]
        rc, stdout, stderr = self.run(commands.get)
        text = join_output(stdout, stderr).decode("utf-8", "replace")
        if rc != 0:
            raise RunError("%s failed (exit code %s): %s" % (shlex.join(commands.get), rc, last_line(text)))
        try:
            return parse_write_cache(transport, text)
        except ParseError as error:
            raise RunError("%s: %s" % (shlex.join(commands.get), error))

    def switch_write_cache_off(self):
        transport, commands = self.write_cache_plan
        try:
            before = self.read_write_cache(commands)
        except RunError as error:
            raise TaskFailed("write_cache=off: cannot read the write cache of %s: %s" % (self.device, error))
        if before.changeable is False and before.enabled:
            raise TaskFailed("write_cache=off: the write cache of %s cannot be changed (sdparm reports cha: n); run "
                             "without write_cache on this disk" % self.device)
        # On disk before the first toggle; an original recorded earlier (a step killed with the cache off) is kept.
        recorded = self.remember_write_cache(transport, commands.tool, before.enabled)
        original = recorded["enabled"]
        self.write_cache = {"before": original, "during": None, "restored": False, "method": commands.tool}
        if original != before.enabled:
            self.warn("the write cache of %s was %s when this step started; its original setting, %s, was recorded by "
                      "run %s at %s and never restored (a killed step): this step restores %s at the end"
                      % (self.device, "on" if before.enabled else "off", "on" if original else "off",
                         recorded.get("run_id"), recorded.get("recorded"), "on" if original else "off"))
        # switched back at the end whenever the original or the current setting is on
        self.write_cache_touched = original or before.enabled
        if before.enabled:
            try:
                rc, stdout, stderr = self.run(commands.off)
            except RunError as error:
                raise TaskFailed("write_cache=off: %s" % error)
            if rc != 0:
                raise TaskFailed("write_cache=off: %s failed (exit code %s): %s" % (
                    shlex.join(commands.off), rc, last_line(join_output(stdout, stderr).decode("utf-8", "replace"))))
        try:
            during = self.read_write_cache(commands)
        except RunError as error:
            raise TaskFailed("write_cache=off: cannot read back the write cache of %s: %s" % (self.device, error))
        self.write_cache["during"] = during.enabled
        if during.enabled:
            raise TaskFailed("write_cache=off: %s still reports the write cache of %s on after %s; the disk refuses "
                             "the change: run without write_cache on this disk"
                             % (commands.tool, self.device, shlex.join(commands.off)))

    def enter_fence(self):
        from ._fence import CacheFence, fence_setup_advice, pid_alive, remove_stale_fences
        # A module SIGKILLed inside its fence (OOM, kill -9) could not remove it: the next fenced job does.
        removed, problems = remove_stale_fences(self.fence_layout.home, pid_alive)
        if removed:
            self.warn("removed %d cache fence cgroup(s) left by a module that was killed: %s"
                      % (len(removed), ", ".join(removed)))
        for problem in problems:
            self.warn(problem)
        self.fence = CacheFence(self.fence_layout, self.params["cache_fence_bytes"], os.getpid())
        try:
            self.fence.create()
            self.fence.enter()
        except OSError as error:
            raise TaskFailed("cache_fence_bytes: cannot set up the memory cgroup %s: %s; %s"
                             % (self.fence_layout.path, error, fence_setup_advice(error.errno)))

    # ------------------------------------------------------------------ measured runs

    def version_of(self, binary, tool, results):
        if any(result["tool_version"] for result in results):
            return None
        if not self.version_known:
            self.version, problem = ask_version(binary, tool)
            if problem:
                self.warn("%s: the record's tool_version is null" % problem)
            self.version_known = True
        return self.version

    def run_measured(self, argv, number, tool=None, direction=None, measure=True):
        """Run argv once (after a cache drop when asked) and parse it: (tool, records, rc, raw)."""
        if self.params["drop_caches"] and measure:
            drop_caches()
        not_idle = self.settle(number) if measure else None
        self.check_run_dir()
        self.verified_runs += 1
        want_io = self.params["device_io"] is not False and measure
        before = _blockdev.read_stat(self.device) if want_io else None
        started = utc_now()
        try:
            rc, stdout, stderr = self.run(argv, check=_stall.watch_for(self.device, self.params["stall_timeout_s"]))
        except RunError as error:
            raise TaskFailed(str(error))
        except _stall.Stalled as stall:
            return self.stalled_run(argv, number, stall, started, tool)
        finished = utc_now()
        after = _blockdev.read_stat(self.device) if want_io else None
        raw = join_output(stdout, stderr)
        self.keep("run", number, raw)
        self.last_command, self.last_rc = argv, rc
        text = raw.decode("utf-8", "replace")
        tool, results = parse_results(self.params, text, argv, rc, tool=tool, direction=direction)
        version = self.version_of(self.binaries.get(argv[0], argv[0]), tool, results)
        device_io = _blockdev.stat_delta_bytes(before, after)
        records = []
        for result in results:
            record = make_record(result, test=self.params["test"], target=self.target, params=self.params["params"],
                                 started=started, finished=finished, command=argv, exit_code=rc,
                                 raw_sha256=sha256_hex(raw), device_io=device_io, tool_version=version)
            if result.get("steadystate") is not None:
                from . import _steady
                _steady.apply(record, result["steadystate"])   # the window's means become the figures
            if want_io and device_io is None:
                record["warnings"].append("device_io unknown: no block device for target.path %r"
                                          % self.target.get("path"))
            if not_idle:
                record["warnings"].append(not_idle)
            records.append(record)
        apply_exit_code(records, rc, text)
        generation = (self.params["params"] or {}).get("verify_generation")
        if generation is not None:
            # fio_verify: each bad pattern block read again and told apart (flipped, stale, misplaced, not written).
            from . import _verify
            _verify.apply(records, text, self.target.get("test_file") or self.target.get("device_path"),
                          int(generation))
        return tool, records, rc, raw

    def stalled_run(self, argv, number, stall, started, tool):
        """The one error record of a run the stall watch stopped: (tool, records, rc None, raw b"")."""
        tool = tool or tool_name(self.params, argv)
        self.last_command, self.last_rc = argv, None
        result = partial_result(tool, None, job_ident(None, 0))
        result["error"] = stall.message(argv[0])
        record = make_record(result, test=self.params["test"], target=self.target, params=self.params["params"],
                             started=started, finished=utc_now(), command=argv, exit_code=None, raw_sha256=None,
                             device_io=None, tool_version=None)
        self.keep("run", number, (result["error"] + "\n").encode("utf-8"))
        return tool, [record], None, b""

    def settle(self, number):
        """Wait until the disk is idle (settle_s); a warning text when it never was within SETTLE_LIMIT_S, else None."""
        quiet = self.params["settle_s"]
        if quiet <= 0:
            return None
        settled = _blockdev.wait_until_idle(self.device, quiet, max(SETTLE_LIMIT_S, quiet))
        if settled is None or settled.idle:
            return None
        return ("the disk was not idle before run %d: %d requests in the %.1f s spent waiting for %.1f s without I/O "
                "(another process using it?)" % (number, settled.requests, settled.waited_s, quiet))

    def check_bypass(self, records, label):
        """min_device_fraction: a warning (record and task) for each record the counters do not back."""
        notes = []
        for record in records:
            reason = None
            if not record["error"]:
                reason = bypass_reason(record, self.params["min_device_fraction"])
            if reason:
                record["warnings"].append(reason)
                self.module.warn("%s%s" % (label, reason))
            notes.append(reason)
        return notes

    def run_repeats(self, argv):
        """The measured runs: repeats, re-runs while they disagree (max_repeats), then - for a job whose length is a
        time - the repeats once more at LONGER_FACTOR times the length (docs/tests.md, "Repeats")."""
        stage = self.run_stage(argv, 1, self.repeats, self.max_repeats)
        longer = None
        if stage.failed is None and stage.window is None and self.max_repeats > self.repeats:
            # (argv ends with the job file's path when there is one: self.argv is the command without it)
            longer = lengthened(self.argv, self.job_text, LONGER_FACTOR)
        if longer is not None:
            longer_argv, longer_job = longer
            if longer_job is not None:
                self.remove_job_file()
                longer_argv = longer_argv + [self.write_job_file(longer_job)]
                self.job_text = longer_job
            earlier = stage
            stage = self.run_stage(longer_argv, len(earlier.runs) + 1, self.repeats, self.repeats)
            stage = stage._replace(earlier=earlier.runs, length_factor=LONGER_FACTOR)
        start = stage.window if stage.window is not None and stage.failed is None else 0
        earlier = list(stage.earlier) + list(stage.runs[:start])
        if stage.failed is not None:
            # the failed run's records, as now; its sample is null (a failed run has no valid figure)
            for index, record in enumerate(stage.failed):
                column = [run[index] if index < len(run) else None for run in stage.runs]
                add_repeat_fields(
                    record, [None if other is None else primary_value(other) for other in column] + [None],
                    [None if other is None else other["device_io"] for other in column] + [record["device_io"]])
            self.records = stage.failed
        else:
            self.records = select_repeats(stage.runs[start:], stage.notes[start:])
        for index, record in enumerate(self.records):
            record["earlier_samples"] = [primary_value(run[index]) if index < len(run) else None for run in earlier]
            record["runs_total"] = len(earlier) + record["runs"]
            record["length_factor"] = stage.length_factor
            if earlier and stage.failed is None:
                record["warnings"].append(set_aside_note(record["earlier_samples"], record["runs_total"],
                                                         stage.length_factor, self.params["max_cv"]))

    def run_stage(self, argv, first_number, repeats, max_repeats):
        """Run argv repeats times, then once more at a time until the last repeats runs agree (max_cv) or max_repeats
        were run; stops at a failed run. A Stage: the runs, their bypass notes, the failed run's records, and where
        the agreeing window starts (None: no window agreed)."""
        runs, notes = [], []
        while True:
            number = first_number + len(runs)
            tool, records, rc, _raw = self.run_measured(argv, number)
            self.tool = tool
            label = "run %d: " % number if self.max_repeats > 1 else ""
            if tool_errors(records, rc):
                return Stage(runs, notes, records, None)
            if runs and len(records) != len(runs[0]):
                raise TaskFailed("run %d printed %d records, run %d printed %d: repeats cannot pair them; command: %s"
                                 % (number, len(records), first_number, len(runs[0]), shlex.join(argv)))
            notes.append(self.check_bypass(records, label))
            runs.append(records)
            if len(runs) < repeats:
                continue
            window = runs[len(runs) - repeats:]
            samples = [[primary_value(run[index]) for run in window] for index in range(len(records))]
            if not needs_more_runs(samples, self.params["max_cv"]):
                return Stage(runs, notes, None, len(runs) - repeats)
            if len(runs) >= max_repeats:
                return Stage(runs, notes, None, None)

    def run_sweep(self):
        if self.params["drop_caches"]:
            drop_caches()
        want_io = self.params["device_io"] is not False
        before = _blockdev.read_stat(self.device) if want_io else None
        started = utc_now()
        steps, raws, rc = [], [], 0
        version = None
        for number, step in enumerate(self.sweep, 1):
            _tool, records, rc, raw = self.run_measured(step["argv"], number, tool="dd",
                                                        direction=self.params["direction"] or "read", measure=False)
            raws.append(raw)
            version = version or next((record["tool_version"] for record in records if record["tool_version"]), None)
            if len(records) != 1:
                steps.append(SweepStep(step["offset_bytes"], None, None,
                                       error="dd printed %d summaries, expected 1" % len(records)))
                break
            (record,) = records
            steps.append(SweepStep(step["offset_bytes"], record["bytes"], record["seconds"], record["error"],
                                   tuple(record["warnings"])))
            if record["error"] or rc:
                break
        finished = utc_now()
        after = _blockdev.read_stat(self.device) if want_io else None
        device_io = _blockdev.stat_delta_bytes(before, after)
        record = make_record(sweep_result(steps, version), test=self.params["test"], target=self.target,
                             params=self.params["params"], started=started, finished=finished,
                             command=self.sweep[0]["argv"], exit_code=rc, raw_sha256=sha256_hex(b"".join(raws)),
                             device_io=device_io, tool_version=version)
        if want_io and device_io is None:
            record["warnings"].append("device_io unknown: no block device for target.path %r" % self.target.get("path"))
        record["commands"] = [step["argv"] for step in self.sweep]
        self.last_command, self.last_rc = self.sweep[len(steps) - 1]["argv"], rc
        self.check_bypass([record], "")
        self.records = [record]

    # ------------------------------------------------------------------ undo, always

    def teardown(self):
        """Leave the fence, run cleanup, remove the fence, restore the write cache, remove the workdir
        and the job file. Never raises: what cannot be undone goes to self.problems."""
        self.tearing_down = True
        steps = (self.leave_fence, self.run_cleanup, self.remove_fence, self.restore_write_cache, self.remove_workdir,
                 self.remove_job_file, self.remove_partial_file, self.release_device_hold, self.renew_lease_after)
        for step in steps:
            try:
                step()
            except Exception as error:  # pylint: disable=broad-except
                self.problems.append("%s: %s" % (step.__name__, error))

    def leave_fence(self):
        if self.fence is not None:
            for problem in self.fence.leave():
                self.problems.append("cache fence: %s" % problem)

    def run_cleanup(self):
        if self.params["cleanup"] and self.started_anything:
            try:
                self.check_run_dir()
            except TaskFailed as error:
                self.warn("cleanup commands not run: %s" % error.msg)
                return
        for number, argv in enumerate(self.params["cleanup"] or [], 1):
            _rc, message = self.run_aux("cleanup", number, argv)
            if message:
                self.warn(message)

    def remove_fence(self):
        if self.fence is not None:
            for problem in self.fence.remove():
                self.warn(problem)

    def restore_write_cache(self):
        if self.write_cache is None:
            return
        transport, commands = self.write_cache_plan
        wanted = self.write_cache["before"]
        manual = shlex.join(commands.on if wanted else commands.off)
        if self.write_cache_touched:
            try:
                rc, stdout, stderr = self.run(commands.on if wanted else commands.off)
                if rc != 0:
                    self.problems.append("write cache of %s not restored: %s failed (exit code %s): %s; restore it by "
                                         "hand: %s" % (self.device, manual, rc, last_line(
                                             join_output(stdout, stderr).decode("utf-8", "replace")), manual))
                    return
            except RunError as error:
                self.problems.append("write cache of %s not restored: %s; restore it by hand: %s"
                                     % (self.device, error, manual))
                return
        try:
            after = self.read_write_cache(commands)
        except RunError as error:
            self.problems.append("write cache of %s: cannot verify the restore (%s); check it by hand: %s"
                                 % (self.device, error, shlex.join(commands.get)))
            return
        self.write_cache["restored"] = after.enabled == wanted
        if not self.write_cache["restored"]:
            self.problems.append("write cache of %s reads %s after the restore, was %s before; restore it by hand: %s"
                                 % (self.device, "on" if after.enabled else "off", "on" if wanted else "off", manual))
            return
        self.forget_write_cache()

    def remember_write_cache(self, transport, tool, enabled):
        """The entry holding the disk's original setting in the state directory, written now unless one is there."""
        try:
            with _state_dir.StateDir(self.params["state_dir"], create=True) as state, state.mutex():
                document, error = state.read(_state_dir.WRITE_CACHE_NAME, _state_dir.parse_write_cache_doc)
                if error:
                    raise _state_dir.QuiesceError(error + "; restore the write caches it names by hand, then remove it")
                document = document or _state_dir.new_write_cache_doc()
                wwid = _state_dir.read_wwid(self.device)
                entry, added = _state_dir.remember_write_cache(document, self.device, enabled, tool, transport,
                                                               self.params["lock_run_id"], time.time(), wwid)
                if entry.get("wwid") and entry["wwid"] != wwid:
                    raise _state_dir.QuiesceError("its record names another disk (wwid %s, this one %s): restore "
                                                  "that disk's write cache by hand and remove the %s entry"
                                                  % (entry["wwid"], wwid, self.device))
                if added:
                    state.write(_state_dir.WRITE_CACHE_NAME, document)
        except (_state_dir.QuiesceError, OSError) as error:
            raise TaskFailed("write_cache=off: cannot record the original write cache of %s in %s before switching it "
                             "off: %s" % (self.device, self.params["state_dir"], error))
        return dict(entry)

    def forget_write_cache(self):
        """Restored and read back: the record of the original goes (a restore or a later step would redo it)."""
        with _state_dir.StateDir(self.params["state_dir"]) as state, state.mutex():
            document, error = state.read(_state_dir.WRITE_CACHE_NAME, _state_dir.parse_write_cache_doc)
            if error:
                raise _state_dir.QuiesceError(error)
            if document and document["devices"].pop(self.device, None) is not None:
                state.write(_state_dir.WRITE_CACHE_NAME, document)

    def renew_lease(self):
        """This run still holds the quiesce lock: renew its lease, naming this process as its holder on the host."""
        if self.params["lock_run_id"] is None:
            return
        try:
            with _state_dir.StateDir(self.params["state_dir"]) as state:
                _state_dir.renew_lease(state, self.params["lock_run_id"], os.getpid(),
                                       _state_dir.process_start(os.getpid()))
        except (_state_dir.QuiesceError, OSError) as error:
            raise TaskFailed("lock_run_id: %s" % error)

    def renew_lease_after(self):
        try:
            self.renew_lease()
        except TaskFailed as failure:
            self.problems.append(failure.msg)

    def remove_workdir(self):
        if self.workdir_identity is not None:
            for problem in remove_tree(self.params["workdir"], self.workdir_identity):
                self.warn("workdir: %s" % problem)

    def remove_job_file(self):
        if self.job_path is not None:
            try:
                os.unlink(self.job_path)
            except FileNotFoundError:
                pass

    def remove_partial_file(self):
        """A failed run (ENOSPC, a killed tool) leaves an incomplete test file: remove it now, so no later test
        reads a short file and the space is free again. Only the creates file, which preflight saw absent."""
        creates = self.params["creates"]
        if self.succeeded or not creates or not self.started_anything:
            return
        try:
            run_fd = self.open_run_dir() if self.in_run_dir(creates) else None
        except TaskFailed as error:
            self.warn("the partial test file %s was not removed: %s" % (creates, error.msg))
            return
        try:
            if run_fd is None:
                os.unlink(creates)
            else:
                os.unlink(os.path.basename(creates), dir_fd=run_fd)
        except FileNotFoundError:
            return
        except OSError as error:
            self.warn("the partial test file %s could not be removed (%s): remove it by hand" % (creates, error))
            return
        finally:
            if run_fd is not None:
                os.close(run_fd)
        self.partial_removed = creates
        self.record_warnings.append("the run failed: its partial test file %s was removed" % creates)

    # ------------------------------------------------------------------ result

    def finalize(self):
        """Put what only the end knows into the records."""
        params = self.params
        for record in self.records:
            record["warnings"].extend(self.record_warnings)
            if params["setup"] is not None:
                record["setup_commands"] = [list(argv) for argv in params["setup"]]
            if params["cleanup"] is not None:
                record["cleanup_commands"] = [list(argv) for argv in params["cleanup"]]
            if self.job_text is not None:
                record["job_file"] = self.job_text
            if self.fence is not None:
                record["cache_fence"] = self.fence.describe()
            if self.write_cache is not None:
                record["write_cache"] = dict(self.write_cache)
            if params["keep_raw"] is not None:
                record["raw_files"] = list(self.raw_files)
            if self.disk_state is not None:
                record["disk_state"] = copy.deepcopy(self.disk_state)
        return {"diskproof_results": self.records}


@contextlib.contextmanager
def cleanup_on_signals():
    """SIGTERM, SIGINT and SIGHUP (a killed task, a dropped connection) raise Interrupted: _proc.run kills the
    tool's process group, then the finally blocks restore what the job changed; only in the main thread,
    where handlers can be set."""
    def interrupted(signum, _frame):
        raise Interrupted("interrupted by signal %d" % signum)

    saved = {}
    try:
        for signum in _proc.CANCEL_SIGNALS:
            saved[signum] = signal.signal(signum, interrupted)
    except ValueError:
        pass
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def run_job(module: Any, target: Dict[str, Any]) -> Dict[str, Any]:
    job = Job(module, target)
    job.preflight()
    failure = None
    not_run = None
    with cleanup_on_signals():
        try:
            job.execute()
            job.succeeded = not tool_errors(job.records, job.last_rc)
        except NotRun as skip:
            not_run = skip
        except (TaskFailed, Interrupted, _proc.ControllerGone) as error:
            failure = error
        except (OSError, RunError) as error:
            failure = TaskFailed("%s: %s" % (type(error).__name__, error))
        finally:
            with_signals_ignored(lambda: undo(job, failure))
    if isinstance(failure, _proc.ControllerGone):
        quiet_stdout()   # nobody reads it any more: the result would only end in a BrokenPipeError
    facts = job.finalize()
    creates = module.params["creates"]
    if creates and job.started_anything and os.path.lexists(creates):
        job.created = [creates]
    messages = []
    if failure is not None:
        messages.append(failure.msg if isinstance(failure, TaskFailed) else str(failure))
    messages.extend(job.problems)
    removed = {} if job.removed_run_dirs is None else {"removed_run_dirs": job.removed_run_dirs}
    if job.restored is not None:
        removed["restored"] = job.restored
    if messages:
        raise TaskFailed(explained("; ".join(messages), job), created=job.created, ansible_facts=facts, **removed)
    if not_run is not None:
        # A burn-in cycle past its budget or after its burn-in stopped: nothing ran, no record.
        if not not_run.told:
            module.warn(str(not_run))
        return dict(changed=False, skipped=True, msg=str(not_run), created=[], ansible_facts=facts, **removed)
    message = failure_message(module.params, job.tool, job.records, job.last_command, job.last_rc)
    if message and module.params["fail_on_error"]:
        raise TaskFailed(explained(message, job), created=job.created, ansible_facts=facts, **removed)
    return dict(changed=True, created=job.created, ansible_facts=facts, **removed)


def undo(job: "Job", failure: Optional[BaseException]) -> None:
    """The teardown, then this run's directories: remove_when_done however the job ended (the plan's last test
    removes them: one module call per host fewer than a cleanup task), remove_on_cancel after a cancel (the
    play's always: cleanup never runs then)."""
    job.teardown()
    cancelled = isinstance(failure, (Interrupted, _proc.ControllerGone))
    job.end_burnin(cancelled)
    when_done = job.params["remove_when_done"]
    run_dirs = list(when_done or [])
    if cancelled:
        run_dirs.extend(path for path in job.params["remove_on_cancel"] or [] if path not in run_dirs)
    removed, problems = _cancel.remove_run_dirs(run_dirs, socket.gethostname()) if run_dirs else ([], [])
    job.problems.extend(problems)
    if when_done is not None:
        # Its presence tells the role's cleanup that this call dealt with the directories: a directory whose note
        # does not prove it this run's was left alone, and the task fails saying why, rather than removed blindly.
        job.removed_run_dirs = [path for path in removed if path in when_done]
    if removed and cancelled:
        job.record_warnings.append("cancelled: removed %s" % ", ".join(removed))
    if job.params["restore_when_done"]:
        job.restored = restore_quiesce(job)


def restore_quiesce(job: "Job") -> Optional[Dict[str, Any]]:
    """restore_when_done, after the teardown and the run directories: the quiesce module's restore (state=restored)
    of this run's lock - the services it stopped started, the drives' recorded write caches put back, the lock
    released. The plan's last test does it, however the job ended: one module call per host fewer than a restore
    task, and a cancelled run gives the host back too. None when it could not: the task then fails saying why, the
    state file stays, and the role's restore task runs as without this option."""
    from ._restore import Restorer, RestoreFailed   # only the last test of a run compiles the restore
    params = job.params
    restorer = Restorer(job.module, params["state_dir"], params["lock_run_id"], params["lock_controller"])
    try:
        message = restorer.restore()
    except (RestoreFailed, _state_dir.QuiesceError, OSError) as error:
        job.problems.append("restore_when_done: %s" % error)
        return None
    finally:
        for warning in restorer.warnings:
            job.module.warn("restore_when_done: %s" % warning)
    return dict(restorer.result, msg=message)


def quiet_stdout() -> None:
    """Point fd 1 at /dev/null (the controller that read it is gone)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    finally:
        os.close(devnull)


def explained(message: str, job: "Job") -> str:
    """message, plus what to do when the tool ran out of space on a directory target."""
    path = job.target.get("path")
    if ENOSPC_TEXT not in message or job.target.get("kind") == "raw" or not isinstance(path, str) \
            or not os.path.isdir(path):
        if job.partial_removed:
            return "%s; the partial test file %s was removed" % (message, job.partial_removed)
        return message
    return "%s; %s" % (message, out_of_space_advice(path, free_space(path), job.partial_removed))


def with_signals_ignored(function: Callable[[], None]) -> None:
    """Run function with SIGTERM, SIGINT and SIGHUP ignored (the undo must not be cut short; the commands it
    starts get their default actions back, _proc.child_setup)."""
    saved = {}
    try:
        for signum in _proc.CANCEL_SIGNALS:
            saved[signum] = signal.signal(signum, signal.SIG_IGN)
    except ValueError:
        pass
    try:
        function()
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def check_run_options(params: Mapping[str, Any]) -> None:
    """Option combinations of a run (argv or sweep) the argument spec cannot express."""
    if params["argv"] is not None and not params["argv"]:
        raise TaskFailed("argv must name a command: got an empty list", created=[])
    if params["sweep"] is not None and not params["sweep"]:
        raise TaskFailed("sweep must list at least one step", created=[])
    if params["repeats"] < 1:
        raise TaskFailed("repeats must be at least 1, got %d" % params["repeats"], created=[])
    if params["max_repeats"] is not None and params["max_repeats"] < params["repeats"]:
        raise TaskFailed("max_repeats (%d) must be at least repeats (%d)" % (params["max_repeats"], params["repeats"]),
                         created=[])
    if params["max_cv"] < 0:
        raise TaskFailed("max_cv must be 0 or more, got %s" % params["max_cv"], created=[])
    if not 0 < params["min_device_fraction"] <= 1:
        raise TaskFailed("min_device_fraction must be above 0 and at most 1, got %s" % params["min_device_fraction"],
                         created=[])
    if params["cache_fence_bytes"] is not None and params["cache_fence_bytes"] <= 0:
        raise TaskFailed("cache_fence_bytes must be a positive number of bytes, got %d" % params["cache_fence_bytes"],
                         created=[])
    if params["sweep"] is not None:
        if params["repeats"] > 1 or (params["max_repeats"] or 1) > 1:
            raise TaskFailed("repeats and max_repeats do not apply to a sweep: run the sweep task again instead",
                             created=[])
        if params["job_file"] is not None:
            raise TaskFailed("job_file is for fio argv runs, not a (dd) sweep", created=[])
        if params["tool"] not in ("auto", "dd"):
            raise TaskFailed("a sweep runs dd reads: tool must be auto or dd, got %s" % params["tool"], created=[])
        for number, step in enumerate(params["sweep"], 1):
            if not step["argv"]:
                raise TaskFailed("sweep step %d: argv must name a command" % number, created=[])
            if step["offset_bytes"] < 0:
                raise TaskFailed("sweep step %d: offset_bytes must be 0 or more" % number, created=[])


def normalize_command_lists(params: Dict[str, Any]) -> None:
    """setup and cleanup are lists of argv lists: every argument a string, as given (no shell)."""
    for kind in ("setup", "cleanup"):
        commands = params[kind]
        if commands is None:
            continue
        for number, argv in enumerate(commands, 1):
            if not isinstance(argv, list) or not all(isinstance(arg, (str, int, float)) and not isinstance(arg, bool)
                                                     for arg in argv):
                raise TaskFailed("%s command %d must be a list of arguments (strings), got %r" % (kind, number, argv),
                                 created=[])
        params[kind] = [[str(arg) for arg in argv] for argv in commands]
