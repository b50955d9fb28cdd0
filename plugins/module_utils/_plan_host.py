# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's benchmark plan, made on the host: its targets looked at (free space, filesystem, block sizes, granted
raw class), the plan built (_plan.build_plan), refused when unsafe, and - outside check mode - the run directories
created. bench_plan is this behind an AnsibleModule; the quiesce module calls it too, to check the plan before it
stops anything and to make it under its lock (one call instead of three per host)."""
from __future__ import annotations

import datetime
import os
import secrets
import socket
import stat

from ansible.module_utils.parsing.convert_bool import boolean

from . import (
    _blockdev, _cancel, _fence, _filesystems, _paths, _tools, _tree,
)
from ._parse.errors import ParseError
from ._parse.meminfo import parse_meminfo
from ._parse.mountinfo import parse_mountinfo
from ._version_probe import probe_tools
from ._plan import (
    INTERLOCK, PROFILES, RAW_CLASSES, PlanError, Settings, TargetFacts, build_plan, plan_lines,
)


MARKER = _cancel.NOTE


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def memory_total_bytes(module):
    try:
        with open("/proc/meminfo", "r", encoding="ascii") as handle:
            total = parse_meminfo(handle.read())
    except (OSError, ValueError) as error:
        module.fail_json(msg="cannot read MemTotal from /proc/meminfo (%s); set memory_bytes" % error, run_dirs=[])
    if total is None:
        module.fail_json(msg="/proc/meminfo has no MemTotal line; set memory_bytes", run_dirs=[])
    return total


def read_int(path, default):
    try:
        with open(path, "r", encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return default


def target_facts(module, index, target, identities, classes, allow_non_disk_default=False):
    """TargetFacts of one item of O(targets): exactly one of path (a directory) or device (a block device)."""
    if not isinstance(target, dict):
        module.fail_json(msg="targets[%d] must be a dict such as {path: /srv/disk1} or {device: /dev/sdb}, got %r"
                             % (index, target), run_dirs=[])
    path, device = target.get("path"), target.get("device")
    if bool(path) == bool(device):
        module.fail_json(msg="targets[%d] needs exactly one of 'path' (a directory on the filesystem to test) or 'device' "
                             "(a block device tested raw, with mode raw_read or raw_write), got %r" % (index, target),
                         run_dirs=[])
    if device:
        return raw_target_facts(module, index, target, identities, classes)
    mode = target.get("mode")
    if mode not in (None, "", "filesystem"):
        module.fail_json(msg="targets[%d]: mode %s does not go with path (a directory is class filesystem; raw_read and "
                             "raw_write are for device targets)" % (index, mode), run_dirs=[])
    if not isinstance(path, str):
        module.fail_json(msg="targets[%d].path must be a string, got %r" % (index, path), run_dirs=[])
    if not os.path.isdir(path):
        module.fail_json(msg="targets[%d].path %s is not an existing directory" % (index, path), run_dirs=[])
    try:
        # Root writes below it: nobody else may be able to swap any directory on the way (module_utils/_paths.py).
        _paths.resolve_trusted(path, _paths.trusted_uids())
    except _paths.PathError as error:
        module.fail_json(msg="targets[%d].path %s refused, nothing was written: %s" % (index, path, error), run_dirs=[])
    try:
        fs = os.statvfs(path)
    except OSError as error:
        module.fail_json(msg="cannot read the free space of %s: %s" % (path, error), run_dirs=[])
    device = _blockdev.whole_disk_name(path)
    queue = os.path.join(_blockdev.SYS_ROOT, "block", device or "-", "queue")
    rotational = read_int(os.path.join(queue, "rotational"), None)
    return TargetFacts(
        path=path, free_bytes=fs.f_bavail * fs.f_frsize, filesystem_size_bytes=fs.f_blocks * fs.f_frsize, device=device,
        logical_block_size=read_int(os.path.join(queue, "logical_block_size"), 512),
        physical_block_size=read_int(os.path.join(queue, "physical_block_size"), 4096),
        rotational=None if rotational is None else bool(rotational),
        identity=dict(identities.get(os.path.normpath(path)) or {}),
        filesystem=filesystem_of(module, path),
        allow_non_disk=allow_non_disk(module, index, target, allow_non_disk_default),
        **filesystem_identity(module, path),
    )


def filesystem_identity(module, path):
    """st_dev of the directory ("major:minor": targets sharing it share one free space, which the plan sums), the
    mount point of that filesystem (the highest directory above path on the same st_dev) and its block device."""
    try:
        st_dev = os.stat(path).st_dev
        mount_point = os.path.realpath(path)
        while mount_point != "/" and os.stat(os.path.dirname(mount_point)).st_dev == st_dev:
            mount_point = os.path.dirname(mount_point)
    except OSError as error:
        module.fail_json(msg="cannot stat %s or a directory above it: %s" % (path, error), run_dirs=[])
    number = "%d:%d" % (os.major(st_dev), os.minor(st_dev))
    node = os.path.join(_blockdev.SYS_ROOT, "dev", "block", number)
    # No /sys/dev/block entry for tmpfs, overlay, NFS (anonymous device numbers): no device to name.
    device = os.path.basename(os.path.realpath(node)) if os.path.exists(node) else None
    return dict(filesystem_id=number, mount_point=mount_point, filesystem_device=device)


def filesystem_of(module, path):
    """The mount holding path, judged by _filesystems.classify_mount (the rule disk_facts applies too)."""
    try:
        with open("/proc/self/mountinfo", "r", encoding="utf-8", errors="surrogateescape") as handle:
            mounts = parse_mountinfo(handle.read())
    except (OSError, ParseError) as error:
        module.fail_json(msg="cannot read /proc/self/mountinfo (%s): it tells whether %s is on a disk" % (error, path),
                         run_dirs=[])
    mount = _filesystems.mount_for_path(mounts, os.path.realpath(path))
    if mount is None:
        return None
    # A source that is no absolute path (tmpfs, server:/export) names no file: never stat'ed.
    source = mount["source"]
    return _filesystems.classify_mount(mount, source.startswith("/") and _blockdev.node_rdev(source) is not None)


def allow_non_disk(module, index, target, default):
    """targets[].allow_non_disk when the item sets it, else the plan's allow_non_disk (default)."""
    value = target.get("allow_non_disk")
    if value is None:
        return default
    try:
        return boolean(value, strict=True)
    except TypeError:
        module.fail_json(msg="targets[%d].allow_non_disk must be true or false, got %r" % (index, value), run_dirs=[])


