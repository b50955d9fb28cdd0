"""Each report setting's default is written once, in the judge (plugin_utils/_aggregate.py Settings, through
plugin_utils/_settings.py): the callback's options are made from it (doc_fragments/report_settings.py), and the
documents that show a default to people - docs/report.md's Settings table, the AWX survey and every sentence of the
docs that quotes one (PROSE_QUOTES) - are checked here."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _settings

ROOT = Path(__file__).resolve().parents[4]
JUDGED = [setting for setting in _settings.SETTINGS if setting.option in _aggregate.Settings._fields]


def shown(setting):
    """A default as people read it: a percentage for a fraction's variable, true/false, the text in backquotes."""
    if setting.kind == _settings.PERCENT:
        return "%g" % (setting.default * 100)
    if setting.kind in (_settings.FACTOR, _settings.CELSIUS):
        return "%g" % setting.default
    if isinstance(setting.default, bool):
        return "true" if setting.default else "false"
    return "`%s`" % setting.default


def test_the_settings_defaults_are_the_judge_s():
    assert {setting.option: setting.default for setting in JUDGED} == {
        option: default for option, default in _aggregate.Settings._field_defaults.items() if option != "robust_z_limit"}


@pytest.fixture(scope="module", name="callback_options")
def fixture_callback_options(tmp_path_factory):
    """The callback's options as ansible-doc renders them (the docs Ansible reads its configuration from)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "DISKPROOF_"))}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / ".ansible" / "collections")
    # Its home (local tmp/) in the test's temporary directory: without one, ansible-doc writes ~/.ansible/tmp.
    env["ANSIBLE_HOME"] = str(tmp_path_factory.mktemp("ansible-home"))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-t", "callback", "--json", "diskproof.fleet.report"],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)["diskproof.fleet.report"]["doc"]["options"]


@pytest.mark.parametrize("setting", _settings.SETTINGS, ids=lambda setting: setting.option)
def test_the_callback_s_option_is_made_from_the_setting(setting, callback_options):
    option = callback_options[setting.option]
    assert option.get("default") == setting.default
    assert option["env"] == [{"name": setting.env}]
    assert option["type"] == setting.option_type
    assert list(option.get("choices") or ()) == list(setting.choices)


def test_docs_report_md_shows_each_default():
    lines = (ROOT / "docs" / "report.md").read_text(encoding="utf-8").splitlines()
    rows = {}
    for line in lines[lines.index("| variable | callback option (env / ini `[diskproof_report]`) | default | what |") + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[2]
    for setting in _settings.SETTINGS:
        if setting.default is not None:
            assert rows[setting.variable] == shown(setting), setting.variable


def test_the_awx_survey_offers_the_defaults():
    survey = json.loads((ROOT / "docs" / "awx" / "survey.json").read_text(encoding="utf-8"))["spec"]
    by_variable = {setting.variable: setting for setting in _settings.SETTINGS}
    checked = 0
    for question in survey:
        setting = by_variable.get(question["variable"])
        if setting is None or setting.default is None or question.get("default") in (None, ""):
            continue
        assert str(question["default"]) == shown(setting).strip("`"), question["variable"]
        checked += 1
    assert checked >= 1   # unstable_fails; the thresholds are left empty (the report's default)


# Every sentence of the docs that quotes one of the judge's defaults in prose: (file, pattern, the setting each group
# quotes). A default changed in the judge fails here, naming each sentence to change with it; a sentence reworded
# so that its pattern no longer matches fails too, so none drops out of the check unnoticed.
PROSE_QUOTES = (
    ("README.md", r"more than (\d+) % below the group median, or more than\s+(\d+) % below and more than ([\d.]+) times",
     ("outlier_fraction", "robust_z_min_deviation", "robust_z_limit")),
    ("docs/report.md", r"more than `regression_fraction` \((\d+) %\) below the baseline", ("regression_fraction",)),
    ("docs/report.md", r"more than `outlier_fraction` \((\d+) %\) below the peer-group median, whatever the noise, \*\*or\*\* "
                       r"at least (\d+) % below it \(`robust_z_min_deviation`\) and more than ([\d.]+) × \(`robust_z_limit`\)",
     ("outlier_fraction", "robust_z_min_deviation", "robust_z_limit")),
    ("docs/report.md", r"above `max_cv` \((\d+) %\) \*\*and\*\*", ("max_cv",)),
    ("docs/report.md", r"`outlier` when d < −(\d+) % \(`outlier_fraction`", ("outlier_fraction",)),
    ("docs/report.md", r"or when d ≤ −(\d+) % \(`robust_z_min_deviation`\) \*\*and\*\* z < −([\d.]+) \(`robust_z_limit`\)",
     ("robust_z_min_deviation", "robust_z_limit")),
    ("docs/report.md", r"When the repeats' CV exceeds `max_cv` \((\d+) %\)", ("max_cv",)),
    ("docs/report.md", r"at least (\d+) %, at most (\d+) %: the band healthy peers stay in",
     ("robust_z_min_deviation", "outlier_fraction")),
    ("docs/report-files.md", r"the outlier limit \(`rules\.outlier_fraction`, default (\d+) %\)", ("outlier_fraction",)),
    ("docs/report-files.md", r"\(`rules\.outlier_fraction`, default ± (\d+) %\)", ("outlier_fraction",)),
    ("docs/architecture.md", r"`regressed` \(> (\d+) % below the baseline", ("regression_fraction",)),
    ("docs/architecture.md", r"`outlier` \(> (\d+) % below the group median, or ≥ (\d+) % below and\s+z = deviation / "
                             r"√\(group spread² \+ repeat CV²\) < −([\d.]+);",
     ("outlier_fraction", "robust_z_min_deviation", "robust_z_limit")),
    ("docs/architecture.md", r"with CV > (\d+) % whose interval straddles", ("max_cv",)),
    ("docs/architecture.md", r"read/write p99 > (\d+) × the group's median p99", ("latency_outlier_factor",)),
    ("README.md", r"p99 latency more than (\d+) times its peers' median", ("latency_outlier_factor",)),
    ("docs/report.md", r"p99 is more than\s+`latency_outlier_factor` \(default (\d+)\) times", ("latency_outlier_factor",)),
)


def _as_quoted(field):
    """A judge default as the prose writes it: a fraction as a percentage, robust_z_limit as its magnitude, a factor
    as it is."""
    value = _aggregate.Settings._field_defaults[field]
    if field == "latency_outlier_factor":
        return "%g" % value
    return "%g" % (-value if field == "robust_z_limit" else value * 100)


@pytest.mark.parametrize("path, pattern, fields", PROSE_QUOTES, ids=["%s:%s" % (quote[0], "+".join(quote[2])) for quote in PROSE_QUOTES])
def test_the_docs_prose_quotes_the_judges_defaults(path, pattern, fields):
    matches = list(re.finditer(pattern, (ROOT / path).read_text(encoding="utf-8")))
    assert matches, "%s no longer has the sentence %r: update PROSE_QUOTES with the new wording" % (path, pattern)
    for match in matches:
        assert list(match.groups()) == [_as_quoted(field) for field in fields], (path, match.group(0))
