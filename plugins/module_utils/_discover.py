# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Disk discovery, pure Python (no Ansible imports): resolve and classify what the parsers read.

What the module disk_facts reads or runs is parsed by module_utils/_parse (lsblk, mountinfo, swaps, fstab,
wipefs, blkid, smartctl, nvme, meminfo, os_release, sysfs, tool_version) and lands here as data:

    topology = Topology(parse_lsblk(lsblk_json_text))   # holders/slaves graph: disk -> part -> dm/md -> ...
    host = HostView(topology, parse_mountinfo(mountinfo_text), parse_swaps(swaps_text),
                    parse_fstab(fstab_text), block_dev)
    topology.physical_disks("dm-2")                # ['sda', 'sdb']: through partitions, LVM/dm and md
    host.boot_disks                                # {'vda': ['/']}: disks holding /, /boot, /boot/efi, /efi
    host.swap_disks                                # {'sdb': ['/dev/sdb2']}: disks holding active swap
    usage = host.disk_usage("loop5", probes, sysfs_holders)
    raw_write_refusals(...)                        # EVERY reason a disk may not be written, not the first

block_dev is the only I/O seam: a callable the module passes in that returns the "MAJ:MIN" of a block
device node (its st_rdev), None when the path is no block device or does not exist. Tests pass a dict
lookup.

Importable on Python 3.8+ (module side of ansible-core 2.19).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from . import _filesystems
from ._identity import normalize_wwn
from ._parse.fstab import fstab_spec
from ._parse.sysfs import parse_scheduler
from ._parse.values import text_value

# Mount points whose disk is the boot disk: never selected, never granted raw_write.
BOOT_MOUNT_POINTS = ("/", "/boot", "/boot/efi", "/efi")

# Refusal codes, in the order they are reported.
REFUSAL_CODES = (
    "not_found",
    "not_directory",
    "not_a_disk",
    "not_block_device",
    "not_destructive",
    "not_allow_listed",
    "not_whole_disk",
    "boot_disk",
    "boot_disk_unknown",
    "mounted",
    "swap",
    "fstab",
    "partitioned",
    "holders",
    "busy",
    "signature",
    "probe_failed",
    "read_only",
)

PARTITION_TABLE_TYPES = {
    "dos", "gpt", "pmbr", "atari", "bsd", "mac", "sgi", "sun", "ultrix", "solaris_x86", "minix", "unixware", "aix",
}
LVM_TYPES = {"lvm1_member", "lvm2_member"}
SWAP_TYPES = {"swap", "swsuspend"}
CRYPTO_TYPES = {"crypto_luks", "bitlocker", "truecrypt", "veracrypt"}
VOLUME_MEMBER_TYPES = {"zfs_member", "bcache", "drbd", "ceph_bluestore", "vmfs_volume_member", "btrfs"}


def _unique(items: Iterable[Any]) -> List[Any]:
    seen = []  # type: List[Any]
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


# ---------------------------------------------------------------------------------------------------
# The lsblk tree as a graph
# ---------------------------------------------------------------------------------------------------


