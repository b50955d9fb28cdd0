# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tool=auto: tell the output of dd, fio, sysbench, bonnie++ and ioping apart (and take the tool
from a command line, when there is one)."""

from __future__ import annotations

import os
import re
from typing import List, Optional

from .errors import ParseError

TOOLS = ("dd", "fio", "sysbench", "bonnie", "ioping")
# argv[0] basenames; bonnie++ is "bonnie" in the records (and its converter bon_csv2txt too)
_PROGRAMS = {"dd": "dd", "fio": "fio", "sysbench": "sysbench", "bonnie++": "bonnie", "bonnie": "bonnie",
             "bon_csv2txt": "bonnie", "ioping": "ioping"}

# Every marker is linear in the text. A pattern anchored at a line start (^, re.MULTILINE) skips
# the blanks of its own line only (_SP: any whitespace but a newline), never the lines after it: "\s*"
# there rescanned every following blank line from every line start (quadratic). No two neighbouring
# quantifiers can share characters, so a failing line is not retried split another way (the ioping raw
# pattern did that over lines of numbers: 22 lines took 1.5 s, 30 lines 460 s).
_SP = r"[^\S\n]"


def _line_markers(*alternatives: str) -> "re.Pattern[str]":
    """Any of the alternatives at a line start, after that line's own blanks; {sp} in one is such a blank."""
    return re.compile(("^{sp}*(?:" + "|".join(alternatives) + ")").replace("{sp}", _SP), re.MULTILINE)


# Strong fio markers: its JSON keys. Weak: its "fio: ..." messages (a failed run without JSON).
_FIO_JSON = re.compile(r'"(?:fio version|client_stats)"\s*:|^{sp}*"jobs"{sp}*:{sp}*\['.replace("{sp}", _SP),
                       re.MULTILINE)
_FIO_MESSAGE = _line_markers(r"fio(?:: |-[0-9])")
_DD_MARKERS = _line_markers(
    r"[0-9]+\+[0-9]+ \S",  # N+M records in|out (any locale)
    r"[0-9]+ bytes transferred in ",  # BSD, coreutils 5
    r"[0-9]+ \S+ (?:\([^()\n]*\) )?[^,\n]+, [0-9][0-9.,eE+-]* (?:s|seconds), ",  # GNU, busybox summary
    r"(?:\S*/)?dd: ",
)
# sysbench: its banner, and the first line of each results layout (0.4/0.5, 1.0, prepare). The banner's
# version is taken whole ((?![0-9]|\.[0-9])): what follows it cannot take back some of its digits.
_SYSBENCH_MARKERS = _line_markers(
    r"sysbench [0-9]+(?:\.[0-9]+)+(?![0-9]|\.[0-9])[^\s:]*(?::\s|{sp}+\(|{sp}*$)",
    r"Operations performed:{sp}+[0-9]+ (?:Read|reads), [0-9]+ (?:Write|writes), ",
    r"File operations:{sp}*\n\s*reads/s:",
)
# bonnie++: its text table header, its "Using uid" and usage lines; CSV lines are checked one by one.
_BONNIE_MARKERS = re.compile((
    r"^(?:{sp}*Version{sp}+\S+{sp}+-+Sequential (?:Output|Create)-+"
    r"|Using uid:[0-9]+, gid:[0-9]+\.$"
    r"|bonnie\+\+ \[-d scratch-dir\])").replace("{sp}", _SP),
    re.MULTILINE,
)
# ioping: its statistics header and request lines (never ping's "--- host ping statistics ---").
_IOPING_MARKERS = _line_markers(
    r"--- .* ioping statistics ---{sp}*$",
    r"[0-9.]+ ?[KMGTPE]?i?B (?:<<<|>>>) .*: request=[0-9]+ time=",
    r"[0-9]+ bytes from .*: request=[0-9]+ time=[0-9.]+ ms",
)
# Weak ioping markers: its own messages, and raw -B lines (10 integers, 1.x) alone in the text.
_IOPING_MESSAGE = _line_markers(r"(?:\S*/)?ioping: ")
_IOPING_RAW_LINE = re.compile(r"[0-9]{1,30}(?: [0-9]{1,30}){9}")


def tool_from_argv(argv: Optional[List[str]]) -> Optional[str]:
    """The tool argv[0] names (path allowed; bonnie++ is 'bonnie'), else None."""
    if not argv or not isinstance(argv[0], str):
        return None
    return _PROGRAMS.get(os.path.basename(argv[0]))


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


def _bonnie_csv(text: str) -> bool:
    from .bonnie import looks_like_csv   # here, not at the top: see detect_tool
    return any(looks_like_csv(line.strip()) for line in text.splitlines() if line.count(",") >= 26)


def detect_tool(text: str) -> str:
    """'dd', 'fio', 'sysbench', 'bonnie' or 'ioping' from the output itself; ParseError when it is
    none of them. fio (JSON, then its normal or terse output) and dd are recognised first."""
    if not isinstance(text, str):
        raise ParseError("tool=auto", "text, got %s" % type(text).__name__)
    # Imported here: a caller that names its tool (bench_run) never needs them (records.py says why).
    from .fio_text import recognise as looks_like_fio_text
    if _FIO_JSON.search(text) or looks_like_fio_text(text):  # fio's normal or terse output: fio_text.MARKERS
        return "fio"
    if _DD_MARKERS.search(text):
        return "dd"
    if _FIO_MESSAGE.search(text):
        return "fio"
    if _SYSBENCH_MARKERS.search(text):
        return "sysbench"
    if _BONNIE_MARKERS.search(text) or _bonnie_csv(text):
        return "bonnie"
    if _IOPING_MARKERS.search(text) or _IOPING_MESSAGE.search(text) or _only_ioping_raw_lines(text):
        return "ioping"
    first = next((line.strip() for line in text.splitlines() if line.strip()), None)
    raise ParseError(
        "tool=auto",
        "dd or fio output, or the output of sysbench fileio, bonnie++ or ioping "
        "(pass tool=dd, fio, sysbench, bonnie or ioping if it is one of them)",
        first, None,
    )
