# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse bonnie++ output (CSV lines and text tables, 1.03 to 2.00a) into exact figures.

One BonnieRun per CSV line, or, when the text holds no CSV line, per data row of the text
"Sequential Output / Input / Random Seeks" table (bonnie++ prints one row per run; bon_csv2txt
prints one row per CSV line it was given). The CSV is preferred because it is exact; the text
table rounds (1.98+: ``18.8m``) and truncates long machine names.

CSV layouts, told apart by the number of fields:

- 27 fields, bonnie++ 1.03: ``name,size,putc,putc_cpu,put_block,...,seeks,seeks_cpu,files,
  seq_create,...,ran_del_cpu`` (no version field).
- 48 fields, format 1.96/1.97: ``format_version,bonnie_version,name,concurrency,seed,file_size,
  chunk_size,putc,...`` then twelve latencies (``putc_latency`` ... ``ran_del_latency``).
- 50 fields, format 1.98 (bonnie++ 1.98 to 2.00a): two more fields after ``chunk_size``, the
  number of seeks and of seeker processes, shift every later column by two. (The header line
  bonnie++ 2.00a prints with ``-x`` still names the 48 columns of 1.96: it is not used.)

Units: rates are KiB/s (``K/sec``, K = 1024): bytes/s = value x 1024; the 1.98+ text table
writes ``1589k`` (KiB/s), ``18.8m`` (MiB/s), ``2.4g`` (GiB/s). Seeks and file operations are per
second. Latencies carry their unit (``8510us``, ``101ms``, ``12s``) and are the maximum latency
of each test. ``+++++`` (``+++`` for the CPU) means the test ran too fast to measure: the figure
is None and a warning says so, never a number. An empty field is a test that did not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import ParseError, RunIssues, first_line, shared_messages
from .records import job_ident, latency_ns, partial_result
from .units import UNSIGNED, byte_factor, finite, ns_per, parse_unsigned
from .values import SP

TOOL = "bonnie"
TOO_FAST = "+++++"
TOO_FAST_CPU = "+++"

IO_TESTS = ("putc", "put_block", "rewrite", "getc", "get_block", "seeks")
FILE_TESTS = ("seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del")
RATE_TESTS = ("putc", "put_block", "rewrite", "getc", "get_block")  # KiB/s; seeks and file tests are ops/s
LABELS = {
    "putc": "sequential output per char",
    "put_block": "sequential output block",
    "rewrite": "rewrite",
    "getc": "sequential input per char",
    "get_block": "sequential input block",
    "seeks": "random seeks",
    "seq_create": "sequential create",
    "seq_stat": "sequential stat",
    "seq_del": "sequential delete",
    "ran_create": "random create",
    "ran_stat": "random stat",
    "ran_del": "random delete",
}

_V103 = "1.03"
_V196 = "1.96"
_V198 = "1.98"
_FIELD_COUNTS = {27: _V103, 48: _V196, 50: _V198}
_CSV_VERSION = re.compile(r"^1\.9[0-9]$|^[2-9]\.[0-9]+$")
_CSV_HEADER = re.compile(r"^(?:format_version|name),")
_NUM = UNSIGNED
_LATENCY = re.compile(r"^(?P<num>%s)(?P<unit>ns|us|ms|s)$" % _NUM)
_SIZE = re.compile(r"^(?P<num>%s)(?P<unit>[KMGTP]?)(?::.*)?$" % _NUM)
_TEXT_RATE = re.compile(r"^(?P<num>%s)(?P<unit>[kmgt]?)$" % _NUM)
_INT_FIELD = re.compile(r"^([0-9]{1,20})(?::.*)?$")  # 1.03 "16:100000:16/64"
_VERSION_LINE = re.compile(r"^(?P<indent>\s*)Version\s+(?P<version>\S+)\s+-+Sequential (?P<kind>Output|Create)-+")
_IO_HEADER = re.compile(r"^(?:Machine\s+Size|Name:Size etc)\s+(?:K?/sec\s+%CP\s*){6}$")
_FILE_HEADER = re.compile(r"^\s*(?:files|files:max:min)\s+(?:/sec\s+%CP\s*){6}$")
_LATENCY_ROW = re.compile(r"^Latency(?:\s|$)")
_ERROR = re.compile(
    r"^(?:Can't |Cannot |File size should be |Bonnie: drastic I/O error|Error |Write failed|"
    r"Expected [0-9.]+ bytes but read|You must use the \"-u\" switch|Seeker .* failed)"
)
_CSV2TXT_WARNING = re.compile(r"^Expected [0-9.]+, got ")
_USAGE_VERSION = re.compile(r"^Version: (?P<version>\S+)$")  # last line of bonnie++'s usage message
_FIGURE = re.compile(r"^(?:\+{3,5}|[0-9]+(?:\.[0-9]+)?[kmgt]?)$")
_DESC_WIDTH = 19  # "Machine        Size" / "Name:Size etc      ": name and size, then the figures
_RATE_WIDTH = 5
_CPU_WIDTH = 3
_LATENCY_WIDTH = 9
_SLACK = 2  # columns a figure may sit off its header (see _align)
_CPU = re.compile(r"^(?:\+\+\+|[0-9]{1,4})$")
_ANY = re.compile(r"^\S+$")


