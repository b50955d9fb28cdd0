#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_store
short_description: Keep every run's report files in a durable store, with latest and last-pass pointers and an index
version_added: 0.1.0
description:
  - Runs on the store host (the controller, or a file server through C(delegate_to)). The role
    C(diskproof.fleet.report_store) drives it; docs/report-store.md of the collection describes the store.
  - O(state=incoming) checks the store (created when missing and its parent exists; refused, saying what to do,
    when it is not a writable directory) and makes the new, empty C(<path>/.incoming/<run_id>.tmp) for the run's
    files. Refused when the store already holds O(run_id).
  - O(state=published) writes C(SHA256SUMS) (every file, as C(sha256sum -c) reads it) into that directory,
    renames it to C(<path>/<run_id>), adds the run to C(index.json) and C(index.csv), points C(latest) at it and,
    when its C(report.json) says C(summary.passed), C(last-pass) too (symlinks replaced in one rename), and
    removes the oldest runs beyond O(keep). All of it under an exclusive C(flock) on C(<path>/.lock), so jobs
    publishing at the same time (sliced jobs) take turns. A failure leaves every earlier run, the pointers and
    the index as they were; an existing run directory is never replaced.
  - O(state=query) returns the C(report.json) of the run C(last-pass) names (checked against that run's
    C(SHA256SUMS)), or null when no run passed yet.
author:
  - diskproof maintainers (@diskproof)
options:
  path:
    description:
      - The store directory on the host the module runs on.
    type: path
    required: true
  state:
    description:
      - V(incoming) prepares a run's upload directory; V(published) turns it into the run; V(query) reads the
        last passing run.
    type: str
    choices: [incoming, published, query]
    required: true
  run_id:
    description:
      - The run's directory name - letters, digits, C(.), C(_), C(-), starting with a letter or digit, at most 128
        characters, none of the store's own names (C(latest), C(last-pass), C(index.json), C(index.csv)).
      - Required with O(state=incoming) and O(state=published).
    type: str
  keep:
    description:
      - With O(state=published) - keep at most this many runs, removing the oldest first; the runs C(latest) and
        C(last-pass) name are never removed. V(0) keeps every run.
    type: int
    default: 0
  lock_timeout:
    description:
      - Seconds to wait for another job's publish to release C(<path>/.lock) before failing.
    type: float
    default: 60
extends_documentation_fragment:
  - diskproof.fleet.attributes
attributes:
  check_mode:
    support: full
    details: O(state=incoming) and O(state=published) report what they would do and change nothing.
notes:
  - Needs a filesystem with C(flock) and atomic C(rename) (local filesystems, NFS v4).
seealso:
  - name: The report store
    description: docs/report-store.md of the collection - layout, pointers, index, retention, remote store.
    link: https://github.com/diskproof/fleet/blob/main/docs/report-store.md
"""

EXAMPLES = r"""
- name: Make the upload directory of this run in the store
  diskproof.fleet.report_store:
    path: /srv/diskproof-reports
    state: incoming
    run_id: 20261126T030000Z-awx4711
  register: incoming

- name: Copy the run's files into it
  ansible.builtin.copy:
    src: ./diskproof-report/
    dest: "{{ incoming.incoming }}/"
    mode: "0644"

- name: Publish the run
  diskproof.fleet.report_store:
    path: /srv/diskproof-reports
    state: published
    run_id: 20261126T030000Z-awx4711
    keep: 90

- name: The last passing run's report.json, on a file server
  diskproof.fleet.report_store:
    path: /srv/diskproof-reports
    state: query
  delegate_to: fileserver1
  register: store
"""

RETURN = r"""
msg:
  description: What was done.
  returned: always
  type: str
  sample: "published run 20261126T030000Z-awx4711 (passed); latest and last-pass point to it"
path:
  description: The store's absolute path.
  returned: always
  type: str
  sample: /srv/diskproof-reports
run_id:
  description: O(run_id).
  returned: O(state=incoming) or O(state=published)
  type: str
  sample: 20261126T030000Z-awx4711
incoming:
  description: The directory to copy the run's files into.
  returned: O(state=incoming)
  type: str
  sample: /srv/diskproof-reports/.incoming/20261126T030000Z-awx4711.tmp
run_dir:
  description: The run's directory in the store.
  returned: O(state=published), and O(state=query) when a run passed
  type: str
  sample: /srv/diskproof-reports/20261126T030000Z-awx4711
