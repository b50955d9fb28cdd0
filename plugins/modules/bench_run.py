#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_run
short_description: Run a dd, fio, sysbench, bonnie++ or ioping benchmark job and return exact result records
version_added: 0.2.0
description:
  - Runs C(dd), C(fio), C(sysbench) (fileio), C(bonnie++) or C(ioping) itself (O(argv), no shell, C(LANG=C LC_ALL=C)),
    or a ZCAV read sweep of dd steps (O(sweep)), and turns the output into result records (schema 1, see
    C(docs/architecture.md)) with every figure in SI base units, exactly as M(diskproof.fleet.bench_facts) parses
    captured output (C(docs/parsers.md) lists every output format understood and its units). It records start and
    end times, the exit code and the command, and can sync and drop the page cache first and measure what reached
    the block device (O(device_io)).
  - It is the job runner of the benchmark role - it can repeat a run until the runs agree (O(repeats),
    O(max_repeats), O(max_cv)) and return the real median run, run O(setup) and O(cleanup) commands around the
    measured runs, create and remove a work directory (O(workdir)), run a fio job file (O(job_file)), bound the
    page cache the test can use (O(cache_fence_bytes)), switch the disk's volatile write cache off for the test
    (O(write_cache)), run a ZCAV read sweep (O(sweep)), warn when the device counters do not back the tool's
    bytes (O(min_device_fraction)) and keep the raw output as evidence (O(keep_raw)). Whatever fails, the module
    runs O(cleanup), leaves and removes the cache fence, restores the write cache and removes the work directory
    and the job file before it returns.
  - Anything the parser cannot read exactly fails the task with a message naming the tool, what was expected and
    the offending line (a failed run whose output cannot be read gives an error record instead). No figure is
    guessed.
author:
  - diskproof maintainers (@diskproof)
extends_documentation_fragment:
  - diskproof.fleet.bench_records
  - diskproof.fleet.run_options
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
attributes:
  check_mode:
    support: partial
    details:
      - Nothing is run or created in check mode; an empty list of results is returned.
  facts:
    support: full
notes:
  - The result is C(changed=true) whenever the tool ran, like M(ansible.builtin.command) - a benchmark writes test data
    and may drop caches, and the module cannot know what else the command changed. Set C(changed_when) in the task
    when a read-only benchmark should not count as a change.
  - O(device_io) and the C(device) of O(target) come from Linux C(/sys); elsewhere they are null.
  - Every command (O(setup), the measured runs, O(cleanup), write-cache tools) runs in a process group of its own
    and is told by the kernel to die with the module (C(PR_SET_PDEATHSIG)). On SIGTERM, SIGINT or SIGHUP to the
    module, and when the controller goes away (the module's stdout, the pipe to sshd, loses its reader - what an
    AWX/AAP cancel of ansible-playbook does to a running module, which gets no signal), the whole group gets
    SIGTERM, one second later SIGKILL, and is reaped; then O(cleanup) runs and the fence, write cache and work
    directory are restored and removed as after any failure, and O(remove_on_cancel) is removed.
  - O(remove_when_done) is removed last, after the teardown, however the job ended; then, with O(restore_when_done),
    the host is restored.
seealso:
  - module: diskproof.fleet.bench_facts
    description: Parses output captured before (nothing is run).
  - module: diskproof.fleet.bench_plan
    description: Plans the jobs (sizes, run directories) the benchmark role runs with this module.
  - name: diskproof result records (schema 1)
    description: The record layout every result follows, in C(docs/architecture.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/architecture.md
"""

EXAMPLES = r"""
- name: Sequential write with dd, measured on the device (the module runs dd itself)
  diskproof.fleet.bench_run:
    argv: [dd, if=/dev/zero, of=/srv/diskproof/d0/diskproof.testfile, bs=1048576, count=256, conv=fdatasync]
    test: dd_seq_write
    target:
      path: /srv/diskproof/d0
    params:
      block_size: 1048576
      size_bytes: 268435456
      direct: false
      sync: fdatasync
    creates: /srv/diskproof/d0/diskproof.testfile
  become: true
  register: seq_write

- name: Random 4k reads, queue depth 32, from the file written above; caches dropped first
  diskproof.fleet.bench_run:
    argv:
      - fio
      - --name=fio_rand_read
      - --filename=/srv/diskproof/d0/diskproof.testfile
      - --rw=randread
      - --bs=4096
      - --iodepth=32
      - --direct=1
      - --ioengine=libaio
      - --runtime=30
      - --time_based=1
      - --output-format=json
    test: fio_rand_read
    target:
      path: /srv/diskproof/d0
    drop_caches: true
  become: true

- name: Show the write rate in MB/s (10^6 bytes per second)
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.write_bytes_per_s / 1e6) | round(1) }} MB/s"

