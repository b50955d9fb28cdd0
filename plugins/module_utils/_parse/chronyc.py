# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``chronyc tracking``: the system clock's offset from NTP time."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

# [^\S\n]: the blanks of one line. "\s" after ^ also took the blank lines that follow and was tried again from
# each of them (quadratic in a run of blank lines; benchmarks/parse_bounds.py).
_CHRONY_SYSTEM_TIME = re.compile(
    r"^[^\S\n]*System time[^\S\n]*:[^\S\n]*(?P<value>[0-9.]+)[^\S\n]+seconds[^\S\n]+(?P<side>fast|slow)[^\S\n]+"
    r"of NTP time", re.MULTILINE)
_CHRONY_UNSYNCHRONISED = re.compile(r"^[^\S\n]*Leap status[^\S\n]*:[^\S\n]*Not synchronised[^\S\n]*$",
                                    re.MULTILINE)


def chronyc_unsynchronised(text: str) -> Optional[str]:
    """The ``Leap status : Not synchronised`` line of ``chronyc tracking`` (chronyd reaches no source), else None."""
    found = _CHRONY_UNSYNCHRONISED.search(text)
    return found.group(0).strip() if found else None


def parse_chronyc_tracking(text: str) -> Optional[Dict[str, Any]]:
    """The system clock's offset from NTP time in ``chronyc tracking``; None when the line is missing or chronyd
    is not synchronised (its System time line then reads 0 seconds: no measurement)."""
    found = _CHRONY_SYSTEM_TIME.search(text)
    if found is None or chronyc_unsynchronised(text):
        return None
    value = float(found.group("value"))
    return {"source": "chronyc tracking", "offset_s": value if found.group("side") == "fast" else -value,
            "meaning": "this host's clock minus NTP time", "line": found.group(0).strip()}
