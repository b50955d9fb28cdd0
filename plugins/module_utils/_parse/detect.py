# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tool=auto: tell dd output from fio output (and from a command line, when there is one)."""

from __future__ import annotations

import os
import re
from typing import List, Optional

from .errors import ParseError

TOOLS = ("dd", "fio")

# Strong fio markers: its JSON keys. Weak: its "fio: ..." messages (a failed run without JSON).
_FIO_JSON = re.compile(r'"(fio version|client_stats)"\s*:|^\s*"jobs"\s*:\s*\[', re.MULTILINE)
_FIO_MESSAGE = re.compile(r"^\s*fio(: |-[0-9])", re.MULTILINE)
_DD_MARKERS = re.compile(
    r"^\s*[0-9]+\+[0-9]+ \S"  # N+M records in|out (any locale)
    r"|^\s*[0-9]+ bytes transferred in "  # BSD, coreutils 5
    r"|^\s*[0-9]+ \S+ (\([^()]*\) )?[^,]+, [0-9][0-9.,eE+-]* (s|seconds), "  # GNU, busybox summary
    r"|^\s*(\S*/)?dd: ",
    re.MULTILINE,
)


def tool_from_argv(argv: Optional[List[str]]) -> Optional[str]:
    """'dd' or 'fio' when argv[0] names one of them (path allowed), else None."""
    if not argv or not isinstance(argv[0], str):
        return None
    name = os.path.basename(argv[0])
    return name if name in TOOLS else None


def detect_tool(text: str) -> str:
    """'fio' or 'dd' from the output itself; ParseError when it is neither."""
    if not isinstance(text, str):
        raise ParseError("tool=auto", "text, got %s" % type(text).__name__)
    if _FIO_JSON.search(text):
        return "fio"
    if _DD_MARKERS.search(text):
        return "dd"
    if _FIO_MESSAGE.search(text):
        return "fio"
    first = next((line.strip() for line in text.splitlines() if line.strip()), None)
    raise ParseError("tool=auto", "dd or fio output (pass tool=dd or tool=fio if it is one of them)", first, None)