- name: bonnie++ as an unprivileged user, CSV on stdout (-q) and the text table on stderr
  diskproof.fleet.bench_run:
    argv: [bonnie++, -q, -d, /srv/diskproof/d0, -u, nobody, -s, "2048", -r, "1024", -n, "0", -m, "{{ inventory_hostname }}"]
    test: bonnie
    target:
      path: /srv/diskproof/d0
  become: true

- name: ioping, 20 direct reads, raw (exact) statistics
  diskproof.fleet.bench_run:
    argv: [ioping, -B, -D, -c, "20", -i, "0.1", /srv/diskproof/d0]
    test: ioping_read_latency
    target:
      path: /srv/diskproof/d0

- name: Show the mean ioping read latency in microseconds
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.latency_ns.read.mean / 1000) | round(1) }} us"

- name: fio 4k random writes, 3 to 6 runs until they agree within 5 %, write cache off, page cache fenced at 1 GiB
  diskproof.fleet.bench_run:
    argv: [fio, --output-format=json]
    job_file: |
      [fio_rand_write]
      filename=/srv/diskproof/d0/diskproof.testfile
      size=4g
      rw=randwrite
      bs=4k
      iodepth=32
      direct=1
      ioengine=libaio
      runtime=60
      time_based=1
    test: fio_rand_write
    target:
      path: /srv/diskproof/d0
      device: sdb
    params:
      block_size: 4096
      direct: true
    repeats: 3
    max_repeats: 6
    max_cv: 0.05
    write_cache: "off"
    cache_fence_bytes: 1073741824
    keep_raw: /var/tmp/diskproof/evidence/sdb
  become: true

- name: sysbench fileio random reads - prepare, run and cleanup in a work directory the module creates and removes
  diskproof.fleet.bench_run:
    setup:
      - [sysbench, fileio, --file-num=4, --file-total-size=8G, prepare]
    argv: [sysbench, fileio, --file-num=4, --file-total-size=8G, --file-test-mode=rndrd, --file-extra-flags=direct,
           --time=60, run]
    cleanup:
      - [sysbench, fileio, --file-num=4, --file-total-size=8G, cleanup]
    workdir: /srv/diskproof/d0/sysbench
    chdir: /srv/diskproof/d0/sysbench
    test: sysbench_rand_read
    target:
      path: /srv/diskproof/d0
    drop_caches: true
  become: true

- name: bonnie++ as nobody in a work directory given to nobody
  diskproof.fleet.bench_run:
    argv: [bonnie++, -q, -d, /srv/diskproof/d0/bonnie, -u, nobody, -s, "2048", -r, "1024", -n, "0"]
    workdir: /srv/diskproof/d0/bonnie
    workdir_owner: nobody
    test: bonnie
    target:
      path: /srv/diskproof/d0
  become: true

- name: ZCAV read sweep of a whole disk, one record with a point per offset
  diskproof.fleet.bench_run:
    sweep:
      - {offset_bytes: 0, argv: [dd, if=/dev/sdb, of=/dev/null, bs=1048576, iflag=direct, skip=0, count=256]}
      - {offset_bytes: 1000000716800, argv: [dd, if=/dev/sdb, of=/dev/null, bs=1048576, iflag=direct, skip=953675, count=256]}
      - {offset_bytes: 2000000385024, argv: [dd, if=/dev/sdb, of=/dev/null, bs=1048576, iflag=direct, skip=1907349, count=256]}
    test: dd_zcav
    target:
      path: /dev/sdb
    params:
      block_size: 1048576
      direct: true
  become: true
  register: zcav