def granted_class(classes, rdev):
    """(class, grant) the discover role granted the device node rdev (keys may be any path of the node).

    A value is the grant discover made (a dict with class and the disks' identity, which bench_run
    checks again before each raw job) or, from callers that have no grant, just the class name."""
    found = {}
    for key, value in (classes or {}).items():
        grant = value if isinstance(value, dict) else None
        granted = grant.get("class") if grant is not None else value
        if granted in RAW_CLASSES and isinstance(key, str) and _blockdev.node_rdev(key) == rdev:
            found.setdefault(granted, grant)
    # Two names of one device with different classes: the lesser one.
    for granted in ("raw_read", "raw_write"):
        if granted in found:
            return granted, found[granted]
    return None, None


def raw_target_facts(module, index, target, identities, classes):
    """Stat the device (read-only: sysfs and stat, the device is never opened) and take its granted class."""
    device = target["device"]
    mode = target.get("mode") or "raw_read"
    if not isinstance(device, str) or not os.path.isabs(device):
        module.fail_json(msg="targets[%d].device must be the absolute path of a block device such as /dev/sdb, got %r"
                             % (index, device), run_dirs=[])
    if mode not in RAW_CLASSES:
        module.fail_json(msg="targets[%d] (%s): mode must be raw_read or raw_write for a device, got %r"
                             % (index, device, mode), run_dirs=[])
    try:
        info = os.stat(device)
    except OSError as error:
        module.fail_json(msg="targets[%d].device %s: %s" % (index, device, error.strerror or error), run_dirs=[])
    if not stat.S_ISBLK(info.st_mode):
        module.fail_json(msg="targets[%d].device %s is not a block device" % (index, device), run_dirs=[])
    major, minor = os.major(info.st_rdev), os.minor(info.st_rdev)
    # The node's own size (a partition's, not its disk's): every offset and size must stay inside it.
    sectors = read_int(os.path.join(_blockdev.SYS_ROOT, "dev", "block", "%d:%d" % (major, minor), "size"), None)
    if sectors is None:
        module.fail_json(msg="targets[%d].device %s: its size cannot be read from /sys/dev/block/%d:%d/size"
                             % (index, device, major, minor), run_dirs=[])
    whole = _blockdev.whole_disk_for(major, minor)
    queue = os.path.join(_blockdev.SYS_ROOT, "block", whole or "-", "queue")
    rotational = read_int(os.path.join(queue, "rotational"), None)
    granted, grant = granted_class(classes, info.st_rdev)
    if granted is None:
        module.fail_json(msg="targets[%d].device %s has no granted class: run the discover role first; it grants "
                             "raw_read/raw_write (raw_write only behind the destructive interlock, docs/discover.md), "
                             "and the benchmark role passes them in 'classes'" % (index, device), run_dirs=[])
    if mode == "raw_write" and granted != "raw_write":
        module.fail_json(msg="targets[%d].device %s asks mode raw_write but was granted only %s: %s"
                             % (index, device, granted, INTERLOCK), run_dirs=[])
    if granted == "raw_write" and mode == "raw_write" and not (grant or {}).get("disks"):
        module.fail_json(msg="targets[%d].device %s: its raw_write grant carries no disk identity (serial, WWN or loop "
                             "backing file), so the runner could not check it is still the granted disk; rerun the "
                             "discover role, which binds every grant to the disk" % (index, device), run_dirs=[])
    identity = dict(identities.get(os.path.normpath(device)) or {})
    if grant:
        # The job's target carries the grant: bench_run checks the disk against it right before each raw job.
        identity["grant"] = dict(grant, **{"class": mode if mode == "raw_read" else granted})
    return TargetFacts(
        path=device, kind="raw", device_path=os.path.realpath(device), device_size_bytes=sectors * _blockdev.SECTOR_BYTES,
        granted_class=mode if mode == "raw_read" else granted, device=whole,
        logical_block_size=read_int(os.path.join(queue, "logical_block_size"), 512),
        physical_block_size=read_int(os.path.join(queue, "physical_block_size"), 4096),
        rotational=None if rotational is None else bool(rotational),
        identity=identity,
    )


