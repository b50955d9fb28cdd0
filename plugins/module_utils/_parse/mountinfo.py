# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/proc/self/mountinfo``: the one mount-table parser (discover, the plan, raw grants, the quiesce's cgroup).

mountinfo rather than /proc/mounts: it names the device number of every mount, so a mount is tied to its
block device even when the source is a by-uuid link, a /dev/mapper name or a renamed node.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from .errors import SourceError
from .values import unescape_octal

SOURCE = "/proc/self/mountinfo"

_MAJ_MIN = re.compile(r"^[0-9]+:[0-9]+$")


def parse_mountinfo(text: str) -> List[Dict[str, str]]:
    """Mounts of /proc/self/mountinfo in order: mount_point, maj_min (st_dev), root, fstype, source, options
    (the mount's own, e.g. "ro,relatime")."""
    mounts = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(" ")
        if "-" not in fields[6:] or len(fields) < 10:
            raise SourceError(SOURCE, "'ID PARENT MAJ:MIN ROOT MOUNT OPTS ... - FSTYPE SOURCE SUPEROPTS' on line %d"
                              % lineno, line)
        separator = fields.index("-", 6)
        if len(fields) < separator + 3 or not _MAJ_MIN.match(fields[2]):
            raise SourceError(SOURCE, "FSTYPE SOURCE after ' - ' and MAJ:MIN on line %d" % lineno, line)
        mounts.append({
            "mount_point": unescape_octal(fields[4]),
            "maj_min": fields[2],
            "root": unescape_octal(fields[3]),
            "fstype": fields[separator + 1],
            "source": unescape_octal(fields[separator + 2]),
            "options": fields[5],
        })
    return mounts


def cgroup2_mount(text: str) -> Optional[str]:
    """Mount point of the cgroup v2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid v1/v2
    system), None without one."""
    return next((mount["mount_point"] for mount in parse_mountinfo(text) if mount["fstype"] == "cgroup2"), None)
