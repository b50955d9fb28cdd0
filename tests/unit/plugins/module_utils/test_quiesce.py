"""_quiesce: lock decisions (stale locks included), the lock and state files, service selection on
systemd and SysV (through a fake command runner), idle windows from real /proc/diskstats captures,
md activity from real /proc/mdstat, SMART self-tests from real smartctl JSON, and other fio/dd
processes on the targets (fake /proc and /sys trees). Fixtures: tests/fixtures/quiesce/*.src.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce as q
from ansible_collections.diskproof.fleet.plugins.module_utils import _state_dir as sd
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.diskstats import parse_diskstats
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.loadavg import parse_loadavg
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mdstat import parse_mdstat

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"
NOW = sd.parse_utc_iso("2026-11-22T10:00:00Z")
HOUR = 3600


def fixture(name):
    return (FIXTURES / name).read_text()


# ---------------------------------------------------------------------------------------------
# lock decisions

ME = {"run_id": "run-b", "host": "ctl1", "boot_id": "cboot", "pid_ns": "pid:[1]", "pid": 2000, "pid_start": 9000,
      "seen_at": 10000, "live": {"2000": 9000, "1500": 8000}}


def lock_of(run_id="run-a", controller=None, host=None, expires=NOW + HOUR):
    controller = dict({"host": "ctl1", "boot_id": "cboot", "pid_ns": "pid:[1]", "pid": 1500, "pid_start": 8000,
                       "user": "root"}, **(controller or {}))
    host = dict({"boot_id": "hboot", "pid": 700, "pid_start": 50}, **(host or {}))
    return {"schema": 1, "kind": sd.LOCK_KIND, "run_id": run_id, "phase": "quiesced", "started": "2026-11-22T09:00:00Z",
            "updated": "2026-11-22T09:00:05Z", "expires": sd.utc_iso(expires), "controller": controller, "host": host}


def never_alive(pid, start):
    return False


@pytest.mark.parametrize(
    ("lock", "controller", "alive", "status", "reason"),
    [
        (None, ME, never_alive, q.FREE, "no lock"),
        (lock_of(run_id="run-b", controller={"pid": 2000, "pid_start": 9000}), ME, never_alive, q.OURS, "held by this run"),
        # the same run id from another ansible-playbook process: two runs given one quiesce_run_id
        (lock_of(run_id="run-b"), ME, never_alive, q.REUSED, "run id run-b is already used by another run: run run-b "),
        (lock_of(run_id="run-b", controller={"host": "ctl2"}), ME, never_alive, q.REUSED, "from controller ctl2"),
        # without any controller identity (a direct module call) a run cannot be told apart: re-entrant
        (lock_of(run_id="run-b"), {}, never_alive, q.OURS, "held by this run"),
        # the host rebooted: nothing of that run survives on it
        (lock_of(host={"boot_id": "old-boot"}), ME, never_alive, q.STALE, "rebooted"),
        # its quiesce call is still executing on the host (pid and start time match)
        (lock_of(controller={"pid": 1}), ME, lambda pid, start: (pid, start) == (700, 50), q.HELD, "still running on this host"),
        # same controller, its ansible-playbook is in the live list with the same start time
        (lock_of(), ME, never_alive, q.HELD, "is running on this controller"),
        # same controller, gone (SIGKILL, or the run ended after losing the host)
        (lock_of(controller={"pid": 1400, "pid_start": 7000}), ME, never_alive, q.STALE, "pid 1400 on ctl1) is gone"),
        # same pid reused by another process (different start time), the holder started before we looked: gone
        (lock_of(controller={"pid_start": 7999}), ME, never_alive, q.STALE, "is gone"),
        # not in the list but started after we listed the processes: cannot judge, so held
        (lock_of(controller={"pid": 3000, "pid_start": 10500}), ME, never_alive, q.HELD, "started after this run listed"),
        # no start time recorded: cannot tell it from a newer process, so held
        (lock_of(controller={"pid": 3000, "pid_start": None}), ME, never_alive, q.HELD, "started after"),
        # another controller (AWX meeting a manual run): cannot ask it, lease still valid
        (lock_of(controller={"host": "awx-ee-7"}), ME, never_alive, q.HELD, "another controller"),
        # same host name and boot, other PID namespace (containers): another controller too
        (lock_of(controller={"pid_ns": "pid:[2]", "pid": 1400}), ME, never_alive, q.HELD, "another controller"),
        # another controller whose lease expired
        (lock_of(controller={"host": "awx-ee-7"}, expires=NOW - 1), ME, never_alive, q.STALE, "lease expired"),
        # we know nothing about our own controller (not Linux): only the lease helps
        (lock_of(controller={"pid": 1400}), {}, never_alive, q.HELD, "another controller"),
        (lock_of(controller={"pid": 1400}, expires=NOW - 1), {}, never_alive, q.STALE, "lease expired"),
    ],
)
def test_lock_verdict(lock, controller, alive, status, reason):
    verdict = q.lock_verdict(lock, "run-b", controller, "hboot", NOW, alive)
    assert verdict.status == status
    assert reason in verdict.reason


def test_lock_verdict_without_a_host_boot_id_does_not_call_it_rebooted():
    verdict = q.lock_verdict(lock_of(host={"boot_id": "x"}), "run-b", ME, "", NOW, never_alive)
    assert verdict.status == q.HELD


def test_describe_holder_names_run_start_and_controller():
    text = q.describe_holder(lock_of())
    assert text.startswith("run run-a (started 2026-11-22T09:00:00Z from controller ctl1, ansible-playbook pid 1500")
    assert "user root" in text


# ---------------------------------------------------------------------------------------------
# lock and state files


def test_lock_round_trip():
    lock = sd.new_lock("run-a", {"host": "ctl1", "pid": 5, "extra": "dropped"}, "hboot", 77, 1234, NOW, 600, "quiescing")
    assert sd.parse_lock(sd.dumps(lock)) == lock
    assert lock["expires"] == "2026-11-22T10:10:00Z"
    assert lock["controller"] == {"host": "ctl1", "user": None, "pid": 5, "pid_start": None, "boot_id": None, "pid_ns": None}
    assert lock["host"] == {"boot_id": "hboot", "pid": 77, "pid_start": 1234}


def test_lock_keeps_its_first_start_time_when_renewed():
    lock = sd.new_lock("run-a", {}, "b", 1, 1, NOW, 600, "quiesced", started="2026-11-22T09:00:00Z")
    assert (lock["started"], lock["updated"]) == ("2026-11-22T09:00:00Z", "2026-11-22T10:00:00Z")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "is not a diskproof"),
        (json.dumps(dict(lock_of(), kind="something")), "is not a diskproof"),
        (json.dumps(dict(lock_of(), schema=2)), "schema 2"),
        (json.dumps(dict(lock_of(), run_id="")), "names no run_id"),
        (json.dumps({k: v for k, v in lock_of().items() if k != "host"}), "no host section"),
        (json.dumps(dict(lock_of(), expires="tomorrow")), "not an ISO 8601"),
    ],
)
def test_parse_lock_refuses_what_is_not_a_lock(text, message):
    with pytest.raises(q.QuiesceError, match=message):
        sd.parse_lock(text)


def test_state_round_trip_and_what_to_restore():
    services = [{"unit": "cron", "was_running": True, "stopped": True},
                {"unit": "fstrim.timer", "was_running": True, "stopped": False},   # written before its stop
                {"unit": "atd", "was_running": False}]
    state = sd.new_state("run-a", q.SYSTEMD, services, NOW, "stopping", not_running=["atd"])
    parsed = sd.parse_state(sd.dumps(state))
    assert parsed == state
    assert sd.services_to_restore(parsed) == ["cron", "fstrim.timer"]


@pytest.mark.parametrize(
    ("change", "message"),
    [({"service_manager": "upstart"}, "no known service manager"), ({"services": [{"name": "cron"}]}, "no valid services"),
     ({"kind": sd.LOCK_KIND}, "is not a diskproof")],
)
def test_parse_state_refuses_bad_documents(change, message):
    state = dict(sd.new_state("run-a", q.SYSV, [], NOW, "quiesced"), **change)
    with pytest.raises(q.QuiesceError, match=message):
        sd.parse_state(json.dumps(state))


def test_utc_times():
    assert sd.utc_iso(NOW) == "2026-11-22T10:00:00Z"
    with pytest.raises(q.QuiesceError):
        sd.parse_utc_iso("2026-11-22 10:00:00")


# ---------------------------------------------------------------------------------------------
# services: which units, which manager, what to stop


@pytest.mark.parametrize(
    ("manager", "services", "timers", "wanted", "skipped"),
    [
        (q.SYSTEMD, ["cron", "crond", "atd", "anacron"], ["fstrim.timer", "apt-daily.timer"],
         ["cron.service", "crond.service", "atd.service", "anacron.service", "fstrim.timer", "apt-daily.timer"], []),
        (q.SYSV, ["cron", "crond", "atd", "anacron"], ["fstrim.timer", "apt-daily.timer"],
         ["cron", "crond", "atd", "anacron"], ["fstrim.timer", "apt-daily.timer"]),
        (q.SYSTEMD, ["cron.service", "cron", "anacron.timer"], [], ["cron.service", "anacron.timer"], []),
        (q.SYSV, ["cron.service", "anacron.timer", "snapd.socket"], [], ["cron"], ["anacron.timer", "snapd.socket"]),
        (q.SYSTEMD, [], [], [], []),
    ],
)
def test_candidate_units(manager, services, timers, wanted, skipped):
    assert q.candidate_units(manager, services, timers) == (wanted, skipped)


@pytest.mark.parametrize("name", ["../../bin/sh", "-rf", "a b", "", "cron;reboot", "/etc/init.d/cron"])
def test_unit_names_that_could_escape_are_refused(name):
    with pytest.raises(q.QuiesceError, match="not a service or unit name"):
        q.candidate_units(q.SYSV, [name], [])


@pytest.mark.parametrize(
    ("dirs", "manager"),
    [({"/run/systemd/system", "/etc/init.d"}, q.SYSTEMD), ({"/etc/init.d"}, q.SYSV), (set(), None)],
)
def test_detect_service_manager(dirs, manager):
    assert q.detect_service_manager(lambda path: path in dirs) == manager


def test_select_to_stop_stops_only_what_runs():
    statuses = [{"unit": "cron", "exists": True, "running": True}, {"unit": "atd", "exists": True, "running": False},
                {"unit": "crond", "exists": False, "running": None}, {"unit": "odd", "exists": True, "running": None}]
    assert q.select_to_stop(statuses) == {"stop": ["cron"], "not_running": ["atd"], "absent": ["crond"], "unknown": ["odd"],
                                          "masked": []}


class FakeRunner:
    """Records argv lists and answers from a table (argv tuple -> (rc, out, err))."""

    def __init__(self, answers=None, default=(0, "", "")):
        self.answers = answers or {}
        self.default = default
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return self.answers.get(tuple(argv), self.default)


# The systemd path (show, the per-unit rules, stop, start, timers) is tested against real `systemctl show`
# captures from a systemd 252 host in test_quiesce_systemd.py.


def test_systemd_failures_are_reported():
    run = FakeRunner(default=(5, "", "Failed to stop cron.service: Access denied"))
    with pytest.raises(q.QuiesceError, match="systemctl stop cron.service failed \\(exit 5\\): Failed to stop"):
        q.SystemdServices(run).stop(["cron.service"])
    with pytest.raises(q.QuiesceError, match="2 blocks for 1 units"):
        q.SystemdServices(FakeRunner(default=(0, "Id=a\n\nId=b\n", ""))).statuses(["a.service"])
    # systemctl's own words where its show output should be: what the parser refuses, the quiesce reports
    with pytest.raises(q.QuiesceError, match="not systemctl show output"):
        q.SystemdServices(FakeRunner(default=(0, "Unit cron.service could not be found.", ""))).statuses(["cron"])
    assert q.SystemdServices(run).statuses([]) == []


def test_activating_and_reloading_units_count_as_running():
    block = {"Id": "x.service", "LoadState": "loaded", "ActiveState": "activating"}
    assert q.systemd_status("x.service", block)["running"] is True
    assert q.systemd_status("x.service", dict(block, ActiveState="failed"))["running"] is False


def test_sysv_path_uses_service_and_lsb_status_codes():
    scripts = {"/etc/init.d/cron", "/etc/init.d/atd", "/etc/init.d/weird"}
    run = FakeRunner({("/usr/sbin/service", "cron", "status"): (0, "cron is running.\n", ""),
                      ("/usr/sbin/service", "atd", "status"): (3, "atd is not running ... failed!\n", ""),
                      ("/usr/sbin/service", "weird", "status"): (4, "", "could not access PID file\n")})
    manager = q.SysvServices(run, "/usr/sbin/service", executable=lambda path: path in scripts)
    statuses = manager.statuses(["cron", "crond", "atd", "weird"])
    assert [(s["unit"], s["exists"], s["running"]) for s in statuses] == [
        ("cron", True, True), ("crond", False, None), ("atd", True, False), ("weird", True, None)]
    assert statuses[0]["detail"] == "cron is running. (exit 0)"
    assert q.select_to_stop(statuses)["stop"] == ["cron"]
    manager.stop(["cron"])
    manager.start(["cron"])
    assert run.calls[-2:] == [["/usr/sbin/service", "cron", "stop"], ["/usr/sbin/service", "cron", "start"]]


def test_sysv_without_service_calls_the_init_script_and_collects_failures():
    run = FakeRunner({("/etc/init.d/atd", "stop"): (1, "", "permission denied")})
    manager = q.SysvServices(run, None, executable=lambda path: True)
    with pytest.raises(q.QuiesceError, match="service stop failed for atd \\(exit 1: permission denied\\)"):
        manager.stop(["cron", "atd"])
    assert run.calls == [["/etc/init.d/cron", "stop"], ["/etc/init.d/atd", "stop"]]


# ---------------------------------------------------------------------------------------------
# idle window (real captures)

THRESHOLDS = {"max_busy_percent": 5, "max_iops": 20, "max_bytes_per_s": 1048576, "max_load_per_cpu": 0}


def test_idle_capture_is_idle():
    before, after = parse_diskstats(fixture("diskstats-idle-t0.txt")), parse_diskstats(fixture("diskstats-idle-t2.txt"))
    load1 = parse_loadavg(fixture("loadavg-idle.txt"))[0]
    sample = q.idle_sample(before, after, 2.0, ["vda"], load1, 2, THRESHOLDS)
    assert sample["idle"] is True, sample["reasons"]
    assert sample["devices"]["vda"] == {"iops": 2.0, "bytes_per_s": 73728.0, "busy_percent": 0.0, "in_flight": 0}
    assert (sample["load1"], sample["load_per_cpu"]) == (1.03, 0.515)


def test_load_threshold_applies_when_set():
    before, after = parse_diskstats(fixture("diskstats-idle-t0.txt")), parse_diskstats(fixture("diskstats-idle-t2.txt"))
    sample = q.idle_sample(before, after, 2.0, ["vda"], 1.03, 2, dict(THRESHOLDS, max_load_per_cpu=0.5))
    assert sample["idle"] is False
    assert sample["reasons"] == ["load 0.52 per CPU (1.03 on 2 CPUs) > 0.5"]


def test_throttled_read_is_busy_by_iops_and_bytes_not_by_busy_percent():
    before, after = parse_diskstats(fixture("diskstats-busy-t0.txt")), parse_diskstats(fixture("diskstats-busy-t2.txt"))
    sample = q.idle_sample(before, after, 2.0, ["loop0"], 1.62, 2, THRESHOLDS)
    assert sample["devices"]["loop0"] == {"iops": 64.0, "bytes_per_s": 33554432.0, "busy_percent": 0.2, "in_flight": 0}
    assert sample["idle"] is False
    assert sample["reasons"] == ["loop0: 64.0 IOPS > 20", "loop0: 33554432 B/s > 1.04858e+06"]


@pytest.mark.parametrize(
    ("devices", "seconds", "message"),
    [(["sdq"], 2.0, "sdq is not in /proc/diskstats"), (["vda"], 0, "positive duration")],
)
def test_idle_sample_errors(devices, seconds, message):
    stats = parse_diskstats(fixture("diskstats-idle-t0.txt"))
    with pytest.raises(q.QuiesceError, match=message):
        q.idle_sample(stats, stats, seconds, devices, 0.0, 1, THRESHOLDS)


def test_busy_percent_is_capped_and_no_devices_judges_the_load_only():
    old = {"sda": {"reads": 0, "writes": 0, "read_sectors": 0, "write_sectors": 0, "in_flight": 0, "io_ticks_ms": 0}}
    new = {"sda": dict(old["sda"], io_ticks_ms=9000, in_flight=3)}
    sample = q.idle_sample(old, new, 2.0, ["sda"], 0.0, 4, THRESHOLDS)
    assert sample["devices"]["sda"]["busy_percent"] == 100.0
    assert q.idle_sample(old, new, 2.0, [], 0.1, 4, dict(THRESHOLDS, max_load_per_cpu=0.5))["idle"] is True


# ---------------------------------------------------------------------------------------------
# md arrays (real captures)


def whole_disks(name):
    """sdc1 -> {sdc}, md0 -> {md0}: what disks_under gives on a plain machine."""
    return {name.rstrip("0123456789") if name.startswith("sd") else name}


@pytest.mark.parametrize(
    ("name", "targets", "busy"),
    [
        ("mdstat-raid6-check.txt", {"sdd"}, [("md127", "check", ["sdd"])]),
        ("mdstat-raid6-check.txt", {"md127"}, [("md127", "check", ["md127"])]),
        ("mdstat-raid6-check.txt", {"sdz", "nvme0n1"}, []),
        ("mdstat-raid1-resync.txt", {"sdc"}, [("md127", "resync", ["sdc"])]),
        ("mdstat-raid1-idle.txt", {"sdc"}, []),
        ("mdstat-resync-delayed.txt", {"sdc"}, [("md1", "resync", ["sdc"])]),
        ("mdstat-resync-delayed.txt", {"sda"}, [("md0", "resync", ["sda"]), ("md1", "resync", ["sda"])]),
    ],
)
def test_md_activity_on_target_disks(name, targets, busy):
    found = q.md_activity(parse_mdstat(fixture(name)), whole_disks, targets)
    assert [(item["array"], item["action"], item["shared_disks"]) for item in found] == busy


# ---------------------------------------------------------------------------------------------
# processes: identity, liveness, competing fio/dd


def make_proc(root, pid, stat_text):
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "stat").write_text(stat_text)


def test_process_liveness_by_pid_and_start_time(tmp_path):
    stat = fixture("proc-pid-stat.txt")
    make_proc(tmp_path, 26990, stat)
    make_proc(tmp_path, 31, stat.replace(" R ", " Z ", 1))
    proc = str(tmp_path)
    assert sd.process_start(26990, proc) == 270611
    assert sd.process_alive(26990, 270611, proc) is True
    assert sd.process_alive(26990, 270612, proc) is False   # pid reused by a later process
    assert sd.process_alive(31, None, proc) is False        # zombie
    assert sd.process_alive(404, None, proc) is False
    assert sd.process_start("26990", proc) is None
    assert sd.process_start(True, proc) is None


def test_read_boot_id(tmp_path):
    (tmp_path / "sys" / "kernel" / "random").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "random" / "boot_id").write_text("db6e845c-4a9b\n")
    assert sd.read_boot_id(str(tmp_path)) == "db6e845c-4a9b"
    assert sd.read_boot_id(str(tmp_path / "none")) == ""


class FakeStat:
    def __init__(self, mode, dev=0, rdev=0):
        self.st_mode, self.st_dev, self.st_rdev = mode, dev, rdev


def make_process(proc, pid, argv, comm, mnt, fds):
    base = proc / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "ns").mkdir()
    (base / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")
    (base / "comm").write_text(comm + "\n")
    os.symlink(mnt, base / "ns" / "mnt")
    for fd, target in fds.items():
        os.symlink(target, base / "fd" / str(fd))


def test_competing_fio_and_dd_are_found_by_device_and_by_argument(tmp_path):
    proc = tmp_path / "proc"
    make_process(proc, 100, ["fio", "--name=x", "--filename=/srv/diskproof/d0/other.file"], "fio", "mnt:[1]",
                 {3: "/srv/diskproof/d0/other.file"})
    make_process(proc, 101, ["/bin/dd", "if=/dev/sdb", "of=/dev/null"], "dd", "mnt:[2]", {0: "/dev/sdb"})
    make_process(proc, 102, ["dd", "if=/dev/zero", "of=/srv/diskproof/d0/x"], "dd", "mnt:[9]", {})   # other namespace
    make_process(proc, 103, ["fio", "--filename=/srv/diskproof/d0/y"], "fio", "mnt:[1]", {})          # not open yet
    make_process(proc, 104, ["sleep", "60"], "sleep", "mnt:[1]", {3: "/srv/diskproof/d0/z"})        # not a tool
    make_process(proc, 105, ["fio", "--filename=/srv/other/z"], "fio", "mnt:[1]", {3: "/srv/other/z"})
    make_process(proc, 106, ["dd"], "dd", "mnt:[1]", {3: "/srv/diskproof/d0/w"})                     # our own pid
    stats = {"100/fd/3": FakeStat(0o100644, dev=os.makedev(8, 17)), "101/fd/0": FakeStat(0o060660, rdev=os.makedev(8, 16)),
             "104/fd/3": FakeStat(0o100644, dev=os.makedev(8, 17)), "105/fd/3": FakeStat(0o100644, dev=os.makedev(8, 1)),
             "106/fd/3": FakeStat(0o100644, dev=os.makedev(8, 17))}

    def fd_stat(link):
        return stats[os.path.relpath(link, proc)]

    processes, unreadable = q.read_processes(["fio", "dd"], str(proc), fd_stat)
    assert unreadable == 0
    assert sorted(p["pid"] for p in processes) == [100, 101, 102, 103, 105, 106]
    disks = {os.makedev(8, 17): {"sdb"}, os.makedev(8, 16): {"sdb"}, os.makedev(8, 1): {"sda"}}
    hits = q.competing_processes(processes, {"sdb"}, lambda dev: disks.get(dev, set()), ["/srv/diskproof/d0/"], {106}, "mnt:[1]")
    assert [(hit["pid"], hit["reasons"]) for hit in hits] == [
        (100, ["fd 3 /srv/diskproof/d0/other.file (on sdb)", "argument --filename=/srv/diskproof/d0/other.file"]),
        (101, ["fd 0 /dev/sdb (on sdb)"]),
        (103, ["argument --filename=/srv/diskproof/d0/y"]),
    ]


def test_read_processes_without_proc(tmp_path):
    assert q.read_processes(["fio"], str(tmp_path / "missing")) == ([], 0)


# ---------------------------------------------------------------------------------------------
# disks under a target (fake /sys: LVM on md on partitions)


def make_block(sys_root, name, parent=None, slaves=(), device=False):
    """/sys/devices/.../block/<disk>[/<part>] with /sys/class/block and /sys/block links."""
    base = sys_root / "devices" / "virtual" / "block"
    node = base / parent / name if parent else base / name
    node.mkdir(parents=True)
    (sys_root / "class" / "block").mkdir(parents=True, exist_ok=True)
    os.symlink(node, sys_root / "class" / "block" / name)
    if parent:
        (node / "partition").write_text("1\n")
        return
    (sys_root / "block").mkdir(exist_ok=True)
    os.symlink(node, sys_root / "block" / name)
    (node / "slaves").mkdir()
    for slave in slaves:
        (node / "slaves" / slave).mkdir()
    if device:
        (node / "device").mkdir()


@pytest.fixture
def lvm_on_md(tmp_path):
    root = tmp_path / "sys"
    make_block(root, "sda", device=True)
    make_block(root, "sda1", parent="sda")
    make_block(root, "sdb", device=True)
    make_block(root, "sdb1", parent="sdb")
    make_block(root, "md0", slaves=["sda1", "sdb1"])
    make_block(root, "dm-0", slaves=["md0"])
    make_block(root, "loop3")
    return str(root)


@pytest.mark.parametrize(
    ("name", "disks"),
    [("dm-0", {"dm-0", "md0", "sda", "sdb"}), ("md0", {"md0", "sda", "sdb"}), ("sda1", {"sda"}), ("loop3", {"loop3"}),
     ("nvme9n1", {"nvme9n1"})],
)
def test_disks_under(lvm_on_md, name, disks):
    assert q.disks_under(name, lvm_on_md) == disks


def test_physical_disks_are_the_ones_with_a_device(lvm_on_md):
    assert q.physical_disks({"dm-0", "md0", "sda", "sdb", "loop3"}, lvm_on_md) == ["sda", "sdb"]
    assert q.whole_disk_of("sdb1", lvm_on_md) == "sdb"


# ---------------------------------------------------------------------------------------------
# the state directory and its files (module_utils/_state_dir.py)


class StatOf:
    """A stand-in os.stat_result: mode and owner only."""

    def __init__(self, mode, uid=0):
        self.st_mode = mode
        self.st_uid = uid


@pytest.mark.parametrize(("mode", "uid", "problem"), [
    (0o040700, 0, None),
    (0o040755, 0, None),
    (0o040777, 0, "has mode 0777 (group- or world-writable): make it private to root (chown root:root /s; chmod 0700 /s)"),
    (0o040770, 0, "has mode 0770"),
    (0o040700, 65534, "is owned by uid 65534 (nobody) (mode 0700), not by uid 0 (root) that runs diskproof"),
    (0o120777, 0, "is a symbolic link"),
    (0o100600, 0, "is not a directory"),
])
def test_state_dir_problems(mode, uid, problem):
    found = sd.dir_problem("/s", StatOf(mode, uid), 0)
    assert (found is None) if problem is None else (problem in found), found


@pytest.mark.parametrize(("mode", "uid", "problem"), [
    (0o040755, 0, None),
    (0o041777, 0, None),                  # /tmp: writable by all, but sticky
    (0o040777, 0, "a parent of the state directory: directory /p is group and world-writable without the sticky bit"),
    (0o040755, 1000, "a parent of the state directory: directory /p is owned by uid 1000"),
])
def test_state_dir_parent_problems(mode, uid, problem):
    found = sd.parent_problem("/p", StatOf(mode, uid), 0)
    assert (found is None) if problem is None else (problem in found), found


def test_atomic_writes_use_unpredictable_exclusive_no_follow_temporary_files(tmp_path, monkeypatch):
    state_dir = tmp_path / "state"
    opened = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *, dir_fd=None):
        opened.append((path, flags))
        return real_open(path, flags, mode, dir_fd=dir_fd)
    monkeypatch.setattr(sd.os, "open", spy)
    with sd.StateDir(str(state_dir), create=True) as state:
        state.write("quiesce.lock", {"n": 1})
        state.write("quiesce.lock", {"n": 2})
    temporaries = [(path, flags) for path, flags in opened if str(path).endswith(".tmp")]
    assert len(temporaries) == 2 and temporaries[0][0] != temporaries[1][0]
    for path, flags in temporaries:
        assert flags & os.O_CREAT and flags & os.O_EXCL and flags & os.O_NOFOLLOW, path
        assert str(os.getpid()) not in path and len(path) > len(".quiesce.lock..tmp") + 15
    assert json.loads((state_dir / "quiesce.lock").read_text()) == {"n": 2}
    assert sorted(os.listdir(state_dir)) == ["quiesce.lock"]
    assert oct(state_dir.stat().st_mode & 0o7777) == "0o700"
    assert oct((state_dir / "quiesce.lock").stat().st_mode & 0o777) == "0o600"


def test_reading_never_follows_a_symlink(tmp_path):
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    (tmp_path / "elsewhere").write_text("{}")
    (state_dir / "quiesce.lock").symlink_to(tmp_path / "elsewhere")
    with sd.StateDir(str(state_dir)) as state:
        lock, error = state.read("quiesce.lock", sd.parse_lock)
    assert lock is None and "a symbolic link is never followed" in error


def test_job_files_of_steps_no_longer_running_are_removed_and_a_running_ones_kept(tmp_path):
    """A real child process writes its job file and is SIGKILLed (the file stays, as it would on a host); the sweep
    removes that one, keeps this live process's file and leaves alone what it did not name (another name, a
    directory, a symlink, a reused pid with another start time is dead too)."""
    state_dir = tmp_path / "state"
    code = ("import os, sys, time\n"
            "from ansible_collections.diskproof.fleet.plugins.module_utils import _state_dir as sd\n"
            "with sd.StateDir(sys.argv[1]) as state:\n"
            "    descriptor, path = state.new_job_file()\n"
            "    os.write(descriptor, b'[job]\\n'); os.close(descriptor)\n"
            "print(path, flush=True)\n"
            "time.sleep(60)\n")
    with sd.StateDir(str(state_dir), create=True) as state:
        descriptor, mine = state.new_job_file()
        os.close(descriptor)
        child = subprocess.Popen([sys.executable, "-c", code, str(state_dir)], stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        try:
            killed = child.stdout.readline().strip()
            assert os.path.basename(killed).startswith("fio-job.%d-" % child.pid), killed
            assert state.remove_dead_job_files() == []                      # still running: kept
        finally:
            child.kill()
            child.communicate(timeout=30)
        start = sd.process_start(os.getpid())
        reused = "fio-job.%d-%d.00.fio" % (os.getpid(), start + 1)         # this pid, another process's start
        (state_dir / reused).write_text("")
        (state_dir / "fio-job.notapid.fio").write_text("")
        (state_dir / "fio-job.1-1.dir.fio").mkdir()
        (state_dir / "fio-job.2-2.link.fio").symlink_to(tmp_path / "elsewhere")
        (state_dir / "write-cache.json").write_text("{}")
        assert state.remove_dead_job_files() == sorted([os.path.basename(killed), reused])
    assert sorted(os.listdir(state_dir)) == sorted([os.path.basename(mine), "fio-job.notapid.fio", "fio-job.1-1.dir.fio",
                                                   "fio-job.2-2.link.fio", "write-cache.json"])
    assert oct(os.stat(mine).st_mode & 0o777) == "0o600" and mine.startswith(str(state_dir) + os.sep)


def test_the_first_recorded_write_cache_original_is_kept():
    document = sd.new_write_cache_doc()
    entry, added = sd.remember_write_cache(document, "sdb", True, "hdparm", "ata", "run-1", NOW, None)
    assert added and entry["enabled"] is True
    # the step after a kill finds the cache off: the record still says on
    entry, added = sd.remember_write_cache(document, "sdb", False, "hdparm", "ata", "run-2", NOW + 60, None)
    assert not added and entry["enabled"] is True and entry["run_id"] == "run-1"
    assert sd.parse_write_cache_doc(json.dumps(document)) == document


def test_renewed_lock_extends_the_lease_and_names_the_step():
    lock = sd.new_lock("run-a", {"host": "ctl1"}, "hboot", 700, 50, NOW, 120, "quiesced")
    renewed = sd.renewed_lock(lock, "run-a", NOW + 100, 900, 60, "/s")
    assert renewed["expires"] == sd.utc_iso(NOW + 220) and renewed["updated"] == sd.utc_iso(NOW + 100)
    assert renewed["host"] == {"boot_id": "hboot", "pid": 900, "pid_start": 60}
    assert renewed["started"] == lock["started"] and renewed["lease_s"] == 120
    with pytest.raises(q.QuiesceError, match="held by run run-a, not by this run \\(run-b\\)"):
        sd.renewed_lock(lock, "run-b", NOW, 900, 60, "/s")
    with pytest.raises(q.QuiesceError, match="no quiesce lock in /s"):
        sd.renewed_lock(None, "run-a", NOW, 900, 60, "/s")


def test_runs_reusing_a_run_id():
    runs = sd.new_runs_doc()
    assert sd.record_run(runs, "awx-1", ME, NOW) and not sd.record_run(runs, "awx-1", ME, NOW)
    assert sd.runs_reusing(runs, "awx-1", ME) == []                       # the same run again
    other = dict(ME, pid=2001, pid_start=9100)
    assert [entry["run_id"] for entry in sd.runs_reusing(runs, "awx-1", other)] == ["awx-1"]
    assert sd.runs_reusing(runs, "awx-2", other) == []
    for number in range(sd.RUNS_KEPT + 5):
        sd.record_run(runs, "r%d" % number, ME, NOW)
    assert len(runs["runs"]) == sd.RUNS_KEPT
