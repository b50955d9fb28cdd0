#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_plan
short_description: Plan the benchmark of one host - every test, its size, block size, duration and space - and refuse unsafe plans
version_added: 0.1.0
description:
  - Looks at the host (memory, and for every target directory its free space, filesystem size, whole-disk device and
    the device's logical and physical block size; for every raw device target its size and block sizes) and builds the
    ordered list of jobs the role C(diskproof.fleet.benchmark) runs with M(diskproof.fleet.bench_run). The catalog, profiles and sizing rules are
    in C(docs/tests.md).
  - Buffered tests use a test file of 2 x the memory figure (or 2 x O(cache_fence_bytes) when that is smaller),
    rounded up to whole blocks. Direct-I/O block sizes must be multiples of each device's logical block size; a
    misaligned value is refused, naming the device's block sizes. Directory targets are grouped by filesystem
    (C(st_dev)); a filesystem that would keep less than max(5 %, 1 GiB) free at the fullest moment of the run (every
    test file and extra file set there at once, in run order) is refused, naming its mount point, device, targets
    and the figures. Nothing is written when the plan is refused.
  - Each target's test file is removed by the last job that reads it (an C(rm -f) in that job's C(cleanup)), so the
    next target's files never sit next to it.
  - Raw device targets (items with C(device) and C(mode)) are tested on the device node itself, never through a
    test file; every size and offset stays inside the device (min(the test-file size, the device size rounded down to
    the block size); the ZCAV sweep spans the whole device). The class comes from O(classes), which the discover role
    grants - V(raw_read) runs only the read tests, V(raw_write) (behind the destructive interlock) also the direct and
    fio write tests; tests that need a filesystem are skipped with a warning. A device without a granted class is
    refused, and so is a write test asked explicitly for a V(raw_read) device. The device is only looked at through
    C(stat) and C(/sys) here, never opened.
  - Without check mode, creates one run directory C(<target>/diskproof-<run_id>) per directory target (refusing when
    it exists) for the tests' files, holding only a C(.diskproof-run) note until the tests run; the role removes it
    at the end. Nothing is created for raw device targets. In check mode only the plan is returned.
  - A directory target, and every directory above it up to C(/), must be owned by root or the connecting user (the
    module's user, or C(SUDO_UID)) and not be group- or world-writable unless the sticky bit is set (like C(/tmp));
    a symlink on the way must be owned by root or the connecting user, is resolved once and its destination checked
    by the same rule. Otherwise the plan is refused naming the path, its owner and mode.
  - The run directory is created with C(mkdir) relative to a descriptor of the resolved target opened from C(/)
    with C(O_NOFOLLOW), checked by C(fstat), and its identity (device, inode) is returned in every job as C(run_dir)
    for M(diskproof.fleet.bench_run) to re-verify before each tool run (C(docs/tests.md)).
  - The note names the run, the host and O(lock_run_id). A run that restored an aborted run of this host first
    removes that run's run directories (O(remove_leftovers_of)) before it reads the free space.
author:
  - diskproof maintainers (@diskproof)
options:
  targets:
    description:
      - What to test, each item either C(path) - a directory on the filesystem to test - or C(device) - a block device
        tested raw, with C(mode) V(raw_read) (the default) or V(raw_write). Exactly one of C(path) and C(device).
      - A device is stat'ed (it must be a block device); its size is C(/sys/dev/block/<major>:<minor>/size) x 512 (a
        partition's own size), its logical and physical block size those of its whole disk
        (C(/sys/block/<disk>/queue/)).
      - A C(path) item may set C(allow_non_disk) (true or false) to override O(allow_non_disk) for that directory.
    type: list
    elements: dict
    required: true
  profile:
    description: Test set and defaults (repeats, fio runtime). See C(docs/tests.md).
    type: str
    choices: [quick, standard, evidence, full, ssd_steady_state, burnin]
    default: standard
  tests:
    description: Test ids to run instead of the profile's list, in this order (C(dd_seq_write) always comes first when a test uses the test file).
    type: list
    elements: str
    default: []
  run_id:
    description: Names the run directories. Generated (UTC time and random hex) when empty.
    type: str
    default: ""
  lock_run_id:
    description:
      - The run id of the quiesce lock this run holds on the host (the quiesce role's run id); written, with the host
        name, into the C(.diskproof-run) note of each run directory, so a later run can tell the directories of an
        aborted run. Empty when the run holds no lock (the quiesce skipped); such directories are never removed by
        O(remove_leftovers_of).
    type: str
    default: ""
  remove_leftovers_of:
    description:
      - Lock run ids of aborted runs this run restored the host from (the quiesce role's C(recovered.run_id)); the run
        is dead, its services were restored, but its run directories (test files) are still on the targets.
      - Before the free space is read, and not in check mode, every C(<target>/diskproof-*) directory whose
        C(.diskproof-run) note names this host and one of these lock run ids is removed, without following symlinks
        or crossing into other filesystems. A directory whose note does not say so (another host on a shared
        filesystem, a run without the lock, a note of an older version, no note) is left alone.
    type: list
    elements: str
    default: []
  memory_bytes:
    description: Memory figure the buffered tests are sized from. Default is C(MemTotal) of C(/proc/meminfo).
    type: int
  cache_fence_bytes:
    description:
      - Run buffered tests inside a memory cgroup of this size and size their files from it (when smaller than the
        memory figure), so a host with a lot of RAM does not need a file of twice its RAM.
      - Unset is the profile's default - V(quick) fences at 4 GiB when the memory figure is larger, the other
        profiles size from 2 x the memory figure. V(0) is no fence (V(quick) then sizes from 2 x the memory figure).
      - When the plan fences a test, a host without a usable memory cgroup is refused here (before anything is
        stopped or written), saying what to enable or to set V(0).
    type: int
  fio_runtime_s:
    description: Seconds each fio and sysbench job runs; default from the profile.
    type: int
  fio_ramp_s:
    description: Seconds fio runs before it starts counting (burst allowances and caches settle).
    type: int
    default: 2
  repeats:
    description: Runs per test; default from the profile.
    type: int
  max_repeats:
    description: Most runs per test when the runs vary by more than O(max_cv); default from the profile.
    type: int
  max_cv:
    description: Coefficient of variation above which more runs are made, and the result is finally C(unstable).
    type: float
    default: 0.05
  sequential_block_size:
    description: Block size of the sequential tests, bytes.
    type: int
    default: 1048576
  random_block_size:
    description: Block size of the random tests and ioping, bytes.
    type: int
    default: 4096
  commit_block_size:
    description: Write size of C(fio_commit_rate), bytes.
    type: int
    default: 8192
  sysbench_block_size:
    description: Block size of the sysbench tests, bytes.
    type: int
    default: 8192
  commit_write_cache:
    description: V(off) runs C(fio_commit_rate) with the drive's volatile write cache switched off (always restored).
    type: str
    choices: [unchanged, "off"]
    default: unchanged
  bonnie_user:
    description: Unprivileged user bonnie++ runs as (it refuses to run as root without C(-u)).
    type: str
    default: nobody
  expected_mb_per_s:
    description: Throughput (MB/s, 10^6 B/s) assumed only for the duration estimates of size-based tests.
    type: float
    default: 150
  reserve_fraction:
    description: Share of the filesystem that must stay free after the test files are written.
    type: float
    default: 0.05
  reserve_min_bytes:
    description: Least free space that must stay after the test files are written.
    type: int
    default: 1073741824
  keep_raw_dir:
    description:
      - When set, each target gets a directory below this one for the raw output of every run (created, with its
        parents, unless in check mode; never removed by the role).
    type: str
    default: ""
  identities:
    description: Directory (or device, as the target names it) -> disk identity (from the discover role), copied into
      every job's target.
    type: dict
    default: {}
  classes:
    description:
      - Device path -> the grant the discover role made (C(grant) of C(ansible_facts.diskproof_targets_resolved) - its
        C(class), V(raw_read) or V(raw_write), and the identity of the disks it was made for); the benchmark role fills
        it from the entries with C(granted) true only. A key matches a device target naming the same device node by any
        path (C(/dev/sdb), C(/dev/disk/by-id/...)). The grant goes into every job's C(target.grant), and
        M(diskproof.fleet.bench_run) checks the disk against it right before each raw job.
      - A value may also be just the class name; a V(raw_write) target then is refused (no identity to check).
      - A device target without a class here is refused; a target with C(mode=raw_read) runs as V(raw_read) even when
        V(raw_write) was granted; C(mode=raw_write) with only V(raw_read) granted is refused.
    type: dict
    default: {}
  allow_non_disk:
    description:
      - Plan directory targets whose filesystem is not on a disk (tmpfs, ramfs, overlay, NFS, CIFS, FUSE, 9p,
        virtiofs, or any filesystem whose source is no block device; the rule is in C(docs/discover.md), the same
        one the discover role applies). With V(false) such a target is refused before anything is written, naming its filesystem type
        and mount point; with V(true) it is planned with a warning and its jobs' C(target) carries C(not_a_disk) and
        C(filesystem), which keep it apart from disks in the report.
      - An item's own C(allow_non_disk) in O(targets) takes precedence.
    type: bool
    default: false
  ssd_precondition_bytes:
    description:
      - Bytes C(ssd_precondition) writes (sequential 128 KiB, QD32, direct, in passes over the device); V(0) is 2 x each
        device's capacity (the SNIA PTS workload-independent preconditioning). Rounded down to whole 128 KiB blocks.
    type: int
    default: 0
  ssd_steady_criterion:
    description:
      - fio's steady-state criterion (C(steadystate=)) of C(ssd_steady_rand_write) and C(ssd_steady_rand_read) -
        V(iops:<limit>[%]) (every sample of the window within the limit of its mean) or V(iops_slope:<limit>[%]) (the
        least-squares slope below the limit).
    type: str
    default: "iops:20%"
  ssd_steady_window_s:
    description: Seconds of the rolling window fio judges (C(ss_dur)); one IOPS sample a second.
    type: int
    default: 60
  ssd_steady_ramp_s:
    description: Seconds a steady-state job runs before fio starts collecting the window (C(ss_ramp)).
    type: int
    default: 30
  ssd_steady_time_limit_s:
    description:
      - Seconds a steady-state job runs at most (fio C(runtime)); not steady by then is the report's V(not_steady).
        At least O(ssd_steady_ramp_s) + 2 x O(ssd_steady_window_s).
    type: int
    default: 1800
  ssd_steady_max_slope_excursion_percent:
    description:
      - Besides fio's criterion, the window's least-squares line may change by at most this % of the mean across the
        window (the SNIA PTS slope excursion); V(0) leaves fio's criterion alone.
    type: float
    default: 10.0
  ssd_purge:
    description: Purge the device with O(ssd_purge_method) before C(ssd_precondition) (the first part's setup).
    type: bool
    default: false
  ssd_purge_method:
    description:
      - V(blkdiscard) (C(blkdiscard -v), which still refuses a device with signatures); V(nvme_format)
        (C(nvme format --ses=1)) and V(ata_secure_erase) (C(hdparm --security-erase)) erase through the drive's firmware
        and need O(ssd_purge_firmware_erase) too.
    type: str
    choices: [blkdiscard, nvme_format, ata_secure_erase]
    default: blkdiscard
  ssd_purge_firmware_erase:
    description: Allow O(ssd_purge_method) V(nvme_format) or V(ata_secure_erase) (beyond the raw_write interlock).
    type: bool
    default: false
  include_ssd_steady_state:
    description:
      - Run the SSD steady-state tests (C(ssd_precondition), C(ssd_steady_rand_write), C(ssd_steady_rand_read)) after
        the profile's own tests, on V(raw_write) device targets (skipped with the reason on any other). Ignored when
        O(tests) is set. The evidence playbook sets it from C(evidence_ssd_steady_state).
    type: bool
    default: false
  include_verify:
    description:
      - Add the data-integrity test C(fio_verify) to a profile that does not have it (V(quick)); the other profiles
        run it already. Ignored when O(tests) is set.
    type: bool
    default: false
  burnin_hours:
    description:
      - The burn-in's time budget per target (profile V(burnin)), in hours, above 0 and at most 720. The plan lists as
        many cycles as the budget holds at O(expected_mb_per_s) (at most 1000 per target); cycles that would start
        past the budget are not run, so a disk slower than expected is cut at the budget and one faster finishes
        early. The targets of a host run one after the other, each for its own budget.
    type: float
    default: 4.0
  fio_max_latency_ms:
    description:
      - Fail-fast on latency for every fio job, per direction - fio's C(max_latency). A completed read (write) slower
        than this many milliseconds ends the job at once, and the report judges it C(slow), its reason naming the I/O,
        its latency and the limit. V(0) - off. The record's params keep the limits (C(max_latency_ms)).
      - fio judges only the I/Os that complete; an I/O that never does is the stall watch's (bench_run
        C(stall_timeout_s)).
    type: dict
    default: {}
    suboptions:
      read:
        description: Milliseconds; V(0) - off.
        type: float
        default: 0
      write:
        description: Milliseconds; V(0) - off.
        type: float
        default: 0
  fio_rate_min_mb_per_s:
    description:
      - Fail-fast on throughput for every fio job, per direction - fio's C(rate_min) over fio's C(rate_cycle) of one
        second - a rate under this many MB/s (10^6 bytes) ends the job, judged C(slow), its reason naming the rate and
        the limit. V(0) - off. The record's params keep the limits
        (C(rate_min_mb_per_s)).
    type: dict
    default: {}
    suboptions:
      read:
        description: MB/s; V(0) - off.
        type: float
        default: 0
      write:
        description: MB/s; V(0) - off.
        type: float
        default: 0
extends_documentation_fragment:
  - diskproof.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the plan is built and returned and nothing is created.
"""

EXAMPLES = r"""
- name: Plan the standard profile on two disks
  diskproof.fleet.bench_plan:
    targets:
      - path: /srv/disk1
      - path: /srv/disk2
    profile: standard
  register: plan

- name: Show it
  ansible.builtin.debug:
    var: plan.lines

- name: Plan read tests on a raw disk the discover role granted raw_read
  diskproof.fleet.bench_plan:
    targets:
      - device: /dev/sdc
        mode: raw_read
    tests: [dd_seq_read, zcav_sweep, fio_rand_read]
    classes:
      /dev/sdc: raw_read
"""

RETURN = r"""
plan:
  description: The plan - C(jobs) (each with its argv or fio job values and bench_run options), C(run_dirs), C(tests),
    C(test_file_bytes), C(cache_basis_bytes), C(repeats), C(max_repeats), C(fio_runtime_s), C(space) per directory
    target (C(needed_bytes) - its own fullest moment, C(free_bytes), C(reserve_bytes), C(filesystem)), C(filesystems)
    per filesystem (C(mount_point), C(device), C(targets), C(peak_bytes), C(peak_job), C(free_bytes), C(size_bytes),
    C(reserve_bytes)), C(raw_targets) (per device target - C(device_path), C(device), C(class), C(size_bytes) and block sizes),
    C(skipped) (C(target), C(test), C(reason) - V(needs_filesystem) or V(needs_raw_write)), C(warnings),
    C(estimate_s), C(cache_fence_bytes) (the fence the buffered jobs run in, or null), C(cache_fence_default)
    (it is the profile's default), C(tools) (every program the jobs run) and C(run_dir_identities)
    (run directory -> C(path), C(resolved), C(device), C(inode); empty in
    check mode). Each job of a directory target carries its run directory's entry as C(run_dir) (not in check mode).
  returned: success
  type: dict
lines:
  description: The plan as text, sizing first, one line per job with its estimated duration.
  returned: success
  type: list
  elements: str
run_dirs:
  description: Run directories created by this call (none in check mode); the caller removes them.
  returned: always
  type: list
  elements: str
leftovers_removed:
  description: Run directories of aborted runs removed by this call (O(remove_leftovers_of)).
  returned: success
  type: list
  elements: str
tools:
  description:
    - Every program the plan runs (C(plan.tools)) -> C(path) (null when not installed) and C(version) (as the
      discover role reads it; null when none was reported). The plan is refused, before anything is written, when
      one is missing, reports no version or is older than the plan's commands need, naming the package to install.
  returned: success
  type: dict
  sample: {dd: {path: /usr/bin/dd, version: "9.1"}, fio: {path: /usr/bin/fio, version: "3.33"}}
memory_bytes:
  description: The memory figure used.
  returned: success
  type: int
run_id:
  description: The run id naming the run directories (O(run_id) or the generated one).
  returned: success
  type: str
"""
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.diskproof.fleet.plugins.module_utils._plan_host import PLAN_ARGUMENT_SPEC, plan_on_host


def main():
    module = AnsibleModule(argument_spec=PLAN_ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**plan_on_host(module, module.params, module.check_mode))


if __name__ == "__main__":
    main()
