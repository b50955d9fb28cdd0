# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/<pid>/stat`` (proc(5)): a process's state, process group and start time."""

from __future__ import annotations

from typing import List, Tuple

from .errors import SourceError


def fields_after_command(text: str) -> List[str]:
    """The fields after the command name, state (field 3) first; [] when there is no command name.

    The command name (field 2) is in parentheses and may itself hold spaces and ')', so the fields
    are counted from the last ')'."""
    end = text.rfind(")")
    return text[end + 1:].split() if end >= 0 else []


def parse_proc_stat(text: str) -> Tuple[str, int]:
    """(state letter, start time in clock ticks since boot): state is field 3, starttime field 22."""
    fields = fields_after_command(text)
    if len(fields) < 20 or not fields[19].isdigit():
        raise SourceError("/proc/<pid>/stat", "22 or more fields", text[:80],
                          sentence="not a /proc/<pid>/stat line: %r" % text[:80])
    return fields[0], int(fields[19])