- name: Show the read rate at each offset in MB/s
  ansible.builtin.debug:
    msg: "{{ zcav.ansible_facts.diskproof_results[0].metrics.zcav | map(attribute='read_bytes_per_s') | map('int') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    diskproof_results:
      description:
        - One result record per dd run or fio job found in the output, in order (schema 1); one for a
          O(sweep). Empty in check mode.
        - Each has the fields M(diskproof.fleet.bench_facts) returns for parsed output (C(schema), C(test),
          C(tool), C(tool_version), C(target), C(params), C(job), C(metrics), C(bytes), C(seconds), C(warnings),
          C(error); RV(diskproof.fleet.bench_facts#module:ansible_facts.diskproof_results)), and those below,
          which a run fills.
        - Returned also when the task fails because the tool failed (O(fail_on_error)).
      returned: always
      type: list
      elements: dict
      contains:
        started:
          description: ISO 8601 UTC time the module started the tool.
          type: str
          returned: always
          sample: "2026-11-22T00:00:00Z"
        finished:
          description: ISO 8601 UTC time the tool exited.
          type: str
          returned: always
          sample: "2026-11-22T00:00:03Z"
        command:
          description:
            - O(argv) as given (with the temporary O(job_file) path appended); the first step's argv of a O(sweep).
          type: list
          elements: str
          returned: always
          sample: [dd, if=/dev/zero, of=/srv/diskproof/d0/diskproof.testfile, bs=1048576, count=128, conv=fdatasync]
        exit_code:
          description: Exit code of the tool.
          type: int
          returned: always
          sample: 0
        raw_sha256:
          description: SHA-256 of the exact raw text parsed (stdout followed by stderr).
          type: str
          returned: always
          sample: 9f2c3c0c6d0f1bd0f0d4b0c3f1a1e9c0b1d3a2e5f4c6b7a8d9e0f1a2b3c4d5e6
        device_io:
          description: Bytes read and written on C(target.device) during the run (C(/sys/block) sectors x 512); null when unknown.
          type: dict
          returned: always
          sample: {read_bytes: 0, write_bytes: 134221824}
        steady_state:
          description:
            - Only for a fio job run with C(steadystate=) (the catalog's C(ssd_steady_rand_write) and
              C(ssd_steady_rand_read)) - fio's steady-state window, and then C(metrics.<direction>_iops) and
              C(_bytes_per_s) are the window's means (fio's whole-job figures are kept here as C(job_iops),
              C(job_bytes_per_s)).
            - C(attained) (fio's verdict, and the window's slope excursion within
              C(params.ss_max_slope_excursion_percent) when set), C(fio_attained), C(criterion), C(window_s),
              C(ramp_s), C(time_limit_s), C(iops_mean),
              C(bytes_per_s_mean), C(slope_iops_per_s), C(slope_percent), C(slope_excursion_percent),
              C(max_deviation_percent), C(iops) (the per-second samples of the window), C(bytes_before_window),
              C(preconditioned_bytes), C(why_not). docs/tests.md, SSD steady state.
          type: dict
          returned: for steady-state fio jobs
          sample: {attained: true, criterion: "iops:20%", window_s: 10, iops_mean: 149.9, max_deviation_percent: 0.6,
                   slope_excursion_percent: 0.0, iops: [150, 150, 150, 150, 149, 150, 150, 150, 150, 150]}
        samples:
          description:
            - The primary figure (IOPS or bytes/s, what the report judges) of every measured run the figure was chosen
              from, in run order; null for a run without that figure or a failed run.
            - Runs set aside (C(earlier_samples)) are not among them.
          type: list
          elements: float
          returned: with O(argv)
          sample: [20117.3, 19876.1, 20032.8]
        cv:
          description: Coefficient of variation (sample standard deviation / mean) of C(samples); null below 2 samples.
          type: float
          returned: with O(argv)
          sample: 0.0061
        runs:
          description: How many measured runs C(samples) holds.
          type: int
          returned: with O(argv)
          sample: 3
        runs_total:
          description: Every measured run made for this figure, those set aside included.
          type: int
          returned: with O(argv)
          sample: 4
        earlier_samples:
          description:
            - The primary figure of each run set aside, in run order - runs before the last O(repeats) ones that agreed
              within O(max_cv), or, after a longer measurement (C(length_factor) 2), every run of the planned length.
              Empty when none was set aside. The record's C(warnings) say which and why.
          type: list
          elements: float
          returned: with O(argv)
          sample: [16.2e6]
        length_factor:
          description:
            - V(1), or V(2) when the runs of planned length never agreed within O(max_cv) and the job's length is a
              time (fio C(runtime), sysbench C(--time)); C(samples) then come from runs twice as long.
          type: int
          returned: with O(argv)
          sample: 1
        sample_device_io:
          description: C(device_io) of every measured run, in run order.
          type: list
          elements: dict
          returned: with O(argv)
          sample: [{read_bytes: 0, write_bytes: 268439552}]
        setup_commands:
          description: O(setup), as run.
          type: list
          elements: list
          returned: when O(setup) is given
          sample: [[sysbench, fileio, --file-total-size=8G, prepare]]
        cleanup_commands:
          description: O(cleanup), as run.
          type: list
          elements: list
          returned: when O(cleanup) is given
          sample: [[sysbench, fileio, --file-total-size=8G, cleanup]]
        job_file:
          description: O(job_file), the text of the fio job file.
          type: str
          returned: when O(job_file) is given
          sample: "[fio_rand_read]\nrw=randread\n"
        cache_fence:
          description:
            - The memory cgroup the commands ran in - C(bytes) (the cap), C(version) (1 or 2), C(cgroup) (its path)
              and C(peak_bytes) (the most memory it held, page cache included; null when the kernel does not say).
          type: dict
          returned: when O(cache_fence_bytes) is given
          sample: {bytes: 67108864, version: 1, cgroup: /sys/fs/cgroup/memory/diskproof-4242-1a2b3c4d, peak_bytes: 67006464}
        write_cache:
          description:
            - The disk's volatile write cache - C(before) and C(during) (true when on), C(restored) (read back equal to
              C(before) at the end) and C(method) (V(hdparm), V(sdparm) or V(nvme)).
          type: dict
          returned: when O(write_cache=off)
          sample: {before: true, during: false, restored: true, method: hdparm}
        commands:
          description: Every O(sweep) step's argv, in order.
          type: list
          elements: list
          returned: with O(sweep)
          sample: [[dd, if=/dev/sdb, of=/dev/null, bs=1048576, iflag=direct, skip=0, count=256]]
        raw_files:
          description: The evidence files written to O(keep_raw).
          type: list
          elements: str
          returned: when O(keep_raw) is given
          sample: [/var/tmp/diskproof/evidence/sdb/fio_rand_write.fio, /var/tmp/diskproof/evidence/sdb/fio_rand_write.1.out]
