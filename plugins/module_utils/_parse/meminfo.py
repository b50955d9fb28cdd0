# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/meminfo``: the memory the buffered tests are sized from."""

from __future__ import annotations

import re
from typing import Optional


def parse_meminfo(text: str) -> Optional[int]:
    """MemTotal of /proc/meminfo in bytes; None when there is no 'MemTotal: N kB' line."""
    match = re.search(r"^MemTotal:\s+([0-9]+)\s*kB\s*$", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None
