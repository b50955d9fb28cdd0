# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the status output of dd (GNU coreutils, busybox, BSD/macOS) into exact figures.

One DdRun per dd invocation found in the text. The figures that matter are the byte count and
the elapsed seconds of the final summary line; the rate is bytes / seconds, never the rounded
rate dd prints (that one is only used as a cross-check). Dialects recognised:

- ``gnu``: coreutils >= 8.24, ``N bytes (1.0 MB, 1.0 MiB) copied, 0.0237 s, 44.1 MB/s``, in any
  locale (``N Bytes (1,1 GB, 1,0 GiB) kopiert, 0,5 s, 2,1 GB/s``), with the short forms
  ``N bytes (1.0 kB) copied`` and ``N bytes copied`` for small counts; and coreutils 6.x to 8.23,
  ``N bytes (42 GB) copied, 3.1 s, 13.5 GB/s`` (6.x: ``seconds``). SI units, IEC in second place.
- ``busybox``: ``N bytes (80.0MB) copied, 3.084522 seconds, 25.9MB/s``: the units are binary.
- ``bsd``: BSD/macOS, ``N bytes transferred in X secs (Y bytes/sec)``.
- ``coreutils5``: ``N bytes transferred in X seconds (Y bytes/sec)``.

``status=progress`` updates (carriage-return separated, printed before the record counts) are
counted, never taken as the result. ``dd: ...`` lines are errors (``dd: warning: ...`` are
warnings) and belong to the run whose record counts follow them, as dd prints them.

A pasted shell transcript often shows the command (``$ dd if=/dev/zero of=f bs=1M``, ``+ dd ...``
of ``bash -x``, ``sudo sh -c "sync && dd ..."``): a line with a ``dd`` word followed by dd operands
is taken as the command of the next run whose output follows (``DdRun.command``, never reused for a
second run); its operands, redirections and flags say the direction (``direction_from_argv``).
Several runs give one DdRun each, in order.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import ParseError, RunIssues, first_line
from .records import partial_result
from .units import byte_factor, decimal_places, parse_decimal
from .values import line_markers

TOOL = "dd"

GNU = "gnu"
BUSYBOX = "busybox"
BSD = "bsd"
COREUTILS5 = "coreutils5"

_RECORDS = re.compile(r"^(?P<full>[0-9]+)\+(?P<partial>[0-9]+) (?P<label>\S.*)$")
# The rate is read from the field before "/s" by _rate_parts: a regex splitting it into number, space
# and unit backtracked over every way to split a long field (quadratic in the line).
_TRUNCATED = re.compile(r"^(?P<count>[0-9]+) truncated records?$")
_COPIED = re.compile(
    r"^(?P<bytes>[0-9]+) (?P<noun>[^\s(),]+)"
    r"(?: \((?P<human>[^()]*)\))?"
    r" (?P<verb>[^,]+), "
    r"(?P<seconds>[0-9][0-9.,]*(?:[eE][-+]?[0-9]+)?) (?P<sunit>s|seconds), "
    r"(?P<rate_field>[^ ]+(?: [A-Za-z]*)?)/s$"
)
_TRANSFERRED = re.compile(
    r"^(?P<bytes>[0-9]+) bytes transferred in (?P<seconds>[0-9]+(?:\.[0-9]+)?) (?P<sunit>secs|seconds) "
    r"\((?P<rate>[^ ()]+) bytes/sec\)$"
)
_HUMAN = re.compile(r"^(?P<num>[0-9]+(?:[.,][0-9]+)?)(?P<space> ?)(?P<unit>[A-Za-z]+)$")
# dd names itself by argv[0]: "dd: ..." or "/usr/bin/dd: ..." when started by path.
_PROGRAM = r"^(?:\S*/)?dd: "
_MESSAGE = re.compile(_PROGRAM)
_WARNING = re.compile(_PROGRAM + "warning: ")
_HELP_HINT = re.compile(r"^Try [`']\S*dd --help' for more information\.$")
# Errors dd reports before copying anything: no record counts follow them.
_FATAL_BEFORE_COPY = re.compile(
    _PROGRAM + r"(failed to open|opening|invalid|unrecognized|unrecognised|missing|cannot combine|.*: cannot open)"
)
# Sources that touch no disk: reading them is not a read test.
_DEVICE_FILES = ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
# Operands that mean stdin/stdout, which the shell may have redirected anywhere: as if absent.
_STDIN = ("/dev/stdin", "/dev/fd/0")
_STDOUT = ("/dev/stdout", "/dev/fd/1")
_OPERANDS = frozenset(("if", "of", "ibs", "obs", "bs", "cbs", "skip", "seek", "iseek", "oseek", "count", "conv",
                       "iflag", "oflag", "status"))
