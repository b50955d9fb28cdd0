# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values of /sys files that need reading, not just stripping: the active I/O scheduler, PCIe link speed and
width, a whole number (nr_requests, queue_depth, start), a 0/1 flag (rotational), the write cache mode, a
libata link speed, a model or firmware string, a SCSI unit serial (VPD page 0x80), a loop device's backing file.
Block I/O counters: diskstats.py."""

from __future__ import annotations

import re
from typing import Optional, Tuple

_DELETED = " (deleted)"


def parse_scheduler(text: Optional[str]) -> Optional[str]:
    """The active I/O scheduler of /sys/block/<dev>/queue/scheduler ('none [mq-deadline] kyber' -> 'mq-deadline')."""
    if text is None:
        return None
    match = re.search(r"\[([^\[\]]+)\]", text)  # not "[^\]]": each "[" would scan to the end (quadratic)
    if match:
        return match.group(1)
    words = text.split()
    return words[0] if len(words) == 1 else None


def link_speed_gts(value: Optional[str]) -> Optional[float]:
    """GT/s of a PCIe current_link_speed / max_link_speed ('8.0 GT/s PCIe' -> 8.0); None when unknown."""
    found = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", value or "")
    return float(found.group(1)) if found else None


def link_width(value: Optional[str]) -> Optional[int]:
    """Lanes of a PCIe current_link_width / max_link_width ('4' -> 4); None when unknown or 0 (link down)."""
    text = (value or "").strip()
    # 1 to 20 ASCII digits: int() refuses more than 4300 digits and str.isdigit() takes any script's digits
    return int(text) if re.match(r"^[0-9]{1,20}$", text) and int(text) > 0 else None


def whole_number(value: Optional[str]) -> Optional[int]:
    """A sysfs file holding one non-negative whole number ('256\\n' -> 256); None when missing or anything else
    (1 to 20 ASCII digits, as link_width)."""
    text = (value or "").strip()
    return int(text) if re.match(r"^[0-9]{1,20}$", text) else None


def signed_number(value: Optional[str]) -> Optional[int]:
    """A sysfs file holding one whole number that may be negative (alignment_offset is -1 when the kernel cannot
    align the device)."""
    text = (value or "").strip()
    return int(text) if re.match(r"^-?[0-9]{1,20}$", text) else None


def flag(value: Optional[str]) -> Optional[bool]:
    """A sysfs 0/1 file (queue/rotational): True, False; None when missing or anything else."""
    text = (value or "").strip()
    return {"0": False, "1": True}.get(text)


def write_cache_mode(value: Optional[str]) -> Optional[str]:
    """queue/write_cache: 'write back' (the disk has a volatile cache the kernel flushes) or 'write through'."""
    text = " ".join((value or "").split())
    return text if text in ("write back", "write through") else None


def sata_link_gbps(value: Optional[str]) -> Optional[float]:
    """Gb/s of a libata link's sata_spd / hw_sata_spd_limit ('3.0 Gbps' -> 3.0); None for '<unknown>' (no link,
    or no limit set) and anything else."""
    found = re.match(r"^\s*([0-9]{1,3}(?:\.[0-9]{1,3})?)\s*Gb(?:ps|/s)\s*$", value or "")
    return float(found.group(1)) if found else None


def text_attribute(value: Optional[str]) -> Optional[str]:
    """A model, firmware_rev or rev file: its text without the padding the device gave it; None when empty."""
    text = (value or "").strip(" \t\r\n\x00")
    return text or None


def vpd_unit_serial(data: bytes) -> Optional[str]:
    """The unit serial of a SCSI VPD page 0x80 (4 header bytes, then the serial, space padded)."""
    text = data[4:].decode("ascii", "replace").strip(" \x00")
    return text or None


def loop_backing_file(text: str) -> Tuple[str, bool]:
    """(path, deleted) of /sys/block/loopN/loop/backing_file: the kernel appends ' (deleted)' to a removed file."""
    deleted = text.endswith(_DELETED)
    return (text[:-len(_DELETED)] if deleted else text), deleted
