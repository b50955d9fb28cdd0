# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/<pid>/cgroup``: which cgroup a process is in, per controller. The runner (_run.py) puts
its cache fence beside (v2) or below (v1) the module's own memory cgroup."""

from __future__ import annotations

from typing import Dict


def parse_proc_cgroup(text: str) -> Dict[str, str]:
    """{controller: path} from /proc/<pid>/cgroup; the v2 (unified) entry is under "".

    Lines that are not ``hierarchy:controllers:path`` are skipped (the kernel writes no others)."""
    found: Dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        _hierarchy, controllers, path = parts
        if not controllers:
            found[""] = path
            continue
        for controller in controllers.split(","):
            found[controller] = path
    return found
