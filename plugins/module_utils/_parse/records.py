# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsed benchmark tool output (dd, fio, sysbench, bonnie++, ioping; one module each in this
package) mapped to result records (schema 1).

No Ansible imports: bench_facts and bench_run call parse_output() and make_record(); everything here is
reachable from pytest without Ansible. The one exception raised is errors.ParseError.

    tool, results = parse_output(text, tool="auto", direction=None, argv=None)
    records = [make_record(result, test="dd_seq_write", target={...}, params={...}) for result in results]
"""

from __future__ import annotations

import hashlib
import signal
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .detect import TOOLS, detect_tool, tool_from_argv
from .errors import ParseError

# Each tool's parser is imported where its output is parsed: a bench_run call parses one tool, and every
# module start compiles what it imports (about 7 ms per parser on a lab host, docs/benchmarks.md).
if TYPE_CHECKING:
    from . import bonnie, dd, fio, ioping, sysbench

__all__ = [
    "ParseError", "SCHEMA", "parse_output", "make_record", "empty_metrics", "sha256_hex",
    "join_output", "error_result", "apply_exit_code", "tool_errors",
]

SCHEMA = 1
DD_DIRECTIONS = {"read": ("read",), "write": ("write",), "copy": ("read", "write")}


def empty_metrics() -> Dict[str, Any]:
    return {
        "read_bytes_per_s": None,
        "write_bytes_per_s": None,
        "read_iops": None,
        "write_iops": None,
        "fsyncs_per_s": None,
        "latency_ns": {"read": None, "write": None},
    }


def _result(tool: str, version: Optional[str], job: Dict[str, Any]) -> Dict[str, Any]:
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


def dd_result(run: dd.DdRun, direction: Optional[str], notes: Optional[List[str]] = None) -> Dict[str, Any]:
    """One dd run as a partial record; direction (read, write, copy) says which rate it fills. The rate is
    always kept as metrics.transfer_bytes_per_s too, so a run of unknown direction never loses its figure."""
    result = _result("dd", None, {"name": None, "index": run.index, "groupid": None, "client": None})
    result.update(bytes=run.bytes, seconds=run.seconds, error=run.error,
                  warnings=list(run.warnings) + list(notes or []))
    rate = run.bytes_per_s
    result["metrics"]["transfer_bytes_per_s"] = rate
    if rate is not None and direction not in DD_DIRECTIONS:
        result["warnings"].append(
            "dd direction unknown (read, write or copy): rate %.5g B/s kept as metrics.transfer_bytes_per_s only, "
            "which the report does not judge; parse again with direction=read|write|copy" % rate
        )
    for name in DD_DIRECTIONS.get(direction or "", ()):
        result["metrics"][name + "_bytes_per_s"] = rate
    return result


def fio_result(job: fio.FioJob) -> Dict[str, Any]:
    """One fio job as a partial record: both directions filled when the job did both."""
    ident = {"name": job.name, "index": job.index, "groupid": job.groupid, "client": job.client}
    result = _result("fio", job.tool_version, ident)
    result.update(bytes=job.bytes, seconds=job.seconds, error=job.error, warnings=list(job.warnings))
    metrics = result["metrics"]
    for name in ("read", "write"):
        found = getattr(job, name)
        if found is not None:
            metrics[name + "_bytes_per_s"] = found.bytes_per_s
            metrics[name + "_iops"] = found.iops
            metrics["latency_ns"][name] = found.latency_ns
    if job.trim is not None:
        result["warnings"].append("fio job did trim I/O: trim figures are not part of the record")
    metrics["fsyncs_per_s"] = job.fsyncs_per_s
    if job.steadystate is not None:
        # Not a record field as it is: bench_run turns it into the record's steady_state (module_utils/_steady.py).
        result["steadystate"] = job.steadystate
    return result


LATENCY_KEYS = ("mean", "min", "p50", "p95", "p99", "p99_9", "max", "stdev")
PERCENTILE_KEYS = ((50.0, "p50"), (95.0, "p95"), (99.0, "p99"), (99.9, "p99_9"))


def _latency(**figures: Optional[float]) -> Dict[str, Optional[float]]:
    """One direction's latency in ns: every key of LATENCY_KEYS, in that order, null unless given."""
    unknown = set(figures) - set(LATENCY_KEYS)
    if unknown:
        raise TypeError("unknown latency keys: %s" % ", ".join(sorted(unknown)))
    return {key: figures.get(key) for key in LATENCY_KEYS}


def _ident(name: Optional[str], index: int) -> Dict[str, Any]:
    return {"name": name, "index": index, "groupid": None, "client": None}


