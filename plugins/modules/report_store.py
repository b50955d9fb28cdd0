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
    C(diskproof.fleet.report_store) drives it; docs/report-store.md of the collection describes the store and its
    threat model.
  - The store is checked like the quiesce state directory - not a symbolic link, owned by the user the module runs
    as, writable by nobody else, below parents only root or that user can change - and so is its upload directory
    C(.incoming). Both are opened once without following links and every name in them is reached through those
    descriptors; every run id read back from disk (C(index.json), a pointer) is checked as a new one is.
  - O(state=incoming) checks the store (created when missing and its parent exists; refused, saying what to do,
    when it cannot be used) and makes the new, empty C(<path>/.incoming/<run_id>.tmp) for the run's files. Refused
    when the store already holds O(run_id).
  - O(state=published) checks the files against O(sums) (the controller's C(SHA256SUMS)), writes C(SHA256SUMS) and
    O(signature) (as C(SHA256SUMS.hmac)) into that directory, renames it to C(<path>/<run_id>), adds the run to
    C(index.json) and C(index.csv), points C(latest) at it and, when it is signed, its C(report.json) says
    C(summary.passed) and O(scope) is V(full) or V(merge), C(last-pass) too (symlinks replaced in one rename), and
    removes the oldest runs beyond O(keep). All of it under an exclusive C(flock) on C(<path>/.lock), so jobs
    publishing at the same time (sliced jobs) take turns. A failure leaves every earlier run, the pointers and
    the index as they were; an existing run directory is never replaced.
  - O(state=query) returns the run C(last-pass) names - refused unless C(index.json) says it passed and judged the
    whole fleet, its C(report.json) checked against its C(SHA256SUMS) - with the C(SHA256SUMS) and signature texts
    the controller checks the signature with; null when no run is the baseline yet. With O(run_id), that run.
  - O(state=picked) writes O(signature) (made on the controller for O(run_id)) and points C(last-pass) at the run,
    after checking that it passed, is not partial and that every file matches its C(SHA256SUMS)
    (C(playbooks/store_pick.yml)).
  - The module never sees the store key; it cannot check a signature, only that it names this run, its scope, its
    verdict and its C(SHA256SUMS). The controller checks it (M(diskproof.fleet.store_signature)).
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
        baseline run; V(picked) makes a run the baseline.
    type: str
    choices: [incoming, published, query, picked]
    required: true
  run_id:
    description:
      - The run's directory name - letters, digits, C(.), C(_), C(-), starting with a letter or digit, at most 128
        characters, none of the store's own names (C(latest), C(last-pass), C(index.json), C(index.csv)).
      - Required with O(state=incoming), O(state=published) and O(state=picked); with O(state=query), the run to read
        instead of the one C(last-pass) names.
    type: str
  scope:
    description:
      - With O(state=published) - what the run judged. V(full) every host its playbook targets, V(merge) the record
        sets of a merge, V(partial) part of the fleet (a slice, a C(--limit) run). A partial run never becomes
        C(last-pass), and retention keeps it until a merge names it (O(merged)) or it is 7 days old.
    type: str
    choices: [full, partial, merge]
    default: full
  sums:
    description:
      - With O(state=published) - the C(SHA256SUMS) text the controller computed over the run's files before the
        copy; the publish is refused when the copied files do not match it. Omitted - the module computes it alone.
    type: str
  signature:
    description:
      - With O(state=published) or O(state=picked) - the C(SHA256SUMS.hmac) text the controller made with the store
        key (M(diskproof.fleet.store_signature)). A run published without one is kept but never becomes C(last-pass).
    type: str
  merged:
    description:
      - With O(state=published) and O(scope=merge) - the sha256 of each record set the merge read; the partial runs
        whose C(report.json) they are no longer count as waiting for a merge.
    type: list
    elements: str
    default: []
  keep:
    description:
      - With O(state=published) - keep at most this many runs, removing the oldest first; the runs C(latest) and
        C(last-pass) name, and partial runs a merge has not read yet, are never removed. V(0) keeps every run.
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
    details: O(state=incoming), O(state=published) and O(state=picked) report what they would do and change nothing.
notes:
  - Needs a filesystem with C(flock) and atomic C(rename) (local filesystems, NFS v4).
seealso:
  - name: The report store
    description: docs/report-store.md of the collection - layout, pointers, index, retention, remote store, threat model.
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

- name: Publish the run (a full run, signed on the controller by diskproof.fleet.store_signature)
  diskproof.fleet.report_store:
    path: /srv/diskproof-reports
    state: published
    run_id: 20261126T030000Z-awx4711
    scope: full
    sums: "{{ sealed.sums }}"
    signature: "{{ sealed.signature }}"
    keep: 90

- name: The baseline run (last-pass) and its report.json, on a file server
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
  returned: O(state=incoming), O(state=published) or O(state=picked)
  type: str
  sample: 20261126T030000Z-awx4711
incoming:
  description: The directory to copy the run's files into.
  returned: O(state=incoming)
  type: str
  sample: /srv/diskproof-reports/.incoming/20261126T030000Z-awx4711.tmp
run_dir:
  description: The run's directory in the store.
  returned: O(state=published), and O(state=query) when there is a baseline run
  type: str
  sample: /srv/diskproof-reports/20261126T030000Z-awx4711
entry:
  description: The run's C(index.json) entry.
  returned: O(state=published) (not in check mode), O(state=query) and O(state=picked)
  type: dict
  sample:
    run_id: 20261126T030000Z-awx4711
    time: "2026-11-26T03:04:10Z"
    published: "2026-11-26T03:04:12Z"
    playbook: acceptance.yml
    passed: true
    total: 18
    counts: {pass: 18, outlier: 0, error: 0, not_measured: 0}
    scope: full
    signed: true
    report_sha256: 9f2c0d3e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0
    hosts: [rack6-n01, rack6-n02]
    path: /srv/diskproof-reports/20261126T030000Z-awx4711
latest:
  description: The run C(latest) names (after a publish - this run), null when none.
  returned: O(state=published) or O(state=query)
  type: str
  sample: 20261126T030000Z-awx4711
last_pass:
  description: The run C(last-pass) names, null when no run is the baseline yet.
  returned: O(state=published), O(state=query) or O(state=picked)
  type: str
  sample: 20261125T030000Z-awx4650
report_json:
  description: The C(report.json) of the run C(last-pass) names (in its run directory), null when no run passed.
  returned: O(state=query)
  type: str
  sample: /srv/diskproof-reports/20261125T030000Z-awx4650/report.json
sums:
  description: That run's C(SHA256SUMS) text, null without a baseline run.
  returned: O(state=query)
  type: str
  sample: "9f2c0d3e4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0  report.json\n"
signature:
  description: That run's C(SHA256SUMS.hmac) text, null when it has none (unsigned) or there is no baseline run.
  returned: O(state=query)
  type: str
  sample: "diskproof-store-signature: 1\nrun_id: 20261125T030000Z-awx4650\n..."
hosts_missing:
  description:
    - Hosts another passing run of the whole fleet measured but the baseline run did not, with the newest such run;
      their disks have no baseline although the store judged them before.
  returned: O(state=query)
  type: dict
  sample: {rack6-n07: 20261120T030000Z-awx4400}
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
    params = module.params
    run_dir = "%s/%s" % (path.rstrip("/"), _store.check_run_id(run_id))
    if module.check_mode:
        return dict(changed=True, run_id=run_id, run_dir=run_dir, msg="would publish run %s" % run_id)
    done = _store.publish(path, run_id, keep=params["keep"], lock_timeout=params["lock_timeout"],
                          scope=params["scope"], sums=params["sums"], signature=params["signature"] or None,
                          merged=params["merged"])
    for warning in done["warnings"]:
        module.warn(warning)
    entry = done["entry"]
    if _store.is_baseline(entry):
        moved = "latest and last-pass point to it"
    else:
        why = ("it did not pass" if not entry["passed"] else "it is unsigned" if not entry["signed"]
               else "it is a partial run")
        moved = "latest points to it; last-pass stays on %s (%s)" % (done["last_pass"] or "no run", why)
    msg = "published run %s (%s, %s, %s); %s" % (run_id, "passed" if entry["passed"] else "did not pass",
                                                 entry["scope"], "signed" if entry["signed"] else "unsigned", moved)
    if done["pruned"]:
        msg += "; removed %d old run(s) (keep %d)" % (len(done["pruned"]), params["keep"])
    return dict(changed=True, run_id=run_id, run_dir=done["run_dir"], entry=entry, latest=done["latest"],
                last_pass=done["last_pass"], pruned=done["pruned"], msg=msg)


def query(module: AnsibleModule, path: str) -> dict:
    found = _store.query(path, module.params["run_id"])
    for warning in found["warnings"]:
        module.warn(warning)
    chosen = found["last_pass"] or {}
    if module.params["run_id"] is not None:
        msg = "run %s" % chosen["run_id"]
    else:
        msg = ("baseline run (last-pass) %s" % chosen["run_id"]) if chosen else "no run in the store is a baseline yet"
    return dict(changed=False, latest=found["latest"], last_pass=chosen.get("run_id"), run_dir=chosen.get("run_dir"),
                report_json=chosen.get("report_json"), sha256=chosen.get("sha256"), sums=chosen.get("sums"),
                signature=chosen.get("signature"), entry=chosen.get("entry"),
                hosts_missing=chosen.get("hosts_missing", {}), runs=found["runs"], msg=msg)


def picked(module: AnsibleModule, path: str, run_id: str) -> dict:
    if module.check_mode:
        return dict(changed=True, run_id=run_id, msg="would make run %s the baseline (last-pass)" % run_id)
    done = _store.pick(path, run_id, module.params["signature"], lock_timeout=module.params["lock_timeout"])
    for warning in done["warnings"]:
        module.warn(warning)
    return dict(changed=True, run_id=run_id, last_pass=run_id, entry=done["entry"],
                msg="run %s signed and made the baseline: last-pass points to it (it pointed to %s)"
                % (run_id, done["previous"] or "no run"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", required=True, choices=["incoming", "published", "query", "picked"]),
            run_id=dict(type="str"),
            scope=dict(type="str", default="full", choices=list(_store.SCOPES)),
            sums=dict(type="str"),
            signature=dict(type="str"),
            merged=dict(type="list", elements="str", default=[]),
            keep=dict(type="int", default=0),
            lock_timeout=dict(type="float", default=60),
        ),
        required_if=[("state", "incoming", ["run_id"]), ("state", "published", ["run_id"]),
                     ("state", "picked", ["run_id", "signature"])],
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
        elif state == "picked":
            result = picked(module, path, module.params["run_id"])
        else:
            result = query(module, path)
    except StoreError as error:
        module.fail_json(msg=str(error), path=path)
    except OSError as error:
        module.fail_json(msg="report store %s: %s (%s); check the store's filesystem and permissions"
                         % (path, error.strerror, error.filename or path), path=path)
    module.exit_json(path=path, **result)


if __name__ == "__main__":
    main()
