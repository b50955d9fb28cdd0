# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk's volatile write cache as its control tool prints it: ``hdparm -W`` (ATA), ``sdparm
--get=WCE`` (SCSI/SAS) and ``nvme get-feature -f 6`` (NVMe). The runner (_run.py) reads it before
switching the cache off, after, and after restoring it. Fixtures: tests/unit/plugins/module_utils/fixtures/run/.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, NamedTuple, Optional

from .errors import SourceError

TRANSPORT_ATA = "ata"
TRANSPORT_SCSI = "scsi"
TRANSPORT_NVME = "nvme"


class WriteCacheState(NamedTuple):
    """A write cache reading: enabled, and whether the setting can be changed (None: not said)."""

    enabled: bool
    changeable: Optional[bool] = None


_HDPARM = re.compile(r"^\s*write-caching\s*=\s*(\d+)\s*\((on|off)\)\s*$")
_HDPARM_UNSUPPORTED = re.compile(r"^\s*write-caching\s*=\s*not supported")
_SDPARM = re.compile(r"^\s*WCE\s+(\d+)(?:\s+\[(?P<flags>[^\]]*)\])?\s*$")
_SDPARM_CHANGEABLE = re.compile(r"cha:\s*([yn])")
_NVME = re.compile(r"^\s*get-feature:\s*(?:0x)?0*6\b.*Current value:\s*(?:0x)?([0-9a-fA-F]+)\s*$")


def _lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if line.strip()]


def _last_line(text: str) -> Optional[str]:
    lines = _lines(text)
    return lines[-1].strip() if lines else None


def _offending(text: str) -> str:
    last = _last_line(text)
    return repr(last) if last is not None else "(no output)"


def parse_hdparm_write_cache(text: str) -> WriteCacheState:
    """``hdparm -W /dev/X`` (and -W0/-W1, which print the new reading last): the last
    ``write-caching =  N (on|off)`` line. ``not supported`` and anything else: SourceError."""
    found = None
    for line in _lines(text):
        if _HDPARM_UNSUPPORTED.match(line):
            raise SourceError("hdparm -W", "a write-caching setting", line.strip(),
                              sentence="hdparm says write-caching is not supported")
        match = _HDPARM.match(line)
        if match:
            value, word = int(match.group(1)), match.group(2)
            if (value != 0) != (word == "on"):
                raise SourceError("hdparm -W", "a write-caching line that agrees with itself", line.strip(),
                                  sentence="hdparm write-caching line contradicts itself: %r" % line.strip())
            found = WriteCacheState(enabled=value != 0)
    if found is None:
        raise SourceError("hdparm -W", "a 'write-caching = N (on|off)' line", _last_line(text),
                          sentence="expected a 'write-caching = N (on|off)' line from hdparm -W, last line %s"
                          % _offending(text))
    return found


def parse_sdparm_wce(text: str) -> WriteCacheState:
    """``sdparm --get=WCE /dev/X``: the ``WCE  <current>  [cha: y|n, def: .., sav: ..]`` line
    (older sdparm prints only the value). ``cha: n`` means the setting cannot be changed."""
    for line in _lines(text):
        match = _SDPARM.match(line)
        if match:
            flags = match.group("flags") or ""
            changeable = _SDPARM_CHANGEABLE.search(flags)
            return WriteCacheState(enabled=int(match.group(1)) != 0,
                                   changeable=None if changeable is None else changeable.group(1) == "y")
    raise SourceError("sdparm --get=WCE", "a 'WCE <value>' line", _last_line(text),
                      sentence="expected a 'WCE <value>' line from sdparm --get=WCE, last line %s" % _offending(text))


def parse_nvme_volatile_write_cache(text: str) -> WriteCacheState:
    """``nvme get-feature /dev/X -f 6``: ``get-feature:0x06 (Volatile Write Cache), Current
    value:0x00000001`` (nvme-cli prints 0 as ``00000000``, older versions ``0x6`` and 6 digits);
    bit 0 is WCE."""
    for line in _lines(text):
        match = _NVME.match(line)
        if match:
            return WriteCacheState(enabled=bool(int(match.group(1), 16) & 1))
    raise SourceError("nvme get-feature -f 6", "a 'get-feature:0x06 (Volatile Write Cache), Current value:' line",
                      _last_line(text),
                      sentence="expected 'get-feature:0x06 (Volatile Write Cache), Current value:...' from nvme "
                      "get-feature, last line %s" % _offending(text))


WRITE_CACHE_PARSERS: Dict[str, Callable[[str], WriteCacheState]] = {
    TRANSPORT_ATA: parse_hdparm_write_cache,
    TRANSPORT_SCSI: parse_sdparm_wce,
    TRANSPORT_NVME: parse_nvme_volatile_write_cache,
}


def parse_write_cache(transport: str, text: str) -> WriteCacheState:
    """The reading of the tool of ``transport`` (ata, scsi, nvme); SourceError when text holds none."""
    return WRITE_CACHE_PARSERS[transport](text)
