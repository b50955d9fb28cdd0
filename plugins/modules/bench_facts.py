#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_facts
short_description: Run or parse a dd, fio, sysbench, bonnie++ or ioping benchmark and return exact result records
version_added: 0.1.0
description:
  - Turns the output of C(dd), C(fio), C(sysbench) (fileio), C(bonnie++) or C(ioping) into result records (schema 1,
    see C(docs/architecture.md)) with every figure in SI base units - bytes, bytes per second, operations per
    second, nanoseconds, seconds. C(docs/parsers.md) lists every output format understood and its units.
  - With O(argv) the module runs the tool itself (no shell, C(LANG=C LC_ALL=C)), records start and end times, the
    exit code and the command, and can sync and drop the page cache first and measure what reached the block
    device (O(device_io)).
  - With O(content) or O(src) it only parses text that was captured before; nothing is run.
  - As the job runner of the benchmark role it can also repeat a run until the runs agree (O(repeats),
    O(max_repeats), O(max_cv)) and return the real median run, run O(setup) and O(cleanup) commands around the
    measured runs, create and remove a work directory (O(workdir)), run a fio job file (O(job_file)), bound the
    page cache the test can use (O(cache_fence_bytes)), switch the disk's volatile write cache off for the test
    (O(write_cache)), run a ZCAV read sweep (O(sweep)), warn when the device counters do not back the tool's
    bytes (O(min_device_fraction)) and keep the raw output as evidence (O(keep_raw)). Whatever fails, the module
    runs O(cleanup), leaves and removes the cache fence, restores the write cache and removes the work directory
    and the job file before it returns.
  - dd rates are the byte count divided by the elapsed seconds of dd's summary line, never the rounded rate dd
    prints. GNU coreutils (any locale, decimal commas included), busybox (binary units), BSD/macOS and
    coreutils 5 output are understood; several runs in one text give one record each; C(status=progress)
    updates are never taken as the result.
  - fio output is best JSON (C(--output-format=json) or C(json+)), fio 2.x or 3.x, including C(--client) runs
    (one record per client; the C(All clients) aggregate is skipped). Without JSON, fio's normal (human-readable,
    fio 2.0 to 3.x) and terse (C(--minimal), versions 2 to 5) output are read too, with a warning that their
    figures are rounded (bytes per second = the printed io / runtime). One record per job. Latency figures are
    the completion latency (C(clat)) mean, min, p50, p95, p99, p99.9, max and standard deviation in ns; when fio
    reports no completion latency the mean, min, max and standard deviation of the total latency (C(lat)) are
    used, without percentiles, and a warning says so.
  - sysbench fileio output of 0.4.x, 0.5 and 1.0.x, C(run) and C(prepare), one record per run (several runs
    appended to one log give one record each). reads/s and writes/s are the read and write IOPS, fsyncs/s (0.4 and
    0.5 C(Other) operations) C(fsyncs_per_s); bytes per second are operations per second times the block size
    (sysbench 0.4 C(Mb/sec) is MiB/s); latency is the min, mean (avg), max and the percentile sysbench prints
    (C(--percentile), 95 by default) when it is 50, 95, 99 or 99.9.
    A C(FATAL) run is a record with C(error) set.
  - bonnie++ output, CSV lines of 1.03, 1.96/1.97 and format 1.98 (bonnie++ 1.98 to 2.00a) or, without CSV, the
    text table (also as printed by C(bon_csv2txt)); one record per run. Block output is the write rate, block input
    the read rate and random seeks the read IOPS; the latencies are bonnie++'s maximum latency of those tests.
    C(+++++) (too fast to measure) gives null and a warning, never a number; K is 1024 bytes.
  - ioping output of 0.x and 1.x, the summary (one record per statistics block) or the raw C(-B) line; IOPS and
    bytes per second go to the direction ioping tested, latency min, mean (avg), max and stdev (mdev) come from
    C(min/avg/max/mdev).
  - Anything the parser cannot read exactly (unknown unit, truncated or malformed JSON, no dd summary, a sysbench
    result section without its figures) fails the task with a message naming the tool, what was expected and the
    offending line. No figure is guessed.
author:
  - diskproof maintainers (@diskproof)
