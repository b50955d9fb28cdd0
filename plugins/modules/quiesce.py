#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: quiesce
short_description: Lock a host, stop background jobs, drop caches and wait for quiet disks before a benchmark; undo it after
version_added: 0.1.0
description:
  - O(state=quiesced) does in one call, in this order - take the host's lock (refusing, with the holder named, when
    another run that may be alive holds it); restore first what a dead run left stopped; refuse while an md
    resync/recovery/check/reshape, a SMART self-test or another C(fio)/C(dd) is running on the targets; record which
    of the configured services run; write the state file; stop them; C(sync) and drop the page cache; wait for an
    idle window on the target disks and record what it saw.
  - O(state=restored) starts exactly the services the state file records as running, puts back the drives' original
    write-cache settings a killed benchmark step left recorded, removes the fio job files of benchmark steps no
    longer running (a SIGKILL leaves its own), removes the state file and releases the lock. It restores a dead
    run's leftovers too (controller killed, host cut off mid-run). M(diskproof.fleet.bench_run) with
    C(restore_when_done) runs this same restore at the end of a run's last benchmark step (the benchmark role's
    C(benchmark_restore_when_done)).
  - The lock (C(quiesce.lock)) and the state file (C(quiesce-state.json)) live in O(state_dir); the state file is
    written before anything is stopped. Their formats are in C(docs/quiesce.md) of the collection.
  - A lock is taken over only when its run certainly is gone - the host rebooted since, or the run's
    ansible-playbook ran on this very controller and is no longer running (O(controller)), or its lease
    (O(lease)) expired - or with O(force=true).
  - Services are controlled through the host's service manager - C(systemctl) on systemd hosts (one call per step
    for all units), C(service NAME stop|start|status) (or C(/etc/init.d/NAME)) on SysV hosts - with argv lists and
    C(LC_ALL=C).
author:
  - diskproof maintainers (@diskproof)
