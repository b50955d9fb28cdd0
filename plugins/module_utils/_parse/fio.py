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
completion latency ``clat`` (``mean``, ``min``, the 50/95/99/99.9 percentiles, ``max``, ``stddev``
as ``stdev``), falling back to the total latency ``lat`` when fio reported no completion latency:
its ``mean`` (required), ``min``, ``max`` and ``stddev`` (each null when absent); no percentiles,
as fio prints a ``lat`` percentile table only with ``lat_percentiles=1``, which the fallback does
not rely on.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .errors import ParseError
from .units import KIB, NS_PER_US, ms_to_s

TOOL = "fio"
DIRECTIONS = ("read", "write", "trim")
PERCENTILES = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p99_9", 99.9))
AGGREGATE_CLIENT = "All clients"
MAX_NOISE_LINES = 20
MAX_INTEGER = 2 ** 64  # fio's counters are 64-bit; anything larger is not fio output

_OBJECT_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
# What the bracket scan (_decodable_objects) reads: a JSON string (to its closing quote, or to the end of
# its line: JSON strings never span lines), a run of openers, a run of closers.
_JSON_TOKENS = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?|[{\[]+|[}\]]+')
# fio nests its JSON 6 levels deep (json+ 7); deeper text is not fio's, and decoding it again from every
# line start inside it would cost its size times its depth.
MAX_JSON_DEPTH = 32
_ERR_LINE = re.compile(r"\berr=\s*(-?[0-9]+)/")


@dataclass
class Direction:
    """One I/O direction of one job, in SI base units."""

    io_bytes: int
    runtime_ms: float
    bytes_per_s: Optional[float]
    iops: Optional[float]  # None only from a normal output's group summary line
    total_ios: Optional[int]
    latency_ns: Optional[Dict[str, Optional[float]]]


@dataclass
class FioJob:
    """One fio job (or one client's job) as reported in the JSON output."""

    index: int
    name: str
    groupid: Optional[int]
    client: Optional[str]
    version: Optional[str]
    error_code: int
    error: Optional[str]
    read: Optional[Direction] = None
    write: Optional[Direction] = None
    trim: Optional[Direction] = None
    fsyncs: Optional[int] = None
    warnings: List[str] = field(default_factory=list)
    steadystate: Optional["SteadyState"] = None  # only for a job run with steadystate= (ss_dur > 0)

    @property
    def directions(self) -> List[Tuple[str, Direction]]:
        found = [(name, getattr(self, name)) for name in DIRECTIONS]
        return [(name, found_dir) for name, found_dir in found if found_dir is not None]

    @property
    def bytes(self) -> int:
        return sum(found.io_bytes for _name, found in self.directions)

    @property
    def seconds(self) -> Optional[float]:
        """The longest direction runtime: fio's own measure of how long the job did I/O."""
        runtimes = [found.runtime_ms for _name, found in self.directions]
        return ms_to_s(max(runtimes)) if runtimes else None

    @property
    def fsyncs_per_s(self) -> Optional[float]:
        seconds = self.seconds
        if not self.fsyncs or not seconds:
            return None
        return self.fsyncs / seconds

    @property
    def tool_version(self) -> Optional[str]:
        if self.version is None:
            return None
        return self.version[4:] if self.version.startswith("fio-") else self.version


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


@dataclass
class LatencyStats:
    """One latency statistic of one direction as fio reported it, in ns (JSON, normal or terse output)."""

    mean: Optional[float]
    minimum: Optional[float]
    maximum: Optional[float]
    stdev: Optional[float]
    percentiles: Dict[str, Optional[float]] = field(default_factory=dict)  # keys of PERCENTILES


def pick_latency(clat: Optional[LatencyStats], lat: Optional[LatencyStats], path: str, lat_key: str,
                 warnings: List[str]) -> Optional[Dict[str, Optional[float]]]:
    """The record's latency in ns, keys mean, min, p50, p95, p99, p99_9, max, stdev: the completion latency
    (clat) when it has samples; else the total latency (lat: mean, min, max, stdev, no percentiles, with a
    warning); None if neither has samples. Every fio output format goes through this one rule."""
    if clat is not None:
        latency: Dict[str, Optional[float]] = {"mean": clat.mean, "min": clat.minimum}
        latency.update((name, clat.percentiles.get(name)) for name, _pct in PERCENTILES)
        latency["max"] = clat.maximum
        latency["stdev"] = clat.stdev
        return latency
    if lat is not None:
        warnings.append("%s: no completion latency (clat); latency mean, min, max and stdev are fio's total "
                        "latency (%s), no percentiles" % (path, lat_key))
        latency = {"mean": lat.mean, "min": lat.minimum}
        latency.update((name, None) for name, _pct in PERCENTILES)
        latency["max"] = lat.maximum
        latency["stdev"] = lat.stdev
        return latency
    return None


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


