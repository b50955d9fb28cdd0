# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel log: ``dmesg`` lines naming a disk, and ``journalctl -k -o json`` turned into dmesg lines."""

from __future__ import annotations

import json
import re
from typing import Any, List, Mapping, Tuple


def _disk_pattern(disk: str) -> "re.Pattern[str]":
    # Partitions: sda1 (name ends in a letter), nvme0n1p1 / loop3p1 (ends in a digit). NVMe
    # controller messages say nvme0 without the namespace.
    suffix = r"(?:p[0-9]+)?" if disk[-1].isdigit() else r"[0-9]*"
    names = [re.escape(disk) + suffix]
    controller = re.match(r"^(nvme[0-9]+)n[0-9]+$", disk)
    if controller:
        names.append(re.escape(controller.group(1)))
    return re.compile(r"(?<![A-Za-z0-9_])(?:%s)(?![A-Za-z0-9_])" % "|".join(names))


# The boot command line names the root disk and may carry secrets (an iSCSI CHAP password, a LUKS key file): it is no
# line about the disk's behaviour, and never goes into a bundle.
_COMMAND_LINE = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?(?:Kernel )?[Cc]ommand line:")


def dmesg_lines(text: str, disk: str) -> List[str]:
    """The kernel log lines that name the disk, its partitions or (NVMe) its controller, but the kernel's command
    line (the one rule for dmesg and for the journal's kernel messages, which journal_kernel_text turns into dmesg
    lines)."""
    pattern = _disk_pattern(disk)
    return [line for line in text.splitlines() if pattern.search(line) and not _COMMAND_LINE.match(line)]


def _journal_field(value: Any) -> str:
    # journalctl -o json: a string, an array of byte values when not valid UTF-8, null when too large without --all.
    if isinstance(value, list) and all(isinstance(item, int) and 0 <= item < 256 for item in value):
        return bytes(value).decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _journal_usec(entry: Mapping[str, Any]) -> int:
    # The kernel's own time of the message; journald's reception time when the kernel gave none.
    for key in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        value = entry.get(key)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return 0


def journal_kernel_text(text: str) -> Tuple[str, int]:
    """``journalctl -k -o json`` output as dmesg prints it (``[seconds.micros] message`` per line), and the number
    of messages. A line that is not a JSON object (an empty answer, a notice, JSON nested too deep to decode) is no
    message."""
    lines: List[str] = []
    count = 0
    for raw in text.splitlines():
        if not raw.lstrip().startswith("{"):
            continue  # no JSON object; skipped before json.loads, whose error costs more than the line
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        count += 1
        seconds, micros = divmod(_journal_usec(entry), 1000000)
        stamp = "[%5d.%06d] " % (seconds, micros)
        lines.extend(stamp + part for part in (_journal_field(entry.get("MESSAGE")).splitlines() or [""]))
    return "".join(line + "\n" for line in lines), count
