# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse sysbench fileio output (0.4.x, 0.5, the 1.0 pre-release and 1.0.x) into exact figures.

One SysbenchRun per sysbench invocation found in the text (a ``sysbench X.Y`` banner starts one;
a second result section without a banner starts one too): ``fileio run`` results, ``fileio
prepare`` (1.0 prints ``N bytes written in S seconds``) and failed runs (``FATAL:`` or
``invalid option:`` and no results). Layouts recognised, line by line (blank lines, indentation
and the order of the option lines do not matter):

- ``0.4``: ``Operations performed:  N Read, N Write, N Other = N Total``, ``Test execution
  summary:``, ``per-request statistics:`` with ``min: 0.00ms`` ... ``approx.  95 percentile:``.
- ``0.5``: ``Operations performed:  N reads, N writes, N Other = N Total``, ``General
  statistics:``, ``response time:`` with the same ms lines.
- ``1.0-pre`` (``sysbench 1.0:`` builds before 1.0.0): ``File operations:`` / ``Throughput:`` of
  1.0 with the ``response time:`` block of 0.5.
- ``1.0``: ``File operations:`` (``reads/s``, ``writes/s``, ``fsyncs/s``), ``Throughput:``
  (``read, MiB/s``, ``written, MiB/s``), ``General statistics:``, ``Latency (ms):`` with
  ``min``, ``avg``, ``max``, ``Nth percentile`` and ``sum``.

Figures (SI base units):

- 0.4/0.5 print totals: ops/s = count / ``total time``; bytes/s = count x block size / total time
  (block size from ``Block size 16Kb``); ``Other`` operations are fsync calls. The printed
  ``Read 4.071Gb ... (13.895Mb/sec)`` (binary units: Mb = 2**20 bytes) is only a cross-check
  (and the fallback when the block size line is missing).
- 1.0 prints rates only: ops/s are sysbench's ``reads/s`` etc.; bytes/s = ops/s x block size,
  cross-checked against ``read, MiB/s`` (the printed MiB/s x 2**20 is the fallback).
- prepare: bytes and seconds of ``N bytes written in S seconds``; bytes/s = bytes / seconds.
- Latency: min, avg, max and the Nth percentile in ns (sysbench prints ms). One latency covers
  every request of the run (reads, writes and fsyncs alike).

``FATAL:`` lines are errors, ``WARNING:`` lines warnings. A run whose counters are all zero
(the 0.4 ``FATAL: Failed to read file!`` case) keeps its zero figures, its error, and no latency:
sysbench prints an uninitialised minimum (``18446744073709.55ms``) there, which is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import ParseError, RunIssues, first_line, stripped_lines
from .records import PERCENTILE_KEYS, job_ident, latency_ns, partial_result
from .units import NS_PER_TIME_UNIT, UNSIGNED, byte_factor, finite, parse_unsigned
from .values import line_markers

TOOL = "sysbench"
MIB = 2 ** 20

MODES = {
    "sequential write (creation)": "seqwr",
    "sequential rewrite": "seqrewr",
    "sequential read": "seqrd",
    "random read": "rndrd",
    "random write": "rndwr",
    "random r/w": "rndrw",
}
READ_MODES = ("seqrd", "rndrd")
WRITE_MODES = ("seqwr", "seqrewr", "rndwr", "prepare")
PREPARE = "prepare"

