"""The quiesce state on the host: its directory, the lock's lease and run id, and the drive write cache's original
setting, with the REAL modules run as Ansible runs them on a host: ``python -m <module> <args.json>`` in a
subprocess, so a SIGKILL is a real kill of the module process in the middle of its job.

Stand-ins (no disk on these machines has a volatile write cache control: loop and virtio disks only, no
scsi_debug module):

- ``hdparm`` is a STAND-IN shell script first on PATH. It keeps the drive's "write cache" in a file (1 on, 0 off)
  and prints the outputs of real hdparm runs (tests/unit/plugins/module_utils/fixtures/run/hdparm-*.txt, each with
  its .src.md).
- ``sdq`` is a STAND-IN sysfs disk: the module runs in a private mount namespace (``unshare --mount
  --propagation private``) whose /sys/block is a small tmpfs holding the machine's real /sys/block links plus a
  directory ``sdq/device/vendor`` reading ``ATA`` (what libata disks show). ``_write_cache.write_cache_transport`` reads it
  unchanged and answers "ata", so hdparm is the tool. Nothing outside that namespace sees it.

Everything else is real: the modules, fio and dd, the state directory and its files, the signals. Needs root
(mount namespace, chown); skips elsewhere.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import Settings, TargetFacts, build_plan

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
COLLECTIONS = os.path.join(REPO, ".ansible", "collections")
RUN_FIXTURES = os.path.join(HERE, "..", "module_utils", "fixtures", "run")
FIO_TEMPLATE = os.path.join(REPO, "roles", "benchmark", "templates", "fio_job.ini.j2")
PACKAGE = "ansible_collections.diskproof.fleet.plugins.modules."
DEVICE = "sdq"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount namespace, chown)"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)"),
]
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


# ---------------------------------------------------------------------------------------------- plumbing

def stand_in_hdparm(tmp_path, cache="1"):
    """STAND-IN hdparm: the "write cache" lives in hdbin/cache; it prints real hdparm outputs; calls go to hdbin/log."""
    folder = tmp_path / "hdbin"
    folder.mkdir()
    cache_file, log = folder / "cache", folder / "log"
    cache_file.write_text(cache + "\n")
    on, off, set_off = (os.path.join(RUN_FIXTURES, name) for name in
                        ("hdparm-W-on-ceph.txt", "hdparm-W-off-ceph.txt", "hdparm-W0-ceph.txt"))
    body = ("#!/bin/sh\n# STAND-IN for hdparm (tests/unit/plugins/modules/test_quiesce_state.py)\n"
            'echo "$*" >> "%s"\n' % log
            + 'case "$1" in\n'
            + '  -W) if [ "$(cat "%s")" = 1 ]; then cat "%s"; else cat "%s"; fi ;;\n' % (cache_file, on, off)
            + '  -W0) echo 0 > "%s"; cat "%s" ;;\n' % (cache_file, set_off)
            + '  -W1) echo 1 > "%s"; cat "%s" ;;\n' % (cache_file, on)
            + "esac\n")
    (folder / "hdparm").write_text(body)
    (folder / "hdparm").chmod(0o755)
    return folder, cache_file, log


def namespace_script(tmp_path):
    """A shell wrapper: private mount namespace, /sys/block = real links + the STAND-IN ATA disk sdq, then exec."""
    links = "".join("%s %s\n" % (name, os.readlink(os.path.join("/sys/block", name)))
                    for name in sorted(os.listdir("/sys/block")))
    (tmp_path / "sysblock-links").write_text(links)
    body = ("set -e\n"
            "mount -t tmpfs -o size=1m,mode=0755 diskproof-test-sysblock /sys/block\n"
            'while read -r name target; do ln -s "$target" "/sys/block/$name"; done < "%s"\n'
            % (tmp_path / "sysblock-links")
            + "mkdir -p /sys/block/%s/device\n" % DEVICE
            + "echo ATA > /sys/block/%s/device/vendor\n" % DEVICE
            + 'exec "$@"\n')
    path = tmp_path / "in-namespace.sh"
    path.write_text(body)
    return str(path)


def start_module(tmp_path, name, args, path_prefix=None, tag="args"):
    """Start the module as Ansible does on a host (python, the module, a JSON args file); returns the Popen.

    The Popen's pid is the module's own process: unshare execs the shell, the shell execs python."""
    if name == "bench_run":
        # No wait for an idle disk before the run: this machine's disk is shared with other tests (settle_s is
        # tested in test_bench_run_settle.py).
        args = dict({"settle_s": 0}, **args)
    args_file = tmp_path / ("%s-%s-%d.json" % (tag, name, time.monotonic_ns()))
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, LC_ALL="C", LANG="C")
    if path_prefix:
        env["PATH"] = "%s:%s" % (path_prefix, env["PATH"])
    argv = ["unshare", "--mount", "--propagation", "private", "sh", namespace_script(tmp_path),
            sys.executable, "-m", PACKAGE + name, str(args_file)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, timeout=120):
    out, err = process.communicate(timeout=timeout)
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError("module printed no JSON (exit %s): %s %s" % (process.returncode, out[-2000:], err[-2000:]))


def run_module(tmp_path, name, args, path_prefix=None):
    return finish(start_module(tmp_path, name, args, path_prefix))


CONTROLLER_A = {"host": "ctl-a", "user": "root", "boot_id": "boot-a", "pid_ns": "pid:[1]", "pid": 4101,
                "pid_start": 111, "seen_at": 999999, "live": {}}
CONTROLLER_B = {"host": "ctl-b", "user": "root", "boot_id": "boot-b", "pid_ns": "pid:[2]", "pid": 4202,
                "pid_start": 222, "seen_at": 999999, "live": {}}


def quiesce_args(state_dir, run_id, controller, state="quiesced", **extra):
    """A quiesce that changes nothing on this machine: no services, no targets, no checks, no cache drop."""
    args = {"state": state, "run_id": run_id, "controller": controller, "state_dir": str(state_dir)}
    if state == "quiesced":
        args.update(services=[], timers=[], service_manager="sysv", targets=[], checks=[], drop_caches=False,
                    idle_window=0.1, idle_timeout=0, idle_max_load_per_cpu=0)
    args.update(extra)
    return args


def descendants_of(pid):
    """Every process under pid (fio forks its job processes under its own main process)."""
    found = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return found
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as handle:
                children = [int(child) for child in handle.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child] + descendants_of(child)
    return found


def comm_of(pid):
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except OSError:
        return None


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out after %s s waiting for %s" % (timeout, what))


def read_json(path):
    with open(path) as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------------------------- state directory

def test_state_dir_is_created_0700(tmp_path):
    state_dir = tmp_path / "new" / "state"
    result = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A))
    assert not result.get("failed"), result
    assert oct(state_dir.stat().st_mode & 0o7777) == "0o700"
    lock = read_json(state_dir / "quiesce.lock")
    assert oct(os.stat(state_dir / "quiesce.lock").st_mode & 0o777) == "0o600" and lock["run_id"] == "run-1"


@pytest.mark.parametrize(("mode", "owner", "expected"), [
    (0o777, None, "mode 0777 (group- or world-writable)"),
    (0o700, 65534, "owned by uid 65534 (nobody)"),
])
@pytest.mark.parametrize("state", ["quiesced", "restored"])
def test_state_dir_not_private_is_refused(tmp_path, mode, owner, expected, state):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    state_dir.chmod(mode)
    if owner is not None:
        os.chown(state_dir, owner, owner)
    result = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A, state=state))
    assert result.get("failed"), result
    assert str(state_dir) in result["msg"] and expected in result["msg"], result["msg"]
    assert "chown root:root" in result["msg"] and "chmod 0700" in result["msg"], result["msg"]
    assert os.listdir(state_dir) == []           # nothing written into it


def test_state_dir_that_is_a_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "state").symlink_to(real)
    result = run_module(tmp_path, "quiesce", quiesce_args(tmp_path / "state", "run-1", CONTROLLER_A))
    assert result.get("failed") and "is a symbolic link" in result["msg"], result
    assert os.listdir(real) == []


def test_lock_writes_never_follow_a_planted_temp_file_symlink(tmp_path, capsys):
    """The old temporary name was <file>.<pid>.tmp: predictable, opened without O_EXCL/O_NOFOLLOW. The module runs
    in this process here, so its pid is known: symlinks planted at those names must not be written through."""
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.diskproof.fleet.plugins.modules import quiesce
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for name in ("quiesce.lock", "quiesce-state.json"):
        os.symlink(victim, state_dir / ("%s.%d.tmp" % (name, os.getpid())))
    with patch_module_args(quiesce_args(state_dir, "run-1", CONTROLLER_A)):
        with pytest.raises(SystemExit):
            quiesce.main()
    result = json.loads(capsys.readouterr().out)
    assert not result.get("failed"), result
    assert victim.read_text() == "precious\n"
    assert read_json(state_dir / "quiesce.lock")["run_id"] == "run-1"


# ---------------------------------------------------------------------------------------------- run ids

def test_a_reused_run_id_is_refused_while_the_first_holds_the_lock_and_after(tmp_path):
    state_dir = tmp_path / "state"
    first = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_A))
    assert not first.get("failed"), first
    # the same run calling again (same controller process) is re-entrant
    again = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_A))
    assert not again.get("failed"), again
    # another run given the same id, while the first holds the lock
    second = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_B))
    assert second.get("failed"), second
    assert "run id awx-17 is already used by another run" in second["msg"], second["msg"]
    assert "ctl-a" in second["msg"] and "quiesce_run_id" in second["msg"], second["msg"]
    assert read_json(state_dir / "quiesce.lock")["controller"]["host"] == "ctl-a"     # untouched
    # its always-section restore must not release the first run's lock either
    skipped = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_B, state="restored",
                                                           foreign_lock="skip"))
    assert not skipped.get("failed") and skipped.get("left_alone"), skipped
    assert (state_dir / "quiesce.lock").exists()
    # the first run restores and releases; the id stays used
    done = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_A, state="restored"))
    assert not done.get("failed") and not (state_dir / "quiesce.lock").exists(), done
    later = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "awx-17", CONTROLLER_B))
    assert later.get("failed") and "run id awx-17 is already used by another run" in later["msg"], later
    assert not (state_dir / "quiesce.lock").exists()


# ---------------------------------------------------------------------------------------------- lease

@needs_fio
def test_a_job_outliving_the_lease_keeps_the_lock(tmp_path):
    """Lease 2 s; the benchmark step (a real fio job rate-limited to run about 5 s) renews the lock when it starts,
    holds it by its pid while it runs and renews it when it ends. A run from another controller (which can only
    judge by the lease) is refused during the job and right after it; once the renewed lease ran out, it may take
    over. Without renewal it would take the host 2 s after the quiesce, in the middle of the job."""
    state_dir = tmp_path / "state"
    quiesced = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-long", CONTROLLER_A, lease=2))
    assert not quiesced.get("failed"), quiesced
    data = tmp_path / "data"
    data.mkdir()
    job = ["fio", "--name=lease", "--filename=%s" % (data / "f"), "--size=1m", "--rw=write", "--bs=4k", "--rate=200k",
           "--output-format=json"]
    bench = start_module(tmp_path, "bench_run", {"argv": job, "direction": "write", "device_io": False,
                                                 "state_dir": str(state_dir), "lock_run_id": "run-long"})
    started = time.monotonic()
    time.sleep(3.5)      # the quiesce's lease ran out 1.5 s ago; the job is still running
    assert bench.poll() is None, "the fio job ended too early to prove anything"
    during = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-other", CONTROLLER_B))
    assert during.get("failed") and "locked by run run-long" in during["msg"], during
    result = finish(bench)
    assert not result.get("failed"), result
    assert time.monotonic() - started > 4
    right_after = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-other", CONTROLLER_B))
    assert right_after.get("failed") and "locked by run run-long" in right_after["msg"], right_after
    lock = read_json(state_dir / "quiesce.lock")
    assert lock["run_id"] == "run-long" and lock["lease_s"] == 2
    time.sleep(2.2)
    expired = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-other", CONTROLLER_B))
    assert not expired.get("failed") and expired["recovered"]["run_id"] == "run-long", expired


def test_a_step_whose_lock_was_taken_over_refuses_to_run(tmp_path):
    state_dir = tmp_path / "state"
    assert not run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-new", CONTROLLER_B)).get("failed")
    marker = tmp_path / "ran"
    result = run_module(tmp_path, "bench_run", {"argv": ["touch", str(marker)], "state_dir": str(state_dir),
                                                "lock_run_id": "run-old", "device_io": False})
    assert result.get("failed"), result
    assert "held by run run-new" in result["msg"] and "not by this run (run-old)" in result["msg"], result["msg"]
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------- write cache

def commit_rate_job(target_dir):
    """The fio_commit_rate job the benchmark role would run (its job file rendered from the role's template), long
    enough (runtime 30 s) to be killed in the middle, on the STAND-IN disk sdq with the write cache off."""
    target = TargetFacts(path=str(target_dir), free_bytes=1 << 30, filesystem_size_bytes=1 << 31, device=DEVICE)
    settings = Settings(run_id="20261125T000000Z-wcache", memory_bytes=1 << 20, tests=("fio_commit_rate",),
                        fio_runtime_s=30, fio_ramp_s=0, repeats=1, commit_write_cache="off", reserve_min_bytes=0)
    (job,) = [job for job in build_plan([target], settings).jobs if job["test"] == "fio_commit_rate"]
    with open(FIO_TEMPLATE, encoding="utf-8") as handle:
        template = handle.read()
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    job_file = environment.from_string(template).render(item=job)
    # the test file dd_seq_write would have written before (fio runs with allow_file_create=0)
    os.makedirs(os.path.dirname(job["fio"]["filename"]), exist_ok=True)
    with open(job["fio"]["filename"], "wb") as handle:
        handle.truncate(4 << 20)
    return job, job_file


def kill_commit_rate_job_with_cache_off(tmp_path, state_dir):
    """Start the commit-rate bench_run, wait until the stand-in cache reads off and fio runs, SIGKILL the module."""
    folder, cache, log = stand_in_hdparm(tmp_path, cache="1")
    target_dir = tmp_path / "target"
    target_dir.mkdir()
    job, job_file = commit_rate_job(target_dir)
    assert job["write_cache"] == "off" and "fdatasync=1" in job_file
    state_dir.mkdir(mode=0o700, exist_ok=True)      # as a run's quiesce leaves it
    args = {"argv": job["argv"], "job_file": job_file, "test": job["test"], "target": job["target"],
            "params": job["params"], "write_cache": "off", "repeats": 1, "device_io": False,
            "state_dir": str(state_dir)}
    bench = start_module(tmp_path, "bench_run", args, path_prefix=str(folder))
    tools = []

    def measuring():
        tools[:] = [pid for pid in descendants_of(bench.pid) if comm_of(pid) == "fio"]
        return cache.read_text() == "0\n" and len(tools) >= 2          # fio's main process and its job
    try:
        wait_for(measuring, 30, "fio running with the stand-in write cache off")
        time.sleep(0.5)
        tools[:] = descendants_of(bench.pid)
        os.kill(bench.pid, signal.SIGKILL)
        bench.communicate(timeout=30)
    finally:
        for pid in tools:                 # the orphaned fio processes (SIGKILL leaves them running): by their pids
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == -signal.SIGKILL
    assert cache.read_text() == "0\n"                           # the kill left the cache off
    # ... and its job file, in the state directory (named by its pid), not in the host's temporary directory
    (left,) = [path.name for path in state_dir.iterdir() if path.name.startswith("fio-job.%d-" % bench.pid)]
    return folder, cache, log, args, left


def test_sigterm_mid_job_stops_fio_restores_the_cache_and_removes_the_job_file(tmp_path):
    """A cancel (SIGTERM) mid commit-rate job: fio stopped within seconds, the cache back on, and the job file in the
    state directory gone with the step (only SIGKILL leaves one)."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    folder, cache, _log = stand_in_hdparm(tmp_path, cache="1")
    target_dir = tmp_path / "target"
    target_dir.mkdir()
    job, job_file = commit_rate_job(target_dir)
    args = {"argv": job["argv"], "job_file": job_file, "test": job["test"], "target": job["target"],
            "params": job["params"], "write_cache": "off", "repeats": 1, "device_io": False,
            "state_dir": str(state_dir)}
    bench = start_module(tmp_path, "bench_run", args, path_prefix=str(folder))
    tools = []
    try:
        def measuring():
            tools[:] = [pid for pid in descendants_of(bench.pid) if comm_of(pid) == "fio"]
            return cache.read_text() == "0\n" and len(tools) >= 2
        wait_for(measuring, 30, "fio running with the stand-in write cache off")
        assert [path.name for path in state_dir.iterdir() if path.name.startswith("fio-job.%d-" % bench.pid)]
        started = time.monotonic()
        os.kill(bench.pid, signal.SIGTERM)
        result = finish(bench, timeout=30)
        stopped_s = time.monotonic() - started
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate(timeout=30)
    assert result.get("failed") and stopped_s < 10, (stopped_s, result.get("msg"))
    assert not [pid for pid in tools if os.path.exists("/proc/%d" % pid) and comm_of(pid) == "fio"]
    assert cache.read_text() == "1\n"
    assert not [path.name for path in state_dir.iterdir() if path.name.startswith("fio-job.")]


def test_sigkill_with_the_cache_off_then_the_restore_puts_back_the_original(tmp_path):
    """restore (playbooks/restore.yml's call) after a commit-rate job killed with the cache off: on, not off."""
    state_dir = tmp_path / "state"
    assert not run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-killed", CONTROLLER_A)).get("failed")
    folder, cache, log, _args, left = kill_commit_rate_job_with_cache_off(tmp_path, state_dir)
    recorded = read_json(state_dir / "write-cache.json")["devices"][DEVICE]
    assert recorded["enabled"] is True and recorded["method"] == "hdparm"
    # restore.yml runs the quiesce module with a fresh run id, from the same controller whose run is gone
    restored = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "manual-restore", CONTROLLER_B,
                                                            state="restored", force=True), path_prefix=str(folder))
    assert not restored.get("failed"), restored
    assert cache.read_text() == "1\n"
    assert log.read_text().splitlines()[-2:] == ["-W1 /dev/%s" % DEVICE, "-W /dev/%s" % DEVICE]
    assert restored["write_cache"] == [{"device": DEVICE, "original": True, "found": False, "restored": True,
                                        "method": "hdparm", "run_id": None}]
    assert read_json(state_dir / "write-cache.json")["devices"] == {}      # cleared once read back
    assert restored["removed_job_files"] == [left] and not (state_dir / left).exists()


