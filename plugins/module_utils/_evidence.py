# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vendor-dispute evidence bundle: snapshots of each disk and host, and one signed-off tarball per disk.

Pure Python (no Ansible imports): the module ``diskproof.fleet.evidence`` supplies the I/O
(``HostIO``: run an argv, find a tool, read a file, write a file) and pytest calls everything here
directly. docs/evidence.md describes the bundle.

- ``take_snapshot`` runs, per disk, smartctl (text and JSON), nvme-cli (NVMe only), lsblk, udevadm,
  hdparm/sdparm (write cache), reads the queue settings and the PCIe link from /sys; per host once:
  uname, os-release, date and the clock (``chronyc tracking``, else ``timedatectl show`` and
  ``timedatectl timesync-status``), the tool versions, the kernel log (``dmesg``, else the journal's
  kernel messages of this boot: filtered here, per disk, by one rule). Every command is an argv
  list; a missing or failing tool is written down (exit code, stderr), never an error: a VM disk
  without SMART is evidence too. ``commands.json`` lists every command with its exit code, UTC
  start and end, and output file.
- ``collect_members`` / ``write_bundle`` build ``<serial or disk>-<UTC>.tar.gz`` per disk: its
  before/after snapshots, the host files, the benchmark's raw outputs and fio job files,
  ``results.json``, ``quiesce.json``, a README.md for the vendor's engineer and
  ``MANIFEST.sha256`` (``sha256sum -c`` format). Members are sorted, with fixed owner, mode and
  time, so the same inputs give the same bytes.
"""
from __future__ import annotations

import datetime
import gzip
import hashlib
import io
import json
import math
import os
import posixpath
import re
import shlex
import stat
import tarfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ._metrics import cache_bypass, primary_metric
from ._pcie import PCIE_LINK_FILES, degraded, find_pci_function, link_texts, link_values, upstream_port
from ._parse.chronyc import chronyc_unsynchronised, parse_chronyc_tracking
from ._parse.kernel_log import dmesg_lines, journal_kernel_text
from ._parse.timedatectl import parse_timedatectl_show, parse_timesync_status
from ._steady import readme_lines as steady_readme_lines
from ._tools import TOOL_VERSION_ARGS

SCHEMA = 1
PHASES = ("before", "after")
HOST_DIR = "host"
COMMANDS_FILE = "commands.json"
MANIFEST_NAME = "MANIFEST.sha256"
README_NAME = "README.md"
RESULTS_NAME = "results.json"
QUIESCE_NAME = "quiesce.json"
STDERR_LIMIT = 8192
MB = 1000 * 1000
MIB = 1 << 20

# Kernel names of whole disks (sda, nvme0n1, vda, loop3, xvdb, mmcblk0): never a path.
_DISK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
# Characters every bundle member name is made of (sha256sum escapes others; tar and shells do not care).
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._+-]")

QUEUE_FILES = ("scheduler", "nr_requests", "read_ahead_kb", "max_sectors_kb", "max_hw_sectors_kb", "rotational",
               "logical_block_size", "physical_block_size", "nomerges", "wbt_lat_usec", "write_cache")

# Tool versions, per host, asked as discover asks them (bonnie++ prints only its usage: its package manager says it).
VERSION_COMMANDS = tuple((tool, [tool] + list(args)) for tool, args in TOOL_VERSION_ARGS.items() if tool != "bonnie++")
BONNIE_PACKAGE_COMMANDS = (["dpkg-query", "-W", "bonnie++"], ["rpm", "-q", "bonnie++"])

# The kernel log when dmesg is refused (kernel.dmesg_restrict=1 without CAP_SYSLOG, as in containers): the
# journal's kernel messages of this boot, as JSON (one object per line: no format to guess, the kernel's own
# timestamp), every field whole (--all), the newest JOURNAL_KERNEL_LINES only: more than a 1 MiB kernel ring
# buffer holds, so about what dmesg would give. Read, filtered per disk, never kept whole.
JOURNAL_KERNEL_LINES = 10000
JOURNAL_KERNEL_ARGV = ["journalctl", "-k", "-b", "-o", "json", "--all", "--no-pager",
                       "--lines=%d" % JOURNAL_KERNEL_LINES]

# What each snapshot file is, for the README (the file name without directory).
FILE_DESCRIPTIONS = {
    "smartctl-x.txt": "`smartctl -x`: identity, SMART health, attributes, error and self-test logs (text)",
    "smartctl-x.json": "`smartctl -x -j`: the same, as JSON",
    "nvme-id-ctrl.json": "`nvme id-ctrl -o json`: NVMe controller identity and capabilities",
    "nvme-smart-log.json": "`nvme smart-log -o json`: NVMe health log (media errors, spare, wear, data written)",
    "lsblk.json": "`lsblk -J -b -O`: every block-layer attribute of the disk (sizes in bytes)",
    "udevadm-info.txt": "`udevadm info --query=all`: udev's view (by-id links, WWN, serial, model)",
    "hdparm-W.txt": "`hdparm -W`: the drive's volatile write cache setting (ATA)",
    "sdparm-WCE.txt": "`sdparm --get=WCE`: the drive's write cache enable bit (SCSI)",
    "queue.json": "/sys/block/<disk>/queue: scheduler, queue depth, read-ahead, request sizes, block sizes, "
                  "write cache as the kernel sees it",
    "pcie-link.json": "PCIe link of the PCI function above the disk: current and capable speed and width",
    "dmesg.txt": "kernel log lines naming the disk, its partitions or controller (from `dmesg`, else from the "
                 "journal: host/kernel-log.txt says which)",
    "uname-a.txt": "`uname -a`",
    "os-release.txt": "/etc/os-release",
    "date-u.txt": "`date -u` when the snapshot was taken",
    "chronyc-tracking.txt": "`chronyc tracking`: the clock's offset from NTP",
    "timedatectl-timesync-status.txt": "`timedatectl timesync-status`: the clock's NTP offset",
    "timedatectl-show.txt": "`timedatectl show`: whether the clock is NTP-synchronized (NTPSynchronized) and an NTP "
                            "service active (NTP)",
    "clock-offset.txt": "the clock offset chronyc or timedatectl reported, or why it is unknown; whether the clock "
                        "is NTP-synchronized and by what",
    "kernel-log.txt": "where the kernel log lines came from (`dmesg` or the journal), or why there are none",
    COMMANDS_FILE: "every command of the snapshot: exact argv, exit code, UTC start and end, stderr, output file",
}

Runner = Callable[[List[str]], Tuple[int, bytes, bytes]]


class EvidenceError(ValueError):
    """Inputs that cannot give a trustworthy bundle; the message says what to fix."""


def check_disk_name(name: Any) -> str:
    """A whole-disk kernel name (sda, nvme0n1, loop3); EvidenceError for anything path-like."""
    if not isinstance(name, str) or not _DISK_NAME.match(name) or name in (HOST_DIR,):
        raise EvidenceError("devices must be whole-disk kernel names such as sda or nvme0n1, got %r" % (name,))
    return name


def utc_stamp(moment: datetime.datetime) -> str:
    """ISO 8601 UTC with milliseconds: 2026-11-22T00:55:00.123Z."""
    moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def compact_stamp(moment: datetime.datetime) -> str:
    """YYYYmmddTHHMMSSZ in UTC, as bundle names carry it."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


# ---------------------------------------------------------------------------------------------
# what kind of disk, and what the kernel log says about it
# ---------------------------------------------------------------------------------------------