# A "dd" word in a transcript line: at the start or after a blank, a shell separator or a quote; a path may lead.
# The word's characters exclude the characters that may precede it, so each start scans its own word only (linear).
_DD_WORD = re.compile(r"(?:^|(?<=[\s;&|(\"'`]))(?:[^\s;&|()\"'`<>]*/)?dd(?=\s)")
_COMMAND_END = ";&|)`#"


@dataclass(frozen=True)
class RecordCount:
    """``full+partial records in|out``: full blocks and short (partial) blocks."""

    full: int
    partial: int


@dataclass
class Summary:
    """The final status line of one dd run."""

    bytes: int
    seconds: float
    dialect: str
    printed_rate_bytes_per_s: Optional[float]
    warnings: List[str] = field(default_factory=list)


@dataclass
class DdRun(RunIssues):
    """One dd invocation as read from its output."""

    index: int = 0
    bytes: Optional[int] = None
    seconds: Optional[float] = None
    dialect: Optional[str] = None
    printed_rate_bytes_per_s: Optional[float] = None
    records_in: Optional[RecordCount] = None
    records_out: Optional[RecordCount] = None
    truncated_records: int = 0
    progress_updates: int = 0
    command: Optional[List[str]] = None  # the dd command the text shows before this run's output
    command_line: Optional[int] = None
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    @property
    def has_summary(self) -> bool:
        return self.bytes is not None and self.seconds is not None

    @property
    def bytes_per_s(self) -> Optional[float]:
        """bytes / seconds from the summary line; None when either is missing or seconds is 0."""
        if not self.has_summary or not self.seconds:
            return None
        return self.bytes / self.seconds


def _segments(text: str):
    """Yield (line number, segment) for every newline- or carriage-return-separated piece; a blank
    line yields one empty segment (a gap), empty pieces around carriage returns yield nothing."""
    for lineno, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        if not line.strip():
            yield lineno, ""
            continue
        for segment in line.split("\r"):
            if segment.strip():
                yield lineno, segment.strip()


def _printed_matches(printed: float, decimals: int, factor: int, exact: float) -> bool:
    """Whether a rounded human figure is consistent with the exact value (one unit in the last place, +1%)."""
    allowed = factor * 10.0 ** -decimals + 0.01 * exact
    return abs(printed * factor - exact) <= allowed


def _human_dialect(parts: List[re.Match], line: str, lineno: int) -> str:
    spaced = {bool(part.group("space")) for part in parts}
    if len(spaced) != 1:
        raise ParseError(TOOL, "sizes in parentheses written one way (all with or all without a space)", line, lineno)
    return BUSYBOX if spaced == {False} else GNU


def _check_human_sizes(nbytes: int, parts: List[re.Match], dialect: str, line: str, lineno: int) -> List[str]:
    systems = ["busybox"] if dialect == BUSYBOX else ["si", "iec"]
    warnings = []
    for part, system in zip(parts, systems):
        factor = byte_factor(part.group("unit"), system, TOOL, line, lineno)
        printed = parse_decimal(part.group("num"), TOOL, line, lineno)
        if not _printed_matches(printed, decimal_places(part.group("num")), factor, nbytes):
            warnings.append(
                "dd printed size '%s%s%s' does not match %d bytes (read as %s units)"
                % (part.group("num"), part.group("space"), part.group("unit"), nbytes, system)
            )
    return warnings