_NUM = UNSIGNED
# The version is taken whole ((?![0-9]|\.[0-9])): what follows cannot take back some of its digits, which
# made a long line of digits and dots backtrack over every split (quadratic in the line).
_BANNER = re.compile(r"^sysbench (?P<version>[0-9]+(?:\.[0-9]+)+)(?![0-9]|\.[0-9])[^\s:]*(?::\s|:$|\s+\(|$)")
_DOING = re.compile(r"^Doing (?P<what>.+?)(?: test)?$")
_BLOCK_SIZE = re.compile(r"^Block size (?P<num>[0-9]+)(?P<unit>[A-Za-z]*)$")
_THREADS = re.compile(r"^Number of threads: (?P<num>[0-9]+)$")
_OPERATIONS = re.compile(
    r"^Operations performed:\s+(?P<reads>[0-9]+) (?P<rword>Read|reads), (?P<writes>[0-9]+) (?:Write|writes), "
    r"(?P<other>[0-9]+) Other = (?P<total>[0-9]+) Total$"
)
_TRANSFERRED = re.compile(
    r"^Read (?P<read>%s)(?P<read_unit>[A-Za-z]+)\s+Written (?P<written>%s)(?P<written_unit>[A-Za-z]+)\s+"
    r"Total transferred (?P<total>%s)(?P<total_unit>[A-Za-z]+)\s+\((?P<rate>%s)(?P<rate_unit>[A-Za-z]+)/sec\)$"
    % (_NUM, _NUM, _NUM, _NUM)
)
_REQUESTS = re.compile(r"^(?P<num>%s) Requests/sec executed" % _NUM)
_RATE_LINE = re.compile(r"^(?P<key>reads/s|writes/s|fsyncs/s|read, MiB/s|written, MiB/s):\s+(?P<num>%s)$" % _NUM)
_TOTAL_TIME = re.compile(r"^total time:\s+(?P<num>%s)s$" % _NUM)
_EVENTS = re.compile(r"^total number of events:\s+(?P<num>[0-9]+)$")
_LATENCY_HEADER = re.compile(r"^(?:per-request statistics|response time|Latency \((?P<unit>ms)\)):$")
_LATENCY_LINE = re.compile(
    r"^(?P<key>min|avg|max|sum|approx\.\s+(?P<pct1>%s) percentile|(?P<pct2>%s)th percentile):\s+(?P<num>%s)(?P<unit>[A-Za-z]+)?$"
    % (_NUM, _NUM, _NUM)
)
_PREPARE_BYTES = re.compile(
    r"^(?P<bytes>[0-9]+) bytes written in (?P<seconds>%s) seconds \((?P<rate>%s) (?P<unit>MiB|MB)/sec\)\.$"
    % (_NUM, _NUM)
)
_ERROR = re.compile(r"^(?:FATAL|ALERT): |^invalid option: |^Unknown (?:test|command): ")
_WARNING = re.compile(r"^WARNING: ")
# Known lines of a result section that carry nothing the record needs.
_KNOWN_NOISE = re.compile(
    r"^(?:Threads fairness:|events \(avg/stddev\):.*|Latency histogram \(values are in milliseconds\)"
    r"|value\s+-+ distribution -+ count|[0-9.]+ \|\**\s+[0-9]+|\[.*|\.\.\.)$"
)
_SECTION_END = re.compile(r"^execution time \(avg/stddev\):")

# The largest latency sysbench can print is its uninitialised minimum (ULLONG_MAX ns in ms).
_UNINITIALISED_MS = 18446744073709.0


@dataclass
class Latency:
    """Per-request latency of a run, in ns; percentile_rank is N of "Nth percentile"."""

    min: Optional[float] = None
    avg: Optional[float] = None
    max: Optional[float] = None
    percentile: Optional[float] = None
    percentile_rank: Optional[float] = None
    sum: Optional[float] = None


@dataclass
class SysbenchRun(RunIssues):
    """One sysbench fileio invocation as read from its output."""

    index: int = 0
    version: Optional[str] = None
    layout: Optional[str] = None
    mode: Optional[str] = None
    test: Optional[str] = None
    block_size: Optional[int] = None
    reads: Optional[int] = None
    writes: Optional[int] = None
    other: Optional[int] = None
    reads_per_s: Optional[float] = None
    writes_per_s: Optional[float] = None
    fsyncs_per_s: Optional[float] = None
    read_bytes_per_s: Optional[float] = None
    write_bytes_per_s: Optional[float] = None
    printed_read_bytes_per_s: Optional[float] = None
    printed_write_bytes_per_s: Optional[float] = None
    printed_total_bytes_per_s: Optional[float] = None
    requests_per_s: Optional[float] = None
    total_time: Optional[float] = None
    events: Optional[int] = None
    latency: Optional[Latency] = None
    bytes: Optional[int] = None
    seconds: Optional[float] = None
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    @property
    def has_results(self) -> bool:
        return self.layout is not None

    @property
    def completed_requests(self) -> bool:
        """False when sysbench counted no request at all (its latency figures are then meaningless)."""
        if self.events == 0:
            return False
        return not (self.reads == 0 and self.writes == 0 and self.other == 0)


