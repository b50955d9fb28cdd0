# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse fio JSON output (``--output-format=json`` or ``json+``, fio 2.x and 3.x) into exact figures;
text without fio JSON goes to fio_text (fio's normal and terse output), which builds the same FioJob
records through the rules here (exercised, make_direction, pick_latency).

One FioJob per entry of ``jobs`` (or of ``client_stats`` for ``--client`` runs, where the
``All clients`` aggregate is skipped: it would count every client twice). Text around the JSON
object (fio's warnings and errors, before or after it) becomes warnings; a job with ``error``
!= 0 gets an error message, fio's own ``err=N`` line when there is one.

Units: fio 3.x reports ``io_bytes`` in bytes and latencies in ns (``clat_ns``, ``lat_ns``); fio 2.x
reports ``io_bytes`` in KiB and latencies in microseconds (``clat``, ``lat``). The unit is decided
by the keys present (``io_kbytes``/``bw_bytes`` exist only when ``io_bytes`` is in bytes), never by
the size of a number.

Figures per direction: bytes/s = io_bytes / runtime (fio's ``bw_bytes`` is the same quotient
truncated to an integer, fio 2.x ``bw`` is in KiB/s); ops/s = fio's ``iops``; latency = the
completion latency ``clat`` (``mean``, ``min``, the 50/95/99/99.9/99.99 percentiles, ``max``, ``stddev``
as ``stdev``), falling back to the total latency ``lat`` when fio reported no completion latency:
its ``mean`` (required), ``min``, ``max`` and ``stddev`` (each null when absent); no percentiles,
as fio prints a ``lat`` percentile table only with ``lat_percentiles=1``, which the fallback does
not rely on. A job that called fsync/fdatasync also gets ``latency_ns.sync``: fio 3.x's ``sync.lat_ns``, the same
figures (a commit's latency: what a database waits for).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional, Set, Tuple

from .errors import ParseError
from .fio_verify import VERIFY_ERRNO, BadBlock, bad_blocks, integrity_summary
from .fio_job import (DIRECTIONS, PERCENTILES, TOOL, Direction, FioJob, LatencyStats, SteadyState, error_lines_by_code,
                      error_message, fail_fast_lines, fail_fast_reason, exercised, make_direction, noise_warnings, pick_latency)
from .records import partial_result
from .units import KIB, NS_PER_US
from .values import SP, line_markers

AGGREGATE_CLIENT = "All clients"
MAX_INTEGER = 2 ** 64  # fio's counters are 64-bit; anything larger is not fio output

_OBJECT_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
# What the bracket scan (_decodable_objects) reads: a JSON string (to its closing quote, or to the end of
# its line: JSON strings never span lines), a run of openers, a run of closers.
_JSON_TOKENS = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?|[{\[]+|[}\]]+')
# fio nests its JSON 6 levels deep (json+ 7); deeper text is not fio's, and decoding it again from every
# line start inside it would cost its size times its depth.
MAX_JSON_DEPTH = 32


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)[:120]
    except (TypeError, ValueError):
        return repr(value)[:120]


def _bad(path: str, key: str, expected: str, value: Any) -> ParseError:
    return ParseError(TOOL, "%s at %s.%s" % (expected, path, key), '"%s": %s' % (key, _json_text(value)))


def _number(obj: Dict[str, Any], key: str, path: str) -> float:
    """A finite, non-negative JSON number (not a boolean) at obj[key]."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(path, key, "a non-negative number", value)
    if isinstance(value, float) and not math.isfinite(value) or not 0 <= value <= MAX_INTEGER:
        raise _bad(path, key, "a non-negative number below 2**64", value)
    return value


def _optional_number(obj: Dict[str, Any], key: str, path: str) -> Optional[float]:
    return None if obj.get(key) is None else _number(obj, key, path)


def _integer(obj: Dict[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_INTEGER:
        raise _bad(path, key, "an integer", value)
    return value


def _mapping(obj: Dict[str, Any], key: str, path: str) -> Optional[Dict[str, Any]]:
    value = obj.get(key)
    if value is not None and not isinstance(value, dict):
        raise _bad(path, key, "an object", value)
    return value


def _as_int(value: float) -> int:
    return int(value) if float(value).is_integer() else int(round(value))


def _percentiles(stats: Dict[str, Any], scale: int, path: str) -> Dict[str, Optional[float]]:
    table = _mapping(stats, "percentile", path) or {}
    found: Dict[str, Optional[float]] = {name: None for name, _pct in PERCENTILES}
    for key in table:
        try:
            pct = float(key)
        except ValueError:
            continue
        for name, wanted in PERCENTILES:
            if abs(pct - wanted) < 1e-6:
                found[name] = _number(table, key, path + ".percentile") * scale
    return found


def _has_samples(stats: Dict[str, Any], path: str) -> bool:
    if "N" in stats:
        return _number(stats, "N", path) > 0
    return _number(stats, "max", path) > 0  # fio 2.x has no sample count


def _scaled(stats: Dict[str, Any], key: str, scale: int, path: str, required: bool) -> Optional[float]:
    value = _number(stats, key, path) if required else _optional_number(stats, key, path)
    return None if value is None else value * scale


def _latency(found: Dict[str, Any], path: str, warnings: List[str]) -> Optional[Dict[str, Optional[float]]]:
    """The JSON clat (every figure but a percentile fio did not print required) or lat (mean required,
    min/max/stdev when present) of one direction, through pick_latency."""
    for key, scale in (("clat_ns", 1), ("clat", NS_PER_US)):
        stats = _mapping(found, key, path)
        if stats is not None and _has_samples(stats, path + "." + key):
            sub = path + "." + key
            clat = LatencyStats(_scaled(stats, "mean", scale, sub, True), _scaled(stats, "min", scale, sub, True),
                                None, None, _percentiles(stats, scale, sub))
            clat.maximum = _scaled(stats, "max", scale, sub, True)
            clat.stdev = _scaled(stats, "stddev", scale, sub, True)
            return pick_latency(clat, None, path, key, warnings)
    for key, scale in (("lat_ns", 1), ("lat", NS_PER_US)):
        stats = _mapping(found, key, path)
        if stats is not None and _has_samples(stats, path + "." + key):
            sub = path + "." + key
            lat = LatencyStats(_scaled(stats, "mean", scale, sub, True), _scaled(stats, "min", scale, sub, False),
                               _scaled(stats, "max", scale, sub, False), _scaled(stats, "stddev", scale, sub, False))
            return pick_latency(None, lat, path, key, warnings)
    return None


def _direction(job: Dict[str, Any], name: str, path: str, warnings: List[str]) -> Optional[Direction]:
    found = _mapping(job, name, path)
    if found is None:
        return None
    sub = path + "." + name
    in_bytes = "io_kbytes" in found or "bw_bytes" in found
    io_bytes = _as_int(_number(found, "io_bytes", sub) * (1 if in_bytes else KIB))
    runtime_ms = _number(found, "runtime", sub)
    iops = _number(found, "iops", sub)
    total_ios = _optional_number(found, "total_ios", sub)
    if not exercised(io_bytes, runtime_ms, total_ios):
        return None
    direction = make_direction(io_bytes, runtime_ms, iops, None if total_ios is None else _as_int(total_ios),
                               None, sub, warnings)
    direction.latency_ns = _latency(found, sub, warnings)
    return direction


def _fsyncs(job: Dict[str, Any], path: str) -> Optional[int]:
    """fsync/fdatasync calls: fio 3.x ``sync.total_ios``, which fio leaves 0, so ``sync.lat_ns.N``."""
    sync = _mapping(job, "sync", path)
    if sync is None:
        return None
    count = _optional_number(sync, "total_ios", path + ".sync") or 0
    lat = _mapping(sync, "lat_ns", path + ".sync")
    if not count and lat is not None:
        count = _optional_number(lat, "N", path + ".sync.lat_ns") or 0
    return _as_int(count) or None


def _sync_latency(job: Dict[str, Any], path: str, warnings: List[str]) -> Optional[Dict[str, Optional[float]]]:
    """fsync/fdatasync latency, fio 3.x ``sync.lat_ns`` (with its percentile table), when fio counted syncs."""
    sync = _mapping(job, "sync", path)
    stats = None if sync is None else _mapping(sync, "lat_ns", path + ".sync")
    sub = path + ".sync.lat_ns"
    if stats is None or not _has_samples(stats, sub):
        return None
    latency = LatencyStats(_scaled(stats, "mean", 1, sub, True), _scaled(stats, "min", 1, sub, True),
                           _scaled(stats, "max", 1, sub, True), _scaled(stats, "stddev", 1, sub, True),
                           _percentiles(stats, 1, sub))
    return pick_latency(latency, None, sub, "lat_ns", warnings)


def _client(job: Dict[str, Any], path: str) -> Optional[str]:
    host = job.get("hostname")
    if host is None:
        return None
    if not isinstance(host, str):
        raise _bad(path, "hostname", "a string", host)
    port = job.get("port")
    if port is None:
        return host
    return "%s:%d" % (host, _integer(job, "port", path))


def _steadystate(raw: Dict[str, Any], path: str) -> Optional[SteadyState]:
    found = _mapping(raw, "steadystate", path)
    if found is None:
        return None
    path += ".steadystate"
    data = _mapping(found, "data", path) or {}
    series = {}
    for key in ("iops", "bw"):
        values = data.get(key)
        if not isinstance(values, list) or not all(isinstance(value, int) and not isinstance(value, bool)
                                                   and 0 <= value <= MAX_INTEGER for value in values):
            raise _bad(path + ".data", key, "a list of non-negative integers", values)
        series[key] = list(values)
    texts = {}
    for key in ("ss", "criterion"):
        if not isinstance(found.get(key), str):
            raise _bad(path, key, "a string", found.get(key))
        texts[key] = found[key]
    signed = {}
    for key in ("max_deviation", "slope"):
        value = found.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _bad(path, key, "a number", value)
        signed[key] = float(value)
    return SteadyState(texts["ss"], _integer(found, "duration", path), bool(_integer(found, "attained", path)),
                       texts["criterion"], signed["max_deviation"], signed["slope"], series["iops"], series["bw"])


def _job(raw: Any, index: int, path: str, version: Optional[str], noise: List[str],
         err_lines: Dict[str, str], early_lines: Dict[str, str]) -> FioJob:
    if not isinstance(raw, dict):
        raise ParseError(TOOL, "a job object at %s" % path, _json_text(raw))
    name = raw.get("jobname")
    if not isinstance(name, str):
        raise _bad(path, "jobname", "a string", name)
    code = _integer(raw, "error", path)
    groupid = _integer(raw, "groupid", path) if "groupid" in raw else None
    warnings = list(noise_warnings(noise))
    error = error_message(code, name, err_lines)
    early = fail_fast_reason(code, name, early_lines) if error else None
    job = FioJob(index, name, groupid, _client(raw, path), version, code,
                 "%s (%s)" % (early, error) if early else error)
    for direction in DIRECTIONS:
        setattr(job, direction, _direction(raw, direction, path, warnings))
    job.fsyncs = _fsyncs(raw, path)
    job.sync_latency_ns = _sync_latency(raw, path, warnings)
    job.steadystate = _steadystate(raw, path)
    options = _mapping(raw, "job options", path) or {}
    verify = options.get("verify")
    if isinstance(verify, str) and verify not in ("0", "none"):
        job.verify = verify
        job.bad_blocks = []
        job.verify_total_errors = _integer(raw, "total_err", path) if "total_err" in raw else None
    job.warnings = warnings
    return job


def _attach_bad_blocks(jobs: List[FioJob], raw_jobs: List[Any], blocks: List[BadBlock]) -> None:
    """Each verify failure to the verify job that read its file (the only verify job when the names do not tell).
    A job that failed only because its data did not verify (EILSEQ) did its work: its error is the integrity
    finding, not a tool failure."""
    verifying = [(job, raw) for job, raw in zip(jobs, raw_jobs) if job.bad_blocks is not None]
    for block in blocks:
        owners = [job for job, raw in verifying
                  if isinstance(raw, dict) and (raw.get("job options") or {}).get("filename") == block.file]
        owner = owners[0] if owners else (verifying[0][0] if verifying else None)
        if owner is None:
            continue   # verify lines without a verify job: left to the warnings below
        owner.bad_blocks.append(block)  # type: ignore[union-attr]
    for job, _raw in verifying:
        if job.error_code == VERIFY_ERRNO and job.bad_blocks:
            job.error = None


def _job_list(doc: Dict[str, Any]) -> Tuple[str, List[Any]]:
    key = "client_stats" if "client_stats" in doc else "jobs"
    jobs = doc.get(key)
    if not isinstance(jobs, list):
        raise _bad("$", key, "a list of jobs", jobs)
    return key, jobs


def _version(doc: Dict[str, Any]) -> Optional[str]:
    version = doc.get("fio version")
    if version is not None and not isinstance(version, str):
        raise _bad("$", "fio version", "a string", version)
    return version


def _looks_like_fio(obj: Any) -> bool:
    return isinstance(obj, dict) and any(key in obj for key in ("fio version", "jobs", "client_stats"))


def _lines(text: str) -> List[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _line_at(text: str, pos: int) -> Tuple[str, int]:
    lineno = text.count("\n", 0, pos) + 1
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:end if end >= 0 else len(text)], lineno


def _decodable_objects(text: str, starts: List[int]) -> Set[int]:
    """The starts whose '{' has its brackets closed again, nested at most MAX_JSON_DEPTH levels deep:
    only from those can a JSON object be decoded. One pass over the text, strings skipped (a string
    never spans lines in JSON, so the scan is in step again at every line start, where starts are)."""
    wanted = set(starts)
    found: Set[int] = set()
    open_starts: List[List[int]] = []  # [start, depth before it, deepest depth since], innermost last
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        position = match.start()
        if token[0] in "{[":
            if position in wanted:
                open_starts.append([position, depth, depth])
            depth += len(token)
            if open_starts and depth > open_starts[-1][2]:
                open_starts[-1][2] = depth
            continue
        # a run of closers: depth falls by one per character; an object ends where it is back to its base
        lowest = depth - len(token)
        while open_starts and open_starts[-1][1] >= lowest:
            start, base, deepest = open_starts.pop()
            if deepest - base <= MAX_JSON_DEPTH:
                found.add(start)
            if open_starts and deepest > open_starts[-1][2]:
                open_starts[-1][2] = deepest
        depth = lowest
    return found


def _documents(text: str) -> Tuple[List[Dict[str, Any]], List[str], Optional[int]]:
    """The fio JSON objects in text, the non-JSON lines around them (fio's own messages), and where
    decoding failed first (None when it did not).

    An object is decoded only from a line-start '{' whose brackets close (_decodable_objects): decoding
    from every line start of unclosed or deeply nested JSON-like text cost its size squared."""
    decoder = json.JSONDecoder()
    docs: List[Dict[str, Any]] = []
    noise: List[str] = []
    consumed = search_from = 0
    failure: Optional[int] = None
    probed = False
    candidates = list(_OBJECT_START.finditer(text))
    decodable = _decodable_objects(text, [match.end() - 1 for match in candidates])
    for match in candidates:
        if match.start() < search_from:
            continue
        start = match.end() - 1
        if start not in decodable:
            if failure is None and not probed:  # decoded once only: where it fails is the error message
                probed = True
                try:
                    decoder.raw_decode(text, start)
                except (ValueError, RecursionError) as exc:
                    failure = getattr(exc, "pos", start)
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError) as exc:
            failure = getattr(exc, "pos", start) if failure is None else failure
            continue
        if _looks_like_fio(obj):
            noise.extend(_lines(text[consumed:start]))
            docs.append(obj)
            consumed = search_from = end
    noise.extend(_lines(text[consumed:]))
    return docs, noise, failure


def _raise_no_json(text: str, noise: List[str], failure: Optional[int]) -> None:
    if failure is not None:
        line, lineno = _line_at(text, failure)
        raise ParseError(TOOL, "one complete JSON object (the output is cut short or not valid JSON)", line, lineno)
    if not noise:
        raise ParseError(TOOL, "fio JSON output (--output-format=json), got empty output")
    own = [line for line in noise if line.startswith("fio:")]
    quoted = " | ".join(own[:3]) if own else noise[0]
    own = own or noise
    raise ParseError(
        TOOL, "fio JSON output (--output-format=json), found none (nor fio normal or terse output)", quoted,
        _lineno(text, own[0])
    )


def _lineno(text: str, line: str) -> Optional[int]:
    for number, candidate in enumerate(text.splitlines(), 1):
        if candidate.strip() == line:
            return number
    return None


def parse(text: str) -> List[FioJob]:
    """Every job of every fio JSON object in text, in order; without JSON, every job of fio's normal or
    terse output (fio_text). ParseError when there is none or a figure has the wrong type."""
    if not isinstance(text, str):
        raise ParseError(TOOL, "text, got %s" % type(text).__name__)
    docs, noise, failure = _documents(text)
    if not docs:
        # imported here: a run that printed JSON never needs the text parser
        from . import fio_text
        if fio_text.recognise(text):
            return fio_text.parse(text)
        _raise_no_json(text, noise, failure)
    err_lines = error_lines_by_code(noise)
    early_lines = fail_fast_lines(noise)
    blocks, noise = bad_blocks(noise)
    jobs: List[FioJob] = []
    raw_jobs_kept: List[Any] = []
    for doc in docs:
        version = _version(doc)
        key, raw_jobs = _job_list(doc)
        for position, raw in enumerate(raw_jobs):
            path = "%s[%d]" % (key, position)
            if key == "client_stats" and isinstance(raw, dict) and raw.get("jobname") == AGGREGATE_CLIENT:
                continue
            jobs.append(_job(raw, len(jobs), path, version, noise, err_lines, early_lines))
            raw_jobs_kept.append(raw)
    if not jobs:
        raise ParseError(TOOL, "at least one job in the fio JSON output", '"jobs": []')
    _attach_bad_blocks(jobs, raw_jobs_kept, blocks)
    if blocks and not any(job.bad_blocks for job in jobs):
        for job in jobs:
            job.warnings.append("%d fio verify failure line(s) but no verify job to hold them" % len(blocks))
    return jobs


# ---------------------------------------------------------------------------------------------- the registry's interface

# Strong fio markers: its JSON keys. Weak: its "fio: ..." messages (a failed run without JSON).
_FIO_JSON = re.compile(r'"(?:fio version|client_stats)"\s*:|^{sp}*"jobs"{sp}*:{sp}*\['.replace("{sp}", SP),
                       re.MULTILINE)
_FIO_MESSAGE = line_markers(r"fio(?:: |-[0-9])")


def recognise(text: str) -> Optional[int]:
    """tool=auto: fio's JSON keys or its normal or terse output (rank 0); its own messages alone (rank 2, after dd)."""
    from .fio_text import recognise as looks_like_fio_text   # here: a run that names its tool never needs it
    if _FIO_JSON.search(text) or looks_like_fio_text(text):
        return 0
    return 2 if _FIO_MESSAGE.search(text) else None


def integrity(job: FioJob) -> Dict[str, Any]:
    """The record's integrity of a verify job: what was checked, how much read back, every bad block's kind."""
    return integrity_summary(job.verify, job.read.io_bytes if job.read is not None else 0,
                             job.verify_total_errors or 0, job.bad_blocks or [])


def _result(job: FioJob) -> Dict[str, Any]:
    """One fio job as a partial record: both directions filled when the job did both."""
    ident = {"name": job.name, "index": job.index, "groupid": job.groupid, "client": job.client}
    result = partial_result("fio", job.tool_version, ident)
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
    metrics["latency_ns"]["sync"] = job.sync_latency_ns
    if job.bad_blocks is not None:
        result["integrity"] = integrity(job)
    if job.steadystate is not None:
        # Not a record field as it is: bench_run turns it into the record's steady_state (module_utils/_steady.py).
        result["steadystate"] = job.steadystate
    return result


def records(text: str, direction: Optional[str] = None, argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """One partial record per fio job of text (JSON, else normal or terse output); fio says each figure's direction."""
    del direction, argv
    return [_result(job) for job in parse(text)]
