"""The quiesce module's plan option: the plan checked before the lock (a refusal writes nothing: no lock, no state
directory, no run directory), made under the lock (run directories whose note names this run's lock and the
quiesce), handed back with the request it was made for; check mode returns the checked plan and creates nothing; an
aborted run's directories are removed when the quiesce recovers that run. In-process, on real directories, with no
service to stop (SysV, an empty service list) and no idle wait worth the name."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _cancel
from ansible_collections.diskproof.fleet.plugins.modules import quiesce

MIB = 1048576

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the state directory must be owned by root, as on a host")


def run_quiesce(capsys, state_dir, run_id, plan, check_mode=False, state="quiesced"):
    args = {"state": state, "run_id": run_id, "state_dir": str(state_dir), "service_manager": "sysv",
            "services": [], "timers": [], "checks": [], "drop_caches": False, "idle_window": 0,
            "idle_timeout": 1, "idle_load_source": "loadavg", "idle_max_load_per_cpu": 1000}
    if plan is not None:
        args["plan"] = plan
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            quiesce.main()
    return json.loads(capsys.readouterr().out)


def plan_for(target, **extra):
    return dict({"targets": [{"path": str(target)}], "tests": ["dd_seq_write"], "memory_bytes": MIB,
                 "reserve_min_bytes": 0}, **extra)


def run_dirs_in(target):
    return sorted(name for name in os.listdir(target) if name.startswith("diskproof-"))


def test_the_plan_is_made_under_the_lock_and_handed_back_with_its_request(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    request = plan_for(target)
    result = run_quiesce(capsys, state_dir, "run-plan", request)
    assert not result.get("failed"), result
    assert result["plan_request"] == request
    made = result["plan"]
    assert [job["test"] for job in made["plan"]["jobs"]] == ["dd_seq_write"]
    assert made["run_dirs"] == [str(target / name) for name in run_dirs_in(target)] and len(made["run_dirs"]) == 1
    # The run directory's note names the lock this quiesce holds, and who made it.
    with open(os.path.join(made["run_dirs"][0], _cancel.NOTE)) as handle:
        note = handle.read()
    assert "lock_run_id: run-plan\n" in note and " by diskproof.fleet.quiesce; " in note, note
    assert (state_dir / "quiesce.lock").exists()
    restored = run_quiesce(capsys, state_dir, "run-plan", None, state="restored")
    assert not restored.get("failed"), restored


def test_a_plan_the_run_would_refuse_fails_before_the_lock_and_writes_nothing(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    free = os.statvfs(target).f_bavail * os.statvfs(target).f_frsize
    result = run_quiesce(capsys, state_dir, "run-full", plan_for(target, reserve_min_bytes=free * 2))
    assert result.get("failed") is True, result
    assert result["msg"].startswith("benchmark plan refused, nothing was written: not enough free space"), result["msg"]
    assert not state_dir.exists() and run_dirs_in(target) == []


def test_a_plan_with_an_unknown_or_mistyped_option_is_refused_naming_it(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    result = run_quiesce(capsys, state_dir, "run-typo", plan_for(target, memory_bytez=MIB, repeats="three"))
    assert result.get("failed") is True, result
    assert result["msg"].startswith("plan: ") and "memory_bytez" in result["msg"] and "repeats" in result["msg"], result
    assert not state_dir.exists() and run_dirs_in(target) == []


def test_check_mode_returns_the_checked_plan_and_creates_nothing(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    request = plan_for(target)
    result = run_quiesce(capsys, state_dir, "run-check", request, check_mode=True)
    assert not result.get("failed"), result
    assert result["plan_request"] == request and result["plan"]["run_dirs"] == []
    assert [job["test"] for job in result["plan"]["plan"]["jobs"]] == ["dd_seq_write"]
    assert not state_dir.exists() and run_dirs_in(target) == []


def test_the_plan_removes_what_the_recovered_run_left(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    dead = run_quiesce(capsys, state_dir, "run-dead", plan_for(target))
    assert not dead.get("failed"), dead
    left = dead["plan"]["run_dirs"][0]
    # The aborted run's lock is gone, its state file is left: the next quiesce recovers that run first.
    os.remove(state_dir / "quiesce.lock")
    result = run_quiesce(capsys, state_dir, "run-next", plan_for(target))
    assert not result.get("failed"), result
    assert result["recovered"]["run_id"] == "run-dead"
    assert result["plan"]["leftovers_removed"] == [left] and not os.path.exists(left)
    assert run_dirs_in(target) == [os.path.basename(result["plan"]["run_dirs"][0])]
    assert not run_quiesce(capsys, state_dir, "run-next", None, state="restored").get("failed")
