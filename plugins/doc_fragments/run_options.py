# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job options of bench_run (module_utils/_run.py's run_options()), documented beside the record options
(bench_records) that bench_run shares with bench_facts."""
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
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
  lock_controller:
    description:
      - The controller identity of the run holding the lock (the C(controller) of the quiesce role's public fact
        C(quiesce_run_state), as the lock records it). Needed by O(restore_when_done) - a lock with the same run id
        but another controller run is not this run's, and is not restored.
    type: dict
"""
