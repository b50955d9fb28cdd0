# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ioping output (0.x and 1.x summaries, the raw ``-B``/``-p`` lines) into exact figures.

One IopingRun per statistics block (``--- TARGET ioping statistics ---`` and the lines after it),
or per raw line when the output holds no statistics block. Formats:

- 1.x: ``9 requests completed in 987.0 us, 36 KiB read, 9.12 k iops, 35.6 MiB/s``, then
  ``[N too fast, ][N too slow, ]generated 10 requests in 9.00 s, 40 KiB, 1 iops, 4.44 KiB/s`` and
  ``min/avg/max/mdev = 29.4 us / 109.7 us / 143.9 us / 37.9 us``. ``completed in`` is the time
  the counted requests took (the warmup request and requests outside -t/-T are not counted);
  ``generated`` is the wall time of the whole run.
- 0.9 (and the 1.0 builds that print no ``generated`` line):
  ``220 requests completed in 3.01 s, 73 iops, 292.9 KiB/s``.
- 0.x: ``5 requests completed in 4794.0 ms, 364 iops, 1.4 MiB/s`` (older: ``23.3 mb/s``, where
  ``mb`` is 2**20 bytes) and ``min/avg/max/mdev = 0.2/2.8/12.7/5.0 ms``. ``completed in`` is the
  wall time of the run, including the interval between requests.
- raw (``-B``, ``-p N``): 1.x ``valid time_ns iops bytes/s min avg max mdev count wall_ns``
  (10 integers, ns); 0.x ``count time_us iops bytes/s min avg max mdev`` (8 integers, us).

ioping prints counts with decimal suffixes (``9.12 k`` = 9120), sizes in IEC units, times with
ns/us/ms/s/min/hour, each rounded to 3 or 4 significant digits and its iops truncated to an
integer. Figures used (SI base units):

- 1.x summary: seconds = the ``completed in`` time; bytes = the size it printed; ops/s = requests /
  seconds and bytes/s = bytes / seconds (more exact than the truncated iops it prints, which
  with the printed rate is only a cross-check).
- 0.x and 0.9 summaries: ioping's own iops and rate as printed (its time is the wall time, so
  they cannot be derived); seconds = that time; bytes unknown.
- raw: seconds = time; ops/s = valid / time (exact); the request size is rate / iops and
  bytes = valid x request size when that division is exact, else the printed rate is used.
- latency: min, avg, max and mdev in ns.

Request lines (1.x: ``4 KiB <<< /tmp (ext4 /dev/sda1 1 GiB): request=2 time=79.3 us``) may end in
an annotation, and ioping counts them as its source does (ioping.c ``add_statistics``, 1.2 and 1.3):
``(warmup)`` (the first ``-a`` requests, default 1), ``(too fast)`` (under ``-t``) and ``(too slow)``
(over ``-T``) are NOT in the statistics (``generated`` counts them, ``completed`` does not);
``(fast)`` and ``(slow)`` ARE counted: only a note that the request took under half / over twice
the running average (1.3; in 1.2: the bottom / top 5% of the range so far, after 5 requests). The
statistics block stays the source of the figures; the lines are counted per annotation
(``request_lines``, ``annotations``) and, when all requests were printed, checked against it: lines
minus warmup, too fast and too slow must be the counted requests (else a warning). ``(slow)``
requests give a warning (they stay in the figures). A block that counted no request has no latency
(ioping prints 0 ns for none) and no rate.

The direction is the summary's ``read``/``written``, else the ``<<<``/``>>>`` request lines, else
``-W``/``-G`` in the command line, else the caller's, else read (ioping's default) with a warning.
``ioping: ...`` lines are errors when no statistics follow, else warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import ParseError, RunIssues, shared_messages, stripped_lines
from .records import job_ident, latency_ns, partial_result
from .units import NS_PER_S, UNSIGNED, byte_factor, count_factor, finite, ns_per, parse_unsigned
from .values import line_markers

TOOL = "ioping"
READ = "read"
WRITE = "write"
MIXED = "mixed"

_NUM = UNSIGNED
_COUNT = r"(?P<{0}>%s)(?: (?P<{0}_sfx>[kMGTPE]))?" % _NUM
_TIME = r"(?P<{0}>%s) ?(?P<{0}_unit>ns|us|ms|s|min|hour)" % _NUM
_SIZE = r"(?P<{0}>%s) ?(?P<{0}_unit>[KMGTPE]iB|B|mb)" % _NUM

