"""The quiesce role on real systemd 252 hosts (systemd-nspawn lab hosts, qsysd_lab.yml, lab `qsysd`,
10.231.70.0/24), through real ansible-playbook runs of qsysd_run.yml:

1. Units restored exactly: per unit (the host's own cron, apt-daily*, man-db, e2scrub_all,
   dpkg-db-backup, systemd-tmpfiles-clean, fstrim; absent crond/atd/anacron/logrotate/dnf-makecache;
   and, set up by qsysd_setup.yml, a unit enabled but stopped on purpose, a masked one, a failed one,
   one stuck `activating`) `systemctl is-active`/`is-enabled` and LoadState/ActiveState/SubState/
   UnitFileState before, during and after are checked from outside, and the module's own per-unit
   table (printed) says the same: before = after for every unit.
2. No timer fires while quiesced: qsysd-tick.timer fires every 2 s; its service runs 0 times in a
   window of >= 20 s, and runs again after the restore.
3. Persistent= catch-up is skipped: qsysd-pers.timer (every 15 s, Persistent=true) misses its
   calendar time while quiesced; no run within 4 s of the restore, the restore reports the skipped run
   and its next time, and it runs again on schedule.
4. OnBootSec= on restart (measured, documented by systemd.timer(5)): qsysd-boot.timer (OnBootSec=1s,
   long past) runs its job exactly once when the restore starts it, and the table says it would.
   OnActiveSec=: an elapsed one-shot (qsysd-once) is left alone and does not run again; a repeating
   one (qsysd-again, OnActiveSec=3s) runs once 3 s after the restore, as the table says.
5. The idle gate reads each host's own CPU time: a CPU hog inside qsysd-n01 (one core) keeps n01's
   gate from opening and leaves n02's open (both judged from their cgroup, not /proc/loadavg: the
   machine's load average would hold both back).

Root only (lab: network namespaces, loop devices, systemd-nspawn); skipped otherwise. The lab is torn
down in the fixture's finalizer. Run: .venv/bin/pytest -s tests/integration/test_quiesce_systemd.py
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import labhelpers
from labhelpers import BIN, REPO, inventory_path, lab, needs_root, wait_for

HERE = Path(__file__).resolve().parent
SPEC = HERE / "qsysd_lab.yml"
SETUP = HERE / "qsysd_setup.yml"
PLAYBOOK = HERE / "qsysd_run.yml"
LAB = "qsysd"
INVENTORY = inventory_path(LAB)
STATE_DIR = "/srv/diskproof-state"
HOSTS = ("qsysd-n01", "qsysd-n02")
SERVICES = ["cron.service", "crond.service", "atd.service", "anacron.service", "qsysd-stopped.service",
            "qsysd-masked.service", "qsysd-failed.service", "qsysd-activating.service"]
TIMERS = ["fstrim.timer", "logrotate.timer", "man-db.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
          "dnf-makecache.timer", "e2scrub_all.timer", "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer",
          "plocate-updatedb.timer", "mlocate-updatedb.timer", "sysstat-collect.timer", "sysstat-summary.timer",
          "qsysd-tick.timer", "qsysd-pers.timer", "qsysd-boot.timer", "qsysd-once.timer", "qsysd-again.timer"]
UNITS = SERVICES + TIMERS
STOPPED = ["cron.service", "qsysd-activating.service", "man-db.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
           "e2scrub_all.timer", "dpkg-db-backup.timer", "systemd-tmpfiles-clean.timer", "qsysd-tick.timer",
           "qsysd-pers.timer", "qsysd-boot.timer", "qsysd-again.timer"]
QUIET_WINDOW_S = 20

pytestmark = needs_root

TIMINGS: dict[str, float] = {}


def on_host(host: str, command: str) -> subprocess.CompletedProcess:
    return labhelpers.on_host(LAB, host, command)


def host_units(host: str) -> dict:
    """Per unit, seen from outside the module: is-active, is-enabled and the four show states."""
    script = ("for u in %s; do printf '%%s %%s %%s %%s\\n' $u \"$(systemctl is-active $u)\" \"$(systemctl is-enabled $u "
              "2>/dev/null || true)\" \"$(systemctl show -P LoadState -P ActiveState -P SubState -P UnitFileState $u "
              "| tr '\\n' /)\"; done" % " ".join(UNITS))
    result = on_host(host, script)
    assert result.returncode == 0, result.stderr
    table = {}
    for line in result.stdout.splitlines():
        unit, active, enabled, states = (line.split(" ") + ["", "", ""])[:4]
        table[unit] = {"is_active": active, "is_enabled": enabled, "show": states}
    assert sorted(table) == sorted(UNITS), result.stdout
    return table


def runs(host: str, name: str) -> list[float]:
    result = on_host(host, "cat /var/log/qsysd-%s.log 2>/dev/null || true" % name)
    return [float(line) for line in result.stdout.split()]


def read_json(host: str, path: str):
    result = on_host(host, "cat %s 2>/dev/null" % path)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def quiesced(host: str) -> bool:
    lock = read_json(host, STATE_DIR + "/quiesce.lock")
    return bool(lock and lock["phase"] == "quiesced")


def host_clock(host: str) -> float:
    return float(on_host(host, "date +%s.%N").stdout)


class Run:
    """One ansible-playbook of qsysd_run.yml in its own session, output in a log file."""

    def __init__(self, tmp_path: Path, name: str, env: dict, *extra: str):
        self.log_path = tmp_path / ("%s.log" % name)
        argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(PLAYBOOK)]
        for value in extra:
            argv += ["-e", value]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self, timeout: float = 180) -> int:
        """Its exit code; a run still going after timeout (a restore that hangs) is killed by its session id."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)
            raise

    @property
    def output(self) -> str:
        return self.log_path.read_text()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    started = time.monotonic()
    lab("up", "--replace", str(SPEC), timeout=180)
    environment = labhelpers.checkout_collection_env(tmp_path_factory.mktemp("report"))
    try:
        setup = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(SETUP)], cwd=REPO,
                               env=environment, capture_output=True, text=True, timeout=180, check=False)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        TIMINGS["lab up + unit setup"] = time.monotonic() - started
        yield environment
    finally:
        down = time.monotonic()
        lab("down", "--name", LAB, check=False, timeout=120)
        TIMINGS["lab down"] = time.monotonic() - down
        print("\nqsysd timings: " + ", ".join("%s %.1f s" % item for item in TIMINGS.items()))


