# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``/etc/os-release`` (os-release(5)): which distribution."""

from __future__ import annotations

import re
from typing import Dict, Optional


def parse_os_release(text: str) -> Dict[str, Optional[str]]:
    """id, version_id, name, pretty_name, version_codename of /etc/os-release."""
    values = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Z_][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            value = match.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            values[match.group(1)] = value
    return {key.lower(): values.get(key) for key in ("ID", "VERSION_ID", "NAME", "PRETTY_NAME", "VERSION_CODENAME")}
