"""The quiesce state on a lab host with real ansible-playbook runs (lab `qstate`, qstate_lab.yml, 10.231.64.0/24;
playbook qstate_run.yml):

1. A commit-rate step (the fio_commit_rate job bench_plan makes, its job file rendered from the role's template)
   runs with the write cache off; its bench_run process is SIGKILLed on the host mid-job. The cache stays off,
   the recorded original says on; playbooks/restore.yml puts back ON (not off), reads it back and clears the record.
2. A second run given the same quiesce_run_id while the first holds the lock is refused, naming the first; after
   the first ended it is still refused (the id was used).
3. The state directory with mode 0777, then owned by uid 65534: the run is refused before anything is stopped,
   the message naming the path, the owner, the mode and what to do.

STAND-INS (no disk here has a volatile write cache control: loop devices only, no scsi_debug):
- ``hdparm``: a shell script keeping the "cache" in /srv/standin-bin/cache (1 on, 0 off) and printing the outputs of
  real hdparm runs (tests/unit/plugins/module_utils/fixtures/run/hdparm-*.txt). It is bind-mounted on
  /usr/local/sbin INSIDE the lab host's mount namespace (the lab starts hosts with slave propagation: nothing
  reaches this machine's own /usr/local/sbin), so Ansible's modules find it on the host's PATH.
- ``sdq``: a stand-in ATA disk in sysfs. Inside the lab host's namespace /sys/block is a tmpfs holding the real
  /sys/block links plus sdq/device/vendor reading ``ATA`` (what libata disks show), so the unchanged
  _write_cache.write_cache_transport says "ata". The commit job writes to the lab's real throttled loop disk.
Everything else is real: ansible-playbook over SSH, the modules, fio, the signals, the state files.

Root only; the lab is torn down at the end whatever happened. Run:
  .venv/bin/pytest -s tests/integration/test_state_and_write_cache.py
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jinja2
import pytest

import labhelpers
from labhelpers import BIN, REPO, inventory_path, lab, needs_root, wait_for

sys.path.insert(0, str(REPO / ".ansible" / "collections"))
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import (  # noqa: E402
    Settings, TargetFacts, build_plan)

SPEC = Path(__file__).resolve().parent / "qstate_lab.yml"
PLAYBOOK = Path(__file__).resolve().parent / "qstate_run.yml"
RESTORE = REPO / "playbooks" / "restore.yml"
LAB = "qstate"
HOST = "qstate-n01"
INVENTORY = inventory_path(LAB)
STATE_DIR = "/srv/diskproof-state"
STANDIN = "/srv/standin-bin"
RUN_FIXTURES = REPO / "tests" / "unit" / "plugins" / "module_utils" / "fixtures" / "run"
FIO_TEMPLATE = REPO / "roles" / "benchmark" / "templates" / "fio_job.ini.j2"
DEVICE = "sdq"

# Alone: test_benchmark_step_outliving_the_lease_keeps_the_lock needs its benchmark's dd to outlive a foreign
# quiesce's whole playbook run; beside three other labs on a slow day (2026-12-01) the dd ended first.
pytestmark = [needs_root, pytest.mark.alone]
TIMINGS: dict = {}


def on_host(command: str) -> subprocess.CompletedProcess:
    return labhelpers.on_host(LAB, HOST, command)


def must(command: str) -> str:
    result = on_host(command)
    assert result.returncode == 0, (command, result.stdout, result.stderr)
    return result.stdout


def read_json(path: str):
    result = on_host("cat %s 2>/dev/null" % path)
    return json.loads(result.stdout) if result.returncode == 0 and result.stdout.strip() else None


def run_playbook(tmp_path: Path, name: str, *extra: str, playbook: Path = PLAYBOOK, background: bool = False):
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(playbook)]
    for value in extra:
        argv += ["-e", value]
    log = open(tmp_path / ("%s.log" % name), "w")
    env = labhelpers.ansible_env(DISKPROOF_REPORT_DIR=str(tmp_path / ("report-" + name)))
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    if background:
        return process
    rc = process.wait(timeout=300)
    log.close()
    return rc, (tmp_path / ("%s.log" % name)).read_text()


def install_stand_ins() -> None:
    """STAND-IN hdparm on the host's PATH and the STAND-IN ATA disk sdq in its /sys/block (its namespace only).
    The real hdparm outputs it prints are copied to the host: a lab host has its own /tmp, so a checkout
    under /tmp (CI's clean clone) is not visible there."""
    for name in ("hdparm-W-on-ceph.txt", "hdparm-W-off-ceph.txt", "hdparm-W0-ceph.txt"):
        text = (RUN_FIXTURES / name).read_text().rstrip("\n") + "\n"
        must("mkdir -p %s && cat > %s/%s <<'EOF'\n%sEOF" % (STANDIN, STANDIN, name, text))
    names = ("hdparm-W-on-ceph.txt", "hdparm-W-off-ceph.txt", "hdparm-W0-ceph.txt")
    on_, off, set_off = ("%s/%s" % (STANDIN, name) for name in names)
    script = ("#!/bin/sh\n# STAND-IN for hdparm (tests/integration/test_state_and_write_cache.py)\n"
              'echo "$*" >> %s/log\n' % STANDIN
              + 'case "$1" in\n'
              + '  -W) if [ "$(cat %s/cache)" = 1 ]; then cat %s; else cat %s; fi ;;\n' % (STANDIN, on_, off)
              + '  -W0) echo 0 > %s/cache; cat %s ;;\n' % (STANDIN, set_off)
              + '  -W1) echo 1 > %s/cache; cat %s ;;\n' % (STANDIN, on_)
              + "esac\n")
    must("mkdir -p %s && echo 1 > %s/cache && cat > %s/hdparm <<'EOF'\n%sEOF\nchmod 0755 %s/hdparm"
         % (STANDIN, STANDIN, STANDIN, script, STANDIN))
    must("mount --bind %s /usr/local/sbin" % STANDIN)
    links = "; ".join("ln -s %s /sys/block/%s" % (os.readlink("/sys/block/" + name), name)
                      for name in sorted(os.listdir("/sys/block")))
    must("mount -t tmpfs -o size=1m,mode=0755 diskproof-qstate-sysblock /sys/block && %s && mkdir -p "
         "/sys/block/%s/device && echo ATA > /sys/block/%s/device/vendor" % (links, DEVICE, DEVICE))
    assert must("command -v hdparm").strip() == "/usr/local/sbin/hdparm"
    assert os.path.realpath("/usr/local/sbin/hdparm") != STANDIN + "/hdparm"      # not on this machine


@pytest.fixture(scope="module")
def qstate_lab():
    lab("down", "--name", LAB)
    started = time.monotonic()
    lab("up", str(SPEC))
    try:
        TIMINGS["lab up"] = time.monotonic() - started
        install_stand_ins()
        yield
    finally:
        lab("down", "--name", LAB)
        print("\nqstate timings: %s" % json.dumps({k: round(v, 1) for k, v in TIMINGS.items()}))


def commit_job_vars(tmp_path: Path) -> str:
    """The fio_commit_rate job of bench_plan for /srv/diskproof/d0 on the stand-in disk sdq, write cache off, as a
    JSON extra-vars file; its test file (written by dd_seq_write in a real run) made on the host."""
    target = TargetFacts(path="/srv/diskproof/d0", free_bytes=60 << 20, filesystem_size_bytes=64 << 20, device=DEVICE)
    settings = Settings(run_id="20261125T000000Z-qstate", memory_bytes=1 << 20, tests=("fio_commit_rate",),
                        fio_runtime_s=120, fio_ramp_s=0, repeats=1, commit_write_cache="off", reserve_min_bytes=0)
    (job,) = [job for job in build_plan([target], settings).jobs if job["test"] == "fio_commit_rate"]
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    job_file = environment.from_string(FIO_TEMPLATE.read_text()).render(item=job)
    must("mkdir -p %s && truncate -s 4M %s" % (os.path.dirname(job["fio"]["filename"]), job["fio"]["filename"]))
    path = tmp_path / "commit-job.json"
    path.write_text(json.dumps({"commit_job": {"argv": job["argv"], "job_file": job_file, "test": job["test"],
                                               "target": job["target"], "params": job["params"]},
                                "restore_at_end": False}))
    return "@%s" % path


def descendants_of(pid: int) -> list:
    """Every process under pid (lab hosts share this machine's PID namespace): fio's main process and its job."""
    found = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return found
    for task in tasks:
        try:
            children = [int(child) for child in Path("/proc/%d/task/%s/children" % (pid, task)).read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child] + descendants_of(child)
    return found


def comm_of(pid: int):
    try:
        return Path("/proc/%d/comm" % pid).read_text().strip()
    except OSError:
        return None


def step_and_tool():
    """(bench_run pid, its fio processes) once fio runs: the step renewed the lock naming itself as holder."""
    lock = read_json(STATE_DIR + "/quiesce.lock") or {}
    module = (lock.get("host") or {}).get("pid")
    if not module or "python" not in (comm_of(module) or ""):
        return None
    tools = [pid for pid in descendants_of(module) if comm_of(pid) == "fio"]
    return (module, tools) if len(tools) >= 2 else None


def test_sigkill_mid_commit_rate_then_restore_yml_puts_back_the_original(qstate_lab, tmp_path):
    extra = commit_job_vars(tmp_path)
    started = time.monotonic()
    process = run_playbook(tmp_path, "killed", extra, background=True)
    fio = []
    try:
        def running():
            assert process.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]   # ended early: say why
            return step_and_tool()

        module, _tools = wait_for("bench_run running fio", running, 120)
        wait_for("the stand-in cache off", lambda: must("cat %s/cache" % STANDIN).strip() == "0", 60)
        recorded = read_json(STATE_DIR + "/write-cache.json")
        assert recorded["devices"][DEVICE]["enabled"] is True, recorded
        time.sleep(1)
        fio = descendants_of(module)
        os.kill(module, signal.SIGKILL)                          # the module process, by its pid, mid-job
        rc = process.wait(timeout=120)
    finally:
        for pid in fio:                                          # its orphaned fio (SIGKILL leaves it running)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    TIMINGS["killed run"] = time.monotonic() - started
    assert rc != 0
    assert must("cat %s/cache" % STANDIN).strip() == "0"       # left off by the kill
    assert read_json(STATE_DIR + "/write-cache.json")["devices"][DEVICE]["enabled"] is True
    # the killed step's job file, left in the state directory (named by its pid), not in the host's /tmp
    left = must("ls -A %s" % STATE_DIR).split()
    assert [name for name in left if name.startswith("fio-job.%d-" % module)], left
    started = time.monotonic()
    rc, output = run_playbook(tmp_path, "restore", "quiesce_state_dir=%s" % STATE_DIR, playbook=RESTORE)
    TIMINGS["restore.yml"] = time.monotonic() - started
    assert rc == 0, output[-3000:]
    assert must("cat %s/cache" % STANDIN).strip() == "1"       # the ORIGINAL, on
    assert must("tail -n 2 %s/log" % STANDIN).split("\n")[:2] == ["-W1 /dev/%s" % DEVICE, "-W /dev/%s" % DEVICE]
    assert read_json(STATE_DIR + "/write-cache.json")["devices"] == {}
    assert read_json(STATE_DIR + "/quiesce.lock") is None
    assert "changed=1" in output
    assert not [name for name in must("ls -A %s" % STATE_DIR).split() if name.startswith("fio-job.")]