options:
  tool:
    description:
      - Which tool produced the output.
      - V(auto) takes the tool from the basename of O(argv[0]) when it is C(dd), C(fio), C(sysbench),
        C(bonnie++) or C(ioping), else recognises the output itself.
      - V(bonnie) is bonnie++ (and C(bon_csv2txt) output).
    type: str
    choices: [auto, dd, fio, sysbench, bonnie, ioping]
    default: auto
  content:
    description:
      - Raw output to parse (stdout and stderr of the tool as captured). Nothing is run.
      - Exactly one of O(content), O(src), O(argv) and O(sweep) is required.
    type: str
  src:
    description:
      - Path on the managed host of a file holding raw tool output to parse. Nothing is run.
      - It must be a regular file (a symlink to one is fine) of at most O(src_max_bytes); a directory, FIFO,
        device or socket is refused before it is read.
    type: path
  src_max_bytes:
    description:
      - Largest O(src) file read, in bytes (default 64 MiB); a larger file is refused, never read in part.
      - Only used with O(src).
    type: int
    default: 67108864
  argv:
    description:
      - Command to run, as a list of arguments (no shell). The first element is looked up in E(PATH).
      - Exactly one of O(content), O(src), O(argv) and O(sweep) is required.
      - The module runs it with C(LANG=C) and C(LC_ALL=C) and parses stdout followed by stderr (dd prints its
        summary on stderr, fio its JSON on stdout). Give fio C(--output-format=json) or C(json+); its normal and
        terse output are read too, but their figures are rounded.
      - With C(bonnie++ -q) the CSV line (stdout) comes first and the text table (stderr) is only a cross-check.
        C(ioping -B) prints exact figures, its summary rounds them to 3 or 4 significant digits.
      - Not run in check mode.
    type: list
    elements: str
  test:
    description:
      - Test id put into every record, for example V(dd_seq_write). Defaults to the tool name.
    type: str
  target:
    description:
      - What was tested, copied into every record.
      - The module adds C(device), the whole-disk kernel name (V(sdb), V(nvme0n1), V(loop3)) of the block
        device holding C(path), unless the dict already has a C(device) key. C(device) is null when it cannot
        be known (no C(path), tmpfs, overlay, network filesystems).
      - A raw target (C(kind=raw)) with a C(grant) (the discover role's, passed on by the plan) is checked right
        before the job - the disks' serial, WWN, disk sequence number, size and loop identity read again from sysfs
        and C(/dev/disk/by-id); for C(class=raw_write) also no mount (C(/proc/self/mountinfo)), partition, holder or
        signature (C(wipefs -n)), and the device is held open with C(O_EXCL) for the whole job. Anything changed
        fails the job before it runs, naming what changed.
    type: dict
  params:
    description:
      - Test parameters (block size, size, direct, sync, ...), copied into every record untouched.
    type: dict
  direction:
    description:
      - Which rate a dd run measures; dd's own output does not say.
      - V(read) fills C(read_bytes_per_s), V(write) fills C(write_bytes_per_s), V(copy) fills both.
      - When not set it is taken from the dd operands in O(argv) - C(of=/dev/null) is a read, C(if=/dev/zero) or
        C(if=/dev/urandom) is a write, file to file is a copy - else from the dd command a pasted shell transcript
        shows before each run's output (with a warning naming the line). A direction given here wins; when the
        transcript's command says otherwise, a warning names both.
      - When it is still unknown the dd rate is kept only as C(metrics.transfer_bytes_per_s), with a warning; the
        report shows it but does not judge it until the output is parsed again with this option.
      - For ioping, only when its output does not say it - the raw C(-B) line, and 0.x summaries without request
        lines. Without it (and without C(-W) or C(-G) in O(argv)) ioping is taken to have read, with a warning.
      - Ignored for fio, sysbench and bonnie++, which say which direction each figure is.
    type: str
    choices: [read, write, copy]
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
      - Only with O(argv) or O(sweep).
    type: bool
    default: false
  device_io:
    description:
      - Snapshot C(/sys/block/<device>/stat) right before and after the run and put the difference in
        C(device_io) as C(read_bytes) and C(write_bytes) (sector counters x 512). This shows what really
        reached the disk, for example that a buffered write without sync did not.
      - Defaults to V(true) with O(argv) or O(sweep) (a sweep is measured as a whole). C(device_io) is null in the
        record when the device is unknown.
      - Only with O(argv) or O(sweep).
    type: bool
  fail_on_error:
    description:
      - Fail the task when the tool failed - a non-zero exit code or a record with C(error) set. The message
        names the tool, the command, the exit code and the tool's own error line; the records are still
        returned in RV(ansible_facts.diskproof_results).
      - With V(false) the task succeeds and the failure is only in the records.
      - Failures of the job itself (a failing O(setup) command, a O(job_file) fio rejects, a write cache that cannot
        be switched off or restored, an unusable O(workdir)) always fail the task.
      - A failure naming C(No space left on device) (ENOSPC) on a directory target (O(target) C(path)) adds what it
        means and what to do to the message - the filesystem, its free space now, and that the space went after the
        plan checked it.
    type: bool
    default: true
  repeats:
    description:
      - Run the measured command this many times, one after the other, and return the real run whose primary
        figure is the median (for an even count the lower-middle run); never an average.
      - The primary figure is the one the report judges (C(primary_metric) of the collection's
        C(module_utils/_aggregate.py)) - IOPS for random or small-block (at most 64 KiB) tests, else bytes per second.
      - The record gets C(samples) (the primary figure of every run, in run order), C(cv) (sample standard deviation
        / mean, null below 2 samples), C(runs) and C(sample_device_io) (C(device_io) of each run).
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
        more, one at a time, until it does not or this many runs were made.
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
      - Only with O(argv) or O(sweep).
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
      - Only with O(argv) or O(sweep).
    type: list
    elements: raw
  cleanup:
    description:
      - Commands (each a list of arguments, no shell) always run at the end, in order, after the measured runs -
        also after a failure - outside the cache fence and before O(workdir) is removed. For example
        C(sysbench fileio ... cleanup).
      - A failing cleanup command is a warning (task warning and the records' C(warnings)), not a failure.
      - Returned in the records as C(cleanup_commands).
      - Only with O(argv) or O(sweep).
    type: list
    elements: raw
  chdir:
    description:
      - Working directory of every command (O(setup), the measured runs, O(cleanup)). sysbench fileio creates its
        test files in it.
      - Must exist, unless it is O(workdir) or inside it (then it must exist once O(workdir) was created).
      - Only with O(argv) or O(sweep).
    type: path
  workdir:
    description:
      - A directory the module creates (mode 0700) before anything runs and always removes, with everything in it,
        at the end (after O(cleanup)), whatever happened.
      - It must not exist yet (the module refuses a directory it did not create) and its parent must exist.
      - Removal never follows symlinks out of it and leaves directories of other filesystems mounted inside it
        alone (with a warning).
      - Only with O(argv) or O(sweep).
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
      - Only with O(argv) or O(sweep).
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
        directory), checks it with C(<argv[0]> --parse-only <file>) - fio's own message fails the task when fio
        rejects it - and then runs O(argv) with the file appended, for each measured run. The file is always removed.
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
      - Only with O(argv) or O(sweep).
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
      - Only with O(argv) or O(sweep).
    type: str
    choices: [unchanged, "off"]
    default: unchanged
  state_dir:
    description:
      - The host's quiesce state directory (the C(diskproof.fleet.quiesce) module's O(state_dir); the benchmark role
        passes the one the quiesce role published). Checked like the quiesce module checks it (owned by this user,
        mode without group/world write, no symlink) and created with mode 0700 when O(write_cache=off) needs it.
      - Holds the original write-cache settings (O(write_cache)) and the lock O(lock_run_id) renews.
    type: path
  lock_run_id:
    description:
      - The run id holding the quiesce lock in O(state_dir). Before the job the module checks that this run still holds
        the lock (else it fails - another run took the host over) and renews its lease (C(expires) = now + the lock's
        C(lease_s)), naming itself as the lock's host process, so the lock counts as held while the job runs however
        long it takes; it renews the lease again when the job ends.
    type: str
  sweep:
    description:
      - A ZCAV sweep - dd reads at increasing offsets of a disk, planned by the caller (each typically
        C(dd if=/dev/sdb of=/dev/null bs=... iflag=direct skip=... count=...)). Each step is run in order and parsed;
        the module returns ONE record (tool V(dd)) with C(metrics.zcav), a list of C(offset_bytes) and
        C(read_bytes_per_s) (that step's bytes / seconds), C(metrics.read_bytes_per_s) (total bytes / total
        seconds), C(bytes) and C(seconds) (totals), C(command) (the first step's argv), C(commands) (every step's
        argv), C(device_io) over the whole sweep and the C(started) and C(finished) of the whole sweep.
      - A failing step ends the sweep; the record then carries its error and the points measured before it.
      - Mutually exclusive with O(content), O(src) and O(argv). O(repeats) does not apply.
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
  keep_raw:
    description:
      - An existing directory where the module writes the evidence, byte for byte as parsed or run -
        C(<test>.<run number>.out) (stdout then stderr of each measured run or sweep step, from 1),
        C(<test>.fio) (the O(job_file)), C(<test>.setup.<n>.out) and C(<test>.cleanup.<n>.out).
        C(<test>) is O(test) (or the tool name) with anything but letters, digits and C(._+-) replaced by C(_).
      - The module refuses to run when the directory already holds such files of the same test, so evidence is never
        overwritten; give each target and run its own directory.
      - The records get C(raw_files), the paths written.
      - Only with O(argv) or O(sweep).
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
      - Never used when the job ends normally or fails on its own (the role's cleanup removes the directories then).
      - Only with O(argv) or O(sweep).
    type: list
    elements: path
extends_documentation_fragment:
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
attributes:
  check_mode:
    support: partial
    details:
      - Parsing (O(content), O(src)) works in check mode.
      - With O(argv) or O(sweep) nothing is run or created in check mode; an empty list of results is returned.
  facts:
    support: full
notes:
  - The result is C(changed=true) whenever O(argv) ran the tool, like M(ansible.builtin.command) - a benchmark
    writes test data and may drop caches, and the module cannot know what else the command changed. Parsing
    only is always C(changed=false). Set C(changed_when) in the task when a read-only benchmark should not
    count as a change.
  - O(device_io) and the C(device) of O(target) come from Linux C(/sys); elsewhere they are null.
  - Every command (O(setup), the measured runs, O(cleanup), write-cache tools) runs in a process group of its own
    and is told by the kernel to die with the module (C(PR_SET_PDEATHSIG)). On SIGTERM, SIGINT or SIGHUP to the
    module, and when the controller goes away (the module's stdout, the pipe to sshd, loses its reader - what an
    AWX/AAP cancel of ansible-playbook does to a running module, which gets no signal), the whole group gets
    SIGTERM, one second later SIGKILL, and is reaped; then O(cleanup) runs and the fence, write cache and work
    directory are restored and removed as after any failure, and O(remove_on_cancel) is removed.
seealso:
  - name: diskproof result records (schema 1)
    description: The record layout every result follows, in C(docs/architecture.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/architecture.md
"""

EXAMPLES = r"""
- name: Sequential write with dd, measured on the device (the module runs dd itself)
  diskproof.fleet.bench_facts:
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
  diskproof.fleet.bench_facts:
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

- name: Parse dd output captured earlier (nothing is run)
  diskproof.fleet.bench_facts:
    src: /var/tmp/diskproof/dd_seq_write.log
    tool: dd
    direction: write
    test: dd_seq_write

- name: Parse fio JSON held in a variable, keep going when a job failed
  diskproof.fleet.bench_facts:
    content: "{{ fio_run.stdout }}"
    tool: fio
    fail_on_error: false

- name: Show the write rate in MB/s (10^6 bytes per second)
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.write_bytes_per_s / 1e6) | round(1) }} MB/s"

