#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Documentation only: the action plugin plugins/action/replay_records.py does the work, on the controller.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: replay_records
short_description: Replay one host's records and outcome from a record set, for the report callback to judge
version_added: 0.2.0
description:
  - Returns the host's result records from its record set (the C(report.json) of an earlier run) as
    C(ansible_facts.diskproof_results), exactly as M(diskproof.fleet.bench_facts) returned them in that run,
    so the report callback C(diskproof.fleet.report) collects them as in a live run. Merging slices of a
    sliced job, or the runs of several sites, is then one fleet judged once, by the one judge.
  - Reproduces the host's outcome in that run - a host that failed fails again with the original message
    (and its records, when it had some); an unreachable host is unreachable again with the original message;
    a host that was targeted but left no record returns none, which the callback reports as C(not_measured).
  - One task result per host - a host that had records and a problem, or several problems, is replayed with
    its records (or its first problem) and a warning; C(diskproof_replay) returns all of them.
  - Runs on the controller only (no connection to the host, which may not exist any more); reads the record
    set only. Re-reads only the host's own results (byte ranges found by the lookup
    C(diskproof.fleet.record_sets)) and refuses when the file changed since.
  - Used by C(playbooks/merge.yml); see docs/awx.md.
options:
  record_set:
    description:
      - This host's entry from the lookup C(diskproof.fleet.record_sets), passed unchanged (C(playbooks/merge.yml)
        sets it as the host variable C(diskproof_replay) with M(ansible.builtin.add_host)).
    type: dict
    required: true
extends_documentation_fragment:
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
  - diskproof.fleet.attributes.facts_module
notes:
  - The merge's own report settings (rules, baseline, outlier fraction, peer groups) judge the replayed
    records, as for any run; the record sets' settings are not reused.
seealso:
  - module: diskproof.fleet.bench_facts
author:
  - diskproof maintainers (@diskproof)
"""

EXAMPLES = r"""
# playbooks/merge.yml does this; the report callback judges the hosts of every record set once.
- name: Add every host of the record sets
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Add each host with its record set entry
      ansible.builtin.add_host:
        name: "{{ item.host }}"
        groups: diskproof_merged
        diskproof_replay: "{{ item }}"
      loop: "{{ query('diskproof.fleet.record_sets', diskproof_record_sets) }}"
      loop_control:
        label: "{{ item.host }}"

- name: Replay every host
  hosts: diskproof_merged
  gather_facts: false
  connection: local
  tasks:
    - name: Replay the record sets
      diskproof.fleet.replay_records:
        record_set: "{{ diskproof_replay }}"
"""

RETURN = r"""
ansible_facts:
  description: The host's records.
  returned: when the host had records
  type: dict
  contains:
    diskproof_results:
      description: The host's result records (schema 1), as M(diskproof.fleet.bench_facts) returned them.
      type: list
      elements: dict
diskproof_replay:
  description:
    - What was replayed - C(source) (the report.json), C(status) and C(problems) of the host in that run,
      C(records) (how many), C(collection_version) (that wrote the record set).
  returned: always
  type: dict
msg:
  description: The original failure or unreachable message, or how many records were replayed from where.
  returned: always
  type: str
"""