def test_reused_run_id_refused_while_held_and_after(qstate_lab, tmp_path):
    started = time.monotonic()
    first = run_playbook(tmp_path, "first", "quiesce_run_id=qstate-reused", "hold_s=20", background=True)
    try:
        wait_for("the first run's lock", lambda: (read_json(STATE_DIR + "/quiesce.lock") or {}).get("phase")
                 == "quiesced", 90)
        rc, output = run_playbook(tmp_path, "second", "quiesce_run_id=qstate-reused")
        assert rc != 0
        assert "refusing to quiesce: run id qstate-reused is already used by another run" in output, output[-3000:]
        assert "quiesce_run_id" in output
        lock = read_json(STATE_DIR + "/quiesce.lock")
        assert lock["run_id"] == "qstate-reused" and lock["controller"]["pid"] == first.pid
        assert first.wait(timeout=120) == 0                     # the first run was not disturbed
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert read_json(STATE_DIR + "/quiesce.lock") is None
    rc, output = run_playbook(tmp_path, "third", "quiesce_run_id=qstate-reused")
    assert rc != 0 and "run id qstate-reused is already used by another run (first seen" in output, output[-3000:]
    TIMINGS["reused run id"] = time.monotonic() - started


@pytest.mark.parametrize(("prepare", "expected"), [
    ("chmod 0777 %s" % STATE_DIR, "has mode 0777 (group- or world-writable)"),
    ("chmod 0700 %s && chown 65534:65534 %s" % (STATE_DIR, STATE_DIR), "is owned by uid 65534 (nobody)"),
])
def test_state_dir_not_private_is_refused(qstate_lab, tmp_path, prepare, expected):
    must("mkdir -p %s && chmod 0700 %s && chown 0:0 %s" % (STATE_DIR, STATE_DIR, STATE_DIR))
    before = must("ls -A %s" % STATE_DIR)
    cron_before = labhelpers.cron_status(LAB, HOST)
    must(prepare)
    try:
        started = time.monotonic()
        rc, output = run_playbook(tmp_path, "private", "quiesce_run_id=qstate-private-%d" % time.time_ns())
        TIMINGS["state dir " + expected.split()[0]] = time.monotonic() - started
        assert rc != 0
        assert "the state directory %s" % STATE_DIR in output and expected in output, output[-3000:]
        assert "chmod 0700 %s" % STATE_DIR in output and "chown root:root" in output, output[-3000:]
        assert must("ls -A %s" % STATE_DIR) == before                   # nothing written into it
        assert labhelpers.cron_status(LAB, HOST) == cron_before         # nothing stopped
    finally:
        must("chown 0:0 %s && chmod 0700 %s" % (STATE_DIR, STATE_DIR))


