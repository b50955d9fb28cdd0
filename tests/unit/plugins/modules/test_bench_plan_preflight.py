"""bench_plan's preflight refusals, through AnsibleModule on a real directory: a fenced plan on a host without a
usable memory cgroup, and a plan whose tool is missing, are refused in check mode (the preflight before the
quiesce) with what to do, and nothing is created. The real tools of this machine answer the version probes; where
a host must lack something, a stand-in (a patched cgroup check, a patched PATH lookup) says so in its test."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _fence, _version_probe
from ansible_collections.diskproof.fleet.plugins.modules import bench_plan

MIB = 1 << 20


def run_module(capsys, **args):
    args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            bench_plan.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.requires_tools("fio")
def test_the_tools_of_the_plan_are_probed_and_returned(tmp_path, capsys):
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], tests=["fio_rand_read"],
                              memory_bytes=16 * MIB, reserve_min_bytes=0, cache_fence_bytes=0)
    assert code == 0, result
    assert result["plan"]["tools"] == ["dd", "fio"] and set(result["tools"]) == {"dd", "fio"}
    assert all(entry["path"] and entry["version"] for entry in result["tools"].values()), result["tools"]


def test_a_missing_tool_is_refused_naming_its_package(tmp_path, capsys, monkeypatch):
    real = AnsibleModule.get_bin_path

    def without_fio(self, name, *args, **kwargs):   # stand-in: a host where fio is not installed
        return None if name == "fio" else real(self, name, *args, **kwargs)

    monkeypatch.setattr(AnsibleModule, "get_bin_path", without_fio)
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], profile="quick", memory_bytes=16 * MIB,
                              reserve_min_bytes=0)
    assert code == 1 and result["failed"] and result["run_dirs"] == []
    assert "fio is not installed (not found in PATH or the sbin directories): install the package fio " \
           "(Debian/Ubuntu: apt-get install fio; RHEL and derivatives: dnf install fio)" in result["msg"]
    assert "dd is not installed" not in result["msg"] and os.listdir(tmp_path) == []


def test_a_tool_that_never_answers_its_version_is_refused(tmp_path, capsys, monkeypatch, hanging_programs):
    # Stand-in: an fio that hangs when asked its version (a binary on a dead network mount does); the probe's
    # limit lowered from 10 s so the test is quick.
    hanging = hanging_programs("fio")["fio"]
    monkeypatch.setattr(_version_probe, "VERSION_TIMEOUT_S", 0.5)
    workdir = tmp_path / "target"
    workdir.mkdir()
    code, result = run_module(capsys, targets=[{"path": str(workdir)}], tests=["fio_rand_read"], memory_bytes=16 * MIB,
                              reserve_min_bytes=0, cache_fence_bytes=0)
    assert code == 1 and result["failed"] and result["run_dirs"] == [] and os.listdir(workdir) == []
    assert "fio at %s did not report a version (fio --version)" % hanging in result["msg"], result["msg"]
    assert result["tools"]["fio"] == {"path": hanging, "version": None}
    assert "%s --version did not answer within 0.5 s (it was stopped)" % hanging in json.dumps(result["warnings"])


@pytest.mark.requires_tools("fio")   # the quick profile's tools are probed
def test_a_fenced_plan_without_a_memory_cgroup_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    def no_memory_cgroup(pid, token, *args, **kwargs):   # stand-in: a host without the memory cgroup controller
        raise _fence.FenceError("no memory cgroup controller: neither /sys/fs/cgroup/cgroup.controllers (cgroup v2) "
                                "nor /sys/fs/cgroup/memory/memory.limit_in_bytes (cgroup v1) exists")

    monkeypatch.setattr(_fence, "plan_fence", no_memory_cgroup)
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], profile="quick", memory_bytes=64 * MIB,
                              cache_fence_bytes=32 * MIB, reserve_min_bytes=0)
    assert code == 1 and result["run_dirs"] == [] and os.listdir(tmp_path) == []
    assert result["msg"].startswith("benchmark plan refused, nothing was stopped or written: the cache fence "
                                    "(diskproof_cache_fence_bytes) of 33554432 bytes needs a memory cgroup, but no "
                                    "memory cgroup controller:")
    assert result["msg"].endswith("enable the memory cgroup controller on this host, or set "
                                  "diskproof_cache_fence_bytes: 0 to size the buffered tests from 2 x the memory figure "
                                  "instead (a larger test file, a longer run)")
    # Unfenced (0), the same host plans: nothing falls back silently, the user chose it.
    code, result = run_module(capsys, targets=[{"path": str(tmp_path)}], profile="quick", memory_bytes=64 * MIB,
                              cache_fence_bytes=0, reserve_min_bytes=0)
    assert code == 0 and result["plan"]["cache_fence_bytes"] is None and result["plan"]["test_file_bytes"] == 128 * MIB
