# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action diskproof.fleet.report: the report's inputs checked with the play's variables, this run judged by the
report callback, or record sets judged here (docs in plugins/modules/report.py; the pipeline is
plugins/plugin_utils/_report.py)."""
from __future__ import annotations

import os
import shutil
import tempfile

from ansible.plugins.action import ActionBase
from ansible.release import __version__ as ansible_version
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _record_sets, _report, _report_inputs
from ansible_collections.diskproof.fleet.plugins.plugin_utils._callback_options import CALLBACK, callback_option
ARGUMENT_SPEC = {
    "judge": {"type": "bool", "default": False},
    "record_sets": {"type": "list", "elements": "raw"},
    "record_sets_max_bytes": {"type": "int", "default": _record_sets.RECORD_SET_MAX_BYTES},
    "discard": {"type": "path"},
}
RESPONSE_NAME = "judgement.json"
RESPONSE_PREFIX = "diskproof-judgement-"


def response_directory(response: str) -> str | None:
    """The private directory judge=true made for response, or None when response is no path it hands out: only such
    a directory may be removed by discard (never a path a variable could point elsewhere)."""
    directory = os.path.dirname(os.path.abspath(response))
    if (os.path.basename(response) != RESPONSE_NAME or not os.path.basename(directory).startswith(RESPONSE_PREFIX)
            or os.path.dirname(directory) != os.path.abspath(tempfile.gettempdir()) or os.path.islink(directory)):
        return None
    return directory


def flattened(specs):
    """Lists of lists (a variable per slice, each a path or a list of them) as one list, in order."""
    found = []
    for spec in specs:
        found.extend(flattened(spec) if isinstance(spec, (list, tuple)) else [spec])
    return found


class ActionModule(ActionBase):
    """Check the report's inputs (and hand them to the report callback), or have the fleet judged."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _args, options = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if options["discard"] is not None:
            # The report play's cleanup: here, not a file module run on the controller (~1 CPU-s of Python start).
            directory = response_directory(options["discard"])
            if directory is None:
                result.update(failed=True, msg="discard: %s is no judgement this action handed out (%s in a %s* "
                              "directory of %s); nothing removed" % (options["discard"], RESPONSE_NAME, RESPONSE_PREFIX,
                                                                     tempfile.gettempdir()))
                return result
            result.update(changed=os.path.isdir(directory), removed=directory)
            shutil.rmtree(directory, ignore_errors=True)
            return result
        task_vars = task_vars or {}
        variables = _report_inputs.report_variables(task_vars, self._templar.template)
        request = {"variables": variables, "inventory_size": len((task_vars.get("groups") or {}).get("all") or [])}
        if not options["judge"]:
            summary, problems = _report_inputs.check_play(variables, callback_option)
            if problems:
                result.update(failed=True, msg="the report cannot use its inputs, nothing was run: %s" % " | ".join(problems))
                return result
            result.update(changed=False, inputs=summary, msg=summary)
            result[_report.REQUEST] = request
            return result
        if options["record_sets"] is None:
            # The report callback judges this run's records now and writes its judgement to response.
            response = os.path.join(tempfile.mkdtemp(prefix=RESPONSE_PREFIX), RESPONSE_NAME)
            result.update(changed=False, response=response)
            result[_report.REQUEST] = dict(request, response=response)
            return result
        try:
            collection, record_sets = _record_sets.read_record_sets(
                _record_sets.record_set_files(flattened(options["record_sets"])), _report.collection_version(),
                options["record_sets_max_bytes"])
        except _record_sets.RecordSetError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        inputs, warnings = _report.read_inputs(variables, callback_option)
        hosts = len(collection.host_statuses)
        run = _report.run_metadata(_report.utc_now(), os.path.basename(self._task.get_path().rpartition(":")[0]) or None,
                                   ansible_version, hosts, hosts)
        judgement = _report.judge_and_write(collection, inputs, run)
        # The report callback leaves this judgement be: it collected none of these records.
        result[_report.REQUEST] = dict(request, judged=True)
        result.update(changed=False, judgement=dict(_report.handoff(judgement, inputs.report_dir), record_sets=record_sets),
                      table=[line for line, _colour in _report.table_lines(judgement.report, judgement.listing)],
                      warnings=["%s: %s" % (CALLBACK, warning) for warning in warnings])
        return result