def test_sigkill_with_the_cache_off_then_the_next_run_records_on_as_the_original(tmp_path):
    state_dir = tmp_path / "state"
    folder, cache, log, args, left = kill_commit_rate_job_with_cache_off(tmp_path, state_dir)
    # the next run's commit-rate step (nothing restored in between): a short real job this time
    args = dict(args, argv=["dd", "if=/dev/zero", "of=%s" % (tmp_path / "target" / "again"), "bs=8192", "count=20",
                            "oflag=dsync"], job_file=None, test="dd_commit_again")
    args = {key: value for key, value in args.items() if value is not None}
    result = run_module(tmp_path, "bench_run", args, path_prefix=str(folder))
    assert not result.get("failed"), result
    (record,) = result["ansible_facts"]["diskproof_results"]
    assert record["write_cache"] == {"before": True, "during": False, "restored": True, "method": "hdparm"}
    assert any("was off when this step started" in warning for warning in record["warnings"]), record["warnings"]
    assert cache.read_text() == "1\n"
    assert log.read_text().splitlines()[-2:] == ["-W1 /dev/%s" % DEVICE, "-W /dev/%s" % DEVICE]
    assert read_json(state_dir / "write-cache.json")["devices"] == {}


def test_a_second_toggle_never_overwrites_the_recorded_original(tmp_path):
    """An original already recorded (a killed step) stays: the step after it restores that one, even when the cache
    reads off when it starts and it is stopped again by a failing setup."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    folder, cache, _log = stand_in_hdparm(tmp_path, cache="0")
    (state_dir / "write-cache.json").write_text(json.dumps({
        "schema": 1, "kind": "diskproof-write-cache",
        "devices": {DEVICE: {"enabled": True, "method": "hdparm", "transport": "ata",
                             "recorded": "2026-11-25T00:00:00Z", "run_id": "run-killed", "wwid": None}}}))
    result = run_module(tmp_path, "bench_run", {"argv": ["true"], "setup": [["false"]], "write_cache": "off",
                                                "target": {"device": DEVICE}, "state_dir": str(state_dir)},
                        path_prefix=str(folder))
    assert result.get("failed") and "setup command 1 failed" in result["msg"], result
    assert cache.read_text() == "1\n"
    assert read_json(state_dir / "write-cache.json")["devices"] == {}


# ---------------------------------------------------------------------------------------------- restore_when_done

def restore_step_args(state_dir, argv, controller=None, run_id="run-1"):
    """The plan's last step as the benchmark role gives it with benchmark_restore_when_done: true (the lock of
    run_id taken by CONTROLLER_A unless another controller is given)."""
    return {"argv": argv, "device_io": False, "state_dir": str(state_dir), "lock_run_id": run_id,
            "lock_controller": controller or CONTROLLER_A, "restore_when_done": True}


def test_the_last_step_restores_the_host_its_recorded_write_cache_included(tmp_path):
    """restore_when_done: after the step, the quiesce module's restore for this run - the write-cache original a
    killed earlier step left recorded is put back, the state file and the lock are gone, the result says so."""
    state_dir = tmp_path / "state"
    assert not run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A)).get("failed")
    assert (state_dir / "quiesce-state.json").exists() and (state_dir / "quiesce.lock").exists()
    folder, cache, _log = stand_in_hdparm(tmp_path, cache="0")    # left off by the killed step
    (state_dir / "write-cache.json").write_text(json.dumps({
        "schema": 1, "kind": "diskproof-write-cache",
        "devices": {DEVICE: {"enabled": True, "method": "hdparm", "transport": "ata",
                             "recorded": "2026-11-27T00:00:00Z", "run_id": "run-1", "wwid": None}}}))
    written = tmp_path / "written"
    step = ["dd", "if=/dev/zero", "of=%s" % written, "bs=4096", "count=16", "conv=fdatasync"]
    result = run_module(tmp_path, "bench_run", restore_step_args(state_dir, step), path_prefix=str(folder))
    assert not result.get("failed"), result.get("msg")
    assert written.stat().st_size == 65536 and result["ansible_facts"]["diskproof_results"][0]["tool"] == "dd"
    restored = result["restored"]
    assert restored["msg"] == "restored: started nothing; lock released", restored
    assert restored["run_id"] == "run-1" and restored["service_manager"] == "sysv", restored
    assert [(entry["device"], entry["found"], entry["restored"]) for entry in restored["write_cache"]] == [
        (DEVICE, False, True)], restored["write_cache"]
    assert cache.read_text() == "1\n"
    assert read_json(state_dir / "write-cache.json")["devices"] == {}
    assert not (state_dir / "quiesce.lock").exists() and not (state_dir / "quiesce-state.json").exists()
    # the role's restore task, had it run anyway: nothing left to do
    again = run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A, state="restored"))
    assert not again.get("failed") and again["msg"].startswith("nothing to restore"), again


def test_a_cancelled_last_step_still_restores_the_host(tmp_path):
    """SIGTERM (a cancel) in the middle of the last step: the tool is stopped, and the host is restored too - the
    play's always: restore never runs after a cancel."""
    state_dir = tmp_path / "state"
    assert not run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A)).get("failed")
    bench = start_module(tmp_path, "bench_run", restore_step_args(state_dir, ["sleep", "60"]))
    try:
        wait_for(lambda: any(comm_of(pid) == "sleep" for pid in descendants_of(bench.pid)), 30, "the step's sleep")
        os.kill(bench.pid, signal.SIGTERM)
        result = finish(bench, timeout=30)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate(timeout=30)
    assert result.get("failed") and "interrupted by signal 15" in result["msg"], result
    assert result["restored"]["msg"] == "restored: started nothing; lock released", result
    assert not (state_dir / "quiesce.lock").exists() and not (state_dir / "quiesce-state.json").exists()