- name: Parse a sysbench fileio log holding the prepare step and three runs (one record each)
  diskproof.fleet.bench_facts:
    src: /var/tmp/diskproof/sysbench_rndrd.log
    tool: sysbench
    test: sysbench_rand_read

- name: bonnie++ as an unprivileged user, CSV on stdout (-q) and the text table on stderr
  diskproof.fleet.bench_facts:
    argv: [bonnie++, -q, -d, /srv/diskproof/d0, -u, nobody, -s, "2048", -r, "1024", -n, "0", -m, "{{ inventory_hostname }}"]
    test: bonnie
    target:
      path: /srv/diskproof/d0
  become: true

- name: ioping, 20 direct reads, raw (exact) statistics
  diskproof.fleet.bench_facts:
    argv: [ioping, -B, -D, -c, "20", -i, "0.1", /srv/diskproof/d0]
    test: ioping_read_latency
    target:
      path: /srv/diskproof/d0

- name: Show the mean ioping read latency in microseconds
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.latency_ns.read.mean / 1000) | round(1) }} us"

- name: fio 4k random writes, 3 to 6 runs until they agree within 5 %, write cache off, page cache fenced at 1 GiB
  diskproof.fleet.bench_facts:
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
  diskproof.fleet.bench_facts:
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
  diskproof.fleet.bench_facts:
    argv: [bonnie++, -q, -d, /srv/diskproof/d0/bonnie, -u, nobody, -s, "2048", -r, "1024", -n, "0"]
    workdir: /srv/diskproof/d0/bonnie
    workdir_owner: nobody
    test: bonnie
    target:
      path: /srv/diskproof/d0
  become: true

