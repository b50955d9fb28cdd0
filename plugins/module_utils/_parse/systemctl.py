# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``systemctl show`` (KEY=value blocks, run with TZ=UTC), its timestamps and time spans, the timer trigger
lines, and ``systemctl list-units --no-legend --plain``."""

from __future__ import annotations

import datetime
import re
from typing import Dict, List, Optional, Tuple

from .errors import SourceError

SYSTEMD_TIME = re.compile(r"^(?:[A-Z][a-z]{2} )?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC$")
TIMESPAN_PART = re.compile(r"(\d+(?:\.\d+)?)(y|month|w|d|h|min|s|ms|us)")
TIMESPAN_UNITS = {"y": 31557600.0, "month": 2629800.0, "w": 604800.0, "d": 86400.0, "h": 3600.0, "min": 60.0,
                  "s": 1.0, "ms": 1e-3, "us": 1e-6}
TIMER_ENTRY = re.compile(r"^\{ (\w+)=(.*) ; next_elapse=(.*) \}$")


def parse_systemctl_show(text: str) -> List[Dict[str, str]]:
    """Blocks of KEY=value lines, one block per unit, separated by empty lines (systemctl show).
    A key printed more than once (a timer's TimersCalendar/TimersMonotonic, one line per trigger)
    keeps every value, one per line."""
    blocks: List[Dict[str, List[str]]] = []
    current: Dict[str, List[str]] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise SourceError("systemctl show", "KEY=value lines", line,
                              sentence="not systemctl show output: %r" % line)
        current.setdefault(key, []).append(value)  # joined once at the end: appending to a str copied it each time
    if current:
        blocks.append(current)
    return [{key: "\n".join(values) for key, values in block.items()} for block in blocks]


def parse_systemd_time(text: Optional[str]) -> Optional[float]:
    """A timestamp as systemctl prints it with TZ=UTC ('Thu 2026-11-26 06:00:00 UTC', or '@1795921800'
    with --timestamp=unix); None for an empty or 'n/a' value."""
    text = (text or "").strip()
    if not text or text in ("n/a", "(null)"):
        return None
    if text.startswith("@") and text[1:].isdigit():
        return float(text[1:])
    match = SYSTEMD_TIME.match(text)
    if not match:
        raise SourceError("systemctl show", "a UTC timestamp", text,
                          sentence="not a systemd UTC timestamp (systemctl runs with TZ=UTC): %r" % text)
    moment = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def parse_timespan(text: str) -> Optional[float]:
    """Seconds of a systemd time span as systemctl prints it ('3h 37min 15.390283s', '1d', '0');
    None for 'infinity'."""
    text = text.strip()
    if text == "infinity":
        return None
    if text == "0":
        return 0.0
    parts = text.split()
    total = 0.0
    for part in parts:
        match = TIMESPAN_PART.fullmatch(part)
        if not match:
            raise SourceError("systemctl show", "a time span", text, sentence="not a systemd time span: %r" % text)
        total += float(match.group(1)) * TIMESPAN_UNITS[match.group(2)]
    return total


def timer_entries(value: Optional[str]) -> List[Tuple[str, str, str]]:
    """(setting, value, next elapse text) of each '{ OnCalendar=... ; next_elapse=... }' line."""
    entries = []
    for line in (value or "").splitlines():
        match = TIMER_ENTRY.match(line.strip())
        if match:
            entries.append((match.group(1), match.group(2), match.group(3)))
    return entries


def parse_list_units(text: str) -> List[str]:
    """Unit names, the first column of `systemctl list-units --no-legend --plain --full`."""
    return [line.split()[0] for line in text.splitlines() if line.strip()]