created:
  description: Paths created by this run (O(creates) when the tool created it); remove them when done.
  returned: always
  type: list
  elements: str
  sample: [/srv/diskproof/d0/diskproof.testfile]
removed_run_dirs:
  description:
    - The directories of O(remove_when_done) this call removed. Its presence says the call dealt with them - one
      gone already is not listed, one whose note did not prove it this run's was left alone and the task failed
      saying why.
  returned: when O(remove_when_done) is given and the job started (option checks passed)
  type: list
  elements: str
  sample: [/srv/diskproof/d0/diskproof-20261126T220000Z-1a2b3c]
restored:
  description:
    - What O(restore_when_done) did - the C(diskproof.fleet.quiesce) module's C(state=restored) result (C(msg),
      C(started), C(service_manager), C(write_cache), C(removed_job_files), C(recovered), C(units) on systemd).
      Its presence says the host is restored and the lock released (or there was nothing to restore).
  returned: when O(restore_when_done=true) and the restore succeeded
  type: dict
  sample: {msg: "restored: started cron; lock released", started: [cron], service_manager: sysv}
elapsed_s:
  description: Wall-clock seconds the module spent on the task (checks, setup, runs, cleanup, restores).
  returned: always
  type: float
  sample: 63.482911
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _results, _run


def main():
    started = time.monotonic()
    module = AnsibleModule(
        argument_spec=dict(_results.record_options(), **_run.run_options()),
        mutually_exclusive=[("argv", "sweep")],
        required_one_of=[("argv", "sweep")],
        required_if=_run.RUN_REQUIRED_IF,
        required_by=_run.RUN_REQUIRED_BY,
        supports_check_mode=True,
    )
    _results.finish(module, started, lambda: _run.run_task(module))


if __name__ == "__main__":
    main()
