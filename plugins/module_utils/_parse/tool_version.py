# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a tool prints when asked its version (the arguments: ``_tools.TOOL_VERSION_ARGS``), as a version."""

from __future__ import annotations

import re
from typing import Optional, Tuple

# bonnie++ has no version option: any unknown option prints its usage, which ends in "Version: 2.00a".
_TOOL_VERSION_PATTERNS = {
    "bonnie++": re.compile(r"^Version:\s*(\S+)", re.MULTILINE),
}
_DOTTED_VERSION = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)+[0-9A-Za-z.+~-]*)")
_LEADING_NUMBERS = re.compile(r"^([0-9]+(?:\.[0-9]+)*)")


def parse_tool_version(tool: str, stdout: str, stderr: str = "") -> Optional[str]:
    """Version from what TOOL_VERSION_ARGS prints: 'dd (coreutils) 9.1' -> '9.1', 'fio-3.33' -> '3.33',
    bonnie++ usage '... Version: 2.00a' -> '2.00a', 'nvme version 2.3 (git 2.3)' -> '2.3'.

    stdout first, stderr after it (bonnie++ prints its usage there); stderr alone when stdout is blank."""
    text = stdout + "\n" + stderr if stdout.strip() else stderr
    pattern = _TOOL_VERSION_PATTERNS.get(tool)
    if pattern is not None:
        match = pattern.search(text)
        return match.group(1) if match else None
    for line in text.splitlines():
        if line.strip():
            match = _DOTTED_VERSION.search(line)
            return match.group(1) if match else None
    return None


def version_tuple(version: str) -> Optional[Tuple[int, ...]]:
    """(3, 33) from '3.33', (2, 0) from '2.00a', None when it does not start with a number (or with one of more than
    20 digits: no version has one, and int() refuses more than 4300)."""
    match = _LEADING_NUMBERS.match(version)
    parts = match.group(1).split(".") if match else []
    return tuple(int(part) for part in parts) if parts and max(map(len, parts)) <= 20 else None
