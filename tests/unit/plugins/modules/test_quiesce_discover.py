"""The quiesce module's discover option: disk_facts' discovery inside the quiesce call. A refusal fails the call
before the lock (no state directory, no run directory, nothing stopped); otherwise the call publishes the discover
role's facts and plans with them (the plan request handed back carries this discovery's disk identities and raw
classes, so the benchmark role, which makes its request from the same facts, takes that plan). In-process, on a
directory of this machine's disk (discovery is read-only), with no service to stop and no idle wait worth the name."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import disk_facts, quiesce

MIB = 1048576

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the state directory must be owned by root, as on a host")


def run_module(capsys, module, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


def quiesce_args(state_dir, run_id, **extra):
    return dict({"state": "quiesced", "run_id": run_id, "state_dir": str(state_dir), "service_manager": "sysv",
                 "services": [], "timers": [], "checks": [], "drop_caches": False, "idle_window": 0,
                 "idle_timeout": 1, "idle_load_source": "loadavg", "idle_max_load_per_cpu": 1000}, **extra)


def discover_options(*targets):
    # smart off: this machine's own disk is read (lsblk, /sys), not asked for its SMART log.
    return {"targets": [{"path": str(target)} for target in targets], "smart": False, "host": "unit-host"}


def test_discovery_in_the_quiesce_call_publishes_disk_facts_facts_and_plans_with_them(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    request = {"targets": [{"path": str(target)}], "tests": ["dd_seq_write"], "memory_bytes": MIB,
               "reserve_min_bytes": 0, "identities": {}, "classes": {}}
    result = run_module(capsys, quiesce, quiesce_args(state_dir, "run-disc", plan=request,
                                                      discover=discover_options(target)))
    assert not result.get("failed"), result
    alone = run_module(capsys, disk_facts, discover_options(target))
    facts = result["ansible_facts"]
    # The same facts disk_facts publishes (host facts aside: the tools' versions and the like are read again).
    for name in ("diskproof_disks", "diskproof_targets_resolved", "diskproof_selected_targets",
                 "diskproof_target_identities"):
        assert facts[name] == alone["ansible_facts"][name], name
    assert facts["diskproof_host"]["hostname"] == alone["ansible_facts"]["diskproof_host"]["hostname"]
    assert "diskproof_quiesce" in facts
    assert [record["class"] for record in facts["diskproof_targets_resolved"]] == ["filesystem"]
    # The plan was made with this discovery's identities (the request had none): its request says so.
    assert result["plan_request"]["identities"] == facts["diskproof_target_identities"] != {}
    assert result["plan_request"]["classes"] == {}
    assert result["plan_request"]["targets"] == request["targets"]
    assert [job["test"] for job in result["plan"]["plan"]["jobs"]] == ["dd_seq_write"]
    restored = run_module(capsys, quiesce, {"state": "restored", "run_id": "run-disc", "state_dir": str(state_dir)})
    assert not restored.get("failed"), restored


def test_a_refused_target_fails_the_call_before_the_lock_and_writes_nothing(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    missing = tmp_path / "missing"
    request = {"targets": [{"path": str(target)}], "tests": ["dd_seq_write"], "memory_bytes": MIB,
               "reserve_min_bytes": 0}
    result = run_module(capsys, quiesce, quiesce_args(state_dir, "run-refused", plan=request,
                                                      discover=discover_options(target, missing)))
    assert result.get("failed") is True, result
    assert result["msg"].startswith("1 refusal(s) on unit-host; nothing was written or stopped: "), result["msg"]
    assert "%s (requested filesystem) not_found:" % missing in result["msg"], result["msg"]
    assert result["refusals"] == [result["msg"].split(": ", 1)[1]]
    assert not state_dir.exists() and os.listdir(target) == []


def test_discovery_options_it_does_not_know_are_refused_naming_them(tmp_path, capsys):
    state_dir = tmp_path / "state"
    result = run_module(capsys, quiesce, quiesce_args(state_dir, "run-typo",
                                                      discover={"targets": [], "selekt": "all_data_disks"}))
    assert result.get("failed") is True, result
    assert result["msg"].startswith("discover: ") and "selekt" in result["msg"], result["msg"]
    assert not state_dir.exists()


def test_check_mode_discovers_and_creates_nothing(tmp_path, capsys):
    target, state_dir = tmp_path / "disk", tmp_path / "state"
    target.mkdir()
    result = run_module(capsys, quiesce, quiesce_args(state_dir, "run-check", discover=discover_options(target),
                                                      _ansible_check_mode=True))
    assert not result.get("failed"), result
    assert [record["class"] for record in result["ansible_facts"]["diskproof_targets_resolved"]] == ["filesystem"]
    assert not state_dir.exists() and os.listdir(target) == []