def disk_class(name: str, sysfs_vendor: Optional[str], scsi: bool) -> str:
    """``nvme``, ``ata`` (libata disks report vendor "ATA"), ``scsi`` (other SCSI disks) or ``other``."""
    if re.match(r"^nvme[0-9]+n[0-9]+$", name):
        return "nvme"
    if scsi and (sysfs_vendor or "").strip() == "ATA":
        return "ata"
    if scsi:
        return "scsi"
    return "other"


# ---------------------------------------------------------------------------------------------
# clock offset
# ---------------------------------------------------------------------------------------------

def _yes_no(value: Optional[bool]) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def ntp_sync_text(show: Mapping[str, Any]) -> str:
    """The clock-offset.txt line of ``timedatectl show``: synchronized or not, and by what."""
    synced, active = show.get("ntp_synchronized"), show.get("ntp")
    if synced and active:
        why = "by an NTP service systemd manages: systemd-timesyncd or one named in ntp-units.d"
    elif synced:
        why = "by an NTP client systemd does not manage: chronyd, ntpd or another"
    elif active:
        why = "an NTP service is active but has not synchronized the clock"
    elif show.get("can_ntp") is False:
        why = "no NTP service installed"
    else:
        why = "no NTP service active; one is installed" if show.get("can_ntp") else "no NTP service active"
    return "NTP synchronized: %s (%s); timedatectl show: NTPSynchronized=%s NTP=%s CanNTP=%s TimeUSec=%s\n" % (
        _yes_no(synced), why, _yes_no(synced), _yes_no(active), _yes_no(show.get("can_ntp")), show.get("time"))


def clock_offset_text(offset: Optional[Mapping[str, Any]], tried: Sequence[str]) -> str:
    """The clock-offset.txt line: the offset and where it came from, or unknown and why."""
    if offset is None:
        return "clock offset: unknown (%s)\n" % "; ".join(tried or ["no NTP client to ask"])
    return "clock offset: %+.9f s (%s; %s: %s)\n" % (offset["offset_s"], offset["meaning"], offset["source"],
                                                     offset["line"])


# ---------------------------------------------------------------------------------------------
# PCIe link
# ---------------------------------------------------------------------------------------------

def pcie_link(disk: str, device_link: Optional[str], read_text: Callable[[str], Optional[str]]) -> Dict[str, Any]:
    """Current against capable PCIe link of the PCI function above a disk (_pcie.py reads and judges it).

    ``device_link`` is the resolved ``/sys/block/<disk>/device`` (None when the disk has no device:
    loop, ram, zram, dm, md). A conventional-PCI function (a VM's virtio disk) has no link files.
    ``downgraded`` is true when the link trained below what both ends can do (speed or width; the upstream port's
    maximum counts when it is known: _pcie.degraded).
    """
    result: Dict[str, Any] = {"disk": disk, "device_path": device_link, "pci_function": None, "pci_path": None}
    result.update({name: None for name in PCIE_LINK_FILES})
    result.update(downgraded=None, note=None, upstream_port=None, upstream_max_link_speed=None,
                  upstream_max_link_width=None)
    if device_link is None:
        result["note"] = "no device behind /sys/block/%s: a virtual block device (loop, ram, zram, dm, md)" % disk
        return result
    function = find_pci_function(device_link)
    if function is None:
        result["note"] = "no PCI function above %s (a virtual or non-PCI device)" % device_link
        return result
    result["pci_function"] = posixpath.basename(function)
    result["pci_path"] = function
    result.update(link_texts(function, read_text))
    if all(result[name] is None for name in PCIE_LINK_FILES):
        result["note"] = "%s has no PCIe link attributes (conventional PCI, as a VM's virtio disk)" % result["pci_function"]
        return result
    port = upstream_port(function)
    port_texts = link_texts(port, read_text) if port else {"max_link_speed": None, "max_link_width": None}
    result.update(upstream_port=posixpath.basename(port) if port else None,
                  upstream_max_link_speed=port_texts["max_link_speed"],
                  upstream_max_link_width=port_texts["max_link_width"])
    port_values = link_values(port_texts) if port else {"max_speed_gts": None, "max_width": None}
    result["downgraded"] = degraded(link_values(result), port_values["max_speed_gts"], port_values["max_width"])
    if result["downgraded"] is None:
        result["note"] = "link speed or width unknown (device asleep or link down)"
    elif result["downgraded"]:
        result["note"] = "link trained below its capability: %s x%s of %s x%s" % (
            result["current_link_speed"], result["current_link_width"], result["max_link_speed"],
            result["max_link_width"])
        if port_texts["max_link_speed"] is not None or port_texts["max_link_width"] is not None:
            result["note"] += " (upstream port %s: up to %s x%s)" % (
                result["upstream_port"], port_texts["max_link_speed"], port_texts["max_link_width"])
    return result


# ---------------------------------------------------------------------------------------------
# the snapshot
# ---------------------------------------------------------------------------------------------

@dataclass
class HostIO:
    """What a snapshot needs from the host; the module gives the real thing, tests a temporary tree."""
    run: Runner                                           # argv -> (exit code, stdout, stderr); C locale, no shell;
    #                                                       TimeoutError when it was stopped at a time limit
    which: Callable[[str], Optional[str]]                 # tool name -> absolute path, None when not installed
    read: Callable[[str], Optional[bytes]]                # file -> bytes, None when missing or unreadable
    write: Callable[[str, bytes], None]                   # path relative to the evidence dir -> bytes written
    now: Callable[[], datetime.datetime]                  # aware UTC time
    device_link: Callable[[str], Optional[str]]           # disk -> resolved /sys/block/<disk>/device or None
    is_scsi: Callable[[str], bool]                        # disk -> it is a SCSI disk (sd driver: ATA or SCSI)
    sys_block: str = "/sys/block"