def remove_leftovers(module, targets, run_ids):
    """Remove the run directories the aborted runs run_ids left on this host's directory targets: only directories
    (not symlinks, on the target's filesystem) whose note names this host and one of those lock run ids."""
    run_ids = set(run_id for run_id in run_ids if run_id)
    host = socket.gethostname()
    removed = []
    for target in targets:
        path = target.get("path") if isinstance(target, dict) else None
        if not run_ids or not isinstance(path, str) or not os.path.isabs(path) or not os.path.isdir(path):
            continue   # not a directory target: target_facts says what is wrong with it
        try:
            device, names = os.stat(path).st_dev, sorted(os.listdir(path))
        except OSError as error:
            module.warn("cannot look for leftovers of aborted runs in %s: %s" % (path, error))
            continue
        for name in names:
            run_dir = os.path.join(path, name)
            try:
                info = os.lstat(run_dir)
            except OSError:
                continue
            if not name.startswith("diskproof-") or not stat.S_ISDIR(info.st_mode) or info.st_dev != device:
                continue
            _first_line, note = _cancel.read_note(run_dir) or (None, None)
            if not note or note.get("host") != host or note.get("lock_run_id") not in run_ids:
                continue
            problems = _tree.remove_tree(run_dir, (info.st_dev, info.st_ino))
            if problems:
                module.warn("leftover run directory %s of the aborted run %s not fully removed: %s"
                            % (run_dir, note["lock_run_id"], "; ".join(problems)))
            else:
                removed.append((run_dir, note["lock_run_id"]))
    return removed


