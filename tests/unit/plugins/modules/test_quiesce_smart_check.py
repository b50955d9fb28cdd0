# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quiesce module's SMART self-test check when smartctl never answers, as on a failing disk: it is stopped at
the disk-probe time limit and the check says so, instead of the quiesce waiting for ever. The smartctl is a
stand-in (conftest's hanging_programs: a shell script that sleeps; no disk here hangs); the limit is lowered from
60 s so the test is quick. The check runs on a real AnsibleModule; nothing is stopped or locked."""
from __future__ import annotations

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _proc
from ansible_collections.diskproof.fleet.plugins.modules import quiesce


def test_a_smartctl_that_never_answers_is_stopped_and_named(monkeypatch, hanging_programs):
    smartctl = hanging_programs("smartctl")["smartctl"]
    monkeypatch.setattr(_proc, "DISK_PROBE_TIMEOUT_S", 0.5)
    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    check = quiesce.Quiesce.__new__(quiesce.Quiesce)   # only the check: no state directory, lock or services
    check.module, check.warnings = module, []
    problems = []
    started = time.monotonic()
    report = check.smart_check(["sdq"], problems)
    assert time.monotonic() - started < 5
    assert report == {"disks": [{"in_progress": None, "remaining_percent": None, "protocol": None, "disk": "sdq",
                                 "smartctl_exit": None,
                                 "detail": "%s -j -c -l selftest /dev/sdq did not end within 0.5 s (it was stopped)"
                                           % smartctl}]}
    assert problems == []   # unknown is not "a self-test runs": the disk is not refused for it, but warned about
    assert check.warnings == ["SMART self-test check of /dev/sdq: " + report["disks"][0]["detail"]]