_HEADER = re.compile(r"^--- (?P<target>.*) ioping statistics ---$")
_SUMMARY = re.compile(
    "^" + _COUNT.format("valid") + " requests completed in " + _TIME.format("time") + ", "
    + "(?:" + _SIZE.format("size") + r"(?: (?P<word>read|written))?, )?"
    + _COUNT.format("iops") + " iops, " + _SIZE.format("speed") + "/s$"
)
_GENERATED = re.compile(
    "^(?:" + _COUNT.format("fast") + " too fast, )?(?:" + _COUNT.format("slow") + " too slow, )?"
    + "generated " + _COUNT.format("count") + " requests in " + _TIME.format("load") + ", "
    + _SIZE.format("load_size") + ", " + _COUNT.format("load_iops") + " iops, "
    + _SIZE.format("load_speed") + "/s$"
)
_LATENCY_1X = re.compile(
    "^min/avg/max/mdev = " + " / ".join(_TIME.format(name) for name in ("min", "avg", "max", "mdev")) + "$"
)
_LATENCY_0X = re.compile(
    r"^min/avg/max/mdev = (?P<min>%s)/(?P<avg>%s)/(?P<max>%s)/(?P<mdev>%s) (?P<unit>ms|us)$" % ((_NUM,) * 4)
)
_REQUEST_1X = re.compile(
    r"^(?P<size>%s) ?(?P<unit>[KMGTPE]iB|B) (?P<dir><<<|>>>) .*: request=[0-9]+ time=%s"
    r"(?: \((?P<note>[^()]{1,40})\))?$" % (_NUM, _TIME.format("time"))
)
# ioping leaves these out of its statistics; every other request line (fast and slow too) is counted.
NOT_COUNTED = ("warmup", "too fast", "too slow")
# 1.3 -k (RWF_NOWAIT): a request refused with EAGAIN is neither counted nor generated.
NOT_GENERATED = "EAGAIN"
_REQUEST_0X = re.compile(r"^(?P<size>[0-9]+) bytes from .*: request=[0-9]+ time=%s" % _NUM)
_RAW = re.compile(r"^[0-9]{1,30}(?: [0-9]{1,30}){7}(?: [0-9]{1,30} [0-9]{1,30})?$")
_MESSAGE = re.compile(r"^(?:\S*/)?ioping: ")


@dataclass
class IopingRun(RunIssues):
    """One ioping statistics block (or raw line), figures in SI base units."""

    index: int = 0
    source: str = "summary"  # summary | raw
    layout: Optional[str] = None  # 1.x | 0.9 | 0.x | raw-1.x | raw-0.x
    target: Optional[str] = None
    direction: Optional[str] = None
    requests: Optional[float] = None  # counted (valid) requests
    generated: Optional[float] = None  # all requests, warmup included (1.x)
    too_fast: Optional[float] = None
    too_slow: Optional[float] = None
    request_size: Optional[int] = None
    iops: Optional[float] = None
    bytes_per_s: Optional[float] = None
    printed_iops: Optional[float] = None
    printed_bytes_per_s: Optional[float] = None
    bytes: Optional[int] = None
    seconds: Optional[float] = None
    wall_seconds: Optional[float] = None
    min_ns: Optional[float] = None
    avg_ns: Optional[float] = None
    max_ns: Optional[float] = None
    mdev_ns: Optional[float] = None
    request_lines: int = 0  # 1.x request lines before this block
    annotations: Dict[str, int] = field(default_factory=dict)  # lines per annotation: warmup, fast, too slow ...
    counted_request_ns: float = 0.0  # sum of the printed times of the lines ioping counts
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)


def _count(match: re.Match, name: str, line: str, lineno: int) -> float:
    value = parse_unsigned(match.group(name), TOOL, line, lineno)
    return finite(value * count_factor(match.group(name + "_sfx") or "", TOOL, line, lineno), TOOL, "count", line, lineno)


def _seconds(match: re.Match, name: str, line: str, lineno: int) -> float:
    value = parse_unsigned(match.group(name), TOOL, line, lineno)
    return finite(value * ns_per(match.group(name + "_unit"), TOOL, line, lineno) / NS_PER_S, TOOL, "time", line, lineno)


def _ns(match: re.Match, name: str, line: str, lineno: int) -> float:
    value = parse_unsigned(match.group(name), TOOL, line, lineno)
    return finite(value * ns_per(match.group(name + "_unit"), TOOL, line, lineno), TOOL, "latency", line, lineno)


