# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records what the collection's modules answered on a real host, for benchmarks/controller_scale.py (not part of the
collection): the connection plugin diskproof_replay then gives those answers to any number of simulated hosts, so
the controller's CPU per host can be measured without the hosts.

Writes JSON to $REPLAY_RECORD_FILE: per host, in order, each call of a module of this collection that ran on it -
the module's name, the arguments it got (its `invocation`) and the result it returned, with the keys Ansible adds
on the controller (loop item, labels, internal keys) left out.
"""
from __future__ import annotations

DOCUMENTATION = """
name: replay_record
type: aggregate
short_description: record the collection's module results, for benchmarks/controller_scale.py
description:
  - Writes every result of a diskproof.fleet module that ran on a host to $REPLAY_RECORD_FILE (JSON).
"""

import json
import os

from ansible.plugins.callback import CallbackBase

# Keys of a result that Ansible adds on the controller, not the module: they are not replayed.
CONTROLLER_KEYS = ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop", "_ansible_item_label",
                   "_ansible_no_log", "_ansible_verbose_always", "_ansible_verbose_override", "_ansible_delegated_vars")


def module_result(result: dict) -> dict:
    """The result as the module printed it: the controller's own keys (and any loop index variable) removed."""
    index_var = result.get("ansible_index_var")
    return {key: value for key, value in result.items()
            if key not in CONTROLLER_KEYS and key != index_var and not key.startswith("_ansible")}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "replay_record"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = {}

    def _keep(self, result):
        action = str(getattr(result._task, "resolved_action", None) or result._task.action)
        answer = result._result
        if not action.startswith("diskproof.fleet.") or "invocation" not in answer or answer.get("results"):
            return   # controller-side actions (report, lookups) and loop summaries have no module answer
        self.calls.setdefault(result._host.get_name(), []).append(
            {"module": action, "args": answer["invocation"].get("module_args") or {}, "result": module_result(answer)})

    v2_runner_on_ok = v2_runner_item_on_ok = _keep

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("REPLAY_RECORD_FILE")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(self.calls, handle)
