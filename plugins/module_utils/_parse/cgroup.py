# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cgroup v2 files: ``cpu.stat`` (present in every cgroup, with or without the cpu controller)."""

from __future__ import annotations

from .errors import SourceError


def parse_cpu_stat(text: str) -> int:
    """usage_usec of a cgroup v2 cpu.stat."""
    for line in text.splitlines():
        key, _sep, value = line.partition(" ")
        if key == "usage_usec" and value.strip().isdigit():
            return int(value)
    raise SourceError("cpu.stat", "a usage_usec line", text[:80],
                      sentence="not a cgroup v2 cpu.stat (no usage_usec): %r" % text[:80])
