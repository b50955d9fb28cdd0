# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/etc/fstab``: its entries, and what each entry's spec names."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

from .errors import SourceError
from .values import unescape_octal

SOURCE = "/etc/fstab"


def parse_fstab(text: str) -> List[Dict[str, str]]:
    """Entries of /etc/fstab: spec, file, vfstype, options (comments and blank lines skipped)."""
    entries = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) < 2:
            raise SourceError(SOURCE, "at least 'SPEC FILE' on a line", line)
        entries.append({
            "spec": unescape_octal(fields[0]),
            "file": unescape_octal(fields[1]),
            "vfstype": fields[2] if len(fields) > 2 else "auto",
            "options": fields[3] if len(fields) > 3 else "defaults",
        })
    return entries


def fstab_spec(spec: str) -> Tuple[str, str]:
    """What an fstab spec names: ('uuid'|'label'|'partuuid'|'partlabel', value), ('path', '/dev/...') or
    ('other', spec)."""
    match = re.match(r"^(UUID|LABEL|PARTUUID|PARTLABEL)=(.*)$", spec)
    if match:
        value = match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        return match.group(1).lower(), value
    if spec.startswith("/"):
        return "path", spec
    return "other", spec
