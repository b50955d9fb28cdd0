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
  - Reads the acceptance rules and the baseline report with the same code as the report pipeline and
    fails, listing every problem with what to fix, when the report could not use them. The report only
    warns at the end of the run and judges without them; a playbook that checks them first stops before
    any host is touched instead of after every disk was measured.
  - The collection's playbooks check with the action M(diskproof.fleet.report) (the same check, which
    also hands the settings to the report callback); this lookup is the same check in a template.
  - Every input given is checked - the rules file, the rules value and the baseline file - even where the
    callback would use only one of the two rule sources.
  - Called without options (as the collection's playbooks call it), it resolves every report setting from
    the play's C(diskproof_*) variables and the callback's options exactly as the report will (docs/report.md,
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

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report_inputs
from ansible_collections.diskproof.fleet.plugins.plugin_utils._callback_options import callback_option


class LookupModule(LookupBase):
    """The report's rules and baseline, checked before the run."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not kwargs:
            summary, problems = _report_inputs.check_play(_report_inputs.report_variables(variables or {}, self._templar.template),
                                                          callback_option)
            if problems:
                raise AnsibleLookupError("the report cannot use its inputs, nothing was run: %s" % " | ".join(problems))
            return [summary]
        files = {}
        settings = "rules_file" not in kwargs and "baseline_file" not in kwargs
        for name in ("rules_file", "baseline_file"):
            if name not in kwargs:
                files[name] = callback_option(name)   # absolute already: the config resolves it
            elif kwargs[name] and not os.path.isabs(kwargs[name]):
                files[name] = self.find_file_in_search_path(variables, "files", kwargs[name], ignore_missing=True) \
                    or kwargs[name]
            else:
                files[name] = kwargs[name]
        rules = _report_inputs.plain(self.get_option("rules"))
        summary, problems = _report_inputs.check(files["rules_file"], files["baseline_file"], rules, self.get_option("rules_name"),
                                                 settings)
        if problems:
            raise AnsibleLookupError("the report cannot use its inputs, nothing was run: %s" % " | ".join(problems))
        return [summary]
