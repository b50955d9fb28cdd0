# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvme get-feature <controller> -f <id>`` (nvme-cli 1.x and 2.x, normal output): the feature's current value.

nvme-cli prints one line, with or without the feature id's leading zero and the value's 0x::

    get-feature:0x2 (Power Management), Current value:0x000003
    get-feature:0x02 (Power Management), Current value:00000000

and, with -H, the decoded fields under it. The value is hexadecimal either way (nvme-cli prints it with %x).
Features read here: 0x02 Power Management (bits 4:0 the power state the host set) and 0x0c Autonomous Power State
Transition (bit 0: APST enabled).
"""

from __future__ import annotations

import re
from typing import Optional

from .errors import SourceError

SOURCE = "nvme get-feature"
FEATURE_POWER_MANAGEMENT = 0x02
FEATURE_APST = 0x0C

_LINE = re.compile(r"^get-feature:\s*(?:0x)?([0-9A-Fa-f]{1,2})\b[^\n]*?Current value:\s*(?:0x)?([0-9A-Fa-f]{1,16})\s*$",
                   re.MULTILINE)


def feature_value(text: str, feature: int) -> int:
    """The current value of ``feature`` in nvme get-feature's output; SourceError when the output has no such line."""
    for found in _LINE.finditer(text or ""):
        if int(found.group(1), 16) == feature:
            return int(found.group(2), 16)
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    raise SourceError(SOURCE, "a 'get-feature:0x%02x ... Current value:' line" % feature, first)


def power_state(value: Optional[int]) -> Optional[int]:
    """The power state of a Power Management feature value (bits 4:0)."""
    return None if value is None else value & 0x1F


def apst_enabled(value: Optional[int]) -> Optional[bool]:
    """Whether an Autonomous Power State Transition feature value has APST enabled (bit 0)."""
    return None if value is None else bool(value & 0x01)