def _bytes(match: re.Match, name: str, line: str, lineno: int) -> float:
    unit = match.group(name + "_unit")
    system = "ioping_legacy" if unit == "mb" else "iec"
    value = parse_unsigned(match.group(name), TOOL, line, lineno) * byte_factor(unit, system, TOOL, line, lineno)
    return finite(value, TOOL, "size", line, lineno)


def _cross_check(run: IopingRun, what: str, derived: Optional[float], printed: Optional[float]) -> None:
    """ioping rounds to 3-4 significant digits and truncates iops: allow that, flag anything more."""
    if derived is None or printed is None:
        return
    if abs(derived - printed) > 0.01 * max(derived, printed) + 1.0:
        run.warnings.append("ioping printed %s %.6g, its own totals give %.6g" % (what, printed, derived))


class _Block:
    """A statistics block being read: header, summary, generated and latency lines."""

    def __init__(self, target: str, line: str, lineno: int) -> None:
        self.run = IopingRun(source="summary", target=target)
        self.header = (line, lineno)
        self.request_dirs: set = set()
        self.summary: Optional[Tuple[re.Match, str, int]] = None
        self.generated: Optional[Tuple[re.Match, str, int]] = None
        self.latency: Optional[Tuple[re.Match, str, int, str]] = None
        self.expecting = "summary"


def _summary_figures(block: _Block) -> IopingRun:
    run = block.run
    if block.summary is None:
        line, lineno = block.header
        raise ParseError(TOOL, "'N requests completed in T, ...' after the statistics header", line, lineno)
    match, line, lineno = block.summary
    run.requests = _count(match, "valid", line, lineno)
    time_s = _seconds(match, "time", line, lineno)
    run.printed_iops = _count(match, "iops", line, lineno)
    run.printed_bytes_per_s = _bytes(match, "speed", line, lineno)
    word = match.group("word")
    if word:
        run.direction = READ if word == "read" else WRITE
    if block.generated is not None:
        run.layout = "1.x"
        _generated(run, block.generated)
    elif match.group("size") is not None:
        run.layout = "1.x"
    else:
        run.layout = "0.x" if match.group("speed_unit") in ("mb", "MiB") and match.group("time_unit") == "ms" else "0.9"
    if run.layout == "1.x":
        if match.group("size") is None:
            raise ParseError(TOOL, "the size of the completed requests ('36 KiB read')", line, lineno)
        run.seconds = time_s
        run.bytes = int(round(_bytes(match, "size", line, lineno)))
        if time_s > 0:
            run.iops = finite(run.requests / time_s, TOOL, "rate", line, lineno)
            run.bytes_per_s = finite(run.bytes / time_s, TOOL, "rate", line, lineno)
        _cross_check(run, "iops", run.iops, run.printed_iops)
        _cross_check(run, "bytes/s", run.bytes_per_s, run.printed_bytes_per_s)
    else:
        run.seconds = run.wall_seconds = time_s
        run.iops = run.printed_iops
        run.bytes_per_s = run.printed_bytes_per_s
    run.warnings.append("ioping summary figures are rounded to 3-4 significant digits (ioping -B prints exact ones)")
    _latency_figures(block)
    if run.layout == "1.x":
        _check_request_lines(run)
    return run


def _check_request_lines(run: IopingRun) -> None:
    """The request lines, counted as ioping counts them, against its statistics block (1.x)."""
    notes = run.annotations
    if notes.get("slow"):
        run.warnings.append("%d request(s) ioping marked (slow), over twice the running average (1.3; 1.2: the top 5%% "
                            "of the range so far): counted in the figures, as ioping counts them" % notes["slow"])
    printed = run.request_lines - notes.get(NOT_GENERATED, 0)
    if printed and printed == run.generated:  # every request printed: the counts must agree
        skipped = [notes.get(name, 0) for name in NOT_COUNTED]
        counted = printed - sum(skipped)
        if counted != run.requests:
            run.warnings.append("request lines say %d counted requests (%d lines - %d warmup - %d too fast - %d too "
                                "slow), the statistics block %d: the statistics block is used"
                                % ((counted, run.request_lines) + tuple(skipped) + (run.requests,)))
        elif run.seconds and abs(run.counted_request_ns / NS_PER_S - run.seconds) > 0.02 * run.seconds:
            run.warnings.append("the counted request lines' times add up to %.6g s, the statistics block says %.6g s"
                                % (run.counted_request_ns / NS_PER_S, run.seconds))
    if run.requests == 0:
        warmup = notes.get("warmup") if run.request_lines else (
            None if run.generated is None else run.generated - (run.too_fast or 0) - (run.too_slow or 0))
        parts = ["%d %s" % (count, name) for name, count in
                 (("warmup", warmup), ("too fast", run.too_fast), ("too slow", run.too_slow)) if count]
        run.min_ns = run.avg_ns = run.max_ns = run.mdev_ns = None
        run.warnings.append("no request counted%s: ioping's 0 ns latencies and 0 iops are not figures"
                            % (" (%s)" % ", ".join(parts) if parts else ""))


