# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/mdstat``: md arrays, their members and the sync action in progress."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from .errors import SourceError

MD_LINE = re.compile(r"^(md[^\s:]*)\s*:\s*(\S+)\s*(.*)$")
MD_MEMBER = re.compile(r"^([^\s\[\]()]+)\[\d+\](?:\([A-Za-z]\))*$")
MD_PROGRESS = re.compile(r"\b(resync|recovery|reshape|check|repair)\s*=\s*([0-9.]+)%\s*\((\d+)/(\d+)\)"
                         r"(?:\s+finish=(\S+))?(?:\s+speed=(\S+))?")
MD_WAITING = re.compile(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(DELAYED|PENDING)\b")


def parse_mdstat(text: str) -> Dict[str, Dict[str, Any]]:
    """Arrays of /proc/mdstat: state, level, member names, and the sync action in progress
    (resync, recovery, reshape, check, repair) with its progress, or DELAYED/PENDING ones."""
    arrays: Dict[str, Dict[str, Any]] = {}
    current: Optional[Dict[str, Any]] = None
    recognised = False
    for line in text.splitlines():
        if line.startswith("Personalities") or line.startswith("unused devices"):
            recognised = True
            current = None
            continue
        match = MD_LINE.match(line)
        if match:
            recognised = True
            words = match.group(3).split()
            members = [MD_MEMBER.match(word).group(1) for word in words if MD_MEMBER.match(word)]
            levels = [word for word in words if not MD_MEMBER.match(word) and not word.startswith("(")]
            current = arrays[match.group(1)] = {
                "state": match.group(2), "level": levels[0] if levels else None, "members": members,
                "action": None, "progress_percent": None, "finish": None, "speed": None, "waiting": None,
            }
            continue
        if current is None or not line[:1].isspace():
            continue
        progress = MD_PROGRESS.search(line)
        if progress:
            current.update(action=progress.group(1), progress_percent=float(progress.group(2)),
                           finish=progress.group(5), speed=progress.group(6))
            continue
        waiting = MD_WAITING.search(line)
        if waiting:
            current.update(action=waiting.group(1), waiting=waiting.group(2))
    if text.strip() and not recognised:
        first = text.strip().splitlines()[0][:80]
        raise SourceError("/proc/mdstat", "a Personalities line or mdN : lines", first,
                          sentence="not /proc/mdstat: %r" % first)
    return arrays