class _Builder:
    """The lines of one run, before its figures are derived (see _finish)."""

    def __init__(self) -> None:
        self.run = SysbenchRun()
        self.rates: Dict[str, Tuple[float, str, int]] = {}
        self.transferred: Optional[Tuple[re.Match, str, int]] = None
        self.operations: Optional[Tuple[re.Match, str, int]] = None
        self.latency_lines: Dict[str, Tuple[float, str, int]] = {}
        self.latency_unit: Optional[str] = None
        self.in_latency = False
        self.in_results = False
        self.first_result: Optional[Tuple[str, int]] = None
        self.prepare: Optional[Tuple[re.Match, str, int]] = None
        self.doing: Optional[str] = None
        self.touched = False

    def results_started(self, line: str, lineno: int) -> None:
        self.in_results = True
        if self.first_result is None:
            self.first_result = (line, lineno)


def _number(text: str, line: str, lineno: int) -> float:
    return parse_unsigned(text, TOOL, line, lineno)


def _integer(text: str, line: str, lineno: int) -> int:
    return int(parse_unsigned(text, TOOL, line, lineno))


MAX_COUNT_DIGITS = 20  # sysbench counts in 64-bit integers


def _count(digits: str, line: str, lineno: int) -> int:
    """An exact count; ParseError past 20 digits (int() refuses more than 4300, slowly)."""
    if len(digits) > MAX_COUNT_DIGITS:
        raise ParseError(TOOL, "a count of at most %d digits" % MAX_COUNT_DIGITS, line, lineno)
    return int(digits)


def _size(number: str, unit: str, line: str, lineno: int) -> float:
    """'16Kb' (0.4/0.5, binary), '16KiB' (1.0, IEC), '512b'."""
    system = "iec" if unit.endswith("iB") else "sysbench"
    return _number(number, line, lineno) * byte_factor(unit, system, TOOL, line, lineno)


