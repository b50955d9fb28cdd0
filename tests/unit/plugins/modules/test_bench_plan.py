"""bench_plan through AnsibleModule on real directories and a real loop device: the plan, the run directory,
refusals that write nothing."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _plan_host
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import CATALOG, PROFILES
from ansible_collections.diskproof.fleet.plugins.modules import bench_plan

MIB = 1048576


def run_module(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            bench_plan.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.requires_tools("fio")   # the quick profile's tools are probed
def test_plan_creates_only_the_run_directory(tmp_path, capsys):
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], profile="quick", memory_bytes=16 * MIB,
                              run_id="t1", reserve_min_bytes=0)
    assert code == 0, result
    run_dir = str(tmp_path / "diskproof-t1")
    assert result["changed"] is True and result["run_dirs"] == [run_dir]
    assert os.listdir(tmp_path) == ["diskproof-t1"] and os.listdir(run_dir) == [".diskproof-run"]
    assert oct(os.stat(run_dir).st_mode & 0o777) == "0o755"
    plan = result["plan"]
    assert plan["tests"] == list(PROFILES["quick"].tests)
    assert plan["test_file_bytes"] == 32 * MIB and plan["repeats"] == 2
    assert plan["jobs"][0]["creates"] == os.path.join(run_dir, "diskproof.testfile")
    assert result["lines"][1] == "test file 32.0 MiB = 2 x memory figure 16.0 MiB, rounded to whole blocks"
    assert result["memory_bytes"] == 16 * MIB and result["run_id"] == "t1"


@pytest.mark.requires_tools("fio", "sysbench", "ioping")   # the standard profile's tools are probed
def test_check_mode_plans_and_creates_nothing(tmp_path, capsys):
    code, result = run_module(capsys, check_mode=True, targets=[{"path": str(tmp_path)}], memory_bytes=16 * MIB,
                              reserve_min_bytes=0)
    assert code == 0 and result["changed"] is False and result["run_dirs"] == []
    assert os.listdir(tmp_path) == []
    assert len(result["plan"]["jobs"]) == 15 and result["run_id"]   # fio_verify: two passes


def test_memory_figure_defaults_to_memtotal(tmp_path, capsys):
    with open("/proc/meminfo", encoding="ascii") as handle:
        memtotal = int(next(line for line in handle if line.startswith("MemTotal:")).split()[1]) * 1024
    code, result = run_module(capsys, check_mode=True, targets=[{"path": str(tmp_path)}], tests=["dd_seq_write"],
                              reserve_min_bytes=0, reserve_fraction=0.0)
    if code != 0:
        # A scratch filesystem smaller than 2 x this machine's RAM: the refusal names the space.
        assert "not enough free space" in result["msg"]
        return
    assert result["memory_bytes"] == memtotal


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tests": ["dd_seq_wrte"]}, "unknown test id(s) 'dd_seq_wrte'"),
        ({"random_block_size": 100}, "random_block_size 100 is not a multiple of the logical block size"),
        ({"memory_bytes": 1 << 50}, "not enough free space on"),
        ({"targets": [{"path": "/nonexistent/diskproof"}]}, "targets[0].path /nonexistent/diskproof is not an existing directory"),
        ({"targets": [{"device": "/dev/diskproof-no-such-disk"}]},
         "targets[0].device /dev/diskproof-no-such-disk: No such file or directory"),
        ({"targets": [{"device": "/dev/null"}]}, "targets[0].device /dev/null is not a block device"),
        ({"targets": [{"device": "dev/sdb"}]}, "targets[0].device must be the absolute path of a block device"),
        ({"targets": [{}]}, "targets[0] needs exactly one of 'path' (a directory on the filesystem to test) or 'device'"),
        ({"targets": [{"path": "/srv", "device": "/dev/sdb"}]}, "targets[0] needs exactly one of 'path'"),
        ({"targets": [{"path": "/tmp", "mode": "raw_read"}]}, "targets[0]: mode raw_read does not go with path"),
    ],
)
def test_refusals_write_nothing(tmp_path, capsys, args, message):
    values = {"targets": [{"path": str(tmp_path)}], "memory_bytes": 16 * MIB, "run_id": "t2", "reserve_min_bytes": 0}
    values.update(args)
    code, result = run_module(capsys, **values)
    assert code == 1 and message in result["msg"], result["msg"]
    assert result["run_dirs"] == [] and os.listdir(tmp_path) == []


@pytest.mark.requires_tools("fio", "sysbench", "ioping")   # the standard profile's tools are probed
def test_an_existing_run_directory_is_never_reused(tmp_path, capsys):
    (tmp_path / "diskproof-t3").mkdir()
    (tmp_path / "diskproof-t3" / "keep").write_text("not ours")
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], memory_bytes=16 * MIB, run_id="t3",
                              reserve_min_bytes=0)
    assert code == 1 and "exists already: not created by this run" in result["msg"]
    assert result["run_dirs"] == [] and (tmp_path / "diskproof-t3" / "keep").read_text() == "not ours"


# --- leftovers of an aborted run -------------------------------------------------------------------------


def aborted_run(tmp_path, capsys, run_id, lock_run_id):
    """A run directory as a run holding the quiesce lock lock_run_id leaves it when it is cut off mid-test."""
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], tests=["dd_seq_write"], memory_bytes=MIB,
                              run_id=run_id, lock_run_id=lock_run_id, reserve_min_bytes=0)
    assert code == 0, result
    (run_dir,) = result["run_dirs"]
    with open(os.path.join(run_dir, "diskproof.testfile"), "wb") as handle:
        handle.write(b"\0" * 65536)
    return run_dir


def test_the_note_names_the_run_the_host_and_the_lock(tmp_path, capsys):
    run_dir = aborted_run(tmp_path, capsys, "n1", "20261125T000000Z-lock0001")
    with open(os.path.join(run_dir, ".diskproof-run"), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines[0].startswith("diskproof run n1, created ")
    assert lines[0].endswith(" by diskproof.fleet.bench_plan; removed at the end of the run")
    assert lines[1:] == ["host: %s" % socket.gethostname(), "lock_run_id: 20261125T000000Z-lock0001"]


def test_a_run_that_restored_an_aborted_run_removes_only_that_runs_directories(tmp_path, capsys):
    dead = aborted_run(tmp_path, capsys, "dead", "lock-dead")
    other = aborted_run(tmp_path, capsys, "other", "lock-other")      # another run's: not named, kept
    unlocked = aborted_run(tmp_path, capsys, "unlocked", "")           # a run without the lock: kept
    foreign = aborted_run(tmp_path, capsys, "foreign", "lock-dead")    # same lock id, another host (shared fs): kept
    note = os.path.join(foreign, ".diskproof-run")
    with open(note, encoding="utf-8") as handle:
        text = handle.read().replace("host: %s" % socket.gethostname(), "host: some-other-host")
    with open(note, "w", encoding="utf-8") as handle:
        handle.write(text)
    (tmp_path / "diskproof-nonote").mkdir()                            # no note at all: kept
    (tmp_path / "elsewhere").mkdir()
    elsewhere_note = "x\nhost: %s\nlock_run_id: lock-dead\n" % socket.gethostname()
    (tmp_path / "elsewhere" / ".diskproof-run").write_text(elsewhere_note)
    (tmp_path / "diskproof-link").symlink_to(tmp_path / "elsewhere")   # a symlink is never followed
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], tests=["dd_seq_write"], memory_bytes=MIB,
                              run_id="now", lock_run_id="lock-now", remove_leftovers_of=["lock-dead", ""],
                              reserve_min_bytes=0)
    assert code == 0, result
    assert result["leftovers_removed"] == [dead] and not os.path.exists(dead)
    assert result["lines"][0] == "removed %s, left by the aborted run lock-dead" % dead
    assert sorted(os.listdir(tmp_path)) == ["diskproof-foreign", "diskproof-link", "diskproof-nonote", "diskproof-now",
                                            "diskproof-other", "diskproof-unlocked", "elsewhere"]
    for kept in (other, unlocked, foreign):
        assert os.path.getsize(os.path.join(kept, "diskproof.testfile")) == 65536
    assert os.listdir(tmp_path / "elsewhere") == [".diskproof-run"]


def test_leftovers_are_not_removed_in_check_mode(tmp_path, capsys):
    dead = aborted_run(tmp_path, capsys, "dead", "lock-dead")
    code, result = run_module(capsys, check_mode=True, targets=[{"path": str(tmp_path)}], tests=["dd_seq_write"],
                              memory_bytes=MIB, remove_leftovers_of=["lock-dead"], reserve_min_bytes=0)
    assert code == 0 and result["leftovers_removed"] == [] and os.path.isdir(dead)


def test_leftovers_go_before_the_free_space_is_read(tmp_path, capsys, monkeypatch):
    dead = aborted_run(tmp_path, capsys, "dead", "lock-dead")
    seen = []
    real = _plan_host.target_facts

    def spy(module, index, target, identities, classes, allow_non_disk_default):
        seen.append(os.path.exists(dead))
        return real(module, index, target, identities, classes, allow_non_disk_default)

    monkeypatch.setattr(_plan_host, "target_facts", spy)
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], tests=["dd_seq_write"], memory_bytes=MIB,
                              remove_leftovers_of=["lock-dead"], reserve_min_bytes=0)
    assert code == 0, result
    assert seen == [False]      # the free space the plan checks already counts what the leftovers took


# --- raw block-device targets, on a loop device of our own ---------------------------------------------

IMAGE_BYTES = 48 * MIB + 4096   # not a whole number of MiB: sizes must round down inside it


@pytest.fixture(scope="module")
def loop_device(tmp_path_factory):
    """A loop device over a sparse file in a tmp dir; detached by name (only if still ours) afterwards."""
    if os.geteuid() != 0 or shutil.which("losetup") is None:
        pytest.skip("needs root and losetup (creates a loop device)")
    image = tmp_path_factory.mktemp("raw") / "disk.img"
    with open(image, "wb") as handle:
        handle.truncate(IMAGE_BYTES)
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        yield device
    finally:
        backing = "/sys/block/%s/loop/backing_file" % os.path.basename(device)
        with open(backing, encoding="utf-8") as handle:
            ours = handle.read().strip() == str(image)
        assert ours, "%s is no longer the loop device of %s: left alone" % (device, image)
        subprocess.run(["losetup", "-d", device], check=True)


def counters(device):
    with open("/sys/block/%s/stat" % os.path.basename(device), encoding="ascii") as handle:
        fields = handle.read().split()
    return int(fields[2]), int(fields[6])


def test_a_raw_read_device_is_planned_from_stat_and_sysfs_and_nothing_is_created(loop_device, tmp_path, capsys):
    before = counters(loop_device)
    code, result = run_module(capsys, targets=[{"device": loop_device, "mode": "raw_read"}], profile="standard",
                              memory_bytes=16 * MIB, run_id="r1", classes={loop_device: "raw_read"},
                              keep_raw_dir=str(tmp_path / "raw"))
    assert code == 0, result
    assert result["changed"] is False and result["run_dirs"] == []
    plan = result["plan"]
    name = os.path.basename(loop_device)
    assert plan["raw_targets"] == {loop_device: {"device_path": loop_device, "device": name, "class": "raw_read",
                                                 "size_bytes": IMAGE_BYTES, "logical_block_size": 512,
                                                 "physical_block_size": 512}}
    assert plan["tests"] == ["dd_seq_read", "fio_seq_read", "fio_rand_read", "fio_rand_read_qd1", "ioping_latency"]
    jobs = {job["test"]: job for job in plan["jobs"]}
    assert jobs["dd_seq_read"]["argv"] == ["dd", "if=" + loop_device, "of=/dev/null", "bs=1048576", "count=32",
                                           "iflag=direct"]
    assert jobs["fio_rand_read"]["fio"]["filename"] == loop_device and jobs["fio_rand_read"]["fio"]["size"] == 32 * MIB
    assert jobs["ioping_latency"]["argv"][-3:] == ["-S", str(IMAGE_BYTES), loop_device]
    assert all(job["target"]["class"] == "raw_read" and job["target"]["device"] == name for job in plan["jobs"])
    assert "they write to the device" in json.dumps(result["warnings"])
    assert any(line.startswith("%s: raw device %s (raw_read), 48.0 MiB" % (loop_device, loop_device))
               for line in result["lines"])
    assert os.listdir(tmp_path / "raw") == ["dev_" + name]   # only keep_raw_dir, never anything on the device
    assert counters(loop_device)[1] == before[1]


def test_the_zcav_sweep_covers_the_whole_loop_device(loop_device, capsys):
    code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device}], tests=["zcav_sweep"],
                              memory_bytes=4 * MIB, classes={loop_device: "raw_read"})
    assert code == 0, result
    (job,) = result["plan"]["jobs"]
    last = job["sweep"][-1]
    assert job["sweep"][0]["offset_bytes"] == 0 and last["offset_bytes"] + job["params"]["chunk_bytes"] == 48 * MIB


def test_a_device_without_a_granted_class_is_refused(loop_device, capsys):
    for classes in ({}, {"/dev/diskproof-other": "raw_write"}, {loop_device: "filesystem"}):
        code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device}], memory_bytes=16 * MIB,
                                  classes=classes)
        assert code == 1 and result["msg"] == (
            "targets[0].device %s has no granted class: run the discover role first; it grants raw_read/raw_write "
            "(raw_write only behind the destructive interlock, docs/discover.md), and the benchmark role passes them "
            "in 'classes'" % loop_device)


def test_a_class_granted_under_another_name_of_the_node_counts(loop_device, tmp_path, capsys):
    alias = tmp_path / "by-id-alias"
    alias.symlink_to(loop_device)
    code, result = run_module(capsys, check_mode=True, targets=[{"device": str(alias)}], tests=["dd_seq_read"],
                              memory_bytes=16 * MIB, classes={loop_device: "raw_read"})
    assert code == 0, result
    (job,) = result["plan"]["jobs"]
    # Named as the inventory names it, run on the real node.
    assert job["target"]["path"] == str(alias) and job["argv"][1] == "if=" + loop_device


def test_mode_raw_read_wins_over_a_granted_raw_write_and_raw_write_needs_the_grant(loop_device, capsys):
    code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device, "mode": "raw_read"}],
                              profile="quick", memory_bytes=16 * MIB, classes={loop_device: "raw_write"})
    quick = PROFILES["quick"].tests
    assert code == 0 and result["plan"]["tests"] == [test for test in quick if CATALOG[test].raw == "read"]
    code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device, "mode": "raw_write"}],
                              memory_bytes=16 * MIB, classes={loop_device: "raw_read"})
    assert code == 1 and result["msg"].startswith(
        "targets[0].device %s asks mode raw_write but was granted only raw_read: writing a bare device needs class "
        "raw_write" % loop_device)
    assert "diskproof_destructive_allow" in result["msg"]
    # A bare class name carries no disk identity: raw_write needs the grant discover binds to the disk.
    code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device, "mode": "raw_write"}],
                              profile="quick", memory_bytes=16 * MIB, classes={loop_device: "raw_write"})
    assert code == 1 and "its raw_write grant carries no disk identity" in result["msg"], result
    grant = {"class": "raw_write", "device": os.path.basename(loop_device), "device_path": loop_device,
             "disks": [{"name": os.path.basename(loop_device), "loop": {"backing_file": "/x", "st_dev": 1, "st_ino": 2}}]}
    code, result = run_module(capsys, check_mode=True, targets=[{"device": loop_device, "mode": "raw_write"}],
                              profile="quick", memory_bytes=16 * MIB, classes={loop_device: grant})
    assert code == 0 and result["plan"]["tests"] == [test for test in quick if CATALOG[test].raw in ("read", "write")]
    assert "fio_rand_write" in result["plan"]["tests"]
    # Every job carries the grant to bench_run, which checks the disk against it before running.
    assert all(job["target"]["grant"] == grant for job in result["plan"]["jobs"])


def test_an_explicit_write_test_on_raw_read_is_refused_and_writes_nothing(loop_device, capsys):
    before = counters(loop_device)
    code, result = run_module(capsys, targets=[{"device": loop_device}], tests=["dd_seq_read", "dd_seq_write_direct"],
                              memory_bytes=16 * MIB, classes={loop_device: "raw_read"})
    assert code == 1 and result["run_dirs"] == []
    assert result["msg"].startswith("benchmark plan refused, nothing was written: targets[0] (%s) is raw_read: "
                                    "dd_seq_write_direct writes to the device" % loop_device)
    assert "diskproof_destructive" in result["msg"] and "docs/discover.md" in result["msg"]
    assert counters(loop_device)[1] == before[1]