@dataclass
class BonnieRun(RunIssues):
    """One bonnie++ run (one CSV line or one text table row), figures in SI base units."""

    index: int = 0
    source: str = "csv"  # csv | text
    layout: Optional[str] = None  # 1.03 | 1.96 | 1.98 | text
    version: Optional[str] = None
    name: Optional[str] = None
    file_size: Optional[int] = None
    rates: Dict[str, Optional[float]] = field(default_factory=dict)  # bytes/s or ops/s; None = not measured
    cpu: Dict[str, Optional[float]] = field(default_factory=dict)
    latency_ns: Dict[str, Optional[float]] = field(default_factory=dict)
    too_fast: List[str] = field(default_factory=list)
    not_run: List[str] = field(default_factory=list)
    num_files: Optional[int] = None
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def rate(self, test: str) -> Optional[float]:
        return self.rates.get(test)


def _unmeasured_rate(run: BonnieRun, test: str, text: Optional[str]) -> bool:
    """Record a rate bonnie++ did not give (test not run: an empty CSV field or a missing table cell;
    too fast to time: '+++++'); True when it did not."""
    if not text:
        run.not_run.append(test)
    elif text == TOO_FAST:
        run.too_fast.append(test)
    else:
        return False
    run.rates[test] = None
    return True


def _rate_field(run: BonnieRun, test: str, text: str, line: str, lineno: int) -> None:
    """A CSV rate (KiB/s for block tests, ops/s for seeks and file tests)."""
    if _unmeasured_rate(run, test, text):
        return
    value = parse_unsigned(text, TOOL, line, lineno)
    if test in RATE_TESTS:
        value = finite(value * byte_factor("", "bonnie_rate", TOOL, line, lineno), TOOL, "rate", line, lineno)
    run.rates[test] = value


def _cpu_field(run: BonnieRun, test: str, text: str, line: str, lineno: int) -> None:
    if text in ("", TOO_FAST_CPU):
        run.cpu[test] = None
        return
    run.cpu[test] = parse_unsigned(text, TOOL, line, lineno)


def _field_match(pattern: "re.Pattern[str]", text: str, expected: str, line: str,
                 lineno: int) -> Optional["re.Match[str]"]:
    """None for an empty field (not measured), else the field's match of pattern; a ParseError naming what was
    expected when it does not match."""
    if text == "":
        return None
    match = pattern.match(text)
    if not match:
        raise ParseError(TOOL, "%s, got '%s'" % (expected, text[:40]), line, lineno)
    return match


def _latency_value(text: str, line: str, lineno: int) -> Optional[float]:
    match = _field_match(_LATENCY, text, "a latency like '8510us', '101ms' or '12s'", line, lineno)
    if match is None:
        return None
    value = parse_unsigned(match.group("num"), TOOL, line, lineno) * ns_per(match.group("unit"), TOOL, line, lineno)
    return finite(value, TOOL, "latency", line, lineno)