def _rate_parts(field: str) -> Tuple[str, str, str]:
    """(rate, space, unit) of the field before "/s" ("44.1 MB", "25.9MB", "Infinity B"): the shortest
    rate without a space after which come an optional space and letters only (the unit)."""
    unit_start = len(field.rstrip(string.ascii_letters))
    if unit_start and field[unit_start - 1] == " ":
        return field[:unit_start - 1], " ", field[unit_start:]
    unit_start = max(unit_start, 1)
    return field[:unit_start], "", field[unit_start:]


def _printed_rate(rate_text: str, rate_unit: str, seconds: float, system: str, line: str,
                  lineno: int) -> Optional[float]:
    factor = byte_factor(rate_unit or "bytes", system, TOOL, line, lineno)
    if seconds == 0 and not rate_text[:1].isdigit():
        return None  # "Infinity B/s" (or its translation) for a zero elapsed time
    return parse_decimal(rate_text, TOOL, line, lineno) * factor


def _rate_warning(summary: Summary, decimals: int, factor: int) -> List[str]:
    printed = summary.printed_rate_bytes_per_s
    if printed is None or summary.seconds <= 0:
        return []
    exact = summary.bytes / summary.seconds
    if _printed_matches(printed / factor, decimals, factor, exact):
        return []
    return ["dd printed rate %.6g B/s differs from bytes/seconds = %.6g B/s" % (printed, exact)]


# dd counts bytes in intmax_t: a larger "byte count" is not dd output (and would overflow floats).
MAX_BYTE_COUNT = 2 ** 63 - 1
# Its record counts are uintmax_t (20 digits); longer digit strings are refused before int() reads them
# (which refuses more than 4300 digits with a ValueError, and takes time quadratic in the digits).
MAX_COUNT_DIGITS = 20


def _count(digits: str, what: str, line: str, lineno: int) -> int:
    if len(digits) > MAX_COUNT_DIGITS:
        raise ParseError(TOOL, "a %s dd can print (at most %d digits)" % (what, MAX_COUNT_DIGITS), line, lineno)
    return int(digits)


def _byte_count(match: re.Match, line: str, lineno: int) -> int:
    digits = match.group("bytes")
    if len(digits) > MAX_COUNT_DIGITS or int(digits) > MAX_BYTE_COUNT:
        raise ParseError(TOOL, "a byte count dd can print (at most 2^63 - 1)", line, lineno)
    return int(digits)


def _parse_copied(match: re.Match, line: str, lineno: int) -> Summary:
    nbytes = _byte_count(match, line, lineno)
    seconds = parse_decimal(match.group("seconds"), TOOL, line, lineno)
    human = match.group("human")
    warnings: List[str] = []
    if human is None:
        dialect = GNU  # coreutils >= 8.24 drops the parentheses below 1000 bytes
    else:
        parts = [_HUMAN.match(piece) for piece in human.split(", ")]
        if not parts or len(parts) > 2 or not all(parts):
            raise ParseError(TOOL, "sizes in parentheses like '(1.0 MB, 1.0 MiB)'", line, lineno)
        dialect = _human_dialect(parts, line, lineno)
        warnings.extend(_check_human_sizes(nbytes, parts, dialect, line, lineno))
    rate_text, rate_space, rate_unit = _rate_parts(match.group("rate_field"))
    if bool(rate_space) == (dialect == BUSYBOX) and rate_text[:1].isdigit():
        raise ParseError(TOOL, "a rate written like the sizes (%s dialect)" % dialect, line, lineno)
    system = "busybox" if dialect == BUSYBOX else "si"
    if not rate_unit.endswith("B"):
        raise ParseError(TOOL, "a rate in bytes per second, got '%s/s'" % rate_unit[:40], line, lineno)
    printed = _printed_rate(rate_text, rate_unit, seconds, system, line, lineno)
    summary = Summary(nbytes, seconds, dialect, printed, warnings)
    factor = byte_factor(rate_unit, system, TOOL, line, lineno)
    summary.warnings.extend(_rate_warning(summary, decimal_places(rate_text), factor))
    return summary


