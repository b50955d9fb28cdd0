# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel's block I/O counters (Documentation/admin-guide/iostats.rst): ``/proc/diskstats`` (every device,
each line MAJOR MINOR NAME then the counters) and ``/sys/block/<dev>/stat`` (one device, the counters alone).

The sector fields are always in 512-byte units, whatever the logical block size of the device.
"""

from __future__ import annotations

from typing import Dict, Optional

from .errors import SourceError

# Field positions among the counters (0-based), the same in both files.
READS = 0
READ_SECTORS = 2
WRITES = 4
WRITE_SECTORS = 6
IN_FLIGHT = 8
IO_TICKS_MS = 9


def parse_diskstats(text: str) -> Dict[str, Dict[str, int]]:
    """Counters per device name from /proc/diskstats: reads, read_sectors, writes, write_sectors, in_flight,
    io_ticks_ms."""
    stats: Dict[str, Dict[str, int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 14 or not all(field.isdigit() for field in fields[3:14]):
            raise SourceError("/proc/diskstats", "MAJOR MINOR NAME and 11 counters", line,
                              sentence="not a /proc/diskstats line: %r" % line)
        values = [int(field) for field in fields[3:14]]
        stats[fields[2]] = {
            "reads": values[READS], "read_sectors": values[READ_SECTORS], "writes": values[WRITES],
            "write_sectors": values[WRITE_SECTORS], "in_flight": values[IN_FLIGHT], "io_ticks_ms": values[IO_TICKS_MS],
        }
    return stats


def parse_block_stat(text: str) -> Optional[Dict[str, int]]:
    """Counters from the text of /sys/block/<dev>/stat: reads, read_sectors, writes, write_sectors and in_flight
    (an old kernel's shorter line: the sector counters only); None when it is not that format."""
    fields = text.split()
    if len(fields) <= WRITE_SECTORS or not all(field.isdigit() for field in fields):
        return None
    counters = {"read_sectors": int(fields[READ_SECTORS]), "write_sectors": int(fields[WRITE_SECTORS])}
    if len(fields) > IN_FLIGHT:
        counters.update(reads=int(fields[READS]), writes=int(fields[WRITES]), in_flight=int(fields[IN_FLIGHT]))
    return counters