class _Snapshot:
    def __init__(self, host: HostIO, phase: str, devices: Sequence[str]) -> None:
        if phase not in PHASES:
            raise EvidenceError("phase must be one of %s, got %r" % (", ".join(PHASES), phase))
        if not devices:
            raise EvidenceError("devices is empty: name the whole disks to snapshot (e.g. [sdb])")
        self.host = host
        self.phase = phase
        self.devices = [check_disk_name(name) for name in devices]
        if len(set(self.devices)) != len(self.devices):
            raise EvidenceError("devices names a disk twice: %s" % ", ".join(self.devices))
        self.entries: List[Dict[str, Any]] = []
        self.files: List[str] = []
        self.problems: List[str] = []

    def path(self, *parts: str) -> str:
        return posixpath.join(self.phase, *parts)

    def save(self, relative: str, data: bytes) -> str:
        self.host.write(relative, data)
        self.files.append(relative)
        return relative

    def command(self, argv: List[str], output: Optional[str], disk: Optional[str] = None,
                keep: bool = True) -> Tuple[Optional[int], bytes]:
        """Run argv (its tool looked up first); write stdout to output; record it. (exit code or None, stdout)."""
        entry: Dict[str, Any] = {"argv": list(argv), "disk": disk, "output": None, "exit_code": None,
                                 "started": None, "finished": None, "stderr": "", "error": None}
        self.entries.append(entry)
        tool = self.host.which(argv[0])
        if tool is None:
            entry["error"] = "%s is not installed (not found in PATH or the sbin directories)" % argv[0]
            self.problems.append("%s: not installed" % argv[0])
            return None, b""
        entry["argv"] = [tool] + list(argv[1:])
        entry["started"] = utc_stamp(self.host.now())
        try:
            rc, stdout, stderr = self.host.run(entry["argv"])
        except TimeoutError as error:   # stopped at the module's time limit: the message says so
            entry["finished"] = utc_stamp(self.host.now())
            entry["error"] = str(error)
            self.problems.append(str(error))
            return None, b""
        except OSError as error:
            entry["finished"] = utc_stamp(self.host.now())
            entry["error"] = "cannot run: %s" % error
            self.problems.append("%s: cannot run: %s" % (shlex.join(argv), error))
            return None, b""
        entry["finished"] = utc_stamp(self.host.now())
        entry["exit_code"] = rc
        entry["stderr"] = stderr[:STDERR_LIMIT].decode("utf-8", "replace")
        if rc != 0:
            first = entry["stderr"].strip().splitlines()
            self.problems.append("%s: exit code %d%s" % (shlex.join(argv), rc, (": " + first[0]) if first else ""))
        if keep and output is not None:
            entry["output"] = self.save(output, stdout)
        return rc, stdout

    def read_values(self, disk: str, directory: str, names: Sequence[str], output: str) -> Dict[str, Any]:
        """Plain sysfs values as a JSON file (a missing file is null: not every kernel has every knob)."""
        started = utc_stamp(self.host.now())
        paths = [posixpath.join(directory, name) for name in names]
        values = {}
        for name, path in zip(names, paths):
            data = self.host.read(path)
            values[name] = data.decode("utf-8", "replace").strip() if data is not None else None
        document = {"directory": directory, "values": values}
        self.entries.append({"read": paths, "disk": disk, "output": self.save(output, _json_bytes(document)),
                             "started": started, "finished": utc_stamp(self.host.now()), "error": None})
        return document

    # -- per host ------------------------------------------------------------------------------

    def host_files(self) -> Dict[str, Any]:
        self.command(["uname", "-a"], self.path(HOST_DIR, "uname-a.txt"))
        started = utc_stamp(self.host.now())
        for source in ("/etc/os-release", "/usr/lib/os-release"):
            data = self.host.read(source)
            if data is not None:
                self.entries.append({"read": [source], "disk": None, "started": started,
                                     "output": self.save(self.path(HOST_DIR, "os-release.txt"), data),
                                     "finished": utc_stamp(self.host.now()), "error": None})
                break
        else:
            self.entries.append({"read": ["/etc/os-release", "/usr/lib/os-release"], "disk": None, "output": None,
                                 "started": started, "finished": utc_stamp(self.host.now()), "error": "not readable"})
        self.command(["date", "-u"], self.path(HOST_DIR, "date-u.txt"))
        clock = self.clock()
        for tool, argv in VERSION_COMMANDS:
            self.command(argv, self.path(HOST_DIR, "versions", tool + ".txt"))
        for argv in BONNIE_PACKAGE_COMMANDS:
            if self.host.which(argv[0]) is not None:
                self.command(argv, self.path(HOST_DIR, "versions", "bonnie++.txt"))
                break
        else:
            self.command(BONNIE_PACKAGE_COMMANDS[0], None)
        return clock

    def _why(self, rc: Optional[int], stdout: bytes) -> str:
        """Why the last command gave nothing: not installed, not runnable, or its exit code and first message."""
        entry = self.entries[-1]
        if entry["error"]:
            return entry["error"]
        message = (entry["stderr"] or stdout.decode("utf-8", "replace")).strip().splitlines()
        return "exit code %s%s" % (rc, ": " + message[0] if message else "")

    def clock(self) -> Dict[str, Any]:
        """chronyc tracking; else timedatectl show (NTP-synchronized, and by what) and timedatectl timesync-status
        (unless show says no NTP service is active: it would wait 25 s for a timesyncd that cannot answer).
        The offset or, written down, why it is unknown."""
        tried = []
        rc, stdout = self.command(["chronyc", "tracking"], self.path(HOST_DIR, "chronyc-tracking.txt"))
        text = stdout.decode("utf-8", "replace")
        offset = parse_chronyc_tracking(text) if rc == 0 else None
        show = None
        if offset is None:
            unsynchronised = chronyc_unsynchronised(text) if rc == 0 else None
            tried.append("chronyc tracking: %s" % (
                "not synchronised (%s), so its System time line is no measured offset" % unsynchronised
                if unsynchronised else "no offset in its output" if rc == 0 else self._why(rc, stdout)))
            rc, stdout = self.command(["timedatectl", "show"], self.path(HOST_DIR, "timedatectl-show.txt"))
            show = parse_timedatectl_show(stdout.decode("utf-8", "replace")) if rc == 0 else None
            if show is None:
                tried.append("timedatectl show: %s" % ("no NTP= or NTPSynchronized= in its output" if rc == 0
                                                       else self._why(rc, stdout)))
            if show is not None and show["ntp"] is False:
                tried.append("timedatectl timesync-status: not asked: timedatectl show says NTP=no (no NTP service is "
                             "active, so systemd-timesyncd cannot answer)")
            else:
                rc, stdout = self.command(["timedatectl", "timesync-status"],
                                          self.path(HOST_DIR, "timedatectl-timesync-status.txt"))
                offset = parse_timesync_status(stdout.decode("utf-8", "replace")) if rc == 0 else None
                if offset is None:
                    tried.append("timedatectl timesync-status: %s" % (
                        "no offset in its output" if rc == 0 else self._why(rc, stdout)))
        text = clock_offset_text(offset, tried) + (ntp_sync_text(show) if show is not None else "")
        self.save(self.path(HOST_DIR, "clock-offset.txt"), text.encode("utf-8"))
        return {"offset": offset, "ntp": show, "text": text.strip()}

    def kernel_log(self) -> Dict[str, Any]:
        """dmesg; else the journal's kernel messages of this boot; the log as dmesg text (each disk keeps the lines
        naming it) and where it came from or, written down, why there is none. Never silently missing."""
        disk_files = [self.path(disk, "dmesg.txt") for disk in self.devices]
        rc, stdout = self.command(["dmesg"], None, keep=False)
        if rc == 0:
            text = stdout.decode("utf-8", "replace")
            self.entries[-1]["output"] = disk_files
            self.entries[-1]["note"] = "filtered per disk: only the lines naming the disk, its partitions or controller"
            summary = "kernel log: `dmesg` (exit code 0, %d lines); each disk's dmesg.txt holds the lines naming it" % (
                len(text.splitlines()))
            return self._kernel_log_found("dmesg", text, summary)
        refused = "dmesg: %s" % self._why(rc, stdout)
        # Only each disk's own lines are kept, as on the dmesg path: the journal's other messages (other devices,
        # the kernel command line and its secrets, firewall lines with addresses) and its metadata (_MACHINE_ID,
        # _HOSTNAME, _BOOT_ID, cursors) stay on the host.
        rc, stdout = self.command(JOURNAL_KERNEL_ARGV, None, keep=False)
        entry = self.entries[-1]
        journal = shlex.join(JOURNAL_KERNEL_ARGV)
        if rc == 0:
            text, count = journal_kernel_text(stdout.decode("utf-8", "replace"))
            if count:
                entry["output"] = disk_files
                entry["note"] = ("asked because dmesg was refused; filtered per disk by the dmesg rule: only the "
                                 "messages naming the disk, its partitions or controller, as dmesg prints them (the "
                                 "journal's other messages and its metadata are not kept)")
                newest = " (the newest %d only)" % count if count >= JOURNAL_KERNEL_LINES else ""
                summary = ("kernel log: the journal (`%s`: %d kernel messages of this boot%s), because %s; each "
                           "disk's dmesg.txt holds the messages naming it, as dmesg prints them"
                           % (journal, count, newest, refused))
                return self._kernel_log_found("journal", text, summary)
            why = ("no kernel message of this boot in the journal (journald reads them from /dev/kmsg, which needs "
                   "CAP_SYSLOG when kernel.dmesg_restrict=1: a container's journald often has neither the device nor "
                   "the capability; or ReadKMsg=no)")
            self.problems.append("%s: %s" % (journal, why))
        else:
            why = self._why(rc, stdout)
        summary = "kernel log: none (%s; %s: %s)" % (refused, journal, why)
        self.save(self.path(HOST_DIR, "kernel-log.txt"), (summary + "\n").encode("utf-8"))
        return {"source": None, "text": None, "summary": summary}

    def _kernel_log_found(self, source: str, text: str, summary: str) -> Dict[str, Any]:
        self.save(self.path(HOST_DIR, "kernel-log.txt"), (summary + "\n").encode("utf-8"))
        return {"source": source, "text": text, "summary": summary}

    # -- per disk ------------------------------------------------------------------------------

    def disk_files(self, disk: str, kernel_log: Optional[str]) -> None:
        node = "/dev/" + disk
        sysfs = posixpath.join(self.host.sys_block, disk)
        vendor = self.host.read(posixpath.join(sysfs, "device", "vendor"))
        kind = disk_class(disk, vendor.decode("ascii", "replace") if vendor else None, self.host.is_scsi(disk))
        self.command(["smartctl", "-x", node], self.path(disk, "smartctl-x.txt"), disk)
        self.command(["smartctl", "-x", "-j", node], self.path(disk, "smartctl-x.json"), disk)
        if kind == "nvme":
            self.command(["nvme", "id-ctrl", node, "-o", "json"], self.path(disk, "nvme-id-ctrl.json"), disk)
            self.command(["nvme", "smart-log", node, "-o", "json"], self.path(disk, "nvme-smart-log.json"), disk)
        self.command(["lsblk", "-J", "-b", "-O", node], self.path(disk, "lsblk.json"), disk)
        self.command(["udevadm", "info", "--query=all", "--name=" + node], self.path(disk, "udevadm-info.txt"), disk)
        if kind == "ata":
            self.command(["hdparm", "-W", node], self.path(disk, "hdparm-W.txt"), disk)
        elif kind == "scsi":
            self.command(["sdparm", "--get=WCE", node], self.path(disk, "sdparm-WCE.txt"), disk)
        self.read_values(disk, posixpath.join(sysfs, "queue"), QUEUE_FILES, self.path(disk, "queue.json"))
        started = utc_stamp(self.host.now())
        link = pcie_link(disk, self.host.device_link(disk), self._read_text)
        self.entries.append({"read": [posixpath.join(sysfs, "device")] + (
            [posixpath.join(link["pci_path"], name) for name in PCIE_LINK_FILES] if link["pci_path"] else []) + (
            [posixpath.join(posixpath.dirname(link["pci_path"]), name) for name in ("max_link_speed", "max_link_width")]
            if link["upstream_port"] else []),
            "disk": disk, "output": self.save(self.path(disk, "pcie-link.json"), _json_bytes(link)),
            "started": started, "finished": utc_stamp(self.host.now()), "error": None})
        if kernel_log is not None:
            lines = dmesg_lines(kernel_log, disk)
            self.save(self.path(disk, "dmesg.txt"), "".join(line + "\n" for line in lines).encode("utf-8"))

    def _read_text(self, path: str) -> Optional[str]:
        data = self.host.read(path)
        return data.decode("utf-8", "replace") if data is not None else None

    def take(self) -> Dict[str, Any]:
        started = utc_stamp(self.host.now())
        clock = self.host_files()
        kernel_log = self.kernel_log()
        for disk in self.devices:
            self.disk_files(disk, kernel_log["text"])
        document = {"schema": SCHEMA, "kind": "diskproof-evidence-commands", "phase": self.phase,
                    "devices": self.devices, "started": started, "finished": utc_stamp(self.host.now()),
                    "environment": {"LC_ALL": "C", "LANG": "C"}, "shell": False, "clock": clock,
                    "kernel_log": {"source": kernel_log["source"], "text": kernel_log["summary"]},
                    "commands": self.entries}
        self.save(self.path(COMMANDS_FILE), _json_bytes(document))
        return {"phase": self.phase, "devices": self.devices, "files": list(self.files), "problems": list(self.problems),
                "clock": clock["text"], "kernel_log": kernel_log["summary"], "commands_file": self.path(COMMANDS_FILE)}