def test_units_restored_exactly_no_timer_fires_persistent_catch_up_skipped(env, tmp_path):
    host = "qsysd-n01"
    started = time.monotonic()
    on_host(host, "rm -f /var/tmp/qsysd-release /var/tmp/qsysd-record.json")
    wait_for("qsysd-tick to fire", lambda: len(runs(host, "tick")) >= 2, 10, 0.5)
    before = host_units(host)
    assert before["cron.service"]["is_active"] == "active"
    assert before["qsysd-stopped.service"] == {"is_active": "inactive", "is_enabled": "enabled",
                                               "show": "loaded/inactive/dead/enabled/"}
    assert before["qsysd-masked.service"]["is_enabled"] == "masked"
    assert before["qsysd-failed.service"]["is_active"] == "failed"
    assert before["qsysd-activating.service"]["is_active"] == "activating"
    assert before["atd.service"]["show"].startswith("not-found/")
    assert before["systemd-tmpfiles-clean.timer"]["is_enabled"] == "static"
    assert before["qsysd-once.timer"]["show"] == "loaded/active/elapsed/static/"
    boot_runs_before = len(runs(host, "boot"))
    once_runs_before, again_runs_before = len(runs(host, "once")), len(runs(host, "again"))

    run = Run(tmp_path, "restore-exactly", env, "run_hosts=%s" % host)
    wait_for("%s to be quiesced" % host, lambda: quiesced(host) or run.process.poll() is not None, 90, 0.5)
    assert run.process.poll() is None, run.output
    window_start = host_clock(host)
    during = host_units(host)
    time.sleep(QUIET_WINDOW_S)
    window_end = host_clock(host)
    pers_due_missed = [t for t in range(int(window_start) + 1, int(window_end)) if t % 15 == 0]
    assert pers_due_missed, "the window must contain a qsysd-pers calendar time"
    # Release 2-4 s after a qsysd-pers calendar time (every 15 s): a catch-up run at the restore would then
    # be seconds away from any calendar time, so it cannot pass for a scheduled one.
    wait_for("a release moment", lambda: 2 <= host_clock(host) % 15 < 4, 20, 0.3)
    on_host(host, "touch /var/tmp/qsysd-release")
    restore_at = host_clock(host)
    assert run.wait() == 0, run.output
    TIMINGS["quiesce + %d s window + restore" % QUIET_WINDOW_S] = time.monotonic() - started
    time.sleep(4)
    after = host_units(host)
    record = read_json(host, "/var/tmp/qsysd-record.json")
    quiesce, restore = record["quiesce"], record["restore"]

    print("\nper-unit table of %s, one real run (the module's restore result, unit_table):" % host)
    print("\n".join(restore["unit_table"]))

    # 1. exactly what ran was stopped, and everything is as it was
    assert quiesce["stopped"] == STOPPED
    assert restore["started"] == STOPPED
    for unit in UNITS:
        assert during[unit]["is_enabled"] == before[unit]["is_enabled"], unit
        assert after[unit] == before[unit], (unit, before[unit], after[unit])
        if unit == "qsysd-activating.service":        # its ExecStartPre= killed by the stop: failed, until started
            assert during[unit]["is_active"] == "failed", during[unit]
        elif unit in STOPPED:
            assert during[unit]["is_active"] == "inactive", (unit, during[unit])
        else:
            assert during[unit] == before[unit], (unit, during[unit])
    rows = {row["unit"]: row for row in restore["units"]}
    assert sorted(rows) == sorted(UNITS)
    assert [unit for unit, row in rows.items() if not row["same"]] == []
    assert rows["qsysd-masked.service"]["decision"].startswith("left alone: masked")
    assert rows["qsysd-stopped.service"]["decision"].startswith("left alone: enabled but stopped")
    assert rows["qsysd-failed.service"]["decision"].startswith("left alone: failed")
    assert rows["qsysd-activating.service"]["decision"] == "stopped: activating"
    assert rows["qsysd-activating.service"]["after"]["active"] == "activating"
    assert rows["atd.service"]["decision"] == "left alone: not on this host"
    assert rows["cron.service"]["during"]["active"] == "inactive"

    # 2. no timer fired while quiesced, and they fire again after
    ticks = runs(host, "tick")
    assert [t for t in ticks if window_start <= t <= window_end] == []
    assert [t for t in ticks if t > restore_at], "qsysd-tick does not fire again after the restore"

    # 3. the Persistent= run missed in the window is skipped, reported, and the timer runs on schedule after
    skipped = {item["timer"]: item for item in restore["skipped_runs"]}
    assert "qsysd-pers.timer" in skipped, restore["skipped_runs"]
    assert skipped["qsysd-pers.timer"]["method"] == "systemctl clean --what=state"
    assert skipped["qsysd-pers.timer"]["next"]
    assert [t for t in runs(host, "pers") if window_start <= t <= restore_at] == []
    wait_for("qsysd-pers to run on schedule", lambda: [t for t in runs(host, "pers") if t > restore_at], 20, 1)
    off_schedule = [t for t in runs(host, "pers") if t > window_start and t % 15 > 1.0]
    assert off_schedule == [], "a catch-up run at the restore: %s" % off_schedule

    # 4. OnBootSec= in the past: exactly one run when started again, as the table announced
    assert len(runs(host, "boot")) == boot_runs_before + 1
    assert "OnBootSec= is past" in rows["qsysd-boot.timer"]["decision"]
    assert "OnBootSec=" not in rows["qsysd-tick.timer"]["decision"]

    # 5. OnActiveSec=: an elapsed one-shot is left alone (no re-arm, no extra run); a repeating one is restarted
    #    and, as OnActiveSec= counts from the start, runs 3 s after the restore, as the table says
    assert rows["qsysd-once.timer"]["decision"].startswith("left alone: elapsed")
    assert len(runs(host, "once")) == once_runs_before
    again = runs(host, "again")
    assert len(again) == again_runs_before + 1 and again[-1] > restore_at
    assert "OnActiveSec= counts from the restore: its job runs 3 s after it" in rows["qsysd-again.timer"]["decision"]
    TIMINGS["restore-exactly scenario"] = time.monotonic() - started