- name: ZCAV read sweep of a whole disk, one record with a point per offset
  diskproof.fleet.bench_facts:
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
        - One result record per dd run or fio job found in the output, in order (schema 1). Empty for an
          O(argv) run in check mode.
        - Returned also when the task fails because the tool failed (O(fail_on_error)).
      returned: always
      type: list
      elements: dict
      contains:
        schema:
          description: Record layout version.
          type: int
          returned: always
          sample: 1
        test:
          description: O(test), or the tool name.
          type: str
          returned: always
          sample: dd_seq_write
        tool:
          description: V(dd), V(fio), V(sysbench), V(bonnie) (bonnie++) or V(ioping).
          type: str
          returned: always
          sample: dd
        tool_version:
          description:
            - Version from the output (fio, sysbench banner, bonnie++ CSV or text table) or from C(<tool> --version)
              (C(ioping -v)) after an O(argv) run; null when unknown.
          type: str
          returned: always
          sample: "9.1"
        target:
          description: O(target) with C(device) added.
          type: dict
          returned: always
          sample: {path: /srv/diskproof/d0, device: sdb}
        params:
          description: O(params), untouched.
          type: dict
          returned: always
          sample: {block_size: 1048576, size_bytes: 268435456, direct: false, sync: fdatasync}
        job:
          description:
            - Which job of the output this record is - C(name) (fio job name, sysbench test mode such as V(rndrd) or
              V(prepare), bonnie++ machine name, ioping target), C(index) (position in the output, from 0),
              C(groupid) (fio), C(client) (fio C(--client) server as host:port). Null fields for dd except C(index).
          type: dict
          returned: always
          sample: {name: null, index: 0, groupid: null, client: null}
        metrics:
          description:
            - C(read_bytes_per_s), C(write_bytes_per_s) (bytes/s), C(read_iops), C(write_iops) (ops/s),
              C(fsyncs_per_s) (fio C(fsync)/C(fdatasync) calls, sysbench fsyncs, per second) and C(latency_ns.read),
              C(latency_ns.write) (each null or a dict of C(mean), C(min), C(p50), C(p95), C(p99), C(p99_9), C(max),
              C(stdev) in ns, in that order; any of them null when the tool does not print it).
            - fio fills them all from C(clat) (C(stdev) is fio's C(stddev)); sysbench C(min), C(mean), C(max) and the
              one percentile it prints (C(stdev) null); ioping C(min), C(mean), C(max) and C(stdev) (its C(mdev)).
            - bonnie++ - C(write_bytes_per_s) is block output, C(read_bytes_per_s) block input, C(read_iops) random
              seeks, the latencies are C(max) only (bonnie++ reports the worst latency of each test).
            - A direction the test did not exercise is null, and so is a figure the tool could not measure
              (bonnie++ C(+++++)).
            - A O(sweep) record also has C(zcav), a list of C(offset_bytes) and C(read_bytes_per_s), one per step.
            - A dd record also has C(transfer_bytes_per_s), bytes / seconds whatever the direction (null when seconds
              is 0), so the figure is kept even when O(direction) is unknown.
          type: dict
          returned: always
          sample:
            read_bytes_per_s: null
            write_bytes_per_s: 48996732.035687685
            read_iops: null
            write_iops: null
            fsyncs_per_s: null
            latency_ns: {read: null, write: null}
        bytes:
          description:
            - Bytes the tool says it moved (dd summary line; fio sum of C(io_bytes) over directions; sysbench 0.4/0.5
              operations x block size, prepare its C(bytes written); ioping the size of the counted requests).
            - Null when the tool does not say (sysbench 1.0 runs, bonnie++).
          type: int
          returned: always
          sample: 134217728
        seconds:
          description:
            - The tool's own elapsed time (dd summary line; fio longest direction runtime; sysbench C(total time);
              ioping 1.x the time of the counted requests, 0.x its run time). Null for bonnie++.
          type: float
          returned: always
          sample: 2.73932
        started:
          description: ISO 8601 UTC time the module started the tool; null when parsing only.
          type: str
          returned: always
          sample: "2026-11-22T00:00:00Z"
        finished:
          description: ISO 8601 UTC time the tool exited; null when parsing only.
          type: str
          returned: always
          sample: "2026-11-22T00:00:03Z"
        command:
          description:
            - O(argv) as given (with the temporary O(job_file) path appended); the first step's argv of a O(sweep);
              null when parsing only.
          type: list
          elements: str
          returned: always
          sample: [dd, if=/dev/zero, of=/srv/diskproof/d0/diskproof.testfile, bs=1048576, count=128, conv=fdatasync]
        exit_code:
          description: Exit code of the tool; null when parsing only.
          type: int
          returned: always
          sample: 0
        raw_sha256:
          description: SHA-256 of the exact raw text parsed (stdout followed by stderr for O(argv) runs).
          type: str
          returned: always
          sample: 9f2c3c0c6d0f1bd0f0d4b0c3f1a1e9c0b1d3a2e5f4c6b7a8d9e0f1a2b3c4d5e6
        device_io:
          description: Bytes read and written on C(target.device) during the run (C(/sys/block) sectors x 512); null when unknown.
          type: dict
          returned: always
          sample: {read_bytes: 0, write_bytes: 134221824}
        warnings:
          description:
            - Everything the parser noticed but did not treat as a failure (partial records, fio messages, sysbench
              WARNING lines, bonnie++ C(+++++) figures, ...).
          type: list
          elements: str
          returned: always
          sample: []
        error:
          description: The tool's own error message when it failed, else null. Partial figures may still be set.
          type: str
          returned: always
          sample: null
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
            - The primary figure (IOPS or bytes/s, what the report judges) of every measured run, in run order; null for
              a run without that figure or a failed run.
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
          description: How many measured runs were made.
          type: int
          returned: with O(argv)
          sample: 3
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
elapsed_s:
  description: Wall-clock seconds the module spent on the task (checks, setup, runs, cleanup, restores).
  returned: always
  type: float
  sample: 63.482911
"""

import contextlib
import datetime
import errno
import os
import pwd
import secrets
import shlex
import signal
import socket
import stat
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev, _discover, _identity, _paths, _run
from ansible_collections.diskproof.fleet.plugins.module_utils import _cancel, _proc
from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce, _state_dir, _steady
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import (
    ParseError,
    apply_exit_code,
    error_result,
    join_output,
    make_record,
    parse_output,
    sha256_hex,
    tool_errors,
    version_from_banner,
)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import tool_from_argv
from ansible_collections.diskproof.fleet.plugins.module_utils._input_file import InputFileError, read_regular_file

LOCALE_C = {"LANG": "C", "LC_ALL": "C"}
# Options that only mean something when the module runs commands (argv or sweep).
RUN_ONLY = ("max_repeats", "setup", "cleanup", "chdir", "workdir", "job_file", "cache_fence_bytes", "keep_raw",
            "run_dir", "remove_on_cancel")


class TaskFailed(Exception):
    """Fail the task with msg and the extra result keys; raised so every cleanup runs first."""

    def __init__(self, msg, **result):
        super().__init__(msg)
        self.msg = msg
        self.result = result


class Interrupted(Exception):
    """SIGTERM, SIGINT or SIGHUP while running: the tool's process group is killed, then the teardown runs."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def complete_target(target):
    """The caller's target dict plus the whole-disk device holding target.path (unless given)."""
    completed = dict(target or {})
    if "device" not in completed:
        path = completed.get("path")
        completed["device"] = _blockdev.whole_disk_name(path) if isinstance(path, str) and path else None
    return completed


