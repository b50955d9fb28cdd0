# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tool=auto: tell the output of the registry's tools apart (each parser recognises its own output, registry.py),
and take the tool from a command line, when there is one."""

from __future__ import annotations

import os
from typing import List, Optional

from .errors import ParseError
from .registry import BY_PROGRAM, PARSERS, TOOLS

__all__ = ["TOOLS", "detect_tool", "tool_from_argv"]


def tool_from_argv(argv: Optional[List[str]]) -> Optional[str]:
    """The tool argv[0] names (path allowed; bonnie++ is 'bonnie'), else None."""
    if not argv or not isinstance(argv[0], str):
        return None
    return BY_PROGRAM.get(os.path.basename(argv[0]))


def detect_tool(text: str) -> str:
    """The tool whose output text is, from the text itself: of the parsers that recognise it, the one of the lowest
    rank (fio's JSON or text output, then dd, then fio's messages, sysbench, bonnie++, ioping). ParseError when
    none does. Every parser's markers are linear in the text."""
    if not isinstance(text, str):
        raise ParseError("tool=auto", "text, got %s" % type(text).__name__)
    ranked = []
    for parser in PARSERS:
        rank = parser.load().recognise(text)
        if rank is not None:
            ranked.append((rank, parser.tool))
    if ranked:
        return min(ranked)[1]
    first = next((line.strip() for line in text.splitlines() if line.strip()), None)
    names = [parser.description for parser in PARSERS]
    raise ParseError(
        "tool=auto",
        "%s or %s output (pass tool=%s or %s if it is one of them)"
        % (", ".join(names[:-1]), names[-1], ", ".join(TOOLS[:-1]), TOOLS[-1]),
        first, None,
    )
