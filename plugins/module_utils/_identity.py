# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Grants bound to the disk: what discover saw, and the same seen again right before a raw job.

A raw_read/raw_write grant names a device node (/dev/sdb) at discover time, but a name is not a
disk: re-enumeration, a stale fact cache (--skip-tags discover) or a mount made after discover can
put another disk, or a disk now in use, under the same name. So discover records the identity of
every disk under the target and the runner reads it again from sysfs and /dev/disk/by-id:

    grant = make_grant("raw_write", "n01", target_record, disks, observe("loop3"))   # disk_facts
    problems = verify_grant(grant, observe("loop3"), mountinfo_text, signatures)     # bench_run

Identity: the serial and WWN (every spelling seen in sysfs and by-id links), the disk sequence
number (/sys/block/X/diskseq: a new one at every attach, so re-enumeration shows even for a disk
that reports no serial), and for loop devices, which have neither serial nor WWN, the loop identity:
the backing file and its inode (st_dev, st_ino). Usage, for raw_write only: a mount of the disk or a
partition (/proc/self/mountinfo, by MAJ:MIN), a partition, a holder (/sys/block/X/holders) or a
signature (wipefs -n, as discover probes it). An empty problem list lets the job run.

Reading is confined to observe() (sysfs and by-id under roots the tests can point elsewhere); the
checks are pure. Importable on Python 3.8+ (module side of ansible-core 2.19).
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._parse.errors import ParseError
from ._parse.mountinfo import parse_mountinfo
from ._parse.sysfs import loop_backing_file, vpd_unit_serial

SYS_BLOCK = "/sys/block"
BY_ID = "/dev/disk/by-id"
RERUN = "rerun the discover role (--tags discover, or the whole playbook) so the grant describes the disk as it is now"

# by-id links whose name ends in _<serial> (udev's ID_SERIAL is <model>_<serial>).
_SERIAL_LINK_PREFIXES = ("ata-", "nvme-", "scsi-", "usb-", "mmc-", "virtio-", "ieee1394-", "memstick-")
_WWN_LINK_PREFIXES = ("wwn-", "nvme-eui.", "scsi-3", "nvme-nvme.")


class IdentityError(Exception):
    """A grant that cannot be checked at all (not a dict, no device)."""


def normalize_wwn(value: Optional[str]) -> Optional[str]:
    """'0x5002538E40A22954', 'naa.5002538e40a22954', 'wwn-0x5002…' -> '5002538e40a22954'."""
    if not value:
        return None
    lowered = value.strip().lower()
    for prefix in ("wwn-", "0x", "naa.", "eui.", "nvme."):
        if lowered.startswith(prefix):
            lowered = lowered[len(prefix):]
        if lowered.startswith("0x"):
            lowered = lowered[2:]
    return lowered or None


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except OSError:
        return None


def _vpd_serial(path: str) -> Optional[str]:
    """The unit serial of a SCSI VPD page 0x80 file."""
    try:
        with open(path, "rb") as handle:
            return vpd_unit_serial(handle.read())
    except OSError:
        return None


def loop_identity(backing_file: Optional[str]) -> Optional[Dict[str, Any]]:
    """{backing_file, st_dev, st_ino, deleted} of a loop backing file as sysfs names it; None for no loop."""
    if not backing_file:
        return None
    path, deleted = loop_backing_file(backing_file)
    try:
        info = os.stat(path)
        st_dev, st_ino = info.st_dev, info.st_ino   # type: Optional[int], Optional[int]
    except OSError:
        st_dev = st_ino = None
    return {"backing_file": path, "st_dev": st_dev, "st_ino": st_ino, "deleted": deleted}