class _Reader:
    def __init__(self) -> None:
        self.builders: List[_Builder] = []
        self.current = _Builder()
        self.first_foreign: Optional[Tuple[str, int]] = None

    def new_run(self) -> None:
        """Close the current run; warnings printed before a run's banner (sysbench prints its option
        deprecation warnings first) go to the next run."""
        pending: List[str] = []
        if self.current.touched:
            self.builders.append(self.current)
        else:
            pending = self.current.run.warnings
        self.current = _Builder()
        self.current.run.warnings.extend(pending)

    def feed(self, line: str, lineno: int) -> None:
        builder = self.current
        match = _BANNER.match(line)
        if match:
            self.new_run()
            self.current.run.version = match.group("version")
            self.current.touched = True
            return
        if self._header(builder, line, lineno):
            return
        if self._message(builder, line):
            return
        if self._results(line, lineno):
            return
        if _SECTION_END.match(line):
            builder.in_results = builder.in_latency = False
        elif builder.in_results and not _KNOWN_NOISE.match(line):
            builder.run.warnings.append("ignored line %d: '%s'" % (lineno, line[:200]))
        elif self.first_foreign is None and not builder.touched:
            self.first_foreign = (line, lineno)

    def fresh(self) -> _Builder:
        """The builder for header lines: a new run when the current one already has results."""
        if self.current.operations is not None or self.current.rates or self.current.prepare is not None:
            self.new_run()
        return self.current

    def _header(self, builder: _Builder, line: str, lineno: int) -> bool:
        match = _DOING.match(line)
        if match and not builder.in_results:
            builder = self.fresh()
            what = match.group("what")
            builder.run.mode = MODES.get(what)
            builder.run.test = what
            builder.doing = line
            builder.touched = True
            return True
        match = _BLOCK_SIZE.match(line)
        if match and not builder.in_results:
            builder = self.fresh()
            size = _size(match.group("num"), match.group("unit"), line, lineno)
            builder.run.block_size = int(finite(size, TOOL, "block size", line, lineno))
            builder.touched = True
            return True
        match = _THREADS.match(line)
        if match and not builder.in_results:
            builder = self.fresh()
            _integer(match.group("num"), line, lineno)  # checked like every figure, not reported
            builder.touched = True
            return True
        return False

    def _message(self, builder: _Builder, line: str) -> bool:
        if _ERROR.match(line):
            builder.run.errors.append(line)
            builder.touched = True
            return True
        if _WARNING.match(line):
            builder.run.warnings.append(line)
            return True
        return False

    def _results(self, line: str, lineno: int) -> bool:
        for handler in (self._operations, self._transferred, self._rates, self._general, self._latency, self._prepare):
            if handler(line, lineno):
                return True
        return False

    def _restart_if(self, taken: bool) -> _Builder:
        """A result line the current run already has starts the next run (no banner between runs)."""
        if taken:
            self.new_run()
        return self.current

    def _operations(self, line: str, lineno: int) -> bool:
        match = _OPERATIONS.match(line)
        if not match:
            return False
        builder = self._restart_if(self.current.operations is not None or bool(self.current.rates))
        builder.operations = (match, line, lineno)
        builder.touched = True
        builder.results_started(line, lineno)
        return True

    def _transferred(self, line: str, lineno: int) -> bool:
        match = _TRANSFERRED.match(line)
        if match:
            self.current.transferred = (match, line, lineno)
            return True
        match = _REQUESTS.match(line)
        if match and self.current.operations is not None:
            self.current.run.requests_per_s = _number(match.group("num"), line, lineno)
            return True
        return False

    def _rates(self, line: str, lineno: int) -> bool:
        if line == "File operations:":
            builder = self._restart_if(bool(self.current.rates) or self.current.operations is not None)
            builder.touched = True
            builder.results_started(line, lineno)
            return True
        if line == "Throughput:":
            return True
        match = _RATE_LINE.match(line)
        if not match:
            return False
        key = match.group("key")
        builder = self._restart_if(key in self.current.rates)
        builder.rates[key] = (_number(match.group("num"), line, lineno), line, lineno)
        builder.touched = True
        builder.results_started(line, lineno)
        return True

    def _general(self, line: str, lineno: int) -> bool:
        if line in ("General statistics:", "Test execution summary:"):
            self.current.results_started(line, lineno)
            return True
        match = _TOTAL_TIME.match(line)
        if match:
            builder = self._restart_if(self.current.run.total_time is not None)
            builder.run.total_time = _number(match.group("num"), line, lineno)
            builder.touched = True
            return True
        match = _EVENTS.match(line)
        if match:
            self.current.run.events = _integer(match.group("num"), line, lineno)
            return True
        return line.startswith("total time taken by event execution:")

    def _latency(self, line: str, lineno: int) -> bool:
        builder = self.current
        match = _LATENCY_HEADER.match(line)
        if match:
            builder.in_latency = True
            builder.latency_unit = match.group("unit")
            builder.latency_lines = {}
            return True
        match = _LATENCY_LINE.match(line)
        if not match or not builder.in_latency:
            return False
        unit = match.group("unit") or builder.latency_unit
        if unit != "ms":
            raise ParseError(TOOL, "a latency in ms ('avg: 0.32ms', or a bare number under 'Latency (ms):')", line, lineno)
        key = match.group("key")
        if match.group("pct1") or match.group("pct2"):
            key = "percentile:" + (match.group("pct1") or match.group("pct2"))
        builder.latency_lines[key] = (_number(match.group("num"), line, lineno), line, lineno)
        return True

    def _prepare(self, line: str, lineno: int) -> bool:
        match = _PREPARE_BYTES.match(line)
        if not match:
            return False
        builder = self._restart_if(self.current.prepare is not None or self.current.in_results)
        builder.prepare = (match, line, lineno)
        builder.touched = True
        return True

    def finish(self) -> List[_Builder]:
        self.new_run()
        return self.builders


