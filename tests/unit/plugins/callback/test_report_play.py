# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One judgement, one vocabulary: the report play (playbooks/report.yml) has the callback judge once, with
the play's diskproof_* variables (the action diskproof.fleet.report hands them over), and that play's
set_stats, its verdict on the run and report.json are the same judgement. Real ansible-playbook, the test
module emit_records, the collection's own playbooks/report.yml imported."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _settings

from test_report import RULED_INVENTORY, RULED_RECORDS, identified  # pylint: disable=import-error

REPO_ROOT = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

STATS_KEYS = ("passed", "counts", "total", "failing", "failing_hosts", "input_errors")


def measured_then_reported(report_vars=None, fail_default=True):
    """A measuring play and the collection's report play (with its own variables), as validate.yml and acceptance.yml end."""
    return [
        {"name": "Identified disks", "hosts": "n0*", "gather_facts": False, "vars": {"records": RULED_RECORDS},
         "tasks": [{"name": "Sequential write", "ansible.legacy.emit_records": {"records": "{{ records[inventory_hostname] }}"}}]},
        {"ansible.builtin.import_playbook": str(REPO_ROOT / "playbooks" / "report.yml"),
         "vars": dict({"diskproof_fail_on_findings_default": fail_default}, **(report_vars or {}))},
    ]


def stats_of(completed):
    line = next(line for line in completed.stdout.splitlines() if line.strip().startswith("RUN:"))
    return json.loads(line.split("RUN:", 1)[1])["diskproof"]


