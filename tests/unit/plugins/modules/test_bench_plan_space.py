"""bench_plan groups directory targets by filesystem (st_dev) on real directories: two targets on one scratch
filesystem share one free space, named by its mount point and device number."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import bench_plan

MIB = 1048576


def run_module(capsys, **args):
    args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            bench_plan.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def test_two_directories_of_one_filesystem_are_one_filesystem_in_the_plan(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    st_dev = os.stat(tmp_path).st_dev
    number = "%d:%d" % (os.major(st_dev), os.minor(st_dev))
    code, result = run_module(capsys, targets=[{"path": str(tmp_path / "a")}, {"path": str(tmp_path / "b")}],
                              tests=["dd_seq_write"], memory_bytes=MIB, reserve_min_bytes=0, reserve_fraction=0.0)
    assert code == 0, result
    (key, figures), = result["plan"]["filesystems"].items()
    assert key == number and figures["targets"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert figures["peak_bytes"] == 2 * MIB                   # one 2 MiB test file at a time
    assert os.path.ismount(figures["mount_point"]) and str(tmp_path).startswith(figures["mount_point"].rstrip("/"))
    assert os.stat(figures["mount_point"]).st_dev == st_dev

    # More than the filesystem has free at once: refused, naming it and both targets, nothing created.
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    code, result = run_module(capsys, targets=[{"path": str(tmp_path / "a")}, {"path": str(tmp_path / "b")}],
                              tests=["dd_seq_write"], memory_bytes=MIB, reserve_min_bytes=free, reserve_fraction=0.0)
    assert code == 1
    assert ("not enough free space on the filesystem mounted at %s (" % figures["mount_point"]) in result["msg"]
    assert "%s) holding the targets %s, %s:" % (number, tmp_path / "a", tmp_path / "b") in result["msg"]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"] and os.listdir(tmp_path / "a") == []