def _generated(run: IopingRun, found: Tuple[re.Match, str, int]) -> None:
    match, line, lineno = found
    run.generated = _count(match, "count", line, lineno)
    run.wall_seconds = _seconds(match, "load", line, lineno)
    if match.group("fast"):
        run.too_fast = _count(match, "fast", line, lineno)
    if match.group("slow"):
        run.too_slow = _count(match, "slow", line, lineno)
    for what, value in (("too fast", run.too_fast), ("too slow", run.too_slow)):
        if value:
            run.warnings.append("%d request(s) %s (outside -t/-T) are not in the figures" % (value, what))


def _latency_figures(block: _Block) -> None:
    run = block.run
    if block.latency is None:
        line, lineno = block.summary[1:] if block.summary else block.header
        raise ParseError(TOOL, "'min/avg/max/mdev = ...' after the summary", line, lineno)
    match, line, lineno, kind = block.latency
    if kind == "1.x":
        run.min_ns, run.avg_ns, run.max_ns, run.mdev_ns = (_ns(match, name, line, lineno)
                                                           for name in ("min", "avg", "max", "mdev"))
        return
    factor = ns_per(match.group("unit"), TOOL, line, lineno)
    values = [finite(parse_unsigned(match.group(name), TOOL, line, lineno) * factor, TOOL, "latency", line, lineno)
              for name in ("min", "avg", "max", "mdev")]
    run.min_ns, run.avg_ns, run.max_ns, run.mdev_ns = values


def _raw_run(line: str, lineno: int) -> IopingRun:
    numbers = [int(text) for text in line.split()]
    run = IopingRun(source="raw")
    if len(numbers) == 10:
        run.layout, unit_ns = "raw-1.x", 1
        valid, time_, iops, speed, low, avg, high, mdev, count, wall = numbers
        run.generated = count
        run.wall_seconds = wall / NS_PER_S
    else:
        run.layout, unit_ns = "raw-0.x", 1000
        valid, time_, iops, speed, low, avg, high, mdev = numbers
    run.requests = valid
    run.printed_iops = float(iops)
    run.printed_bytes_per_s = float(speed)
    run.seconds = time_ * unit_ns / NS_PER_S
    run.min_ns, run.avg_ns, run.max_ns, run.mdev_ns = (value * unit_ns for value in (low, avg, high, mdev))
    if time_ > 0 and valid > 0:
        run.iops = valid * NS_PER_S / (time_ * unit_ns)
        size = round(speed / run.iops) if run.iops else 0
        if size > 0 and abs(size * run.iops - speed) <= 1.0 + 1e-9 * speed:
            run.request_size = size
            run.bytes = valid * size
            run.bytes_per_s = run.bytes / run.seconds
        else:
            run.bytes_per_s = float(speed)
            run.warnings.append("ioping raw line %d: request size not exact (rate/iops): bytes unknown" % lineno)
    for value in (run.seconds, run.iops or 0.0, run.bytes_per_s or 0.0, run.max_ns):
        finite(float(value), TOOL, "figure", line, lineno)
    return run


def _is_total(last: IopingRun, periods: List[IopingRun]) -> bool:
    """Whether the last raw line is the total ioping -B prints after its -p period lines: it counts at
    least every period's requests and time, and spans their minimum and maximum."""
    if last.layout != "raw-1.x" or any(run.layout != "raw-1.x" for run in periods):
        return False
    if last.requests < sum(run.requests for run in periods) or last.generated < sum(run.generated for run in periods):
        return False
    if last.seconds + len(periods) * 1e-9 < sum(run.seconds for run in periods):  # each time is rounded to 1 ns
        return False
    measured = [run for run in periods if run.requests]
    if measured and last.min_ns > min(run.min_ns for run in measured):
        return False
    return last.max_ns >= max(run.max_ns for run in periods)


