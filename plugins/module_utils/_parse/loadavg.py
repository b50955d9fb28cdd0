# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/loadavg``: the 1, 5 and 15 minute load averages."""

from __future__ import annotations

from typing import Tuple

from .errors import SourceError


def parse_loadavg(text: str) -> Tuple[float, float, float]:
    fields = text.split()
    try:
        return float(fields[0]), float(fields[1]), float(fields[2])
    except (IndexError, ValueError):
        raise SourceError("/proc/loadavg", "three load averages", text[:80],
                          sentence="not /proc/loadavg: %r" % text[:80])
