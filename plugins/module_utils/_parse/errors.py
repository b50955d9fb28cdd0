# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception the parsers raise: ParseError (tool, what was expected, offending line),
and the small helpers every parser uses to report problems."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

MAX_QUOTED_CHARS = 400
MAX_SHARED_MESSAGES = 20


def printable(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """Return text safe to quote in a message: control and undecodable characters escaped, shortened.

    Only the characters that can be shown are escaped (escaping only lengthens): a 1 MB line costs
    as little as a short one."""
    out = []
    for char in text[:limit + 1]:
        if char.isprintable():
            out.append(char)
        elif ord(char) < 0x100:
            out.append("\\x%02x" % ord(char))
        else:
            out.append("\\u%04x" % ord(char))
    quoted = "".join(out)
    if len(quoted) > limit:
        quoted = quoted[:limit] + "..."
    return quoted


class ParseError(ValueError):
    """Tool output that the parser cannot turn into exact figures.

    Attributes:
        tool: the tool whose output was parsed (dd, fio, or auto while detecting).
        expected: what the parser was looking for, in words.
        line: the offending line (escaped and shortened), or None when the input was empty.
        lineno: 1-based line number of the offending line when known.
    """

    def __init__(self, tool: str, expected: str, line: str | None = None, lineno: int | None = None) -> None:
        self.tool = tool
        self.expected = expected
        self.line = None if line is None else printable(line)
        self.lineno = lineno
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = "%s output: expected %s" % (self.tool, self.expected)
        if self.line is None:
            return text
        where = "line %d" % self.lineno if self.lineno is not None else "line"
        return "%s; offending %s: '%s'" % (text, where, self.line)

    def __str__(self) -> str:
        return self.message


def stripped_lines(text: str, tool: str) -> Iterator[Tuple[int, str]]:
    """(line number, stripped line) of every non-blank line of a tool's output, whatever its newlines
    (a terminal capture ends lines with CR LF, a progress display with a bare CR). ParseError at once
    when text is not a string."""
    if not isinstance(text, str):
        raise ParseError(tool, "text, got %s" % type(text).__name__)
    numbered = enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1)
    return ((lineno, raw.strip()) for lineno, raw in numbered if raw.strip())


def first_line(text: str) -> Optional[str]:
    """The first non-blank line of a tool's output, stripped: what an error message quotes."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def shared_messages(messages: List[str], what: str) -> List[str]:
    """The messages every run of one output gets (the tool's own errors and warnings): the first
    MAX_SHARED_MESSAGES and how many more there were. All of them in every run grew as runs x messages."""
    if len(messages) <= MAX_SHARED_MESSAGES:
        return messages
    return messages[:MAX_SHARED_MESSAGES] + ["... %d more %s" % (len(messages) - MAX_SHARED_MESSAGES, what)]


class RunIssues:
    """Mixin for a parsed run whose dataclass has ``errors`` and ``warnings`` lists."""

    errors: List[str]

    @property
    def error(self) -> Optional[str]:
        """The run's errors joined into one message, or None when it had none."""
        return "; ".join(self.errors) if self.errors else None


SOURCE_QUOTED_CHARS = 300


class SourceError(ParseError):
    """A system file or tool report (lsblk JSON, /proc/diskstats, systemctl show ...) that cannot be read exactly.

    A ParseError like every other parser's, so one ``except ParseError`` catches them all. The message is
    ``SOURCE: expected WHAT; found: 'TEXT'``, or ``sentence`` when given (the words these sources always had).
    """

    def __init__(self, source: str, expected: str, found: Optional[str] = None,
                 sentence: Optional[str] = None) -> None:
        self.found = None if found is None else printable(found, SOURCE_QUOTED_CHARS)
        self.sentence = sentence
        super().__init__(source, expected, found)

    @property
    def source(self) -> str:
        return self.tool

    @property
    def message(self) -> str:
        if self.sentence is not None:
            return self.sentence
        text = "%s: expected %s" % (self.tool, self.expected)
        if self.found is not None:
            text += "; found: '%s'" % self.found
        return text
