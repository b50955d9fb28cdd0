# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tool output to result records, as a task returns them: what bench_facts (parse captured output)
and bench_run (_run.py: the output of each run) share.

- ``TaskFailed``: fail the task with a message and result keys, raised so every cleanup runs first;
  ``finish`` turns it into fail_json and anything else into exit_json, with ``elapsed_s``.
- ``record_options()``: the options that label and parse records (tool, test, target, params,
  direction, fail_on_error), one spec for both modules.
- ``parse_results`` / ``failure_message``: parse text, say what failed in the tool's own words.
- ``parse_only``: bench_facts' task - content= or src= parsed, nothing run, nothing written.

No Ansible imports: ``module`` is the AnsibleModule (params, warn, run_command, get_bin_path).
"""

from __future__ import annotations

import copy
import os
import shlex
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._blockdev import whole_disk_name
from ._input_file import InputFileError, read_regular_file
from ._parse.detect import tool_from_argv
from ._parse.registry import TOOLS as PARSED_TOOLS
from ._parse.records import (
    ParseError,
    apply_exit_code,
    error_result,
    make_record,
    parse_output,
    sha256_hex,
    tool_errors,
)

TOOLS = ["auto"] + list(PARSED_TOOLS)

# Options of both modules: which tool, and how the records are labelled and judged.
_RECORD_OPTIONS: Dict[str, Dict[str, Any]] = dict(
    tool=dict(type="str", default="auto", choices=TOOLS),
    test=dict(type="str"),
    target=dict(type="dict"),
    params=dict(type="dict"),
    direction=dict(type="str", choices=["read", "write", "copy"]),
    fail_on_error=dict(type="bool", default=True),
)


def record_options() -> Dict[str, Dict[str, Any]]:
    """A fresh copy of the record options' argument spec (a module may change the spec it is given)."""
    return copy.deepcopy(_RECORD_OPTIONS)


class NotRun(Exception):
    """The job runs nothing and says why (a burn-in cycle past its budget, or after its burn-in stopped): the task
    is skipped, without a record; ``told`` when an earlier job said so already (no warning again)."""

    def __init__(self, reason: str, told: bool = False) -> None:
        super().__init__(reason)
        self.told = told


class TaskFailed(Exception):
    """Fail the task with msg and the extra result keys; raised so every cleanup runs first."""

    def __init__(self, msg: str, **result: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.result = result


def finish(module: Any, started: float, task: Callable[[], Dict[str, Any]]) -> None:
    """Run the task and end the module: exit_json with its result, or fail_json on TaskFailed; both
    with elapsed_s (seconds since started, time.monotonic)."""
    try:
        result = task()
    except TaskFailed as failure:
        failure.result.setdefault("created", [])
        module.fail_json(msg=failure.msg, elapsed_s=round(time.monotonic() - started, 6), **failure.result)
    module.exit_json(elapsed_s=round(time.monotonic() - started, 6), **result)


def complete_target(target: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The caller's target dict plus the whole-disk device holding target.path (unless given)."""
    completed = dict(target or {})
    if "device" not in completed:
        path = completed.get("path")
        completed["device"] = whole_disk_name(path) if isinstance(path, str) and path else None
    return completed


def describe_source(params: Mapping[str, Any], command: Optional[Sequence[str]], rc: Optional[int]) -> str:
    if command is not None:
        return "command: %s (exit code %s)" % (shlex.join(command), rc)
    if params.get("src") is not None:
        return "parsed from src=%s" % params["src"]
    return "parsed from content="


def tool_name(params: Mapping[str, Any], argv: Sequence[str]) -> str:
    """The tool of an argv run when the output cannot tell (tool=auto): from argv[0]."""
    if params["tool"] != "auto":
        return params["tool"]
    return tool_from_argv(argv) or os.path.basename(argv[0])


def parse_results(params: Mapping[str, Any], text: str, argv: Optional[Sequence[str]] = None,
                  rc: Optional[int] = None, tool: Optional[str] = None,
                  direction: Optional[str] = None) -> Tuple[str, List[Dict[str, Any]]]:
    """(tool, partial records); a failed run with unparseable output still gives one error record."""
    try:
        return parse_output(text, tool or params["tool"], direction or params["direction"], argv)
    except ParseError as error:
        if argv is not None and rc != 0:
            name = tool or tool_name(params, argv)
            return name, [error_result(name, error)]
        raise TaskFailed("%s; %s" % (error, describe_source(params, argv, rc)))


def failure_message(params: Mapping[str, Any], tool: str, records: Sequence[Mapping[str, Any]],
                    command: Optional[Sequence[str]], rc: Optional[int]) -> Optional[str]:
    """None when the tool succeeded, else what failed, the tool's own words and the command."""
    errors = tool_errors(records, rc)
    if not errors:
        return None
    if command is None:
        return "%s reported an error: %s; %s" % (tool, " | ".join(errors), describe_source(params, None, None))
    # rc None: it never ended on its own (the stall watch stopped it)
    ended = "did not end" if rc is None else "failed (exit code %s)" % rc
    return "%s %s: %s; command: %s" % (tool, ended, " | ".join(errors), shlex.join(command))


def read_input(params: Mapping[str, Any]) -> bytes:
    """Raw bytes of content= or src= (a regular file of at most src_max_bytes, see _input_file)."""
    if params["content"] is not None:
        return params["content"].encode("utf-8", "surrogateescape")
    try:
        return read_regular_file(params["src"], params["src_max_bytes"])
    except InputFileError as error:
        raise TaskFailed(str(error), created=[])


def parse_only(params: Mapping[str, Any]) -> Dict[str, Any]:
    """content= or src=: parse; nothing is run or written."""
    target = complete_target(params["target"])
    raw = read_input(params)
    text = raw.decode("utf-8", "replace")
    tool, results = parse_results(params, text)
    records = [make_record(result, test=params["test"], target=target, params=params["params"],
                           raw_sha256=sha256_hex(raw)) for result in results]
    apply_exit_code(records, None, text)
    facts = {"diskproof_results": records}
    message = failure_message(params, tool, records, None, None)
    if message and params["fail_on_error"]:
        raise TaskFailed(message, created=[], ansible_facts=facts)
    return dict(changed=False, created=[], ansible_facts=facts)