def run(playbook_runner, playbook, extra_env=None, extra_vars=None, args=(), inventory=None):
    """ansible-playbook with the callback, custom stats shown, and extra vars from a file (-e @file)."""
    env = {"DISKPROOF_REPORT_DIR": str(playbook_runner.workdir / "from-env"), "ANSIBLE_SHOW_CUSTOM_STATS": "1",
           "ANSIBLE_DEPRECATION_WARNINGS": "True"}
    env.update(extra_env or {})
    (playbook_runner.workdir / "inventory.yml").write_text(json.dumps(inventory or RULED_INVENTORY))
    (playbook_runner.workdir / "fleet.yml").write_text(json.dumps(playbook))
    (playbook_runner.workdir / "ansible.cfg").write_text("[defaults]\n")
    (playbook_runner.workdir / "extra.json").write_text(json.dumps(extra_vars or {}))
    command = [str(ANSIBLE_PLAYBOOK), "-i", "inventory.yml", "fleet.yml", "-e", "@extra.json", *args]
    return subprocess.run(command, cwd=playbook_runner.workdir, env=playbook_runner._env(env), capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.parametrize("fails", [True, False], ids=["failing-run", "passing-run"])
def test_report_json_set_stats_and_the_run_status_are_one_judgement(playbook_runner, fails):
    # n04 writes 140 MB/s against a median of 197.5: an outlier at 15 %, a pass at 40 %.
    report_dir = playbook_runner.workdir / "out"
    completed = run(playbook_runner, measured_then_reported(), extra_vars={
        "diskproof_report_dir": str(report_dir), "diskproof_outlier_percent": 15 if fails else 40,
        "diskproof_outlier_z_min_percent": 5 if fails else 40, "diskproof_report_store": str(playbook_runner.workdir / "store")})
    output = completed.stdout + completed.stderr
    report = json.loads((report_dir / "report.json").read_text())
    stats = stats_of(completed)
    assert stats == {key: report["summary"][key] for key in STATS_KEYS}
    assert report["summary"]["passed"] is (not fails)
    assert (completed.returncode == 0) is (not fails), output
    assert report["rules"]["outlier_fraction"] == (0.15 if fails else 0.4)
    # The variable won over the callback's environment setting, and the report was judged once.
    assert not (playbook_runner.workdir / "from-env").exists()
    assert output.count("report: %s" % (report_dir / "report.json")) == 1
    # The store got that same report.json; the report play's own tasks (the store's, the failing
    # assert) are no disk's result and caused no second judgement.
    assert (playbook_runner.workdir / "store" / "latest" / "report.json").read_bytes() == (report_dir / "report.json").read_bytes()
    assert sorted(report["hosts"]) == ["n01", "n02", "n03", "n04"]
    if fails:
        assert stats["failing"][0]["host"] == "n04" and stats["failing"][0]["verdict"] == "outlier"
        assert "Fail the run when a result fails" in output and "1 failing result(s)" in output


def test_a_limited_run_is_judged_published_and_failed_too(playbook_runner):
    # AWX's Limit field is --limit: the report play runs on the limited hosts, once, on the controller.
    completed = run(playbook_runner, measured_then_reported(), args=("--limit", "n02,n04"))
    report = json.loads((playbook_runner.workdir / "from-env" / "report.json").read_text())
    assert sorted(report["hosts"]) == ["n02", "n04"]
    assert stats_of(completed) == {key: report["summary"][key] for key in STATS_KEYS}
    assert completed.returncode == 0 and report["summary"]["passed"] is True  # two disks: no peer group to judge


def test_under_ansible_runner_the_files_are_also_in_the_jobs_artifacts(playbook_runner):
    # ansible-runner (AWX's engine) names the job's artifacts directory in AWX_ISOLATED_DATA_DIR
    # (ansible_runner/config/_base.py); AWX deletes the job's private data dir, the store keeps them.
    artifacts = playbook_runner.workdir / "artifacts" / "1"
    artifacts.mkdir(parents=True)
    completed = run(playbook_runner, measured_then_reported(fail_default=False), extra_env={"AWX_ISOLATED_DATA_DIR": str(artifacts)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    copied = artifacts / "diskproof-report"
    assert sorted(path.name for path in copied.iterdir()) == ["junit.xml", "report.html", "report.json", "report.md", "results.csv"]
    assert (copied / "report.json").read_bytes() == (playbook_runner.workdir / "from-env" / "report.json").read_bytes()


def test_validate_style_run_names_failures_without_failing(playbook_runner):
    completed = run(playbook_runner, measured_then_reported(fail_default=False))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert stats_of(completed)["passed"] is False
    assert json.loads((playbook_runner.workdir / "from-env" / "report.json").read_text())["summary"]["passed"] is False


def test_percent_variables_and_the_callback_options_they_stand_for(playbook_runner):
    report_dir = playbook_runner.workdir / "out"
    completed = run(playbook_runner, measured_then_reported({
        "diskproof_report_dir": str(report_dir), "diskproof_max_cv_percent": 7.5, "diskproof_regression_percent": 20,
        "diskproof_outlier_z_min_percent": 3, "diskproof_peer_group": "test", "diskproof_unstable_fails": "false"}),
        extra_env={"DISKPROOF_MAX_CV": "0.02"})
    rules = json.loads((report_dir / "report.json").read_text())["rules"]
    assert (rules["max_cv"], rules["regression_fraction"], rules["robust_z_min_deviation"], rules["peer_group"], rules["unstable_fails"]) \
        == (0.075, 0.2, 0.03, "test", False), completed.stdout


def test_the_environment_decides_when_no_variable_is_set(playbook_runner):
    completed = run(playbook_runner, measured_then_reported(),
                    extra_env={"DISKPROOF_OUTLIER_FRACTION": "0.4", "DISKPROOF_ROBUST_Z_MIN_DEVIATION": "0.4"})
    report = json.loads((playbook_runner.workdir / "from-env" / "report.json").read_text())
    assert report["rules"]["outlier_fraction"] == 0.4 and report["summary"]["passed"] is True, completed.stdout


def test_a_bad_setting_variable_is_named_and_fails_the_run(playbook_runner):
    completed = run(playbook_runner, measured_then_reported({"diskproof_outlier_percent": "fifteen"}))
    report = json.loads((playbook_runner.workdir / "from-env" / "report.json").read_text())
    assert report["summary"]["passed"] is False
    assert report["summary"]["input_errors"][0].startswith(
        "settings: diskproof_outlier_percent must be a percentage from 0 to 100 (100 excluded), e.g. 15, got 'fifteen'")
    assert completed.returncode != 0


def test_without_the_callback_the_report_play_says_how_to_enable_it(playbook_runner):
    # Another callback enabled instead (an empty list is refused by ansible itself); its files stay in the work dir.
    controller_tmp = playbook_runner.workdir / "controller-tmp"
    controller_tmp.mkdir()
    completed = run(playbook_runner, measured_then_reported(), extra_env={
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.junit", "JUNIT_OUTPUT_DIR": str(playbook_runner.workdir / "junit"),
        "TMPDIR": str(controller_tmp)})
    assert completed.returncode != 0
    assert "ANSIBLE_CALLBACKS_ENABLED=diskproof.fleet.report" in completed.stdout
    # The action made a directory for the callback's answer that never came: removed all the same.
    assert "Remove the callback's answer from the controller" in completed.stdout
    assert [path.name for path in controller_tmp.iterdir() if path.name.startswith("diskproof-judgement-")] == []


def test_a_run_whose_every_host_failed_is_judged_with_the_settings_the_check_handed_over(playbook_runner):
    """No report play runs when every host failed; the callback judges at the end with what the first task (the
    action diskproof.fleet.report, as in validate.yml) handed over: here the report directory of an extra var."""
    report_dir = playbook_runner.workdir / "from-extra-vars"
    playbook = [{"name": "Measure", "hosts": "n0*", "gather_facts": False, "tasks": [
        {"name": "Check the report's inputs", "diskproof.fleet.report": {}, "run_once": True},
        # A task of the collection's roles: this play measures disks (validate.yml's discovery comes first).
        {"name": "Discovery's options", "ansible.builtin.import_role": {"name": "diskproof.fleet.discover", "tasks_from": "request"}},
        {"name": "Preflight", "ansible.builtin.fail": {"msg": "refused"}},
        {"name": "Sequential write", "ansible.legacy.emit_records": {"records": "{{ records[inventory_hostname] }}"}},
    ], "vars": {"records": RULED_RECORDS}}] + measured_then_reported()[1:]
    completed = run(playbook_runner, playbook, extra_vars={"diskproof_report_dir": str(report_dir)})
    assert completed.returncode != 0
    report = json.loads((report_dir / "report.json").read_text())
    assert [(entry["host"], entry["verdict"]) for entry in report["results"]] == [
        ("n01", "not_measured"), ("n02", "not_measured"), ("n03", "not_measured"), ("n04", "not_measured")]
    assert not (playbook_runner.workdir / "from-env").exists()


def test_a_refused_check_writes_no_report(playbook_runner):
    """The check is no measurement: a run it stops leaves no report behind."""
    playbook = [{"name": "Measure", "hosts": "n0*", "gather_facts": False, "tasks": [
        {"name": "Check the report's inputs", "diskproof.fleet.report": {}, "run_once": True},
        {"name": "Sequential write", "ansible.legacy.emit_records": {"records": []}},
    ]}] + measured_then_reported()[1:]
    completed = run(playbook_runner, playbook, extra_vars={"diskproof_outlier_percent": 150})
    assert completed.returncode != 0
    assert "diskproof_outlier_percent must be a percentage" in " ".join(completed.stdout.split())
    assert "no diskproof_results in this run, nothing written" in completed.stdout
    assert not (playbook_runner.workdir / "from-env").exists()


@pytest.mark.parametrize(("variables", "expected"), [
    ({}, {"outlier_fraction": 0.15, "unstable_fails": True, "baseline_file": None}),
    ({"diskproof_outlier_percent": "", "diskproof_baseline_file": ""}, {"outlier_fraction": 0.15, "baseline_file": None}),
    ({"diskproof_outlier_percent": 20, "diskproof_unstable_fails": "no"}, {"outlier_fraction": 0.2, "unstable_fails": False}),
    ({"diskproof_latency_outlier_factor": "3"}, {"latency_outlier_factor": 3.0}),
    ({"diskproof_max_temperature_c": "65"}, {"max_temperature_c": 65.0}),
    ({_settings.STORE_BASELINE_VARIABLE: "/tmp/last-pass.json"}, {"baseline_file": "/tmp/last-pass.json"}),
    ({_settings.STORE_BASELINE_VARIABLE: "/tmp/last-pass.json", "diskproof_baseline_file": "/srv/mine.json"},
     {"baseline_file": "/srv/mine.json"}),
], ids=["defaults", "blank-survey-fields", "percent-and-boolean", "factor", "celsius", "store-baseline", "explicit-baseline-wins"])
def test_resolve(variables, expected):
    defaults = {"report_dir": "./diskproof-report", "outlier_fraction": 0.15, "robust_z_min_deviation": 0.05,
                "latency_outlier_factor": 2.0, "regression_fraction": 0.1, "max_cv": 0.05, "peer_group": "identity",
                "unstable_fails": True, "rules_file": None, "baseline_file": None, "max_temperature_c": 70.0}
    values, sources = _settings.resolve(variables, defaults.get)
    assert {key: values[key] for key in expected} == expected
    assert set(values) == set(defaults) == set(sources)


@pytest.mark.parametrize(("variables", "message"), [
    ({"diskproof_outlier_percent": 100}, "diskproof_outlier_percent must be a percentage from 0 to 100 (100 excluded), e.g. 15, got 100"),
    ({"diskproof_max_cv_percent": True}, "diskproof_max_cv_percent must be a percentage"),
    ({"diskproof_unstable_fails": "maybe"}, "diskproof_unstable_fails must be true or false, got 'maybe'"),
    ({"diskproof_latency_outlier_factor": 1}, "diskproof_latency_outlier_factor must be a number above 1, e.g. 2 (twice the peers' median), got 1"),
    ({"diskproof_latency_outlier_factor": "x2"}, "diskproof_latency_outlier_factor must be a number above 1"),
    ({"diskproof_max_temperature_c": 158}, "diskproof_max_temperature_c must be degrees Celsius above 0 and below 150, e.g. 70, got 158"),
    ({"diskproof_max_temperature_c": "warm"}, "diskproof_max_temperature_c must be degrees Celsius above 0 and below 150"),
])
def test_resolve_refuses_a_bad_variable_by_name(variables, message):
    with pytest.raises(_settings.SettingError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        _settings.resolve(variables, lambda name: None)


def test_identified_records_are_what_the_ruled_tests_use():
    # Guard: the fleet above has one slow disk among four, or the failing/passing pair proves nothing.
    assert sorted(record["metrics"]["write_bytes_per_s"] for records in RULED_RECORDS.values() for record in records) == \
        [140e6, 195e6, 200e6, 205e6]
    assert identified(1.0, "X")["target"]["serial"] == "X"
