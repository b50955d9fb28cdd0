# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action diskproof.fleet.replay_records: one host's records and outcome from a record set (docs in
plugins/modules/replay_records.py). Controller only: the host is not contacted."""
from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _record_sets


class ActionModule(ActionBase):
    """Returns the host's records as bench_facts did, and its original failure or unreachability."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _args, options = self.validate_argument_spec(argument_spec={"record_set": {"type": "dict", "required": True}})
        host = (task_vars or {})["inventory_hostname"]
        entry = options["record_set"]
        try:
            _record_sets.check_host_entry(entry, str(host))
            replay = _record_sets.replay_result(entry, _record_sets.host_records(entry))
        except _record_sets.RecordSetError as exc:
            result.update(failed=True, msg="cannot replay %s: %s" % (host, exc))
            return result
        result.update(replay)
        return result
