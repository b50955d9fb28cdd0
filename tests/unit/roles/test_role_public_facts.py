"""Roles talk through public facts: no role, playbook or molecule scenario reads another role's private
`__<role>_*` variables, and the quiesce -> benchmark wiring (quiesce_run_state -> benchmark_quiesce_state ->
bench_plan's remove_leftovers_of) hands on the run the quiesce recovered exactly as the private read did."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:
    from ansible.template import trust_as_template
except ImportError:   # ansible-core < 2.19 templates every string
    def trust_as_template(value):
        return value

REPO = pathlib.Path(__file__).resolve().parents[3]
ROLES = sorted(path.name for path in (REPO / "roles").iterdir() if (path / "tasks").is_dir())
PRIVATE = re.compile(r"\b__(%s)_[a-z0-9_]*" % "|".join(ROLES))
# White-box harnesses of the quiesce role: they dump its registered module results (a refusal's too).
HARNESSES = {"tests/integration/quiesce_run.yml", "tests/integration/qsysd_run.yml"}


def _readers():
    """(file, owning role or None) for every YAML or Jinja file a role, playbook or scenario runs."""
    for pattern in ("roles/*/tasks/*.yml", "roles/*/vars/*.yml", "roles/*/defaults/*.yml", "roles/*/templates/*",
                    "playbooks/*.yml", "molecule/*/*.yml", "tests/integration/*.yml"):
        for path in sorted(REPO.glob(pattern)):
            parts = path.relative_to(REPO).parts
            yield path, parts[1] if parts[0] == "roles" else None


def test_no_reader_takes_another_roles_private_variables():
    foreign = []
    for path, owner in _readers():
        relative = str(path.relative_to(REPO))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in PRIVATE.finditer(line.split("#", 1)[0] if path.suffix == ".yml" else line):
                if match.group(1) != owner and relative not in HARNESSES:
                    foreign.append("%s:%d: %s" % (relative, number, match.group(0)))
    assert not foreign, "read the role's public fact instead:\n" + "\n".join(foreign)


def _task(relative: str, module: str) -> dict:
    tasks = yaml.safe_load((REPO / relative).read_text())
    return next(task for task in tasks if module in task)[module]


def _trusted(value):
    """The task's values as a loaded role hands them to the templar (trusted strings, also inside a dict)."""
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    return trust_as_template(value) if isinstance(value, str) else value


def _render(expression, variables):
    value = Templar(loader=DataLoader(), variables=variables).template(_trusted(expression))
    # Older cores may hand back a list's text.
    return ast.literal_eval(value) if isinstance(value, str) and value.startswith("[") else value


QUIESCE_SET_FACT = _task("roles/quiesce/tasks/main.yml", "ansible.builtin.set_fact")["quiesce_run_state"]
PLAN_LEFTOVERS = _task("roles/benchmark/tasks/plan.yml", "diskproof.fleet.bench_plan")["remove_leftovers_of"]
# What the plan passed before the benchmark role read quiesce_run_state (the quiesce role's private result).
PRIVATE_LEFTOVERS = "{{ [__quiesce_result.recovered.run_id] if (__quiesce_result.recovered | default(none)) else [] }}"
DEAD_RUN = "20261122T095500Z-77aa01bc"


@pytest.mark.parametrize("quiesce_result", [
    {"recovered": {"run_id": DEAD_RUN, "reason": "its ansible-playbook is gone", "started": ["cron"]}},
    {"recovered": None},
    {"skipped": True},
    None,   # the quiesce never ran (a benchmark without the quiesce role)
], ids=["recovered", "nothing-recovered", "quiesce-skipped", "no-quiesce"])
def test_the_plan_removes_the_leftovers_of_the_same_run_as_before(quiesce_result):
    variables = {"quiesce_state_dir": "/srv/diskproof-state", "__quiesce_run_id": "20261126T060000Z-0badcafe"}
    if quiesce_result is not None:
        variables["__quiesce_result"] = quiesce_result
        published = _render(QUIESCE_SET_FACT, variables)
        assert published["state_dir"] == "/srv/diskproof-state"
        assert published["run_id"] == "20261126T060000Z-0badcafe"
        state = published
    else:
        state = {"state_dir": "/var/lib/diskproof"}   # the benchmark role's default without quiesce_run_state
    passed = _render(PLAN_LEFTOVERS, {"benchmark_quiesce_state": state})
    before = _render(PRIVATE_LEFTOVERS, variables)
    assert passed == before
    assert passed == ([DEAD_RUN] if quiesce_result and quiesce_result.get("recovered") else [])
