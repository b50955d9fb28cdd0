# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quiescing a host before disk benchmarks, pure Python (no Ansible imports), Python 3.8+.

Everything the quiesce module decides lives here, as functions of text and plain data, so each
rule is a table in tests/unit/plugins/module_utils/test_quiesce.py:

    lock_verdict(lock, run_id, controller, host_boot_id, now, alive)  free | ours | held | stale | reused
    candidate_units(manager, services, timers)                      what to look at, per manager
    SystemdServices(run), SysvServices(run, ...)                    status / stop / start, argv only
    select_to_stop(statuses)                                        running -> stop, the rest stays
    select_to_stop(statuses), unit_decision, missed_runs, unit_table  systemd unit rules and the per-unit table
    idle_sample(before, after, ...)                                 one idle-window decision (diskstats snapshots)
    own_cpu_counter                                                 a container's own CPU time
    md_activity(arrays, disks_of, targets)                          md resync/recovery/check/reshape
    read_processes(...), competing_processes(...)                   other fio/dd on the targets

The text of /proc files, systemctl and smartctl is read by module_utils/_parse (diskstats, loadavg, cgroup,
mountinfo, mdstat, smartctl, systemctl, proc_pid_stat, proc_cgroup); what they return is decided on here.
The only I/O is reading /proc and /sys through a root argument (tests point it at a fake tree);
commands are run by a caller-supplied function, never here. Errors raise QuiesceError.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from ._parse.errors import ParseError
from ._parse.proc_cgroup import parse_proc_cgroup
from ._parse.systemctl import parse_list_units, parse_systemctl_show, parse_systemd_time, parse_timespan, timer_entries
from ._state_dir import SYSTEMD, SYSV, QuiesceError, parse_utc_iso, same_controller, same_run, utc_iso

FREE = "free"      # no lock
OURS = "ours"      # this run holds it
HELD = "held"      # another run holds it and may be alive: refuse
STALE = "stale"    # another run holds it and is certainly gone: take over, restore its state first
REUSED = "reused"  # another run (another controller process) holds it under this very run id: refuse

SECTOR_BYTES = 512

Runner = Callable[[List[str]], Tuple[int, str, str]]


# --------------------------------------------------------------------------------------------
# the lock decision


class Verdict(NamedTuple):
    status: str   # FREE, OURS, HELD or STALE
    reason: str


def describe_holder(lock: Mapping[str, Any]) -> str:
    controller = lock.get("controller") or {}
    return "run %s (started %s from controller %s, ansible-playbook pid %s, user %s; phase %s; lease until %s)" % (
        lock.get("run_id"), lock.get("started"), controller.get("host") or "unknown", controller.get("pid") or "unknown",
        controller.get("user") or "unknown", lock.get("phase"), lock.get("expires"))


