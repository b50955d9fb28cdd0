#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Documentation only: the action plugin plugins/action/report.py does the work, on the controller.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: report
short_description: Check the report's inputs, have this run judged by the report callback, or judge record sets
version_added: 0.1.0
description:
  - Resolves the report's settings from this play's C(diskproof_*) variables (templated by Ansible) and the report
    callback C(diskproof.fleet.report)'s own options (environment, C(ansible.cfg)), exactly as the report will
    (docs/report.md, Settings), and reads the acceptance rules and the baseline they name.
  - With O(judge=false) (the first task of C(playbooks/validate.yml) and C(playbooks/acceptance.yml)) it fails,
    naming every problem and what to fix, when the report could not use its inputs, so a run stops before any
    host is touched instead of after every disk was measured. The report callback keeps the settings (a run
    whose every host failed, with no report play left to run, is judged with them at its end).
  - With O(judge=true) (the report play, C(playbooks/report.yml)) the report callback judges this run's records
    now, with these settings, writes the report files and writes its judgement to RV(response) for the play to
    publish. Inputs it cannot use do not fail the task - the fleet is judged without them, report.json lists the
    errors and C(summary.passed) is false.
  - With O(record_sets) (C(playbooks/merge.yml)) the record sets - the C(report.json) of earlier runs, their
    records and host outcomes - are read here and judged together as one fleet by the same report pipeline,
    without the callback; the judgement is RV(judgement). A host in two record sets, a file of another major
    version of this collection, a damaged file or one over O(record_sets_max_bytes) is refused before anything
    is judged, every problem listed.
  - Runs on the controller only, where the files are; contacts no host.
options:
  judge:
    description:
      - Have the fleet judged now, not only the inputs checked.
    type: bool
    default: false
  record_sets:
    description:
      - C(report.json) files, directories holding one, or glob patterns of either (for example
        C(slices/*/report.json)); lists of them are flattened. Judged here, as one fleet, with O(judge=true).
    type: list
    elements: raw
  record_sets_max_bytes:
    description:
      - The largest record set read, in bytes - reading one takes about 8 times its size in memory.
        C(playbooks/merge.yml) passes C(diskproof_record_sets_max_bytes).
    type: int
    default: 134217728
  discard:
    description:
      - Remove the private directory of a RV(response) this action handed out, and do nothing else (the report
        play's cleanup, which runs however the judgement went). A path that is no such response - a file not named
        C(judgement.json) in a C(diskproof-judgement-*) directory of the controller's temporary directory - fails
        the task and nothing is removed.
    type: path
extends_documentation_fragment:
  - diskproof.fleet.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - The merge's own report settings (rules, baseline, outlier fraction, peer groups) judge the record sets, as
    for any run; the settings each record set was judged with are not reused.
seealso:
  - plugin: diskproof.fleet.report
    plugin_type: callback
author:
  - diskproof maintainers (@diskproof)
"""

EXAMPLES = r"""
- name: Check the report's settings, acceptance rules and baseline before anything runs
  diskproof.fleet.report:
  run_once: true

- name: Have the report callback judge this run (the first task of playbooks/report.yml)
  diskproof.fleet.report:
    judge: true
  register: judged
  run_once: true

- name: Take its judgement
  ansible.builtin.set_fact:
    diskproof_report: "{{ lookup('ansible.builtin.file', judged.response) | from_json }}"
  run_once: true

- name: Remove its answer from the controller
  diskproof.fleet.report:
    discard: "{{ judged.response }}"
  run_once: true

- name: Judge the slices of a sliced job as one fleet (playbooks/merge.yml)
  diskproof.fleet.report:
    judge: true
    record_sets: [slice1/report.json, slice2/, site-b/*/report.json]
  register: merged
"""

RETURN = r"""
inputs:
  description:
    - What was checked - C(rules) (one line per rule source, with its number of rules), C(baseline) (the baseline
      file and its number of disk x test figures, or null) and C(settings) (each setting's value and where it came
      from).
  returned: with judge=false
  type: dict
response:
  description:
    - The file the report callback writes its judgement to (JSON, the same keys as RV(judgement)), in a private
      directory of its own on the controller; remove that directory once it is read (O(discard)).
  returned: with judge=true and no record_sets
  type: str
judgement:
  description:
    - The merged fleet's judgement - C(written), C(report_dir), C(files), C(summary) (passed, counts by verdict,
      total, failing results and hosts, input errors - what set_stats publishes) and C(record_sets) (each file's
      C(path) and C(sha256)).
  returned: with record_sets
  type: dict
removed:
  description: The directory O(discard) removed.
  returned: with discard
  type: str
table:
  description: The fleet table the report callback prints for a run, worst first.
  returned: with record_sets
  type: list
  elements: str
"""
