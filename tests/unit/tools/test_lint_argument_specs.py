"""tools/lint-argument-specs (make lint): the collection's roles pass; each rule fails a mutated copy, naming the
file, the option and the fix."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TOOL = REPO / "tools" / "lint-argument-specs"


def lint(*roles_dirs):
    return subprocess.run([sys.executable, str(TOOL), *map(str, roles_dirs)], capture_output=True, text=True,
                          check=False, timeout=60)


def test_the_collections_roles_agree():
    run = lint()
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("lint-argument-specs: 5 role(s), argument_specs and defaults agree")


def _replace_first(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("file", "old", "new", "message"), [
    ("defaults/main.yml", "quiesce_idle_window: 5\n", "quiesce_idle_window: 6\n",
     "{specs}: main: option quiesce_idle_window has default: 5 but {defaults} says 6: make them equal"),
    ("defaults/main.yml", "quiesce_force: false\n", "quiesce_force: false\nquiesce_extra_knob: 3\n",
     "{defaults}: quiesce_extra_knob is not an option of any entry point in {specs}: declare it there"),
    ("meta/argument_specs.yml", "        type: int\n        default: 43200\n", "        type: int\n",
     "{specs}: main: option quiesce_lease has no default: add `default: 43200` (the value of {defaults})"),
    ("defaults/main.yml", "quiesce_force: false\n", "",
     "{specs}: restore: option quiesce_force has default: false but {defaults} does not set it "
     "(the role sees it undefined): add `quiesce_force: false` there"),
    ("meta/argument_specs.yml", "      quiesce_state_dir:\n", "      quiesce_state_dir:\n        required: true\n",
     "{specs}: main: option quiesce_state_dir is required but {defaults} sets it: drop required or the defaults entry"),
], ids=["default-differs", "undeclared-default", "spec-without-default", "default-missing", "required-with-default"])
def test_each_rule_fails_a_mutated_copy(tmp_path, file, old, new, message):
    roles = tmp_path / "roles"
    shutil.copytree(REPO / "roles", roles)
    quiesce = roles / "quiesce"
    _replace_first(quiesce / file, old, new)
    run = lint(roles)
    assert run.returncode == 1
    defaults, specs = quiesce / "defaults" / "main.yml", quiesce / "meta" / "argument_specs.yml"
    assert message.format(defaults=defaults, specs=specs) in run.stderr.splitlines(), run.stderr
    assert run.stderr.splitlines()[-1].startswith("lint-argument-specs: ")