def take_snapshot(host: HostIO, phase: str, devices: Sequence[str]) -> Dict[str, Any]:
    """Snapshot the host and each disk into <phase>/ of the evidence dir (through host.write)."""
    return _Snapshot(host, phase, devices).take()


def planned_commands(devices: Sequence[str]) -> List[str]:
    """What a snapshot would run, for check mode (tool names unresolved, disk kinds unknown)."""
    names = [check_disk_name(name) for name in devices]
    lines = ["uname -a", "date -u", "chronyc tracking (else timedatectl show, then timedatectl timesync-status unless "
             "NTP=no)", "dmesg (else %s)" % shlex.join(JOURNAL_KERNEL_ARGV)]
    lines += [shlex.join(argv) for _tool, argv in VERSION_COMMANDS] + ["dpkg-query -W bonnie++ (else rpm -q bonnie++)"]
    for disk in names:
        node = "/dev/" + disk
        lines += ["smartctl -x %s" % node, "smartctl -x -j %s" % node, "lsblk -J -b -O %s" % node,
                  "udevadm info --query=all --name=%s" % node,
                  "nvme id-ctrl / smart-log (NVMe), hdparm -W (ATA) or sdparm --get=WCE (SCSI) on %s" % node]
    return lines


# ---------------------------------------------------------------------------------------------
# the bundle
# ---------------------------------------------------------------------------------------------

def _json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def safe_component(name: str) -> str:
    """A file name made of [A-Za-z0-9._+-] (anything else becomes _), never hidden, never empty."""
    cleaned = _UNSAFE_CHARS.sub("_", name) or "_"
    return "_" + cleaned if cleaned.startswith((".", "-")) else cleaned


def check_member_name(name: str) -> str:
    """A relative member name of safe components: no absolute path, no '..', nothing sha256sum escapes."""
    parts = name.split("/")
    if name.startswith("/") or any(part in ("", ".", "..") or safe_component(part) != part for part in parts):
        raise EvidenceError("unsafe bundle member name %r" % name)
    return name


def bundle_stem(serial: Optional[str], disk: str, created: datetime.datetime) -> str:
    """<serial or disk name>-<UTC YYYYmmddTHHMMSSZ>; a serial is made file-name safe."""
    label = safe_component(serial.strip()) if serial and serial.strip() else check_disk_name(disk)
    return "%s-%s" % (label, compact_stamp(created))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_text(files: Iterable[Tuple[str, bytes]]) -> str:
    """``sha256sum -c`` input: '<sha256>  <relative path>' per file, sorted by path."""
    lines = []
    for name, data in sorted(files, key=lambda item: item[0]):
        lines.append("%s  %s\n" % (sha256_hex(data), check_member_name(name)))
    return "".join(lines)