class Topology:
    """The block-device graph of an lsblk tree.

    lsblk prints a device once under each of its parents (an md array under both member partitions,
    a multipath map under every path), so a node may have several parents. Physical disks are the
    nodes without parents (disks, loop devices, ...).
    """

    def __init__(self, tree: Sequence[Dict[str, Any]]) -> None:
        self.nodes = {}  # type: Dict[str, Dict[str, Any]]
        self.parents = {}  # type: Dict[str, List[str]]
        self.children = {}  # type: Dict[str, List[str]]
        self._order = []  # type: List[str]
        for node in tree:
            self._add(node, None)
        self.by_maj_min = {node["maj_min"]: kname for kname, node in self.nodes.items()}

    def _add(self, node: Dict[str, Any], parent: Optional[str]) -> None:
        kname = node["kname"]
        if kname not in self.nodes:
            self.nodes[kname] = {key: value for key, value in node.items() if key != "children"}
            self.parents[kname] = []
            self.children[kname] = []
            self._order.append(kname)
        else:
            known = self.nodes[kname]["mountpoints"]
            known.extend(point for point in node["mountpoints"] if point not in known)
        if parent is not None:
            if parent not in self.parents[kname]:
                self.parents[kname].append(parent)
            if kname not in self.children[parent]:
                self.children[parent].append(kname)
        for child in node["children"]:
            self._add(child, kname)

    @property
    def roots(self) -> List[str]:
        """Physical disks (nodes without parents), in lsblk order."""
        return [kname for kname in self._order if not self.parents[kname]]

    def is_root(self, kname: str) -> bool:
        return kname in self.nodes and not self.parents[kname]

    def descendants(self, kname: str) -> List[str]:
        """Every device built on kname (partitions, dm, md, ...), breadth first, without kname."""
        found = []  # type: List[str]
        queue = list(self.children.get(kname, []))
        while queue:
            current = queue.pop(0)
            if current in found or current == kname:
                continue
            found.append(current)
            queue.extend(self.children.get(current, []))
        return found

    def subtree(self, kname: str) -> List[str]:
        return [kname] + self.descendants(kname)

    def physical_disks(self, kname: str) -> List[str]:
        """The physical disks under kname, through partitions, LVM/dm, md and multipath; [kname] for a disk."""
        if kname not in self.nodes:
            return []
        found = set()  # type: Set[str]
        seen = set()  # type: Set[str]
        queue = [kname]
        while queue:
            current = queue.pop()
            if current in seen:
                continue
            seen.add(current)
            parents = self.parents.get(current, [])
            if not parents:
                found.add(current)
            queue.extend(parents)
        return [root for root in self.roots if root in found]

    def kname_for(self, maj_min: Optional[str]) -> Optional[str]:
        return self.by_maj_min.get(maj_min) if maj_min else None


# ---------------------------------------------------------------------------------------------------
# Signatures (wipefs, blkid) by kind
# ---------------------------------------------------------------------------------------------------


def signature_kind(signature_type: str) -> str:
    """partition_table, raid, lvm, swap, crypto, volume_member or filesystem (blkid's other types)."""
    lowered = signature_type.lower()
    if lowered in PARTITION_TABLE_TYPES:
        return "partition_table"
    if lowered.endswith("_raid_member"):
        return "raid"
    if lowered in LVM_TYPES:
        return "lvm"
    if lowered in SWAP_TYPES:
        return "swap"
    if lowered in CRYPTO_TYPES:
        return "crypto"
    if lowered in VOLUME_MEMBER_TYPES:
        return "volume_member"
    return "filesystem"


# ---------------------------------------------------------------------------------------------------
# Host: service manager, transport
# ---------------------------------------------------------------------------------------------------


def service_manager(pid1_comm: Optional[str], run_systemd_system: bool, openrc_present: bool,
                    initd_present: bool) -> str:
    """systemd, openrc, runit, s6, upstart, sysvinit or unknown, from PID 1 and the markers left by each.

    /run/systemd/system exists only when systemd is PID 1 (sd_booted()); a PID 1 that is none of the
    known managers (a container's init, a sandbox supervisor) with /etc/init.d present means services
    are run through SysV scripts (what ansible.builtin.service falls back to).
    """
    comm = (pid1_comm or "").strip()
    if run_systemd_system or comm == "systemd":
        return "systemd"
    if comm.startswith("runit"):
        return "runit"
    if comm.startswith("s6-svscan"):
        return "s6"
    if comm == "init" and openrc_present:
        return "openrc"
    if comm == "upstart":
        return "upstart"
    if comm == "init" or initd_present:
        return "sysvinit"
    return "unknown"


def transport(node: Dict[str, Any]) -> Optional[str]:
    """nvme, sata, sas, usb, iscsi, fc, virtio, loop, memory, xen, mmc, ... for a physical disk."""
    tran = node.get("tran")
    if tran:
        return tran.lower()
    kname = node.get("kname") or ""
    subsystems = (node.get("subsystems") or "").split(":")
    if node.get("type") == "loop" or kname.startswith("loop"):
        return "loop"
    if kname.startswith("nvme") or "nvme" in subsystems:
        return "nvme"
    if "virtio" in subsystems or re.match(r"^vd[a-z]+$", kname):
        return "virtio"
    if kname.startswith(("zram", "ram")):
        return "memory"
    if kname.startswith("xvd") or "xen" in subsystems:
        return "xen"
    if kname.startswith("mmcblk") or "mmc" in subsystems:
        return "mmc"
    if "scsi" in subsystems:
        return "scsi"
    return None