def observe(kname: str, sys_block: str = SYS_BLOCK, by_id: str = BY_ID) -> Dict[str, Any]:
    """What sysfs and /dev/disk/by-id say about the whole disk kname now (reads only, never opens the device).

    present, maj_min, size_sectors, diskseq, serials, wwns (raw texts), by_id (link names pointing at the
    disk), loop (loop_identity), partitions {name: maj_min}, holders (of the disk and its partitions)."""
    base = os.path.join(sys_block, kname)
    if not os.path.isdir(base):
        return {"name": kname, "present": False}
    serials = [value for value in (_read(os.path.join(base, "device", "serial")), _read(os.path.join(base, "serial")),
                                   _vpd_serial(os.path.join(base, "device", "vpd_pg80"))) if value]
    wwns = [value for value in (_read(os.path.join(base, "device", "wwid")), _read(os.path.join(base, "wwid")))
            if value]
    links = []
    try:
        for name in sorted(os.listdir(by_id)):
            if os.path.basename(os.path.realpath(os.path.join(by_id, name))) == kname:
                links.append(name)
    except OSError:
        pass
    partitions = {}
    holders = []
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    for entry in entries:
        if entry.startswith(kname) and os.path.exists(os.path.join(base, entry, "partition")):
            partitions[entry] = _read(os.path.join(base, entry, "dev"))
    for where in [base] + [os.path.join(base, name) for name in partitions]:
        try:
            holders.extend(sorted(os.listdir(os.path.join(where, "holders"))))
        except OSError:
            pass
    size = _read(os.path.join(base, "size"))
    return {
        "name": kname,
        "present": True,
        "maj_min": _read(os.path.join(base, "dev")),
        "size_sectors": int(size) if size and size.isdigit() else None,
        "diskseq": _read(os.path.join(base, "diskseq")),
        "serials": serials,
        "wwns": wwns,
        "by_id": links,
        "loop": loop_identity(_read(os.path.join(base, "loop", "backing_file"))),
        "partitions": partitions,
        "holders": holders,
    }


def identity_tokens(observed: Mapping[str, Any]) -> Dict[str, List[str]]:
    """{serial: [...], wwn: [...]}: every spelling of the disk's serial and WWN found now, normalised
    (serials stripped and casefolded, WWNs through normalize_wwn)."""
    serials = []  # type: List[str]
    wwns = []  # type: List[str]
    for text in observed.get("serials") or []:
        serials.append(text.strip().casefold())
    for text in observed.get("wwns") or []:
        lowered = text.strip().lower()
        if lowered.startswith("t10."):
            # ATA disks behind libata: "t10.ATA     <model>   <serial>": the last word is the serial.
            words = text.split()
            if len(words) > 1:
                serials.append(words[-1].casefold())
        else:
            wwns.append(normalize_wwn(lowered) or "")
    for link in observed.get("by_id") or []:
        if "-part" in link:
            continue
        if link.startswith(_WWN_LINK_PREFIXES):
            value = link.split("-", 1)[1]
            if link.startswith("scsi-3"):
                value = value[1:]
            wwns.append(normalize_wwn(value) or "")
        elif link.startswith(_SERIAL_LINK_PREFIXES) and "_" in link:
            serials.append(link.rsplit("_", 1)[1].casefold())
    return {"serial": sorted(set(s for s in serials if s)), "wwn": sorted(set(w for w in wwns if w))}


def disk_binding(disk: Mapping[str, Any], observed: Mapping[str, Any]) -> Dict[str, Any]:
    """One disk of a grant: the identity discover matched the allow-list against (serial, WWN from its disk
    record) plus what sysfs shows (diskseq, loop identity, size), so the runner can compare like with like."""
    loop = observed.get("loop") or None
    return {
        "name": disk.get("name") or observed.get("name"),
        "maj_min": disk.get("maj_min") or observed.get("maj_min"),
        "serial": disk.get("serial"),
        "wwn": disk.get("wwn"),
        "size_sectors": observed.get("size_sectors"),
        "diskseq": observed.get("diskseq"),
        "loop": None if loop is None else {key: loop.get(key) for key in ("backing_file", "st_dev", "st_ino")},
    }