FOREIGN = {"state": "quiesced", "run_id": "qstate-foreign", "state_dir": STATE_DIR, "service_manager": "sysv",
           "services": [], "timers": [], "targets": [], "checks": [], "drop_caches": False, "idle_window": 0.1,
           "idle_timeout": 0, "idle_max_load_per_cpu": 0,
           # another controller: this host can judge its lock only by the lease (or a live process on the host)
           "controller": {"host": "other-controller", "user": "root", "boot_id": "x", "pid_ns": "y", "pid": 1,
                          "pid_start": 1, "seen_at": 1, "live": {}}}


def foreign_quiesce(tmp_path: Path) -> str:
    """The quiesce module called from "another controller" (ad-hoc ansible): its output."""
    result = subprocess.run([str(BIN / "ansible"), "-i", str(INVENTORY), "lab", "-m", "diskproof.fleet.quiesce",
                             "-a", json.dumps(FOREIGN)], cwd=REPO, capture_output=True, text=True, timeout=120,
                            check=False,
                            env=labhelpers.ansible_env(DISKPROOF_REPORT_DIR=str(tmp_path / "report-foreign")))
    return result.stdout + result.stderr


def test_benchmark_step_outliving_the_lease_keeps_the_lock(qstate_lab, tmp_path):
    """quiesce_lease 3 s; the benchmark role's dd_seq_write (64 MiB at 8 MiB/s) runs about 8 s. 4 s into it
    another controller's quiesce must be refused (the step renewed the lock and holds it); without renewal the
    lease ran out and it would take the host over, restoring it under the running benchmark."""
    started = time.monotonic()
    run = run_playbook(tmp_path, "bench", playbook=REPO / "tests" / "integration" / "qstate_bench.yml",
                       background=True)
    try:
        host_mnt = must("readlink /proc/self/ns/mnt").strip()

        def the_dd():
            """The benchmark's dd on the lab host (its mount namespace, its test file)."""
            for entry in os.listdir("/proc"):
                if entry.isdigit() and comm_of(int(entry)) == "dd":
                    try:
                        argv = Path("/proc/%s/cmdline" % entry).read_bytes().split(b"\0")
                        same_host = os.readlink("/proc/%s/ns/mnt" % entry) == host_mnt
                    except OSError:
                        continue
                    if same_host and any(arg.startswith(b"of=/srv/diskproof/d0/diskproof-") for arg in argv):
                        return int(entry)
            return None
        dd = wait_for("the benchmark's dd on the lab host", the_dd, 120, interval=0.2)
        time.sleep(4)                                # a lease of 3 s from the quiesce has run out by now
        assert run.poll() is None and the_dd() == dd, "the step ended too early to prove anything"
        # Read while the dd runs: the foreign quiesce below is an ansible run of its own, and on a slow machine the
        # dd may end before it does (a CI run then found no /proc/PID/stat to read).
        lock = read_json(STATE_DIR + "/quiesce.lock")
        step = int(Path("/proc/%d/stat" % dd).read_text().rsplit(")", 1)[1].split()[1])
        assert lock["host"]["pid"] == step and lock["lease_s"] == 3      # the step renewed it and holds it
        output = foreign_quiesce(tmp_path)
        assert "FAILED" in output and "refusing to quiesce: the host is locked by run" in output, output[-3000:]
        assert "its quiesce call or benchmark step is still running on this host (pid %d)" % step in output
        rc = run.wait(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    TIMINGS["lease renewed by the benchmark role"] = time.monotonic() - started
    assert rc == 0, (tmp_path / "bench.log").read_text()[-3000:]
    assert read_json(STATE_DIR + "/quiesce.lock") is None
