# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk's volatile write cache: which tool controls it, and the commands that read and set it.

``write_cache_transport`` tells ata, scsi or nvme from /sys; ``write_cache_commands`` is the command
table (hdparm, sdparm, nvme-cli). Their output is parsed by _parse/write_cache.py. bench_run switches
the cache off for a commit-rate job (module_utils/_run.py) and the quiesce module's restore puts back
what an aborted run left off. No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import List, NamedTuple, Optional, Tuple

from ._parse.write_cache import TRANSPORT_ATA, TRANSPORT_NVME, TRANSPORT_SCSI

SYS_ROOT = "/sys"

# Whole-disk names that never have a volatile write cache control of their own.
_NO_CONTROL = (
    (re.compile(r"^loop\d+$"), "a loop device (its backing file's disk has the cache)"),
    (re.compile(r"^(ram|zram)\d+$"), "a RAM disk"),
    (re.compile(r"^md\d+"), "an md RAID device (set it on each member disk)"),
    (re.compile(r"^dm-\d+$"), "a device-mapper device (set it on each underlying disk)"),
    (re.compile(r"^(vd[a-z]+|xvd[a-z]+)$"), "a virtio/Xen virtual disk (the hypervisor owns its cache)"),
    (re.compile(r"^(nbd|rbd)\d+$"), "a network block device"),
    (re.compile(r"^mmcblk\d+$"), "an MMC/SD card"),
    (re.compile(r"^sr\d+$"), "an optical drive"),
)
_NVME_NAMESPACE = re.compile(r"^nvme\d+n\d+$")
_SCSI_DISK = re.compile(r"^sd[a-z]+$")


def write_cache_transport(device: str, sys_root: str = SYS_ROOT) -> Tuple[Optional[str], str]:
    """(ata | scsi | nvme, how it was told) for a whole disk, or (None, why it has no control).

    NVMe namespaces by name (nvme0n1). sd disks by /sys/block/<disk>/device/vendor: libata reports
    the vendor "ATA" (hdparm speaks ATA to it), anything else is SCSI/SAS (sdparm, mode page 08h).
    """
    name = os.path.basename(device)
    if not os.path.isdir(os.path.join(sys_root, "block", name)):
        return None, "/sys/block/%s does not exist (not a whole disk)" % name
    for pattern, what in _NO_CONTROL:
        if pattern.match(name):
            return None, "%s is %s" % (name, what)
    device_dir = os.path.join(sys_root, "block", name, "device")
    if _NVME_NAMESPACE.match(name):
        return TRANSPORT_NVME, "NVMe namespace"
    if _SCSI_DISK.match(name) and os.path.isdir(device_dir):
        try:
            with open(os.path.join(device_dir, "vendor")) as handle:
                vendor = handle.read().strip()
        except OSError:
            vendor = ""
        if vendor == "ATA":
            return TRANSPORT_ATA, "SCSI disk with vendor ATA (libata)"
        return TRANSPORT_SCSI, "SCSI disk, vendor %r" % vendor
    if not os.path.exists(device_dir):
        return None, "%s has no /sys/block/%s/device (a virtual device)" % (name, name)
    return None, "%s is neither an sd (ATA, SCSI, SAS) disk nor an NVMe namespace" % name


class WriteCacheCommands(NamedTuple):
    """argv lists reading and setting one disk's volatile write cache."""

    tool: str
    get: List[str]
    off: List[str]
    on: List[str]


def write_cache_commands(transport: str, device: str) -> WriteCacheCommands:
    """The commands for /dev/<device>. nvme-cli's value goes as --value=: since nvme-cli 2.7 the
    short -v means --verbose, and "-v 1" then silently sets 0 (linux-nvme/nvme-cli#2465)."""
    node = device if device.startswith("/dev/") else "/dev/" + device
    if transport == TRANSPORT_ATA:
        return WriteCacheCommands("hdparm", ["hdparm", "-W", node], ["hdparm", "-W0", node], ["hdparm", "-W1", node])
    if transport == TRANSPORT_SCSI:
        return WriteCacheCommands("sdparm", ["sdparm", "--get=WCE", node], ["sdparm", "--clear=WCE", node],
                                  ["sdparm", "--set=WCE", node])
    if transport == TRANSPORT_NVME:
        return WriteCacheCommands("nvme", ["nvme", "get-feature", node, "-f", "6"],
                                  ["nvme", "set-feature", node, "-f", "6", "--value=0"],
                                  ["nvme", "set-feature", node, "-f", "6", "--value=1"])
    raise ValueError("unknown transport %r" % transport)
