# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk's state, read before and after a job (issue 34): what can make a result low without the disk being
slow - the queue settings (scheduler, nr_requests, queue_depth, read-ahead, block sizes), the write cache mode,
the partition's alignment, the PCIe link against what both ends can do (_pcie.py), the SATA link (libata, else
smartctl), the NVMe power state and APST, and the health counters (_health.py).

Everything is read under a root prefix (``sys_root``, "/" on a host): a captured /sys tree replays in tests.
Symlinks are followed inside the root only (an absolute target, or a ``..`` past it, stays under it), as a
chroot would. A missing source is None plus a short reason in ``unknown``, never an error.

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._health import health_counters
from ._parse.errors import ParseError
from ._parse.nvme_feature import FEATURE_APST, FEATURE_POWER_MANAGEMENT, apst_enabled, feature_value, power_state
from ._parse.sysfs import (flag, parse_scheduler, sata_link_gbps, signed_number, text_attribute, whole_number,
                           write_cache_mode)
from ._pcie import pcie_state

SECTOR_BYTES = 512          # /sys/block/<disk>/<partition>/start counts 512-byte sectors whatever the block size
READ_LIMIT = 65536          # a sysfs attribute is at most a page
SYMLINK_LIMIT = 40          # as the kernel's ELOOP
# argv -> (exit code or None when it did not run or was stopped, stdout, stderr)
Runner = Callable[[Sequence[str]], Tuple[Optional[int], str, str]]
# disk -> (smartctl summary or None, nvme smart-log summary or None): _health.probe_health's answer
HealthReader = Callable[[str], Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]]

QUEUE_READERS = (("scheduler", parse_scheduler), ("nr_requests", whole_number), ("read_ahead_kb", whole_number),
                 ("max_sectors_kb", whole_number), ("logical_block_size", whole_number),
                 ("physical_block_size", whole_number), ("rotational", flag), ("write_cache", write_cache_mode))
_ATA_PORT = re.compile(r"^ata([0-9]{1,4})$")