def _size(text: str, line: str, lineno: int) -> Optional[int]:
    match = _field_match(_SIZE, text, "a file size like '4G' or '7423M'", line, lineno)
    if match is None:
        return None
    value = parse_unsigned(match.group("num"), TOOL, line, lineno)
    value *= byte_factor(match.group("unit"), "bonnie_size", TOOL, line, lineno)
    return int(finite(value, TOOL, "file size", line, lineno))


def _int_field(text: str, line: str, lineno: int) -> Optional[int]:
    match = _field_match(_INT_FIELD, text, "an integer", line, lineno)
    return None if match is None else int(match.group(1))


def _csv_layout(fields: List[str]) -> Optional[str]:
    layout = _FIELD_COUNTS.get(len(fields))
    if layout in (_V196, _V198) and not _CSV_VERSION.match(fields[0]):
        return None
    if layout == _V103 and _CSV_VERSION.match(fields[0]) and fields[1] == fields[0]:
        return None
    return layout


def looks_like_csv(line: str) -> bool:
    """A line that can only be a bonnie++ CSV line (used by tool=auto too)."""
    fields = line.split(",")
    layout = _csv_layout(fields)
    if layout is None:
        return False
    if layout == _V103:
        return bool(_SIZE.match(fields[1]) or fields[1] == "")
    return bool(re.match(r"^[0-9]*$", fields[3])) and bool(_SIZE.match(fields[5]) or fields[5] == "")


def _parse_csv(line: str, lineno: int, index: int) -> BonnieRun:
    fields = line.split(",")
    layout = _csv_layout(fields)
    if layout is None:
        raise ParseError(
            TOOL, "a bonnie++ CSV line of 27 (1.03), 48 (1.96/1.97) or 50 (1.98) fields, got %d" % len(fields),
            line, lineno,
        )
    run = BonnieRun(index=index, source="csv", layout=layout)
    if layout == _V103:
        run.name, size, rest = fields[0], fields[1], fields[2:]
        io, files_field, file_rates, latencies = rest[0:12], rest[12], rest[13:25], []
    else:
        run.version, run.name = fields[1], fields[2]
        _int_field(fields[3], line, lineno)  # the concurrency: checked (a CSV line must be whole), not reported
        size = fields[5]
        offset = 9 if layout == _V198 else 7
        io = fields[offset:offset + 12]
        files_field = fields[offset + 12]
        file_rates = fields[offset + 17:offset + 29]
        latencies = fields[offset + 29:offset + 41]
    run.file_size = _size(size, line, lineno)
    for position, test in enumerate(IO_TESTS):
        _rate_field(run, test, io[2 * position], line, lineno)
        _cpu_field(run, test, io[2 * position + 1], line, lineno)
    run.num_files = _int_field(files_field, line, lineno)
    for position, test in enumerate(FILE_TESTS):
        _rate_field(run, test, file_rates[2 * position], line, lineno)
        _cpu_field(run, test, file_rates[2 * position + 1], line, lineno)
    for position, test in enumerate(IO_TESTS + FILE_TESTS):
        run.latency_ns[test] = _latency_value(latencies[position], line, lineno) if latencies else None
    return run


# ---------------------------------------------------------------------------------------------
# text tables
# ---------------------------------------------------------------------------------------------


def _tokens(line: str, start: int) -> List[Tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line) if m.start() >= start]


def _align(tokens: List[Tuple[int, int, str]], ends: List[int], widths: List[int],
           accepts: Optional[List[re.Pattern]] = None) -> Optional[List[Optional[str]]]:
    """Values of a right-aligned fixed-width row, None for blank columns; None when the tokens do not
    fit the columns. bonnie++ prints each figure right-aligned under its header; a figure wider than
    its column (a 6-digit K/sec) pushes the rest of the row right, and the blanks it prints for a test
    that did not run, like a short machine name and size, may be a column narrower or wider: each
    figure may sit up to 2 columns off, and the offset carries on to the rest of the row."""
    if len(tokens) == len(ends):
        return [text for _start, _end, text in tokens]
    values: List[Optional[str]] = [None] * len(ends)
    shift = column = 0
    for _start, end, text in tokens:
        for candidate in range(column, len(ends)):
            gap = end - (ends[candidate] + shift)
            if gap < -_SLACK:
                return None
            fits = accepts is None or accepts[candidate].match(text)
            if fits and gap <= max(0, len(text) - widths[candidate]) + _SLACK:
                values[candidate] = text
                shift += gap
                column = candidate + 1
                break
        else:
            return None
    return values