def _parse_transferred(match: re.Match, line: str, lineno: int) -> Summary:
    nbytes = _byte_count(match, line, lineno)
    seconds = parse_decimal(match.group("seconds"), TOOL, line, lineno)
    dialect = BSD if match.group("sunit") == "secs" else COREUTILS5
    rate_text = match.group("rate")
    printed = None
    if rate_text.isdigit():
        printed = float(rate_text)
    elif seconds != 0:
        raise ParseError(TOOL, "an integer rate in bytes/sec", line, lineno)
    summary = Summary(nbytes, seconds, dialect, printed)
    summary.warnings.extend(_rate_warning(summary, 0, 1))
    return summary


def parse_summary(line: str, lineno: int = 0) -> Optional[Summary]:
    """The summary line's figures, None if the line is not a summary line; ParseError if it is one but
    a unit or number cannot be read exactly."""
    match = _COPIED.match(line)
    if match:
        return _parse_copied(match, line, lineno)
    match = _TRANSFERRED.match(line)
    if match:
        return _parse_transferred(match, line, lineno)
    return None


def _record_warnings(run: DdRun) -> List[str]:
    warnings = []
    for label, count in (("input", run.records_in), ("output", run.records_out)):
        if count is not None and count.partial:
            warnings.append(
                "%d partial %s record(s) (%d+%d): short blocks, fewer bytes than bs x count may have moved"
                % (count.partial, label, count.full, count.partial)
            )
    if run.truncated_records:
        warnings.append("%d truncated record(s) (conv=block)" % run.truncated_records)
    if run.bytes == 0 and not run.errors:
        warnings.append("dd moved no data (0 bytes)")
    return warnings