def read_input(module):
    """Raw bytes of content= or src= (a regular file of at most src_max_bytes, see _input_file)."""
    if module.params["content"] is not None:
        return module.params["content"].encode("utf-8", "surrogateescape")
    try:
        return read_regular_file(module.params["src"], module.params["src_max_bytes"])
    except InputFileError as error:
        raise TaskFailed(str(error), created=[])


def drop_caches():
    try:
        _blockdev.drop_caches()
    except OSError as error:
        raise TaskFailed("drop_caches=true but the page cache cannot be dropped (%s: %s); run with become: true "
                         "on a host where /proc/sys is writable" % (_blockdev.DROP_CACHES, error))


# How each tool prints its version (bonnie++ has no such option: its CSV carries the version).
VERSION_ARGS = {"ioping": ["-v"], "bonnie": None}


def ask_version(module, binary, tool):
    args = VERSION_ARGS.get(tool, ["--version"])
    if args is None:
        return None
    rc, stdout, stderr = module.run_command([binary] + args, environ_update=LOCALE_C, expand_user_and_vars=False)
    return version_from_banner(stdout or stderr) if rc == 0 else None


def describe_source(module, command, rc):
    if command is not None:
        return "command: %s (exit code %s)" % (shlex.join(command), rc)
    if module.params["src"] is not None:
        return "parsed from src=%s" % module.params["src"]
    return "parsed from content="


def tool_name(module, argv):
    """The tool of an argv run when the output cannot tell (tool=auto): from argv[0]."""
    if module.params["tool"] != "auto":
        return module.params["tool"]
    return tool_from_argv(argv) or os.path.basename(argv[0])


def parse_results(module, text, argv=None, rc=None, tool=None, direction=None):
    """(tool, partial records); a failed run with unparseable output still gives one error record."""
    params = module.params
    try:
        return parse_output(text, tool or params["tool"], direction or params["direction"], argv)
    except ParseError as error:
        if argv is not None and rc != 0:
            name = tool or tool_name(module, argv)
            return name, [error_result(name, error)]
        raise TaskFailed("%s; %s" % (error, describe_source(module, argv, rc)))


def failure_message(module, tool, records, command, rc):
    """None when the tool succeeded, else what failed, the tool's own words and the command."""
    errors = tool_errors(records, rc)
    if not errors:
        return None
    if command is None:
        return "%s reported an error: %s; %s" % (tool, " | ".join(errors), describe_source(module, None, None))
    return "%s failed (exit code %s): %s; command: %s" % (tool, rc, " | ".join(errors), shlex.join(command))


def parse_only(module, target):
    """content= or src=: parse, nothing is run."""
    raw = read_input(module)
    text = raw.decode("utf-8", "replace")
    tool, results = parse_results(module, text)
    records = [make_record(result, test=module.params["test"], target=target, params=module.params["params"],
                           raw_sha256=sha256_hex(raw)) for result in results]
    apply_exit_code(records, None, text)
    facts = {"diskproof_results": records}
    message = failure_message(module, tool, records, None, None)
    if message and module.params["fail_on_error"]:
        raise TaskFailed(message, created=[], ansible_facts=facts)
    return dict(changed=False, created=[], ansible_facts=facts)