# ---------------------------------------------------------------------------------------------------
# The host's view: mounts, swap, fstab and the boot disk tied to devices
# ---------------------------------------------------------------------------------------------------

BlockDev = Callable[[str], Optional[str]]


class HostView:
    """lsblk topology + mounts + swap + fstab: which device each mount, swap area and fstab line uses.

    block_dev(path) returns "MAJ:MIN" of a block device node (st_rdev); None when path is no block
    device (a regular file, tmpfs, a missing /dev/mapper name).
    """

    def __init__(self, topology: Topology, mounts: Sequence[Dict[str, str]], swaps: Sequence[Dict[str, Any]],
                 fstab: Sequence[Dict[str, str]], block_dev: BlockDev) -> None:
        self.topology = topology
        self.mounts = list(mounts)
        self.swaps = list(swaps)
        self.fstab = list(fstab)
        self._block_dev = block_dev
        self.mount_points: Dict[str, List[str]] = {}  # kname -> mount points on that node
        for mount in self.mounts:
            kname = self.node_for_mount(mount)
            if kname is not None:
                points = self.mount_points.setdefault(kname, [])
                if mount["mount_point"] not in points:
                    points.append(mount["mount_point"])
        self.swap_areas: Dict[str, List[str]] = {}  # kname -> swap filenames on that node
        self.unresolved_swaps = []  # type: List[str]
        for swap in self.swaps:
            if swap["type"] == "file":
                kname = self.node_for_file(swap["filename"])
            else:
                kname = self.topology.kname_for(self._block_dev(swap["filename"]))
            if kname is None:
                self.unresolved_swaps.append(swap["filename"])
            else:
                self.swap_areas.setdefault(kname, []).append(swap["filename"])
        self.boot_disks: Dict[str, List[str]] = {}  # physical disk -> boot mount points on it
        self.boot_unknown: List[str] = []  # boot mounts / swap whose disk is unknown
        for point in BOOT_MOUNT_POINTS:
            mount = next((m for m in reversed(self.mounts) if m["mount_point"] == point), None)
            if mount is None:
                continue
            kname = self.node_for_mount(mount)
            if kname is None:
                self.boot_unknown.append("%s (%s %s)" % (point, mount["fstype"], mount["source"]))
                continue
            for disk in self.topology.physical_disks(kname):
                self.boot_disks.setdefault(disk, []).append(point)
        self.swap_disks: Dict[str, List[str]] = {}  # physical disk -> active swap areas on it
        for kname, filenames in self.swap_areas.items():
            for disk in self.topology.physical_disks(kname):
                self.swap_disks.setdefault(disk, []).extend(filenames)
        self.boot_unknown.extend("swap %s" % name for name in self.unresolved_swaps)

    def node_for_mount(self, mount: Dict[str, str]) -> Optional[str]:
        """The device of a mount: its MAJ:MIN, else (btrfs and other anonymous st_dev) its source device."""
        kname = self.topology.kname_for(mount["maj_min"])
        if kname is None and mount["source"].startswith("/"):
            kname = self.topology.kname_for(self._block_dev(mount["source"]))
        return kname

    def node_for_file(self, path: str, maj_min: Optional[str] = None) -> Optional[str]:
        """The block device holding a file or directory: by its st_dev (maj_min) when that is a block
        device, else through the mount holding the path (path absolute and resolved)."""
        kname = self.topology.kname_for(maj_min)
        if kname is not None:
            return kname
        mount = _filesystems.mount_for_path(self.mounts, path)
        return self.node_for_mount(mount) if mount is not None else None

    def fstab_entries_for(self, knames: Sequence[str], ids: Dict[str, Dict[str, Optional[str]]]) -> List[str]:
        """fstab lines using any of knames, by device path or by UUID/LABEL/PARTUUID/PARTLABEL.

        ids: kname -> {uuid, label, partuuid, partlabel}, from lsblk and probing."""
        found = []
        wanted = set(knames)
        for entry in self.fstab:
            kind, value = fstab_spec(entry["spec"])
            hit = False
            if kind == "path":
                hit = self.topology.kname_for(self._block_dev(value)) in wanted
            elif kind != "other":
                hit = any(value and (ids.get(kname) or {}).get(kind) == value for kname in knames)
            if hit:
                found.append("%s %s %s" % (entry["spec"], entry["file"], entry["vfstype"]))
        return found

    def disk_usage(self, disk: str, probes: Dict[str, Dict[str, Any]],
                   sysfs_holders: Optional[Dict[str, List[str]]] = None,
                   exclusive_open: Optional[str] = None) -> Dict[str, Any]:
        """Everything that uses a physical disk or anything built on it.

        probes: kname -> {signatures: [..], ids: {uuid, label, partuuid, partlabel}, error: str|None}
        (wipefs on the disk, blkid on what is built on it). sysfs_holders: kname -> names listed in
        /sys/class/block/<kname>/holders (dm and md users the lsblk tree may not show).
        exclusive_open: "ok" when the kernel granted a read-only O_EXCL open of the disk, the error
        otherwise (EBUSY: mounted - in any mount namespace -, swap, held by dm/md), None when not tried."""
        topology = self.topology
        subtree = topology.subtree(disk)
        mount_points = []
        for kname in subtree:
            points = list(self.mount_points.get(kname, []))
            points.extend(point for point in topology.nodes[kname]["mountpoints"] if point.startswith("/"))
            mount_points.extend("%s (%s)" % (point, kname) for point in _unique(points))
        partitions = [kname for kname in topology.children.get(disk, []) if topology.nodes[kname]["type"] == "part"]
        holders = [kname for kname in topology.descendants(disk) if topology.nodes[kname]["type"] != "part"]
        for kname in subtree:
            holders.extend(name for name in (sysfs_holders or {}).get(kname, []) if name not in holders)
        signatures = []
        ids = {}  # type: Dict[str, Dict[str, Optional[str]]]
        errors = []
        for kname in subtree:
            node = topology.nodes[kname]
            probe = probes.get(kname) or {}
            ids[kname] = {key: node.get(key) for key in ("uuid", "label", "partuuid", "partlabel")}
            for key, value in (probe.get("ids") or {}).items():
                if value:
                    ids[kname][key] = value
            for signature in probe.get("signatures") or []:
                signatures.append(dict(signature, device=kname, kind=signature_kind(signature["type"])))
            for key in ("fstype", "pttype"):
                value = node.get(key)
                if value and not any(s["device"] == kname and s["type"].lower() == value.lower() for s in signatures):
                    signatures.append({"device": kname, "offset": None, "type": value, "uuid": node.get("uuid"),
                                       "label": node.get("label"), "kind": signature_kind(value)})
            if probe.get("error"):
                errors.append("%s: %s" % (kname, probe["error"]))
            elif kname not in probes:
                errors.append("%s: not probed" % kname)
        swap = []
        for kname in subtree:
            swap.extend("%s (%s)" % (name, kname) for name in self.swap_areas.get(kname, []))
        return {
            "mount_points": _unique(mount_points),
            "partitions": partitions,
            "holders": holders,
            "signatures": signatures,
            "probe_errors": errors,
            "swap": swap,
            "fstab": self.fstab_entries_for(subtree, ids),
            "boot": list(self.boot_disks.get(disk, [])),
            "exclusive_open": exclusive_open,
        }