# The CPU gate's limit for test_idle_gate_reads_each_hosts_own_cpu, per CPU (its comment says why 0.10).
GATE_LIMIT = 0.10


def test_idle_gate_reads_each_hosts_own_cpu(env, tmp_path):
    started = time.monotonic()
    for host in HOSTS:
        on_host(host, "rm -f /var/tmp/qsysd-record.json; touch /var/tmp/qsysd-release")
    # One busy core inside n01 (about 0.5 per CPU on this 2-CPU machine), for the ~10 s of the run: its session's
    # scheduling group at nice -19, so the loop keeps most of its core whatever else this machine runs. At nice 0,
    # beside the other test files' labs it measured 0.13-0.20 per CPU in three runs; at nice -19 in a clean-clone CI
    # run of 2026-12-01 (a slow day, four labs side by side) 0.32, 0.34, 0.41 and then 0.21, under the 0.25 the test
    # used to set, so the gate found an idle window. The gate's limit here is 0.10 per CPU: the hog's worst reading
    # is twice that, the quiet host reads 0.0 (a margin on both sides; docs/tests.md says so). What it tests is
    # unchanged: each host's gate counts its own CPU time, not the machine's.
    hog = on_host("qsysd-n01", "nohup sh -c 'echo -19 > /proc/self/autogroup; while :; do :; done' >/dev/null 2>&1 "
                               "</dev/null & echo $!")
    hog_pid = int(hog.stdout.strip())
    try:
        run = Run(tmp_path, "cpu-gate", env, "quiesce_idle_max_load_per_cpu=%g" % GATE_LIMIT, "quiesce_idle_timeout=6",
                  "quiesce_idle_on_timeout=continue")
        assert run.wait() == 0, run.output
    finally:
        on_host("qsysd-n01", "kill %d" % hog_pid)
    busy = read_json("qsysd-n01", "/var/tmp/qsysd-record.json")["quiesce"]["idle"]
    quiet = read_json("qsysd-n02", "/var/tmp/qsysd-record.json")["quiesce"]["idle"]
    print("\nidle gate: n01 (hog) %s; n02 %s" % (
        [s.get("cpu_busy_per_cpu") for s in busy["samples"]], [s.get("cpu_busy_per_cpu") for s in quiet["samples"]]))
    # Both hosts count their own CPU time (tools/lab starts each systemd host in a cgroup of its own; where
    # hosts share one, the module refuses the counter and says so: a unit test replays that capture).
    assert busy["load_source"] == "cgroup", busy["load_source_why"]
    assert quiet["load_source"] == "cgroup", quiet["load_source_why"]
    assert busy["reached"] is False and busy["windows"] >= 3
    assert all("this host's CPU use" in " ".join(sample["reasons"]) for sample in busy["samples"])
    assert quiet["reached"] is True and quiet["windows"] == 1
    assert quiet["last"]["cpu_busy_per_cpu"] < GATE_LIMIT
    TIMINGS["cpu gate scenario"] = time.monotonic() - started
