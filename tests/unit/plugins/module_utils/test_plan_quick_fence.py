"""The quick profile is cache-fenced by default, so its run time does not grow with RAM (issue 16).

quick sizes its buffered test file from min(memory figure, QUICK_DEFAULT_FENCE_BYTES) and runs its buffered
tests inside a memory cgroup of that size; standard/evidence keep 2 x the memory figure; an explicit
cache_fence_bytes wins, and 0 turns the default fence off.
"""
from __future__ import annotations

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import (
    QUICK_DEFAULT_FENCE_BYTES, Settings, TargetFacts, build_plan, plan_lines,
)

MIB = 1 << 20
GIB = 1 << 30


def disk(free=4096 * GIB):
    return TargetFacts(path="/srv/a", free_bytes=free, filesystem_size_bytes=2 * free, device="sdb")


def fenced(plan):
    return sorted({job["cache_fence_bytes"] for job in plan.jobs if job["cache_fence_bytes"]})


def test_quick_plan_for_a_declared_512_gib_host_takes_at_most_15_min_at_1_gb_s():
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=512 * GIB, profile="quick",
                                         expected_bytes_per_s=1e9))
    assert plan.test_file_bytes == 2 * QUICK_DEFAULT_FENCE_BYTES == 8 * GIB
    assert plan.cache_fence_bytes == QUICK_DEFAULT_FENCE_BYTES and fenced(plan) == [QUICK_DEFAULT_FENCE_BYTES]
    estimate_s = plan.as_dict()["estimate_s"]
    assert estimate_s <= 15 * 60
    lines = plan_lines(plan, 512 * GIB, None)
    assert lines[1] == ("test file 8.0 GiB = 2 x cache fence 4.0 GiB (the quick profile's default: "
                        "diskproof_cache_fence_bytes: 0 sizes it from the memory figure 512.0 GiB instead), "
                        "rounded to whole blocks")


def test_quick_estimate_does_not_grow_with_ram():
    estimates = {memory: build_plan([disk()], Settings(run_id="r", memory_bytes=memory * GIB, profile="quick"))
                 .as_dict()["estimate_s"] for memory in (24, 512, 4096)}
    assert len(set(estimates.values())) == 1, estimates


@pytest.mark.parametrize("profile", ["standard", "evidence"])
def test_standard_and_evidence_keep_twice_the_memory_figure(profile):
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=64 * GIB, profile=profile))
    assert plan.test_file_bytes == 128 * GIB and plan.cache_fence_bytes is None and fenced(plan) == []


def test_an_explicit_fence_wins_over_the_quick_default():
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=64 * GIB, profile="quick",
                                         cache_fence_bytes=GIB))
    assert plan.test_file_bytes == 2 * GIB and fenced(plan) == [GIB]


def test_fence_zero_turns_the_quick_default_off():
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=64 * GIB, profile="quick", cache_fence_bytes=0))
    assert plan.test_file_bytes == 128 * GIB and plan.cache_fence_bytes is None and fenced(plan) == []


def test_a_small_host_needs_no_fence_for_quick():
    # RAM below the default fence: 2 x RAM is already the smaller file, and no memory cgroup is needed.
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=2 * GIB, profile="quick"))
    assert plan.test_file_bytes == 4 * GIB and plan.cache_fence_bytes is None and fenced(plan) == []


def test_the_plan_names_the_tools_it_runs():
    plan = build_plan([disk()], Settings(run_id="r", memory_bytes=GIB, tests=("dd_seq_read", "fio_rand_read",
                                                                              "sysbench_rndrd", "bonnie",
                                                                              "ioping_latency")))
    assert plan.tools == ["dd", "fio", "sysbench", "bonnie++", "ioping"]