def disk_record(node: Dict[str, Any], sysfs: Dict[str, Optional[str]], smart: Optional[Dict[str, Any]],
                nvme: Optional[Dict[str, Any]], usage: Dict[str, Any]) -> Dict[str, Any]:
    """One physical disk as returned in diskproof_disks, from lsblk, sysfs, smartctl and nvme-cli.

    Identity comes from lsblk first (udev or sysfs), then smartctl, then sysfs files, so the serial
    and WWN shown are the ones the destructive allow-list is matched against. sysfs keys used:
    scheduler, write_cache, rotational, read_only, removable, loop_backing_file, serial, wwid, model,
    vendor, firmware_rev, rev (raw text of the files, None when absent).
    """
    smart_info = smart or {}
    nvme_info = nvme or {}

    def first(*values: Any) -> Any:
        return next((value for value in values if value is not None), None)

    def flag(text: Optional[str]) -> Optional[bool]:
        return None if text is None or text.strip() not in ("0", "1") else text.strip() == "1"

    if smart_info.get("available"):
        health = smart_info.get("health")
    elif nvme_info.get("available"):
        health = "passed" if nvme_info.get("passed") else ("failed" if nvme_info.get("passed") is False else "unknown")
    elif smart is None and nvme is None:
        health = "not_checked"
    else:
        health = "unavailable"
    return {
        "name": node["kname"],
        "path": node["path"],
        "maj_min": node["maj_min"],
        "type": node["type"],
        "transport": transport(node),
        "model": first(node.get("model"), smart_info.get("model"), text_value(sysfs.get("model"))),
        "vendor": first(node.get("vendor"), smart_info.get("vendor"), text_value(sysfs.get("vendor"))),
        "serial": first(node.get("serial"), smart_info.get("serial"), text_value(sysfs.get("serial"))),
        "wwn": first(node.get("wwn"), smart_info.get("wwn"), text_value(sysfs.get("wwid"))),
        "firmware": first(smart_info.get("firmware"), node.get("rev"), text_value(sysfs.get("firmware_rev")),
                          text_value(sysfs.get("rev"))),
        "size_bytes": first(node.get("size_bytes"), smart_info.get("capacity_bytes")),
        "rotational": first(node.get("rotational"), flag(sysfs.get("rotational"))),
        "removable": first(node.get("removable"), flag(sysfs.get("removable"))),
        "read_only": first(node.get("read_only"), flag(sysfs.get("read_only"))),
        "logical_block_size": first(node.get("logical_block_size"), smart_info.get("logical_block_size")),
        "physical_block_size": first(node.get("physical_block_size"), smart_info.get("physical_block_size")),
        "scheduler": first(parse_scheduler(sysfs.get("scheduler")), node.get("scheduler")),
        "write_cache": text_value(sysfs.get("write_cache")),
        "write_cache_enabled": smart_info.get("write_cache_enabled"),
        "loop_backing_file": text_value(sysfs.get("loop_backing_file")),
        "usage": usage,
        "health": health,
        "smart": smart,
        "nvme_smart_log": nvme,
    }


