# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host discovery (read-only): the host, its disks and every target resolved to its disks with its safety class.

disk_facts publishes it; the quiesce runs the same discovery inside its own call (its option discover), so a run
needs one module call per host for discovery, plan check and quiesce. The pure rules are in _discover.py."""
from __future__ import annotations

import errno
import os
import socket
import stat

from . import _blockdev, _discover, _filesystems, _proc
from . import _identity
from ._parse.blkid import blkid_result
from ._parse.errors import ParseError
from ._parse.fstab import parse_fstab
from ._parse.lsblk import parse_lsblk
from ._parse.meminfo import parse_meminfo
from ._parse.mountinfo import parse_mountinfo
from ._parse.os_release import parse_os_release
from ._parse.swaps import parse_swaps
from ._parse.wipefs import wipefs_result
from ._health import probe_health
from ._tools import TOOL_VERSION_ARGS
from ._version_probe import probe_tools

SYS_CLASS_BLOCK = "/sys/class/block"
DEFAULT_MODE = {"path": "filesystem", "device": "raw_read"}


def read_text(path):
    """Text of a file, None when it does not exist or cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def exclusive_open(path):
    """'ok' when the kernel grants a read-only exclusive open of the device, else the error.

    O_EXCL on a block device fails with EBUSY while anything holds it - a mount in any mount namespace,
    swap, dm, md - which the mount tables of this namespace cannot show. Nothing is read or written."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_EXCL | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        return "%s: %s" % (errno.errorcode.get(error.errno, error.errno), error.strerror)
    os.close(handle)
    return "ok"


def block_dev(path):
    """'MAJ:MIN' of a block device node, None for anything else."""
    rdev = _blockdev.node_rdev(path)
    return None if rdev is None else "%d:%d" % (os.major(rdev), os.minor(rdev))


class Discovery(object):
    """disk_facts' discovery (read-only), for any module: the quiesce runs it inside its own call (option discover).

    module: the AnsibleModule (fail_json, warn, get_bin_path); params: the options of DISCOVER_OPTIONS."""

    def __init__(self, module, params):
        self.module = module
        self.params = params
        self.bins = {}

    # -- commands ---------------------------------------------------------------------------------

    def bin(self, name):
        if name not in self.bins:
            self.bins[name] = self.module.get_bin_path(name)
        return self.bins[name]

    # -- host -------------------------------------------------------------------------------------

    def host(self, view):
        uname = os.uname()
        try:
            usable = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            usable = os.cpu_count()
        pid1 = read_text("/proc/1/comm")
        return {
            "hostname": socket.gethostname(),
            "kernel": uname.release,
            "architecture": uname.machine,
            "memory_bytes": parse_meminfo(read_text("/proc/meminfo") or ""),
            "cpu_count": os.cpu_count(),
            "cpu_usable": usable,
            "distribution": parse_os_release(read_text("/etc/os-release") or read_text("/usr/lib/os-release") or ""),
            "service_mgr": _discover.service_manager(pid1, os.path.isdir("/run/systemd/system"),
                                                     os.path.exists("/sbin/openrc") or os.path.exists("/sbin/openrc-run"),
                                                     os.path.isdir("/etc/init.d")),
            "pid1": pid1.strip() if pid1 else None,
            "tools": probe_tools(TOOL_VERSION_ARGS, self.bin, self.module.warn),
            "boot_disks": view.boot_disks,
            "swap_disks": view.swap_disks,
            "boot_unknown": view.boot_unknown,
            "swaps": view.swaps,
            "selection": None,
        }

    # -- the device tree and what uses it ---------------------------------------------------------

    def parse(self, what, parser, text):
        try:
            return parser(text)
        except ParseError as error:
            self.module.fail_json(msg="cannot read %s: %s" % (what, error))

    def view(self):
        lsblk = self.bin("lsblk")
        if lsblk is None:
            self.module.fail_json(msg="lsblk (util-linux) is required and was not found in PATH or the sbin directories")
        # Time-limited like the other probes: without a udev database lsblk opens the disks itself (libblkid),
        # and a failing disk can leave that open unanswered.
        rc, out, err = _proc.probe([lsblk, "-J", "-b", "-O"])
        if rc is None:
            self.module.fail_json(msg="cannot list the block devices: %s. Stopped at its time limit, it means a disk "
                                      "(or udev) is not answering: find it in the kernel log (dmesg) and run again" % err)
        if rc != 0:
            self.module.fail_json(msg="lsblk -J -b -O failed (exit code %d): %s" % (rc, (err or out).strip()))
        topology = _discover.Topology(self.parse("lsblk -J -b -O output", parse_lsblk, out))
        mountinfo = read_text("/proc/self/mountinfo")
        if mountinfo is None:
            self.module.fail_json(msg="cannot read /proc/self/mountinfo: mounts are needed to know what is in use")
        mounts = self.parse("/proc/self/mountinfo", parse_mountinfo, mountinfo)
        swaps_text = read_text("/proc/swaps")
        if swaps_text is None and os.path.exists("/proc/swaps"):
            self.module.fail_json(msg="cannot read /proc/swaps: active swap is needed to know what is in use")
        swaps = self.parse("/proc/swaps", parse_swaps, swaps_text or "")
        fstab = self.parse("/etc/fstab", parse_fstab, read_text("/etc/fstab") or "")
        return _discover.HostView(topology, mounts, swaps, fstab, block_dev)

    def sysfs(self, kname):
        base = os.path.join(SYS_CLASS_BLOCK, kname)
        files = {
            "scheduler": "queue/scheduler", "write_cache": "queue/write_cache", "rotational": "queue/rotational",
            "read_only": "ro", "removable": "removable", "loop_backing_file": "loop/backing_file",
            "model": "device/model", "vendor": "device/vendor", "firmware_rev": "device/firmware_rev",
            "rev": "device/rev",
        }
        values = {key: read_text(os.path.join(base, name)) for key, name in files.items()}
        values["serial"] = read_text(os.path.join(base, "device", "serial")) or read_text(os.path.join(base, "serial"))
        values["wwid"] = read_text(os.path.join(base, "device", "wwid")) or read_text(os.path.join(base, "wwid"))
        return {key: value.strip() if value is not None else None for key, value in values.items()}

    def holders(self, knames):
        found = {}
        for kname in knames:
            try:
                found[kname] = sorted(os.listdir(os.path.join(SYS_CLASS_BLOCK, kname, "holders")))
            except OSError:
                found[kname] = []
        return found

    def probes(self, topology, disk):
        """wipefs -n on the disk (every signature, partition tables included); blkid -p on what is built on it."""
        probes = {}
        path = topology.nodes[disk]["path"]
        wipefs = self.bin("wipefs")
        if wipefs is None:
            probes[disk] = {"signatures": [], "ids": {}, "error": "wipefs is not installed"}
        else:
            rc, out, err = _proc.probe([wipefs, "-n", "-J", path])
            signatures, error = ([], err) if rc is None else wipefs_result(rc, out, err)
            first = signatures[0] if signatures else {}
            probes[disk] = {"signatures": signatures, "ids": {"uuid": first.get("uuid"), "label": first.get("label")},
                            "error": error}
        blkid = self.bin("blkid")
        for kname in topology.descendants(disk):
            if blkid is None:
                probes[kname] = {"signatures": [], "ids": {}, "error": "blkid is not installed"}
                continue
            rc, out, err = _proc.probe([blkid, "-p", "-c", "/dev/null", "-o", "export", topology.nodes[kname]["path"]])
            values, error = ({}, err) if rc is None else blkid_result(rc, out, err)
            signatures = []
            if values.get("TYPE"):
                signatures.append({"device": kname, "offset": None, "type": values["TYPE"], "uuid": values.get("UUID"),
                                   "label": values.get("LABEL")})
            if values.get("PTTYPE"):
                signatures.append({"device": kname, "offset": None, "type": values["PTTYPE"], "uuid": values.get("PTUUID"),
                                   "label": None})
            ids = {"uuid": values.get("UUID"), "label": values.get("LABEL"), "partuuid": values.get("PART_ENTRY_UUID"),
                   "partlabel": values.get("PART_ENTRY_NAME")}
            probes[kname] = {"signatures": signatures, "ids": ids, "error": error}
        return probes

    def health(self, node):
        if not self.params["smart"]:
            return None, None
        return probe_health(self.bin, node["path"], _discover.transport(node) == "nvme")

    def describe(self, view, disk, writable):
        topology = view.topology
        node = topology.nodes[disk]
        usage = view.disk_usage(disk, self.probes(topology, disk), self.holders(topology.subtree(disk)),
                                exclusive_open(node["path"]) if writable else None)
        smart, nvme = self.health(node)
        return _discover.disk_record(node, self.sysfs(disk), smart, nvme, usage)

    # -- targets ----------------------------------------------------------------------------------

    def resolve(self, view, spec, source):
        kind = "path" if spec.get("path") else "device"
        given = spec[kind]
        requested = spec.get("mode") or DEFAULT_MODE[kind]
        record = {"target": {kind: given}, "kind": kind, "source": source, "requested": requested, "class": None,
                  "granted": False, "device": None, "device_path": None, "disks": [], "refusals": [], "grant": None,
                  "filesystem": None, "mount_point": None, "not_a_disk": False}
        topology = view.topology
        try:
            info = os.stat(given)
        except OSError as error:
            record["refusals"].append({"code": "not_found", "message": "%s: %s" % (given, error.strerror or error)})
            return record
        if kind == "path":
            if not stat.S_ISDIR(info.st_mode):
                record["refusals"].append({"code": "not_directory", "message": "%s is not a directory" % given})
                return record
            resolved = os.path.realpath(given)
            if not self.check_filesystem(view, record, resolved, spec):
                return record
            kname = view.node_for_file(resolved, "%d:%d" % (os.major(info.st_dev), os.minor(info.st_dev)))
        else:
            if not stat.S_ISBLK(info.st_mode):
                record["refusals"].append({"code": "not_block_device", "message": "%s is not a block device" % given})
                return record
            kname = topology.kname_for("%d:%d" % (os.major(info.st_rdev), os.minor(info.st_rdev)))
            if kname is None:
                record["refusals"].append({"code": "not_found", "message": "%s is a block device lsblk does not list"
                                           % given})
                return record
        if kname is not None:
            record.update(device=kname, device_path=topology.nodes[kname]["path"], disks=topology.physical_disks(kname))
        return record

    def check_filesystem(self, view, record, resolved, spec):
        """Name the filesystem of a directory target; refuse (False) one that is not a disk unless allowed.

        The rule is _filesystems.classify_mount, the one bench_plan applies too."""
        mount = _filesystems.mount_for_path(view.mounts, resolved)
        if mount is None:
            return True
        # A source that is no absolute path (tmpfs, server:/export) is never stat'ed: it names no file.
        source_is_block = mount["source"].startswith("/") and block_dev(mount["source"]) is not None
        found = _filesystems.classify_mount(mount, source_is_block)
        record.update(filesystem=found.fstype, mount_point=found.mount_point, not_a_disk=found.not_a_disk)
        if not found.not_a_disk:
            return True
        if spec.get("allow_non_disk") or (spec.get("allow_non_disk") is None and self.params["allow_non_disk"]):
            self.module.warn(_filesystems.allowed_warning(record["target"]["path"], found))
            return True
        record["refusals"].append({"code": "not_a_disk",
                                   "message": _filesystems.refusal_message(record["target"]["path"], found)})
        return False

    def check_targets(self, targets):
        for index, spec in enumerate(targets):
            kind = "path" if spec.get("path") else "device"
            mode = spec.get("mode")
            # A relative name would be looked up from wherever the module runs: never what was meant.
            if not os.path.isabs(spec[kind]):
                self.module.fail_json(msg="targets[%d].%s %s is a relative path: give the absolute path (a directory "
                                          "such as /srv/disk1, a device such as /dev/sdb)" % (index, kind, spec[kind]))
            if mode and (mode == "filesystem") != (kind == "path"):
                self.module.fail_json(msg="targets[%d]: mode %s does not go with %s (path: filesystem; device: raw_read "
                                          "or raw_write)" % (index, mode, kind))

    def select(self, view, explicit):
        """(selected disks, skipped {disk: why}, problems, the targets they are tested as)."""
        topology = view.topology
        identities = {}
        for kname in topology.roots:
            node = topology.nodes[kname]
            values = self.sysfs(kname)
            identities[kname] = {"serial": node.get("serial") or values.get("serial"),
                                 "wwn": node.get("wwn") or values.get("wwid"),
                                 "loop_backing_file": values.get("loop_backing_file")}
        selected, skipped, problems = _discover.select_data_disks(view, self.params["exclude"], identities,
                                                                  self.params["select_loop_files"])
        for kname in list(selected):
            if kname in explicit:
                selected.remove(kname)
                skipped[kname] = "already a target"
        targets, unusable = _discover.selected_targets(view, selected, self.params["select_mode"])
        skipped.update(unusable)
        selected = [kname for kname in selected if kname not in unusable]
        return selected, skipped, problems, targets

    def classify(self, view, record, disks):
        if record["refusals"]:
            return
        if record["requested"] != "raw_write":
            record.update({"class": record["requested"], "granted": True})
            return
        refusals = _discover.raw_write_refusals(record["device"], view.topology, [disks[name] for name in record["disks"]],
                                                self.params["destructive"], self.params["destructive_allow"],
                                                view.boot_unknown, self.params["host"] or None)
        record["refusals"] = refusals
        record.update({"class": "raw_read", "granted": False} if refusals else {"class": "raw_write", "granted": True})

    def bind_grant(self, record, disks):
        """A granted raw class carries the identity of every disk under the target (the runner checks it again)."""
        if record["kind"] != "device" or record["class"] not in ("raw_read", "raw_write") or not record["disks"]:
            return
        bindings = [_identity.disk_binding(disks[name], _identity.observe(name)) for name in record["disks"]]
        record["grant"] = _identity.make_grant(record["class"], self.params["host"] or None, record, bindings)

    def discover(self):
        """(facts, refusals): the facts disk_facts publishes, and every refusal as one line (nothing refused: [])."""
        params = self.params
        self.check_targets(params["targets"])
        view = self.view()
        host = self.host(view)
        targets = [self.resolve(view, spec, "inventory") for spec in params["targets"]]
        problems = []
        chosen = []
        if params["select"] == "all_data_disks":
            # A disk already under a target of the inventory (a directory on it, the disk or a part of it) is
            # not selected again: its filesystem would be tested twice.
            explicit = set(disk for record in targets for disk in record["disks"])
            selected, skipped, problems, chosen = self.select(view, explicit)
            host["selection"] = {"select": params["select"], "mode": params["select_mode"], "selected": selected,
                                 "skipped": skipped, "targets": chosen}
            targets.extend(self.resolve(view, spec, "select") for spec in chosen)
            if not targets and not problems:
                problems.append(_discover.no_data_disk_problem(params["host"] or host["hostname"], skipped))
        writable = set(name for record in targets if record["requested"] == "raw_write" for name in record["disks"])
        disks = {}
        for record in targets:
            for name in record["disks"]:
                if name not in disks:
                    disks[name] = self.describe(view, name, name in writable)
        for record in targets:
            self.classify(view, record, disks)
            self.bind_grant(record, disks)
        refusals = list(problems)
        for record in targets:
            label = record["target"].get("path") or record["target"].get("device")
            refusals.extend("%s (requested %s) %s: %s" % (label, record["requested"], refusal["code"], refusal["message"])
                            for refusal in record["refusals"])
        facts = {"diskproof_host": host, "diskproof_disks": disks, "diskproof_targets_resolved": targets,
                 "diskproof_selected_targets": chosen,
                 "diskproof_target_identities": _identity.target_identities(targets, disks)}
        return facts, refusals


def plan_request_with(request, facts):
    """bench_plan's options (the benchmark role's request) with this discovery's part: the selected targets added to
    its targets (once), its disk identities and its raw grants as identities and classes - what the benchmark role's
    request is once these facts are published (its vars/main.yml makes the same from them on the controller)."""
    targets = list(request.get("targets") or [])
    classes = {record["device_path"]: record["grant"] for record in facts["diskproof_targets_resolved"]
               if record["granted"] and record["class"] in ("raw_read", "raw_write")}
    return dict(request, targets=targets + [target for target in facts["diskproof_selected_targets"]
                                            if target not in targets],
                identities=facts["diskproof_target_identities"], classes=classes)


# disk_facts' options, which the quiesce's option discover takes too.
DISCOVER_OPTIONS = dict(
    targets=dict(
        type="list", elements="dict", default=[],
        options=dict(
            path=dict(type="path"),
            device=dict(type="path"),
            mode=dict(type="str", choices=["filesystem", "raw_read", "raw_write"]),
            allow_non_disk=dict(type="bool"),
        ),
        mutually_exclusive=[("path", "device")],
        required_one_of=[("path", "device")],
    ),
    select=dict(type="str", default="none", choices=["none", "all_data_disks"]),
    select_mode=dict(type="str", default="raw_read", choices=["raw_read", "raw_write"]),
    exclude=dict(type="list", elements="str", default=[]),
    select_loop_files=dict(type="list", elements="str", default=[]),
    destructive=dict(type="bool", default=False),
    destructive_allow=dict(type="list", elements="str", default=[]),
    smart=dict(type="bool", default=True),
    host=dict(type="str", default=""),
    allow_non_disk=dict(type="bool", default=False),
)


def discover_in_call(module, request, run_id):
    """disk_facts' discovery in another module's call (the quiesce's discover option): the facts disk_facts would
    publish. Options not disk_facts', or a refusal, end the module naming them, before anything is written or stopped."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    validated = ArgumentSpecValidator(DISCOVER_OPTIONS).validate(request)
    if validated.error_messages:
        module.fail_json(msg="discover: %s (the options of diskproof.fleet.disk_facts)" % "; ".join(validated.error_messages),
                         run_id=run_id)
    options = validated.validated_parameters
    facts, refusals = Discovery(module, options).discover()
    if refusals:
        module.fail_json(msg="%d refusal(s) on %s; nothing was written or stopped: %s"
                             % (len(refusals), options["host"] or facts["diskproof_host"]["hostname"], " | ".join(refusals)),
                         refusals=refusals, run_id=run_id)
    return facts
