# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action diskproof.fleet.store_signature: the report store's signatures, made and checked on the controller with a
key the store host never sees (docs in plugins/modules/store_signature.py; the logic in
plugins/plugin_utils/_baseline_trust.py)."""
from __future__ import annotations

import os

from ansible.plugins.action import ActionBase
from ansible_collections.diskproof.fleet.plugins.module_utils import _store
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _baseline_trust

ARGUMENT_SPEC = {
    "operation": {"type": "str", "required": True, "choices": ["seal", "verify", "sign"]},
    "report_dir": {"type": "path"},
    "run_id": {"type": "str"},
    "scope": {"type": "str", "default": "full", "choices": list(_store.SCOPES)},
    "found": {"type": "dict"},
    "copy": {"type": "path"},
    "store": {"type": "str", "default": ""},
    "store_host": {"type": "str", "default": "localhost"},
}
REQUIRED = {"seal": ("report_dir", "run_id"), "verify": ("found", "copy"), "sign": ("found", "copy")}


class ActionModule(ActionBase):
    """Seal a report directory (SHA256SUMS and its signature), verify a baseline, or sign a run for store_pick."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def _key(self, task_vars):
        """The store key from the play's variables (templated here, on the controller) or the environment."""
        names = (_baseline_trust.KEY_VARIABLE, _baseline_trust.KEY_FILE_VARIABLE)
        variables = {name: self._templar.template(task_vars[name]) for name in names if name in task_vars}
        return _baseline_trust.store_key(variables, os.environ)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _args, options = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        operation = options["operation"]
        missing = [name for name in REQUIRED[operation] if options[name] in (None, "")]
        if missing:
            result.update(failed=True, msg="operation %s needs %s" % (operation, ", ".join(missing)))
            return result
        try:
            key = self._key(task_vars or {})
            if operation == "seal":
                sealed = _baseline_trust.seal(key[0] if key else None, options["report_dir"], options["run_id"],
                                              options["scope"])
                result.update(sealed, changed=False)
                if key is None:
                    result["warnings"] = [
                        "no store key on this controller: run %s is published without a signature, kept in the store "
                        "but never made the baseline (last-pass); %s" % (options["run_id"], _baseline_trust.KEY_ADVICE)]
                    result["msg"] = "checksummed %s (unsigned)" % options["report_dir"]
                else:
                    result["msg"] = "checksummed and signed %s with the store key from %s" % (
                        options["report_dir"], key[1])
            elif operation == "verify":
                carried = _baseline_trust.verify_baseline(key, options["found"], options["copy"], options["store"],
                                                          options["store_host"])
                result.update(changed=False, store_baseline=carried,
                              msg="baseline run %s: signature, SHA256SUMS and report.json verified (key id %s)"
                              % (carried["run_id"], carried["key_id"]))
            else:
                result.update(changed=False, signature=_baseline_trust.sign_run(key, options["found"], options["copy"]),
                              msg="signed run %s" % options["found"]["run_id"])
        except (_baseline_trust.TrustError, _store.StoreError) as error:
            result.update(failed=True, msg=str(error))
        return result