# ---------------------------------------------------------------------------------------------------
# Selection and the destructive interlock
# ---------------------------------------------------------------------------------------------------


def _entry_matches(disk: Dict[str, Any], text: str) -> bool:
    """One host-free entry against a disk: serial, WWN or loop:<backing file>."""
    if text.startswith("loop:"):
        backing = disk.get("loop_backing_file")
        return bool(backing) and text[len("loop:"):] == backing
    serial = (disk.get("serial") or "").strip().casefold()
    wwn = normalize_wwn(disk.get("wwn"))
    return bool(serial and text.casefold() == serial) or bool(wwn and normalize_wwn(text) == wwn)


def allow_list_match(disk: Dict[str, Any], allow: Sequence[str], host: Optional[str] = None) -> Optional[str]:
    """The allow-list entry naming this disk, or None.

    An entry matches a disk's serial (case-insensitive, exact otherwise) or its WWN (any of the
    0x / naa. / eui. spellings). Loop devices have neither: an entry 'loop:<backing file>' matches a
    loop device whose backing file is exactly that path. An entry 'HOST:<serial, WWN or loop:file>'
    matches only on the inventory host HOST (host, case-insensitive): a serial or WWN copied to
    another host's list then names nothing. Nothing else matches: not a kernel name, not a /dev path
    (those change between boots and would let a stale list hit another disk).
    """
    for entry in allow:
        if not isinstance(entry, str) or not entry.strip():
            continue
        text = entry.strip()
        if _entry_matches(disk, text):
            return entry
        bound, sep, rest = text.partition(":")
        if sep and host and bound and not text.startswith("loop:") and bound.casefold() == host.casefold() \
                and _entry_matches(disk, rest.strip()):
            return entry
    return None


_TYPE_WORDS = {"part": "a partition", "lvm": "an LVM volume", "crypt": "a dm-crypt device", "mpath": "a multipath map",
               "dm": "a device-mapper device", "md": "an md array"}


def describe_type(device_type: Optional[str]) -> str:
    """lsblk TYPE in words: 'part' -> 'a partition', 'raid1' -> 'an md array (raid1)'."""
    if device_type is None:
        return "a device"
    if device_type.startswith("raid") or device_type == "linear":
        return "an md array (%s)" % device_type
    return _TYPE_WORDS.get(device_type, "a %s device" % device_type)


def _refusal(code: str, message: str) -> Dict[str, str]:
    return {"code": code, "message": message}


