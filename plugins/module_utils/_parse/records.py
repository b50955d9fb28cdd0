# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsed benchmark tool output (the tools of registry.py, one module each in this package) mapped to result
records (schema 1): each parser makes partial records (``partial_result``), this module dispatches to it and
completes them (``make_record``).

No Ansible imports: bench_facts and bench_run call parse_output() and make_record(); everything here is
reachable from pytest without Ansible. The one exception raised is errors.ParseError.

    tool, results = parse_output(text, tool="auto", direction=None, argv=None)
    records = [make_record(result, test="dd_seq_write", target={...}, params={...}) for result in results]
"""

from __future__ import annotations

import hashlib
import signal
from typing import Any, Dict, List, Optional, Tuple

from .errors import ParseError

__all__ = [
    "ParseError", "SCHEMA", "parse_output", "make_record", "empty_metrics", "sha256_hex",
    "join_output", "error_result", "apply_exit_code", "tool_errors", "partial_result", "latency_ns", "job_ident",
]

SCHEMA = 1


def empty_metrics() -> Dict[str, Any]:
    return {
        "read_bytes_per_s": None,
        "write_bytes_per_s": None,
        "read_iops": None,
        "write_iops": None,
        "fsyncs_per_s": None,
        "latency_ns": {"read": None, "write": None, "sync": None},
    }


def partial_result(tool: str, version: Optional[str], job: Dict[str, Any]) -> Dict[str, Any]:
    """A partial record of a tool's run or job: no figure yet, the parser fills them."""
    return {
        "tool": tool,
        "tool_version": version,
        "job": job,
        "metrics": empty_metrics(),
        "bytes": None,
        "seconds": None,
        "warnings": [],
        "error": None,
    }


LATENCY_KEYS = ("mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev")
# The percentiles a record keeps (a tool's own table may hold more): the tail up to 99.99, which fio's default
# percentile_list ends on, so a latency rule (docs/report.md) can name it.
PERCENTILE_KEYS = ((50.0, "p50"), (95.0, "p95"), (99.0, "p99"), (99.9, "p99_9"), (99.99, "p99_99"))


def latency_ns(**figures: Optional[float]) -> Dict[str, Optional[float]]:
    """One direction's latency in ns: every key of LATENCY_KEYS, in that order, null unless given."""
    unknown = set(figures) - set(LATENCY_KEYS)
    if unknown:
        raise TypeError("unknown latency keys: %s" % ", ".join(sorted(unknown)))
    return {key: figures.get(key) for key in LATENCY_KEYS}


def job_ident(name: Optional[str], index: int) -> Dict[str, Any]:
    return {"name": name, "index": index, "groupid": None, "client": None}


def resolve_tool(tool: str, text: str, argv: Optional[List[str]] = None) -> str:
    """The tool whose output text is: as given, else from argv[0], else from the text."""
    from .detect import detect_tool, tool_from_argv
    from .registry import BY_TOOL
    if tool in BY_TOOL:
        return tool
    return tool_from_argv(argv) or detect_tool(text)


def parse_output(
    text: str, tool: str = "auto", direction: Optional[str] = None, argv: Optional[List[str]] = None
) -> Tuple[str, List[Dict[str, Any]]]:
    """(tool, partial records) for every run/job in text, by the tool's own parser (registry.py). ParseError for
    anything not exact."""
    from .registry import BY_TOOL
    tool = resolve_tool(tool, text, argv)
    return tool, BY_TOOL[tool].load().records(text, direction, argv)


def make_record(
    result: Dict[str, Any],
    test: Optional[str] = None,
    target: Optional[Dict[str, Any]] = None,
    params: Optional[Dict[str, Any]] = None,
    started: Optional[str] = None,
    finished: Optional[str] = None,
    command: Optional[List[str]] = None,
    exit_code: Optional[int] = None,
    raw_sha256: Optional[str] = None,
    device_io: Optional[Dict[str, int]] = None,
    tool_version: Optional[str] = None,
) -> Dict[str, Any]:
    """A schema-1 result record (docs/architecture.md) from a partial record and the run context."""
    return {
        "schema": SCHEMA,
        "test": test or result["tool"],
        "tool": result["tool"],
        "tool_version": result["tool_version"] or tool_version,
        "target": dict(target or {}),
        "params": dict(params or {}),
        "job": dict(result["job"]),
        "metrics": result["metrics"],
        "bytes": result["bytes"],
        "seconds": result["seconds"],
        "started": started,
        "finished": finished,
        "command": None if command is None else list(command),
        "exit_code": exit_code,
        "raw_sha256": raw_sha256,
        "device_io": device_io,
        "warnings": list(result["warnings"]),
        "error": result["error"],
        # a verify job's (fio verify=): what read back as written, and every block that did not; else null
        "integrity": result.get("integrity"),
    }


def join_output(stdout: bytes, stderr: bytes) -> bytes:
    """The raw text of a run: stdout then stderr, a line break between them when stdout lacks one."""
    if stdout and stderr and not stdout.endswith(b"\n"):
        return stdout + b"\n" + stderr
    return stdout + stderr


def error_result(tool: str, error: ParseError) -> Dict[str, Any]:
    """The one partial record of a run that failed (non-zero exit) and printed nothing parseable:
    the error is the tool's own message as the parser quoted it."""
    result = partial_result(tool, None, {"name": None, "index": 0, "groupid": None, "client": None})
    result["warnings"].append("output not parseable: %s" % error)
    result["error"] = error.line or str(error)
    return result


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def describe_signal(exit_code: int) -> str:
    """'killed by signal 9 (SIGKILL)' for the negative exit code subprocess reports for a signal."""
    try:
        name = signal.Signals(-exit_code).name
    except ValueError:
        name = "unknown signal"
    return "killed by signal %d (%s)" % (-exit_code, name)


def apply_exit_code(records: List[Dict[str, Any]], exit_code: Optional[int], text: str) -> None:
    """A non-zero exit with no record carrying an error marks every record failed with the last output line.

    A tool killed by a signal says so first, whatever its partial output made of the records.
    """
    if exit_code is not None and exit_code < 0:
        for record in records:
            record["error"] = describe_signal(exit_code) + ("; " + record["error"] if record["error"] else "")
        return
    if not exit_code or any(record["error"] for record in records):
        return
    for record in records:
        record["error"] = "exit code %d: %s" % (exit_code, _last_line(text))


def tool_errors(records: List[Dict[str, Any]], exit_code: Optional[int]) -> List[str]:
    """The distinct error messages of a run, in order; empty when the tool succeeded."""
    errors = list(dict.fromkeys(record["error"] for record in records if record["error"]))
    if exit_code and not errors:
        errors = ["exit code %d" % exit_code]
    return errors


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
