# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action diskproof.fleet.report (judge false): the report's settings, rules and baseline checked before
a run, with the pipeline's own reader and the callback's settings, so inputs the report would only warn about
at the end stop the playbook before its first host task."""
from __future__ import annotations

import json
import re
import sys

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report_inputs
from ansible_collections.diskproof.fleet.plugins.plugin_utils._report_inputs import check

RULES = "rules:\n  - match: {test: dd_seq_write}\n    min_write_mb_per_s: 150\n"
BASELINE = {"report_schema": 2, "results": []}
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
# The validate.yml check, then a task that must never run when it fails.
PLAYBOOK = [{"name": "Checked run", "hosts": "all", "gather_facts": False, "tasks": [
    {"name": "Check the report's acceptance rules and baseline", "run_once": True, "diskproof.fleet.report": {},
     "register": "checked"},
    {"name": "Show what was checked", "run_once": True, "ansible.builtin.debug": {"msg": "{{ checked.inputs }}"}},
    {"name": "Touch the host", "ansible.builtin.debug": {"msg": "host touched"}},
]}]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("files", "rules", "problems"), [
    ({"rules.yml": "rules:\n  - match: {test: x\n"}, None,
     ["acceptance rules file {rules.yml}: cannot read {rules.yml}: while parsing a flow mapping"]),
    ({"rules.yml": RULES.replace("min_write_mb_per_s", "min_write_gb_per_s")}, None,
     ["acceptance rules file {rules.yml}: rules[0].min_write_gb_per_s: unknown key (allowed: datasheet, match, "]),
    ({"rules.yml": RULES.replace("150", "fast")}, None,
     ["acceptance rules file {rules.yml}: rules[0].min_write_mb_per_s: must be a positive number, got 'fast'"]),
    ({}, {"rules": "fast"},
     ["acceptance rules in diskproof_acceptance: acceptance.rules: must be a list of rules, got str"]),
    ({"baseline.json": '{"report_schema": 2, "results": ['}, None, ["baseline: cannot use {baseline.json}: Expecting"]),
    ({"baseline.json": json.dumps({"report_schema": 99, "results": []})}, None,
     ["baseline: cannot use {baseline.json}: baseline: report_schema must be one of 1, 2, got 99"]),
    # Every bad input at once, each with what to do about it.
    ({"rules.yml": "rules: 5\n", "baseline.json": "[]"}, {"rules": [{}]},
     ["acceptance rules file {rules.yml}: acceptance.rules: must be a list of rules, got int; fix the file",
      "acceptance rules in diskproof_acceptance: rules[0]: states no limit",
      "baseline: cannot use {baseline.json}: baseline: must be a report.json mapping, got list; give the report.json"]),
], ids=["bad-yaml", "unknown-key", "wrong-type", "bad-variable", "bad-json", "wrong-schema", "all-at-once"])
def test_every_bad_input_is_named_with_what_to_fix(tmp_path, files, rules, problems):
    paths = {name: write(tmp_path, name, text) for name, text in files.items()}
    summary, found = check(paths.get("rules.yml"), paths.get("baseline.json"), rules)
    assert summary == {"rules": [], "baseline": None}
    assert len(found) == len(problems), found
    for problem, expected in zip(found, problems):
        for name, path in paths.items():
            expected = expected.replace("{%s}" % name, path)
        assert problem.startswith(expected) or expected in problem, (problem, expected)


def test_missing_files_are_named_and_so_are_the_settings_that_name_them(tmp_path):
    _summary, found = check(str(tmp_path / "no.yml"), str(tmp_path / "no.json"), None)
    assert found[0].startswith("acceptance rules file %s: cannot read %s: [Errno 2] No such file or directory"
                               % (tmp_path / "no.yml", tmp_path / "no.yml"))
    assert found[0].endswith("or unset rules_file (DISKPROOF_RULES_FILE, [diskproof_report] rules_file)")
    assert found[1].startswith("baseline: cannot use %s: [Errno 2] No such file" % (tmp_path / "no.json"))
    assert found[1].endswith("or unset baseline_file (DISKPROOF_BASELINE_FILE, [diskproof_report] baseline_file)")
    # Files given by variables: no callback setting to point at.
    _summary, found = check(str(tmp_path / "no.yml"), "", None, settings=False)
    assert found[0].endswith("fix the file (docs/report.md, Acceptance rules)")


def test_good_inputs_are_summarised(tmp_path):
    summary, found = check(write(tmp_path, "rules.yml", RULES), write(tmp_path, "baseline.json", json.dumps(BASELINE)),
                           {"rules": []}, "diskproof_rules_yaml")
    assert found == []
    assert summary == {"rules": ["%s: 1 rule(s)" % (tmp_path / "rules.yml"), "diskproof_rules_yaml: 0 rule(s)"],
                       "baseline": "%s: 0 disk x test figure(s)" % (tmp_path / "baseline.json")}
    assert check(None, None, None) == ({"rules": [], "baseline": None}, [])


def test_the_pipeline_reads_with_the_same_code(tmp_path):
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report
    options = {"report_dir": str(tmp_path), "outlier_fraction": 0.15, "robust_z_min_deviation": 0.05, "latency_outlier_factor": 2.0, "regression_fraction": 0.1,
               "max_cv": 0.05, "peer_group": "identity", "unstable_fails": True, "max_temperature_c": 70.0,
               "rules_file": write(tmp_path, "rules.yml", "rules: [\n"), "baseline_file": str(tmp_path / "missing.json")}
    inputs, warnings = _report.read_inputs({}, options.get)
    assert inputs.rules_errors == _report_inputs.read_rules_file(options["rules_file"])[1] != []
    assert inputs.baseline_errors == _report_inputs.read_baseline_file(options["baseline_file"])[1] != []
    assert len(warnings) == 2


def test_a_bad_rules_file_stops_the_play_before_the_first_host_task(playbook_runner):
    rules = write(playbook_runner.workdir, "rules.yml", RULES.replace("min_write_mb_per_s", "min_write_gb_per_s"))
    completed = playbook_runner.run({"all": {"hosts": {"n01": LOCAL, "n02": LOCAL}}}, PLAYBOOK,
                                    {"DISKPROOF_RULES_FILE": rules,
                                     "DISKPROOF_REPORT_DIR": str(playbook_runner.workdir / "out")})
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    assert "the report cannot use its inputs, nothing was run: acceptance rules file %s: rules[0].min_write_gb_per_s" \
        % rules in " ".join(output.split())
    assert "host touched" not in output
    # run_once: the failure stops every host of the play (counted once, on the host it ran for).
    assert re.search(r"^n01 +: ok=0 .* failed=1 ", output, re.M) and "n02" not in output, output


def test_the_callback_settings_from_ansible_cfg_are_the_ones_checked(playbook_runner):
    """A relative rules_file in ansible.cfg is resolved as the callback resolves it (next to the file)."""
    write(playbook_runner.workdir, "rules.yml", RULES)
    write(playbook_runner.workdir, "baseline.json", json.dumps(BASELINE))
    config = "[defaults]\n[diskproof_report]\nrules_file = rules.yml\nbaseline_file = baseline.json\nreport_dir = out\n"
    completed = playbook_runner.run({"all": {"hosts": {"n01": LOCAL}}}, PLAYBOOK, {}, config)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "%s: 1 rule(s)" % (playbook_runner.workdir / "rules.yml") in output
    assert "%s: 0 disk x test figure(s)" % (playbook_runner.workdir / "baseline.json") in output
    assert "host touched" in output