class _Reader:
    """State machine over the output lines; see parse()."""

    def __init__(self) -> None:
        self.runs: List[DdRun] = []
        self.current: Optional[DdRun] = None
        self.pending_errors: List[str] = []
        self.pending_warnings: List[str] = []
        self.pending_progress = 0
        self.pending_commands: List[Tuple[List[str], int]] = []
        self.first_unknown: Optional[tuple] = None

    def open_run(self) -> DdRun:
        run = DdRun(index=len(self.runs), errors=self.pending_errors, warnings=self.pending_warnings)
        run.progress_updates = self.pending_progress
        if self.pending_commands:
            run.command, run.command_line = self.pending_commands.pop(0)
        self.pending_errors, self.pending_warnings, self.pending_progress = [], [], 0
        self.current = run
        return run

    def close_run(self) -> None:
        run = self.current
        if run is None:
            return
        if not run.has_summary and not run.errors:
            run.warnings.append("no summary line after the record counts (status=noxfer or truncated output)")
        run.warnings.extend(_record_warnings(run))
        self.runs.append(run)
        self.current = None

    def on_records(self, count: RecordCount) -> None:
        run = self.current
        if run is not None and run.records_out is None:
            run.records_out = count
            return
        self.close_run()
        self.open_run().records_in = count

    def on_summary(self, summary: Summary) -> None:
        run = self.current
        if run is None or run.records_out is None:
            # status=progress update: printed before the record counts of its run
            if run is None:
                self.pending_progress += 1
            else:
                run.progress_updates += 1
            return
        run.bytes, run.seconds, run.dialect = summary.bytes, summary.seconds, summary.dialect
        run.printed_rate_bytes_per_s = summary.printed_rate_bytes_per_s
        run.warnings.extend(summary.warnings)
        self.close_run()

    def on_message(self, line: str) -> None:
        if self.current is not None and self.current.records_out is not None:
            self.close_run()  # a run without summary line (status=noxfer): this message is the next run's
        if _WARNING.match(line):
            self.pending_warnings.append(line)
            return
        self.pending_errors.append(line)
        if _FATAL_BEFORE_COPY.match(line) and self.current is None:
            self.open_run()
            self.close_run()

    def on_gap(self) -> None:
        """dd prints its error messages right before the record counts; a blank or foreign line
        after them means no counts follow (dd stopped), so they are a run of their own."""
        if self.pending_errors and self.current is None:
            self.open_run()
            self.close_run()

    def on_commands(self, commands: List[List[str]], lineno: int) -> None:
        """A transcript line showing dd commands: they belong to the next runs. A later such line replaces
        unused ones (zsh's ``time`` repeats the command after the run: the next prompt line supersedes it)."""
        self.on_gap()
        if self.current is not None and self.current.records_out is not None:
            self.close_run()  # a run without summary line: the next output is another run's
        self.pending_commands = [(argv, lineno) for argv in commands]

    def on_unknown(self, line: str, lineno: int) -> None:
        self.on_gap()
        if self.first_unknown is None:
            self.first_unknown = (line, lineno)
        note = "ignored line %d: '%s'" % (lineno, line[:200])
        if self.current is not None:
            self.current.warnings.append(note)
        else:
            self.pending_warnings.append(note)

    def feed(self, line: str, lineno: int) -> None:
        match = _RECORDS.match(line)
        if match:
            self.on_records(RecordCount(_count(match.group("full"), "record count", line, lineno),
                                        _count(match.group("partial"), "record count", line, lineno)))
            return
        match = _TRUNCATED.match(line)
        if match and self.current is not None:
            self.current.truncated_records = _count(match.group("count"), "record count", line, lineno)
            return
        summary = parse_summary(line, lineno)
        if summary is not None:
            self.on_summary(summary)
        elif _MESSAGE.match(line):
            self.on_message(line)
        elif not _HELP_HINT.match(line):
            commands = commands_from_line(line)
            if commands:
                self.on_commands(commands, lineno)
            else:
                self.on_unknown(line, lineno)

    def finish(self, text: str) -> List[DdRun]:
        self.close_run()
        if self.pending_errors:
            self.open_run()
            self.close_run()
        elif self.runs and self.pending_warnings:
            self.runs[-1].warnings.extend(self.pending_warnings)
        if not any(run.has_summary or run.errors for run in self.runs):
            line, lineno = self.first_unknown or (first_line(text), 1 if text.strip() else None)
            raise ParseError(TOOL, "dd status output ('N+M records in/out' and a summary line)", line, lineno)
        return self.runs


def parse(text: str) -> List[DdRun]:
    """All dd runs in text, in order. ParseError if there is none or a figure cannot be read exactly."""
    if not isinstance(text, str):
        raise ParseError(TOOL, "text, got %s" % type(text).__name__)
    reader = _Reader()
    for lineno, line in _segments(text):
        if line:
            reader.feed(line, lineno)
        else:
            reader.on_gap()
    return reader.finish(text)


def _words(text: str, index: int, closing: str) -> Tuple[List[str], int]:
    """Shell words of text from index up to the end of the simple command (an unquoted ; & | ) ` #, or
    closing: the quote the command itself sits in), and where they end. Quotes join, a backslash escapes;
    one pass, no copy of the rest of the line (a slice per dd word was quadratic)."""
    words: List[str] = []
    word: List[str] = []
    started = False
    quote = ""
    while index < len(text):
        char = text[index]
        index += 1
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and index < len(text):
                word.append(text[index])
                index += 1
            else:
                word.append(char)
            continue
        if char == "&" and word and word[-1] in "<>":
            word.append(char)  # 2>&1, <&3: a redirection, not the end of the command
            continue
        if char == closing or char in _COMMAND_END:
            break
        if char.isspace():
            if started:
                words.append("".join(word))
                word, started = [], False
            continue
        started = True
        if char in "'\"":
            quote = char
        elif char == "\\" and index < len(text):
            word.append(text[index])
            index += 1
        else:
            word.append(char)
    if started:
        words.append("".join(word))
    return words, index


