"""roles/benchmark/tasks/plan.yml hands diskproof_cache_fence_bytes to bench_plan: 0 (a survey's "off"),
empty or unset means no fence; any other value goes to the plan, which refuses what it cannot use (a
negative value was once dropped like 0, and the run went ahead unfenced)."""
from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
except ImportError:   # ansible-core < 2.19 templates every string
    def trust_as_template(value):
        return value

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, Settings, TargetFacts, build_plan

# The bench_plan task lives in plan.yml, imported by main.yml and (in check mode) by preflight.yml.
TASKS = pathlib.Path(__file__).resolve().parents[3] / "roles" / "benchmark" / "tasks" / "plan.yml"
MIB = 1 << 20


def fence_argument(**variables):
    """What the role passes as cache_fence_bytes (absent: the key is omitted)."""
    plan_task = next(task for task in yaml.safe_load(TASKS.read_text()) if "diskproof.fleet.bench_plan" in task)
    expression = trust_as_template(plan_task["diskproof.fleet.bench_plan"]["cache_fence_bytes"])
    rendered = Templar(loader=DataLoader(), variables=variables).template({"cache_fence_bytes": expression})
    return rendered.get("cache_fence_bytes", "omitted")


@pytest.mark.parametrize(("variables", "passed"), [
    ({}, "omitted"),
    ({"diskproof_cache_fence_bytes": None}, "omitted"),
    ({"diskproof_cache_fence_bytes": 0}, "omitted"),
    ({"diskproof_cache_fence_bytes": "0"}, "omitted"),
    ({"diskproof_cache_fence_bytes": ""}, "omitted"),
    ({"diskproof_cache_fence_bytes": 64 * MIB}, 64 * MIB),
    ({"diskproof_cache_fence_bytes": -1}, -1),
    ({"diskproof_cache_fence_bytes": 16}, 16),
])
def test_only_zero_or_nothing_means_no_fence(variables, passed):
    assert fence_argument(**variables) == passed


@pytest.mark.parametrize("fence", [-1, 16])
def test_what_is_passed_and_unusable_is_refused_by_the_plan(fence):
    passed = fence_argument(diskproof_cache_fence_bytes=fence)
    settings = Settings(run_id="t", memory_bytes=64 * MIB, cache_fence_bytes=passed)
    with pytest.raises(PlanError, match="cache_fence_bytes must be a whole number >= 16777216, got %d" % fence):
        build_plan([TargetFacts(path="/srv/disk1", free_bytes=1 << 40, filesystem_size_bytes=1 << 41)], settings)