def _text_rate(run: BonnieRun, test: str, text: Optional[str], cpu: Optional[str], modern: bool,
               line: str, lineno: int) -> None:
    if _unmeasured_rate(run, test, text):
        return
    if cpu == TOO_FAST_CPU:
        # bon_csv2txt turns "+++++" into "0k" (a Perl number conversion) but keeps the "+++" CPU
        run.rates[test] = None
        run.too_fast.append(test)
        run.warnings.append("bonnie++ text table: %s '%s' with CPU '+++' is a too-fast test printed as a number"
                            % (LABELS[test], text))
        return
    match = _TEXT_RATE.match(text)
    if not match:
        raise ParseError(TOOL, "a bonnie++ figure like '16092', '18.8m' or '+++++', got '%s'" % text[:40], line, lineno)
    value = parse_unsigned(match.group("num"), TOOL, line, lineno)
    unit = match.group("unit")
    if test in RATE_TESTS:
        if modern and not unit:
            raise ParseError(TOOL, "a rate with its k, m or g suffix (bonnie++ 1.98+ text), got '%s'" % text, line, lineno)
        value *= byte_factor(unit, "bonnie_rate", TOOL, line, lineno)
    elif unit:
        raise ParseError(TOOL, "a plain number of seeks per second, got '%s'" % text, line, lineno)
    run.rates[test] = finite(value, TOOL, "rate", line, lineno)


def _header_ends(header: str) -> List[int]:
    return [end for _start, end, _text in _tokens(header, _DESC_WIDTH)]


class _Table:
    """The "Sequential Output" text table: version, column ends, and its rows."""

    def __init__(self, version: str, indent: str) -> None:
        self.version = version
        self.indent = indent
        self.ends: Optional[List[int]] = None
        self.modern = False


def _text_row(table: _Table, line: str, lineno: int, index: int) -> BonnieRun:
    run = BonnieRun(index=index, source="text", layout="text", version=table.version)
    desc = line[:_DESC_WIDTH].split()
    if len(desc) >= 2:
        run.name, size = " ".join(desc[:-1]), desc[-1]
    elif desc:
        run.name, size = None, desc[0]
    else:
        size = ""
    try:
        run.file_size = _size(size, line, lineno)
    except ParseError:
        run.file_size = None
        run.warnings.append("bonnie++ text table: size '%s' not read" % size)
    widths = [_RATE_WIDTH, _CPU_WIDTH] * 6
    values = _align(_tokens(line, _DESC_WIDTH), table.ends or [], widths, [_ANY, _CPU] * 6)
    if values is None or len(values) != 12:
        raise ParseError(TOOL, "a row of the bonnie++ text table (12 figures under '/sec %CP')", line, lineno)
    for position, test in enumerate(IO_TESTS):
        value, cpu = values[2 * position], values[2 * position + 1]
        _text_rate(run, test, value, cpu, table.modern, line, lineno)
        if cpu is not None and cpu != TOO_FAST_CPU:
            run.cpu[test] = parse_unsigned(cpu, TOOL, line, lineno)
        else:
            run.cpu[test] = None
    return run


def _latency_row(table: _Table, run: BonnieRun, line: str, lineno: int) -> None:
    ends = [end + 2 for end in (table.ends or [])[0::2]]  # "%9s" latencies end 2 columns right of the rates
    values = _align(_tokens(line, len("Latency")), ends, [_LATENCY_WIDTH] * 6)
    if values is None or len(values) != 6:
        raise ParseError(TOOL, "a bonnie++ Latency row (6 figures like '8510us')", line, lineno)
    for test, value in zip(IO_TESTS, values):
        run.latency_ns[test] = None if value is None else _latency_value(value, line, lineno)