def sort_refusals(refusals: List[Dict[str, str]]) -> List[Dict[str, str]]:
    order = {code: index for index, code in enumerate(REFUSAL_CODES)}
    return sorted(refusals, key=lambda refusal: order.get(refusal["code"], len(order)))


def _names(items: Sequence[str]) -> str:
    return ", ".join(items)


def raw_write_refusals(target_kname: str, topology: Topology, disks: Sequence[Dict[str, Any]], destructive: bool,
                       allow: Sequence[str], boot_unknown: Sequence[str], host: Optional[str] = None
                       ) -> List[Dict[str, str]]:
    """Every reason the target may not be written, in REFUSAL_CODES order; [] grants raw_write.

    disks: the records (describe_disk) of the physical disks under the target. raw_write needs
    destructive true, a whole physical disk, every disk allow-listed by serial/WWN (or loop backing
    file; entries HOST:... only when host is HOST), and nothing on it: no mount, swap, fstab line,
    partition (table), holder, signature; the kernel grants an exclusive open (when tried); not the
    boot disk; signatures probed without error; not read-only; the boot disk known.
    """
    refusals = []
    if not destructive:
        refusals.append(_refusal("not_destructive", "diskproof_destructive is not true"))
    node = topology.nodes.get(target_kname) or {}
    if not topology.is_root(target_kname):
        under = _names(topology.physical_disks(target_kname)) or "unknown disks"
        refusals.append(_refusal("not_whole_disk", "%s is %s on %s, not a whole disk: raw writes go to whole disks "
                                 "only" % (target_kname, describe_type(node.get("type")), under)))
    if boot_unknown:
        refusals.append(_refusal("boot_disk_unknown", "the disk holding %s could not be identified, so it cannot be "
                                 "ruled out" % _names(boot_unknown)))
    for disk in disks:
        name = disk["name"]
        usage = disk["usage"]
        if allow_list_match(disk, allow, host) is None:
            ident = []
            for key, label in (("serial", "serial"), ("wwn", "WWN"), ("loop_backing_file", "loop backing file")):
                if disk.get(key):
                    ident.append("%s %s" % (label, disk[key]))
            if ident:
                message = "%s (%s) is not in diskproof_destructive_allow%s" % (
                    name, ", ".join(ident), " (entries HOST:... count only on host %s)" % host if host else "")
            else:
                message = "%s has no serial, WWN or loop backing file to match diskproof_destructive_allow" % name
            refusals.append(_refusal("not_allow_listed", message))
        if usage["boot"]:
            refusals.append(_refusal("boot_disk", "%s is the boot disk: it holds %s" % (name, _names(usage["boot"]))))
        if usage["mount_points"]:
            refusals.append(_refusal("mounted", "%s is mounted: %s" % (name, _names(usage["mount_points"]))))
        if usage["swap"]:
            refusals.append(_refusal("swap", "%s holds active swap: %s" % (name, _names(usage["swap"]))))
        if usage["fstab"]:
            refusals.append(_refusal("fstab", "%s is named in /etc/fstab: %s" % (name, "; ".join(usage["fstab"]))))
        tables = ["%s partition table" % s["type"] for s in usage["signatures"] if s["kind"] == "partition_table"]
        if usage["partitions"] or tables:
            parts = tables + (["partitions %s" % _names(usage["partitions"])] if usage["partitions"] else [])
            refusals.append(_refusal("partitioned", "%s is partitioned: %s" % (name, ", ".join(parts))))
        if usage["holders"]:
            refusals.append(_refusal("holders", "%s is in use by %s" % (name, _names(usage["holders"]))))
        if usage.get("exclusive_open") not in (None, "ok"):
            refusals.append(_refusal("busy", "%s: the kernel refuses an exclusive open (%s): something holds it, "
                                     "possibly a mount in another mount namespace" % (name, usage["exclusive_open"])))
        found = [s for s in usage["signatures"] if s["kind"] != "partition_table"]
        if found:
            described = []
            for signature in found:
                where = " at offset 0x%x" % signature["offset"] if signature.get("offset") is not None else ""
                described.append("%s (%s) on %s%s" % (signature["type"], signature["kind"], signature["device"], where))
            refusals.append(_refusal("signature", "%s carries signatures: %s" % (name, "; ".join(described))))
        if usage["probe_errors"]:
            refusals.append(_refusal("probe_failed", "%s: signatures could not be read, so the disk cannot be shown "
                                     "to be unused: %s" % (name, "; ".join(usage["probe_errors"]))))
        if disk.get("read_only"):
            refusals.append(_refusal("read_only", "%s is read-only" % name))
    return sort_refusals(refusals)