def _ms_to_ns(value_ms: float, line: str, lineno: int) -> float:
    return finite(value_ms * NS_PER_TIME_UNIT["ms"], TOOL, "latency", line, lineno)


def _latency(builder: _Builder, run: SysbenchRun) -> Optional[Latency]:
    lines = builder.latency_lines
    if not lines:
        return None
    latency = Latency()
    for key in ("avg", "max", "sum"):
        if key in lines:
            value, line, lineno = lines[key]
            setattr(latency, key, _ms_to_ns(value, line, lineno))
    if "min" in lines:
        value, line, lineno = lines["min"]
        if value >= _UNINITIALISED_MS or (latency.max is not None and value * 1e6 > latency.max):
            run.warnings.append("sysbench latency min '%s' is not a measured value (no request completed): left out" % line)
        else:
            latency.min = _ms_to_ns(value, line, lineno)
    for key, (value, line, lineno) in lines.items():
        if key.startswith("percentile:"):
            latency.percentile_rank = float(key.split(":", 1)[1])
            latency.percentile = _ms_to_ns(value, line, lineno)
    return latency


def _missing(builder: _Builder, what: str) -> ParseError:
    line, lineno = builder.first_result or (None, None)
    return ParseError(TOOL, what, line, lineno)


def _check_printed(run: SysbenchRun, name: str, derived: Optional[float], printed: Optional[float], decimals: int, factor: float) -> None:
    """Warn when a figure derived from exact counts disagrees with the rounded figure sysbench printed."""
    if derived is None or printed is None:
        return
    allowed = factor * 0.5 * 10.0 ** -decimals + 0.005 * derived + 1e-9
    if abs(derived - printed) > allowed:
        run.warnings.append(
            "sysbench printed %s %.6g B/s, but counts x block size / time give %.6g B/s" % (name, printed, derived)
        )


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _legacy_results(builder: _Builder, run: SysbenchRun) -> None:
    match, line, lineno = builder.operations
    run.layout = "0.4" if match.group("rword") == "Read" else "0.5"
    run.reads = _count(match.group("reads"), line, lineno)
    run.writes = _count(match.group("writes"), line, lineno)
    run.other = _count(match.group("other"), line, lineno)
    if run.total_time is None:
        raise _missing(builder, "'total time: N.NNNNs' after 'Operations performed:'")
    seconds = run.total_time
    run.seconds = seconds
    if seconds > 0:
        run.reads_per_s = finite(run.reads / seconds, TOOL, "rate", line, lineno)
        run.writes_per_s = finite(run.writes / seconds, TOOL, "rate", line, lineno)
        run.fsyncs_per_s = finite(run.other / seconds, TOOL, "rate", line, lineno)
    printed = _printed_transfers(builder, run)
    if run.block_size is not None:
        run.bytes = (run.reads + run.writes) * run.block_size
        if seconds > 0:
            run.read_bytes_per_s = finite(run.reads * run.block_size / seconds, TOOL, "rate", line, lineno)
            run.write_bytes_per_s = finite(run.writes * run.block_size / seconds, TOOL, "rate", line, lineno)
        if printed is not None:
            total_text, total_factor = printed
            _check_printed(run, "total transferred", run.read_bytes_per_s + run.write_bytes_per_s
                           if seconds > 0 else None, run.printed_total_bytes_per_s, _decimals(total_text), total_factor)
    elif printed is not None and seconds > 0:
        run.warnings.append("no 'Block size' line: bytes/s from sysbench's rounded 'Read ... Written ...' figures")
        run.read_bytes_per_s = run.printed_read_bytes_per_s
        run.write_bytes_per_s = run.printed_write_bytes_per_s
    else:
        raise _missing(builder, "'Block size N' before the results, or the 'Read N Written N' line")