options:
  state:
    description:
      - V(quiesced) locks and quiets the host; V(restored) undoes it and releases the lock.
    type: str
    choices: [quiesced, restored]
    required: true
  run_id:
    description:
      - Identifies this run in the lock; must be unique per playbook run and the same for the V(quiesced) and the
        V(restored) call of one run. A lock held by the same O(run_id) is this run's own (calls are re-entrant).
      - A run id already used by another run (another ansible-playbook process in O(controller)) - while it holds the
        lock or after - is refused (V(restored) leaves that lock alone or fails, as for O(foreign_lock)).
      - The role takes the C(run_id) of O(controller) unless C(quiesce_run_id) is set.
    type: str
    required: true
  controller:
    description:
      - Identity of this run's controller as returned by the lookup C(diskproof.fleet.controller_run) - C(host), C(user),
        C(boot_id), C(pid_ns), C(pid) and C(pid_start) of the ansible-playbook process, C(seen_at) and C(live)
        (process id to start time of every ansible process running on the controller at C(seen_at)).
      - Recorded in the lock. When an existing lock was taken from the same controller (same C(host), C(boot_id) and
        C(pid_ns)) and its ansible-playbook is not in C(live), its run is dead and the lock is taken over at once.
      - Without it, locks of other runs are taken over only when their lease expired.
    type: dict
    default: {}
  state_dir:
    description:
      - Directory on the host for the lock, the state file, the run ids used (C(quiesce-runs.json)) and the drives'
        original write-cache settings (C(write-cache.json)); created (mode 0700) when missing.
      - Refused, with path, owner, mode and what to do, when it is a symbolic link, is owned by another user, is
        group- or world-writable, or has a parent others may write (without the sticky bit). Files in it are opened
        relative to it without following symlinks and replaced atomically (an unpredictable temporary name opened
        with C(O_CREAT|O_EXCL|O_NOFOLLOW), C(fsync), C(rename)).
      - Must be private to the host. On the diskproof lab, whose hosts share C(/var/lib), use a per-host path such as
        C(/srv/diskproof-state).
    type: path
    default: /var/lib/diskproof
  services:
    description:
      - Services to stop while the host is quiesced, when they run. Names without a suffix are services
        (C(NAME.service) on systemd, C(/etc/init.d/NAME) on SysV). Names that do not exist on the host are ignored.
    type: list
    elements: str
    default: [cron, crond, atd, anacron]
  timers:
    description:
      - systemd timers to stop too (only on systemd hosts; listed in RV(not_applicable) elsewhere). The default is
        the housekeeping timers of Debian, Ubuntu and RHEL that do disk I/O and whose skipped run is harmless.
      - A C(Persistent=true) timer stopped by the quiesce whose calendar time passed meanwhile would run its job at
        once when started again; the restore makes it forget that time first (C(systemctl clean --what=state), or
        on systemd before 243 its stamp set to now) and reports it in RV(skipped_runs) with its next run.
      - A timer with a past C(OnBootSec=)/C(OnStartupSec=) runs its job once when started again (systemd.timer(5));
        there is no way to start it without, so the per-unit table says so.
    type: list
    elements: str
    default: [fstrim.timer, logrotate.timer, man-db.timer, apt-daily.timer, apt-daily-upgrade.timer,
              dnf-makecache.timer, e2scrub_all.timer, dpkg-db-backup.timer, systemd-tmpfiles-clean.timer,
              plocate-updatedb.timer, mlocate-updatedb.timer, sysstat-collect.timer, sysstat-summary.timer]
  all_timers:
    description:
      - Stop every active timer of a systemd host too (C(systemctl list-units --type=timer --state=active)), the
        site's own (backups, monitoring, certificate renewal) included, so that no timer at all fires during the
        run. Their missed C(Persistent=) runs are skipped as well and listed in RV(skipped_runs).
    type: bool
    default: false
  service_manager:
    description:
      - V(auto) is V(systemd) when C(/run/systemd/system) exists (systemd is PID 1), else V(sysv) when
        C(/etc/init.d) exists.
    type: str
    choices: [auto, systemd, sysv]
    default: auto
  targets:
    description:
      - Paths under test (directories, files or block device nodes). The disks holding them, and the disks under
        those (md members, LVM physical volumes), are what the idle window, the md, SMART and competing I/O checks
        look at.
    type: list
    elements: path
    default: []
  drop_caches:
    description:
      - After stopping the services, write V(3) to C(/proc/sys/vm/drop_caches) (after C(sync), which always runs).
    type: bool
    default: true
  checks:
    description:
      - Conditions that make O(state=quiesced) refuse to start. V(md_resync) - an md array sharing a disk with the
        targets is resyncing, recovering, reshaping, checking or repairing (or waiting to). V(smart_selftest) - a
        SMART self-test runs on a physical disk under the targets (C(smartctl -j -c -l selftest); skipped with a
        warning when smartctl is missing). V(competing_io) - a process named in O(competing_tools) has a file or
        device on a target disk open, or names a target path in its arguments.
    type: list
    elements: str
    choices: [md_resync, smart_selftest, competing_io]
    default: [md_resync, smart_selftest, competing_io]
  competing_tools:
    description:
      - Process names (C(argv[0]) basename or C(comm)) that count as competing benchmarks for O(checks=competing_io).
    type: list
    elements: str
    default: [fio, dd]
  idle_window:
    description:
      - Length in seconds of one idle-window sample (two C(/proc/diskstats) snapshots this far apart).
    type: float
    default: 5
  idle_timeout:
    description:
      - Give up waiting for an idle window after this many seconds (see O(idle_on_timeout)). V(0) takes one sample.
    type: int
    default: 300
  idle_max_busy_percent:
    description:
      - A target disk is busy when its C(io_ticks) grew by more than this share of the window.
    type: float
    default: 5
  idle_max_iops:
    description:
      - A target disk is busy when it completed more reads plus writes per second than this.
    type: float
    default: 20
  idle_max_bytes_per_s:
    description:
      - A target disk is busy when it read plus wrote more bytes per second than this.
    type: float
    default: 1048576
  idle_max_load_per_cpu:
    description:
      - The host is busy when its 1-minute load average divided by its CPU count exceeds this (or, with the
        V(cgroup) O(idle_load_source), its own CPU use in the window per CPU). V(0) turns the load check off (the
        diskproof lab's SysV hosts need it, as they share one kernel and load average).
    type: float
    default: 0.5
  idle_load_source:
    description:
      - Where O(idle_max_load_per_cpu) reads the host's load. V(loadavg) - C(/proc/loadavg) (1-minute load per CPU).
        V(cgroup) - the CPU time of the host's own cgroup root in the window (CPU-seconds per second per CPU); only
        for a container whose systemd (PID 1) sits in C(/init.scope) of its own cgroup namespace, where the load
        average is the whole machine's. V(auto) - V(cgroup) in such a container, V(loadavg) elsewhere.
    type: str
    choices: [auto, loadavg, cgroup]
    default: auto
  idle_on_timeout:
    description:
      - V(fail) undoes the quiesce and fails the task when no idle window came; V(continue) goes on with a warning
        (C(reached) in RV(idle) is V(false) and C(last) says why).
    type: str
    choices: [fail, continue]
    default: fail
  lease:
    description:
      - Seconds after which this run's lock counts as abandoned when nobody can tell whether the run is alive (a lock
        taken from another controller). Recorded in the lock as C(lease_s). A re-entrant O(state=quiesced) call and
        every benchmark step of the run (M(diskproof.fleet.bench_run) with C(lock_run_id)) renew it, and the lock
        counts as held while such a step runs, so it must only exceed the longest gap between two steps.
    type: int
    default: 43200
  force:
    description:
      - Take over (O(state=quiesced)) or restore and release (O(state=restored)) a lock even when its run may be alive,
        or when the lock or state file cannot be read. The other run's state is restored first.
      - Only when you know that run is gone.
    type: bool
    default: false
  foreign_lock:
    description:
      - What O(state=restored) does when another run that may be alive holds the lock. V(fail) (for a deliberate
        restore, such as C(playbooks/restore.yml)), or V(skip) - leave it alone and succeed (for the C(always) section
        of a run whose own quiesce was refused).
    type: str
    choices: [fail, skip]
    default: fail
  plan:
    description:
      - The benchmark plan of this host, as the options of M(diskproof.fleet.bench_plan) (the benchmark role hands them
        over as C(benchmark_plan_request)). With O(state=quiesced) the call then plans too, so a host needs one module
        call instead of three - C(bench_plan) in check mode before the quiesce, the quiesce, C(bench_plan) under the
        lock.
      - First, before the lock is taken or anything is stopped, the plan is checked as C(bench_plan) checks it in check
        mode (free space per filesystem, block sizes, raw classes, tools, cache fence); a refusal ends the call there.
      - Then, once the host is quiet, the plan is made under the lock (what the recovered aborted run left in its run
        directories removed first, the run directories created with this run's O(run_id) in their note) and returned
        as RV(plan). A refusal at that point fails the call with the host still quiesced - the role's C(always)
        restore gives it back.
      - In check mode the checked plan is returned and nothing is created.
    type: dict
  discover:
    description:
      - The options of M(diskproof.fleet.disk_facts) (the discover role hands them over as C(discover_request)). With
        O(state=quiesced) the call then discovers first, exactly as C(disk_facts) does (read-only), before the plan's
        check, the lock or anything stopped - one module call per host instead of two.
      - A target that does not get the class it asks for (or does not exist), or a problem of its C(select), fails the
        call there, every refusal listed at once (RV(refusals)) - no lock taken, nothing stopped or written.
      - Otherwise the call returns C(disk_facts)' facts in RV(ansible_facts) (C(diskproof_host), C(diskproof_disks),
        C(diskproof_targets_resolved), C(diskproof_selected_targets), C(diskproof_target_identities)), watches the
        targets C(select) chose as it watches O(targets), and, with O(plan), plans them too (added to the plan's
        C(targets)) with this discovery's disk identities and raw classes as the plan's C(identities) and C(classes).
        RV(plan_request) carries them.
    type: dict
extends_documentation_fragment:
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
attributes:
  check_mode:
    support: full
    details:
      - Reads the lock, the state file, service states and runs the refusal checks; takes no lock, stops, starts,
        drops or waits for nothing, and reports what it would do.
  facts:
    support: partial
    details:
      - O(state=quiesced) sets C(diskproof_quiesce), the evidence of this quiesce.
  platform:
    platforms: linux