def _redirect(words: List[str], index: int) -> Tuple[Optional[str], Optional[str], int]:
    """(operand name, path, words used) of a redirection word: < > >> 1> with the path attached or next."""
    word = words[index]
    for prefix, name in (("1>>", "of"), ("1>", "of"), (">>", "of"), (">", "of"), ("<", "if")):
        if word.startswith(prefix):
            path = word[len(prefix):]
            if path:
                return name, path, 1
            return name, (words[index + 1] if index + 1 < len(words) else None), 2
    if word[:1].isdigit() and ">" in word:  # 2>file, 2>&1, 2> file
        return None, None, 1 if not word.endswith(">") else 2
    return None, None, 0


def _command(program: str, words: List[str]) -> Optional[List[str]]:
    argv = [program]
    seen = set()
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("-"):
            return None  # dd --version, dd --help: no transfer
        name, path, used = _redirect(words, index)
        if used:
            if name is not None and path is not None and name not in seen:
                argv.append("%s=%s" % (name, path))
                seen.add(name)
            index += used
            continue
        key, equals, _value = word.partition("=")
        if equals and key in _OPERANDS:
            argv.append(word)
            seen.add(key)
        index += 1  # anything else (zsh time's "0.00s user ...") is not dd's
    return argv if len(argv) > 1 else None


def commands_from_line(line: str) -> List[List[str]]:
    """The dd commands a transcript line shows, as argv lists: a ``dd`` word (or a path ending in /dd) followed
    by at least one dd operand; redirections become if=/of=. Several when the line chains them.

    A line cut short (ending in a backslash continuation, or in the ``=`` of a quoted-printable soft line
    break) shows no command: its missing operands could change the direction. Quoted-printable ``=3D``
    (mail archives) reads as ``=``."""
    stripped = line.rstrip()
    if stripped.endswith(("\\", "=")):
        return []
    if "=3D" in line:
        line = line.replace("=3D", "=")
    commands = []
    position = counted = doubles = singles = 0
    while True:
        match = _DD_WORD.search(line, position)
        if match is None:
            return commands
        # Inside a quoted string (sh -c "sync && dd ..."): that quote ends the command. Quotes before the
        # word are counted once each (a count from the line start for every word was quadratic).
        doubles += line.count('"', counted, match.start())
        singles += line.count("'", counted, match.start())
        counted = match.start()
        closing = '"' if doubles % 2 else ("'" if singles % 2 else "")
        words, position = _words(line, match.end(), closing)
        argv = _command(match.group(0), words)
        if argv is not None:
            commands.append(argv)


def command_from_line(line: str) -> Optional[List[str]]:
    """The first dd command a transcript line shows, None when it shows none."""
    commands = commands_from_line(line)
    return commands[0] if commands else None


def _operand(argv: List[str], name: str) -> Optional[str]:
    value = None
    for arg in argv[1:]:
        if isinstance(arg, str) and arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def _flag_direction(argv: List[str]) -> Optional[str]:
    """What the flags say when the operands do not: iflag=direct reads the input from a disk; oflag=direct,
    sync or dsync and conv=fsync or fdatasync write the output to one."""
    iflags = set((_operand(argv, "iflag") or "").split(","))
    oflags = set((_operand(argv, "oflag") or "").split(","))
    conv = set((_operand(argv, "conv") or "").split(","))
    reads = "direct" in iflags
    writes = bool(oflags & {"direct", "sync", "dsync"} or conv & {"fsync", "fdatasync"})
    if reads and writes:
        return "copy"
    return "read" if reads else ("write" if writes else None)