def test_the_last_step_never_restores_a_lock_of_another_controller_run(tmp_path):
    """The same run id in the lock, but another controller run (a reused run id): not this run's lock - the step
    fails saying why, and the lock and the state file stay for the restore task (which refuses it too)."""
    state_dir = tmp_path / "state"
    assert not run_module(tmp_path, "quiesce", quiesce_args(state_dir, "run-1", CONTROLLER_A)).get("failed")
    marker = tmp_path / "ran"
    result = run_module(tmp_path, "bench_run", restore_step_args(state_dir, ["touch", str(marker)], CONTROLLER_B))
    assert result.get("failed"), result
    assert "restore_when_done: refusing to restore: another run holds the lock" in result["msg"], result["msg"]
    assert "restored" not in result
    assert marker.exists()                                  # the step itself ran
    assert read_json(state_dir / "quiesce.lock")["run_id"] == "run-1"
    assert read_json(state_dir / "quiesce-state.json")["run_id"] == "run-1"


def test_restore_when_done_needs_the_lock_it_restores(tmp_path):
    result = run_module(tmp_path, "bench_run", {"argv": ["true"], "restore_when_done": True, "device_io": False,
                                                "state_dir": str(tmp_path)})
    assert result.get("failed"), result
    assert "restore_when_done is True but all of the following are missing: lock_run_id, lock_controller" in \
        result["msg"], result["msg"]
