#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: evidence
short_description: Snapshot disks and hosts before and after a benchmark, and pack one checksummed evidence bundle per disk
version_added: 0.1.0
description:
  - Builds the evidence a drive vendor cannot wave away - plain trusted tools, the exact commands, their raw outputs,
    the device's identity and health before and after, and checksums over all of it.
  - O(state=snapshot) writes, under C(<dir>/<phase>/), per disk (C(<disk>/)) - C(smartctl -x) (text) and
    C(smartctl -x -j), for NVMe C(nvme id-ctrl -o json) and C(nvme smart-log -o json), C(lsblk -J -b -O),
    C(udevadm info --query=all), the write cache (C(hdparm -W) for ATA, C(sdparm --get=WCE) for SCSI disks, and the
    kernel's C(queue/write_cache)), the queue settings of C(/sys/block/<disk>/queue), the PCIe link (current and
    capable speed and width of the PCI function above the disk) and the kernel log lines naming the disk
    (C(dmesg.txt)); per host once (C(host/)) - C(uname -a), C(/etc/os-release), C(date -u), the clock offset
    (C(chronyc tracking); else C(timedatectl show), whether the clock is NTP-synchronized and by what, and
    C(timedatectl timesync-status) unless C(show) says no NTP service is active; else written down as unknown), the
    versions of dd, fio, sysbench, ioping, smartctl, nvme-cli and bonnie++ (its package). C(commands.json) lists every
    command - argv, exit code, UTC start and end, output file.
  - The kernel log comes from C(dmesg); when C(dmesg) is refused (C(kernel.dmesg_restrict=1) without CAP_SYSLOG, as
    in containers) from the journal - C(journalctl -k -b -o json --all --no-pager --lines=10000) - filtered per disk
    by the same rule. Only the lines naming the disk are kept, without the journal's metadata; the rest of the
    kernel log (other devices, the kernel command line, firewall lines) never leaves the host. C(host/kernel-log.txt)
    says which source gave the lines, or why neither did.
  - Every command runs as an argument list, without a shell, with C(LC_ALL=C). A tool that is missing or fails is
    written down with its exit code and stderr and never fails the snapshot - a VM disk without SMART is evidence too.
  - O(state=pack) builds, for each disk, C(<dest_dir>/<serial or disk>-<UTC YYYYmmddTHHMMSSZ>.tar.gz) holding its
    before and after snapshots, the host files, the benchmark's raw outputs and fio job files, C(results.json)
    (its result records), C(quiesce.json), a C(README.md) for the vendor's engineer (how each figure was obtained,
    how to reproduce the key ones with plain dd and bonnie++) and C(MANIFEST.sha256) over every other file, in
    C(sha256sum -c) format. Members are sorted, root-owned, with fixed modes and time.
author:
  - diskproof maintainers (@diskproof)
options:
  state:
    description:
      - V(snapshot) records the host and the disks in O(dir); V(pack) writes the bundles.
    type: str
    choices: [snapshot, pack]
    required: true
  dir:
    description:
      - The run's evidence directory on the host. O(phase=before) creates it (mode 0700) and refuses when it already
        exists, so evidence is never mixed with or written over an earlier run's; O(phase=after) and O(state=pack)
        need it.
    type: path
    required: true
  phase:
    description:
      - Which snapshot - V(before) or V(after) the benchmark. Required with O(state=snapshot). Each is written once.
    type: str
    choices: [before, after]
  devices:
    description:
      - Whole-disk kernel names (V(sdb), V(nvme0n1)) - the disks to snapshot (required with O(state=snapshot)) or to
        bundle (with O(state=pack); default every disk of the V(before) snapshot).
    type: list
    elements: str
    default: []
  dest_dir:
    description:
      - Where O(state=pack) writes the bundles; created when missing. Default C(<dir>/bundles).
    type: path
  disk_facts:
    description:
      - Identity of the disks by kernel name, usually C(ansible_facts['diskproof_disks']) of the discover role - the
        C(model), C(serial), C(firmware), C(wwn) and the rest of each disk go into its bundle's README and
        C(results.json), and the serial names the bundle. Other keys are ignored.
    type: dict
    default: {}
  host_facts:
    description:
      - The host, usually C(ansible_facts['diskproof_host']) of the discover role - C(kernel), C(distribution) and
        C(memory_bytes) go into the README (the memory to size a reproduction without the cache fence).
    type: dict
    default: {}
  host_name:
    description:
      - The host's name in the README and in RV(bundles), usually C(inventory_hostname). Default the kernel host name.
    type: str
  results:
    description:
      - The benchmark result records (schema 1), usually C(benchmark_results) of the benchmark role. Each bundle gets
        the records whose target C(device) (or one of its C(disks)) is its disk.
    type: list
    elements: dict
    default: []
  quiesce:
    description:
      - The quiesce readings, usually C(ansible_facts['diskproof_quiesce']) - what was stopped and every idle-window
        sample; written to C(quiesce.json) of every bundle.
    type: dict
    default: {}
  raw_dirs:
    description:
      - Disk kernel name to the directories where the benchmark kept the raw outputs and fio job files of that disk's
        targets. A disk not named here gets the directories of its records' C(raw_files).
    type: dict
    default: {}
  extra_files:
    description:
      - Files on the host to add to every bundle, under C(extra/) (a datasheet, a ticket).
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - diskproof.fleet.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes nothing - O(state=snapshot) returns the commands it would run, O(state=pack) the bundles it would
        write.
  platform:
    platforms: linux
