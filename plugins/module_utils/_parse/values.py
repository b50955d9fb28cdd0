# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small value readers the parsers share (lsblk, wipefs, smartctl, nvme-cli JSON; the octal escapes of
/proc/self/mountinfo, /proc/swaps and /etc/fstab), and the line markers the tool parsers recognise their output by."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from .errors import SourceError


def text_value(value: Any) -> Optional[str]:
    """A stripped string, None for null and blank values (lsblk pads vendor and model with spaces)."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def as_int(value: Any, source: str, field: str) -> Optional[int]:
    """An integer JSON value (or its decimal string); SourceError for anything else but null."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SourceError(source, "an integer for %s" % field, repr(value))
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.match(r"^\s*-?[0-9]+\s*$", value):
        return int(value)
    raise SourceError(source, "an integer for %s" % field, repr(value))


def as_bool(value: Any, source: str, field: str) -> Optional[bool]:
    """lsblk 2.33+ prints booleans as JSON true/false, older ones as "0"/"1"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return value.strip() == "1"
    raise SourceError(source, "a boolean for %s" % field, repr(value))


def load_json(text: str, source: str) -> Any:
    """The JSON document of a tool's output; SourceError quoting its first line when it is none (or is nested
    deeper than the decoder's recursion: RecursionError, as fio.py treats it too)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        first = text.strip().splitlines()[0] if text.strip() else ""
        raise SourceError(source, "JSON (%s)" % error, first)


def number(value: Any) -> Optional[int]:
    """Integers as smartctl and nvme-cli print them: numbers, numeric strings ("1,234" included), {"value": n}."""
    if isinstance(value, dict):
        value = value.get("value")
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        cleaned = value.replace(",", "").strip()
        if re.match(r"^-?[0-9]+$", cleaned):
            return int(cleaned)
    return None


def unescape_octal(text: str) -> str:
    r"""/proc/self/mountinfo, /proc/swaps and fstab escape space, tab, newline and backslash as \NNN."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


# Every marker is linear in the text. A pattern anchored at a line start (^, re.MULTILINE) skips
# the blanks of its own line only (_SP: any whitespace but a newline), never the lines after it: "\s*"
# there rescanned every following blank line from every line start (quadratic). No two neighbouring
# quantifiers can share characters, so a failing line is not retried split another way (the ioping raw
# pattern did that over lines of numbers: 22 lines took 1.5 s, 30 lines 460 s).
SP = r"[^\S\n]"


def line_markers(*alternatives: str) -> "re.Pattern[str]":
    """Any of the alternatives at a line start, after that line's own blanks; {sp} in one is such a blank."""
    return re.compile(("^{sp}*(?:" + "|".join(alternatives) + ")").replace("{sp}", SP), re.MULTILINE)