def select_data_disks(host: HostView, exclude: Sequence[str], identities: Dict[str, Dict[str, Any]],
                      loop_files: Sequence[str] = ()) -> Tuple[List[str], Dict[str, str], List[str]]:
    """(selected, skipped {disk: why}, problems) for select=all_data_disks.

    Candidates are physical disks of lsblk type "disk": loop devices, ram/zram and optical drives are
    never data disks. Never selected: the boot disk (/, /boot, /boot/efi, /efi on it), disks holding
    active swap, removable and empty (size 0) disks, the paths of a multipath map, and disks matching
    an exclude pattern (shell-style, against the kernel name, /dev path, serial, WWN or, for a loop
    device, ``loop:<backing file>``). When the disk holding / or a swap area cannot be identified
    nothing is selected and a problem says why.

    identities: kname -> {serial, wwn, loop_backing_file}. loop_files: shell patterns; a loop device
    whose backing file matches one is a candidate too (labs and tests: every lab host sees every loop
    device of its machine, so each names its own images). Only loop devices have a backing file, so
    the patterns can never make a real disk a candidate.
    """
    selected = []  # type: List[str]
    skipped = {}  # type: Dict[str, str]
    topology = host.topology
    problems = []
    if host.boot_unknown:
        problems.append("select all_data_disks: the disk holding %s could not be identified, so no disk is selected "
                        "(it could be the boot disk)" % _names(host.boot_unknown))
    for kname in topology.roots:
        node = topology.nodes[kname]
        ident = identities.get(kname) or {}
        backing = ident.get("loop_backing_file") if node["type"] == "loop" else None
        why = None
        if node["type"] == "loop" and loop_files and not (
                backing and any(fnmatch.fnmatchcase(backing, pattern) for pattern in loop_files)):
            why = "loop device whose backing file (%s) matches no pattern of select_loop_files" % (backing or "none")
        elif node["type"] not in ("disk", "loop") or (node["type"] == "loop" and not loop_files):
            why = "type %s is never a data disk" % node["type"]
        elif kname.startswith(("zram", "ram")):
            why = "memory-backed"
        elif kname in host.boot_disks:
            why = "boot disk (%s)" % _names(host.boot_disks[kname])
        elif kname in host.swap_disks:
            why = "holds active swap (%s)" % _names(host.swap_disks[kname])
        elif node.get("removable"):
            why = "removable"
        elif any(topology.nodes[child]["type"] == "mpath" for child in topology.children.get(kname, [])):
            maps = [child for child in topology.children[kname] if topology.nodes[child]["type"] == "mpath"]
            why = "a path of multipath map %s (name the map as a device target)" % _names(maps)
        elif not node.get("size_bytes"):
            why = "empty (size 0)"
        else:
            keys = [kname, node["path"], ident.get("serial"), ident.get("wwn"), "loop:" + backing if backing else None]
            for pattern in exclude:
                if any(key and fnmatch.fnmatchcase(key, pattern) for key in keys):
                    why = "excluded by %r" % pattern
                    break
        if why is None and problems:
            why = "boot disk unknown"
        if why is None:
            selected.append(kname)
        else:
            skipped[kname] = why
    return selected, skipped, problems


