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
- name: Check the report's acceptance rules and baseline before anything runs
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
    - One dict - C(rules) (one line per rule source checked, with its number of rules) and C(baseline)
      (the baseline file checked and its number of disk x test figures, or null).
  type: list
  elements: dict
"""

import os

from ansible import constants as C
from ansible.errors import AnsibleLookupError
from ansible.plugins.loader import callback_loader
from ansible.plugins.lookup import LookupBase
from ansible_collections.diskproof.fleet.plugins.module_utils import _aggregate
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report_inputs

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


class LookupModule(LookupBase):
    """The report's rules and baseline, checked before the run."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
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
