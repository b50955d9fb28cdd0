# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore of a quiesced host, host side: start exactly what the state file records as running, put back the
drives' recorded write-cache settings, remove dead steps' job files, release the lock.

    Files(state_dir)                          the lock, state, runs and write-cache files of the state directory
    Restorer(module, state_dir, run_id, ...)  one run's view of them: the lock verdict, restore_state, release,
                                              and restore() - the whole restore, returning its message or raising
                                              RestoreFailed (the result so far in .result)

Shared by the quiesce module (state=restored; its quiesce builds on Restorer for the recovery of an aborted run and
the rollback of a failed quiesce) and bench_run's last test (restore_when_done: one module call per host fewer than
a restore task). `module` is the AnsibleModule: run_command, get_bin_path, check_mode. The decisions (lock verdict,
services, timers) are _quiesce.py's; the files are _state_dir.py's.
"""

import contextlib
import os
import time

from . import _quiesce as q
from . import _state_dir as sd
from . import _write_cache
from ._parse.errors import ParseError
from ._parse.write_cache import parse_write_cache

# TZ=UTC: systemctl prints timestamps in the local zone; the timer rules compare them with UTC.
LOCALE_C = {"LANG": "C", "LC_ALL": "C", "TZ": "UTC"}
SETTLE_TIMEOUT_S = 15
PROC = "/proc"


class RestoreFailed(Exception):
    """The restore stopped; the message says what is kept and what to do. Restorer.result holds what it did."""


class Files:
    """The lock, the state, runs and write-cache files in state_dir (module_utils/_state_dir.py: a private directory,
    files opened relative to it without following symlinks, atomic writes with unpredictable temporary names)."""

    def __init__(self, state_dir):
        self.dir = state_dir
        self.lock = os.path.join(state_dir, sd.LOCK_NAME)
        self.state = os.path.join(state_dir, sd.STATE_NAME)
        self.write_cache = os.path.join(state_dir, sd.WRITE_CACHE_NAME)
        self.opened = None

    def open(self, create):
        """Check (and with create, make) the directory; False when it does not exist. QuiesceError when it is not
        private: another owner, group/world-writable, a symlink or a parent others may write."""
        self.opened = sd.StateDir(self.dir, create=create)
        return self.opened.exists

    def read(self, path, parser):
        """(document or None, error message or None)."""
        if self.opened is None or not self.opened.exists:
            return None, None
        return self.opened.read(os.path.basename(path), parser)

    def read_lock(self):
        return self.read(self.lock, sd.parse_lock)

    def read_state(self):
        return self.read(self.state, sd.parse_state)

    def read_runs(self):
        return self.read(os.path.join(self.dir, sd.RUNS_NAME), sd.parse_runs_doc)

    def read_write_cache(self):
        return self.read(self.write_cache, sd.parse_write_cache_doc)

    def write(self, path, document):
        self.opened.write(os.path.basename(path), document)

    def remove(self, path):
        self.opened.remove(os.path.basename(path))

    def mutex(self):
        return self.opened.mutex(sd.MUTEX_TIMEOUT_S)


class Restorer:
    """One run's view of the host's quiesce state (run_id, and the controller identity its lock records), and the
    restore. force and foreign_lock are the quiesce module's options of those names; lease is the lock's lease
    while restoring."""

    def __init__(self, module, state_dir, run_id, controller, force=False, foreign_lock="fail",
                 lease=sd.DEFAULT_LEASE_S):
        self.module = module
        self.files = Files(state_dir)
        self.run_id = run_id
        self.controller = controller or {}
        self.force = force
        self.foreign_lock = foreign_lock
        self.lease = lease
        self.boot_id = sd.read_boot_id(PROC)
        self.result = dict(changed=False, run_id=run_id, lock=None, recovered=None, service_manager=None,
                           services=[], stopped=[], started=[], not_applicable=[], state_file=self.files.state)
        self.warnings = []

    def done(self, msg, **extra):
        """msg, with extra added to the result: how restore() ends."""
        self.result.update(extra)
        return msg

    def failed(self, msg, **extra):
        """RestoreFailed(msg), with extra added to the result: how restore() fails."""
        self.result.update(extra)
        return RestoreFailed(msg)

    def run(self, argv):
        rc, out, err = self.module.run_command(argv, environ_update=LOCALE_C, expand_user_and_vars=False)
        return rc, out, err

    def backend(self, manager):
        if manager == q.SYSTEMD:
            systemctl = self.module.get_bin_path("systemctl")
            if systemctl is None:
                raise q.QuiesceError("systemctl not found in PATH: the state file names a systemd host")
            return q.SystemdServices(self.run, systemctl)
        return q.SysvServices(self.run, self.module.get_bin_path("service"))

    def guard(self):
        """The mutex around lock changes; nothing (and no file created) in check mode."""
        if self.module.check_mode:
            return contextlib.nullcontext()
        return self.files.mutex()

    def new_lock(self, phase, started=None):
        return sd.new_lock(self.run_id, self.controller, self.boot_id, os.getpid(), sd.process_start(os.getpid(), PROC),
                           time.time(), self.lease, phase, started)

    def verdict(self, lock):
        return q.lock_verdict(lock, self.run_id, self.controller, self.boot_id, time.time(),
                              lambda pid, start: sd.process_alive(pid, start, PROC))

    def settle(self, backend, units, running):
        """Poll until every unit is (not) running: SysV daemons write their pidfile after forking."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            statuses = backend.statuses(units)
            wrong = [status["unit"] for status in statuses if status["running"] is not running]
            if not wrong or time.monotonic() > deadline:
                return statuses, wrong
            time.sleep(0.2)

    def restore_state(self, state):
        """Start every unit the state records as running; raises QuiesceError when one does not run after.

        systemd: first make the Persistent= timers this run stopped forget a calendar time that passed while
        they were stopped (else each runs its job at once), then start, then read every recorded unit again
        for the per-unit table (before / during / after)."""
        backend = self.backend(state["service_manager"])
        units = sd.services_to_restore(state)
        skipped = []
        if state["service_manager"] == q.SYSTEMD:
            skipped = q.missed_runs([item for item in state["services"] if item.get("was_running")], time.time())
            method = backend.forget_missed_runs([item["timer"] for item in skipped])
            for item in skipped:
                item["method"] = method
        if units:
            backend.start(units)
            _statuses, wrong = self.settle(backend, units, True)
            if wrong:
                raise q.QuiesceError("started %s but not running: %s" % (", ".join(units), ", ".join(wrong)))
        if state["service_manager"] == q.SYSTEMD:
            self.report_units(backend, state.get("units") or [], skipped)
        return units

    def report_units(self, backend, rows, skipped):
        """The per-unit table after a restore, each unit's state after next to the recorded before and during;
        a unit whose state differs from before is named in a warning. The skipped jobs get their next run."""
        after = {status["unit"]: status for status in backend.statuses([row["unit"] for row in rows])}
        table = []
        for row in rows:
            status = after.get(row["unit"]) or {}
            row = dict(row, after=status.get("state"))
            if status.get("timer"):
                row["timer_after"] = status["timer"]
            row["same"] = q.same_state(row.get("before"), row["after"])
            table.append(row)
        for item in skipped:
            timer = (after.get(item["timer"]) or {}).get("timer") or {}
            item["next"] = timer.get("next_elapse")
        changed = [row["unit"] for row in table if not row["same"]]
        if changed:
            self.warnings.append("not in the state they were found in before the quiesce (see units): %s"
                                 % ", ".join(changed))
        self.result.update(units=table, unit_table=q.unit_table(table), skipped_runs=skipped)

    def restore_write_caches(self):
        """Put back every original write-cache setting a benchmark step recorded and did not restore (it was killed),
        read each back, and forget it once it reads right. QuiesceError naming what could not be restored."""
        self.result.setdefault("write_cache", [])
        with self.files.mutex():
            document, error = self.files.read_write_cache()
            if error:
                raise q.QuiesceError("%s; fix or remove it after restoring the write caches it names by hand" % error)
            if not document or not document["devices"]:
                return
            problems = []
            for device, entry in sorted(document["devices"].items()):
                outcome, problem = self.restore_write_cache(device, entry)
                self.result["write_cache"].append(outcome)
                if problem:
                    problems.append(problem)
                else:
                    del document["devices"][device]
            self.files.write(self.files.write_cache, document)
            self.result["changed"] = True
        if problems:
            raise q.QuiesceError("; ".join(problems))

    def restore_write_cache(self, device, entry):
        """(outcome, problem or None) of putting one disk's recorded original back."""
        wanted = entry["enabled"]
        word = "on" if wanted else "off"
        outcome = {"device": device, "original": wanted, "found": None, "restored": False,
                   "method": entry.get("method"), "run_id": entry.get("run_id")}
        what = "the write cache of %s (originally %s, recorded %s by run %s)" % (
            device, word, entry.get("recorded"), entry.get("run_id"))
        transport, why = _write_cache.write_cache_transport(device)
        if transport is None:
            return outcome, "cannot restore %s: %s; if that disk is gone, remove its entry from %s" % (
                what, why, self.files.write_cache)
        wwid = sd.read_wwid(device)
        if entry.get("wwid") and wwid != entry["wwid"]:
            return outcome, ("not restoring %s: %s is now another disk (wwid %s, recorded %s); restore that disk by "
                             "hand and remove its entry from %s"
                             % (what, device, wwid, entry["wwid"], self.files.write_cache))
        commands = _write_cache.write_cache_commands(transport, device)
        binary = self.module.get_bin_path(commands.tool)
        if binary is None:
            return outcome, "cannot restore %s: %s is not installed" % (what, commands.tool)

        def read():
            rc, out, err = self.module.run_command([binary] + commands.get[1:], environ_update=LOCALE_C,
                                                   expand_user_and_vars=False)
            if rc != 0:
                raise q.QuiesceError("%s failed (exit %d): %s" % (" ".join(commands.get), rc, (err or out).strip()))
            try:
                return parse_write_cache(transport, out + err).enabled
            except ParseError as error:
                raise q.QuiesceError("%s: %s" % (" ".join(commands.get), error))
        manual = " ".join(commands.on if wanted else commands.off)
        try:
            outcome["found"] = read()
            if outcome["found"] != wanted:
                argv = commands.on if wanted else commands.off
                rc, out, err = self.module.run_command([binary] + argv[1:], environ_update=LOCALE_C,
                                                       expand_user_and_vars=False)
                if rc != 0:
                    raise q.QuiesceError("%s failed (exit %d): %s" % (manual, rc, (err or out).strip()))
            outcome["restored"] = read() == wanted
        except q.QuiesceError as error:
            return outcome, "cannot restore %s: %s; restore it by hand: %s" % (what, error, manual)
        if not outcome["restored"]:
            return outcome, "%s still reads %s after %s; restore it by hand" % (what, "off" if wanted else "on", manual)
        return outcome, None

    def release(self):
        with self.files.mutex():
            lock, _error = self.files.read_lock()
            if lock is not None and lock["run_id"] == self.run_id:
                self.files.remove(self.files.lock)

    def restore(self):
        """The whole restore: the message of how it ended (nothing to do, left alone, check mode, restored), or
        RestoreFailed saying what is kept and what to do."""
        if not self.files.open(create=False):
            return self.done("nothing to restore: %s does not exist" % self.files.dir)
        with self.guard():
            lock, lock_error = self.files.read_lock()
            state, state_error = self.files.read_state()
            caches, caches_error = self.files.read_write_cache()
            if caches_error:
                raise self.failed("refusing to restore: %s; fix or remove it (it records the drives' original "
                                  "write-cache settings: restore them by hand first)" % caches_error)
            caches_left = bool(caches and caches["devices"])
            unreadable = lock_error or state_error
            if lock is None and state is None and not unreadable and not caches_left:
                return self.done("nothing to restore: no lock, no state file and no write-cache record in %s"
                                 % self.files.dir)
            if unreadable and not self.force:
                raise self.failed("refusing to restore: %s; with force=true the unreadable file is removed"
                                  % unreadable)
            if unreadable:
                self.warnings.append("force=true: removing %s without restoring anything it names" % unreadable)
            verdict = self.verdict(lock)
            if verdict.status in (q.HELD, q.REUSED) and not self.force:
                held = "another run holds the lock: %s: %s" % (q.describe_holder(lock), verdict.reason)
                if self.foreign_lock == "skip":
                    return self.done("left alone: " + held, left_alone=held, holder=lock)
                raise self.failed("refusing to restore: %s. If that run is gone, run again with force=true" % held,
                                  holder=lock)
            units = sd.services_to_restore(state) if state else []
            if state is not None and state["run_id"] != self.run_id:
                self.result["recovered"] = {"run_id": state["run_id"], "reason": verdict.reason if lock else
                                            "its state file was left without a lock",
                                            "service_manager": state["service_manager"], "started": units}
            if self.module.check_mode:
                caches_text = (", restore the write cache of " + ", ".join(sorted(caches["devices"]))
                               if caches_left else "")
                return self.done("check mode: would start %s%s and release the lock"
                                 % (", ".join(units) or "nothing", caches_text), changed=True, started=units)
            self.files.write(self.files.lock, self.new_lock("restoring"))
        if state is not None:
            try:
                self.restore_state(state)
            except q.QuiesceError as error:
                raise self.failed("restore failed, the state file %s is kept (run again once fixed): %s"
                                  % (self.files.state, error)) from error
            self.files.remove(self.files.state)
        if state_error:
            self.files.remove(self.files.state)
        try:
            self.restore_write_caches()
        except q.QuiesceError as error:
            raise self.failed("restore failed, the write-cache record %s and the lock are kept (run again once fixed): "
                              "%s" % (self.files.write_cache, error)) from error
        removed = self.files.opened.remove_dead_job_files()
        if removed:
            self.result["removed_job_files"] = removed
        self.release()
        self.result["service_manager"] = state["service_manager"] if state else None
        return self.done("restored: started %s; lock released" % (", ".join(units) or "nothing"), changed=True,
                         started=units)