class _Reader:
    def __init__(self) -> None:
        self.blocks: List[_Block] = []
        self.block: Optional[_Block] = None
        self.raw: List[Tuple[IopingRun, int]] = []
        self.messages: List[str] = []
        self.request_dirs: set = set()  # every request line of the text
        self.pending_dirs: set = set()  # request lines since the last statistics block
        self.pending_size: Optional[int] = None
        self.pending_lines, self.pending_notes, self.pending_ns = 0, {}, 0.0  # the same lines, counted
        self.request_lines = 0
        self.first_foreign: Optional[Tuple[str, int]] = None

    def feed(self, line: str, lineno: int) -> None:
        match = _HEADER.match(line)
        if match:
            self.block = _Block(match.group("target"), line, lineno)
            self.block.request_dirs, self.block.run.request_size = self.pending_dirs, self.pending_size
            run = self.block.run
            run.request_lines, run.annotations, run.counted_request_ns = (self.pending_lines, self.pending_notes,
                                                                          self.pending_ns)
            self.pending_dirs, self.pending_size = set(), None
            self.pending_lines, self.pending_notes, self.pending_ns = 0, {}, 0.0
            self.blocks.append(self.block)
            return
        block = self.block
        if block is not None and self.in_block(block, line, lineno):
            return
        if _RAW.match(line):
            self.raw.append((_raw_run(line, lineno), lineno))
            return
        if self.request_line(line, lineno):
            return
        if _MESSAGE.match(line):
            self.messages.append(line)
        elif self.first_foreign is None:
            self.first_foreign = (line, lineno)

    def in_block(self, block: _Block, line: str, lineno: int) -> bool:
        if block.expecting == "summary":
            match = _SUMMARY.match(line)
            if match:
                block.summary = (match, line, lineno)
                block.expecting = "generated"
                return True
            raise ParseError(TOOL, "'N requests completed in T, ...' after the statistics header", line, lineno)
        if block.expecting == "generated":
            match = _GENERATED.match(line)
            if match:
                block.generated = (match, line, lineno)
                block.expecting = "latency"
                return True
        if block.expecting in ("generated", "latency"):
            match = _LATENCY_1X.match(line)
            kind = "1.x"
            if not match:
                match, kind = _LATENCY_0X.match(line), "0.x"
            if match:
                block.latency = (match, line, lineno, kind)
                block.expecting = "done"
                return True
            raise ParseError(TOOL, "'min/avg/max/mdev = ...' after the summary", line, lineno)
        return False

    def request_line(self, line: str, lineno: int) -> bool:
        match = _REQUEST_1X.match(line)
        if match:
            direction = READ if match.group("dir") == "<<<" else WRITE
            size = parse_unsigned(match.group("size"), TOOL, line, lineno) * byte_factor(
                match.group("unit"), "iec", TOOL, line, lineno)
            note = match.group("note")
            self.pending_lines += 1
            self.request_lines += 1
            if note:
                self.pending_notes[note] = self.pending_notes.get(note, 0) + 1
            if note not in NOT_COUNTED and note != NOT_GENERATED:
                self.pending_ns += _ns(match, "time", line, lineno)
        else:
            match = _REQUEST_0X.match(line)
            if not match:
                return False
            direction, size = READ, parse_unsigned(match.group("size"), TOOL, line, lineno)
        self.request_dirs.add(direction)
        self.pending_dirs.add(direction)
        self.pending_size = self.pending_size or int(finite(size, TOOL, "size", line, lineno))
        return True


def _argv_direction(argv: Optional[List[str]]) -> Optional[str]:
    """What an ioping command line says: -G ping-pong, -W write, else read (ioping's default)."""
    if not argv or not isinstance(argv[0], str) or not argv[0].endswith("ioping"):
        return None
    flags = "".join(arg[1:] for arg in argv[1:] if isinstance(arg, str) and re.match(r"^-[A-Za-z]+$", arg))
    if "G" in flags:
        return MIXED
    if "W" in flags:
        return WRITE
    return READ


def _direction(run: IopingRun, request_dirs: set, argv: Optional[List[str]], given: Optional[str]) -> None:
    if run.direction is not None:
        return
    if run.layout == "1.x" and run.source == "summary":
        run.direction = MIXED  # 1.x says read or written unless -G alternated them
        return
    if len(request_dirs) == 1:
        run.direction = next(iter(request_dirs))
    elif len(request_dirs) > 1:
        run.direction = MIXED
    else:
        run.direction = _argv_direction(argv) or (given if given in (READ, WRITE) else None)
    if run.direction is None:
        run.direction = READ
        run.warnings.append("ioping output does not say the direction: read assumed (ioping reads unless -W)")