def parse_manifest(text: str) -> Dict[str, str]:
    """{path: sha256} of a manifest in ``sha256sum`` format (two spaces or ' *' between)."""
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"^([0-9a-f]{64}) [ *](.+)$", line)
        if match is None:
            raise EvidenceError("manifest line %d is not '<sha256>  <path>': %r" % (number, line))
        found[match.group(2)] = match.group(1)
    return found


def records_for_disk(records: Sequence[Mapping[str, Any]], disk: str) -> List[Dict[str, Any]]:
    """The benchmark records measured on a disk (its kernel name is the target's device or one of its disks)."""
    found = []
    for record in records:
        target = record.get("target") if isinstance(record, Mapping) else None
        if not isinstance(target, Mapping):
            continue
        disks = target.get("disks") if isinstance(target.get("disks"), list) else []
        if target.get("device") == disk or disk in disks:
            found.append(dict(record))
    return found


def raw_dirs_of(records: Sequence[Mapping[str, Any]]) -> List[str]:
    """Directories holding the records' raw outputs (``raw_files``), in first-seen order."""
    dirs: List[str] = []
    for record in records:
        for path in record.get("raw_files") or []:
            directory = posixpath.dirname(str(path))
            if directory and directory not in dirs:
                dirs.append(directory)
    return dirs


IDENTITY_KEYS = ("name", "path", "model", "vendor", "serial", "wwn", "firmware", "transport", "size_bytes",
                 "rotational", "logical_block_size", "physical_block_size", "health")


def disk_identity(disk: str, facts: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Identity of a disk from the discover facts (``diskproof_disks[disk]``); unknown keys are null."""
    facts = facts if isinstance(facts, Mapping) else {}
    identity = {key: facts.get(key) for key in IDENTITY_KEYS}
    identity["name"] = disk
    return identity


@dataclass
class Member:
    """One file of a bundle: its name below the bundle's top directory, and its bytes."""
    name: str
    data: bytes
    source: Optional[str] = None   # where it came from on the host (None: written by the pack)


@dataclass
class BundleInput:
    """Everything one disk's bundle is made of."""
    evidence_dir: str
    disk: str
    identity: Dict[str, Any]
    records: List[Dict[str, Any]]
    quiesce: Mapping[str, Any]
    raw_dirs: List[str]
    created: datetime.datetime
    host_name: str
    host_facts: Mapping[str, Any] = field(default_factory=dict)
    extra_files: List[str] = field(default_factory=list)


def _read_file(path: str) -> Optional[bytes]:
    """A regular file's bytes (symlinks and anything else are not followed into the bundle)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    with open(path, "rb") as handle:
        return handle.read()


def _tree_files(root: str) -> List[Tuple[str, str]]:
    """(relative path, absolute path) of every regular file under root, sorted; [] when root is missing."""
    found = []
    for current, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(current, name)
            found.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    return sorted(found)


def _filtered_commands(data: bytes, disk: str) -> bytes:
    """A phase's commands.json keeping the host's commands and this disk's (the bundle holds no other disk)."""
    document = json.loads(data.decode("utf-8"))
    kept = []
    for entry in document.get("commands", []):
        if entry.get("disk") not in (None, disk):
            continue
        if isinstance(entry.get("output"), list):
            # Per-disk outputs of a host command (the kernel log): this disk's, and the host's own raw output.
            kept_dirs = ([disk], [HOST_DIR])
            entry = dict(entry, output=[path for path in entry["output"] if path.split("/")[1:2] in kept_dirs])
        kept.append(entry)
    document["commands"] = kept
    document["devices"] = [disk]
    return _json_bytes(document)


def collect_members(given: BundleInput) -> Tuple[List[Member], Dict[str, str]]:
    """Every file of one disk's bundle except README.md and MANIFEST.sha256, and {host path: member name}.

    EvidenceError when a snapshot of the disk is missing (the bundle would prove nothing about it)."""
    members: List[Member] = []
    where: Dict[str, str] = {}
    for phase in PHASES:
        phase_dir = os.path.join(given.evidence_dir, phase)
        disk_dir = os.path.join(phase_dir, given.disk)
        if not os.path.isdir(disk_dir):
            raise EvidenceError("no %s snapshot of %s in %s: run state=snapshot phase=%s first"
                                % (phase, given.disk, given.evidence_dir, phase))
        for sub in (HOST_DIR, given.disk):
            for relative, path in _tree_files(os.path.join(phase_dir, sub)):
                data = _read_file(path)
                if data is not None:
                    name = "/".join([phase, sub] + [safe_component(part) for part in relative.split("/")])
                    members.append(Member(name, data, path))
        commands = _read_file(os.path.join(phase_dir, COMMANDS_FILE))
        if commands is not None:
            members.append(Member(phase + "/" + COMMANDS_FILE, _filtered_commands(commands, given.disk),
                                  os.path.join(phase_dir, COMMANDS_FILE)))
    used = set()
    for directory in given.raw_dirs:
        label = safe_component(posixpath.basename(directory.rstrip("/")) or "raw")
        base, number = label, 2
        while label in used:
            label, number = "%s_%d" % (base, number), number + 1
        used.add(label)
        for relative, path in _tree_files(directory):
            data = _read_file(path)
            if data is not None:
                name = "/".join(["raw", label] + [safe_component(part) for part in relative.split("/")])
                members.append(Member(name, data, path))
                where[path] = name
    extra_names = set()
    for path in given.extra_files:
        data = _read_file(path)
        if data is None:
            raise EvidenceError("extra file %s is not a readable regular file" % path)
        name = "extra/" + safe_component(os.path.basename(path))
        if name in extra_names:
            raise EvidenceError("two extra files are both named %s in the bundle: rename one" % name)
        extra_names.add(name)
        members.append(Member(name, data, path))
    members.append(Member(RESULTS_NAME, _json_bytes({
        "schema": SCHEMA, "kind": "diskproof-evidence-results", "host": given.host_name, "disk": given.identity,
        "records": given.records})))
    members.append(Member(QUIESCE_NAME, _json_bytes(dict(given.quiesce or {}))))
    return members, where


def _snapshot_summary(members: Sequence[Member]) -> Dict[str, Dict[str, Any]]:
    """Per phase: the commands document of the bundle (already filtered to the disk)."""
    found = {}
    for member in members:
        parts = member.name.split("/")
        if len(parts) == 2 and parts[0] in PHASES and parts[1] == COMMANDS_FILE:
            found[parts[0]] = json.loads(member.data.decode("utf-8"))
    return found


def build_bundle(given: BundleInput, taken: Iterable[str] = ()) -> Tuple[str, List[Member]]:
    """(stem, every member in tar order, README and manifest included) for one disk.

    A stem in ``taken`` (two disks with one serial: paths of one multipath disk) gets the disk name too."""
    stem = bundle_stem(given.identity.get("serial"), given.disk, given.created)
    if stem in set(taken):
        stem = bundle_stem("%s-%s" % (given.identity.get("serial") or "", given.disk), given.disk, given.created)
    members, where = collect_members(given)
    names = [member.name for member in members]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise EvidenceError("two files would share a name in the bundle: %s" % ", ".join(duplicates))
    readme = render_readme(ReadmeContext(
        bundle=stem + ".tar.gz", disk=given.disk, identity=given.identity, host_name=given.host_name,
        host_facts=given.host_facts, created=given.created, records=given.records, quiesce=given.quiesce,
        raw_members=where, members=sorted(names + [README_NAME, MANIFEST_NAME]),
        snapshots=_snapshot_summary(members)))
    members.append(Member(README_NAME, readme.encode("utf-8")))
    manifest = manifest_text((member.name, member.data) for member in members)
    members.append(Member(MANIFEST_NAME, manifest.encode("utf-8")))
    for member in members:
        check_member_name(member.name)
    return stem, sorted(members, key=lambda member: member.name)


def tar_bytes(stem: str, members: Sequence[Member], created: datetime.datetime) -> bytes:
    """The .tar.gz of the members below the directory <stem>/: sorted, root-owned, fixed modes and time."""
    mtime = int(created.timestamp())
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=mtime) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
            directories = set()
            for member in sorted(members, key=lambda item: item.name):
                parts = check_member_name(member.name).split("/")
                for depth in range(0, len(parts)):
                    directory = "/".join([stem] + parts[:depth])
                    if directory not in directories:
                        directories.add(directory)
                        archive.addfile(_tar_info(directory, tarfile.DIRTYPE, 0o755, 0, mtime))
                info = _tar_info("/".join([stem] + parts), tarfile.REGTYPE, 0o644, len(member.data), mtime)
                archive.addfile(info, io.BytesIO(member.data))
    return buffer.getvalue()