class Job:
    """One argv or sweep task: checks, setup, measured runs, cleanup, and undoing everything it
    changed (fence, write cache, work directory, job file) whatever happened."""

    def __init__(self, module, target):
        self.module = module
        self.params = module.params
        self.target = target
        self.device = target.get("device")
        self.sweep = self.params["sweep"]
        self.argv = self.params["argv"] if self.sweep is None else self.sweep[0]["argv"]
        self.tool = "dd" if self.sweep is not None else tool_name(module, self.argv)
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
        self.fence = None
        self.fence_layout = None
        self.write_cache_plan = None
        self.write_cache = None
        self.write_cache_touched = False
        self.last_command = None
        self.last_rc = None
        self.succeeded = False      # set by run_job before the teardown: the job ran and no tool failed
        self.partial_removed = None
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
            existing = _run.existing_evidence(params["keep_raw"], self.test)
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
            raise TaskFailed("chdir=%s is not an existing directory: create it first (or make it the workdir)" % self.cwd)
        if params["write_cache"] == "off":
            self.plan_write_cache()
        if params["cache_fence_bytes"] is not None:
            try:
                self.fence_layout = _run.plan_fence(os.getpid(), secrets.token_hex(4))
            except _run.RunError as error:
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
        transport, why = _run.write_cache_transport(self.device)
        if transport is None:
            raise TaskFailed("write_cache=off: %s has no volatile write cache control (%s); run without write_cache "
                             "on this target" % (self.device, why))
        commands = _run.write_cache_commands(transport, self.device)
        binary = self.module.get_bin_path(commands.tool)
        if binary is None:
            raise TaskFailed("write_cache=off: %s (%s) needs %s, which is not installed; install it (package %s)"
                             % (self.device, why, commands.tool, "nvme-cli" if commands.tool == "nvme" else commands.tool))
        self.binaries[commands.tool] = binary
        self.write_cache_plan = (transport, commands)

    # ------------------------------------------------------------------ running commands

    def run(self, argv):
        """(rc, stdout bytes, stderr bytes) of argv, in chdir, LC_ALL=C, no shell."""
        binary = self.binaries.get(argv[0]) or self.module.get_bin_path(argv[0]) or argv[0]
        if self.cwd is not None and not os.path.isdir(self.cwd):
            # say which option is wrong (Popen would only name the missing directory)
            raise _run.RunError("cannot run %s: chdir=%s is not a directory" % (shlex.join(argv), self.cwd))
        watch = [] if self.tearing_down else self.controller_pipe
        if _proc.hung_up(watch):
            raise _proc.ControllerGone("the controller went away before %s started" % shlex.join(argv))
        self.started_anything = True
        try:
            # Its own process group, killed and reaped on a signal or when the controller goes away (_proc.py).
            done = _proc.run(argv, executable=binary, cwd=self.cwd, env=dict(os.environ, **LOCALE_C), watch=watch)
        except OSError as error:
            raise _run.RunError("cannot run %s: %s" % (shlex.join(argv), error))
        if done.strays:
            self.warn("%s left %d process(es) running after it exited: killed" % (shlex.join(argv), done.strays))
        return done.rc, done.stdout, done.stderr

    def keep(self, kind, number, data):
        if self.params["keep_raw"] is None:
            return
        path = os.path.join(self.params["keep_raw"], _run.evidence_name(self.test, kind, number))
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
        except _run.RunError as error:
            return None, "%s command %d: %s" % (kind, number, error)
        self.keep(kind, number, join_output(stdout, stderr))
        if rc == 0:
            return rc, None
        words = _run.last_line(stderr.decode("utf-8", "replace")) if stderr.strip() else \
            _run.last_line(stdout.decode("utf-8", "replace"))
        return rc, "%s command %d failed (exit code %s): %s; command: %s" % (kind, number, rc, words, shlex.join(argv))

    # ------------------------------------------------------------------ the job

    def execute(self):
        self.hold_and_verify_raw_grant()
        if self.params["workdir"] is not None:
            self.make_workdir()
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise TaskFailed("chdir=%s is not an existing directory: create it first (or make it the workdir)" % self.cwd)
        measured = self.argv
        if self.params["job_file"] is not None:
            measured = self.argv + [self.write_job_file()]
        if self.write_cache_plan is not None:
            self.switch_write_cache_off()
        if self.fence_layout is not None:
            self.enter_fence()
        for number, argv in enumerate(self.params["setup"] or [], 1):
            self.check_run_dir()
            rc, message = self.run_aux("setup", number, argv)
            if message:
                raise TaskFailed(message)
        if self.sweep is not None:
            self.run_sweep()
        else:
            self.run_repeats(measured)

    # ------------------------------------------------------------------ raw grants (module_utils/_identity.py)

    device_hold = None   # O_EXCL descriptor of the device for the whole raw_write job

    def hold_and_verify_raw_grant(self):
        """A raw job runs only on the disk discover granted: its identity read again now and, for raw_write,
        the disk still unused and held with O_EXCL until the teardown (a mount of it then fails with EBUSY;
        dd and fio open it without O_EXCL and still run)."""
        grant = self.target.get("grant") if self.target.get("kind") == "raw" else None
        if grant is None:
            return
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
                # The probe discover made (wipefs -n: no-act, reads only).
                rc, out, err = self.module.run_command([wipefs, "-n", "-J", "/dev/" + name],
                                                       environ_update={"LANG": "C", "LC_ALL": "C"})
                signatures[name], signature_errors[name] = _discover.wipefs_result(rc, out, err)
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

    def write_job_file(self):
        text = self.params["job_file"]
        handle, path = tempfile.mkstemp(prefix="diskproof-", suffix=".fio")
        self.job_path = path
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        if self.params["keep_raw"] is not None:
            self.keep("fio", None, text.encode("utf-8", "surrogateescape"))
        check = [self.argv[0], "--parse-only", path]
        try:
            rc, stdout, stderr = self.run(check)
        except _run.RunError as error:
            raise TaskFailed("job_file: %s" % error)
        if rc != 0:
            output = join_output(stdout, stderr).decode("utf-8", "replace").replace(path, "<job_file>")
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            raise TaskFailed("job_file rejected by %s --parse-only (exit code %s): %s; fix the job file"
                             % (self.argv[0], rc, " | ".join(lines[-8:]) or "(no output)"))
        return path

    def read_write_cache(self, commands):
        """The disk's write cache as the tool reads it; RunError when it cannot be read."""
        transport = self.write_cache_plan[0]
        rc, stdout, stderr = self.run(commands.get)
        text = join_output(stdout, stderr).decode("utf-8", "replace")
        if rc != 0:
            raise _run.RunError("%s failed (exit code %s): %s" % (shlex.join(commands.get), rc, _run.last_line(text)))
        try:
            return _run.parse_write_cache(transport, text)
        except _run.RunError as error:
            raise _run.RunError("%s: %s" % (shlex.join(commands.get), error))

    def switch_write_cache_off(self):
        transport, commands = self.write_cache_plan
        try:
            before = self.read_write_cache(commands)
        except _run.RunError as error:
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
            except _run.RunError as error:
                raise TaskFailed("write_cache=off: %s" % error)
            if rc != 0:
                raise TaskFailed("write_cache=off: %s failed (exit code %s): %s" % (
                    shlex.join(commands.off), rc, _run.last_line(join_output(stdout, stderr).decode("utf-8", "replace"))))
        try:
            during = self.read_write_cache(commands)
        except _run.RunError as error:
            raise TaskFailed("write_cache=off: cannot read back the write cache of %s: %s" % (self.device, error))
        self.write_cache["during"] = during.enabled
        if during.enabled:
            raise TaskFailed("write_cache=off: %s still reports the write cache of %s on after %s; the disk refuses "
                             "the change: run without write_cache on this disk"
                             % (commands.tool, self.device, shlex.join(commands.off)))

    def enter_fence(self):
        # A module SIGKILLed inside its fence (OOM, kill -9) could not remove it: the next fenced job does.
        removed, problems = _run.remove_stale_fences(self.fence_layout.home, _run.pid_alive)
        if removed:
            self.warn("removed %d cache fence cgroup(s) left by a module that was killed: %s"
                      % (len(removed), ", ".join(removed)))
        for problem in problems:
            self.warn(problem)
        self.fence = _run.CacheFence(self.fence_layout, self.params["cache_fence_bytes"], os.getpid())
        try:
            self.fence.create()
            self.fence.enter()
        except OSError as error:
            raise TaskFailed("cache_fence_bytes: cannot set up the memory cgroup %s: %s; %s"
                             % (self.fence_layout.path, error, _run.fence_setup_advice(error.errno)))

    # ------------------------------------------------------------------ measured runs

    def version_of(self, binary, tool, results):
        if any(result["tool_version"] for result in results):
            return None
        if not self.version_known:
            self.version = ask_version(self.module, binary, tool)
            self.version_known = True
        return self.version

    def run_measured(self, argv, number, tool=None, direction=None, measure=True):
        """Run argv once (after a cache drop when asked) and parse it: (tool, records, rc, raw)."""
        if self.params["drop_caches"] and measure:
            drop_caches()
        self.check_run_dir()
        self.verified_runs += 1
        want_io = self.params["device_io"] is not False and measure
        before = _blockdev.read_stat(self.device) if want_io else None
        started = utc_now()
        try:
            rc, stdout, stderr = self.run(argv)
        except _run.RunError as error:
            raise TaskFailed(str(error))
        finished = utc_now()
        after = _blockdev.read_stat(self.device) if want_io else None
        raw = join_output(stdout, stderr)
        self.keep("run", number, raw)
        self.last_command, self.last_rc = argv, rc
        text = raw.decode("utf-8", "replace")
        tool, results = parse_results(self.module, text, argv, rc, tool=tool, direction=direction)
        version = self.version_of(self.binaries.get(argv[0], argv[0]), tool, results)
        device_io = _blockdev.stat_delta_bytes(before, after)
        records = []
        for result in results:
            record = make_record(result, test=self.params["test"], target=self.target, params=self.params["params"],
                                 started=started, finished=finished, command=argv, exit_code=rc,
                                 raw_sha256=sha256_hex(raw), device_io=device_io, tool_version=version)
            if result.get("steadystate") is not None:
                _steady.apply(record, result["steadystate"])   # the window's means become the figures
            if want_io and device_io is None:
                record["warnings"].append("device_io unknown: no block device for target.path %r" % self.target.get("path"))
            records.append(record)
        apply_exit_code(records, rc, text)
        return tool, records, rc, raw

    def check_bypass(self, records, label):
        """min_device_fraction: a warning (record and task) for each record the counters do not back."""
        notes = []
        for record in records:
            reason = None
            if not record["error"]:
                reason = _run.bypass_reason(record, self.params["min_device_fraction"])
            if reason:
                record["warnings"].append(reason)
                self.module.warn("%s%s" % (label, reason))
            notes.append(reason)
        return notes

    def run_repeats(self, argv):
        runs, notes, failed = [], [], None
        number = 0
        tool = None
        while True:
            number += 1
            tool, records, rc, _raw = self.run_measured(argv, number)
            self.tool = tool
            label = "run %d: " % number if self.max_repeats > 1 else ""
            if tool_errors(records, rc):
                failed = records
                break
            if runs and len(records) != len(runs[0]):
                raise TaskFailed("run %d printed %d records, run 1 printed %d: repeats cannot pair them; command: %s"
                                 % (number, len(records), len(runs[0]), shlex.join(argv)))
            notes.append(self.check_bypass(records, label))
            runs.append(records)
            if number < self.repeats:
                continue
            if number >= self.max_repeats:
                break
            samples = [[_run.primary_value(run[index]) for run in runs] for index in range(len(records))]
            if not _run.needs_more_runs(samples, self.params["max_cv"]):
                break
        if failed is not None:
            # the failed run's records, as now; its sample is null (a failed run has no valid figure)
            for index, record in enumerate(failed):
                column = [run[index] if index < len(run) else None for run in runs]
                _run.add_repeat_fields(
                    record, [None if other is None else _run.primary_value(other) for other in column] + [None],
                    [None if other is None else other["device_io"] for other in column] + [record["device_io"]])
            self.records = failed
        else:
            self.records = _run.select_repeats(runs, notes)

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
                steps.append(_run.SweepStep(step["offset_bytes"], None, None,
                                            error="dd printed %d summaries, expected 1" % len(records)))
                break
            (record,) = records
            steps.append(_run.SweepStep(step["offset_bytes"], record["bytes"], record["seconds"], record["error"],
                                        tuple(record["warnings"])))
            if record["error"] or rc:
                break
        finished = utc_now()
        after = _blockdev.read_stat(self.device) if want_io else None
        device_io = _blockdev.stat_delta_bytes(before, after)
        record = make_record(_run.sweep_result(steps, version), test=self.params["test"], target=self.target,
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
                                         "hand: %s" % (self.device, manual, rc, _run.last_line(
                                             join_output(stdout, stderr).decode("utf-8", "replace")), manual))
                    return
            except _run.RunError as error:
                self.problems.append("write cache of %s not restored: %s; restore it by hand: %s"
                                     % (self.device, error, manual))
                return
        try:
            after = self.read_write_cache(commands)
        except _run.RunError as error:
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
                    raise _quiesce.QuiesceError(error + "; restore the write caches it names by hand, then remove it")
                document = document or _state_dir.new_write_cache_doc()
                wwid = _state_dir.read_wwid(self.device)
                entry, added = _state_dir.remember_write_cache(document, self.device, enabled, tool, transport,
                                                               self.params["lock_run_id"], time.time(), wwid)
                if entry.get("wwid") and entry["wwid"] != wwid:
                    raise _quiesce.QuiesceError("its record names another disk (wwid %s, this one %s): restore that "
                                                "disk's write cache by hand and remove the %s entry"
                                                % (entry["wwid"], wwid, self.device))
                if added:
                    state.write(_state_dir.WRITE_CACHE_NAME, document)
        except (_quiesce.QuiesceError, OSError) as error:
            raise TaskFailed("write_cache=off: cannot record the original write cache of %s in %s before switching it "
                             "off: %s" % (self.device, self.params["state_dir"], error))
        return dict(entry)

    def forget_write_cache(self):
        """Restored and read back: the record of the original goes (a restore or a later step would redo it)."""
        with _state_dir.StateDir(self.params["state_dir"]) as state, state.mutex():
            document, error = state.read(_state_dir.WRITE_CACHE_NAME, _state_dir.parse_write_cache_doc)
            if error:
                raise _quiesce.QuiesceError(error)
            if document and document["devices"].pop(self.device, None) is not None:
                state.write(_state_dir.WRITE_CACHE_NAME, document)

    def renew_lease(self):
        """This run still holds the quiesce lock: renew its lease, naming this process as its holder on the host."""
        if self.params["lock_run_id"] is None:
            return
        try:
            with _state_dir.StateDir(self.params["state_dir"]) as state:
                _state_dir.renew_lease(state, self.params["lock_run_id"], os.getpid(), _quiesce.process_start(os.getpid()))
        except (_quiesce.QuiesceError, OSError) as error:
            raise TaskFailed("lock_run_id: %s" % error)

    def renew_lease_after(self):
        try:
            self.renew_lease()
        except TaskFailed as failure:
            self.problems.append(failure.msg)

    def remove_workdir(self):
        if self.workdir_identity is not None:
            for problem in _run.remove_tree(self.params["workdir"], self.workdir_identity):
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
            if params["job_file"] is not None:
                record["job_file"] = params["job_file"]
            if self.fence is not None:
                record["cache_fence"] = self.fence.describe()
            if self.write_cache is not None:
                record["write_cache"] = dict(self.write_cache)
            if params["keep_raw"] is not None:
                record["raw_files"] = list(self.raw_files)
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