def _filesystem_mount(mounts: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The mount a filesystem is tested through: its whole root (not a bind mount of a subdirectory), writable,
    at the shortest mount point (the lab's /srv/diskproof/d0 rather than its copy under /dev/shm)."""
    usable = [mount for mount in mounts if mount["root"] == "/" and "ro" not in mount.get("options", "").split(",")]
    return min(usable, key=lambda mount: len(mount["mount_point"])) if usable else None


def selected_targets(host: HostView, selected: Sequence[str], mode: str
                     ) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
    """(targets, skipped {disk: why}): how each disk select_data_disks picked is tested.

    A disk carrying mounted filesystems (on itself, its partitions, LVM or md on it) is tested through each of
    them as a directory target (class filesystem: the benchmark writes only in a run directory it creates
    there and removes); its unmounted parts are left alone. A disk with nothing mounted is a device target
    asking for ``mode`` (raw_read, or raw_write - granted only behind the destructive interlock). A disk whose
    filesystems are all read-only or mounted only as subdirectories is skipped, with the reason. A filesystem
    spanning several selected disks (LVM, md) is one target.
    """
    topology = host.topology
    targets = []  # type: List[Dict[str, Any]]
    skipped = {}  # type: Dict[str, str]
    paths = set()  # type: Set[str]
    for disk in selected:
        subtree = topology.subtree(disk)
        on_disk: Dict[str, List[Dict[str, Any]]] = {}  # filesystem node -> its mounts
        for mount in host.mounts:
            kname = host.node_for_mount(mount)
            if kname in subtree:
                on_disk.setdefault(kname, []).append(mount)
        if not on_disk:
            targets.append({"device": topology.nodes[disk]["path"], "mode": mode})
            continue
        usable = []
        for kname in subtree:
            if kname in on_disk:
                mount = _filesystem_mount(on_disk[kname])
                if mount is not None:
                    usable.append(mount["mount_point"])
        if not usable:
            points = _unique(mount["mount_point"] for mounts in on_disk.values() for mount in mounts)
            skipped[disk] = ("mounted only read-only or as a subdirectory (%s): nothing to write a test file in, "
                             "and a mounted disk is never tested raw" % _names(points))
            continue
        for point in usable:
            if point not in paths:
                paths.add(point)
                targets.append({"path": point})
    return targets, skipped


def no_data_disk_problem(host_name: str, skipped: Mapping[str, str]) -> str:
    """The refusal when select=all_data_disks leaves the host nothing to test: every disk seen, grouped by why."""
    reasons = {}  # type: Dict[str, List[str]]
    for kname, why in skipped.items():
        reasons.setdefault(why, []).append(kname)
    seen = "; ".join("%s: %s" % (_names(knames), why) for why, knames in reasons.items()) or "no disk at all"
    return ("select all_data_disks: no data disk found on %s (%s). Set diskproof_targets (directories or devices to "
            "test), or change diskproof_exclude / diskproof_select_loop_files" % (host_name, seen))


# -- one-line summaries for people (playbooks/discover.yml) ------------------------------------------

_IEC_UNITS = (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_iec(size_bytes: Optional[int]) -> str:
    """Binary size with two decimals and an explicit IEC unit: 1073741824 -> '1.00 GiB'."""
    if size_bytes is None:
        return "size?"
    for unit, limit in _IEC_UNITS:
        if size_bytes >= limit:
            return "%.2f %s" % (size_bytes / limit, unit)
    return "%d bytes" % size_bytes


def _disk_line(disk: Mapping[str, Any]) -> str:
    backing = disk.get("loop_backing_file")
    identity = disk.get("serial") or ("loop:%s" % backing if backing else None) or "no serial"
    return ", ".join([disk.get("transport") or "transport?", format_iec(disk.get("size_bytes")), disk.get("model") or "model?",
                      identity, "health %s" % disk.get("health")])


def _target_line(target: Mapping[str, Any]) -> Tuple[str, str]:
    asked = target.get("target") or {}
    name = str(next(iter(asked.values()), "?")) if isinstance(asked, Mapping) else str(asked)
    return name, "%s on %s" % (target.get("class") or "unusable", "+".join(target.get("disks") or []) or "no disk")


def discovery_summary(host: Mapping[str, Any], targets_resolved: Sequence[Mapping[str, Any]],
                      disks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """What discover found on one host, a line per host, target, disk and tool."""
    memory = host.get("memory_bytes")
    distribution = host.get("distribution") or {}
    host_line = "%s, kernel %s, %s CPUs, %s GiB RAM, service manager %s, boot disk %s" % (
        distribution.get("pretty_name"), host.get("kernel"), host.get("cpu_count"),
        round(memory / (1 << 30), 1) if isinstance(memory, int) else "?", host.get("service_mgr"),
        ", ".join(host.get("boot_disks") or []) or "unknown")
    return {
        "host": host_line,
        "tools": {name: (tool or {}).get("version") or "missing" for name, tool in (host.get("tools") or {}).items()},
        "targets": dict(_target_line(target) for target in targets_resolved),
        "disks": {name: _disk_line(disk) for name, disk in disks.items()},
    }
