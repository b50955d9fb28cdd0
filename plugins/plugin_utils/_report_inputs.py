# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's inputs read on the controller: the acceptance rules file and the baseline report.

One reader for both users: the report pipeline (plugin_utils/_report.py), which judges with them (and
only warns when they cannot be used), and the action diskproof.fleet.report, which playbooks call first
so that inputs the report could not use stop the run before any host is touched (``check_play``). Each
reader returns (value, errors); an empty error list means the value can be used.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Dict, List, Optional, Tuple

import yaml

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _settings


def plain(value: Any) -> Any:
    """Plain dict/list/str/number copy of a variable value (2.19 tags values with their origin)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def read_rules_file(path: str) -> Tuple[Any, List[str]]:
    """(the YAML document of the rules file, []) or (None, [why it cannot be read])."""
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.safe_load(stream), []
    except (OSError, yaml.YAMLError) as exc:
        return None, ["cannot read %s: %s" % (path, exc)]


def rules_errors(acceptance: Any) -> List[str]:
    """Every problem of the acceptance rules (each naming its path, e.g. rules[0].match.modle); [] when usable."""
    try:
        _aggregate.validate_rules(acceptance)
    except _aggregate.RulesError as exc:
        return exc.errors
    return []


def read_baseline_file(path: str) -> Tuple[Any, List[str]]:
    """(the baseline report.json, []) or (None, [why it cannot be used as a baseline])."""
    try:
        with open(path, encoding="utf-8") as stream:
            baseline = json.load(stream)
        _aggregate.baseline_index(baseline)
        return baseline, []
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, and BaselineError
        return None, ["cannot use %s: %s" % (path, exc)]


def report_variables(variables: Mapping[str, Any], template: Callable[[Any], Any]) -> Dict[str, Any]:
    """The report's variables a play sets (each templated, as plain values), and the report store's baseline
    known on localhost (a fact the store role sets there)."""
    names = [setting.variable for setting in _settings.SETTINGS]
    names += [_settings.RULES_YAML_VARIABLE, _settings.ACCEPTANCE_VARIABLE]
    found = {name: plain(template(variables[name])) for name in names if name in variables}
    localhost = (variables.get("hostvars") or {}).get("localhost") or {}
    if _settings.STORE_BASELINE_VARIABLE in localhost:
        found[_settings.STORE_BASELINE_VARIABLE] = plain(template(localhost[_settings.STORE_BASELINE_VARIABLE]))
    return found


_UNSET = " or unset %s (%s, [diskproof_report] %s)"


def check(rules_file: Optional[str], baseline_file: Optional[str], rules: Any, rules_name: str = _settings.ACCEPTANCE_VARIABLE,
          settings: bool = True) -> Tuple[Dict[str, Any], List[str]]:
    """(summary, problems): every input given is read and validated; problems say what to fix.

    ``settings``: the files came from the callback's settings (so the messages name them)."""
    problems = []
    summary: Dict[str, Any] = {"rules": [], "baseline": None}
    if rules_file:
        acceptance, errors = read_rules_file(rules_file)
        errors = errors or rules_errors(acceptance)
        if errors:
            problems.append("acceptance rules file %s: %s; fix the file (docs/report.md, Acceptance rules)%s"
                            % (rules_file, "; ".join(errors),
                               _UNSET % ("rules_file", "DISKPROOF_RULES_FILE", "rules_file") if settings else ""))
        else:
            summary["rules"].append("%s: %d rule(s)" % (rules_file, len(_aggregate.validate_rules(acceptance))))
    if rules is not None:
        errors = rules_errors(rules)
        if errors:
            problems.append("acceptance rules in %s: %s; fix the variable (docs/report.md, Acceptance rules)"
                            % (rules_name, "; ".join(errors)))
        else:
            summary["rules"].append("%s: %d rule(s)" % (rules_name, len(_aggregate.validate_rules(rules))))
    if baseline_file:
        baseline, errors = read_baseline_file(baseline_file)
        if errors:
            hint = _UNSET % ("baseline_file", "DISKPROOF_BASELINE_FILE", "baseline_file") if settings else ""
            problems.append("baseline: %s; give the report.json of an earlier run (docs/report.md, Baseline)%s"
                            % ("; ".join(errors), hint))
        else:
            summary["baseline"] = "%s: %d disk x test figure(s)" % (baseline_file, len(_aggregate.baseline_index(baseline)))
    return summary, problems


def check_play(found: Mapping[str, Any], option: Callable[[str], Any]) -> Tuple[Dict[str, Any], List[str]]:
    """(summary, problems) of the report's inputs as the pipeline will resolve them from ``found`` (the play's
    report variables) and ``option`` (the report callback's own settings)."""
    problems = []
    try:
        values, sources = _settings.resolve(found, option)
        _settings.judge_settings(values)
    except ValueError as error:
        return {"rules": [], "baseline": None, "settings": {}}, ["report setting: %s" % error]
    inline = _settings.inline_rules(found)
    rules, rules_name = None, _settings.ACCEPTANCE_VARIABLE
    if inline is not None:
        rules_name = _settings.RULES_YAML_VARIABLE
        try:
            rules = yaml.safe_load(inline)
        except yaml.YAMLError as error:
            problems.append("%s is not YAML: %s" % (rules_name, error))
    elif not values["rules_file"]:
        rules = found.get(_settings.ACCEPTANCE_VARIABLE)
    rules_file = values["rules_file"] if inline is None else None
    summary, more = check(rules_file, values["baseline_file"], rules, rules_name,
                          settings=sources["rules_file"].startswith("callback"))
    summary["settings"] = {option_name: "%s (%s)" % (values[option_name], sources[option_name]) for option_name in sorted(values)}
    return summary, problems + more