def lock_verdict(lock: Optional[Mapping[str, Any]], run_id: str, controller: Mapping[str, Any], host_boot_id: str,
                 now: float, alive: Callable[[Any, Any], bool]) -> Verdict:
    """Who may use the host. `controller` is this run's controller identity (the lookup
    diskproof.fleet.controller_run): host, boot_id, pid_ns, pid, pid_start, seen_at (clock ticks since boot
    when it listed the processes) and live ({pid: start ticks} of the ansible processes running
    there). `alive(pid, start)` answers for processes on this host.

    A holder is stale only when it certainly is gone: the host rebooted since, or its controller
    is this very controller and its ansible-playbook process is no longer in the list, or its
    lease expired. Anything else is held, and the caller refuses, naming the holder. The same run id
    from another controller process is `reused`: two runs given one quiesce_run_id."""
    if lock is None:
        return Verdict(FREE, "no lock")
    if lock.get("run_id") == run_id:
        if same_run(controller, lock.get("controller") or {}):
            return Verdict(OURS, "held by this run")
        return Verdict(REUSED, "run id %s is already used by another run: %s" % (run_id, describe_holder(lock)))
    host = lock.get("host") or {}
    if host_boot_id and host.get("boot_id") and host.get("boot_id") != host_boot_id:
        return Verdict(STALE, "the host rebooted since run %s took the lock" % lock.get("run_id"))
    if host.get("pid") and alive(host.get("pid"), host.get("pid_start")):
        return Verdict(HELD, "its quiesce call or benchmark step is still running on this host (pid %s)"
                       % host.get("pid"))
    theirs = lock.get("controller") or {}
    if same_controller(controller, theirs) and isinstance(theirs.get("pid"), int):
        live = controller.get("live") or {}
        start = live.get(str(theirs["pid"]))
        if start is not None and (theirs.get("pid_start") is None or start == theirs.get("pid_start")):
            return Verdict(HELD, "its ansible-playbook (pid %s) is running on this controller" % theirs["pid"])
        seen_at = controller.get("seen_at")
        if not isinstance(seen_at, int) or not isinstance(theirs.get("pid_start"), int) or theirs["pid_start"] >= seen_at:
            return Verdict(HELD, "its ansible-playbook (pid %s) started after this run listed the processes" % theirs["pid"])
        return Verdict(STALE, "its ansible-playbook (pid %s on %s) is gone" % (theirs["pid"], theirs.get("host")))
    try:
        expires = parse_utc_iso(lock.get("expires"))
    except QuiesceError:
        expires = None
    if expires is not None and now >= expires:
        return Verdict(STALE, "its lease expired at %s" % lock.get("expires"))
    return Verdict(HELD, "it runs from another controller, which this host cannot ask")


# --------------------------------------------------------------------------------------------
# services

UNIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9@._:+-]*$")
UNIT_SUFFIXES = (".service", ".timer", ".socket", ".path", ".target", ".mount")


def check_unit_names(names: Iterable[str]) -> List[str]:
    names = list(names)
    bad = [name for name in names if not isinstance(name, str) or not UNIT_NAME.match(name)]
    if bad:
        raise QuiesceError("not a service or unit name (letters, digits, @._:+- and no leading '-' or '/'): %s"
                           % ", ".join(repr(name) for name in bad))
    return names