class SysTree:
    """Paths of a /sys tree under a root prefix, symlinks resolved inside it (never out of it)."""

    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)

    def host_path(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def resolve(self, path: str) -> Optional[str]:
        """The path (absolute, as seen inside the root) with every symlink resolved; None when a part is missing or
        the links loop."""
        pending = [part for part in path.split("/") if part]
        resolved: List[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == ".":
                continue
            if part == "..":
                if resolved:        # '..' at the root stays at the root
                    resolved.pop()
                continue
            here = self.host_path("/".join(resolved + [part]))
            try:
                target = os.readlink(here)
            except OSError:
                if not os.path.lexists(here):
                    return None
                resolved.append(part)
                continue
            hops += 1
            if hops > SYMLINK_LIMIT:
                return None
            if target.startswith("/"):
                resolved = []       # an absolute target means the root's /, not the host's
            pending = [piece for piece in target.split("/") if piece] + pending
        return "/" + "/".join(resolved)

    def read(self, path: str) -> Optional[str]:
        """The text of a file inside the root (links resolved inside it); None when missing or unreadable."""
        resolved = self.resolve(path)
        if resolved is None:
            return None
        try:
            with open(self.host_path(resolved), "rb") as handle:
                return handle.read(READ_LIMIT).decode("utf-8", "replace")
        except OSError:
            return None


def _empty_state(disk: Optional[str]) -> Dict[str, Any]:
    state: Dict[str, Any] = {"disk": disk, "model": None, "firmware": None, "rotational": None, "scheduler": None,
                             "nr_requests": None, "queue_depth": None, "read_ahead_kb": None, "max_sectors_kb": None,
                             "logical_block_size": None, "physical_block_size": None, "write_cache": None,
                             "partition": None, "pcie": None, "sata": None, "nvme_power": None,
                             "health": health_counters(None, None), "unknown": []}
    return state


def _gbps(value: Optional[float]) -> str:
    return "?" if value is None else "%.1f" % value


Reading = Tuple[Optional[Dict[str, Any]], Optional[str]]   # (a part of the state or None, why it is None)


def sata_link(tree: SysTree, device: str, smart: Optional[Dict[str, Any]]) -> Reading:
    """(the sata dict or None, why it is None) of a resolved device path: libata's link (the ataN port in the
    path -> /sys/class/ata_link/linkN: sata_spd against hw_sata_spd_limit), each side smartctl's interface_speed
    where libata does not say (hw_sata_spd_limit is '<unknown>' unless something limited the link)."""
    port = next((found.group(1) for found in map(_ATA_PORT.match, reversed(device.split("/"))) if found), None)
    speed = (smart or {}).get("interface_speed") if isinstance((smart or {}).get("interface_speed"), dict) else {}
    current, maximum = None, None
    if port is not None:
        link = "/sys/class/ata_link/link%s" % port
        current = sata_link_gbps(tree.read(link + "/sata_spd"))
        maximum = sata_link_gbps(tree.read(link + "/hw_sata_spd_limit"))
    current = current if current is not None else speed.get("current_gbps")
    maximum = maximum if maximum is not None else speed.get("max_gbps")
    if current is None and maximum is None:
        if port is None and not speed:
            return None, None       # not a SATA disk
        return None, "sata: link speed unknown (libata port ata%s, no smartctl interface speed)" % port
    return {"speed_gbps": current, "max_gbps": maximum, "degraded": sata_degraded(current, maximum),
            "text": sata_text(current, maximum)}, None


def sata_degraded(current: Optional[float], maximum: Optional[float]) -> Optional[bool]:
    """The SATA link trained below what it can do; None when either side is unknown."""
    return current < maximum if current is not None and maximum is not None else None


def sata_text(current: Optional[float], maximum: Optional[float]) -> str:
    """'SATA link 3.0 Gb/s, capable 6.0 Gb/s'."""
    return "SATA link %s Gb/s, capable %s Gb/s" % (_gbps(current), _gbps(maximum))


def nvme_power(disk: str, run: Optional[Runner], replayed: bool) -> Reading:
    """({power_state, apst} or None, why it is None) from ``nvme get-feature /dev/<disk> -f 2`` and ``-f 0x0c -H``."""
    if replayed:
        return None, "nvme_power: not asked (a replayed sysfs tree has no device to ask)"
    if run is None:
        return None, "nvme_power: not asked (no command runner)"
    node = "/dev/" + disk
    values: Dict[int, Optional[int]] = {FEATURE_POWER_MANAGEMENT: None, FEATURE_APST: None}
    problems = []
    for feature, extra in ((FEATURE_POWER_MANAGEMENT, []), (FEATURE_APST, ["-H"])):
        rc, out, err = run(["nvme", "get-feature", node, "-f", "0x%02x" % feature] + extra)
        if rc is None:      # not installed, or stopped at its time limit: asking again would fare no better
            problems.append((err.strip() or "nvme get-feature gave no answer").splitlines()[0])
            break
        if rc != 0:
            words = (err.strip() or out.strip() or "no output").splitlines()[0]
            problems.append("get-feature 0x%02x: exit code %s: %s" % (feature, rc, words))
            continue
        try:
            values[feature] = feature_value(out, feature)
        except ParseError as error:
            problems.append(str(error))
    answer = {"power_state": power_state(values[FEATURE_POWER_MANAGEMENT]), "apst": apst_enabled(values[FEATURE_APST])}
    if answer["power_state"] is None and answer["apst"] is None:
        return None, "nvme_power: %s" % "; ".join(problems)
    return answer, ("nvme_power: %s" % "; ".join(problems)) if problems else None


def partition_state(tree: SysTree, block: str, partition: str, physical_block_size: Optional[int]) -> Reading:
    """({name, start_bytes, alignment_offset, aligned} or None, why) of a partition of the disk at ``block``.
    aligned: the kernel's alignment_offset of the partition is 0 (it counts the disk's own offset and io_min),
    else its start is a multiple of the physical block size."""
    base = posixpath.join(block, partition)
    start = whole_number(tree.read(base + "/start"))
    if start is None:
        return None, "partition: %s has no start in %s" % (partition, block)
    offset = signed_number(tree.read(base + "/alignment_offset"))
    start_bytes = start * SECTOR_BYTES
    if offset is not None and offset >= 0:
        aligned: Optional[bool] = offset == 0
    else:
        aligned = start_bytes % physical_block_size == 0 if physical_block_size else None
    return {"name": partition, "start_bytes": start_bytes, "alignment_offset": offset, "aligned": aligned}, None


def partition_of(number: Tuple[int, int], sys_root: str = "/") -> Optional[str]:
    """The kernel name of the partition MAJ:MIN is (/sys/dev/block/MAJ:MIN has a partition file), None when it is a
    whole disk or no block device (tmpfs, overlay)."""
    tree = SysTree(sys_root)
    node = tree.resolve("/sys/dev/block/%d:%d" % number)
    if node is None or tree.read(node + "/partition") is None:
        return None
    return posixpath.basename(node)


def read_disk_state(disk: Optional[str], sys_root: str = "/", partition: Optional[str] = None,
                    read_health: Optional[HealthReader] = None, run: Optional[Runner] = None) -> Dict[str, Any]:
    """The state of the whole disk ``disk`` (a kernel name: nvme0n1, sda, vda), read under ``sys_root``; the
    partition holding the target when ``partition`` names one. ``read_health`` and ``run`` are the host's
    (None: not read). Never raises for a missing source: it is None, and ``unknown`` says why."""
    state = _empty_state(disk)
    unknown: List[str] = state["unknown"]
    if not disk or "/" in disk or disk in (".", ".."):
        unknown.append("disk: no whole disk known for the target")
        return state
    tree = SysTree(sys_root)
    block = tree.resolve("/sys/block/" + disk)
    if block is None:
        unknown.append("disk: no /sys/block/%s under %s" % (disk, sys_root))
        return state
    missing = []
    for name, reader in QUEUE_READERS:
        state[name] = reader(tree.read(block + "/queue/" + name))
        if state[name] is None:
            missing.append(name)
    if missing:
        unknown.append("queue: %s not readable in /sys/block/%s/queue" % (", ".join(missing), disk))
    smart, nvme_log = read_health(disk) if read_health is not None else (None, None)
    state["health"] = health_counters(smart, nvme_log)
    if read_health is None:
        unknown.append("health: not read")
    elif state["health"]["health"] == "unavailable" and all(
            value is None for key, value in state["health"].items() if key != "health"):
        messages = (smart or {}).get("messages") or (nvme_log or {}).get("messages") or ["smartctl not installed"]
        unknown.append("health: no SMART or NVMe health data (%s)" % messages[0])
    device = tree.resolve(block + "/device")
    if device is None:
        unknown.append("device: %s has no device link (a virtual block device: loop, ram, zram, dm, md): no model, "
                       "firmware, queue_depth or link" % disk)
    else:
        read_device_files(tree, disk, device, smart, state)
    if disk.startswith("nvme"):
        state["nvme_power"], why = nvme_power(disk, run, os.path.abspath(sys_root) != "/")
        if why:
            unknown.append(why)
    if partition is not None:
        state["partition"], why = partition_state(tree, block, partition, state["physical_block_size"])
        if why:
            unknown.append(why)
    return state


def read_device_files(tree: SysTree, disk: str, device: str, smart: Optional[Dict[str, Any]],
                      state: Dict[str, Any]) -> None:
    """What the disk's device directory and the buses above it say: model, firmware, queue_depth, PCIe, SATA."""
    unknown: List[str] = state["unknown"]
    name = posixpath.basename(device)
    # NVMe controllers name it firmware_rev, SCSI devices rev; smartctl's identity where sysfs has neither
    state["model"] = text_attribute(tree.read(device + "/model")) or (smart or {}).get("model")
    state["firmware"] = (text_attribute(tree.read(device + "/firmware_rev")) or text_attribute(tree.read(device + "/rev"))
                         or (smart or {}).get("firmware"))
    if state["model"] is None or state["firmware"] is None:
        unknown.append("identity: %s's device %s has no %s in sysfs and smartctl gave none" % (
            disk, name, " or ".join(key for key in ("model", "firmware") if state[key] is None)))
    state["queue_depth"] = whole_number(tree.read(device + "/queue_depth"))
    if state["queue_depth"] is None:
        unknown.append("queue_depth: %s's device %s has none (a SCSI device's; NVMe and virtio queue in "
                       "nr_requests)" % (disk, name))
    pcie = pcie_state(device, tree.read)
    state["pcie"] = pcie["link"]
    if pcie["reason"]:
        unknown.append("pcie: %s's %s" % (disk, pcie["reason"]) if pcie["reason"].startswith("PCI")
                       else "pcie: %s: %s" % (disk, pcie["reason"]))
    state["sata"], why = sata_link(tree, device, smart)
    if why:
        unknown.append(why)


def changes(before: Optional[Dict[str, Any]], after: Dict[str, Any]) -> Dict[str, Any]:
    """record.disk_state.after: what of the reading after the run differs from the one before it - each changed
    value, and of health only its changed counters ({} when nothing changed; the whole reading when there was
    none before). A fleet's records carry the state twice otherwise: 2.4 of a dd record's 4.0 KB."""
    if not before:
        return after
    changed = {key: value for key, value in after.items() if key != "health" and before.get(key) != value}
    health_before, health_after = before.get("health") or {}, after.get("health") or {}
    health = {key: value for key, value in health_after.items() if health_before.get(key) != value}
    if health:
        changed["health"] = health
    return changed


def state_after(disk_state: Dict[str, Any]) -> Dict[str, Any]:
    """The whole reading after the run, from record.disk_state (``before`` and ``after``'s changes); {} when there
    was no reading after it."""
    before, after = disk_state.get("before") or {}, disk_state.get("after")
    if not isinstance(after, dict):
        return {}
    whole = dict(before)
    whole.update({key: value for key, value in after.items() if key != "health"})
    if isinstance(after.get("health"), dict):
        whole["health"] = dict(before.get("health") or {}, **after["health"])
    return whole
