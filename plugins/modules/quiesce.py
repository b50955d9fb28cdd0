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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce as q
from ansible_collections.diskproof.fleet.plugins.module_utils._quiesce_host import DEFAULT_TIMERS, Quiesce
from ansible_collections.diskproof.fleet.plugins.module_utils._restore import RestoreFailed


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
