# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback diskproof.fleet.report: collect diskproof_results and host outcomes; the report pipeline judges them once."""
from __future__ import annotations

DOCUMENTATION = r"""
name: report
type: aggregate
short_description: Collect diskproof results and host outcomes; have the fleet judged once and the report files written
version_added: 0.1.0
description:
  - Collects, as tasks finish, every record of C(ansible_facts.diskproof_results) that
    M(diskproof.fleet.bench_run) returns (loop items included, and failed tasks that still return
    records), every host a play that measures disks targeted, and every failed or unreachable host with its
    task and message. It keeps each record's text in a temporary file, not in memory.
  - It has the fleet judged once, by the collection's report pipeline (the judge and the writers,
    docs/report.md) - when the report play at the end of validate.yml and acceptance.yml asks for it (the
    action M(diskproof.fleet.report) with O(diskproof.fleet.report#module:judge=true), which hands this
    callback the play's report settings and a file for its answer), or else at the end of the playbook.
  - The judgement is written to O(report_dir) - C(report.json), C(results.csv), C(junit.xml), C(report.md)
    and a self-contained C(report.html) - and shown as a table worst first. Nothing is written when the run
    produced no record and no host problem.
  - "Settings: the report play's C(diskproof_*) variables (docs/report.md, Settings: thresholds are
    percentages there, e.g. C(diskproof_outlier_percent=15)), which the action resolves with Ansible's
    own templating; without a report play, or for a setting no variable sets, this callback's options below
    (environment, C(ansible.cfg), default)."
  - A problem inside this callback is reported as a warning and disables the callback; it never
    fails the play.
requirements:
  - enable in configuration, for example C(callbacks_enabled = diskproof.fleet.report) in the
    C([defaults]) section of C(ansible.cfg).
extends_documentation_fragment:
  - diskproof.fleet.report_settings
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = diskproof.fleet.report
#
# [diskproof_report]
# report_dir = ./diskproof-report
# outlier_fraction = 0.20
# rules_file = acceptance.yml
# baseline_file = ./last-month/report.json
#
# or for one run:
#   ANSIBLE_CALLBACKS_ENABLED=diskproof.fleet.report DISKPROOF_REPORT_DIR=/tmp/rack6 \
#     ansible-playbook -i lab/inventory.yml playbooks/validate.yml
"""

import functools
import json
import os
from collections.abc import Mapping

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _report, _settings

COLLECTION_PREFIX = "diskproof.fleet."
# The action that asks for the judgement (and hands the play's report settings over): it measures nothing.
REPORT_ACTION = "diskproof.fleet.report"
# Console colour of a line (plugin_utils/_report.table_lines); Display drops it when stdout is not a terminal.
COLOURS = {None: None, _report.WARN: C.COLOR_WARN, _report.ERROR: C.COLOR_ERROR}
TASK_FAILED_PREFIX = "Task failed: "


def _guarded(handler):
    """Run an event handler; on any error warn once and disable the callback, never fail the play."""
    @functools.wraps(handler)
    def wrapper(self, *args, **kwargs):
        if self.disabled:
            return None
        try:
            return handler(self, *args, **kwargs)
        except Exception as exc:  # the one top-level guard: a report bug must not break a benchmark run
            self.disabled = True
            self._display.warning("%s disabled after an error in %s: %s: %s" % (self.CALLBACK_NAME, handler.__name__, type(exc).__name__, exc))
            return None
    return wrapper


# ---------------------------------------------------------------------------------------------
# task results
# ---------------------------------------------------------------------------------------------

def _records_in(result) -> list:
    """The diskproof_results records of one task or item result (the result's own dicts: read, never keep)."""
    facts = result._result.get("ansible_facts")
    if facts is None or not isinstance(facts, Mapping):
        return []
    records = facts.get("diskproof_results")
    if not isinstance(records, list):
        return []
    return [record for record in records if isinstance(record, Mapping)]