def make_grant(granted_class: str, host: Optional[str], target: Mapping[str, Any],
               bindings: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The grant a device target carries from discover to the runner: class, the inventory host it was
    made for, the target node (kname, MAJ:MIN) and the identity of every disk under it (disk_binding)."""
    return {
        "class": granted_class,
        "host": host,
        "device": target.get("device"),
        "device_path": target.get("device_path"),
        "disks": [dict(binding) for binding in bindings],
    }


def _changed(name: str, what: str, was: Any, now: Any) -> str:
    return "%s: %s was %s at discover, now %s" % (name, what, was, now)


def identity_problems(binding: Mapping[str, Any], observed: Mapping[str, Any]) -> List[str]:
    """Why the disk seen now is not the disk that was granted ([] when it is)."""
    name = binding.get("name") or "?"
    if not observed.get("present"):
        return ["%s is gone (no /sys/block/%s)" % (name, name)]
    problems = []
    loop = binding.get("loop")
    now_loop = observed.get("loop")
    if loop:
        if not now_loop:
            problems.append("%s: was a loop device backed by %s, now has no backing file"
                            % (name, loop["backing_file"]))
        elif now_loop.get("deleted"):
            problems.append("%s: its loop backing file %s was deleted" % (name, now_loop["backing_file"]))
        elif now_loop["backing_file"] != loop["backing_file"]:
            problems.append(_changed(name, "the loop backing file", loop["backing_file"], now_loop["backing_file"]))
        elif (now_loop.get("st_dev"), now_loop.get("st_ino")) != (loop.get("st_dev"), loop.get("st_ino")):
            problems.append("%s: the loop backing file %s is another file now (inode %s:%s at discover, now %s:%s)"
                            % (name, loop["backing_file"], loop.get("st_dev"), loop.get("st_ino"),
                               now_loop.get("st_dev"), now_loop.get("st_ino")))
    elif now_loop:
        problems.append("%s: is now a loop device backed by %s, was a disk at discover"
                        % (name, now_loop["backing_file"]))
    serial = (binding.get("serial") or "").strip().casefold()
    wwn = normalize_wwn(binding.get("wwn"))
    if serial or wwn:
        tokens = identity_tokens(observed)
        if not tokens["serial"] and not tokens["wwn"]:
            problems.append("%s: its serial/WWN cannot be read again (nothing in /sys/block/%s/device/{serial,wwid,"
                            "vpd_pg80} nor in %s), so it cannot be shown to be the granted disk" % (name, name, BY_ID))
        elif not ((serial and serial in tokens["serial"]) or (wwn and wwn in tokens["wwn"])):
            granted = ", ".join(part for part in ("serial %s" % binding["serial"] if serial else "",
                                                  "WWN %s" % binding["wwn"] if wwn else "") if part)
            seen = ", ".join(["serial %s" % s for s in tokens["serial"]] + ["WWN %s" % w for w in tokens["wwn"]])
            problems.append("%s is another disk: granted %s, now %s" % (name, granted, seen))
    if binding.get("diskseq") and observed.get("diskseq") and binding["diskseq"] != observed["diskseq"]:
        problems.append("%s was re-attached since discover (disk sequence number %s, now %s)"
                        % (name, binding["diskseq"], observed["diskseq"]))
    if binding.get("maj_min") and observed.get("maj_min") and binding["maj_min"] != observed["maj_min"]:
        problems.append(_changed(name, "the device number", binding["maj_min"], observed["maj_min"]))
    if binding.get("size_sectors") is not None and observed.get("size_sectors") is not None \
            and binding["size_sectors"] != observed["size_sectors"]:
        problems.append(_changed(name, "the size (512-byte sectors)", binding["size_sectors"],
                                 observed["size_sectors"]))
    return problems


def usage_problems(observed: Mapping[str, Any], mounts: Sequence[Mapping[str, str]],
                   signatures: Sequence[Mapping[str, Any]], signature_error: Optional[str]) -> List[str]:
    """What uses the disk now: mounts (by MAJ:MIN of the disk or a partition, or by source path),
    partitions, holders, signatures (wipefs -n of the disk). For raw_write only."""
    name = observed.get("name") or "?"
    problems = []
    numbers = {observed.get("maj_min"): name}
    numbers.update({maj_min: part for part, maj_min in (observed.get("partitions") or {}).items()})
    nodes = set("/dev/%s" % node for node in [name] + list(observed.get("partitions") or {}))
    found = []
    for mount in mounts:
        by_source = os.path.basename(mount["source"]) if mount.get("source") in nodes else None
        node = numbers.get(mount.get("maj_min")) or by_source
        if node:
            found.append("%s (%s)" % (mount["mount_point"], node))
    if found:
        problems.append("%s is mounted now: %s" % (name, ", ".join(found)))
    if observed.get("partitions"):
        problems.append("%s has partitions now: %s" % (name, ", ".join(sorted(observed["partitions"]))))
    if observed.get("holders"):
        problems.append("%s is held now by %s" % (name, ", ".join(observed["holders"])))
    if signature_error:
        problems.append("%s: signatures could not be read (%s), so the disk cannot be shown to be unused"
                        % (name, signature_error))
    if signatures:
        problems.append("%s carries signatures now: %s" % (name, "; ".join(
            "%s%s" % (s.get("type"), " at offset 0x%x" % s["offset"] if s.get("offset") is not None else "")
            for s in signatures)))
    return problems


def check_grant(grant: Any) -> Dict[str, Any]:
    """The grant as a dict with a list of disks; IdentityError when it is not one."""
    if not isinstance(grant, Mapping) or not isinstance(grant.get("disks"), list) or not grant["disks"]:
        raise IdentityError("the target's grant %r is not a grant from discover (class, device, disks); %s"
                            % (grant, RERUN))
    return dict(grant)


def verify_grant(grant: Mapping[str, Any], observed: Mapping[str, Mapping[str, Any]], mountinfo_text: Optional[str],
                 signatures: Optional[Mapping[str, Sequence[Mapping[str, Any]]]] = None,
                 signature_errors: Optional[Mapping[str, Optional[str]]] = None,
                 exclusive_error: Optional[str] = None) -> List[str]:
    """Every reason the job must not run on this grant now ([] lets it run).

    observed: disk name -> observe(name). For class raw_write also the usage: mountinfo_text (of
    /proc/self/mountinfo), signatures and signature_errors per disk (wipefs -n), exclusive_error (the
    O_EXCL open of the device failed: the error text)."""
    checked = check_grant(grant)
    problems = []
    for binding in checked["disks"]:
        problems.extend(identity_problems(binding, observed.get(binding.get("name"), {"present": False})))
    if checked.get("class") != "raw_write":
        return problems
    try:
        mounts = parse_mountinfo(mountinfo_text) if mountinfo_text is not None else []
    except ParseError as error:
        mounts = []
        problems.append("mounts could not be read (%s)" % error)
    if mountinfo_text is None:
        problems.append("/proc/self/mountinfo could not be read, so the disk cannot be shown to be unmounted")
    for binding in checked["disks"]:
        name = binding.get("name")
        seen = observed.get(name) or {}
        if seen.get("present"):
            problems.extend(usage_problems(seen, mounts, (signatures or {}).get(name) or [],
                                           (signature_errors or {}).get(name)))
    if exclusive_error:
        node = checked.get("device_path") or checked.get("device")
        problems.append("%s: the kernel refuses an exclusive open (%s): something holds it - a mount (perhaps in "
                        "another mount namespace), swap, device-mapper or md" % (node, exclusive_error))
    return problems


def refusal_message(grant: Mapping[str, Any], problems: Sequence[str]) -> str:
    """One message for a refused job: what changed, and what to do."""
    return ("%s grant of %s no longer holds, nothing was run on it: %s; %s"
            % (grant.get("class"), grant.get("device_path") or grant.get("device"), "; ".join(problems), RERUN))


# Disk identity copied into every result record, so the report can group peers by model,
# firmware and capacity and match a baseline by serial.
IDENTITY_FIELDS = ("model", "serial", "wwn", "firmware", "size_bytes", "rotational", "transport")


def target_identities(resolved: Sequence[Mapping[str, Any]], disks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Directory (or raw device, as the target names it) -> identity of the disk under it, from the
    discover role's facts.

    A target on one physical disk gets that disk's identity; one spanning several disks (md,
    LVM) gets only the list of disks, since no single model or serial applies (and no ``device``,
    so bench_run resolves the md/dm device itself for its I/O counters).
    """
    identities: Dict[str, Dict[str, Any]] = {}
    for entry in resolved or []:
        asked = entry.get("target") or {}
        path = (asked.get("path") or asked.get("device")) if isinstance(asked, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        names = [name for name in entry.get("disks") or [] if isinstance(name, str)]
        identity: Dict[str, Any] = {"device": names[0], "disks": names} if len(names) == 1 else {"disks": names}
        disk = disks.get(names[0]) if len(names) == 1 else None
        for field_name in IDENTITY_FIELDS:
            identity[field_name] = disk.get(field_name) if disk else None
        identities[posixpath.normpath(path)] = identity
    return identities