def _printed_transfers(builder: _Builder, run: SysbenchRun) -> Optional[Tuple[str, float]]:
    if builder.transferred is None:
        return None
    match, line, lineno = builder.transferred
    sizes = {}
    for key in ("read", "written", "total", "rate"):
        factor = byte_factor(match.group(key + "_unit"), "sysbench", TOOL, line, lineno)
        sizes[key] = finite(_number(match.group(key), line, lineno) * factor, TOOL, "size", line, lineno)
    run.printed_total_bytes_per_s = sizes["rate"]
    if run.total_time:
        run.printed_read_bytes_per_s = sizes["read"] / run.total_time
        run.printed_write_bytes_per_s = sizes["written"] / run.total_time
    return match.group("rate"), byte_factor(match.group("rate_unit"), "sysbench", TOOL, line, lineno)


def _rate(builder: _Builder, key: str) -> float:
    if key not in builder.rates:
        raise _missing(builder, "'%s: N' in the File operations / Throughput sections" % key)
    return builder.rates[key][0]


def _modern_results(builder: _Builder, run: SysbenchRun) -> None:
    run.layout = "1.0" if builder.latency_unit == "ms" else "1.0-pre"
    run.reads_per_s = _rate(builder, "reads/s")
    run.writes_per_s = _rate(builder, "writes/s")
    run.fsyncs_per_s = _rate(builder, "fsyncs/s")
    read_mib, write_mib = _rate(builder, "read, MiB/s"), _rate(builder, "written, MiB/s")
    line, lineno = builder.rates["read, MiB/s"][1:]
    run.printed_read_bytes_per_s = finite(read_mib * MIB, TOOL, "rate", line, lineno)
    run.printed_write_bytes_per_s = finite(write_mib * MIB, TOOL, "rate", line, lineno)
    if run.total_time is None:
        raise _missing(builder, "'total time: N.NNNNs' in the General statistics section")
    run.seconds = run.total_time
    if run.block_size is None:
        run.warnings.append("no 'Block size' line: bytes/s from sysbench's rounded MiB/s figures")
        run.read_bytes_per_s = run.printed_read_bytes_per_s
        run.write_bytes_per_s = run.printed_write_bytes_per_s
        return
    run.read_bytes_per_s = finite(run.reads_per_s * run.block_size, TOOL, "rate", line, lineno)
    run.write_bytes_per_s = finite(run.writes_per_s * run.block_size, TOOL, "rate", line, lineno)
    for name, derived, printed, key in (
        ("read MiB/s", run.read_bytes_per_s, run.printed_read_bytes_per_s, "read, MiB/s"),
        ("written MiB/s", run.write_bytes_per_s, run.printed_write_bytes_per_s, "written, MiB/s"),
    ):
        text = builder.rates[key][1].rsplit(None, 1)[-1]
        _check_printed(run, name, derived, printed, _decimals(text), MIB)


def _prepare_results(builder: _Builder, run: SysbenchRun) -> None:
    match, line, lineno = builder.prepare
    run.layout = PREPARE
    run.mode = PREPARE
    run.bytes = _count(match.group("bytes"), line, lineno)
    run.seconds = _number(match.group("seconds"), line, lineno)
    if run.seconds > 0:
        run.write_bytes_per_s = finite(run.bytes / run.seconds, TOOL, "rate", line, lineno)
    factor = MIB if match.group("unit") == "MiB" else 10 ** 6
    run.printed_write_bytes_per_s = finite(_number(match.group("rate"), line, lineno) * factor, TOOL, "rate", line, lineno)
    _check_printed(run, "prepare rate", run.write_bytes_per_s, run.printed_write_bytes_per_s,
                   _decimals(match.group("rate")), factor)


