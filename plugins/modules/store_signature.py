#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Documentation only: the action plugin plugins/action/store_signature.py does the work, on the controller.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: store_signature
short_description: Sign the report store's runs and check its baseline on the controller, with a key the store never sees
version_added: 0.2.0
description:
  - The report store (M(diskproof.fleet.report_store)) runs on the store host; anyone who can write the store
    could edit a run's C(report.json) and recompute its C(SHA256SUMS). This action signs each run's C(SHA256SUMS)
    on the controller with a key kept off the store (HMAC-SHA256), and checks that signature before a run is used
    as the baseline. docs/report-store.md of the collection, Threat model.
  - O(operation=seal) computes the C(SHA256SUMS) of O(report_dir) (as M(ansible.builtin.copy) copies it - a symbolic
    link is followed) and signs a statement naming O(run_id), O(scope), whether its C(report.json) passed and that
    C(SHA256SUMS). Without a key it returns the sums only, with a warning - the run is kept but never becomes the
    baseline.
  - O(operation=verify) checks the baseline run the store's query returned (O(found)) and its C(report.json)
    fetched to O(copy) - signature (this key), C(SHA256SUMS) (the signed one), the copy (the one those sums record),
    passed and a full run or a merge - and writes into the copy which run it is and the hosts it lacks
    (C(store_baseline)). Fails, saying how to re-sign or pick a run, otherwise.
  - O(operation=sign) signs a run an operator picked (C(playbooks/store_pick.yml)).
  - The key is read on the controller only, from the first of - the variable C(diskproof_store_key), the controller
    file the variable C(diskproof_store_key_file) names, the environment variable C(DISKPROOF_STORE_KEY), the file
    C(DISKPROOF_STORE_KEY_FILE) names (mode 0600; at least 32 characters). It is never an option of this action, so
    it never shows in a task's arguments, and never sent to a host.
options:
  operation:
    description: V(seal) a report directory, V(verify) a baseline, V(sign) a picked run.
    type: str
    choices: [seal, verify, sign]
    required: true
  report_dir:
    description: O(operation=seal) - the controller directory the report callback wrote the run into.
    type: path
  run_id:
    description: O(operation=seal) - the run's id in the store.
    type: str
  scope:
    description:
      - O(operation=seal) - what the run judged - V(full) (every host its playbook targets), V(partial) (a slice, a
        C(--limit) run) or V(merge). Only V(full) and V(merge) runs can become the baseline.
    type: str
    choices: [full, partial, merge]
    default: full
  found:
    description:
      - O(operation=verify) and O(operation=sign) - what M(diskproof.fleet.report_store)
        O(diskproof.fleet.report_store#module:state=query) returned about the run - C(run_id) (its C(last_pass)),
        C(sums), C(signature), C(entry), C(hosts_missing).
    type: dict
  copy:
    description: O(operation=verify) and O(operation=sign) - the controller copy of that run's C(report.json).
    type: path
  store:
    description: The store's path, for the messages (the command that re-signs a run).
    type: str
    default: ""
  store_host:
    description: The store's host, for the messages.
    type: str
    default: localhost
extends_documentation_fragment:
  - diskproof.fleet.attributes
attributes:
  check_mode:
    support: full
    details: It changes nothing on any host; O(operation=verify) writes the controller copy of the baseline.
seealso:
  - module: diskproof.fleet.report_store
author:
  - diskproof maintainers (@diskproof)
"""

EXAMPLES = r"""
# The role diskproof.fleet.report_store does this (tasks_from publish and baseline).
- name: Checksum and sign the report directory on the controller
  diskproof.fleet.store_signature:
    operation: seal
    report_dir: ./diskproof-report
    run_id: 20261126T030000Z-awx4711
    scope: full
  delegate_to: localhost
  register: sealed

- name: Check the baseline the store named, and its fetched report.json
  diskproof.fleet.store_signature:
    operation: verify
    found: "{{ query_result | combine({'run_id': query_result.last_pass}) }}"
    copy: /tmp/diskproof-baseline-x/20261125T030000Z-awx4650-report.json
    store: /srv/diskproof-reports
  delegate_to: localhost
"""

RETURN = r"""
sums:
  description: O(operation=seal) - the C(SHA256SUMS) text of the report directory.
  returned: O(operation=seal)
  type: str
  sample: "9f2c0d3e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0  report.json\n"
signature:
  description: The C(SHA256SUMS.hmac) text; null from O(operation=seal) without a key.
  returned: O(operation=seal) or O(operation=sign)
  type: str
  sample: "diskproof-store-signature: 1\nrun_id: 20261126T030000Z-awx4711\n..."
passed:
  description: Whether the report directory's C(report.json) says the run passed.
  returned: O(operation=seal)
  type: bool
  sample: true
key_id:
  description: The first 16 hex digits of an HMAC of a fixed text with the key (names the key, reveals nothing of it).
  returned: O(operation=seal)
  type: str
  sample: 3f0c9a7d21b4e5f6
store_baseline:
  description: What the baseline copy now carries besides the report - C(run_id), C(scope), C(key_id), C(hosts_missing).
  returned: O(operation=verify)
  type: dict
  sample: {run_id: 20261125T030000Z-awx4650, scope: full, key_id: 3f0c9a7d21b4e5f6, hosts_missing: {}}
"""