def candidate_units(manager: str, services: Sequence[str], timers: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(units to look at, names that do not apply to this service manager), in the order given.

    systemd: a service name without a suffix means NAME.service; timers are looked at too.
    SysV: a service is an init script name; timers (and any non-.service unit) do not apply."""
    check_unit_names(list(services) + list(timers))
    wanted: List[str] = []
    skipped: List[str] = []
    for name in list(services) + list(timers):
        if manager == SYSTEMD:
            unit = name if name.endswith(UNIT_SUFFIXES) else name + ".service"
        elif name.endswith(".service"):
            unit = name[:-len(".service")]
        elif name.endswith(UNIT_SUFFIXES):
            skipped.append(name)
            continue
        else:
            unit = name
        if unit not in wanted:
            wanted.append(unit)
    return wanted, skipped


def detect_service_manager(isdir: Callable[[str], bool] = os.path.isdir, root: str = "/") -> Optional[str]:
    """systemd when it is PID 1 (the test sd_booted() makes: /run/systemd/system exists), else SysV
    when there are init scripts, else None."""
    if isdir(os.path.join(root, "run", "systemd", "system")):
        return SYSTEMD
    if isdir(os.path.join(root, "etc", "init.d")):
        return SYSV
    return None


def select_to_stop(statuses: Sequence[Mapping[str, Any]]) -> Dict[str, List[str]]:
    """Running units are stopped; units that exist but are stopped (also failed, or enabled but stopped on
    purpose), masked, absent or of unknown state are left alone: the restore starts only what was stopped.
    A masked unit is never stopped even when it runs (it could not be started again), and a second name
    of a unit already listed (an alias: same Id) is looked at once."""
    plan: Dict[str, List[str]] = {"stop": [], "not_running": [], "absent": [], "unknown": [], "masked": []}
    seen: Set[str] = set()
    for status in statuses:
        if not status.get("exists"):
            plan["absent"].append(status["unit"])
        elif status.get("masked"):
            plan["masked"].append(status["unit"])
        elif status.get("id") in seen or elapsed(status):
            plan["not_running"].append(status["unit"])
        elif status.get("running") is True:
            plan["stop"].append(status["unit"])
        elif status.get("running") is False:
            plan["not_running"].append(status["unit"])
        else:
            plan["unknown"].append(status["unit"])
        seen.add(status.get("id") or status["unit"])
    return plan


def elapsed(status: Mapping[str, Any]) -> bool:
    """A timer that fired its last time (SubState=elapsed, RemainAfterElapse=yes): it counts as active but will not
    fire again; a stop and start would re-arm it (an OnActiveSec= one-shot would run its job once more)."""
    return status["unit"].endswith(".timer") and (status.get("state") or {}).get("sub") == "elapsed"


def unit_decision(status: Mapping[str, Any], plan: Mapping[str, Sequence[str]]) -> str:
    """Why a unit is stopped or left alone, in words for the per-unit table."""
    unit = status["unit"]
    state = status.get("state") or {}
    if unit in plan.get("absent", ()):
        return "left alone: not on this host"
    if unit in plan.get("masked", ()):
        return "left alone: masked (never stopped, started or unmasked)"
    if unit in plan.get("unknown", ()):
        return "left alone: state unknown (%s)" % status.get("detail")
    if unit in plan.get("stop", ()):
        return "stopped: %s" % (state.get("active") or "running")
    if elapsed(status):
        return "left alone: elapsed (fires no more; a restart would re-arm it)"
    if state.get("active") == "failed":
        return "left alone: failed (not started by the restore)"
    if state.get("file") in ("enabled", "enabled-runtime"):
        return "left alone: enabled but stopped (on purpose; not started by the restore)"
    return "left alone: %s" % (state.get("active") or "not running")


SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "Unit", "Persistent",
                   "NextElapseUSecRealtime", "LastTriggerUSec", "TimersCalendar", "TimersMonotonic")
RUNNING_STATES = ("active", "activating", "reloading")
# What a Type=oneshot job shows while it runs; `active` + `exited` is a RemainAfterExit unit that is done.
JOB_RUNNING_STATES = ("activating", "deactivating", "reloading")
TIMER_STAMP_DIR = "/var/lib/systemd/timers"


def timer_facts(block: Mapping[str, str]) -> Dict[str, Any]:
    """What the quiesce needs to know about a timer: the service it starts, Persistent=, its next
    elapse, the next calendar time without RandomizedDelaySec (what a Persistent= catch-up compares
    with), last trigger, and the boot-relative (OnBootSec=/OnStartupSec=) elapses on CLOCK_MONOTONIC."""
    calendar = [parse_systemd_time(elapse) for _key, _value, elapse in timer_entries(block.get("TimersCalendar"))]
    calendar = [moment for moment in calendar if moment is not None]
    monotonic = timer_entries(block.get("TimersMonotonic"))
    boot_relative = [parse_timespan(elapse) for key, _value, elapse in monotonic if key in ("OnBootUSec", "OnStartupUSec")]
    on_active = [parse_timespan(value) for key, value, _elapse in monotonic if key == "OnActiveUSec"]
    return {
        "triggers": block.get("Unit") or None,
        "persistent": block.get("Persistent") == "yes",
        "next_elapse": block.get("NextElapseUSecRealtime") or None,
        "calendar_next_s": min(calendar) if calendar else None,
        "last_trigger": block.get("LastTriggerUSec") or None,
        "boot_relative_s": [value for value in boot_relative if value is not None],
        "on_active_s": [value for value in on_active if value is not None],
    }


def unit_state(block: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """The four states the per-unit table shows before, during and after."""
    return {"load": block.get("LoadState"), "active": block.get("ActiveState"), "sub": block.get("SubState"),
            "file": block.get("UnitFileState") or None}


def systemd_status(unit: str, block: Mapping[str, str]) -> Dict[str, Any]:
    load = block.get("LoadState")
    active = block.get("ActiveState")
    known = load in ("loaded", "masked")
    status = {
        "unit": unit,
        "id": block.get("Id", unit),
        "exists": bool(load) and load != "not-found",
        "masked": load == "masked",
        "running": active in RUNNING_STATES if active and known else None,
        "state": unit_state(block),
        "detail": "LoadState=%s ActiveState=%s SubState=%s UnitFileState=%s"
                  % (load, active, block.get("SubState"), block.get("UnitFileState") or ""),
    }
    if unit.endswith(".timer"):
        status["timer"] = timer_facts(block) if load == "loaded" else None
    return status


def state_text(state: Optional[Mapping[str, Any]]) -> str:
    """'active/running enabled', 'not-found', 'masked' for one cell of the per-unit table."""
    if not state:
        return "-"
    if state.get("load") == "not-found":
        return "not-found"
    text = "%s/%s" % (state.get("active"), state.get("sub"))
    if state.get("load") not in ("loaded", None):
        text = "%s %s" % (state.get("load"), text)
    return "%s %s" % (text, state.get("file")) if state.get("file") else text


def same_state(before: Optional[Mapping[str, Any]], after: Optional[Mapping[str, Any]]) -> bool:
    """Restored as found: same load and unit-file state (enabled, masked, static...) and the same activity,
    where the running states (active, activating, reloading) count as one."""
    if not before or not after:
        return before == after

    def activity(state: Mapping[str, Any]) -> Optional[str]:
        return "running" if state.get("active") in RUNNING_STATES else state.get("active")
    return (before.get("load") == after.get("load") and before.get("file") == after.get("file")
            and activity(before) == activity(after))


def fires_on_start(timer: Optional[Mapping[str, Any]], monotonic_now: float) -> bool:
    """A timer whose OnBootSec=/OnStartupSec= time is already past elapses at once when started again
    (systemd.timer(5)): its job runs right after the restore."""
    return bool(timer) and any(value <= monotonic_now for value in timer.get("boot_relative_s") or [])


def restart_note(timer: Optional[Mapping[str, Any]], monotonic_now: float) -> str:
    """What starting a stopped timer again does besides re-arming its schedule, for the per-unit table."""
    notes = []
    if fires_on_start(timer, monotonic_now):
        notes.append("OnBootSec= is past, so its job runs once when the restore starts it (systemd.timer(5))")
    if timer and timer.get("on_active_s"):
        notes.append("OnActiveSec= counts from the restore: its job runs %g s after it" % min(timer["on_active_s"]))
    return "; ".join(notes)


def missed_runs(records: Sequence[Mapping[str, Any]], now: float) -> List[Dict[str, Any]]:
    """Persistent= timers this run stopped whose calendar time passed while they were stopped: started
    again as they are, each would run its job at once (it compares its stamp with the calendar)."""
    missed = []
    for record in records:
        timer = record.get("timer") or {}
        due = timer.get("calendar_next_s")
        if record.get("stopped") and timer.get("persistent") and due is not None and due <= now:
            missed.append({"timer": record["unit"], "service": timer.get("triggers"), "due": utc_iso(due)})
    return missed


def running_jobs(statuses: Sequence[Mapping[str, Any]]) -> List[str]:
    """Services (started by a stopped timer) whose job still runs: activating, or active and not yet exited."""
    busy = []
    for status in statuses:
        state = status.get("state") or {}
        active = state.get("active")
        if active in JOB_RUNNING_STATES or (active == "active" and state.get("sub") != "exited"):
            busy.append(status["unit"])
    return busy


def unit_table(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """The per-unit table (markdown): unit, before, during, after, what the quiesce did, same before/after."""
    lines = ["| unit | before | during | after | quiesce | before = after |", "|---|---|---|---|---|---|"]
    for row in rows:
        same = row.get("same")
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            row["unit"], state_text(row.get("before")), state_text(row.get("during")), state_text(row.get("after")),
            row.get("decision", ""), "-" if same is None else ("yes" if same else "NO")))
    return lines


class SystemdServices:
    """systemctl, one call per step: show all candidates, stop all, start all (without waiting for the
    start jobs: a unit that was `activating` may stay so; the caller polls until each runs)."""

    name = SYSTEMD

    def __init__(self, run: Runner, systemctl: str = "systemctl",
                 touch: Callable[[str], None] = os.utime) -> None:
        self.run = run
        self.systemctl = systemctl
        self.touch = touch

    def argv(self, action: str, units: Sequence[str]) -> List[str]:
        if action == "show":
            return [self.systemctl, "show", "--property=" + ",".join(SHOW_PROPERTIES), "--"] + list(units)
        if action == "start":
            return [self.systemctl, "start", "--no-block", "--"] + list(units)
        if action == "clean":
            return [self.systemctl, "clean", "--what=state", "--"] + list(units)
        return [self.systemctl, action, "--"] + list(units)

    def statuses(self, units: Sequence[str]) -> List[Dict[str, Any]]:
        if not units:
            return []
        rc, out, err = self.run(self.argv("show", units))
        if rc != 0:
            raise QuiesceError("systemctl show failed (exit %d): %s" % (rc, (err or out).strip()))
        try:
            blocks = parse_systemctl_show(out)
            if len(blocks) != len(units):
                raise QuiesceError("systemctl show returned %d blocks for %d units" % (len(blocks), len(units)))
            return [systemd_status(unit, block) for unit, block in zip(units, blocks)]
        except ParseError as error:
            raise QuiesceError(str(error)) from None

    def _act(self, action: str, units: Sequence[str]) -> None:
        if units:
            rc, out, err = self.run(self.argv(action, units))
            if rc != 0:
                raise QuiesceError("systemctl %s %s failed (exit %d): %s" % (action, " ".join(units), rc, (err or out).strip()))

    def stop(self, units: Sequence[str]) -> None:
        self._act("stop", units)

    def start(self, units: Sequence[str]) -> None:
        self._act("start", units)

    def active_timers(self) -> List[str]:
        """Every timer that is active now (for all_timers)."""
        rc, out, err = self.run([self.systemctl, "list-units", "--type=timer", "--state=active", "--no-legend",
                                 "--plain", "--full"])
        if rc != 0:
            raise QuiesceError("systemctl list-units --type=timer failed (exit %d): %s" % (rc, (err or out).strip()))
        names = parse_list_units(out)
        return check_unit_names([name for name in names if name.endswith(".timer")])

    def forget_missed_runs(self, timers: Sequence[str]) -> str:
        """Make stopped Persistent= timers forget the calendar time they missed, so that starting them does
        not run the job at once: `systemctl clean --what=state` removes the stamp (systemd.timer(5)); on a
        systemd without `clean` (before 243) the stamp is set to now instead. Returns the method used."""
        if not timers:
            return ""
        rc, out, err = self.run(self.argv("clean", timers))
        if rc == 0:
            return "systemctl clean --what=state"
        try:
            for timer in timers:
                self.touch(os.path.join(TIMER_STAMP_DIR, "stamp-" + timer))
        except OSError as error:
            raise QuiesceError("cannot make %s skip the run missed while quiesced: systemctl clean failed (exit %d: "
                               "%s) and touching the stamp failed (%s)"
                               % (", ".join(timers), rc, (err or out).strip(), error))
        return "stamp set to now (%s)" % TIMER_STAMP_DIR


class SysvServices:
    """`service NAME status|stop|start` (or /etc/init.d/NAME when there is no `service`).

    LSB status codes: 0 running; 1, 2, 3 not running; anything else unknown. A name without an
    executable init script does not exist here."""

    name = SYSV

    def __init__(self, run: Runner, service: Optional[str], init_dir: str = "/etc/init.d",
                 executable: Callable[[str], bool] = lambda path: os.path.isfile(path) and os.access(path, os.X_OK)) -> None:
        self.run = run
        self.service = service
        self.init_dir = init_dir
        self.executable = executable

    def argv(self, action: str, name: str) -> List[str]:
        if self.service:
            return [self.service, name, action]
        return [os.path.join(self.init_dir, name), action]

    def statuses(self, names: Sequence[str]) -> List[Dict[str, Any]]:
        result = []
        for name in names:
            if not self.executable(os.path.join(self.init_dir, name)):
                result.append({"unit": name, "id": name, "exists": False, "running": None, "detail": "no init script"})
                continue
            rc, out, err = self.run(self.argv("status", name))
            running = True if rc == 0 else False if rc in (1, 2, 3) else None
            detail = ("%s (exit %d)" % ((out or err).strip().splitlines()[-1] if (out or err).strip() else "", rc)).strip()
            result.append({"unit": name, "id": name, "exists": True, "running": running, "detail": detail})
        return result

    def _act(self, action: str, names: Sequence[str]) -> None:
        failures = []
        for name in names:
            rc, out, err = self.run(self.argv(action, name))
            if rc != 0:
                failures.append("%s (exit %d: %s)" % (name, rc, (err or out).strip()))
        if failures:
            raise QuiesceError("service %s failed for %s" % (action, "; ".join(failures)))

    def stop(self, names: Sequence[str]) -> None:
        self._act("stop", names)

    def start(self, names: Sequence[str]) -> None:
        self._act("start", names)


# --------------------------------------------------------------------------------------------
# block devices under the targets


def whole_disk_of(name: str, sys_root: str = "/sys") -> str:
    """'sda' for 'sda1' (the kernel marks partitions with a `partition` file), else name itself."""
    node = os.path.realpath(os.path.join(sys_root, "class", "block", name))
    if os.path.exists(os.path.join(node, "partition")):
        return os.path.basename(os.path.dirname(node))
    return name


def disks_under(name: str, sys_root: str = "/sys", _seen: Optional[Set[str]] = None) -> Set[str]:
    """The whole disk of `name` and, through /sys/block/<disk>/slaves, every disk under it (md
    members, LVM/dm physical volumes, recursively): the devices whose activity competes."""
    seen = _seen if _seen is not None else set()
    disk = whole_disk_of(name, sys_root)
    if disk in seen:
        return set()
    seen.add(disk)
    result = {disk}
    try:
        slaves = sorted(os.listdir(os.path.join(sys_root, "block", disk, "slaves")))
    except OSError:
        slaves = []
    for slave in slaves:
        result |= disks_under(slave, sys_root, seen)
    return result


def physical_disks(disks: Iterable[str], sys_root: str = "/sys") -> List[str]:
    """Disks backed by hardware (they have a `device` link): the ones SMART can be asked about.
    loop, md, dm, ram and zram devices have none."""
    return sorted(disk for disk in disks if os.path.exists(os.path.join(sys_root, "block", disk, "device")))


# --------------------------------------------------------------------------------------------
# idle window


def idle_sample(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]], seconds: float,
                devices: Sequence[str], load1: float, cpus: int, thresholds: Mapping[str, float],
                cpu_busy: Optional[float] = None, busy_jobs: Sequence[str] = ()) -> Dict[str, Any]:
    """One window: per-device IOPS, bytes/s and busy % (io_ticks) between two diskstats snapshots,
    and the 1-minute load per CPU, judged against max_iops, max_bytes_per_s, max_busy_percent and
    max_load_per_cpu (0 turns the load check off). Idle when nothing exceeds its threshold.

    cpu_busy, when given, is the host's own CPU use in the window (CPU-seconds per second per CPU, from
    its cgroup: see own_cpu_counter) and is judged against max_load_per_cpu instead of the load average,
    which in a container is the whole machine's. busy_jobs are jobs of stopped timers still running.

    Busy % alone misses throttled I/O (a blkio throttle delays requests before the driver sees
    them: a loop device read at 32 MiB/s showed 0.2 % busy), so IOPS and bytes/s count too."""
    if seconds <= 0:
        raise QuiesceError("an idle window needs a positive duration, got %r" % seconds)
    reasons: List[str] = []
    measured: Dict[str, Dict[str, float]] = {}
    for device in devices:
        if device not in before or device not in after:
            raise QuiesceError("device %s is not in /proc/diskstats" % device)
        old, new = before[device], after[device]
        ops = (new["reads"] - old["reads"]) + (new["writes"] - old["writes"])
        sectors = (new["read_sectors"] - old["read_sectors"]) + (new["write_sectors"] - old["write_sectors"])
        busy = min(100.0, (new["io_ticks_ms"] - old["io_ticks_ms"]) / (seconds * 10.0))
        figures = {"iops": round(ops / seconds, 2), "bytes_per_s": round(sectors * SECTOR_BYTES / seconds, 1),
                   "busy_percent": round(busy, 2), "in_flight": new["in_flight"]}
        measured[device] = figures
        if figures["iops"] > thresholds["max_iops"]:
            reasons.append("%s: %.1f IOPS > %g" % (device, figures["iops"], thresholds["max_iops"]))
        if figures["bytes_per_s"] > thresholds["max_bytes_per_s"]:
            reasons.append("%s: %.0f B/s > %g" % (device, figures["bytes_per_s"], thresholds["max_bytes_per_s"]))
        if figures["busy_percent"] > thresholds["max_busy_percent"]:
            reasons.append("%s: busy %.1f %% > %g %%" % (device, figures["busy_percent"], thresholds["max_busy_percent"]))
    per_cpu = load1 / max(cpus, 1)
    limit = thresholds.get("max_load_per_cpu")
    if cpu_busy is not None:
        if limit and cpu_busy > limit:
            reasons.append("this host's CPU use %.2f per CPU (its cgroup, %d CPUs) > %g" % (cpu_busy, cpus, limit))
    elif limit and per_cpu > limit:
        reasons.append("load %.2f per CPU (%.2f on %d CPUs) > %g" % (per_cpu, load1, cpus, limit))
    for job in busy_jobs:
        reasons.append("%s (started by a timer before the quiesce) is still running" % job)
    sample = {"idle": not reasons, "reasons": reasons, "seconds": round(seconds, 3), "devices": measured,
              "load1": load1, "cpus": cpus, "load_per_cpu": round(per_cpu, 3)}
    if cpu_busy is not None:
        sample["cpu_busy_per_cpu"] = round(cpu_busy, 3)
    return sample


def own_cpu_counter(container: bool, pid1_cgroup: str, mount: Optional[str],
                    init_scope_procs: str = "1\n") -> Tuple[Optional[str], str]:
    """(path of the cpu.stat that counts this host's own CPU time, or None; why).

    Only in a container is the load average not the host's own (the kernel and its run queue are the
    machine's). systemd puts itself in <its cgroup root>/init.scope, so when PID 1's cgroup v2 path is
    exactly /init.scope, the root this host sees (its cgroup namespace) holds every process of the host.
    It holds nothing else only if no other container was started in the same cgroup: then another
    systemd sits in the same init.scope, listed in its cgroup.procs (init_scope_procs) as pid 0, for it
    is outside this PID namespace. Only PID 1 there: cpu.stat at the root counts exactly this host's CPU
    time. Anything else (no cgroup namespace, no v2 hierarchy, PID 1 not systemd, a shared tree) cannot
    be told apart from the machine's or a neighbour's: None."""
    if not container:
        return None, "not a container: /proc/loadavg is this host's own"
    if mount is None:
        return None, "container without a cgroup v2 hierarchy: no per-host CPU counter"
    unified = parse_proc_cgroup(pid1_cgroup).get("")
    if unified != "/init.scope":
        return None, ("container whose PID 1 is in cgroup %s, not /init.scope of its own cgroup namespace"
                      % (unified if unified is not None else "(none in v2)"))
    others = [pid for pid in init_scope_procs.split() if pid != "1"]
    if others:
        return None, ("container whose cgroup tree is shared with %d other process(es) outside its PID namespace in "
                      "init.scope (another container started in the same cgroup)" % len(others))
    return os.path.join(mount, "cpu.stat"), "container: CPU time of its own cgroup root (%s/cpu.stat)" % mount


# --------------------------------------------------------------------------------------------
# md arrays

def md_activity(arrays: Mapping[str, Mapping[str, Any]], disks_of: Callable[[str], Set[str]],
                target_disks: Set[str]) -> List[Dict[str, Any]]:
    """Arrays with a sync action running or waiting to run whose array device or members share a
    disk with the targets, each with the disks it shares."""
    busy = []
    for name, array in sorted(arrays.items()):
        if not array.get("action"):
            continue
        involved = {name}
        for member in array.get("members", []):
            involved |= disks_of(member)
        shared = sorted(involved & set(target_disks))
        if shared:
            busy.append({"array": name, "action": array["action"], "progress_percent": array.get("progress_percent"),
                         "waiting": array.get("waiting"), "finish": array.get("finish"), "shared_disks": shared})
    return busy


# --------------------------------------------------------------------------------------------
# other benchmark processes on the targets


def read_processes(tools: Iterable[str], proc_root: str = "/proc",
                   fd_stat: Callable[[str], os.stat_result] = os.stat) -> Tuple[List[Dict[str, Any]], int]:
    """Processes whose argv[0] or comm basename is one of `tools`, with what their file
    descriptors point at (device numbers, followed through /proc/<pid>/fd) and their mount
    namespace. Returns (processes, how many could not be read)."""
    wanted = set(tools)
    found: List[Dict[str, Any]] = []
    unreadable = 0
    try:
        entries = [entry for entry in os.listdir(proc_root) if entry.isdigit()]
    except OSError:
        return [], 0
    for entry in entries:
        base = os.path.join(proc_root, entry)
        try:
            with open(os.path.join(base, "cmdline"), "rb") as handle:
                argv = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
            with open(os.path.join(base, "comm")) as handle:
                comm = handle.read().strip()
        except OSError:
            continue
        names = {comm} | ({os.path.basename(argv[0])} if argv else set())
        if not names & wanted:
            continue
        fds = []
        try:
            fd_names = os.listdir(os.path.join(base, "fd"))
            mnt_ns = os.readlink(os.path.join(base, "ns", "mnt"))
        except OSError:
            unreadable += 1
            continue
        for fd in fd_names:
            link = os.path.join(base, "fd", fd)
            try:
                target = os.readlink(link)
                info = fd_stat(link)
            except OSError:
                continue
            block = stat.S_ISBLK(info.st_mode)
            if block or stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                fds.append({"fd": fd, "path": target, "dev": info.st_rdev if block else info.st_dev})
        found.append({"pid": int(entry), "comm": comm, "argv": argv, "mnt_ns": mnt_ns, "fds": fds})
    return found, unreadable


def competing_processes(processes: Sequence[Mapping[str, Any]], target_disks: Set[str],
                        disks_of_dev: Callable[[int], Set[str]], target_paths: Sequence[str],
                        own_pids: Set[int], own_mnt_ns: Optional[str]) -> List[Dict[str, Any]]:
    """The processes that touch a target: an open file or block device on a disk the targets
    use (by device number, so it holds across mount namespaces), or, in our own mount namespace,
    an argument naming a target path (fio --filename=..., dd of=...) before the file is open."""
    hits = []
    paths = [path.rstrip("/") or "/" for path in target_paths]
    for process in sorted(processes, key=lambda item: item["pid"]):
        if process["pid"] in own_pids:
            continue
        reasons = []
        for fd in process.get("fds", []):
            shared = disks_of_dev(fd["dev"]) & set(target_disks)
            if shared:
                reasons.append("fd %s %s (on %s)" % (fd["fd"], fd["path"], ", ".join(sorted(shared))))
        if own_mnt_ns is not None and process.get("mnt_ns") == own_mnt_ns:
            for argument in process.get("argv", [])[1:]:
                value = argument.split("=", 1)[1] if "=" in argument else argument
                if any(value == path or value.startswith(path + "/") for path in paths):
                    reasons.append("argument %s" % argument)
        if reasons:
            hits.append({"pid": process["pid"], "comm": process.get("comm"), "argv": list(process.get("argv", [])),
                         "reasons": reasons})
    return hits