def _tar_info(name: str, kind: bytes, mode: int, size: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


# ---------------------------------------------------------------------------------------------
# README.md for the vendor's engineer
# ---------------------------------------------------------------------------------------------

@dataclass
class ReadmeContext:
    bundle: str
    disk: str
    identity: Mapping[str, Any]
    host_name: str
    host_facts: Mapping[str, Any]
    created: datetime.datetime
    records: Sequence[Mapping[str, Any]]
    quiesce: Mapping[str, Any]
    raw_members: Mapping[str, str]          # host path of a raw output -> member name
    members: Sequence[str]
    snapshots: Mapping[str, Mapping[str, Any]]


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def format_bytes(value: Any) -> str:
    """'67,108,864 B (64.0 MiB)'; 'unknown' for nothing."""
    number = _num(value)
    if number is None:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(number) >= scale:
            return "{:,.0f} B ({:.1f} {})".format(number, number / scale, unit)
    return "{:,.0f} B".format(number)


def format_rate(value: Any) -> str:
    """'52.43 MB/s (50.00 MiB/s)' from bytes per second."""
    number = _num(value)
    if number is None:
        return "-"
    return "%.2f MB/s (%.2f MiB/s)" % (number / MB, number / MIB)


def _figure(name: str, value: Any) -> str:
    number = _num(value)
    if name == "bytes_per_s":
        return format_rate(number)
    if name == "iops":
        return "-" if number is None else "%.1f IOPS" % number
    return "-" if number is None else "%.6g" % number


def record_figures(record: Mapping[str, Any]) -> List[str]:
    """Every figure of a record, labelled with its unit (bonnie++ figures with bonnie++'s names)."""
    metrics = record.get("metrics") if isinstance(record.get("metrics"), Mapping) else {}
    bonnie = record.get("tool") == "bonnie"
    labels = (("write_bytes_per_s", "block write" if bonnie else "write"),
              ("read_bytes_per_s", "block read" if bonnie else "read"),
              ("read_iops", "random seeks" if bonnie else "read"), ("write_iops", "write"),
              ("fsyncs_per_s", "fsyncs"))
    figures = []
    for key, label in labels:
        value = _num(metrics.get(key))
        if value is None:
            continue
        if key.endswith("bytes_per_s"):
            figures.append("%s %s" % (label, format_rate(value)))
        elif key == "fsyncs_per_s":
            figures.append("%.1f fsyncs/s" % value)
        else:
            figures.append("%s %.1f %s" % (label, value, "seeks/s" if bonnie else "IOPS"))
    latency = metrics.get("latency_ns") if isinstance(metrics.get("latency_ns"), Mapping) else {}
    for direction in ("read", "write"):
        found = latency.get(direction)
        if isinstance(found, Mapping) and _num(found.get("p99")) is not None:
            figures.append("%s latency p99 %.3f ms" % (direction, found["p99"] / 1e6))
        elif isinstance(found, Mapping) and _num(found.get("max")) is not None:
            figures.append("%s latency max %.3f ms" % (direction, found["max"] / 1e6))
    return figures


def _command_text(argv: Any) -> str:
    if isinstance(argv, list) and all(isinstance(part, str) for part in argv):
        return shlex.join(argv)
    return "(not recorded)"


def _samples_text(record: Mapping[str, Any]) -> str:
    metric = primary_metric(record)
    samples = record.get("samples")
    unit = metric["name"] if metric else "bytes_per_s"
    seeks = record.get("tool") == "bonnie" and unit == "iops"

    def show(value: Any) -> str:
        return "-" if _num(value) is None else "%.1f seeks/s" % value if seeks else _figure(unit, value)
    if not isinstance(samples, list) or not samples:
        runs = record.get("runs")
        return "%s (per-run figures not recorded)" % ("%s runs" % runs if runs else "1 run, not repeated")
    if len(samples) == 1:
        return "1 run: %s" % show(samples[0])
    cv = _num(record.get("cv"))
    shown = ", ".join(show(sample) for sample in samples)
    kept = show(metric["value"]) if metric else "-"
    spread = "%.2f %%" % (cv * 100) if cv is not None else "n/a"
    return "%d runs, the figure of each in run order: %s; kept: the run with the median figure (%s); coefficient of " \
           "variation %s" % (len(samples), shown, kept, spread)


def _device_io_text(record: Mapping[str, Any]) -> str:
    device_io = record.get("device_io")
    target = record.get("target") if isinstance(record.get("target"), Mapping) else {}
    device = target.get("device") or "?"
    if not isinstance(device_io, Mapping):
        return "device counters: not recorded"
    read, written = device_io.get("read_bytes"), device_io.get("write_bytes")
    claimed = _num(record.get("bytes"))
    text = ("what reached the disk (/sys/block/%s/stat, sectors x 512, read right before and after the run): "
            "%s read, %s written" % (device, format_bytes(read), format_bytes(written)))
    moved = None
    metrics = record.get("metrics") if isinstance(record.get("metrics"), Mapping) else {}
    writes = _num(metrics.get("write_bytes_per_s")) is not None or _num(metrics.get("write_iops")) is not None
    reads = _num(metrics.get("read_bytes_per_s")) is not None or _num(metrics.get("read_iops")) is not None
    if writes and not reads:
        moved = _num(written)
    elif reads and not writes:
        moved = _num(read)
    elif reads and writes and _num(read) is not None and _num(written) is not None:
        moved = _num(read) + _num(written)
    if claimed and moved is not None:
        text += " = %.1f %% of the %s the tool reports" % (100.0 * moved / claimed, format_bytes(claimed))
        if moved > claimed * 1.05 and re.search(r"(?m)^ramp_time=[1-9]", str(record.get("job_file") or "")):
            text += " (the counters also saw the I/O of fio's ramp_time, which fio does not count)"
    reason, note = cache_bypass(record)
    if reason:
        text += ". NOT PROVEN: " + reason
    elif note:
        text += ". " + note
    return text


def _params_text(record: Mapping[str, Any]) -> str:
    params = record.get("params") if isinstance(record.get("params"), Mapping) else {}
    parts = ["block size %s" % format_bytes(params.get("block_size")), "size %s" % format_bytes(params.get("size_bytes"))]
    if params.get("direct") is not None:
        parts.append("direct I/O (O_DIRECT, no page cache)" if params.get("direct") else "buffered (page cache)")
    if params.get("sync"):
        parts.append("%s before the end" % params["sync"] if record.get("tool") == "dd" else "sync: %s" % params["sync"])
    if params.get("iodepth") not in (None, 1) or record.get("tool") == "fio":
        parts.append("queue depth %s" % params.get("iodepth"))
    if params.get("runtime_s"):
        parts.append("%s s per run" % params["runtime_s"])
    return ", ".join(parts)


def _record_section(record: Mapping[str, Any], raw_members: Mapping[str, str]) -> List[str]:
    tool = record.get("tool") or "?"
    version = record.get("tool_version")
    tool_name = "bonnie++" if tool == "bonnie" else tool
    lines = ["### %s" % record.get("test"), ""]
    figures = record_figures(record)
    lines.append("- Result: %s" % ("; ".join(figures) if figures else "no figure"))
    if record.get("error"):
        lines.append("- ERROR: %s" % record["error"])
    lines.append("- Tool: %s %s" % (tool_name, version or "(version not reported)"))
    lines.append("- Exact command (argument list, no shell, LC_ALL=C; exit code %s): `%s`"
                 % (record.get("exit_code"), _command_text(record.get("command"))))
    for label, key in (("setup", "setup_commands"), ("cleanup", "cleanup_commands")):
        for argv in record.get(key) or []:
            lines.append("- %s command: `%s`" % (label.capitalize(), _command_text(argv)))
    raw = [raw_members[path] for path in record.get("raw_files") or [] if path in raw_members]
    job = [name for name in raw if name.endswith(".fio")]
    if record.get("job_file"):
        lines.append("- fio job file (the last argument above is a temporary copy of it): %s; its text is also "
                     "`job_file` in results.json" % (", ".join("`%s`" % name for name in job) or "not kept"))
    lines.append("- Parameters: %s" % _params_text(record))
    lines.append("- Runs: %s" % _samples_text(record))
    lines.append("- Proof: %s" % _device_io_text(record))
    fence = record.get("cache_fence")
    if isinstance(fence, Mapping) and fence.get("bytes"):
        lines.append("- Page cache bounded: the run was made in a memory cgroup (v%s) of %s; its peak was %s"
                     % (fence.get("version"), format_bytes(fence.get("bytes")), format_bytes(fence.get("peak_bytes"))))
    target = record.get("target") if isinstance(record.get("target"), Mapping) else {}
    lines.append("- Target: directory %s, %sdevice %s" % (
        target.get("path") or "?", "test file %s, " % target["test_file"] if target.get("test_file") and tool != "bonnie"
        else "", target.get("device") or "?"))
    lines.append("- Time (UTC): %s to %s" % (record.get("started") or "?", record.get("finished") or "?"))
    others = [name for name in raw if not name.endswith(".fio")]
    if others:
        lines.append("- Raw output of every run: %s" % ", ".join("`%s`" % name for name in others))
    if record.get("raw_sha256"):
        lines.append("- sha256 of the raw output the figures were parsed from (the kept run): `%s`" % record["raw_sha256"])
    for warning in record.get("warnings") or []:
        lines.append("- Warning: %s" % warning)
    lines.append("")
    return lines


def _pick(records: Sequence[Mapping[str, Any]], test: str) -> Optional[Mapping[str, Any]]:
    for record in records:
        if record.get("test") == test and isinstance(record.get("command"), list):
            return record
    return None


def _reproduce_section(records: Sequence[Mapping[str, Any]], host_name: str,
                       host_facts: Mapping[str, Any]) -> List[str]:
    write = _pick(records, "dd_seq_write")
    read = _pick(records, "dd_seq_read")
    bonnie = _pick(records, "bonnie")
    lines = ["## Reproduce the key figures with plain dd and bonnie++", ""]
    if not (write or read or bonnie):
        return lines + ["No dd or bonnie++ record is part of this bundle (run the `evidence` profile to get them).", ""]
    reference = write or read or bonnie
    target = reference.get("target") if isinstance(reference.get("target"), Mapping) else {}
    test_file = target.get("test_file")
    # Only a run directory the benchmark created (diskproof-<run id>) is made and removed again;
    # an older record's test file sat right in the target directory, which must stay.
    run_dir = posixpath.dirname(test_file) if test_file else None
    if run_dir and not posixpath.basename(run_dir).startswith("diskproof-"):
        run_dir = None
    lines += ["As root on %s, on the same filesystem, with nothing else using the disk (this run stopped cron and "
              "the like first and waited for an idle window: quiesce.json). These are the exact argument lists the "
              "figures above came from%s." % (host_name, "; the run directory %s did not exist before the run and was "
                                              "removed after it" % run_dir if run_dir else ""), "", "```sh"]
    if run_dir:
        lines.append("mkdir %s" % shlex.quote(run_dir))
    if write:
        lines.append("# dd_seq_write, measured %s; creates the test file %s" % (
            "; ".join(record_figures(write)) or "-", test_file or "?"))
        lines.append(_command_text(write["command"]))
    if read:
        lines.append("sync; echo 3 > /proc/sys/vm/drop_caches     # empty the page cache before reading")
        lines.append("# dd_seq_read, measured %s (reads the file the write made)" % ("; ".join(record_figures(read)) or "-"))
        lines.append(_command_text(read["command"]))
    if bonnie:
        argv = bonnie["command"]
        directory = argv[argv.index("-d") + 1] if "-d" in argv[:-1] else None
        user = argv[argv.index("-u") + 1] if "-u" in argv[:-1] else None
        if directory:
            lines.append("mkdir %s%s" % (shlex.quote(directory),
                                         "; chown %s %s" % (shlex.quote(user), shlex.quote(directory)) if user else ""))
        lines.append("# bonnie, measured %s" % ("; ".join(record_figures(bonnie)) or "-"))
        lines.append(_command_text(argv))
    if run_dir:
        lines.append("rm -r %s" % shlex.quote(run_dir))
    elif test_file and (write or read):
        lines.append("rm %s" % shlex.quote(test_file))
    lines += ["```", ""]
    fences = [record for record in (write, read, bonnie)
              if record and isinstance(record.get("cache_fence"), Mapping) and record["cache_fence"].get("bytes")]
    if fences:
        fence_bytes = fences[0]["cache_fence"]["bytes"]
        text = ("The buffered runs (dd conv=fdatasync, bonnie++) ran in a memory cgroup that capped the page cache at "
                "%s, and the files are twice that, so the cache could hold at most half of them. Outside such a "
                "cgroup the host's whole memory is page cache: " % format_bytes(fence_bytes))
        memory = _num(host_facts.get("memory_bytes")) if isinstance(host_facts, Mapping) else None
        params = write.get("params") if write and isinstance(write.get("params"), Mapping) else {}
        block = _num(params.get("block_size"))
        if memory and block:
            text += ("to reproduce without it, write at least twice the host's memory (%s): count=%d with bs=%d."
                     % (format_bytes(memory), math.ceil(2 * memory / block), int(block)))
        else:
            text += "to reproduce without it, make the file at least twice the host's memory."
        lines += [text, ""]
    lines += ["dd prints the bytes and seconds it measured on its last line; the figures above are bytes / seconds "
              "from that line (MB/s = 10^6 B/s, MiB/s = 2^20 B/s), not dd's rounded rate.", ""]
    return lines


def _identity_rows(identity: Mapping[str, Any], host_name: str, host_facts: Mapping[str, Any]) -> List[str]:
    def show(value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        return "unknown" if value is None or value == "" else str(value)
    distribution = host_facts.get("distribution") if isinstance(host_facts.get("distribution"), Mapping) else {}
    rows = [("Host", host_name), ("Kernel name", identity.get("name")), ("Model", identity.get("model")),
            ("Vendor", identity.get("vendor")), ("Serial", identity.get("serial")), ("WWN", identity.get("wwn")),
            ("Firmware", identity.get("firmware")), ("Transport", identity.get("transport")),
            ("Capacity", format_bytes(identity.get("size_bytes")) if identity.get("size_bytes") is not None else None),
            ("Rotational", identity.get("rotational")),
            ("Logical / physical block size",
             "%s / %s" % (show(identity.get("logical_block_size")), show(identity.get("physical_block_size")))),
            ("SMART health (at discovery)", identity.get("health")),
            ("Kernel", host_facts.get("kernel")), ("OS", distribution.get("pretty_name")),
            ("Memory (the figure tests were sized by)",
             format_bytes(host_facts.get("memory_bytes")) if host_facts.get("memory_bytes") else None)]
    return ["| | |", "|---|---|"] + ["| %s | %s |" % (label, show(value)) for label, value in rows]


def _quiesce_lines(quiesce: Mapping[str, Any]) -> List[str]:
    if not quiesce:
        return ["No quiesce readings were given (quiesce.json is empty).", ""]
    idle = quiesce.get("idle") if isinstance(quiesce.get("idle"), Mapping) else {}
    stopped = quiesce.get("stopped") or []
    lines = ["Before measuring, the host was quiesced (run %s): %s stopped; page cache %s; idle window %s after "
             "%s s (thresholds: %s). Every sample is in quiesce.json." % (
                 quiesce.get("run_id") or "?", ", ".join(stopped) if stopped else "no service needed to be",
                 "dropped" if quiesce.get("caches_dropped") else "not dropped",
                 "reached" if idle.get("reached") else "NOT reached", idle.get("waited_s", "?"),
                 json.dumps(idle.get("thresholds"), sort_keys=True) if idle.get("thresholds") else "?"), ""]
    return lines


def _snapshot_lines(snapshots: Mapping[str, Mapping[str, Any]]) -> List[str]:
    lines = []
    for phase in PHASES:
        document = snapshots.get(phase)
        if not document:
            lines.append("- %s: missing" % phase)
            continue
        failed = []
        for entry in document.get("commands", []):
            if entry.get("argv") is None:
                continue
            name = posixpath.basename(entry["argv"][0])
            if entry.get("error"):
                failed.append("%s (%s)" % (name, entry["error"]))
            elif entry.get("exit_code") not in (0, None):
                failed.append("`%s` exit code %s" % (" ".join([name] + entry["argv"][1:]), entry["exit_code"]))
        lines.append("- %s (%s to %s UTC): %d commands; %s" % (
            phase, document.get("started"), document.get("finished"), len(document.get("commands", [])),
            "not available or non-zero exit, kept as found: " + "; ".join(failed) if failed else "all exited 0"))
        for key in ("clock", "kernel_log"):
            found = document.get(key) if isinstance(document.get(key), Mapping) else {}
            lines.extend("  - %s" % line for line in str(found.get("text") or "").splitlines())
    return lines + [""]


def _describe(name: str) -> str:
    parts = name.split("/")
    if name == README_NAME:
        return "this file"
    if name == MANIFEST_NAME:
        return "sha256 of every other file (`sha256sum -c MANIFEST.sha256`)"
    if name == RESULTS_NAME:
        return "the result records of this disk: every figure, exact command, run, sample and device counter"
    if name == QUIESCE_NAME:
        return "what was stopped before measuring, and every idle-window reading"
    if parts[0] == "raw":
        return "fio job file as run" if name.endswith(".fio") else "raw tool output, exactly as captured"
    if parts[0] == "extra":
        return "supplied with the run"
    if parts[0] in PHASES and len(parts) > 2 and parts[1] == HOST_DIR and parts[2] == "versions":
        return "tool version (`%s`)" % parts[-1][:-4]
    return FILE_DESCRIPTIONS.get(parts[-1], "")


def render_readme(context: ReadmeContext) -> str:
    """README.md of one disk's bundle, for the engineer on the other side of the dispute."""
    identity = context.identity
    title = identity.get("model") or "disk"
    lines = ["# Disk performance evidence: %s, serial %s" % (title, identity.get("serial") or "unknown"), "",
             "Bundle `%s`, written %s UTC on %s. Disk `%s`." % (
                 context.bundle, context.created.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
                 context.host_name, context.disk), "",
             "## Check it first", "",
             "```sh",
             "tar -xzf %s && cd %s" % (context.bundle, context.bundle[:-len(".tar.gz")]),
             "sha256sum -c MANIFEST.sha256          # every file, as written on the host",
             "gpg --verify %s.asc %s   # when the bundle came with a signature" % (context.bundle, context.bundle),
             "```", "",
             "## The disk", ""]
    lines += _identity_rows(identity, context.host_name, context.host_facts) + [""]
    lines += ["Identity and health are also in the snapshots taken right before and right after the measurements "
              "(`before/%s/`, `after/%s/`): compare smartctl's error counters and logs between the two." % (
                  context.disk, context.disk), ""]
    lines += ["## Results", "", "| test | tool | figures | runs | CV |", "|---|---|---|---|---|"]
    for record in context.records:
        cv = _num(record.get("cv"))
        lines.append("| %s | %s | %s | %s | %s |" % (
            record.get("test"), "bonnie++" if record.get("tool") == "bonnie" else record.get("tool"),
            "; ".join(record_figures(record)) or ("error: %s" % record.get("error") if record.get("error") else "-"),
            record.get("runs") or 1, "%.2f %%" % (cv * 100) if cv is not None else "-"))
    if not context.records:
        lines.append("| (no records) | | | | |")
    lines += ["", "MB/s = 10^6 bytes/s (as dd and datasheets use it), MiB/s = 2^20 bytes/s. Each test ran the number "
              "of times in the runs column, the page cache dropped (sync, then 3 into /proc/sys/vm/drop_caches) before "
              "every run; the record kept is the run with the median figure, never an average.", ""]
    lines += ["## How each figure was obtained", ""]
    for record in context.records:
        lines += _record_section(record, context.raw_members)
    lines += _reproduce_section(context.records, context.host_name, context.host_facts)
    lines += steady_readme_lines(context.records)   # SSD preconditioning and steady state, when measured
    lines += ["## The host while it was measured", ""]
    lines += _quiesce_lines(context.quiesce)
    lines += ["Snapshots (every command in `before/commands.json` and `after/commands.json`):", ""]
    lines += _snapshot_lines(context.snapshots)
    lines += ["## Files", "", "| file | what it is |", "|---|---|"]
    for name in context.members:
        lines.append("| `%s` | %s |" % (name, _describe(name)))
    lines.append("")
    return "\n".join(lines)