notes:
  - Run as root (C(become)) - smartctl, nvme-cli, hdparm and sdparm open the devices. Every command only reads.
  - A command that does not end within 120 s (smartctl on a failing disk can block for minutes) is stopped with its
    process group; C(commands.json) records it with no exit code and the error C(<command> did not end within 120 s
    (it was stopped)), and the snapshot goes on.
  - Files and directories are written with modes 0600 and 0700 - serial numbers and logs are not for every user.
seealso:
  - name: diskproof evidence bundle
    description: What is in a bundle and how a vendor verifies it, in C(docs/evidence.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/evidence.md
  - module: diskproof.fleet.disk_facts
  - module: diskproof.fleet.bench_facts
"""

EXAMPLES = r"""
- name: Snapshot the disk before the benchmark
  diskproof.fleet.evidence:
    state: snapshot
    phase: before
    dir: /var/tmp/diskproof-evidence-20261122T005500Z
    devices: [sdb]
  become: true

- name: Snapshot it after, then one bundle per disk
  diskproof.fleet.evidence:
    state: snapshot
    phase: after
    dir: /var/tmp/diskproof-evidence-20261122T005500Z
    devices: [sdb]
  become: true

- name: Pack
  diskproof.fleet.evidence:
    state: pack
    dir: /var/tmp/diskproof-evidence-20261122T005500Z
    disk_facts: "{{ ansible_facts['diskproof_disks'] }}"
    host_facts: "{{ ansible_facts['diskproof_host'] }}"
    host_name: "{{ inventory_hostname }}"
    results: "{{ benchmark_results }}"
    quiesce: "{{ ansible_facts['diskproof_quiesce'] }}"
  register: packed
  become: true

- name: Bring the bundles home
  ansible.builtin.fetch:
    src: "{{ item.path }}"
    dest: "evidence/{{ inventory_hostname }}/"
    flat: true
  loop: "{{ packed.bundles }}"
"""

RETURN = r"""
dir:
  description: O(dir).
  returned: always
  type: str
  sample: /var/tmp/diskproof-evidence-20261122T005500Z-1a2b3c4d
created:
  description: Whether this call created O(dir) (only O(phase=before) does); what a cleanup may remove.
  returned: always
  type: bool
  sample: true
files:
  description: The files the snapshot wrote, relative to O(dir).
  returned: O(state=snapshot)
  type: list
  elements: str
  sample: [before/host/uname-a.txt, before/sdb/smartctl-x.txt, before/commands.json]
problems:
  description: Commands that were not available or exited non-zero, as written down in C(commands.json).
  returned: O(state=snapshot)
  type: list
  elements: str
  sample: ["smartctl -x /dev/vda: exit code 1", "chronyc: not installed"]
clock:
  description: What C(host/clock-offset.txt) says - the clock offset line and, when C(timedatectl show) was asked, a
    second line saying whether the clock is NTP-synchronized and by what.
  returned: O(state=snapshot), not in check mode
  type: str
  sample: "clock offset: unknown (chronyc tracking: chronyc is not installed (not found in PATH or the sbin directories))"
kernel_log:
  description: What C(host/kernel-log.txt) says - where the kernel log lines came from (C(dmesg) or the journal), or
    why there are none.
  returned: O(state=snapshot), not in check mode
  type: str
  sample: "kernel log: `dmesg` (exit code 0, 1876 lines); each disk's dmesg.txt holds the lines naming it"
planned:
  description: In check mode, the commands a snapshot would run or the bundles a pack would write.
  returned: check mode
  type: list
  elements: raw
bundles:
  description: One entry per disk - C(disk), C(host), C(serial), C(name) (file name), C(path), C(sha256),
    C(size_bytes), C(files) (members, README and manifest included).
  returned: O(state=pack)
  type: list
  elements: dict
  sample:
    - disk: sdb
      host: db01
      serial: S4EVNF0M123456
      name: S4EVNF0M123456-20261122T010203Z.tar.gz
      path: /var/tmp/diskproof-evidence-20261122T005500Z/bundles/S4EVNF0M123456-20261122T010203Z.tar.gz
      sha256: 9f2c5e0c3b7d4f1e8a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f
      size_bytes: 48213
      files: 41
"""

import datetime
import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _evidence, _proc
from ansible_collections.diskproof.fleet.plugins.module_utils._evidence import EvidenceError

LOCALE_C = {"LANG": "C", "LC_ALL": "C"}
SYS_BLOCK = "/sys/block"
# A command of the snapshot that reads a failing disk (smartctl, hdparm, nvme) can block for minutes: past this it
# is stopped and the bundle records that it did not answer, which is evidence in itself.
COMMAND_TIMEOUT_S = 120.0


def read_file(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc)


class Writer(object):
    """Files under the evidence dir: never over an existing file, never through a symlink, private modes."""

    def __init__(self, root):
        self.root = root

    def __call__(self, relative, data):
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)


def host_io(module, root):
    bins = {}

    def which(name):
        if name not in bins:
            bins[name] = module.get_bin_path(name)
        return bins[name]

    def run(argv):
        try:
            done = _proc.run(argv, env=dict(os.environ, **LOCALE_C), timeout_s=COMMAND_TIMEOUT_S)
        except _proc.TimedOut as error:
            raise TimeoutError(str(error)) from None
        return done.rc, done.stdout, done.stderr

    def device_link(disk):
        link = os.path.join(SYS_BLOCK, disk, "device")
        return os.path.realpath(link) if os.path.exists(link) else None

    def is_scsi(disk):
        return os.path.isdir(os.path.join(SYS_BLOCK, disk, "device", "scsi_disk"))

    return _evidence.HostIO(run=run, which=which, read=read_file, write=Writer(root), now=now_utc,
                            device_link=device_link, is_scsi=is_scsi, sys_block=SYS_BLOCK)


def snapshot(module):
    params = module.params
    root, phase = params["dir"], params["phase"]
    result = dict(changed=False, dir=root, created=False)
    try:
        devices = [_evidence.check_disk_name(name) for name in params["devices"]]
    except EvidenceError as error:
        module.fail_json(msg=str(error), **result)
    if not devices:
        module.fail_json(msg="devices is empty: name the whole disks to snapshot (e.g. [sdb])", **result)
    missing = [name for name in devices if not os.path.isdir(os.path.join(SYS_BLOCK, name))]
    if missing:
        module.fail_json(msg="no such disk: %s (not in %s)" % (", ".join(missing), SYS_BLOCK), **result)
    if phase == "before" and os.path.lexists(root):
        module.fail_json(msg="dir=%s already exists: each run gets a new evidence directory, so evidence is never "
                             "mixed or overwritten; remove it or choose another" % root, **result)
    if phase == "after" and not module.check_mode and not os.path.isdir(os.path.join(root, "before")):
        module.fail_json(msg="dir=%s holds no before snapshot: take it (phase=before) before the benchmark" % root,
                         **result)
    if os.path.lexists(os.path.join(root, phase)):
        module.fail_json(msg="%s already holds its %s snapshot: it is never overwritten" % (root, phase), **result)
    if module.check_mode:
        module.exit_json(changed=True, dir=root, created=False, files=[], problems=[],
                         planned=_evidence.planned_commands(devices))
    if phase == "before":
        try:
            os.makedirs(root, 0o700)
        except OSError as error:
            module.fail_json(msg="cannot create dir=%s: %s" % (root, error), **result)
        result["created"] = True
    try:
        taken = _evidence.take_snapshot(host_io(module, root), phase, devices)
    except (EvidenceError, OSError) as error:
        module.fail_json(msg="snapshot %s failed: %s" % (phase, error), **result)
    result.update(changed=True, files=taken["files"], problems=taken["problems"], clock=taken["clock"],
                  kernel_log=taken["kernel_log"])
    module.exit_json(**result)


def pack(module):
    params = module.params
    root = params["dir"]
    result = dict(changed=False, dir=root, created=False, bundles=[])
    before = os.path.join(root, "before")
    if module.check_mode and not os.path.isdir(before):
        # Check mode wrote no snapshot: say which bundles a real run would write.
        created = now_utc().replace(microsecond=0)
        try:
            planned = [{"disk": disk, "name": _evidence.bundle_stem(_evidence.disk_identity(
                _evidence.check_disk_name(disk), params["disk_facts"].get(disk))["serial"], disk, created) + ".tar.gz"}
                for disk in params["devices"]]
        except EvidenceError as error:
            module.fail_json(msg=str(error), **result)
        module.exit_json(changed=bool(planned), dir=root, created=False, bundles=[], planned=planned)
    if not os.path.isdir(before):
        module.fail_json(msg="dir=%s holds no before snapshot: nothing to pack" % root, **result)
    devices = params["devices"] or sorted(
        name for name in os.listdir(before) if name != _evidence.HOST_DIR and os.path.isdir(os.path.join(before, name)))
    for disk, dirs in params["raw_dirs"].items():
        if not isinstance(dirs, list) or not all(isinstance(path, str) and os.path.isabs(path) for path in dirs):
            module.fail_json(msg="raw_dirs[%s] must be a list of absolute directories, got %r" % (disk, dirs), **result)
    dest_dir = params["dest_dir"] or os.path.join(root, "bundles")
    created = now_utc().replace(microsecond=0)
    host_name = params["host_name"] or socket.gethostname()
    planned, bundles, taken = [], [], set()
    try:
        for disk in devices:
            identity = _evidence.disk_identity(_evidence.check_disk_name(disk), params["disk_facts"].get(disk))
            records = _evidence.records_for_disk(params["results"], disk)
            given = _evidence.BundleInput(
                evidence_dir=root, disk=disk, identity=identity, records=records, quiesce=params["quiesce"],
                raw_dirs=params["raw_dirs"].get(disk) or _evidence.raw_dirs_of(records), created=created,
                host_name=host_name, host_facts=params["host_facts"], extra_files=params["extra_files"])
            stem, members = _evidence.build_bundle(given, taken)
            taken.add(stem)
            path = os.path.join(dest_dir, stem + ".tar.gz")
            planned.append({"disk": disk, "name": stem + ".tar.gz", "path": path})
            if module.check_mode:
                continue
            if os.path.lexists(path):
                module.fail_json(msg="%s already exists: a bundle is never overwritten" % path, **result)
            data = _evidence.tar_bytes(stem, members, created)
            os.makedirs(dest_dir, 0o700, exist_ok=True)
            temporary = path + ".partial"
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.rename(temporary, path)
            bundles.append({"disk": disk, "host": host_name, "serial": identity.get("serial"), "name": stem + ".tar.gz",
                            "path": path, "sha256": _evidence.sha256_hex(data), "size_bytes": len(data),
                            "files": len(members)})
            result["changed"] = True
    except (EvidenceError, OSError, ValueError) as error:
        result["bundles"] = bundles
        module.fail_json(msg="pack failed: %s" % error, **result)
    if module.check_mode:
        module.exit_json(changed=True, dir=root, created=False, bundles=[], planned=planned)
    result["bundles"] = bundles
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", required=True, choices=["snapshot", "pack"]),
            dir=dict(type="path", required=True),
            phase=dict(type="str", choices=["before", "after"]),
            devices=dict(type="list", elements="str", default=[]),
            dest_dir=dict(type="path"),
            disk_facts=dict(type="dict", default={}),
            host_facts=dict(type="dict", default={}),
            host_name=dict(type="str"),
            results=dict(type="list", elements="dict", default=[]),
            quiesce=dict(type="dict", default={}),
            raw_dirs=dict(type="dict", default={}),
            extra_files=dict(type="list", elements="path", default=[]),
        ),
        required_if=[("state", "snapshot", ["phase"])],
        supports_check_mode=True,
    )
    if module.params["state"] == "snapshot":
        snapshot(module)
    else:
        pack(module)


if __name__ == "__main__":
    main()
