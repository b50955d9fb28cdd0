# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Block-device helpers, pure Python (no Ansible imports): path -> whole disk, /sys/block stat deltas
(the stat file's text is read by _parse.diskstats).

    device = whole_disk_name("/srv/diskproof/d0/testfile")      # 'sdb', 'loop3', 'nvme0n1' or None
    before = read_stat(device); ...run...; after = read_stat(device)
    stat_delta_bytes(before, after)                             # {'read_bytes': 0, 'write_bytes': 268435456}

The sector fields of /sys/block/<dev>/stat are always in 512-byte units, whatever the logical
block size of the device (Documentation/block/stat.rst), so a delta is sectors x 512 bytes.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Callable, Dict, NamedTuple, Optional, Tuple

from ._parse.diskstats import parse_block_stat

SYS_ROOT = "/sys"
SECTOR_BYTES = 512
DROP_CACHES = "/proc/sys/vm/drop_caches"


def _stat(path: str) -> os.stat_result:
    return os.stat(path)


def device_number(path: str) -> Optional[Tuple[int, int]]:
    """(major, minor) of the device holding path, or of path itself when it is a block device node.

    A path that does not exist yet (a test file a tool will create) is looked up through its
    nearest existing parent directory. None when nothing along the path exists.
    """
    current = os.path.abspath(path)
    while True:
        try:
            info = _stat(current)
        except FileNotFoundError:
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent
            continue
        except OSError:
            return None
        number = info.st_rdev if stat.S_ISBLK(info.st_mode) else info.st_dev
        return os.major(number), os.minor(number)


def node_rdev(path: str) -> Optional[int]:
    """st_rdev of path when it is a block device node (symlinks followed: /dev/mapper and /dev/disk names),
    else None (missing, a regular file, tmpfs)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_rdev if stat.S_ISBLK(info.st_mode) else None


def whole_disk_for(major: int, minor: int, sys_root: str = SYS_ROOT) -> Optional[str]:
    """Kernel name of the whole disk behind MAJ:MIN ('sda' for sda1), None when it is no block device
    (tmpfs, overlay, btrfs subvolumes and other anonymous devices have no /sys/dev/block entry)."""
    link = os.path.join(sys_root, "dev", "block", "%d:%d" % (major, minor))
    if not os.path.exists(link):
        return None
    node = os.path.realpath(link)
    if os.path.exists(os.path.join(node, "partition")):
        node = os.path.dirname(node)
    name = os.path.basename(node)
    if not os.path.exists(os.path.join(sys_root, "block", name)):
        return None
    return name


def whole_disk_name(path: str, sys_root: str = SYS_ROOT) -> Optional[str]:
    """Whole-disk kernel name for a file, directory or /dev node; None when it cannot be known."""
    number = device_number(path)
    if number is None:
        return None
    return whole_disk_for(number[0], number[1], sys_root)


def read_stat(device: Optional[str], sys_root: str = SYS_ROOT) -> Optional[Dict[str, int]]:
    """Sector counters of a whole disk ('sdb' or '/dev/sdb'), None when unknown or unreadable."""
    if not device:
        return None
    name = os.path.basename(device)
    try:
        with open(os.path.join(sys_root, "block", name, "stat")) as handle:
            return parse_block_stat(handle.read())
    except OSError:
        return None


def stat_delta_bytes(before: Optional[Dict[str, int]], after: Optional[Dict[str, int]]) -> Optional[Dict[str, int]]:
    """{read_bytes, write_bytes} that reached the device between two snapshots; None if either is
    missing or a counter went backwards (device re-created)."""
    if before is None or after is None:
        return None
    read = after["read_sectors"] - before["read_sectors"]
    write = after["write_sectors"] - before["write_sectors"]
    if read < 0 or write < 0:
        return None
    return {"read_bytes": read * SECTOR_BYTES, "write_bytes": write * SECTOR_BYTES}


# What "idle" compares between two readings: no request completed, no sector moved, nothing in flight.
_ACTIVITY_FIELDS = ("reads", "writes", "read_sectors", "write_sectors")


class Settle(NamedTuple):
    """wait_until_idle's answer: whether the disk went quiet, after how long, and what it did meanwhile."""

    idle: bool
    waited_s: float
    requests: int   # requests completed while waiting (reads + writes)


def wait_until_idle(device: Optional[str], quiet_s: float, limit_s: float, poll_s: float = 0.05,
                    sys_root: str = SYS_ROOT, clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep) -> Optional[Settle]:
    """Wait until the disk has shown no I/O for quiet_s seconds (its counters unchanged, nothing in flight), at most
    limit_s. None when the disk's counters cannot be read (nothing to wait for)."""
    first = read_stat(device, sys_root)
    if first is None or "in_flight" not in first:
        return None
    start = clock()
    previous, quiet_since = first, (start if first["in_flight"] == 0 else None)
    while True:
        now = clock()
        if quiet_since is not None and now - quiet_since >= quiet_s:
            idle = True
            break
        if now - start >= limit_s:
            idle = False
            break
        sleep(poll_s)
        current = read_stat(device, sys_root)
        if current is None:
            return None
        moved = any(current[field] != previous[field] for field in _ACTIVITY_FIELDS)
        if moved or current["in_flight"]:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = clock()
        previous = current
    requests = (previous["reads"] - first["reads"]) + (previous["writes"] - first["writes"])
    return Settle(idle, round(clock() - start, 3), max(0, requests))


def drop_caches(path: str = DROP_CACHES) -> None:
    """sync, then drop the page cache, dentries and inodes (needs root). OSError when not possible."""
    os.sync()
    with open(path, "w") as handle:
        handle.write("3\n")