def sysbench_result(run: sysbench.SysbenchRun) -> Dict[str, Any]:
    """One sysbench run: reads/s and writes/s go to the directions the test mode exercises; the one
    latency sysbench reports (all requests, fsyncs included) to that direction when there is one."""
    result = _result("sysbench", run.version, _ident(run.mode or run.test, run.index))
    result.update(bytes=run.bytes, seconds=run.seconds, error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
    from .sysbench import direction_of
    direction = direction_of(run)
    if direction is None:
        directions = [name for name, rate in (("read", run.reads_per_s), ("write", run.writes_per_s)) if rate]
    else:
        directions = ["read", "write"] if direction == "mixed" else [direction]
    figures = {"read": (run.read_bytes_per_s, run.reads_per_s), "write": (run.write_bytes_per_s, run.writes_per_s)}
    for name in directions:
        metrics[name + "_bytes_per_s"], metrics[name + "_iops"] = figures[name]
    metrics["fsyncs_per_s"] = run.fsyncs_per_s or None
    latency = run.latency
    if latency is not None and run.completed_requests:
        rank = latency.percentile_rank
        percentiles = {key: latency.percentile for wanted, key in PERCENTILE_KEYS
                       if rank is not None and abs(rank - wanted) < 1e-6}
        found = _latency(mean=latency.avg, min=latency.min, max=latency.max, **percentiles)
        if len(directions) == 1:
            metrics["latency_ns"][directions[0]] = found
        else:
            result["warnings"].append("sysbench reports one latency for reads, writes and fsyncs together: "
                                      "not attributed to a direction")
    return result


def bonnie_result(run: bonnie.BonnieRun) -> Dict[str, Any]:
    """One bonnie++ run: block output is the write rate, block input the read rate, random seeks the
    read ops/s; latencies are bonnie++'s maximum latency of those tests."""
    result = _result("bonnie", run.version, _ident(run.name, run.index))
    result.update(error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
    metrics["write_bytes_per_s"] = run.rates.get("put_block")
    metrics["read_bytes_per_s"] = run.rates.get("get_block")
    metrics["read_iops"] = run.rates.get("seeks")
    for name, test in (("write", "put_block"), ("read", "get_block")):
        worst = run.latency_ns.get(test)
        if worst is not None:
            metrics["latency_ns"][name] = _latency(max=worst)
    return result


def ioping_result(run: ioping.IopingRun) -> Dict[str, Any]:
    """One ioping statistics block (or raw line): its figures go to the direction ioping tested."""
    result = _result("ioping", None, _ident(run.target, run.index))
    result.update(bytes=run.bytes, seconds=run.seconds, error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
    if run.direction in ("read", "write"):
        metrics[run.direction + "_bytes_per_s"] = run.bytes_per_s
        metrics[run.direction + "_iops"] = run.iops
        if run.avg_ns is not None and run.requests:
            metrics["latency_ns"][run.direction] = _latency(mean=run.avg_ns, min=run.min_ns, max=run.max_ns,
                                                            stdev=run.mdev_ns)
    elif run.direction == "mixed":
        result["warnings"].append("ioping alternated reads and writes (-G): figures not attributed to a direction")
    return result


def resolve_tool(tool: str, text: str, argv: Optional[List[str]] = None) -> str:
    """The tool whose output text is: as given, else from argv[0], else from the text."""
    if tool in TOOLS:
        return tool
    return tool_from_argv(argv) or detect_tool(text)


def parse_output(
    text: str, tool: str = "auto", direction: Optional[str] = None, argv: Optional[List[str]] = None
) -> Tuple[str, List[Dict[str, Any]]]:
    """(tool, partial records) for every run/job in text. ParseError for anything not exact."""
    tool = resolve_tool(tool, text, argv)
    if tool == "dd":
        from . import dd
        return tool, [dd_result(run, *dd.resolve_direction(run, direction, argv)) for run in dd.parse(text)]
    if tool == "sysbench":
        from . import sysbench
        return tool, [sysbench_result(run) for run in sysbench.parse(text)]
    if tool == "bonnie":
        from . import bonnie
        return tool, [bonnie_result(run) for run in bonnie.parse(text)]
    if tool == "ioping":
        from . import ioping
        return tool, [ioping_result(run) for run in ioping.parse(text, argv, direction)]
    from . import fio
    return tool, [fio_result(job) for job in fio.parse(text)]


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
    }


def join_output(stdout: bytes, stderr: bytes) -> bytes:
    """The raw text of a run: stdout then stderr, a line break between them when stdout lacks one."""
    if stdout and stderr and not stdout.endswith(b"\n"):
        return stdout + b"\n" + stderr
    return stdout + stderr


def error_result(tool: str, error: ParseError) -> Dict[str, Any]:
    """The one partial record of a run that failed (non-zero exit) and printed nothing parseable:
    the error is the tool's own message as the parser quoted it."""
    result = _result(tool, None, {"name": None, "index": 0, "groupid": None, "client": None})
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
