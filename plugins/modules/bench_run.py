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
options:
  argv:
    description:
      - Command to run, as a list of arguments (no shell). The first element is looked up in E(PATH).
      - Exactly one of O(argv) and O(sweep) is required.
      - The module runs it with C(LANG=C) and C(LC_ALL=C) and parses stdout followed by stderr (dd prints its
        summary on stderr, fio its JSON on stdout). Give fio C(--output-format=json) or C(json+); its normal and
        terse output are read too, but their figures are rounded.
      - With C(bonnie++ -q) the CSV line (stdout) comes first and the text table (stderr) is only a cross-check.
        C(ioping -B) prints exact figures, its summary rounds them to 3 or 4 significant digits.
      - Not run in check mode.
    type: list
    elements: str
  sweep:
    description:
      - A ZCAV sweep - dd reads at increasing offsets of a disk, planned by the caller (each typically
        C(dd if=/dev/sdb of=/dev/null bs=... iflag=direct skip=... count=...)). Each step is run in order and parsed;
        the module returns ONE record (tool V(dd)) with C(metrics.zcav), a list of C(offset_bytes) and
        C(read_bytes_per_s) (that step's bytes / seconds), C(metrics.read_bytes_per_s) (total bytes / total
        seconds), C(bytes) and C(seconds) (totals), C(command) (the first step's argv), C(commands) (every step's
        argv), C(device_io) over the whole sweep and the C(started) and C(finished) of the whole sweep.
      - A failing step ends the sweep; the record then carries its error and the points measured before it.
      - Mutually exclusive with O(argv). O(repeats) does not apply.
    type: list
    elements: dict
    suboptions:
      offset_bytes:
        description: Where on the disk the step reads, in bytes (for the chart; the argv's C(skip=) does the seeking).
        type: int
        required: true
      argv:
        description: The dd command of this step, as a list of arguments (no shell).
        type: list
        elements: str
        required: true
  creates:
    description:
      - Path of a file the tool will create (the test file). The module refuses to run when it exists
        already, so a run never overwrites a file it did not create, and returns it in RV(created) when the
        run created it, so the caller can remove it.
      - Checked once, before the first run; with O(repeats) the later runs overwrite the file the first one created.
      - When the run fails (the tool fails or is killed, for example with C(No space left on device)), the module
        removes the incomplete file itself, so no later test reads a short file and its space is free again; the
        task message and the record's C(warnings) say so, and RV(created) is empty.
      - Only with O(argv).
    type: path
  drop_caches:
    description:
      - Before running, C(sync) and write V(3) to C(/proc/sys/vm/drop_caches) so reads come from the device,
        not the page cache. Fails the task when that is not possible (not root, read-only C(/proc/sys)).
      - With O(repeats), before every measured run (not before O(setup) or O(cleanup) commands). With O(sweep),
        once before the sweep.
    type: bool
    default: false
  settle_s:
    description:
      - Before each measured run (after the O(drop_caches) sync), wait until the disk has shown no I/O for this many
        seconds - its C(/sys/block/<device>/stat) counters unchanged and nothing in flight - so the sync's writes and
        the previous run's journal commits are not timed with the run.
      - At most 5 seconds (or this value, when larger); a disk that never went quiet is measured anyway and each
        record of that run gets a warning naming the requests seen while waiting.
      - V(0) does not wait. No wait when the device is unknown.
    type: float
    default: 0.3
  stall_timeout_s:
    description:
      - While a measured run goes, read the disk's C(/sys/block/<device>/stat) about once a second; when requests are
        in flight and none completed for this many seconds, stop the run (its whole process group, as a cancel
        does) - fio has no timeout for an I/O that never completes. The run's record gets an error that
        starts with C(stalled) and names the device, the seconds and the requests in flight, and any process still
        stuck in the kernel after SIGKILL; the task fails; the host's later tests still run.
      - V(0) turns the watch off. No watch when the device is unknown.
    type: float
    default: 120
  device_io:
    description:
      - Snapshot C(/sys/block/<device>/stat) right before and after the run and put the difference in
        C(device_io) as C(read_bytes) and C(write_bytes) (sector counters x 512). This shows what really
        reached the disk, for example that a buffered write without sync did not.
      - Defaults to V(true) (a sweep is measured as a whole). C(device_io) is null in the
        record when the device is unknown.
    type: bool
  repeats:
    description:
      - Run the measured command this many times, one after the other, and return the real run whose primary
        figure is the median (for an even count the lower-middle run); never an average.
      - The primary figure is the one the report judges (the collection's C(primary_metric)) - IOPS for random or
        small-block (at most 64 KiB) tests, else bytes per second.
      - The record gets C(samples) (the primary figure of every run the figure was chosen from, in run order), C(cv)
        (sample standard deviation / mean, null below 2 samples), C(runs), C(sample_device_io) (C(device_io) of each
        run), and C(runs_total), C(earlier_samples) and C(length_factor) (see O(max_repeats)).
      - A run that fails stops the repeats; the task then returns that run's records (its sample is null), as a
        single failed run does.
      - When the tool prints several records per run (fio with several jobs), repeats apply per record index - each
        index gets its own median run. All runs must print the same number of records.
      - Not with O(sweep) (more than 1).
      - Only with O(argv).
    type: int
    default: 1
  max_repeats:
    description:
      - When the coefficient of variation of the samples of the first O(repeats) runs exceeds O(max_cv), run
        more, one at a time, until the last O(repeats) runs agree (their coefficient of variation at most O(max_cv))
        or this many runs were made. The figure is then the median of those last runs; the earlier ones are set
        aside (C(earlier_samples), a warning in the record).
      - When no O(repeats) runs in a row agreed by then and the job's length is a time (a fio job file with
        C(time_based=1) and one C(runtime=), sysbench C(--time=)), the job is measured once more with O(repeats)
        runs twice as long (C(length_factor) 2), and the figure comes from those. dd, bonnie++ and ioping are sized
        by the cache rules, not by time, so they get the extra runs only.
      - Defaults to O(repeats) (no extra runs). Must be at least O(repeats).
      - Only with O(argv).
    type: int
  max_cv:
    description:
      - Largest coefficient of variation (sample standard deviation / mean) of the samples at which no more runs are
        made (see O(max_repeats)). The report's C(unstable) verdict uses the same measure.
      - Only with O(argv).
    type: float
    default: 0.05
  min_device_fraction:
    description:
      - After each measured run, the device counters (C(device_io)) must account for at least this share of the
        bytes the tool says it moved - written bytes for a write, read bytes for a read, both for a mixed test - as
        the report's C(cache_bypass) check requires (the report itself uses 0.95).
      - When they do not, the reason is added to the record's C(warnings) and shown as a task warning; the report
        will judge the record C(invalid). The task does not fail. Records without counters are not checked.
    type: float
    default: 0.95
  setup:
    description:
      - Commands (each a list of arguments, no shell) run once, in order, before the first measured run, after
        O(workdir) was created and the write cache switched off, inside the cache fence when there is one. For
        example C(sysbench fileio ... prepare).
      - A failing setup command (non-zero exit) fails the task naming the command, its exit code and its last
        line of error output; nothing is measured, and O(cleanup) still runs.
      - Returned in the records as C(setup_commands).
    type: list
    elements: raw
  cleanup:
    description:
      - Commands (each a list of arguments, no shell) always run at the end, in order, after the measured runs -
        also after a failure - outside the cache fence and before O(workdir) is removed. For example
        C(sysbench fileio ... cleanup).
      - A failing cleanup command is a warning (task warning and the records' C(warnings)), not a failure.
      - Returned in the records as C(cleanup_commands).
    type: list
    elements: raw
  chdir:
    description:
      - Working directory of every command (O(setup), the measured runs, O(cleanup)). sysbench fileio creates its
        test files in it.
      - Must exist, unless it is O(workdir) or inside it (then it must exist once O(workdir) was created).
    type: path
  workdir:
    description:
      - A directory the module creates (mode 0700) before anything runs and always removes, with everything in it,
        at the end (after O(cleanup)), whatever happened.
      - It must not exist yet (the module refuses a directory it did not create) and its parent must exist.
      - Removal never follows symlinks out of it and leaves directories of other filesystems mounted inside it
        alone (with a warning).
    type: path
  workdir_owner:
    description:
      - User name the module gives O(workdir) to (its primary group too), for tools that drop privileges, such as
        C(bonnie++ -u nobody).
      - Only with O(workdir).
    type: str
  run_dir:
    description:
      - The run directory M(diskproof.fleet.bench_plan) created for this job's target, as its plan returns it in each
        job (C(run_dir)); the benchmark role passes it on. Without it none of the checks below are made.
      - Before anything runs and again right before each tool run (every measured run, sweep step and O(setup)
        command), the module walks O(run_dir.resolved) from C(/) one component at a time with C(O_NOFOLLOW) and
        refuses the job when any component is now a symlink, when the directory is not the one the plan created
        (O(run_dir.device), O(run_dir.inode)), is no longer owned by root or is writable by others, or when
        O(run_dir.path) (as the tools open it, by name) leads anywhere else. O(creates) must not exist in it before
        the first run (checked through the directory's descriptor, so a symlink counts) and be a regular file later.
      - O(workdir) directly inside it is created relative to the verified directory descriptor; the partial
        O(creates) file is removed through it. dd, fio and sysbench open their files by path themselves; for them
        the check right before the run is the protection (a window of milliseconds remains; docs/benchmarks.md).
    type: dict
    suboptions:
      path:
        description: The run directory as the jobs name it (the target path as given, plus C(diskproof-<run id>)).
        type: path
        required: true
      resolved:
        description:
          - The same directory with the symlinks of the target path resolved once by the plan. Default O(run_dir.path).
        type: path
      device:
        description: C(st_dev) of the run directory when the plan created it.
        type: int
        required: true
      inode:
        description: C(st_ino) of the run directory when the plan created it.
        type: int
        required: true
  job_file:
    description:
      - The text of a fio job file. The module writes it to a private temporary file (outside the target
        directory), checks it with C(<argv[0]> --parse-only --clocksource=clock_gettime <file>) - fio's own
        message fails the task when fio rejects it - and then runs O(argv) with the file appended, for each measured
        run. The file is removed however the step ends, except by SIGKILL (see O(state_dir)). The check names a
        clock source only to skip fio's start-up clock test; the measured runs keep fio's own choice.
      - The records keep the text as C(job_file); their C(command) is the argv actually run (with the temporary path).
      - Only with O(argv).
    type: str
  cache_fence_bytes:
    description:
      - Run O(setup) and the measured runs inside a memory cgroup capped at this many bytes, so the page cache the
        test can use is bounded (a host with much more memory than the test size otherwise caches the whole test).
        The cap counts the commands' own memory too, so leave them room.
      - cgroup v2 (C(/sys/fs/cgroup/cgroup.controllers) exists) - C(/sys/fs/cgroup/diskproof-<pid>-<hex>) with
        C(memory.max); the root's C(cgroup.subtree_control) must list C(memory), else the task fails before
        anything runs. cgroup v1 - C(diskproof-<pid>-<hex>) with C(memory.limit_in_bytes) under the module's own
        memory cgroup (C(/sys/fs/cgroup/memory/diskproof-<pid>-<hex>) when that is the root), so limits that already
        apply to the module still apply.
      - The module moves itself into the fence before starting the commands (they inherit it), back afterwards, and
        always removes the fence (retrying briefly while it is busy). Needs root.
      - The records get C(cache_fence) - C(bytes), C(version) (1 or 2), C(cgroup) (its path) and C(peak_bytes)
        (v1 C(memory.max_usage_in_bytes), v2 C(memory.peak), null when the kernel does not report it).
    type: int
  write_cache:
    description:
      - V(off) switches the volatile write cache of the whole disk C(target.device) off before O(setup) and the first
        run, and always restores the original setting at the end, then reads it back to verify.
      - The original setting is written to C(write-cache.json) in O(state_dir) before the first toggle, and only when
        none is recorded for that disk yet - after a step killed with the cache off, the record still holds the real
        original, which this step then restores. It is removed once the restore reads back right; what a killed step
        left there, the C(diskproof.fleet.quiesce) module (C(playbooks/restore.yml), or the next run's quiesce) puts
        back. Needs O(state_dir).
      - ATA/SATA disks (C(/sys/block/<disk>/device/vendor) V(ATA)) - C(hdparm -W) / C(hdparm -W0) / C(hdparm -W1).
        SCSI/SAS disks - C(sdparm --get=WCE) / C(sdparm --clear=WCE) / C(sdparm --set=WCE) (current values only,
        never C(--save)). NVMe namespaces - C(nvme get-feature <dev> -f 6) / C(nvme set-feature <dev> -f 6 --value=0)
        (or C(--value=1)).
      - A disk without such a control (loop, virtio, Xen, md, device-mapper, RAM disks), a missing tool, a setting
        that cannot be changed or a disk that still reports the cache on after switching it off fail the task before
        anything is measured. A setting that cannot be restored fails the task with the command to restore it.
      - C(/sys/block/<disk>/queue/write_cache) is never used - it changes only what the kernel believes, so
        fsync would stop flushing a cache the disk still has.
      - The records get C(write_cache) - C(before) and C(during) (true when the cache was on), C(restored) (the
        read-back matches C(before)) and C(method) (V(hdparm), V(sdparm) or V(nvme)).
    type: str
    choices: [unchanged, "off"]
    default: unchanged
  state_dir:
    description:
      - The host's quiesce state directory (the C(diskproof.fleet.quiesce) module's O(state_dir); the benchmark role
        passes the one the quiesce role published). Checked like the quiesce module checks it (owned by this user,
        mode without group/world write, no symlink) and created with mode 0700 when O(write_cache=off) needs it.
      - Holds the original write-cache settings (O(write_cache)) and the lock O(lock_run_id) renews. When it exists,
        the temporary O(job_file) is written there too (C(fio-job.PID-START.RANDOM.fio), else in the temporary
        directory) - a step killed with SIGKILL leaves its file there, and the next fio step or the quiesce module's
        C(state=restored) removes it.
    type: path
  lock_run_id:
    description:
      - The run id holding the quiesce lock in O(state_dir). Before the job the module checks that this run still holds
        the lock (else it fails - another run took the host over) and renews its lease (C(expires) = now + the lock's
        C(lease_s)), naming itself as the lock's host process, so the lock counts as held while the job runs however
        long it takes; it renews the lease again when the job ends.
    type: str
  keep_raw:
    description:
      - An existing directory where the module writes the evidence, byte for byte as parsed or run -
        C(<test>.<run number>.out) (stdout then stderr of each measured run or sweep step, from 1),
        C(<test>.fio) (the O(job_file)), C(<test>.setup.<n>.out) and C(<test>.cleanup.<n>.out).
        C(<test>) is O(test) (or the tool name) with anything but letters, digits and C(._+-) replaced by C(_).
      - The module refuses to run when the directory already holds such files of the same test, so evidence is never
        overwritten; give each target and run its own directory.
      - The records get C(raw_files), the paths written.
    type: path
  remove_on_cancel:
    description:
      - Run directories of this run (M(diskproof.fleet.bench_plan)'s C(<target>/diskproof-<run id>), its
        C(run_dirs)) that the module removes, with everything in them, when the job is cancelled - SIGTERM, SIGINT
        or SIGHUP to the module, or the controller going away (ansible-playbook cancelled or killed, its ssh
        connection closed) - because the play's cleanup never runs after a cancel. The benchmark role passes its
        plan's C(run_dirs).
      - A directory is removed only when its C(.diskproof-run) note proves it is this run's - a directory (not a
        symlink) named C(diskproof-<id>) whose note names run C(<id>) and this host; else it is left alone and the
        task says why. Removal never follows symlinks and leaves filesystems mounted inside alone.
      - Never used when the job ends normally or fails on its own (O(remove_when_done), or the role's cleanup,
        removes the directories then).
    type: list
    elements: path
  remove_when_done:
    description:
      - Run directories of this run that the module removes, with everything in them, when the job ends - done,
        failed or cancelled - after its own teardown. The benchmark role passes its plan's C(run_dirs) with the
        plan's last test, so that no separate cleanup task (a module call per host) is needed; its cleanup task
        removes them only when that test never got this far (no C(removed_run_dirs) in its result).
      - The same proof as for O(remove_on_cancel) - a directory whose C(.diskproof-run) note does not prove it this
        run's and this host's is left alone, and the task fails saying why.
      - Not used when the option checks fail before the job starts.
    type: list
    elements: path
  restore_when_done:
    description:
      - Restore the host when the job ends - done, failed or cancelled - after the teardown and O(remove_when_done),
        exactly as the C(diskproof.fleet.quiesce) module's C(state=restored) does for run O(lock_run_id) - start the
        services its state file records as running, put back the drives' recorded write-cache settings, remove dead
        steps' job files, release the lock. The result's C(restored) says what it did.
      - The benchmark role sets it on the plan's last test with C(benchmark_restore_when_done=true), so that the
        restore task (a module call per host) can be skipped; playbooks/validate.yml does that. Use it only on a
        step after which nothing else of the run needs the host quiesced.
      - When the restore fails (a service that does not start, a lock another run holds) the task fails saying why,
        the state file stays, and the quiesce role's restore task runs as without this option. Not used when the
        option checks fail before the job starts.
    type: bool
    default: false
  disk_state:
    description:
      - Read the state of the target's disk (O(target) C(device)) before the setup and measured runs and after them,
        and put both on every record as C(disk_state) - the queue settings (scheduler, nr_requests, queue_depth,
        read-ahead, block sizes), the write cache mode, the alignment of the partition holding the target, the PCIe
        link against what the disk and its upstream port can do, the SATA link, the NVMe power state and APST
        (C(nvme get-feature)), and the health counters (C(smartctl -j -x), C(nvme smart-log)).
      - A source that is missing is null, with a reason in the reading's C(unknown) list; a reading never fails the
        task. No after-reading when the job was cancelled.
    type: bool
    default: false
  sys_root:
    description:
      - The root prefix O(disk_state) reads C(/sys) under (C(<sys_root>/sys/block/...)); symlinks are followed
        inside it only. Another root than C(/) replays a captured tree - then C(nvme get-feature) is not asked (the
        tree's disk need not be the host's); the health is still read from C(/dev/<disk>).
    type: path
    default: /
  lock_controller:
    description:
      - The controller identity of the run holding the lock (the C(controller) of the quiesce role's public fact
        C(quiesce_run_state), as the lock records it). Needed by O(restore_when_done) - a lock with the same run id
        but another controller run is not this run's, and is not restored.
    type: dict
author:
  - diskproof maintainers (@diskproof)
extends_documentation_fragment:
  - diskproof.fleet.bench_records
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
        disk_state:
          description:
            - The disk's state read C(before) the setup and measured runs and C(after) them (null when not read, for
              instance after a cancel). Each reading has C(disk), C(model), C(firmware), C(rotational), C(scheduler),
              C(nr_requests), C(queue_depth), C(read_ahead_kb), C(max_sectors_kb), C(logical_block_size),
              C(physical_block_size), C(write_cache) (V(write back) or V(write through)), C(partition) (C(name),
              C(start_bytes), C(alignment_offset), C(aligned)), C(pcie) (C(function), C(speed_gts), C(width),
              C(max_speed_gts), C(max_width), C(port), C(port_max_speed_gts), C(port_max_width), C(degraded) - below
              the lower of both ends' maximum - and C(text)), C(sata) (C(speed_gbps), C(max_gbps), C(degraded), C(text)),
              C(nvme_power) (C(power_state), C(apst)), C(health) (the health counters) and C(unknown) (why a field
              is null).
            - C(after) holds only what changed since C(before) (of C(health) only the changed counters; an empty
              dict when nothing changed), so a fleet's records do not carry each disk's state twice.
          type: dict
          returned: when O(disk_state=true)
          sample: {before: {disk: nvme0n1, scheduler: none, nr_requests: 1023, pcie: {function: "0000:01:00.0",
                   speed_gts: 8.0, width: 4, max_speed_gts: 8.0, max_width: 4, port: "0000:00:02.1",
                   port_max_speed_gts: 8.0, port_max_width: 8, degraded: false,
                   text: "PCIe link x4 at 8 GT/s, capable x4 at 8 GT/s"}, unknown: []}, after: {health: {temperature_c: 41}}}
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
