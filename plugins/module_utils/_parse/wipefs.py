# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``wipefs -n -J DEVICE``: every signature on a device (partition tables included), nothing erased."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .errors import SOURCE_QUOTED_CHARS, ParseError, SourceError, printable
from .values import as_int, load_json, text_value

SOURCE = "wipefs JSON"


def parse_wipefs_json(text: str) -> List[Dict[str, Any]]:
    """Signatures of `wipefs -n -J DEVICE`: device, offset (bytes), type, uuid, label."""
    if not text.strip():
        return []
    data = load_json(text, SOURCE)
    if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
        raise SourceError(SOURCE, 'an object with a "signatures" list', text.strip()[:200])
    signatures = []
    for raw in data["signatures"]:
        if not isinstance(raw, dict) or text_value(raw.get("type")) is None:
            raise SourceError(SOURCE, "a signature object with a type", repr(raw)[:200])
        offset = raw.get("offset")
        if isinstance(offset, str):
            try:
                offset = int(offset, 0)
            except ValueError:
                raise SourceError(SOURCE, "a hexadecimal offset", offset)
        signatures.append({
            "device": text_value(raw.get("device")),
            "offset": as_int(offset, SOURCE, "offset"),
            "type": text_value(raw.get("type")),
            "uuid": text_value(raw.get("uuid")),
            "label": text_value(raw.get("label")),
        })
    return signatures


def wipefs_result(rc: int, stdout: str, stderr: str) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """(signatures, error) of a `wipefs -n -J` run."""
    if rc != 0:
        return [], "wipefs exit code %d: %s" % (rc, printable(stderr.strip() or stdout.strip() or "(no output)",
                                                              SOURCE_QUOTED_CHARS))
    try:
        return parse_wipefs_json(stdout), None
    except ParseError as error:
        return [], str(error)