def _summary_runs(reader: _Reader) -> List[IopingRun]:
    runs = []
    for block in reader.blocks:
        runs.append(_summary_figures(block))
    if reader.raw:
        for run in runs:
            run.warnings.append("%d periodic raw line(s) (ioping -p) not used: the statistics block is the total"
                                % len(reader.raw))
    return runs


def _raw_runs(reader: _Reader) -> List[IopingRun]:
    runs = [run for run, _lineno in reader.raw]
    if len(runs) > 1 and _is_total(runs[-1], runs[:-1]):
        total = runs[-1]
        total.warnings.append("%d periodic raw line(s) (ioping -p) before the total line not used" % (len(runs) - 1))
        return [total]
    return runs


def parse(text: str, argv: Optional[List[str]] = None, direction: Optional[str] = None) -> List[IopingRun]:
    """Every ioping statistics block (or raw line) in text, in order. ParseError when there is none or
    a figure cannot be read exactly. argv and direction only help when the output does not say
    whether ioping read or wrote."""
    reader = _Reader()
    for lineno, line in stripped_lines(text, TOOL):
        reader.feed(line, lineno)
    runs = _summary_runs(reader) if reader.blocks else _raw_runs(reader)
    dirs = [block.request_dirs for block in reader.blocks] if reader.blocks else [reader.request_dirs] * len(runs)
    if not runs and reader.messages:
        runs = [IopingRun(source="message", errors=list(reader.messages))]
    elif runs:
        messages = shared_messages(reader.messages, "ioping messages")
        for run in runs:
            run.warnings.extend(messages)
    if not runs:
        line, lineno = reader.first_foreign or (None, None)
        expected = "an ioping statistics block ('--- ... ioping statistics ---') or raw -B line"
        if reader.request_lines:
            expected += ", found %d request line(s) but no statistics block (the output was cut before ioping ended)" \
                % reader.request_lines
        raise ParseError(TOOL, expected, line, lineno)
    for index, run in enumerate(runs):
        run.index = index
        if run.source != "message":
            _direction(run, dirs[index], argv, direction)
    return runs


# ---------------------------------------------------------------------------------------------- the registry's interface

# ioping: its statistics header and request lines (never ping's "--- host ping statistics ---").
_IOPING_MARKERS = line_markers(
    r"--- .* ioping statistics ---{sp}*$",
    r"[0-9.]+ ?[KMGTPE]?i?B (?:<<<|>>>) .*: request=[0-9]+ time=",
    r"[0-9]+ bytes from .*: request=[0-9]+ time=[0-9.]+ ms",
)
# Weak ioping markers: its own messages, and raw -B lines (10 integers, 1.x) alone in the text.
_IOPING_MESSAGE = line_markers(r"(?:\S*/)?ioping: ")
_IOPING_RAW_LINE = re.compile(r"[0-9]{1,30}(?: [0-9]{1,30}){9}")


def _only_ioping_raw_lines(text: str) -> bool:
    """Every non-blank line is an ioping -B raw line of 10 integers, and there is one."""
    found = False
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if not _IOPING_RAW_LINE.fullmatch(line):
            return False
        found = True
    return found


def recognise(text: str) -> Optional[int]:
    """tool=auto: ioping's statistics header, request lines or messages, or raw -B lines alone (rank 5)."""
    return 5 if _IOPING_MARKERS.search(text) or _IOPING_MESSAGE.search(text) or _only_ioping_raw_lines(text) else None


def _result(run: IopingRun) -> Dict[str, Any]:
    """One ioping statistics block (or raw line): its figures go to the direction ioping tested."""
    result = partial_result("ioping", None, job_ident(run.target, run.index))
    result.update(bytes=run.bytes, seconds=run.seconds, error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
    if run.direction in ("read", "write"):
        metrics[run.direction + "_bytes_per_s"] = run.bytes_per_s
        metrics[run.direction + "_iops"] = run.iops
        if run.avg_ns is not None and run.requests:
            metrics["latency_ns"][run.direction] = latency_ns(
                mean=run.avg_ns, min=run.min_ns, max=run.max_ns, stdev=run.mdev_ns)
    elif run.direction == "mixed":
        result["warnings"].append("ioping alternated reads and writes (-G): figures not attributed to a direction")
    return result


def records(text: str, direction: Optional[str] = None, argv: Optional[List[str]] = None) -> List[Dict[str, object]]:
    """One partial record per ioping statistics block (or raw line) of text, in the direction ioping tested."""
    return [_result(run) for run in parse(text, argv, direction)]
