# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``blkid -p -o export DEVICE``: the signature and ids of one device."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from .errors import SOURCE_QUOTED_CHARS, SourceError, printable

SOURCE = "blkid -o export"


def parse_blkid_export(text: str) -> Dict[str, str]:
    """KEY=VALUE lines of `blkid -p -o export DEVICE` (empty output: no signature found)."""
    values = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if "=" not in line:
            raise SourceError(SOURCE, "KEY=VALUE lines", line)
        key, value = line.split("=", 1)
        values[key.strip()] = re.sub(r"\\(.)", r"\1", value)
    return values


def blkid_result(rc: int, stdout: str, stderr: str) -> Tuple[Dict[str, str], Optional[str]]:
    """(values, error) of a `blkid -p -o export` run. blkid exits 2 both for "nothing found" (silent)
    and for errors such as EPERM (with a message on stderr), so stderr decides."""
    if rc == 0:
        return parse_blkid_export(stdout), None
    if rc == 2 and not stderr.strip() and not stdout.strip():
        return {}, None
    return {}, "blkid exit code %d: %s" % (rc, printable(stderr.strip() or stdout.strip() or "(no output)",
                                                         SOURCE_QUOTED_CHARS))