def direction_from_argv(argv: List[str]) -> Optional[str]:
    """'read', 'write' or 'copy' as the dd operands show it; None when they do not say.

    of=/dev/null (or no of=) reads the input; if=/dev/zero|urandom (or no if=) writes the output;
    file to file is a copy (both directions moved the same bytes). /dev/stdin and /dev/stdout count as
    absent. When neither side names a file or disk, the flags decide (iflag=direct reads; oflag=direct,
    sync, dsync, conv=fsync, fdatasync write), except for a generator to /dev/null (a memory test).
    """
    if not argv:
        return None
    source, sink = _operand(argv, "if"), _operand(argv, "of")
    source = None if source in _STDIN else source
    sink = None if sink in _STDOUT else sink
    reads = source is not None and source not in _DEVICE_FILES
    writes = sink is not None and sink != "/dev/null"
    if reads and writes:
        return "copy"
    if reads:
        return "read"
    if writes:
        return "write"
    if source in _DEVICE_FILES and sink == "/dev/null":
        return None
    return _flag_direction(argv)


_ARTICLE = {"read": "a read", "write": "a write", "copy": "a copy"}


def _shown(argv: List[str]) -> str:
    text = " ".join(str(arg) for arg in argv)
    return text if len(text) <= 200 else text[:197] + "..."


def resolve_direction(run: DdRun, stated: Optional[str] = None,
                      argv: Optional[List[str]] = None) -> Tuple[Optional[str], List[str]]:
    """(direction, warnings) of one run: a stated direction wins, then the command bench_run ran (argv),
    then the command the text shows before the run. A contradiction with the text is a warning naming both;
    a direction read from the text alone is a warning saying so (the record shows where it came from)."""
    shown = direction_from_argv(run.command) if run.command else None
    where = "the command on line %s of the text (%s)" % (run.command_line, _shown(run.command)) if run.command else ""
    ran = direction_from_argv(argv) if argv else None
    if stated or ran:
        chosen = stated or ran
        if shown is None or shown == chosen:
            return chosen, []
        given = ("dd direction=%s was given" % stated if stated
                 else "the dd command run (%s) is %s" % (_shown(argv or []), _ARTICLE[chosen]))
        how = "as given" if stated else "as run"
        return chosen, ["%s, but %s is %s: the rate is filed as %s, %s; check which one is right"
                        % (given, where, _ARTICLE[shown], chosen, how)]
    if shown is None:
        return None, []
    return shown, ["dd direction %s inferred from %s" % (shown, where)]


# ---------------------------------------------------------------------------------------------- the registry's interface

DD_DIRECTIONS = {"read": ("read",), "write": ("write",), "copy": ("read", "write")}
_DD_MARKERS = line_markers(
    r"[0-9]+\+[0-9]+ \S",  # N+M records in|out (any locale)
    r"[0-9]+ bytes transferred in ",  # BSD, coreutils 5
    r"[0-9]+ \S+ (?:\([^()\n]*\) )?[^,\n]+, [0-9][0-9.,eE+-]* (?:s|seconds), ",  # GNU, busybox summary
    r"(?:\S*/)?dd: ",
)


def recognise(text: str) -> Optional[int]:
    """tool=auto: dd's summary or its own messages (rank 1, after fio's JSON and text output)."""
    return 1 if _DD_MARKERS.search(text) else None


def _result(run: DdRun, direction: Optional[str], notes: Optional[List[str]] = None) -> Dict[str, Any]:
    """One dd run as a partial record; direction (read, write, copy) says which rate it fills. The rate is
    always kept as metrics.transfer_bytes_per_s too, so a run of unknown direction never loses its figure."""
    result = partial_result("dd", None, {"name": None, "index": run.index, "groupid": None, "client": None})
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


def records(text: str, direction: Optional[str] = None, argv: Optional[List[str]] = None) -> List[dict]:
    """One partial record per dd run of text; direction (read, write, copy) as resolve_direction finds it."""
    return [_result(run, *resolve_direction(run, direction, argv)) for run in parse(text)]