entry:
  description: The run's C(index.json) entry.
  returned: O(state=published), not in check mode
  type: dict
  sample:
    run_id: 20261126T030000Z-awx4711
    time: "2026-11-26T03:04:10Z"
    published: "2026-11-26T03:04:12Z"
    playbook: acceptance.yml
    passed: true
    total: 18
    counts: {pass: 18, outlier: 0, error: 0, not_measured: 0}
    hosts: [rack6-n01, rack6-n02]
    path: /srv/diskproof-reports/20261126T030000Z-awx4711
latest:
  description: The run C(latest) names (after a publish - this run), null when none.
  returned: O(state=published) or O(state=query)
  type: str
  sample: 20261126T030000Z-awx4711
last_pass:
  description: The run C(last-pass) names, null when no run passed.
  returned: O(state=published) or O(state=query)
  type: str
  sample: 20261125T030000Z-awx4650
report_json:
  description: The C(report.json) of the run C(last-pass) names (in its run directory), null when no run passed.
  returned: O(state=query)
  type: str
  sample: /srv/diskproof-reports/20261125T030000Z-awx4650/report.json
sha256:
  description: The sha256 of RV(report_json) (equal to the one its run's C(SHA256SUMS) records), null without one.
  returned: O(state=query)
  type: str
  sample: 9f2c0d3e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0
runs:
  description: How many runs the index holds.
  returned: O(state=query)
  type: int
  sample: 12
pruned:
  description: The runs O(keep) removed, oldest first.
  returned: O(state=published), not in check mode
  type: list
  elements: str
  sample: [20261001T030000Z-awx3001]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _store
from ansible_collections.diskproof.fleet.plugins.module_utils._store import StoreError


def incoming(module: AnsibleModule, path: str, run_id: str) -> dict:
    if module.check_mode:
        return dict(changed=True, run_id=run_id, incoming=_store.incoming_path(path, run_id),
                    msg="would make %s" % _store.incoming_path(path, run_id))
    made = _store.prepare_incoming(path, run_id)
    return dict(changed=True, run_id=run_id, incoming=made, msg="copy the run's files into %s" % made)


def published(module: AnsibleModule, path: str, run_id: str) -> dict:
    run_dir = "%s/%s" % (path.rstrip("/"), _store.check_run_id(run_id))
    if module.check_mode:
        return dict(changed=True, run_id=run_id, run_dir=run_dir, msg="would publish run %s" % run_id)
    done = _store.publish(path, run_id, keep=module.params["keep"], lock_timeout=module.params["lock_timeout"])
    for warning in done["warnings"]:
        module.warn(warning)
    passed = done["entry"]["passed"]
    msg = "published run %s (%s); latest %s to it" % (
        run_id, "passed" if passed else "did not pass", "and last-pass point" if passed else "points")
    if done["pruned"]:
        msg += "; removed %d old run(s) (keep %d)" % (len(done["pruned"]), module.params["keep"])
    return dict(changed=True, run_id=run_id, run_dir=done["run_dir"], entry=done["entry"], latest=done["latest"],
                last_pass=done["last_pass"], pruned=done["pruned"], msg=msg)


def query(path: str) -> dict:
    found = _store.query(path)
    last_pass = found["last_pass"] or {}
    msg = ("last passing run %s" % last_pass["run_id"]) if last_pass else "no run in the store passed yet"
    return dict(changed=False, latest=found["latest"], last_pass=last_pass.get("run_id"),
                run_dir=last_pass.get("run_dir"), report_json=last_pass.get("report_json"),
                sha256=last_pass.get("sha256"), runs=found["runs"], msg=msg)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", required=True, choices=["incoming", "published", "query"]),
            run_id=dict(type="str"),
            keep=dict(type="int", default=0),
            lock_timeout=dict(type="float", default=60),
        ),
        required_if=[("state", "incoming", ["run_id"]), ("state", "published", ["run_id"])],
        supports_check_mode=True,
    )
    path = os.path.abspath(module.params["path"])
    state = module.params["state"]
    if module.params["keep"] < 0:
        module.fail_json(msg="keep must be 0 (keep every run) or a positive number of runs, got %d"
                         % module.params["keep"])
    try:
        if state == "incoming":
            result = incoming(module, path, module.params["run_id"])
        elif state == "published":
            result = published(module, path, module.params["run_id"])
        else:
            result = query(path)
    except StoreError as error:
        module.fail_json(msg=str(error), path=path)
    except OSError as error:
        module.fail_json(msg="report store %s: %s (%s); check the store's filesystem and permissions"
                         % (path, error.strerror, error.filename or path), path=path)
    module.exit_json(path=path, **result)


if __name__ == "__main__":
    main()