def _is_loop_summary(result) -> bool:
    """True for the final result of a looped task: its items were already reported one by one."""
    if not isinstance(result._result.get("results"), list):
        return False
    task = result._task
    return getattr(task, "loop", None) is not None or bool(getattr(task, "loop_with", None))


def _message_of(result) -> str:
    outcome = result._result
    if outcome.get("unreachable") and _is_loop_summary(result):
        # A host cut off inside a loop: the loop's "All items completed" hides why. Its last unreachable item says:
        # a fresh connection attempt (the item cut mid-run often has only "Data could not be sent ...: ").
        outcome = next((item for item in reversed(outcome["results"])
                        if isinstance(item, Mapping) and item.get("unreachable")), outcome)
    message = str(outcome.get("msg") or outcome.get("stderr") or "").strip()
    # ansible-core 2.19 prefixes unreachable messages with this; the status already says it.
    return message[len(TASK_FAILED_PREFIX):] if message.startswith(TASK_FAILED_PREFIX) else message


def _is_measuring_task(task) -> bool:
    """A task of this collection (its modules, or any task of its roles) but the report action: its play
    measures disks."""
    action = str(getattr(task, "resolved_action", None) or getattr(task, "action", "") or "")
    role = getattr(task, "_role", None)
    role_name = str(role.get_name()) if role is not None else ""
    if action in (REPORT_ACTION, "report"):
        return False
    return action.startswith(COLLECTION_PREFIX) or role_name.startswith(COLLECTION_PREFIX)


