"""bench_plan through AnsibleModule on real directories: the plan, the run directory, refusals that write nothing."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import bench_plan

MIB = 1048576


def run_module(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            bench_plan.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def test_plan_creates_only_the_run_directory(tmp_path, capsys):
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], profile="quick", memory_bytes=16 * MIB,
                              run_id="t1", reserve_min_bytes=0)
    assert code == 0, result
    run_dir = str(tmp_path / "diskproof-t1")
    assert result["changed"] is True and result["run_dirs"] == [run_dir]
    assert os.listdir(tmp_path) == ["diskproof-t1"] and os.listdir(run_dir) == [".diskproof-run"]
    assert oct(os.stat(run_dir).st_mode & 0o777) == "0o755"
    plan = result["plan"]
    assert plan["tests"] == ["dd_seq_write", "dd_seq_read", "fio_rand_read", "fio_rand_write", "fio_commit_rate"]
    assert plan["test_file_bytes"] == 32 * MIB and plan["repeats"] == 2
    assert plan["jobs"][0]["creates"] == os.path.join(run_dir, "diskproof.testfile")
    assert result["lines"][1] == "test file 32.0 MiB = 2 x memory figure 16.0 MiB, rounded to whole blocks"
    assert result["memory_bytes"] == 16 * MIB and result["run_id"] == "t1"


def test_check_mode_plans_and_creates_nothing(tmp_path, capsys):
    code, result = run_module(capsys, check_mode=True, targets=[{"path": str(tmp_path)}], memory_bytes=16 * MIB,
                              reserve_min_bytes=0)
    assert code == 0 and result["changed"] is False and result["run_dirs"] == []
    assert os.listdir(tmp_path) == []
    assert len(result["plan"]["jobs"]) == 13 and result["run_id"]


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
        ({"targets": [{"device": "/dev/sdb"}]}, "targets[0] needs 'path'"),
    ],
)
def test_refusals_write_nothing(tmp_path, capsys, args, message):
    values = {"targets": [{"path": str(tmp_path)}], "memory_bytes": 16 * MIB, "run_id": "t2", "reserve_min_bytes": 0}
    values.update(args)
    code, result = run_module(capsys, **values)
    assert code == 1 and message in result["msg"], result["msg"]
    assert result["run_dirs"] == [] and os.listdir(tmp_path) == []


def test_an_existing_run_directory_is_never_reused(tmp_path, capsys):
    (tmp_path / "diskproof-t3").mkdir()
    (tmp_path / "diskproof-t3" / "keep").write_text("not ours")
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], memory_bytes=16 * MIB, run_id="t3",
                              reserve_min_bytes=0)
    assert code == 1 and "exists already: not created by this run" in result["msg"]
    assert result["run_dirs"] == [] and (tmp_path / "diskproof-t3" / "keep").read_text() == "not ours"