def exercised(io_bytes: int, runtime_ms: float, total_ios: Optional[float]) -> bool:
    """False for a direction the job did not do (or whose only I/O failed at once): no record figures."""
    return io_bytes != 0 or bool(total_ios and runtime_ms)


def make_direction(io_bytes: int, runtime_ms: float, iops: Optional[float], total_ios: Optional[int],
                   latency: Optional[Dict[str, Optional[float]]], path: str, warnings: List[str]) -> Direction:
    """One direction's figures: bytes/s = io_bytes / runtime (fio's own bandwidth figures are this quotient
    truncated or rounded), for every fio output format."""
    bytes_per_s = io_bytes * 1000.0 / runtime_ms if runtime_ms > 0 else None
    if bytes_per_s is None:
        warnings.append("%s: runtime 0 ms, bytes per second unknown" % path)
    return Direction(io_bytes, runtime_ms, bytes_per_s, iops, total_ios, latency)


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


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except (ValueError, OverflowError):
        return "unknown error"


def _err_lines(noise: List[str]) -> Dict[str, str]:
    """fio's own line for each error code it printed ('err= 5/'), the first one; read once for all jobs."""
    found: Dict[str, str] = {}
    for line in noise:
        for match in _ERR_LINE.finditer(line):
            found.setdefault(match.group(1), line)
    return found


def _error_message(code: int, name: str, err_lines: Dict[str, str]) -> Optional[str]:
    if code == 0:
        return None
    line = err_lines.get("%d" % code)
    if line is not None:
        return line
    return "fio job '%s' reported error %d (%s)" % (name, code, _strerror(code))


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


@dataclass
class SteadyState:
    """fio's ``steadystate`` object of one job (fio >= 2.99, a job with ``steadystate=``/``ss=``).

    ``iops``/``bw`` are the samples of the last window (one per second, oldest first; bytes/s for bw).
    fio fills only the figure of its own criterion: ``max_deviation`` for ``iops:``/``bw:``, ``slope``
    for ``*_slope:`` (the other stays 0).
    """

    setting: str          # "ss": the criterion and limit as fio understood them, e.g. "iops:20.000000%"
    duration_s: int       # ss_dur, the window length in samples (seconds)
    attained: bool
    criterion: str        # the criterion's last value, e.g. "3.125000%"
    max_deviation: float
    slope: float
    iops: List[int]
    bw: List[int]


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
         err_lines: Dict[str, str]) -> FioJob:
    if not isinstance(raw, dict):
        raise ParseError(TOOL, "a job object at %s" % path, _json_text(raw))
    name = raw.get("jobname")
    if not isinstance(name, str):
        raise _bad(path, "jobname", "a string", name)
    code = _integer(raw, "error", path)
    groupid = _integer(raw, "groupid", path) if "groupid" in raw else None
    warnings = list(_noise_warnings(noise))
    job = FioJob(index, name, groupid, _client(raw, path), version, code, _error_message(code, name, err_lines))
    for direction in DIRECTIONS:
        setattr(job, direction, _direction(raw, direction, path, warnings))
    job.fsyncs = _fsyncs(raw, path)
    job.steadystate = _steadystate(raw, path)
    job.warnings = warnings
    return job


def _noise_warnings(noise: List[str]) -> List[str]:
    if len(noise) <= MAX_NOISE_LINES:
        return noise
    return noise[:MAX_NOISE_LINES] + ["... %d more lines of fio output outside the JSON" % (len(noise) - MAX_NOISE_LINES)]


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
        # imported here: fio_text builds its jobs with this module's rules (a module-level import is circular)
        from . import fio_text
        if fio_text.recognise(text):
            return fio_text.parse(text)
        _raise_no_json(text, noise, failure)
    err_lines = _err_lines(noise)
    jobs: List[FioJob] = []
    for doc in docs:
        version = _version(doc)
        key, raw_jobs = _job_list(doc)
        for position, raw in enumerate(raw_jobs):
            path = "%s[%d]" % (key, position)
            if key == "client_stats" and isinstance(raw, dict) and raw.get("jobname") == AGGREGATE_CLIENT:
                continue
            jobs.append(_job(raw, len(jobs), path, version, noise, err_lines))
    if not jobs:
        raise ParseError(TOOL, "at least one job in the fio JSON output", '"jobs": []')
    return jobs