class CallbackModule(CallbackBase):
    """Collects diskproof_results records and host outcomes; the report pipeline judges and writes them once."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "diskproof.fleet.report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, options=None):
        self._variables: dict = {}  # the report's variables, as the action diskproof.fleet.report handed them over
        self._reported: tuple | None = None  # the collection's size when it was judged
        self._play: dict | None = None  # the running play: its hosts, whether it measures, deferred outcomes
        self._collection = _report.Collection(_report.RecordSpool())
        self._inventory_size = None
        self._playbook = None
        self._started = _report.utc_now()
        super().__init__(display=display, options=options)

    @_guarded
    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        # Bad option values (env, ini) stop the callback here, with the option named.
        _settings.judge_settings(_settings.resolve({}, self.get_option)[0])

    # -- collecting ------------------------------------------------------------------------

    def _add_records(self, result) -> bool:
        records = _records_in(result)
        if records:
            self._collection.add_records(result._host.get_name(), records)
            if self._play is not None:
                self._play["measuring"] = True
        return bool(records)

    def _defer(self, host: str, status: str, problem: dict | None = None) -> None:
        """A host outcome, kept until the play ends: it counts only if the play measured disks."""
        if self._play is None:
            self._collection.mark(host, status, problem)
        else:
            self._play["outcomes"].append((host, status, problem))

    def _add_problem(self, result, status: str) -> None:
        problem = {"task": result._task.get_name(), "status": status, "message": _message_of(result)}
        self._defer(result._host.get_name(), status, problem)

    def _failed(self, result) -> None:
        # A failure that still returned records is judged through those records (verdict error).
        if self._add_records(result):
            self._collection.mark(result._host.get_name(), _aggregate.HOST_FAILED)
        else:
            self._add_problem(result, _aggregate.HOST_FAILED)

    def _end_play(self) -> None:
        """Every host of a play that measured disks appears in the report, even if it never
        answered; plays that only judge or publish (the report play) leave no trace."""
        play, self._play = self._play, None
        if play is None or not play["measuring"]:
            return
        for host in play["hosts"]:
            self._collection.host(host)
        for host, status, problem in play["outcomes"]:
            self._collection.mark(host, status, problem)

    # -- events ----------------------------------------------------------------------------

    @_guarded
    def v2_playbook_on_start(self, playbook):
        self._started = _report.utc_now()
        self._playbook = os.path.basename(playbook._file_name)

    @_guarded
    def v2_playbook_on_play_start(self, play):
        self._end_play()
        # Ansible's own view of the play: its hosts (--limit applied) and the whole inventory.
        variables = play.get_variable_manager().get_vars(play=play)
        self._play = {"hosts": list(variables["ansible_play_hosts_all"]), "measuring": False, "outcomes": []}
        self._inventory_size = len(variables["groups"]["all"])

    @_guarded
    def v2_playbook_on_task_start(self, task, is_conditional):
        # Once judged, what the report play and later plays do (the report store's tasks, a failing assert)
        # is no disk's result, unless records arrive.
        if self._play is not None and self._reported is None and _is_measuring_task(task):
            self._play["measuring"] = True

    @_guarded
    def v2_runner_on_ok(self, result):
        request = result._result.get(_report.REQUEST)
        if isinstance(request, Mapping):
            self._answer(request)
        elif not _is_loop_summary(result):
            self._add_records(result)

    @_guarded
    def v2_runner_item_on_ok(self, result):
        self._add_records(result)

    @_guarded
    def v2_runner_on_failed(self, result, ignore_errors=False):
        if _is_loop_summary(result):
            self._defer(result._host.get_name(), _aggregate.HOST_FAILED)
        else:
            self._failed(result)

    @_guarded
    def v2_runner_item_on_failed(self, result):
        # An item that could not connect is no failure of its own: the loop then ends with the host unreachable,
        # reported once with that item's connection error (_message_of).
        if not result._result.get("unreachable"):
            self._failed(result)

    @_guarded
    def v2_runner_on_unreachable(self, result):
        self._add_problem(result, _aggregate.HOST_UNREACHABLE)

    @_guarded
    def v2_playbook_on_stats(self, stats):
        self._end_play()
        try:
            if self._reported is not None and self._reported == self._collection.size():
                return  # judged already: nothing arrived since
            if self._collection.empty():
                self._display.display("diskproof fleet report: no diskproof_results in this run, nothing written")
                return
            self._report()
        finally:
            self._collection.records.close()

    # -- the judgement ---------------------------------------------------------------------

    def _answer(self, request: Mapping) -> None:
        """The action diskproof.fleet.report: the play's report settings; with a response file, this run
        judged now and the judgement written there for the report play to publish (playbooks/report.yml)."""
        self._variables = dict(request.get("variables") or {})
        if request.get("judged"):
            self._reported = self._collection.size()  # a merge judged its own record sets
        if not request.get("response"):
            return
        self._reported = self._collection.size()
        if self._collection.empty():
            self._display.display("diskproof fleet report: no diskproof_results in this run, nothing written")
            answer = _report.handoff(None, _report.read_inputs(self._variables, self.get_option)[0].report_dir)
        else:
            judgement = self._report()
            answer = _report.handoff(judgement, os.path.dirname(judgement.paths[0]))
        with open(request["response"], "w", encoding="utf-8") as stream:
            json.dump(answer, stream)

    def _report(self) -> _report.Judgement:
        """Judge, write every file, show the table."""
        inputs, warnings = _report.read_inputs(self._variables, self.get_option)
        for warning in warnings:
            self._display.warning("%s: %s" % (self.CALLBACK_NAME, warning))
        run = _report.run_metadata(self._started, self._playbook, ansible_version, self._inventory_size,
                                   len(self._collection.host_statuses))
        judgement = _report.judge_and_write(self._collection, inputs, run)
        self._show(_report.table_lines(judgement.report, judgement.listing))
        paths = judgement.paths
        self._display.display("report: %s (also %s)" % (paths[0], ", ".join(paths[1:])))
        copied_to = _report.copy_to_runner_artifacts(paths, os.environ.get(_report.RUNNER_ARTIFACTS_ENV))
        if copied_to:
            self._display.display("report: copied to the job's artifacts, %s" % copied_to)
        return judgement

    def _show(self, lines: list) -> None:
        """The console table; consecutive lines of one colour in one display call (Display colours each line)."""
        batch: list[str] = []
        colour = None
        for line, kind in lines:
            if batch and COLOURS[kind] != colour:
                self._display.display("\n".join(batch), color=colour)
                batch = []
            batch.append(line)
            colour = COLOURS[kind]
        if batch:
            self._display.display("\n".join(batch), color=colour)