def create_run_dirs(module, run_dirs, lock_run_id="", creator="diskproof.fleet.bench_plan"):
    """Create each run directory under an O_NOFOLLOW descriptor of its (re-checked, resolved) target and
    return {run_dir: {path, resolved, device, inode}}: the identity bench_run re-verifies before each run."""
    created = []
    records = {}
    trusted = _paths.trusted_uids()
    for run_dir in run_dirs:
        target, name = os.path.split(run_dir)
        try:
            # Checked again right before the mkdir: the plan's own check was a moment ago.
            resolved = _paths.resolve_trusted(target, trusted)
            # 0755: bonnie++ runs as an unprivileged user in a directory below this one.
            fd, info = _paths.make_directory(resolved, name, 0o755, trusted)
        except FileExistsError:
            module.fail_json(msg="%s exists already: not created by this run; if it holds %s it is the leftover of an "
                                 "aborted diskproof run and can be removed, else choose another run_id"
                                 % (run_dir, MARKER), run_dirs=created)
        except _paths.PathError as error:
            module.fail_json(msg="run directory %s refused: %s" % (run_dir, error), run_dirs=created)
        except OSError as error:
            module.fail_json(msg="cannot create %s: %s (run with become: true?)" % (run_dir, error), run_dirs=created)
        created.append(run_dir)
        records[run_dir] = _paths.run_dir_record(run_dir, os.path.join(resolved, name), info)
        # Says whose directory this is, for anyone who finds it after an aborted run (and for remove_leftovers).
        # Written through the directory's own descriptor, never by path: O_EXCL|O_NOFOLLOW.
        try:
            note = os.open(MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
            with os.fdopen(note, "w", encoding="utf-8") as handle:
                handle.write("diskproof run %s, created %s by %s; removed at the end of the run\nhost: %s\nlock_run_id: %s\n"
                             % (name[len("diskproof-"):], utc_now(), creator, socket.gethostname(), lock_run_id))
        except OSError as error:
            module.fail_json(msg="cannot write %s in %s: %s" % (MARKER, run_dir, error), run_dirs=created)
        finally:
            os.close(fd)
    return records


def attach_run_dirs(plan, records):
    """Each directory job gets the identity of its run directory (bench_run option run_dir)."""
    plan["run_dir_identities"] = records
    for job in plan["jobs"]:
        test_file = (job.get("target") or {}).get("test_file")
        record = records.get(os.path.dirname(test_file)) if test_file else None
        if record is not None:
            job["run_dir"] = dict(record)
    return plan


def check_tools(module, plan):
    """Refuse the plan, before the quiesce, when a tool it runs is missing or unusable: name the package. Each tool
    is found as bench_run finds it and asked its version as discover asks (_version_probe.probe_tools)."""
    found = probe_tools(plan.tools, module.get_bin_path, module.warn)
    problems = _tools.tool_problems(plan.tools, found, _tools.TOOL_VERSION_ARGS)
    if problems:
        module.fail_json(msg="benchmark plan refused, nothing was stopped or written: the tests of this plan (%s) need "
                         "tools this host lacks: %s; then run again" % (", ".join(plan.tests), "; ".join(problems)),
                         run_dirs=[], tools=found)
    return found


def check_fence(module, plan):
    """A fenced plan needs a memory cgroup the fence can be made in: refuse it here (before the quiesce) rather than
    fail every buffered test later - never fall back to an unfenced small file, which would measure the page cache."""
    if not plan.cache_fence_bytes:
        return
    try:
        _fence.plan_fence(os.getpid(), "preflight")
    except _fence.FenceError as error:
        origin = ("the %s profile's default cache fence" % plan.profile) if plan.cache_fence_default else \
            "the cache fence (diskproof_cache_fence_bytes)"
        module.fail_json(
            msg="benchmark plan refused, nothing was stopped or written: %s of %d bytes needs a memory cgroup, but %s; "
                "enable the memory cgroup controller on this host, or set diskproof_cache_fence_bytes: 0 to size the "
                "buffered tests from 2 x the memory figure instead (a larger test file, a longer run)"
                % (origin, plan.cache_fence_bytes, error), run_dirs=[])


# bench_plan's options; the quiesce module validates its O(plan) dict against the same spec.
PLAN_ARGUMENT_SPEC = dict(
    targets=dict(type="list", elements="dict", required=True),
    profile=dict(type="str", default="standard", choices=list(PROFILES)),
    tests=dict(type="list", elements="str", default=[]),
    run_id=dict(type="str", default=""),
    lock_run_id=dict(type="str", default=""),
    remove_leftovers_of=dict(type="list", elements="str", default=[]),
    memory_bytes=dict(type="int"),
    cache_fence_bytes=dict(type="int"),
    fio_runtime_s=dict(type="int"),
    fio_ramp_s=dict(type="int", default=2),
    repeats=dict(type="int"),
    max_repeats=dict(type="int"),
    max_cv=dict(type="float", default=0.05),
    sequential_block_size=dict(type="int", default=1048576),
    random_block_size=dict(type="int", default=4096),
    commit_block_size=dict(type="int", default=8192),
    sysbench_block_size=dict(type="int", default=8192),
    commit_write_cache=dict(type="str", default="unchanged", choices=["unchanged", "off"]),
    bonnie_user=dict(type="str", default="nobody"),
    expected_mb_per_s=dict(type="float", default=150.0),
    reserve_fraction=dict(type="float", default=0.05),
    reserve_min_bytes=dict(type="int", default=1073741824),
    keep_raw_dir=dict(type="str", default=""),
    identities=dict(type="dict", default={}),
    classes=dict(type="dict", default={}),
    allow_non_disk=dict(type="bool", default=False),
    ssd_precondition_bytes=dict(type="int", default=0),
    ssd_steady_criterion=dict(type="str", default="iops:20%"),
    ssd_steady_window_s=dict(type="int", default=60),
    ssd_steady_ramp_s=dict(type="int", default=30),
    ssd_steady_time_limit_s=dict(type="int", default=1800),
    ssd_steady_max_slope_excursion_percent=dict(type="float", default=10.0),
    ssd_purge=dict(type="bool", default=False),
    ssd_purge_method=dict(type="str", default="blkdiscard",
                          choices=["blkdiscard", "nvme_format", "ata_secure_erase"]),
    ssd_purge_firmware_erase=dict(type="bool", default=False),
    include_ssd_steady_state=dict(type="bool", default=False),
    include_verify=dict(type="bool", default=False),
    burnin_hours=dict(type="float", default=4.0),
    fio_max_latency_ms=dict(type="dict", default={}, options=dict(read=dict(type="float", default=0.0),
                                                                  write=dict(type="float", default=0.0))),
    fio_rate_min_mb_per_s=dict(type="dict", default={}, options=dict(read=dict(type="float", default=0.0),
                                                                     write=dict(type="float", default=0.0))),
)


def plan_on_host(module, params, check_mode, known_tools=None, creator="diskproof.fleet.bench_plan"):
    """The plan for params (validated against PLAN_ARGUMENT_SPEC): the dict bench_plan returns. A refusal ends the
    module through module.fail_json, naming what to change; nothing is written in check mode."""
    run_id = params["run_id"] or "%s-%s" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                                            secrets.token_hex(4))
    memory = params["memory_bytes"] if params["memory_bytes"] is not None else memory_total_bytes(module)
    # Before the free space is read: what an aborted run left is free space again.
    leftovers = [] if check_mode else remove_leftovers(module, params["targets"], params["remove_leftovers_of"])
    targets = [target_facts(module, index, target, params["identities"], params["classes"], params["allow_non_disk"])
               for index, target in enumerate(params["targets"])]
    settings = Settings(
        run_id=run_id, memory_bytes=memory, tests=tuple(params["tests"]), profile=params["profile"],
        cache_fence_bytes=params["cache_fence_bytes"], fio_runtime_s=params["fio_runtime_s"], fio_ramp_s=params["fio_ramp_s"],
        repeats=params["repeats"], max_repeats=params["max_repeats"], max_cv=params["max_cv"],
        sequential_block_size=params["sequential_block_size"], random_block_size=params["random_block_size"],
        commit_block_size=params["commit_block_size"], sysbench_block_size=params["sysbench_block_size"],
        commit_write_cache=params["commit_write_cache"], bonnie_user=params["bonnie_user"],
        expected_bytes_per_s=params["expected_mb_per_s"] * 1e6, reserve_fraction=params["reserve_fraction"],
        reserve_min_bytes=params["reserve_min_bytes"], keep_raw_dir=params["keep_raw_dir"],
        # 0: 2 x each device's capacity; a slope limit of 0: fio's criterion alone.
        ssd_precondition_bytes=params["ssd_precondition_bytes"] or None,
        ssd_steady_criterion=params["ssd_steady_criterion"],
        ssd_steady_window_s=params["ssd_steady_window_s"], ssd_steady_ramp_s=params["ssd_steady_ramp_s"],
        ssd_steady_time_limit_s=params["ssd_steady_time_limit_s"],
        ssd_steady_max_slope_excursion_percent=params["ssd_steady_max_slope_excursion_percent"] or None,
        ssd_purge=params["ssd_purge"], ssd_purge_method=params["ssd_purge_method"],
        ssd_purge_firmware_erase=params["ssd_purge_firmware_erase"],
        include_ssd_steady_state=params["include_ssd_steady_state"], include_verify=params["include_verify"],
        burnin_hours=params["burnin_hours"],
        fio_max_read_latency_ms=params["fio_max_latency_ms"]["read"],
        fio_max_write_latency_ms=params["fio_max_latency_ms"]["write"],
        fio_min_read_mb_per_s=params["fio_rate_min_mb_per_s"]["read"],
        fio_min_write_mb_per_s=params["fio_rate_min_mb_per_s"]["write"],
    )
    try:
        plan = build_plan(targets, settings)
    except PlanError as error:
        module.fail_json(msg="benchmark plan refused, nothing was written: %s" % error, run_dirs=[])
    check_fence(module, plan)
    # A second plan of one call (the quiesce's, under its lock) takes the tools its check found a moment ago.
    tools = check_tools(module, plan) if known_tools is None else known_tools
    lines = ["removed %s, left by the aborted run %s" % leftover for leftover in leftovers] + \
        plan_lines(plan, memory, params["cache_fence_bytes"])
    for warning in plan.warnings:
        module.warn(warning)
    run_dir_records = {} if check_mode else create_run_dirs(module, plan.run_dirs, params["lock_run_id"], creator)
    created = list(run_dir_records)
    if not check_mode:
        for raw_dir in plan.raw_dirs:
            try:
                os.makedirs(raw_dir, 0o700, exist_ok=True)
            except OSError as error:
                module.fail_json(msg="cannot create keep_raw_dir %s: %s" % (raw_dir, error), run_dirs=created)
    return dict(changed=bool(created or leftovers), plan=attach_run_dirs(plan.as_dict(), run_dir_records),
                lines=lines, run_dirs=created, tools=tools,
                memory_bytes=memory, run_id=run_id, leftovers_removed=[path for path, _run_id in leftovers])


