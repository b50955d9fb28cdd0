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
    the device's logical and physical block size) and builds the ordered list of jobs the role
    C(diskproof.fleet.benchmark) runs with M(diskproof.fleet.bench_facts). The catalog, profiles and sizing rules are
    in C(docs/tests.md).
  - Buffered tests use a test file of 2 x the memory figure (or 2 x O(cache_fence_bytes) when that is smaller),
    rounded up to whole blocks. Direct-I/O block sizes must be multiples of each device's logical block size; a
    misaligned value is refused, naming the device's block sizes. A target whose filesystem would keep less than
    max(5 %, 1 GiB) free is refused. Nothing is written when the plan is refused.
  - Without check mode, creates one run directory C(<target>/diskproof-<run_id>) per target (refusing when it
    exists) for the tests' files, holding only a C(.diskproof-run) note until the tests run; the role removes it at
    the end. In check mode only the plan is returned.
author:
  - diskproof maintainers (@diskproof)
options:
  targets:
    description: "Directories on the filesystems to test, each C({path: /srv/disk1})."
    type: list
    elements: dict
    required: true
  profile:
    description: Test set and defaults (repeats, fio runtime). See C(docs/tests.md).
    type: str
    choices: [quick, standard, evidence, full]
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
  memory_bytes:
    description: Memory figure the buffered tests are sized from. Default is C(MemTotal) of C(/proc/meminfo).
    type: int
  cache_fence_bytes:
    description:
      - Run buffered tests inside a memory cgroup of this size and size their files from it (when smaller than the
        memory figure), so a host with a lot of RAM does not need a file of twice its RAM.
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
    description: Directory -> disk identity (from the discover role), copied into every job's target.
    type: dict
    default: {}
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
"""

RETURN = r"""
plan:
  description: The plan - C(jobs) (each with its argv or fio job values and bench_facts options), C(run_dirs), C(tests),
    C(test_file_bytes), C(cache_basis_bytes), C(repeats), C(max_repeats), C(fio_runtime_s), C(space) per target,
    C(warnings) and C(estimate_s).
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
memory_bytes:
  description: The memory figure used.
  returned: success
  type: int
run_id:
  description: The run id naming the run directories (O(run_id) or the generated one).
  returned: success
  type: str
"""

import datetime
import os
import secrets

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, Settings, TargetFacts, build_plan, plan_lines


MARKER = ".diskproof-run"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def memory_total_bytes(module):
    try:
        with open("/proc/meminfo", "r", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError) as error:
        module.fail_json(msg="cannot read MemTotal from /proc/meminfo (%s); set memory_bytes" % error, run_dirs=[])
    module.fail_json(msg="/proc/meminfo has no MemTotal line; set memory_bytes", run_dirs=[])


def read_int(path, default):
    try:
        with open(path, "r", encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return default


def target_facts(module, index, target, identities):
    path = target.get("path") if isinstance(target, dict) else None
    if not isinstance(path, str) or not path:
        module.fail_json(msg="targets[%d] needs 'path', a directory on the filesystem to test (raw device targets are "
                             "not supported by this version), got %r" % (index, target), run_dirs=[])
    if not os.path.isdir(path):
        module.fail_json(msg="targets[%d].path %s is not an existing directory" % (index, path), run_dirs=[])
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
    )


def create_run_dirs(module, run_dirs):
    created = []
    for run_dir in run_dirs:
        try:
            # 0755: bonnie++ runs as an unprivileged user in a directory below this one.
            os.mkdir(run_dir, 0o755)
        except FileExistsError:
            module.fail_json(msg="%s exists already: not created by this run; if it holds %s it is the leftover of an "
                                 "aborted diskproof run and can be removed, else choose another run_id"
                                 % (run_dir, MARKER), run_dirs=created)
        except OSError as error:
            module.fail_json(msg="cannot create %s: %s (run with become: true?)" % (run_dir, error), run_dirs=created)
        os.chmod(run_dir, 0o755)
        created.append(run_dir)
        # Says whose directory this is, for anyone who finds it after an aborted run.
        with open(os.path.join(run_dir, MARKER), "w", encoding="utf-8") as handle:
            handle.write("diskproof run %s, created %s by diskproof.fleet.bench_plan; removed at the end of the run\n"
                         % (os.path.basename(run_dir)[len("diskproof-"):], utc_now()))
    return created


def main():
    module = AnsibleModule(
        argument_spec=dict(
            targets=dict(type="list", elements="dict", required=True),
            profile=dict(type="str", default="standard", choices=["quick", "standard", "evidence", "full"]),
            tests=dict(type="list", elements="str", default=[]),
            run_id=dict(type="str", default=""),
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
        ),
        supports_check_mode=True,
    )
    params = module.params
    run_id = params["run_id"] or "%s-%s" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                                            secrets.token_hex(4))
    memory = params["memory_bytes"] if params["memory_bytes"] is not None else memory_total_bytes(module)
    targets = [target_facts(module, index, target, params["identities"]) for index, target in enumerate(params["targets"])]
    settings = Settings(
        run_id=run_id, memory_bytes=memory, tests=tuple(params["tests"]), profile=params["profile"],
        cache_fence_bytes=params["cache_fence_bytes"], fio_runtime_s=params["fio_runtime_s"], fio_ramp_s=params["fio_ramp_s"],
        repeats=params["repeats"], max_repeats=params["max_repeats"], max_cv=params["max_cv"],
        sequential_block_size=params["sequential_block_size"], random_block_size=params["random_block_size"],
        commit_block_size=params["commit_block_size"], sysbench_block_size=params["sysbench_block_size"],
        commit_write_cache=params["commit_write_cache"], bonnie_user=params["bonnie_user"],
        expected_bytes_per_s=params["expected_mb_per_s"] * 1e6, reserve_fraction=params["reserve_fraction"],
        reserve_min_bytes=params["reserve_min_bytes"], keep_raw_dir=params["keep_raw_dir"],
    )
    try:
        plan = build_plan(targets, settings)
    except PlanError as error:
        module.fail_json(msg="benchmark plan refused, nothing was written: %s" % error, run_dirs=[])
    lines = plan_lines(plan, memory, params["cache_fence_bytes"])
    for warning in plan.warnings:
        module.warn(warning)
    created = [] if module.check_mode else create_run_dirs(module, plan.run_dirs)
    if not module.check_mode:
        for raw_dir in plan.raw_dirs:
            try:
                os.makedirs(raw_dir, 0o700, exist_ok=True)
            except OSError as error:
                module.fail_json(msg="cannot create keep_raw_dir %s: %s" % (raw_dir, error), run_dirs=created)
    module.exit_json(changed=bool(created), plan=plan.as_dict(), lines=lines, run_dirs=created, memory_bytes=memory,
                     run_id=run_id)


if __name__ == "__main__":
    main()
