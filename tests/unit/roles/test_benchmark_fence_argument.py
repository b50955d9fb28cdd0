"""The benchmark role's plan options (__benchmark_plan_request in roles/benchmark/vars/main.yml, which plan.yml hands to
bench_plan and the playbooks to the quiesce) carry diskproof_cache_fence_bytes: empty or unset is left out (the
profile's default: the quick profile fences at 4 GiB, the others do not); 0 (a survey's "off") is passed as 0, which
turns the quick default off; any other value goes to the plan, which refuses what it cannot use (a negative value was
once dropped like 0, and the run went ahead unfenced)."""
from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.release import __version__ as ansible_version
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
except ImportError:   # ansible-core < 2.19 templates every string
    def trust_as_template(value):
        return value

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, Settings, TargetFacts, build_plan

# The plan's options are defined once, as a role variable; plan.yml and the quiesce take them from there.
ROLE_VARS = pathlib.Path(__file__).resolve().parents[3] / "roles" / "benchmark" / "vars" / "main.yml"
TASKS = pathlib.Path(__file__).resolve().parents[3] / "roles" / "benchmark" / "tasks" / "plan.yml"
MIB = 1 << 20


# ansible-core 2.19 has omit as a template global; older cores take it from the play's variables
# (a placeholder string that the task executor drops), and render every value as a string.
OMIT_PLACEHOLDER = "__omit_place_holder__diskproof_test"
OLD_CORE = tuple(int(part) for part in ansible_version.split(".")[:2]) < (2, 19)


def fence_argument(**variables):
    """What the role passes as cache_fence_bytes ("omitted": null or absent, bench_plan's default applies), as the
    module's argument_spec (type=int) receives it."""
    role_vars = yaml.safe_load(ROLE_VARS.read_text())
    variables = dict(variables, __benchmark_plan_settings={},
                     __benchmark_plan_optional={key: trust_as_template(value)
                                                for key, value in role_vars["__benchmark_plan_optional"].items()})
    request = Templar(loader=DataLoader(), variables=variables).template(
        trust_as_template(role_vars["__benchmark_plan_request"]))
    plan_task = next(task for task in yaml.safe_load(TASKS.read_text()) if "diskproof.fleet.bench_plan" in task)
    expression = trust_as_template(plan_task["diskproof.fleet.bench_plan"]["cache_fence_bytes"])
    variables = {"__benchmark_plan_request": request}
    if OLD_CORE:
        variables["omit"] = OMIT_PLACEHOLDER
    rendered = Templar(loader=DataLoader(), variables=variables).template({"cache_fence_bytes": expression})
    value = rendered.get("cache_fence_bytes", "omitted")
    if value in ("omitted", OMIT_PLACEHOLDER):
        return "omitted"
    return int(value)


@pytest.mark.parametrize(("variables", "passed"), [
    ({}, "omitted"),
    ({"diskproof_cache_fence_bytes": None}, "omitted"),
    ({"diskproof_cache_fence_bytes": 0}, 0),
    ({"diskproof_cache_fence_bytes": "0"}, 0),
    ({"diskproof_cache_fence_bytes": ""}, "omitted"),
    ({"diskproof_cache_fence_bytes": 64 * MIB}, 64 * MIB),
    ({"diskproof_cache_fence_bytes": -1}, -1),
    ({"diskproof_cache_fence_bytes": 16}, 16),
])
def test_nothing_means_the_profile_default_and_zero_is_passed_as_off(variables, passed):
    value = fence_argument(**variables)
    assert (value if value == "omitted" else int(value)) == passed


@pytest.mark.parametrize("fence", [-1, 16])
def test_what_is_passed_and_unusable_is_refused_by_the_plan(fence):
    passed = fence_argument(diskproof_cache_fence_bytes=fence)
    settings = Settings(run_id="t", memory_bytes=64 * MIB, cache_fence_bytes=passed)
    with pytest.raises(PlanError, match="cache_fence_bytes must be a whole number >= 16777216, got %d" % fence):
        build_plan([TargetFacts(path="/srv/disk1", free_bytes=1 << 40, filesystem_size_bytes=1 << 41)], settings)