notes:
  - Needs root (stopping services, C(drop_caches), reading other processes' file descriptors).
  - The result is C(changed=true) whenever the call took or released a lock or stopped or started a service. The
    C(diskproof.fleet.quiesce) role reports a change only when it restored what an aborted run left behind, since a
    quiesce and its restore leave the host as they found it.
seealso:
  - name: diskproof quiesce (lock, state file, stale locks, idle thresholds)
    description: User documentation of the quiesce role and module.
    link: https://github.com/diskproof/fleet/blob/main/docs/quiesce.md
"""

EXAMPLES = r"""
- name: Identify this run on the controller (once per play)
  ansible.builtin.set_fact:
    run: "{{ lookup('diskproof.fleet.controller_run') }}"
  run_once: true

- name: Quiesce, benchmark, always restore
  block:
    - name: Lock, stop cron/atd/timers, sync, drop caches, wait for an idle window
      diskproof.fleet.quiesce:
        state: quiesced
        run_id: "{{ run.run_id }}"
        controller: "{{ run }}"
        targets: [/srv/diskproof/d0]
      become: true

    - name: The benchmark
      ansible.builtin.command:
        argv: [fio, --name=seq, --filename=/srv/diskproof/d0/test, --rw=read, --size=1g, --output-format=json]
      changed_when: false
      become: true
  always:
    - name: Start exactly what was stopped, release the lock
      diskproof.fleet.quiesce:
        state: restored
        run_id: "{{ run.run_id }}"
        controller: "{{ run }}"
        foreign_lock: skip
      become: true

- name: Discover, check a plan before the lock, quiesce, then make the plan under the lock (one call)
  diskproof.fleet.quiesce:
    state: quiesced
    run_id: "{{ run.run_id }}"
    controller: "{{ run }}"
    targets: [/srv/diskproof/d0]
    discover:
      targets: [{path: /srv/diskproof/d0}]
      host: "{{ inventory_hostname }}"
    plan:
      targets: [{path: /srv/diskproof/d0}]
      tests: [dd_seq_write, dd_seq_read]
  register: quiesced
  become: true
  # quiesced.plan.plan.jobs: the jobs to run with diskproof.fleet.bench_run; quiesced.plan.run_dirs: what to remove

- name: On-demand restore after an aborted run (refuses while the run may still be alive)
  diskproof.fleet.quiesce:
    state: restored
    run_id: manual-restore-{{ now(utc=true, fmt='%Y%m%dT%H%M%S') }}
  become: true
"""

RETURN = r"""
plan:
  description:
    - The plan made under the lock for O(plan) (in check mode, the checked plan), the result M(diskproof.fleet.bench_plan)
      returns (C(plan), C(lines), C(run_dirs), C(tools), C(memory_bytes), C(run_id), C(leftovers_removed)).
  returned: when O(plan) is set and the call succeeded with O(state=quiesced)
  type: dict
plan_request:
  description:
    - O(plan) as the plan was made for, so that the benchmark role can tell that this plan is the one it asks for - as
      given, or with O(discover) with the selected targets, disk identities and raw classes of this discovery.
  returned: when O(plan) is set and the call succeeded with O(state=quiesced)
  type: dict
msg:
  description: What was done, or why the call refused.
  returned: always
  type: str
  sample: "quiesced: stopped cron; caches dropped; idle after 5.0 s"
run_id:
  description: O(run_id).
  returned: always
  type: str
  sample: 20261122T100000Z-3f2a9c1b
lock:
  description: The lock this run holds after the call (the content of C(quiesce.lock)); null after a restore.
  returned: always
  type: dict
  sample:
    schema: 1
    kind: diskproof-quiesce-lock
    run_id: 20261122T100000Z-3f2a9c1b
    phase: quiesced
    started: "2026-11-22T10:00:01Z"
    updated: "2026-11-22T10:00:07Z"
    expires: "2026-11-22T22:00:07Z"
    lease_s: 43200
    controller: {host: ctl1, user: root, pid: 4242, pid_start: 123456, boot_id: "…", pid_ns: "pid:[4026531836]"}
    host: {boot_id: "…", pid: 5151, pid_start: 654321}
holder:
  description: The lock of the run that holds the host, when the call refused (or skipped) because of it.
  returned: when another run holds the lock
  type: dict
  sample: {run_id: 20261122T095500Z-77aa01bc, started: "2026-11-22T09:55:02Z", controller: {host: awx-ee-1}}
recovered:
  description:
    - Set when the call restored what another run left behind (the run is gone) - its C(run_id), why it counts as
      gone, its service manager and the units started again. Null otherwise.
  returned: always
  type: dict
  sample: {run_id: 20261122T095500Z-77aa01bc, reason: "its ansible-playbook (pid 4100 on ctl1) is gone", started: [cron]}
service_manager:
  description: V(systemd) or V(sysv).
  returned: always
  type: str
  sample: sysv
services:
  description: Each configured unit with what it was found in (C(exists), C(running), C(detail)) and what this call did.
  returned: always
  type: list
  elements: dict
  sample: [{unit: cron, exists: true, running: true, detail: "cron is running. (exit 0)", action: stopped}]
stopped:
  description: Units this call stopped (in check mode - would stop).
  returned: always
  type: list
  elements: str
  sample: [cron]
started:
  description: Units this call started again (in check mode - would start), the recovered run's included.
  returned: always
  type: list
  elements: str
  sample: [cron]
not_applicable:
  description: Configured names that do not apply to this service manager (timers on SysV hosts).
  returned: always
  type: list
  elements: str
  sample: [fstrim.timer]
checks:
  description:
    - What the refusal checks saw - C(md_resync) (arrays busy on target disks), C(smart_selftest) (per physical disk),
      C(competing_io) (processes on the targets), C(disks) (the target disks looked at). A check not run is null.
  returned: O(state=quiesced)
  type: dict
  sample: {disks: [loop5], md_resync: {arrays: 0, busy: []}, smart_selftest: {disks: []}, competing_io: {processes: []}}
caches_dropped:
  description: Whether the page cache was dropped (after C(sync)).
  returned: O(state=quiesced)
  type: bool
  sample: true
idle:
  description:
    - The idle-window evidence - C(reached), C(waited_s), C(window_s), C(timeout_s), C(thresholds), C(windows)
      (samples taken), C(last) and C(samples) (the last ten) each with per-device C(iops), C(bytes_per_s),
      C(busy_percent), C(in_flight), the load (C(load1), C(cpus), C(load_per_cpu), and C(cpu_busy_per_cpu) when the
      host's own CPU time is the measure) and the C(reasons) it was not idle; C(load_source) (V(loadavg) or V(cgroup))
      and C(load_source_why).
  returned: O(state=quiesced), not in check mode
  type: dict
  sample:
    reached: true
    waited_s: 5.0
    windows: 1
    last: {idle: true, reasons: [], devices: {loop5: {iops: 0.0, bytes_per_s: 0.0, busy_percent: 0.0, in_flight: 0}}}
left_alone:
  description: Why O(state=restored) left the host alone (O(foreign_lock=skip)).
  returned: when another run holds the lock and O(foreign_lock=skip)
  type: str
  sample: "another run holds the lock: run 20261122T095500Z-77aa01bc (…)"
write_cache:
  description:
    - The original write-cache settings a killed benchmark step left recorded in C(write-cache.json), each put back,
      read back and then forgotten - C(device), C(original) and C(found) (true when on), C(restored), C(method) and
      C(run_id) (the run that recorded it).
  returned: when the state directory held such a record
  type: list
  elements: dict
  sample:
    - {device: sdb, original: true, found: false, restored: true, method: hdparm, run_id: 20261122T100000Z-3f2a9c1b}
removed_job_files:
  description:
    - The fio job files (C(fio-job.PID-START.RANDOM.fio) in O(state_dir)) of benchmark steps that are no longer
      running, removed. Only a step killed with SIGKILL leaves one; any other end removes its own.
  returned: when O(state=restored) removed any
  type: list
  elements: str
  sample: [fio-job.48213-1911307.3f9a0c51d2e4b7a8.fio]
units:
  description:
    - systemd hosts - the per-unit table, one row per configured unit - C(unit), C(before), C(during) and (after a
      restore) C(after), each with C(load), C(active), C(sub) and C(file) (LoadState, ActiveState, SubState,
      UnitFileState); C(decision) (stopped, or left alone and why - stopped on purpose, masked, failed, absent) and
      (after a restore) C(same) - load, unit-file state and activity after equal to before.
    - Timers also have C(timer_before) (and after a restore C(timer_after)) - C(triggers) (the service),
      C(persistent), C(next_elapse), C(calendar_next_s) (next calendar time, epoch s), C(last_trigger),
      C(boot_relative_s) (OnBootSec=/OnStartupSec= elapses, CLOCK_MONOTONIC s) and C(on_active_s).
  returned: systemd hosts, when there are units to show
  type: list
  elements: dict
  sample:
    - unit: cron.service
      before: {load: loaded, active: active, sub: running, file: enabled}
      during: {load: loaded, active: inactive, sub: dead, file: enabled}
      after: {load: loaded, active: active, sub: running, file: enabled}
      decision: "stopped: active"
      same: true
    - unit: man-db.timer
      before: {load: loaded, active: active, sub: waiting, file: enabled}
      decision: "stopped: active"
      timer_before: {triggers: man-db.service, persistent: true, next_elapse: "Thu 2026-11-26 07:11:45 UTC",
                     calendar_next_s: 1795651200.0, last_trigger: null, boot_relative_s: [], on_active_s: []}
unit_table:
  description: RV(units) as markdown table lines (unit, before, during, after, decision, before = after).
  returned: with RV(units)
  type: list
  elements: str
  sample:
    - "| unit | before | during | after | quiesce | before = after |"
    - "|---|---|---|---|---|---|"
    - "| cron.service | active/running enabled | inactive/dead enabled | active/running enabled | stopped: active |
      yes |"
skipped_runs:
  description:
    - Persistent timers whose calendar time passed while the host was quiesced, made to skip that run - C(timer),
      C(service), C(due) (the time it was due, UTC), C(next) (its next run after the restore), C(method).
  returned: O(state=restored) and after a recovery, on systemd hosts
  type: list
  elements: dict
  sample: [{timer: man-db.timer, service: man-db.service, due: "2026-11-26T00:00:00Z",
            next: "Fri 2026-11-27 00:07:11 UTC", method: "systemctl clean --what=state"}]
state_file:
  description: Path of the state file.
  returned: always
  type: str
  sample: /var/lib/diskproof/quiesce-state.json
refusals:
  description: With O(discover), every refusal of discovery as one line each (as M(diskproof.fleet.disk_facts) words it).
  returned: when O(discover) is set and a target was refused
  type: list
  elements: str
  sample:
    - "/dev/loop5 (requested raw_write) not_destructive: diskproof_destructive is not true"
ansible_facts:
  description:
    - Facts set by O(state=quiesced).
    - With O(discover) also the five facts of M(diskproof.fleet.disk_facts), as it returns them (also in check mode) -
      C(diskproof_host), C(diskproof_disks), C(diskproof_targets_resolved), C(diskproof_selected_targets),
      C(diskproof_target_identities).
  returned: O(state=quiesced), not in check mode; with O(discover), also in check mode
  type: dict
  contains:
    diskproof_quiesce:
      description: Evidence of the quiesce - C(run_id), C(lock), C(service_manager), C(stopped), C(recovered),
        C(checks), C(caches_dropped), C(idle), C(units) (systemd).
      returned: success
      type: dict
      sample: {run_id: 20261122T100000Z-3f2a9c1b, stopped: [cron], idle: {reached: true}}
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev, _proc
from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce as q
from ansible_collections.diskproof.fleet.plugins.module_utils import _state_dir as sd
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.cgroup import parse_cpu_stat
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.diskstats import parse_diskstats
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.loadavg import parse_loadavg
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mdstat import parse_mdstat
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import cgroup2_mount
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.smartctl import smart_selftest
from ansible_collections.diskproof.fleet.plugins.module_utils._restore import PROC, Restorer, RestoreFailed

DEFAULT_TIMERS = ["fstrim.timer", "logrotate.timer", "man-db.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
                  "dnf-makecache.timer", "e2scrub_all.timer", "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer",
                  "plocate-updatedb.timer", "mlocate-updatedb.timer", "sysstat-collect.timer", "sysstat-summary.timer"]


class _PlanWarnings:
    """The module for the plan's check: its warnings held back (the plan under the lock gives them again)."""

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


class Quiesce(Restorer):
    """The quiesce (state=quiesced), on the restore's plumbing (module_utils/_restore.py), which it also uses to
    recover what an aborted run left stopped and to roll back a quiesce that failed half-way."""

    def __init__(self, module):
        params = module.params
        super().__init__(module, params["state_dir"], params["run_id"], params["controller"], params["force"],
                         params["foreign_lock"], params["lease"])
        self.params = params
        self._disk_cache = {}
        # With option discover: the facts disk_facts would have published, and the targets it selected.
        self.discovered = {}
        self.selected_paths = []

    # ---------------------------------------------------------------- plumbing

    def flush_warnings(self):
        for warning in self.warnings:
            self.module.warn(warning)
        self.warnings = []

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.flush_warnings()
        self.module.fail_json(msg=msg, **self.result)

    def exit(self, msg, **extra):
        self.result.update(extra)
        self.flush_warnings()
        self.module.exit_json(msg=msg, **self.result)

    def manager(self):
        wanted = self.params["service_manager"]
        manager = q.detect_service_manager() if wanted == "auto" else wanted
        if manager is None:
            self.fail("no supported service manager: neither /run/systemd/system nor /etc/init.d exists; "
                      "set service_manager")
        return manager

    # ---------------------------------------------------------------- targets and checks

    def disks_of_dev(self, dev):
        if dev not in self._disk_cache:
            disk = _blockdev.whole_disk_for(os.major(dev), os.minor(dev))
            self._disk_cache[dev] = q.disks_under(disk) if disk else set()
        return self._disk_cache[dev]

    def target_disks(self):
        disks = set()
        top = []
        for path in self.params["targets"] + [path for path in self.selected_paths if path not in self.params["targets"]]:
            number = _blockdev.device_number(path)
            disk = _blockdev.whole_disk_for(*number) if number else None
            if disk is None:
                self.warnings.append("cannot tell which disk holds target %s: the idle window and the md/SMART/"
                                     "competing I/O checks do not cover it" % path)
                continue
            top.append(disk)
            disks |= q.disks_under(disk)
        return top, disks

    def read_text(self, path):
        try:
            with open(path) as handle:
                return handle.read()
        except FileNotFoundError:
            return ""

    def run_checks(self, disks):
        checks = {"disks": sorted(disks), "md_resync": None, "smart_selftest": None, "competing_io": None}
        problems = []
        wanted = self.params["checks"]
        if "md_resync" in wanted:
            arrays = parse_mdstat(self.read_text(os.path.join(PROC, "mdstat")))
            busy = q.md_activity(arrays, q.disks_under, disks)
            checks["md_resync"] = {"arrays": len(arrays), "busy": busy}
            for item in busy:
                what = "%s %s" % (item["action"], item["waiting"] if item["waiting"] else "%s %%" % item["progress_percent"])
                problems.append("md array %s is running a %s on %s" % (item["array"], what, ", ".join(item["shared_disks"])))
        if "smart_selftest" in wanted:
            checks["smart_selftest"] = self.smart_check(q.physical_disks(disks), problems)
        if "competing_io" in wanted:
            processes, unreadable = q.read_processes(self.params["competing_tools"], PROC)
            try:
                own_ns = os.readlink(os.path.join(PROC, "self", "ns", "mnt"))
            except OSError:
                own_ns = None
            hits = q.competing_processes(processes, disks, self.disks_of_dev, self.params["targets"],
                                         {os.getpid(), os.getppid()}, own_ns)
            checks["competing_io"] = {"processes": hits, "unreadable": unreadable}
            for hit in hits:
                problems.append("%s (pid %d: %s) uses the targets: %s"
                                % (hit["comm"], hit["pid"], " ".join(hit["argv"])[:200], "; ".join(hit["reasons"])))
        return checks, problems

    def smart_check(self, disks, problems):
        report = {"disks": []}
        if not disks:
            return report
        smartctl = self.module.get_bin_path("smartctl")
        if smartctl is None:
            self.warnings.append("smartctl is not installed: no SMART self-test check on %s" % ", ".join(disks))
            report["skipped"] = "smartctl not installed"
            return report
        for disk in disks:
            rc, out, err = _proc.probe([smartctl, "-j", "-c", "-l", "selftest", "/dev/" + disk])
            if rc is None:   # a disk smartctl cannot answer for within the limit is worth a look before trusting it
                self.warnings.append("SMART self-test check of /dev/%s: %s" % (disk, err))
            try:
                selftest = smart_selftest(json.loads(out))
            except ValueError:
                selftest = {"in_progress": None, "remaining_percent": None, "protocol": None,
                            "detail": err if rc is None else "smartctl printed no JSON (exit %d)" % rc}
            selftest.update(disk=disk, smartctl_exit=rc)
            report["disks"].append(selftest)
            if selftest["in_progress"]:
                problems.append("a SMART self-test runs on /dev/%s (%s%% remaining)" % (disk, selftest["remaining_percent"]))
        return report

    # ---------------------------------------------------------------- idle window

    def load_source(self):
        """(cpu.stat path or None, why): where the idle gate reads this host's own load. In a container the load
        average is the machine's; its own cgroup root's CPU time is used instead when it is certainly its own."""
        wanted = self.params["idle_load_source"]
        if wanted == "loadavg":
            return None, "loadavg (idle_load_source=loadavg)"
        try:
            pid1_environ = self.read_text(os.path.join(PROC, "1", "environ"))
        except OSError:
            pid1_environ = ""
        # systemd writes /run/systemd/container when it runs in one; other inits get container= from the engine.
        container = os.path.exists("/run/systemd/container") or "\0container=" in "\0" + pid1_environ
        mount = cgroup2_mount(self.read_text(os.path.join(PROC, "self", "mountinfo")))
        procs = self.read_text(os.path.join(mount, "init.scope", "cgroup.procs")) if mount else ""
        path, why = q.own_cpu_counter(container, self.read_text(os.path.join(PROC, "1", "cgroup")), mount, procs)
        if path is not None and not os.path.exists(path):
            path, why = None, "%s does not exist" % path
        if wanted == "cgroup" and path is None:
            raise q.QuiesceError("idle_load_source=cgroup, but this host has no CPU counter of its own (%s); use "
                                 "auto or loadavg" % why)
        if path is None and container and self.params["idle_max_load_per_cpu"]:
            self.warnings.append("the load check reads /proc/loadavg, which in this container is the whole machine's "
                                 "(%s); set idle_max_load_per_cpu=0 if other containers share it" % why)
        return path, why

    def cpu_usage_s(self, path):
        return parse_cpu_stat(self.read_text(path)) / 1e6 if path else None

    def wait_idle(self, devices, running_jobs=None):
        """Samples until one is idle or the timeout. running_jobs() names jobs of stopped timers that still run."""
        params = self.params
        thresholds = {"max_busy_percent": params["idle_max_busy_percent"], "max_iops": params["idle_max_iops"],
                      "max_bytes_per_s": params["idle_max_bytes_per_s"],
                      "max_load_per_cpu": params["idle_max_load_per_cpu"]}
        counter, source = self.load_source()
        # The host's own CPUs: a container may be pinned to fewer than the machine has.
        cpus = (len(os.sched_getaffinity(0)) if counter else os.cpu_count()) or 1
        window = max(params["idle_window"], 0.1)
        started = time.monotonic()
        samples = []
        while True:
            before = parse_diskstats(self.read_text(os.path.join(PROC, "diskstats")))
            cpu_before = self.cpu_usage_s(counter)
            begin = time.monotonic()
            time.sleep(window)
            after = parse_diskstats(self.read_text(os.path.join(PROC, "diskstats")))
            cpu_after = self.cpu_usage_s(counter)
            end = time.monotonic()
            load1 = parse_loadavg(self.read_text(os.path.join(PROC, "loadavg")))[0]
            cpu_busy = (cpu_after - cpu_before) / (end - begin) / cpus if counter else None
            jobs = running_jobs() if running_jobs else []
            sample = q.idle_sample(before, after, end - begin, devices, load1, cpus, thresholds, cpu_busy, jobs)
            sample["at"] = sd.utc_iso(time.time())
            samples.append(sample)
            waited = time.monotonic() - started
            if sample["idle"] or waited + window > params["idle_timeout"]:
                break
        return {"reached": samples[-1]["idle"], "waited_s": round(time.monotonic() - started, 3), "window_s": window,
                "timeout_s": params["idle_timeout"], "thresholds": thresholds, "devices": list(devices),
                "load_source": "cgroup" if counter else "loadavg", "load_source_why": source,
                "windows": len(samples), "last": samples[-1], "samples": samples[-10:]}

    # ---------------------------------------------------------------- run ids and write caches

    def refuse_reused_run_id(self, verdict, lock, runs):
        """Two runs given one quiesce_run_id would share the lock: the second is refused, whatever force says."""
        advice = ("Each run needs its own quiesce_run_id: leave it empty (one is generated per playbook run) or make "
                  "it unique, for example awx-{{ awx_job_id }}")
        if verdict.status == q.REUSED:
            self.fail("refusing to quiesce: %s. %s" % (verdict.reason, advice), holder=lock)
        for entry in sd.runs_reusing(runs or {}, self.run_id, self.controller):
            theirs = entry.get("controller") or {}
            self.fail("refusing to quiesce: run id %s is already used by another run (first seen %s from controller "
                      "%s, ansible-playbook pid %s, user %s). %s"
                      % (self.run_id, entry.get("first_seen"), theirs.get("host") or "unknown",
                         theirs.get("pid") or "unknown", theirs.get("user") or "unknown", advice))

    def remember_run(self, runs):
        runs = runs or sd.new_runs_doc()
        if sd.record_run(runs, self.run_id, self.controller, time.time()):
            self.files.write(os.path.join(self.files.dir, sd.RUNS_NAME), runs)

    # ---------------------------------------------------------------- quiesced

    # ---------------------------------------------------------------- discovery (option discover)

    def discover(self):
        """disk_facts' discovery in this call, before the plan's check, the lock or anything stopped: a refusal ends the
        call here. The selected targets join O(targets) and the plan's targets; the plan's identities and classes are
        this discovery's (the benchmark role makes the same from the facts it publishes, so its request matches)."""
        # Imported here: a quiesce without discovery, and every restore, need not compile it.
        from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
        from ansible_collections.diskproof.fleet.plugins.module_utils._discovery import (
            DISCOVER_OPTIONS, Discovery, plan_request_with)
        validated = ArgumentSpecValidator(DISCOVER_OPTIONS).validate(self.params["discover"])
        if validated.error_messages:
            self.module.fail_json(msg="discover: %s (the options of diskproof.fleet.disk_facts)"
                                      % "; ".join(validated.error_messages), run_id=self.run_id)
        options = validated.validated_parameters
        facts, refusals = Discovery(self.module, options).discover()
        if refusals:
            self.module.fail_json(msg="%d refusal(s) on %s; nothing was written or stopped: %s"
                                      % (len(refusals), options["host"] or facts["diskproof_host"]["hostname"],
                                         " | ".join(refusals)),
                                  refusals=refusals, run_id=self.run_id)
        self.discovered = facts
        # Returned however the call ends well (check mode included); the quiesce adds diskproof_quiesce.
        self.result["ansible_facts"] = dict(facts)
        selected = facts["diskproof_selected_targets"]
        self.selected_paths = [target.get("path") or target["device"] for target in selected]
        if self.params["plan"]:
            self.params["plan"] = plan_request_with(self.params["plan"], facts)

    # ---------------------------------------------------------------- the plan (option plan)

    def check_plan(self):
        """The plan checked as bench_plan checks it in check mode, before the lock is taken or anything stopped: a
        refusal ends the call here. Its warnings are shown only in check mode; the plan under the lock repeats them."""
        # Imported here: a quiesce without a plan, and every restore, need not compile the planner.
        from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
        from ansible_collections.diskproof.fleet.plugins.module_utils._plan_host import PLAN_ARGUMENT_SPEC, plan_on_host
        validated = ArgumentSpecValidator(PLAN_ARGUMENT_SPEC).validate(self.params["plan"])
        if validated.error_messages:
            self.module.fail_json(msg="plan: %s (the options of diskproof.fleet.bench_plan)"
                                      % "; ".join(validated.error_messages), run_id=self.run_id)
        self.plan_params = validated.validated_parameters
        quiet = _PlanWarnings(self.module)
        self.checked_plan = plan_on_host(quiet, dict(self.plan_params, lock_run_id="", remove_leftovers_of=[]), True)
        if self.module.check_mode:
            quiet.flush()
            self.result.update(plan=self.checked_plan, plan_request=self.params["plan"])

    def make_plan(self):
        """The plan under the lock, once the host is quiet: the run directories named after this run's lock."""
        if not self.params["plan"]:
            return
        from ansible_collections.diskproof.fleet.plugins.module_utils._plan_host import plan_on_host
        recovered = (self.result.get("recovered") or {}).get("run_id")
        made = plan_on_host(self.module, dict(self.plan_params, lock_run_id=self.run_id,
                                              remove_leftovers_of=[recovered] if recovered else []),
                            False, known_tools=self.checked_plan["tools"], creator="diskproof.fleet.quiesce")
        self.result.update(plan=made, plan_request=self.params["plan"])

    def quiesce(self):
        params = self.params
        manager = self.manager()
        self.result["service_manager"] = manager
        candidates, self.result["not_applicable"] = q.candidate_units(manager, params["services"], params["timers"])
        self.files.open(create=not self.module.check_mode)
        with self.guard():
            lock, lock_error = self.files.read_lock()
            state, state_error = self.files.read_state()
            runs, runs_error = self.files.read_runs()
            unreadable = lock_error or state_error or runs_error
            if unreadable and not params["force"]:
                self.fail("refusing to quiesce: %s; inspect %s, or restore with force=true once no run uses this host"
                          % (unreadable, self.files.dir))
            if unreadable:
                self.warnings.append("force=true: ignoring %s" % unreadable)
            verdict = self.verdict(lock)
            self.refuse_reused_run_id(verdict, lock, runs)
            if verdict.status == q.HELD and not params["force"]:
                self.fail("refusing to quiesce: the host is locked by %s: %s. Wait for that run to finish, or, if it is "
                          "gone, run playbooks/restore.yml with -e quiesce_force=true" % (q.describe_holder(lock), verdict.reason),
                          holder=lock)
            foreign = state if state is not None and state["run_id"] != self.run_id else None
            reason = verdict.reason if verdict.status != q.HELD else "forced: " + verdict.reason
            if foreign is not None and verdict.status in (q.FREE, q.OURS):
                reason = "its state file was left without a lock"
            if self.module.check_mode:
                return self.quiesce_check(manager, candidates, foreign, reason, verdict)
            self.files.write(self.files.lock, self.new_lock("quiescing", lock["started"] if verdict.status == q.OURS else None))
            self.remember_run(runs)
            self.result["changed"] = verdict.status != q.OURS
        if foreign is not None:
            self.recover(foreign, reason)
            state = None
        reentry = state is not None
        try:
            # A benchmark step killed with the drive's write cache off left its original recorded: put it back now.
            self.restore_write_caches()
            top, disks = self.target_disks()
            checks, problems = self.run_checks(disks)
            self.result["checks"] = checks
            if problems:
                raise q.QuiesceError("refusing to quiesce: %s. Wait until it is over, then run again." % "; ".join(problems))
            backend = self.backend(manager)
            if manager == q.SYSTEMD and params["all_timers"]:
                candidates += [timer for timer in backend.active_timers() if timer not in candidates]
            statuses = backend.statuses(candidates)
            plan = q.select_to_stop(statuses)
            recorded = list(state["services"]) if reentry else []
            known = {item["unit"] for item in recorded}
            new = [status for status in statuses if status["unit"] in plan["stop"] and status["unit"] not in known]
            recorded += [dict(unit=s["unit"], id=s["id"], was_running=True, stopped=False, detail=s["detail"],
                              timer=s.get("timer")) for s in new]
            to_stop = [s["unit"] for s in new]
            rows = self.unit_rows(statuses, plan, state.get("units") if reentry else None)
            extra = {"not_running": plan["not_running"], "absent": plan["absent"], "unknown": plan["unknown"],
                     "masked": plan["masked"], "not_applicable": self.result["not_applicable"],
                     "targets": params["targets"], "units": rows}
            # The state file is on disk before the first stop: whatever happens next, it can be restored.
            self.files.write(self.files.state, sd.new_state(self.run_id, manager, recorded, time.time(), "stopping", **extra))
        except (q.QuiesceError, ParseError, OSError) as error:
            # Nothing stopped yet: give the host back (a re-entrant call keeps the run's earlier quiesce).
            if not reentry:
                self.release()
            self.fail(str(error))
        try:
            if to_stop:
                backend.stop(to_stop)
                self.result["changed"] = True
                _after, wrong = self.settle(backend, to_stop, False)
                if wrong:
                    raise q.QuiesceError("stopped %s but still running: %s" % (", ".join(to_stop), ", ".join(wrong)))
            for item in recorded:
                if item["unit"] in to_stop:
                    item["stopped"] = True
            if rows:
                during = {status["unit"]: status["state"] for status in backend.statuses([row["unit"] for row in rows])}
                for row in rows:
                    row["during"] = during.get(row["unit"])
                self.result.update(units=rows, unit_table=q.unit_table(rows))
            self.result["stopped"] = to_stop
            self.result["services"] = [dict(s, action="stopped" if s["unit"] in to_stop else
                                            "kept stopped" if s["unit"] in known else "left alone") for s in statuses]
            self.files.write(self.files.state, sd.new_state(self.run_id, manager, recorded, time.time(), "quiesced", **extra))
            if params["drop_caches"]:
                _blockdev.drop_caches()
            else:
                os.sync()
            self.result["caches_dropped"] = params["drop_caches"]
            devices = sorted(set(top) | disks)
            jobs = [item["timer"]["triggers"] for item in recorded if (item.get("timer") or {}).get("triggers")]
            idle = self.wait_idle(devices, (lambda: q.running_jobs(backend.statuses(jobs))) if jobs else None)
            self.result["idle"] = idle
            if not idle["reached"]:
                message = "no idle window within %d s: %s" % (params["idle_timeout"], "; ".join(idle["last"]["reasons"]))
                if params["idle_on_timeout"] == "fail":
                    raise q.QuiesceError(message)
                self.warnings.append(message + " (idle_on_timeout=continue: measuring anyway)")
            state_doc = sd.new_state(self.run_id, manager, recorded, time.time(), "quiesced", idle=idle, checks=checks, **extra)
            self.files.write(self.files.state, state_doc)
            lock_doc = self.new_lock("quiesced", self.current_lock_started())
            self.files.write(self.files.lock, lock_doc)
        except (q.QuiesceError, ParseError, OSError) as error:
            self.rollback(manager, recorded, reentry, error)
        self.result["lock"] = lock_doc
        self.make_plan()
        keys = ("run_id", "lock", "service_manager", "stopped", "recovered", "checks", "caches_dropped", "idle",
                "units")
        facts = dict((key, self.result.get(key)) for key in keys)
        idle_text = "idle after %.1f s" % idle["waited_s"] if idle["reached"] else "NOT idle after %.1f s" % idle["waited_s"]
        stopped_text = "stopped " + ", ".join(to_stop) if to_stop else "nothing to stop"
        caches_text = "caches dropped" if params["drop_caches"] else "synced"
        self.exit("quiesced: %s; %s; %s" % (stopped_text, caches_text, idle_text),
                  ansible_facts=dict(self.discovered, diskproof_quiesce=facts))

    def unit_rows(self, statuses, plan, earlier):
        """The per-unit table of a systemd quiesce: each unit's state before and what was decided (a re-entrant call
        keeps the first call's rows: its "before" is the host as found)."""
        if earlier:
            return earlier
        rows = []
        for status in statuses:
            if "state" not in status:
                continue
            decision = q.unit_decision(status, plan)
            note = q.restart_note(status.get("timer"), time.monotonic()) if status["unit"] in plan["stop"] else ""
            if note:
                decision += "; " + note
            row = {"unit": status["unit"], "before": status["state"], "during": None, "decision": decision}
            if status.get("timer"):
                row["timer_before"] = status["timer"]
            rows.append(row)
        return rows

    def current_lock_started(self):
        lock, _error = self.files.read_lock()
        return lock["started"] if lock and lock["run_id"] == self.run_id else None

    def quiesce_check(self, manager, candidates, foreign, reason, verdict):
        if foreign is not None:
            self.result["recovered"] = {"run_id": foreign["run_id"], "reason": reason,
                                        "service_manager": foreign["service_manager"],
                                        "started": sd.services_to_restore(foreign)}
            self.result["started"] = sd.services_to_restore(foreign)
        _top, disks = self.target_disks()
        checks, problems = self.run_checks(disks)
        self.result["checks"] = checks
        if problems:
            self.fail("would refuse to quiesce: %s" % "; ".join(problems))
        backend = self.backend(manager)
        if manager == q.SYSTEMD and self.params["all_timers"]:
            candidates += [timer for timer in backend.active_timers() if timer not in candidates]
        statuses = backend.statuses(candidates)
        plan = q.select_to_stop(statuses)
        rows = self.unit_rows(statuses, plan, None)
        if rows:
            self.result.update(units=rows, unit_table=q.unit_table(rows))
        self.result["services"] = [dict(s, action="would stop" if s["unit"] in plan["stop"] else "left alone") for s in statuses]
        self.result["stopped"] = plan["stop"]
        self.exit("check mode: would %s" % ("stop " + ", ".join(plan["stop"]) if plan["stop"] else "stop nothing"),
                  changed=verdict.status != q.OURS or bool(plan["stop"]))

    def recover(self, foreign, reason):
        """Restore what a dead run left stopped, before anything else happens on the host."""
        try:
            started = self.restore_state(foreign)
        except q.QuiesceError as error:
            self.fail("cannot restore what run %s left stopped (%s): %s. Fix it, then run playbooks/restore.yml"
                      % (foreign["run_id"], reason, error))
        self.files.remove(self.files.state)
        self.result["changed"] = True
        self.result["started"] = started
        self.result["recovered"] = {"run_id": foreign["run_id"], "reason": reason,
                                    "service_manager": foreign["service_manager"], "started": started}

    def rollback(self, manager, recorded, reentry, error):
        """Quiesce failed half-way: start what this run stopped, drop its state and lock, then fail."""
        state = sd.new_state(self.run_id, manager, recorded, time.time(), "rolling back")
        try:
            started = self.restore_state(state)
            self.files.remove(self.files.state)
            self.release()
        except (q.QuiesceError, OSError) as undo_error:
            self.fail("quiesce failed (%s) and undoing it failed too (%s); the state file %s is kept: run "
                      "playbooks/restore.yml" % (error, undo_error, self.files.state))
        self.fail("quiesce failed, host restored (started %s): %s" % (", ".join(started) or "nothing", error),
                  started=started, stopped=[])

    # ---------------------------------------------------------------- restored


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["quiesced", "restored"]),
            run_id=dict(type="str", required=True),
            controller=dict(type="dict", default={}),
            state_dir=dict(type="path", default="/var/lib/diskproof"),
            services=dict(type="list", elements="str", default=["cron", "crond", "atd", "anacron"]),
            timers=dict(type="list", elements="str", default=DEFAULT_TIMERS),
            all_timers=dict(type="bool", default=False),
            service_manager=dict(type="str", default="auto", choices=["auto", "systemd", "sysv"]),
            targets=dict(type="list", elements="path", default=[]),
            drop_caches=dict(type="bool", default=True),
            checks=dict(type="list", elements="str", default=["md_resync", "smart_selftest", "competing_io"],
                        choices=["md_resync", "smart_selftest", "competing_io"]),
            competing_tools=dict(type="list", elements="str", default=["fio", "dd"]),
            idle_window=dict(type="float", default=5),
            idle_timeout=dict(type="int", default=300),
            idle_max_busy_percent=dict(type="float", default=5),
            idle_max_iops=dict(type="float", default=20),
            idle_max_bytes_per_s=dict(type="float", default=1048576),
            idle_max_load_per_cpu=dict(type="float", default=0.5),
            idle_on_timeout=dict(type="str", default="fail", choices=["fail", "continue"]),
            idle_load_source=dict(type="str", default="auto", choices=["auto", "loadavg", "cgroup"]),
            lease=dict(type="int", default=43200),
            force=dict(type="bool", default=False),
            foreign_lock=dict(type="str", default="fail", choices=["fail", "skip"]),
            plan=dict(type="dict"),
            discover=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    if not module.params["run_id"].strip():
        module.fail_json(msg="run_id must not be empty")
    for name in ("idle_window", "idle_max_busy_percent", "idle_max_iops", "idle_max_bytes_per_s", "idle_max_load_per_cpu"):
        if module.params[name] < 0:
            module.fail_json(msg="%s must not be negative, got %s" % (name, module.params[name]))
    if module.params["idle_timeout"] < 0 or module.params["lease"] <= 0:
        module.fail_json(msg="idle_timeout must be >= 0 and lease > 0")
    worker = Quiesce(module)
    if module.params["discover"] is not None and module.params["state"] == "quiesced":
        worker.discover()
    if module.params["plan"] and module.params["state"] == "quiesced":
        worker.check_plan()
    try:
        if module.params["state"] == "quiesced":
            worker.quiesce()
        else:
            worker.exit(worker.restore())
    except (q.QuiesceError, RestoreFailed, OSError) as error:
        worker.fail(str(error))


if __name__ == "__main__":
    main()
