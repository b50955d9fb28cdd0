"""_quiesce on systemd: the per-unit rules (running, stopped on purpose, masked, static, absent, failed,
activating), timers (Persistent= catch-up, OnBootSec= on restart), the per-unit table, and the CPU
counter a container can call its own. Every `systemctl show` text here is a real capture from a
systemd 252 host (tests/fixtures/quiesce/systemctl-show-252-*.src.md names command, host and date)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce as q
from ansible_collections.diskproof.fleet.plugins.module_utils import _state_dir as sd
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import cgroup2_mount
from test_quiesce import FakeRunner  # the recording stand-in for systemctl and service

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"
# The units of the captures, in the order they were asked for.
UNITS = ["cron.service", "crond.service", "atd.service", "anacron.service", "qtest-stopped.service",
         "qtest-masked.service", "qtest-failed.service", "qtest-activating.service", "fstrim.timer",
         "logrotate.timer", "man-db.timer", "apt-daily.timer", "apt-daily-upgrade.timer", "dnf-makecache.timer",
         "e2scrub_all.timer", "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer", "qtest-pers.timer",
         "qtest-boot.timer"]
SYSTEMCTL = "/usr/bin/systemctl"
SHOW = [SYSTEMCTL, "show", "--property=" + ",".join(q.SHOW_PROPERTIES), "--"]
# When the "before" capture was taken (date -u, and CLOCK_MONOTONIC on that machine right after).
BEFORE_AT = sd.parse_utc_iso("2026-11-25T23:32:35Z")
BEFORE_MONOTONIC = 12317.4


def fixture(name):
    return (FIXTURES / name).read_text()


def statuses_of(capture):
    run = FakeRunner({tuple(SHOW + UNITS): (0, fixture(capture), "")})
    return q.SystemdServices(run, SYSTEMCTL).statuses(UNITS)


def by_unit(statuses):
    return {status["unit"]: status for status in statuses}


def test_real_capture_plan_stops_what_runs_and_leaves_the_rest():
    plan = q.select_to_stop(statuses_of("systemctl-show-252-before.txt"))
    assert plan == {
        "stop": ["cron.service", "qtest-activating.service", "man-db.timer", "apt-daily.timer",
                 "apt-daily-upgrade.timer", "e2scrub_all.timer", "dpkg-db-backup.timer",
                 "systemd-tmpfiles-clean.timer", "qtest-pers.timer", "qtest-boot.timer"],
        "not_running": ["qtest-stopped.service", "qtest-failed.service", "fstrim.timer"],
        "absent": ["crond.service", "atd.service", "anacron.service", "logrotate.timer", "dnf-makecache.timer"],
        "unknown": [],
        "masked": ["qtest-masked.service"],
    }


@pytest.mark.parametrize("unit, decision", [
    ("cron.service", "stopped: active"),
    ("qtest-activating.service", "stopped: activating"),
    ("systemd-tmpfiles-clean.timer", "stopped: active"),            # static, running: stopped and restored
    ("qtest-stopped.service", "left alone: enabled but stopped (on purpose; not started by the restore)"),
    ("qtest-masked.service", "left alone: masked (never stopped, started or unmasked)"),
    ("qtest-failed.service", "left alone: failed (not started by the restore)"),
    ("fstrim.timer", "left alone: enabled but stopped (on purpose; not started by the restore)"),
    ("atd.service", "left alone: not on this host"),
])
def test_unit_decisions_on_a_real_capture(unit, decision):
    statuses = statuses_of("systemctl-show-252-before.txt")
    assert q.unit_decision(by_unit(statuses)[unit], q.select_to_stop(statuses)) == decision


def test_states_recorded_per_unit():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    assert before["qtest-masked.service"]["state"] == {"load": "masked", "active": "inactive", "sub": "dead",
                                                       "file": "masked"}
    assert before["qtest-activating.service"]["state"]["sub"] == "start-pre"
    assert before["atd.service"]["state"]["file"] is None
    assert q.state_text(before["cron.service"]["state"]) == "active/running enabled"
    assert q.state_text(before["qtest-masked.service"]["state"]) == "masked inactive/dead masked"
    assert q.state_text(before["atd.service"]["state"]) == "not-found"


def test_during_capture_everything_stopped_is_stopped_and_the_rest_unchanged():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    during = by_unit(statuses_of("systemctl-show-252-during.txt"))
    plan = q.select_to_stop(list(before.values()))
    for unit in plan["stop"]:
        assert during[unit]["running"] is False, unit
    for unit in plan["not_running"] + plan["masked"] + plan["absent"]:
        assert during[unit]["state"] == before[unit]["state"], unit


def test_after_capture_matches_before_for_every_unit():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    after = by_unit(statuses_of("systemctl-show-252-after.txt"))
    assert [unit for unit in UNITS if not q.same_state(before[unit]["state"], after[unit]["state"])] == []
    assert not q.same_state(before["cron.service"]["state"], dict(before["cron.service"]["state"], active="inactive"))
    assert not q.same_state(before["qtest-masked.service"]["state"],
                            dict(before["qtest-masked.service"]["state"], load="loaded", file="disabled"))


def test_timer_facts_from_a_real_capture():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    man_db = before["man-db.timer"]["timer"]
    assert man_db["triggers"] == "man-db.service" and man_db["persistent"] is True
    # RandomizedDelaySec=12h: the catch-up compares the calendar time (00:00), not the delayed elapse.
    assert man_db["calendar_next_s"] == sd.parse_utc_iso("2026-11-26T00:00:00Z")
    assert man_db["next_elapse"] == "Thu 2026-11-26 07:11:45 UTC"
    assert before["dpkg-db-backup.timer"]["timer"]["persistent"] is False
    tmpfiles = before["systemd-tmpfiles-clean.timer"]["timer"]
    assert tmpfiles["calendar_next_s"] is None
    assert tmpfiles["boot_relative_s"] == [pytest.approx(3 * 3600 + 37 * 60 + 15.390283)]
    assert before["logrotate.timer"]["timer"] is None                  # not-found
    assert before["fstrim.timer"]["timer"]["calendar_next_s"] is None  # inactive: next_elapse=(null)


def test_boot_relative_timers_fire_on_restart_and_calendar_ones_do_not():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    assert q.fires_on_start(before["qtest-boot.timer"]["timer"], BEFORE_MONOTONIC)            # OnBootSec=20s, past
    assert not q.fires_on_start(before["systemd-tmpfiles-clean.timer"]["timer"], BEFORE_MONOTONIC)  # 15 min not yet
    assert q.fires_on_start(before["systemd-tmpfiles-clean.timer"]["timer"], BEFORE_MONOTONIC + 3600)
    assert not q.fires_on_start(before["man-db.timer"]["timer"], BEFORE_MONOTONIC)


def test_missed_persistent_runs_only_for_timers_we_stopped_whose_calendar_time_passed():
    before = by_unit(statuses_of("systemctl-show-252-before.txt"))
    records = [dict(unit=unit, stopped=True, timer=before[unit]["timer"])
               for unit in ("qtest-pers.timer", "man-db.timer", "dpkg-db-backup.timer", "qtest-boot.timer")]
    records.append(dict(unit="e2scrub_all.timer", stopped=False, timer=before["e2scrub_all.timer"]["timer"]))
    assert q.missed_runs(records, BEFORE_AT) == []
    # 25 s later qtest-pers (every 20 s) missed 23:32:40; past midnight man-db (Persistent) missed 00:00,
    # dpkg-db-backup is not Persistent (its missed run is simply skipped by systemd itself).
    assert q.missed_runs(records, BEFORE_AT + 25) == [
        {"timer": "qtest-pers.timer", "service": "qtest-pers.service", "due": "2026-11-25T23:32:40Z"}]
    assert [item["timer"] for item in q.missed_runs(records, sd.parse_utc_iso("2026-11-26T00:00:01Z"))] == [
        "qtest-pers.timer", "man-db.timer"]


def test_systemctl_steps_one_call_each_and_start_does_not_wait():
    run = FakeRunner({tuple(SHOW + UNITS): (0, fixture("systemctl-show-252-before.txt"), "")})
    manager = q.SystemdServices(run, SYSTEMCTL)
    plan = q.select_to_stop(manager.statuses(UNITS))
    manager.stop(plan["stop"][:2])
    assert manager.forget_missed_runs(["qtest-pers.timer"]) == "systemctl clean --what=state"
    manager.start(plan["stop"][:2])
    assert run.calls[1:] == [[SYSTEMCTL, "stop", "--", "cron.service", "qtest-activating.service"],
                             [SYSTEMCTL, "clean", "--what=state", "--", "qtest-pers.timer"],
                             [SYSTEMCTL, "start", "--no-block", "--", "cron.service", "qtest-activating.service"]]


def test_without_systemctl_clean_the_stamp_is_set_to_now():
    touched = []
    run = FakeRunner(default=(1, "", "Unknown operation 'clean'."))
    manager = q.SystemdServices(run, SYSTEMCTL, touch=touched.append)
    assert manager.forget_missed_runs(["man-db.timer"]).startswith("stamp set to now")
    assert touched == ["/var/lib/systemd/timers/stamp-man-db.timer"]

    def refuse(path):
        raise PermissionError(13, "Permission denied", path)
    with pytest.raises(q.QuiesceError, match="cannot make man-db.timer skip the run missed while quiesced"):
        q.SystemdServices(run, SYSTEMCTL, touch=refuse).forget_missed_runs(["man-db.timer"])
    assert q.SystemdServices(run, SYSTEMCTL).forget_missed_runs([]) == ""


def test_masked_but_running_is_left_alone_and_aliases_are_looked_at_once():
    cron = {"Id": "cron.service", "LoadState": "loaded", "ActiveState": "active", "SubState": "running",
            "UnitFileState": "enabled"}
    statuses = [q.systemd_status("cron.service", cron), q.systemd_status("crond.service", cron),
                q.systemd_status("x.service", dict(cron, Id="x.service", LoadState="masked", UnitFileState="masked")),
                q.systemd_status("y.service", dict(cron, Id="y.service", LoadState="error"))]
    plan = q.select_to_stop(statuses)
    assert plan["stop"] == ["cron.service"] and plan["masked"] == ["x.service"]
    assert plan["not_running"] == ["crond.service"] and plan["unknown"] == ["y.service"]


def test_running_jobs_of_stopped_timers():
    def status(unit, active, sub):
        return {"unit": unit, "state": {"active": active, "sub": sub}}
    assert q.running_jobs([status("man-db.service", "activating", "start"),
                           status("apt-daily.service", "inactive", "dead"),
                           status("x.service", "active", "exited"),
                           status("y.service", "active", "running")]) == ["man-db.service", "y.service"]


def test_unit_table_rows():
    before = {"load": "loaded", "active": "active", "sub": "running", "file": "enabled"}
    during = dict(before, active="inactive", sub="dead")
    lines = q.unit_table([{"unit": "cron.service", "before": before, "during": during, "after": before,
                           "decision": "stopped: active", "same": True},
                          {"unit": "atd.service", "before": {"load": "not-found"}, "decision": "left alone"}])
    assert lines[2] == "| cron.service | active/running enabled | inactive/dead enabled | active/running enabled " \
                       "| stopped: active | yes |"
    assert lines[3] == "| atd.service | not-found | - | - | left alone | - |"


# ---------------------------------------------------------------------------------------------
# the host's own CPU time (idle gate in a container)

def test_own_cpu_counter_of_a_systemd_nspawn_host():
    mount = cgroup2_mount(fixture("mountinfo-cgroup-nspawn-252.txt"))
    assert mount == "/sys/fs/cgroup/unified"
    path, why = q.own_cpu_counter(True, fixture("proc-1-cgroup-nspawn-252.txt"), mount, "1\n")
    assert path == "/sys/fs/cgroup/unified/cpu.stat" and "its own cgroup root" in why
    # Two nspawn hosts started in one cgroup (the lab before each got its own): both PID 1s in init.scope.
    path, why = q.own_cpu_counter(True, fixture("proc-1-cgroup-nspawn-252.txt"), mount,
                                  fixture("init-scope-procs-nspawn-252-shared.txt"))
    assert path is None and "shared with 1 other process(es)" in why


@pytest.mark.parametrize("container, pid1, mount, reason", [
    (False, "0::/init.scope\n", "/sys/fs/cgroup", "not a container"),
    (True, "0::/init.scope\n", None, "without a cgroup v2 hierarchy"),
    (True, "0::/payload/init.scope\n", "/sys/fs/cgroup", "not /init.scope"),          # no cgroup namespace
    (True, "1:cpu:/\n", "/sys/fs/cgroup/unified", "(none in v2)"),
])
def test_own_cpu_counter_refuses_what_may_be_the_machines(container, pid1, mount, reason):
    path, why = q.own_cpu_counter(container, pid1, mount)
    assert path is None and reason in why


def test_idle_sample_judges_the_hosts_cpu_not_the_machines_load():
    stats = {"loop0": {"reads": 0, "writes": 0, "read_sectors": 0, "write_sectors": 0, "in_flight": 0,
                       "io_ticks_ms": 0}}
    thresholds = {"max_iops": 20, "max_bytes_per_s": 1e6, "max_busy_percent": 5, "max_load_per_cpu": 0.25}
    busy_machine = q.idle_sample(stats, stats, 1.0, ["loop0"], 3.0, 2, thresholds, cpu_busy=0.02)
    assert busy_machine["idle"] is True and busy_machine["cpu_busy_per_cpu"] == 0.02
    busy_host = q.idle_sample(stats, stats, 1.0, ["loop0"], 0.0, 2, thresholds, cpu_busy=0.49)
    assert busy_host["reasons"] == ["this host's CPU use 0.49 per CPU (its cgroup, 2 CPUs) > 0.25"]
    job = q.idle_sample(stats, stats, 1.0, ["loop0"], 0.0, 2, thresholds, busy_jobs=["man-db.service"])
    assert job["reasons"] == ["man-db.service (started by a timer before the quiesce) is still running"]


def test_all_timers_lists_the_active_ones():
    listing = [SYSTEMCTL, "list-units", "--type=timer", "--state=active", "--no-legend", "--plain", "--full"]
    run = FakeRunner({tuple(listing): (0, fixture("systemctl-list-timers-active-252.txt"), "")})
    assert q.SystemdServices(run, SYSTEMCTL).active_timers() == [
        "apt-daily-upgrade.timer", "apt-daily.timer", "dpkg-db-backup.timer", "e2scrub_all.timer", "man-db.timer",
        "systemd-tmpfiles-clean.timer"]
    with pytest.raises(q.QuiesceError, match="list-units --type=timer failed"):
        q.SystemdServices(FakeRunner(default=(1, "", "boom")), SYSTEMCTL).active_timers()


def test_on_active_timers_elapsed_one_is_left_alone_repeating_one_is_noted():
    units = ["qsysd-once.timer", "qsysd-again.timer"]
    run = FakeRunner({tuple(SHOW + units): (0, fixture("systemctl-show-252-on-active.txt"), "")})
    statuses = q.SystemdServices(run, SYSTEMCTL).statuses(units)
    plan = q.select_to_stop(statuses)
    assert plan["stop"] == ["qsysd-again.timer"] and plan["not_running"] == ["qsysd-once.timer"]
    assert q.unit_decision(statuses[0], plan) == "left alone: elapsed (fires no more; a restart would re-arm it)"
    assert q.restart_note(statuses[1]["timer"], 0.0) == "OnActiveSec= counts from the restore: its job runs 3 s after it"
    assert q.restart_note(by_unit(statuses_of("systemctl-show-252-before.txt"))["man-db.timer"]["timer"], 1e9) == ""
