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
    controller = {"host": "ctl-a", "pid": 4101, "pid_start": 111, "boot_id": "boot-a", "pid_ns": "pid:[1]"}
    variables = {"quiesce_state_dir": "/srv/diskproof-state", "__quiesce_run_id": "20261126T060000Z-0badcafe",
                 "__quiesce_controller": controller}
    if quiesce_result is not None:
        variables["__quiesce_result"] = quiesce_result
        published = _render(QUIESCE_SET_FACT, variables)
        assert published["state_dir"] == "/srv/diskproof-state"
        assert published["run_id"] == "20261126T060000Z-0badcafe"
        assert published["controller"] == controller   # what bench_run's restore_when_done proves the lock with
        state = published
    else:
        state = {"state_dir": "/var/lib/diskproof"}   # the benchmark role's default without quiesce_run_state
    passed = _render(PLAN_LEFTOVERS, {"benchmark_quiesce_state": state})
    before = _render(PRIVATE_LEFTOVERS, variables)
    assert passed == before
    assert passed == ([DEAD_RUN] if quiesce_result and quiesce_result.get("recovered") else [])


# benchmark_restore_when_done: the last test's restore, handed to the quiesce role's restore through public variables.
RESTORED_RUN_ID = next(task for task in yaml.safe_load((REPO / "roles/benchmark/tasks/run.yml").read_text())
                       if "always" in task)["always"][0]["ansible.builtin.set_fact"]["benchmark_restored_run_id"]
RESTORE_WHEN = next(task for task in yaml.safe_load((REPO / "roles/quiesce/tasks/restore.yml").read_text())
                    if "diskproof.fleet.quiesce" in task)["when"]
THIS_RUN = "20261127T060000Z-0badcafe"


@pytest.mark.parametrize("results, expected", [
    ([{"ansible_facts": {}}, {"ansible_facts": {}, "restored": {"run_id": THIS_RUN, "msg": "restored: ..."}}],
     THIS_RUN),
    # the last test's restore failed (no `restored`), or an earlier test's result says nothing of it
    ([{"ansible_facts": {}, "restored": {"run_id": THIS_RUN}}, {"failed": True, "msg": "restore_when_done: ..."}], ""),
    ([], ""),                           # no test ran (check mode, a failure before the loop)
], ids=["restored", "restore-failed", "no-test"])
def test_the_restore_task_is_skipped_only_after_the_last_test_restored_this_run(results, expected):
    published = _render(RESTORED_RUN_ID, {"__benchmark_runs": {"results": results}})
    assert published == expected
    restore_runs = _render("{{ %s }}" % RESTORE_WHEN, {"quiesce_restored_run_id": published,
                                                       "__quiesce_run_id": THIS_RUN})
    assert str(restore_runs) == str(expected != THIS_RUN)    # older cores hand back the text of a bool
    # a restore an earlier run's last test did never skips this run's
    assert str(_render("{{ %s }}" % RESTORE_WHEN, {"quiesce_restored_run_id": "20261126T000000Z-0ldrun00",
                                                   "__quiesce_run_id": THIS_RUN})) == "True"


def _restore_include_when(playbook: str) -> str:
    """The condition on the playbook's restore (an include in the always section): only then does it run."""
    def tasks(items):
        for task in items or []:
            yield task
            for section in ("block", "rescue", "always"):
                yield from tasks(task.get(section))
    plays = yaml.safe_load((REPO / "playbooks" / playbook).read_text())
    found = [task for play in plays for task in tasks(play.get("tasks"))
             if (task.get("ansible.builtin.include_role") or {}).get("tasks_from") == "restore"]
    assert len(found) == 1, playbook
    return found[0]["when"]


@pytest.mark.parametrize("playbook", ["validate.yml", "acceptance.yml"])
@pytest.mark.parametrize("variables, restores", [
    ({"benchmark_restored_run_id": THIS_RUN, "quiesce_run_state": {"run_id": THIS_RUN}}, False),
    ({"benchmark_restored_run_id": "", "quiesce_run_state": {"run_id": THIS_RUN}}, True),     # the last test did not
    ({"benchmark_restored_run_id": "20261126T000000Z-0ldrun00", "quiesce_run_state": {"run_id": THIS_RUN}}, True),
    ({"benchmark_restored_run_id": ""}, True),                                            # the quiesce published nothing
    ({}, True),                                                                           # nothing ran at all
], ids=["restored-this-run", "not-restored", "an-earlier-run-restored", "no-quiesce-state", "nothing"])
def test_the_playbooks_include_the_restore_unless_the_last_test_restored_this_run(playbook, variables, restores):
    assert str(_render("{{ %s }}" % _restore_include_when(playbook), variables)) == str(restores)