# ---------------------------------------------------------------- the quiesce's plan option (module quiesce)

class HeldWarnings:
    """A module whose warnings are held back: the plan checked before the lock warns only in check mode, since the
    plan made under the lock gives the same warnings again."""

    def __init__(self, module):
        self.module = module
        self.held = []
        self.fail_json = module.fail_json
        self.get_bin_path = module.get_bin_path

    def warn(self, warning):
        self.held.append(warning)

    def flush(self):
        for warning in self.held:
            self.module.warn(warning)


def validated_plan_options(module, request, run_id):
    """The plan request (bench_plan's options, checked against PLAN_ARGUMENT_SPEC); a bad one fails the module."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    validated = ArgumentSpecValidator(PLAN_ARGUMENT_SPEC).validate(request)
    if validated.error_messages:
        module.fail_json(msg="plan: %s (the options of diskproof.fleet.bench_plan)" % "; ".join(validated.error_messages),
                         run_id=run_id)
    return validated.validated_parameters


def check_plan(module, options):
    """(the plan as bench_plan checks it in check mode, its held warnings): nothing written; a refusal ends the
    module, before the quiesce takes the lock or stops anything."""
    quiet = HeldWarnings(module)
    return plan_on_host(quiet, dict(options, lock_run_id="", remove_leftovers_of=[]), True), quiet


def make_plan(module, options, run_id, recovered_run_id, known_tools):
    """The plan made under the quiesce's lock, once the host is quiet: its run directories named after this run."""
    return plan_on_host(module, dict(options, lock_run_id=run_id,
                                     remove_leftovers_of=[recovered_run_id] if recovered_run_id else []),
                        False, known_tools=known_tools, creator="diskproof.fleet.quiesce")
