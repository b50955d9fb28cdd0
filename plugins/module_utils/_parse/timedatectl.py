# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``timedatectl timesync-status`` (the NTP offset) and ``timedatectl show`` (is the clock NTP-synchronized)."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

# [^\S\n]: the blanks of one line ("\s" after ^ took the blank lines after it too: quadratic in blank lines).
_TIMESYNC_OFFSET = re.compile(
    r"^[^\S\n]*Offset:[^\S\n]*(?P<value>[+-]?[0-9.]+)[^\S\n]*(?P<unit>ns|us|\u00b5s|ms|s|min)[^\S\n]*$", re.MULTILINE)
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


def parse_timesync_status(text: str) -> Optional[Dict[str, Any]]:
    """The NTP offset ``timedatectl timesync-status`` prints; None when the line is missing."""
    found = _TIMESYNC_OFFSET.search(text)
    if found is None:
        return None
    return {"source": "timedatectl timesync-status",
            "offset_s": float(found.group("value")) * _TIME_UNITS[found.group("unit")],
            "meaning": "NTP offset of the last exchange as systemd-timesyncd reports it (the server's clock minus "
                       "this host's, RFC 5905)",
            "line": found.group(0).strip()}


def _show_bool(value: Optional[str]) -> Optional[bool]:
    return {"yes": True, "no": False}.get((value or "").strip())


def parse_timedatectl_show(text: str) -> Optional[Dict[str, Any]]:
    """What ``timedatectl show`` says of NTP: NTPSynchronized (the kernel's clock-synchronized flag, set by
    whichever NTP client disciplines the clock), NTP (an NTP service of systemd's list is active), CanNTP (one is
    installed), TimeUSec, Timezone, LocalRTC. None when it names neither NTP nor NTPSynchronized."""
    values: Dict[str, str] = {}
    for line in text.splitlines():
        key, separator, value = line.partition("=")
        if separator:
            values[key.strip()] = value.strip()
    if "NTPSynchronized" not in values and "NTP" not in values:
        return None
    return {"ntp_synchronized": _show_bool(values.get("NTPSynchronized")), "ntp": _show_bool(values.get("NTP")),
            "can_ntp": _show_bool(values.get("CanNTP")), "time": values.get("TimeUSec"),
            "timezone": values.get("Timezone"), "local_rtc": _show_bool(values.get("LocalRTC"))}