class _Reader:
    def __init__(self) -> None:
        self.csv_runs: List[BonnieRun] = []
        self.text_runs: List[BonnieRun] = []
        self.text_problems: List[Tuple[ParseError, str, int]] = []
        self.errors: List[str] = []
        self.warnings: List[str] = []
        self.table: Optional[_Table] = None
        self.in_io_rows = False
        self.last_text_run: Optional[BonnieRun] = None
        self.version: Optional[str] = None
        self.rows_in_table = 0

    def feed(self, raw: str, lineno: int) -> None:
        stripped = raw.strip()
        if looks_like_csv(stripped) or (self.csv_line_shape(stripped) and not _CSV_HEADER.match(stripped)):
            self.csv_runs.append(_parse_csv(stripped, lineno, len(self.csv_runs)))
            self.in_io_rows = False
            return
        match = _VERSION_LINE.match(raw)
        if match:
            self.version = self.version or match.group("version")
            self.in_io_rows = False
            if match.group("kind") == "Output":
                self.table = _Table(match.group("version"), match.group("indent"))
            return
        if self.table is not None:
            line = raw[len(self.table.indent):] if raw.startswith(self.table.indent) else raw.lstrip()
            if _IO_HEADER.match(line.rstrip()):
                self.table.ends = _header_ends(line.rstrip())
                self.table.modern = line.startswith("Name:Size")
                self.in_io_rows = True
                self.rows_in_table = 0
                return
            if self.in_io_rows:
                if self.io_row(line.rstrip(), lineno):
                    return
        if _FILE_HEADER.match(stripped):
            self.in_io_rows = False
            return
        match = _USAGE_VERSION.match(stripped)
        if match:
            self.version = self.version or match.group("version")
        elif _CSV2TXT_WARNING.match(stripped):
            self.warnings.append(stripped[:200])
        elif _ERROR.match(stripped):
            self.errors.append(stripped)

    def csv_line_shape(self, line: str) -> bool:
        """Comma-separated with a bonnie++ field count: a CSV line, even when a field is bad."""
        return line.count(",") + 1 in _FIELD_COUNTS and " " not in line.split(",")[0]

    def gap(self) -> None:
        """A blank line ends the rows of a text table."""
        self.in_io_rows = False

    def io_row(self, line: str, lineno: int) -> bool:
        if _LATENCY_ROW.match(line):
            if self.last_text_run is not None and self.rows_in_table:
                self.guarded(lambda: _latency_row(self.table, self.last_text_run, line, lineno), line, lineno)
            return True
        figures = _tokens(line, _DESC_WIDTH)
        if not figures or not all(_FIGURE.match(text) for _start, _end, text in figures):
            self.in_io_rows = False  # not a row of figures: the table ended (or, right under its header, is broken)
            if self.rows_in_table == 0:
                self.text_problems.append((ParseError(
                    TOOL, "a row of the bonnie++ text table (12 figures under '/sec %CP')", line, lineno), line, lineno))
            return False
        run = self.guarded(lambda: _text_row(self.table, line, lineno, len(self.text_runs)), line, lineno)
        if run is None:
            self.in_io_rows = False
            return False
        self.text_runs.append(run)
        self.last_text_run = run
        self.rows_in_table += 1
        return True

    def guarded(self, action, line: str, lineno: int):
        try:
            return action()
        except ParseError as error:
            self.text_problems.append((error, line, lineno))
            return None


def _too_fast_warnings(run: BonnieRun) -> None:
    if run.too_fast:
        run.warnings.append(
            "bonnie++ '+++++' (too fast to measure, no figure): %s" % ", ".join(LABELS[test] for test in run.too_fast)
        )


def _cross_check(csv_runs: List[BonnieRun], text_runs: List[BonnieRun]) -> None:
    """The text table rounds what the CSV says exactly: warn when they disagree beyond that."""
    if not text_runs:
        return
    if len(text_runs) != len(csv_runs):
        for run in csv_runs:
            run.warnings.append("bonnie++ text table has %d row(s) for %d CSV line(s): not compared"
                                % (len(text_runs), len(csv_runs)))
        return
    for csv_run, text_run in zip(csv_runs, text_runs):
        for test in ("put_block", "get_block", "seeks"):
            exact, rounded = csv_run.rates.get(test), text_run.rates.get(test)
            if exact is None or rounded is None:
                continue
            if abs(exact - rounded) > 0.03 * exact + 1024:
                csv_run.warnings.append("bonnie++ text table says %s %.6g, the CSV line %.6g: CSV used"
                                        % (LABELS[test], rounded, exact))


