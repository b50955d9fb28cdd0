# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a directory target on a disk? The one rule, pure Python (no Ansible imports).

disk_facts (discover, before the quiesce) and bench_plan (the plan, when discover was skipped) both
ask ``classify_mount`` about the mount holding a target directory (its /proc/self/mountinfo entry),
so a target is refused for the same reason, with the same words, wherever it is caught:

    mount = mount_for_path(parse_mountinfo(text), os.path.realpath(target))   # _parse.mountinfo
    found = classify_mount(mount, source_is_block_device(mount["source"]))
    found.not_a_disk        # True: refused unless allow_non_disk
    refusal_message(path, found)

The rule (docs/discover.md, "Targets that are not disks"), in order:

1. The filesystem type names memory (tmpfs, ramfs, devtmpfs, hugetlbfs), a union of other filesystems
   (overlay, aufs, unionfs), the network (nfs, nfs4, cifs, smb3, smbfs, ceph, glusterfs, lustre, afs,
   ...), FUSE (``fuse``, ``fuse.*``: sshfs, s3fs, gvfs ...), a share of the VM's host (9p, virtiofs,
   vboxsf, vmhgfs) or a kernel interface (proc, sysfs, cgroup, ...): not a disk.
2. ``fuseblk`` (FUSE on a block device, e.g. ntfs-3g) and pool filesystems whose source names a pool,
   not a device (zfs, bcachefs): on disks.
3. Any other type is on a disk when its device number (st_dev in mountinfo) is a real block device
   (major != 0) or its source is a block device node; else (source ``none``, a name, a URL) it is
   suspect and treated as not a disk - its I/O reaches no block device this host can count.

Importable on Python 3.8+ (module side of ansible-core 2.19).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional, Sequence

KIND_MEMORY = "memory"
KIND_UNION = "union"
KIND_NETWORK = "network"
KIND_FUSE = "FUSE"
KIND_HOST_SHARE = "host share"
KIND_PSEUDO = "kernel interface"
KIND_NO_BLOCK_SOURCE = "no block device"

# fstype -> kind, for rule 1. Names as the kernel spells them in /proc/self/mountinfo.
NON_DISK_FSTYPES = {
    "tmpfs": KIND_MEMORY, "ramfs": KIND_MEMORY, "devtmpfs": KIND_MEMORY, "hugetlbfs": KIND_MEMORY,
    "overlay": KIND_UNION, "aufs": KIND_UNION, "unionfs": KIND_UNION,
    "nfs": KIND_NETWORK, "nfs4": KIND_NETWORK, "cifs": KIND_NETWORK, "smb3": KIND_NETWORK, "smbfs": KIND_NETWORK,
    "ceph": KIND_NETWORK, "glusterfs": KIND_NETWORK, "lustre": KIND_NETWORK, "afs": KIND_NETWORK,
    "ncpfs": KIND_NETWORK, "gfs2": KIND_NETWORK, "ocfs2": KIND_NETWORK, "beegfs": KIND_NETWORK,
    "gpfs": KIND_NETWORK, "orangefs": KIND_NETWORK,
    "fuse": KIND_FUSE,
    "9p": KIND_HOST_SHARE, "virtiofs": KIND_HOST_SHARE, "vboxsf": KIND_HOST_SHARE, "vmhgfs": KIND_HOST_SHARE,
    "proc": KIND_PSEUDO, "sysfs": KIND_PSEUDO, "cgroup": KIND_PSEUDO, "cgroup2": KIND_PSEUDO, "devpts": KIND_PSEUDO,
    "mqueue": KIND_PSEUDO, "debugfs": KIND_PSEUDO, "tracefs": KIND_PSEUDO, "securityfs": KIND_PSEUDO,
    "pstore": KIND_PSEUDO, "bpf": KIND_PSEUDO, "configfs": KIND_PSEUDO, "efivarfs": KIND_PSEUDO,
    "autofs": KIND_PSEUDO, "binfmt_misc": KIND_PSEUDO, "fusectl": KIND_PSEUDO, "rpc_pipefs": KIND_PSEUDO,
    "nsfs": KIND_PSEUDO, "nfsd": KIND_PSEUDO, "selinuxfs": KIND_PSEUDO,
}
# Rule 2: disk-backed although the source is no block device node (or is one seen through FUSE).
DISK_FSTYPES_WITHOUT_BLOCK_SOURCE = frozenset(("fuseblk", "zfs", "bcachefs"))


class FilesystemFacts(NamedTuple):
    """What the rule found for one mount; ``kind`` is None exactly when the mount is on a disk."""

    fstype: str
    mount_point: str
    source: str
    kind: Optional[str]

    @property
    def not_a_disk(self) -> bool:
        return self.kind is not None


def mount_for_path(mounts: Sequence[Mapping[str, str]], path: str) -> Optional[Mapping[str, str]]:
    """The mount holding an absolute, resolved path: the longest matching mount point, the last one
    listed when several are stacked on it (the one on top, the one a process sees)."""
    best = None
    for mount in mounts:
        point = mount["mount_point"]
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if best is None or len(point) >= len(best["mount_point"]):
                best = mount
    return best


def fstype_kind(fstype: str) -> Optional[str]:
    """Rule 1 alone: the kind of a filesystem type that is never a disk, else None."""
    if fstype.startswith("fuse.") and fstype != "fuse.":
        return KIND_FUSE
    return NON_DISK_FSTYPES.get(fstype)


def classify_mount(mount: Mapping[str, str], source_is_block_device: Optional[bool]) -> FilesystemFacts:
    """Rules 1-3 for one mountinfo entry. ``source_is_block_device``: whether the mount's source is a
    block device node on this host (None: not looked at; only rule 3 asks)."""
    fstype, source = mount["fstype"], mount["source"]
    kind = fstype_kind(fstype)
    if kind is None and fstype not in DISK_FSTYPES_WITHOUT_BLOCK_SOURCE:
        major = mount["maj_min"].split(":", 1)[0]
        if major == "0" and not source_is_block_device:
            kind = KIND_NO_BLOCK_SOURCE
    return FilesystemFacts(fstype=fstype, mount_point=mount["mount_point"], source=source, kind=kind)


def refusal_message(path: str, found: FilesystemFacts) -> str:
    """Why a directory target is refused and what to do, naming the filesystem type and mount point."""
    if found.kind == KIND_NO_BLOCK_SOURCE:
        why = "its source %r is no block device, so no disk of this host sees its I/O" % found.source
    else:
        why = "a %s filesystem, not a disk" % found.kind
    return ("%s is on %s (mounted at %s, source %s): %s; its figures would not be a disk's. Point the target at "
            "a directory on a disk-backed filesystem (ext4, xfs, btrfs ... on a block device), or set "
            "allow_non_disk: true on this target (or diskproof_allow_non_disk: true) to measure it anyway as "
            "not_a_disk, reported apart from the disks"
            % (path, found.fstype, found.mount_point, found.source, why))


def allowed_warning(path: str, found: FilesystemFacts) -> str:
    """The warning of a non-disk target measured because allow_non_disk is true."""
    return ("%s is on %s (mounted at %s, %s): measured because allow_non_disk is true; its records carry "
            "target.not_a_disk and the report compares them only with other %s targets"
            % (path, found.fstype, found.mount_point, found.kind, found.fstype))
