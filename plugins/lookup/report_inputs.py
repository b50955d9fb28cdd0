# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: report_inputs
author: diskproof maintainers (@diskproof)
version_added: 0.1.0
short_description: Check the report's acceptance rules and baseline before a run
description:
  - Reads the acceptance rules and the baseline report with the same code as the report callback
    C(diskproof.fleet.report) and fails, listing every problem with what to fix, when the report could
    not use them. The callback itself only warns at the end of the run and judges without them; a
    playbook that calls this lookup first (C(playbooks/validate.yml), C(playbooks/acceptance.yml)) stops
    before any host is touched instead of after every disk was measured.
  - Every input given is checked - the rules file, the rules value and the baseline file - even where the
    callback would use only one of the two rule sources.
  - Called without options (as the collection's playbooks call it), it resolves every report setting from
    the play's C(diskproof_*) variables and the callback's options exactly as the callback will (docs/report.md,
    Settings) - thresholds, peer group, rules (C(diskproof_rules_yaml), C(diskproof_rules_file),
    C(diskproof_acceptance)), the baseline (C(diskproof_baseline_file), else the report store's last passing
    report) - and fails on any it could not use.
  - Runs on the controller, where the files are; reads them only.
options:
  rules_file:
    description:
      - YAML file of acceptance rules (docs/report.md). Not given - the callback's own C(rules_file) setting
        (C(DISKPROOF_RULES_FILE), C([diskproof_report] rules_file)); empty - none.
    type: str
  baseline_file:
    description:
      - A previous report.json to judge regressions against. Not given - the callback's own C(baseline_file)
        setting (C(DISKPROOF_BASELINE_FILE), C([diskproof_report] baseline_file)); empty - none.
    type: str
  rules:
    description: Acceptance rules as a value (usually the variable C(diskproof_acceptance)); none when null.
    type: raw
  rules_name:
    description: What O(rules) is called in messages (the variable it came from).
    type: str
    default: diskproof_acceptance
notes:
  - A relative O(rules_file) or O(baseline_file) is looked up as M(ansible.builtin.file) looks up files (the
    play's C(files) directories, then the playbook's directory), as C(playbooks/acceptance.yml) reads them.
"""

EXAMPLES = r"""
- name: Check the report's settings, rules and baseline before anything runs (as the callback will read them)
  ansible.builtin.debug:
    msg: "{{ lookup('diskproof.fleet.report_inputs') }}"
  run_once: true

- name: Check rules given as a value
  ansible.builtin.debug:
    msg: "{{ lookup('diskproof.fleet.report_inputs', rules=diskproof_acceptance | default(None)) }}"
  run_once: true

- name: The same for explicit files (a survey's variables)
  ansible.builtin.debug:
    msg: "{{ lookup('diskproof.fleet.report_inputs', rules_file=rules_path, baseline_file=baseline_path) }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description:
    - One dict - C(rules) (one line per rule source checked, with its number of rules), C(baseline)
      (the baseline file checked and its number of disk x test figures, or null) and, called without
      options, C(settings) (each setting's value and where it came from).
  type: list
  elements: dict
"""

import os

import yaml

from ansible import constants as C
from ansible.errors import AnsibleLookupError
from ansible.plugins.loader import callback_loader
from ansible.plugins.lookup import LookupBase
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report_inputs, _settings

CALLBACK = "diskproof.fleet.report"


def callback_setting(name):
    """The report callback's own setting (env, ansible.cfg), exactly as the callback resolves it."""
    plugin = callback_loader.get(CALLBACK, class_only=True)
    if plugin is None:   # pragma: no cover - the callback ships with this lookup
        raise AnsibleLookupError("cannot load the callback %s to read its %s setting" % (CALLBACK, name))
    return C.config.get_config_value(name, plugin_type="callback", plugin_name=plugin._load_name)


def check(rules_file, baseline_file, rules, rules_name="diskproof_acceptance", settings=True):
    """(summary, problems): every input given is read and validated; problems say what to fix.

    settings: the files came from the callback's settings (so the messages name them)."""
    problems = []
    summary = {"rules": [], "baseline": None}
    unset = " or unset %s (%s, [diskproof_report] %s)"
    if rules_file:
        acceptance, errors = _report_inputs.read_rules_file(rules_file)
        errors = errors or _report_inputs.rules_errors(acceptance)
        if errors:
            problems.append("acceptance rules file %s: %s; fix the file (docs/report.md, Acceptance rules)%s"
                            % (rules_file, "; ".join(errors),
                               unset % ("rules_file", "DISKPROOF_RULES_FILE", "rules_file") if settings else ""))
        else:
            summary["rules"].append("%s: %d rule(s)" % (rules_file, len(_aggregate.validate_rules(acceptance))))
    if rules is not None:
        errors = _report_inputs.rules_errors(rules)
        if errors:
            problems.append("acceptance rules in %s: %s; fix the variable (docs/report.md, Acceptance rules)"
                            % (rules_name, "; ".join(errors)))
        else:
            summary["rules"].append("%s: %d rule(s)" % (rules_name, len(_aggregate.validate_rules(rules))))
    if baseline_file:
        baseline, errors = _report_inputs.read_baseline_file(baseline_file)
        if errors:
            hint = unset % ("baseline_file", "DISKPROOF_BASELINE_FILE", "baseline_file") if settings else ""
            problems.append("baseline: %s; give the report.json of an earlier run (docs/report.md, Baseline)%s"
                            % ("; ".join(errors), hint))
        else:
            figures = len(_aggregate.baseline_index(baseline))
            summary["baseline"] = "%s: %d disk x test figure(s)" % (baseline_file, figures)
    return summary, problems


def report_variables(variables, template):
    """The report's variables the play sets (templated), and the store's baseline known on localhost."""
    names = [setting.variable for setting in _settings.SETTINGS] + [_settings.RULES_YAML_VARIABLE, _settings.ACCEPTANCE_VARIABLE]
    found = {name: _report_inputs.plain(template(variables[name])) for name in names if name in variables}
    localhost = (variables.get("hostvars") or {}).get("localhost") or {}
    if _settings.STORE_BASELINE_VARIABLE in localhost:
        found[_settings.STORE_BASELINE_VARIABLE] = _report_inputs.plain(template(localhost[_settings.STORE_BASELINE_VARIABLE]))
    return found


def check_play(found):
    """(summary, problems) of the report's inputs as the callback will resolve them from ``found``."""
    problems = []
    try:
        values, sources = _settings.resolve(found, callback_setting)
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
    summary["settings"] = {option: "%s (%s)" % (values[option], sources[option]) for option in sorted(values)}
    return summary, problems + more


class LookupModule(LookupBase):
    """The report's rules and baseline, checked before the run."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not kwargs:
            summary, problems = check_play(report_variables(variables or {}, self._templar.template))
            if problems:
                raise AnsibleLookupError("the report cannot use its inputs, nothing was run: %s" % " | ".join(problems))
            return [summary]
        files = {}
        settings = "rules_file" not in kwargs and "baseline_file" not in kwargs
        for name in ("rules_file", "baseline_file"):
            if name not in kwargs:
                files[name] = callback_setting(name)   # absolute already: the config resolves it
            elif kwargs[name] and not os.path.isabs(kwargs[name]):
                files[name] = self.find_file_in_search_path(variables, "files", kwargs[name], ignore_missing=True) \
                    or kwargs[name]
            else:
                files[name] = kwargs[name]
        rules = _report_inputs.plain(self.get_option("rules"))
        summary, problems = check(files["rules_file"], files["baseline_file"], rules, self.get_option("rules_name"),
                                  settings)
        if problems:
            raise AnsibleLookupError("the report cannot use its inputs, nothing was run: %s" % " | ".join(problems))
        return [summary]