def parse(text: str) -> List[BonnieRun]:
    """Every bonnie++ run in text: one per CSV line, else one per text table row; an error-only
    output (bonnie++ stopped) gives one run with its error. ParseError when there is nothing."""
    if not isinstance(text, str):
        raise ParseError(TOOL, "text, got %s" % type(text).__name__)
    reader = _Reader()
    for lineno, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if raw.strip():
            reader.feed(raw.rstrip(), lineno)
        else:
            reader.gap()
    if reader.csv_runs:
        runs = reader.csv_runs
        problems = shared_messages(
            ["bonnie++ text table line %d not read (%s): CSV used" % (lineno, error.expected)
             for error, _line, lineno in reader.text_problems], "bonnie++ text table lines not read")
        for run in runs:
            run.warnings.extend(problems)
        _cross_check(runs, reader.text_runs)
    elif reader.text_runs:
        if reader.text_problems:
            error, line, lineno = reader.text_problems[0]
            raise error
        runs = reader.text_runs
        for run in runs:
            run.warnings.append("bonnie++ text table only (no CSV line): rates rounded as printed")
    elif reader.text_problems:
        raise reader.text_problems[0][0]
    elif reader.errors:
        runs = [BonnieRun(index=0, source="text", layout=None, version=reader.version)]
    else:
        line = first_line(text)
        raise ParseError(TOOL, "a bonnie++ CSV line or its 'Sequential Output' text table", line,
                         1 if line is not None else None)
    errors = shared_messages(reader.errors, "bonnie++ error lines")
    warnings = shared_messages(reader.warnings, "bonnie++ warnings")
    for run in runs:
        run.version = run.version or reader.version
        run.errors.extend(errors)
        run.warnings.extend(warnings)
        _too_fast_warnings(run)
    return runs


# ---------------------------------------------------------------------------------------------- the registry's interface

# bonnie++: its text table header, its "Using uid" and usage lines; CSV lines are checked one by one.
_BONNIE_MARKERS = re.compile((
    r"^(?:{sp}*Version{sp}+\S+{sp}+-+Sequential (?:Output|Create)-+"
    r"|Using uid:[0-9]+, gid:[0-9]+\.$"
    r"|bonnie\+\+ \[-d scratch-dir\])").replace("{sp}", SP),
    re.MULTILINE,
)


def _bonnie_csv(text: str) -> bool:
    return any(looks_like_csv(line.strip()) for line in text.splitlines() if line.count(",") >= 26)


def recognise(text: str) -> Optional[int]:
    """tool=auto: bonnie++'s text table, its usage or uid lines, or one of its CSV lines (rank 4)."""
    return 4 if _BONNIE_MARKERS.search(text) or _bonnie_csv(text) else None


def _result(run: BonnieRun) -> Dict[str, Any]:
    """One bonnie++ run: block output is the write rate, block input the read rate, random seeks the
    read ops/s; latencies are bonnie++'s maximum latency of those tests."""
    result = partial_result("bonnie", run.version, job_ident(run.name, run.index))
    result.update(error=run.error, warnings=list(run.warnings))
    metrics = result["metrics"]
    metrics["write_bytes_per_s"] = run.rates.get("put_block")
    metrics["read_bytes_per_s"] = run.rates.get("get_block")
    metrics["read_iops"] = run.rates.get("seeks")
    for name, test in (("write", "put_block"), ("read", "get_block")):
        worst = run.latency_ns.get(test)
        if worst is not None:
            metrics["latency_ns"][name] = latency_ns(max=worst)
    return result


def records(text: str, direction: Optional[str] = None, argv: Optional[List[str]] = None) -> List[Dict[str, object]]:
    """One partial record per bonnie++ run of text: block output writes, block input reads, seeks read IOPS."""
    del direction, argv
    return [_result(run) for run in parse(text)]