def run_job(module, target):
    job = Job(module, target)
    job.preflight()
    failure = None
    with cleanup_on_signals():
        try:
            job.execute()
            job.succeeded = not tool_errors(job.records, job.last_rc)
        except (TaskFailed, Interrupted, _proc.ControllerGone) as error:
            failure = error
        except (OSError, _run.RunError) as error:
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
    if messages:
        raise TaskFailed(explained("; ".join(messages), job), created=job.created, ansible_facts=facts)
    message = failure_message(module, job.tool, job.records, job.last_command, job.last_rc)
    if message and module.params["fail_on_error"]:
        raise TaskFailed(explained(message, job), created=job.created, ansible_facts=facts)
    return dict(changed=True, created=job.created, ansible_facts=facts)


def undo(job, failure):
    """The teardown; after a cancel also this run's directories (the play's always: cleanup never runs then)."""
    job.teardown()
    if isinstance(failure, (Interrupted, _proc.ControllerGone)):
        removed, problems = _cancel.remove_run_dirs(job.params["remove_on_cancel"] or [], socket.gethostname())
        job.problems.extend(problems)
        if removed:
            job.record_warnings.append("cancelled: removed %s" % ", ".join(removed))


def quiet_stdout():
    """Point fd 1 at /dev/null (the controller that read it is gone)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    finally:
        os.close(devnull)


def explained(message, job):
    """message, plus what to do when the tool ran out of space on a directory target."""
    path = job.target.get("path")
    if _run.ENOSPC_TEXT not in message or job.target.get("kind") == "raw" or not isinstance(path, str) \
            or not os.path.isdir(path):
        if job.partial_removed:
            return "%s; the partial test file %s was removed" % (message, job.partial_removed)
        return message
    return "%s; %s" % (message, _run.out_of_space_advice(path, _run.free_space(path), job.partial_removed))


def with_signals_ignored(function):
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


def check_options(module):
    """Option combinations the argument spec cannot express."""
    params = module.params
    running = params["argv"] is not None or params["sweep"] is not None
    if params["argv"] is not None and not params["argv"]:
        raise TaskFailed("argv must name a command: got an empty list", created=[])
    if params["sweep"] is not None and not params["sweep"]:
        raise TaskFailed("sweep must list at least one step", created=[])
    if not running:
        given = [name for name in RUN_ONLY if params[name] is not None]
        if params["repeats"] != 1:
            given.append("repeats")
        if params["write_cache"] != "unchanged":
            given.append("write_cache")
        if given:
            raise TaskFailed("%s only with argv or sweep (they are about running commands)" % ", ".join(given), created=[])
        return
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


def main():
    started = time.monotonic()
    module = AnsibleModule(
        argument_spec=dict(
            tool=dict(type="str", default="auto", choices=["auto", "dd", "fio", "sysbench", "bonnie", "ioping"]),
            content=dict(type="str"),
            src=dict(type="path"),
            src_max_bytes=dict(type="int", default=67108864),
            argv=dict(type="list", elements="str"),
            sweep=dict(type="list", elements="dict", options=dict(
                offset_bytes=dict(type="int", required=True),
                argv=dict(type="list", elements="str", required=True),
            )),
            test=dict(type="str"),
            target=dict(type="dict"),
            params=dict(type="dict"),
            direction=dict(type="str", choices=["read", "write", "copy"]),
            creates=dict(type="path"),
            drop_caches=dict(type="bool", default=False),
            device_io=dict(type="bool"),
            fail_on_error=dict(type="bool", default=True),
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
            run_dir=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
                resolved=dict(type="path"),
                device=dict(type="int", required=True),
                inode=dict(type="int", required=True),
            )),
        ),
        mutually_exclusive=[("content", "src", "argv", "sweep")],
        required_one_of=[("content", "src", "argv", "sweep")],
        required_if=[("drop_caches", True, ("argv", "sweep"), True), ("device_io", True, ("argv", "sweep"), True),
                     ("write_cache", "off", ("state_dir",))],
        required_by={"creates": "argv", "job_file": "argv", "workdir_owner": "workdir", "lock_run_id": "state_dir"},
        supports_check_mode=True,
    )

    def elapsed():
        return round(time.monotonic() - started, 6)

    try:
        params = module.params
        normalize_command_lists(params)
        check_options(module)
        target = complete_target(params["target"])
        if params["argv"] is None and params["sweep"] is None:
            result = parse_only(module, target)
        elif module.check_mode:
            first = params["argv"][0] if params["argv"] is not None else params["sweep"][0]["argv"][0]
            result = dict(changed=False, created=[], ansible_facts={"diskproof_results": []},
                          msg="check mode: %s not run" % first)
        else:
            result = run_job(module, target)
    except TaskFailed as failure:
        failure.result.setdefault("created", [])
        module.fail_json(msg=failure.msg, elapsed_s=elapsed(), **failure.result)
    module.exit_json(elapsed_s=elapsed(), **result)


def normalize_command_lists(params):
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


if __name__ == "__main__":
    main()
