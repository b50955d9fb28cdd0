# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/swaps``: the active swap areas."""

from __future__ import annotations

import re
from typing import Any, Dict, List

from .errors import SourceError
from .values import unescape_octal

SOURCE = "/proc/swaps"


def parse_swaps(text: str) -> List[Dict[str, Any]]:
    """Active swap areas of /proc/swaps: filename, type (partition or file), size_bytes, used_bytes, priority."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    if not lines[0].startswith("Filename"):
        raise SourceError(SOURCE, "the header 'Filename Type Size Used Priority'", lines[0])
    swaps = []
    for line in lines[1:]:
        fields = line.rsplit(None, 4)
        if len(fields) != 5 or not all(re.match(r"^-?[0-9]+$", field) for field in fields[2:]):
            raise SourceError(SOURCE, "'FILENAME TYPE SIZE USED PRIORITY' (sizes in KiB)", line)
        swaps.append({
            "filename": unescape_octal(fields[0]),
            "type": fields[1],
            "size_bytes": int(fields[2]) * 1024,
            "used_bytes": int(fields[3]) * 1024,
            "priority": int(fields[4]),
        })
    return swaps
