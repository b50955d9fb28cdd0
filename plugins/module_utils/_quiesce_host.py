# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's quiesce made on the host (the quiesce module's state=quiesced): the lock, the checks before anything is
stopped (md resync, a SMART self-test, competing I/O on the targets), the services stopped with their state on disk
first, the caches dropped, the idle window awaited; the discovery and the plan of the same call (options discover
and plan: _discovery.discover_in_call, _plan_host.check_plan and make_plan). It runs on the restore's plumbing
(_restore.Restorer), which it also uses to recover what an aborted run left stopped and to roll back a quiesce that
failed half-way. The decisions are _quiesce.py's, the files _state_dir.py's. No Ansible imports: ``module`` is the
AnsibleModule."""
from __future__ import annotations

import json
import os
import time

from . import _blockdev, _proc
from . import _quiesce as q
from . import _state_dir as sd
from ._parse.cgroup import parse_cpu_stat
from ._parse.diskstats import parse_diskstats
from ._parse.errors import ParseError
from ._parse.loadavg import parse_loadavg
from ._parse.mdstat import parse_mdstat
from ._parse.mountinfo import cgroup2_mount
from ._parse.smartctl import smart_selftest
from ._restore import PROC, Restorer

DEFAULT_TIMERS = ["fstrim.timer", "logrotate.timer", "man-db.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
                  "dnf-makecache.timer", "e2scrub_all.timer", "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer",
                  "plocate-updatedb.timer", "mlocate-updatedb.timer", "sysstat-collect.timer", "sysstat-summary.timer"]


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

    # ---------------------------------------------------------------- discovery (option discover)

    def discover(self):
        """disk_facts' discovery in this call, before the plan's check, the lock or anything stopped: a refusal ends the
        call there (_discovery.discover_in_call). The selected targets join O(targets) and the plan's targets; the
        plan's identities and classes are this discovery's (the benchmark role makes the same from the facts it
        publishes, so its request matches)."""
        # Imported here: a quiesce without discovery, and every restore, need not compile it.
        from ._discovery import discover_in_call, plan_request_with
        facts = discover_in_call(self.module, self.params["discover"], self.run_id)
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
        refusal ends the call there. Its warnings are shown only in check mode; the plan under the lock repeats them."""
        # Imported here: a quiesce without a plan, and every restore, need not compile the planner.
        from ._plan_host import check_plan, validated_plan_options
        self.plan_params = validated_plan_options(self.module, self.params["plan"], self.run_id)
        self.checked_plan, warnings = check_plan(self.module, self.plan_params)
        if self.module.check_mode:
            warnings.flush()
            self.result.update(plan=self.checked_plan, plan_request=self.params["plan"])

    def make_plan(self):
        """The plan under the lock, once the host is quiet: the run directories named after this run's lock."""
        if not self.params["plan"]:
            return
        from ._plan_host import make_plan
        made = make_plan(self.module, self.plan_params, self.run_id, (self.result.get("recovered") or {}).get("run_id"),
                         self.checked_plan["tools"])
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