def _finish(builder: _Builder) -> SysbenchRun:
    run = builder.run
    if builder.operations is not None:
        _legacy_results(builder, run)
    elif builder.rates:
        _modern_results(builder, run)
    elif builder.prepare is not None:
        _prepare_results(builder, run)
    if run.layout not in (None, PREPARE):
        run.latency = _latency(builder, run)
        if run.latency is None:
            run.warnings.append("no latency section in the sysbench output")
        elif not run.completed_requests:
            run.warnings.append("sysbench completed no request: its latency figures are not measurements")
        if run.mode is None and run.test is not None:
            run.warnings.append("sysbench test '%s' is not a fileio mode this parser knows" % run.test)
    return run


def parse(text: str) -> List[SysbenchRun]:
    """Every sysbench fileio run (prepare, run, or failed) in text, in order. ParseError when there
    is none, or when a result section lacks a figure or holds one that cannot be read exactly."""
    reader = _Reader()
    for lineno, line in stripped_lines(text, TOOL):
        reader.feed(line, lineno)
    runs = []
    non_fileio: Optional[str] = None
    for builder in reader.finish():
        run = _finish(builder)
        if run.has_results or run.errors:
            run.index = len(runs)
            runs.append(run)
        elif run.test is not None and run.mode is None and non_fileio is None:
            non_fileio = builder.doing
    if not runs:
        if non_fileio is not None:
            raise ParseError(TOOL, "sysbench fileio results (this is another sysbench test)", non_fileio)
        line, lineno = reader.first_foreign or (first_line(text), 1 if text.strip() else None)
        raise ParseError(
            TOOL, "sysbench fileio results ('Operations performed:', 'File operations:' or 'bytes written in')",
            line, lineno,
        )
    return runs


def direction_of(run: SysbenchRun) -> Optional[str]:
    """'read', 'write', 'mixed' or None (unknown mode) for a run's mode."""
    if run.mode in READ_MODES:
        return "read"
    if run.mode in WRITE_MODES:
        return "write"
    if run.mode == "rndrw":
        return "mixed"
    return None


# ---------------------------------------------------------------------------------------------- the registry's interface

# sysbench: its banner, and the first line of each results layout (0.4/0.5, 1.0, prepare). The banner's
# version is taken whole ((?![0-9]|\.[0-9])): what follows it cannot take back some of its digits.
_SYSBENCH_MARKERS = line_markers(
    r"sysbench [0-9]+(?:\.[0-9]+)+(?![0-9]|\.[0-9])[^\s:]*(?::\s|{sp}+\(|{sp}*$)",
    r"Operations performed:{sp}+[0-9]+ (?:Read|reads), [0-9]+ (?:Write|writes), ",
    r"File operations:{sp}*\n\s*reads/s:",
)


def recognise(text: str) -> Optional[int]:
    """tool=auto: sysbench's banner or the first line of one of its result layouts (rank 3)."""
    return 3 if _SYSBENCH_MARKERS.search(text) else None


def _result(run: SysbenchRun) -> Dict[str, Any]:
    """One sysbench run: reads/s and writes/s go to the directions the test mode exercises; the one
    latency sysbench reports (all requests, fsyncs included) to that direction when there is one."""
    result = partial_result("sysbench", run.version, job_ident(run.mode or run.test, run.index))
    result.update(bytes=run.bytes, seconds=run.seconds, error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
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
        found = latency_ns(mean=latency.avg, min=latency.min, max=latency.max, **percentiles)
        if len(directions) == 1:
            metrics["latency_ns"][directions[0]] = found
        else:
            result["warnings"].append("sysbench reports one latency for reads, writes and fsyncs together: "
                                      "not attributed to a direction")
    return result


def records(text: str, direction: Optional[str] = None, argv: Optional[List[str]] = None) -> List[Dict[str, object]]:
    """One partial record per sysbench run of text; its test mode says the direction."""
    del direction, argv
    return [_result(run) for run in parse(text)]
