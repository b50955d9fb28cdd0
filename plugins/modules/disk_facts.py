#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: disk_facts
short_description: Discover a host, resolve test targets to physical disks and decide what each target may do
version_added: 0.1.0
description:
  - Does the whole discovery of a host in one call and only ever reads - C(lsblk -J -b -O), C(/proc/self/mountinfo),
    C(/proc/swaps), C(/etc/fstab), C(/sys), C(smartctl -j -x), C(nvme smart-log -o json) (NVMe disks only),
    C(wipefs -n -J) and C(blkid -p -o export). Every command runs without a shell, as an argument list, with
    C(LANG=C LC_ALL=C).
  - Host facts - memory, CPU count, kernel, distribution, service manager (from PID 1, no fact gathering needed) and
    the versions of C(dd), C(fio), C(sysbench), C(bonnie++), C(ioping), C(smartctl) and C(nvme).
  - Each target (a directory from O(targets), a block device from O(targets), or a disk picked by O(select))
    resolves to the physical disk(s) under it, through partitions, LVM/device-mapper, md and multipath, using
    the device tree C(lsblk) prints.
  - Each physical disk is described - model, serial, WWN, firmware, transport, rotational, block sizes, size,
    scheduler, write cache, what uses it (mounts, swap, fstab lines, partitions, holders, signatures, boot) and a
    SMART/NVMe health summary. A device without SMART (virtio, loop; C(smartctl) exits 1 or 2 but still prints
    JSON) is reported as data, with C(smartctl)'s exit status and messages, never as a failure.
  - Each target gets a safety class - V(filesystem) (tests write a file in the directory), V(raw_read)
    (read-only tests on the device) or V(raw_write) (destructive tests on the device). V(raw_write) is granted
    only when O(destructive) is true, the disk is allow-listed in O(destructive_allow) and it is provably unused;
    otherwise every reason is listed in the target's C(refusals) and in RV(refusals).
author:
  - diskproof maintainers (@diskproof)
options:
  targets:
    description:
      - What to test on this host, usually the inventory variable C(diskproof_targets).
      - Each item names either a directory (O(targets[].path)) or a block device (O(targets[].device)), by its
        absolute path; a relative one fails the module before anything is looked at.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description:
          - Directory on the filesystem under test. Its safety class is V(filesystem).
          - Resolved to the block device holding it (C(st_dev), or the source device of its mount for btrfs and
            other filesystems with anonymous device numbers), then to the physical disks under that device.
        type: path
      device:
        description:
          - Block device to test - a whole disk, a partition, an LVM or md device, by any path that resolves to
            the device node (V(/dev/sdb), V(/dev/disk/by-id/...), V(/dev/mapper/vg-lv)).
        type: path
      mode:
        description:
          - Safety class this target asks for. Defaults to V(filesystem) for O(targets[].path) and V(raw_read) for
            O(targets[].device).
          - V(raw_write) means destructive tests on the bare device. It is granted only under the destructive
            interlock (see O(destructive)); when refused, the target keeps V(raw_read) as its class and every
            reason is listed.
          - V(filesystem) is only valid with O(targets[].path), V(raw_read) and V(raw_write) only with
            O(targets[].device).
        type: str
        choices: [filesystem, raw_read, raw_write]
      allow_non_disk:
        description:
          - Measure this O(targets[].path) although its filesystem is not on a disk (tmpfs, ramfs, overlay, NFS, CIFS,
            FUSE, 9p, virtiofs, or any filesystem whose source is no block device - the rule is in C(docs/discover.md)).
            Such a target is otherwise refused with the code C(not_a_disk), naming its filesystem type and mount point.
          - Unset, O(allow_non_disk) decides.
        type: bool
  select:
    description:
      - V(all_data_disks) adds every data disk of the host as a target. A disk carrying mounted filesystems is tested
        through each of them as a directory (class V(filesystem) - the benchmark writes only in a run directory it
        creates there); a disk with nothing mounted as a device with the class O(select_mode).
        RV(ansible_facts.diskproof_selected_targets) lists these targets.
      - A data disk is a physical disk of C(lsblk) type C(disk) that does not hold C(/), C(/boot), C(/boot/efi),
        C(/efi) or active swap (directly or through partitions, LVM or md), is not removable, not empty, not
        memory-backed (C(ram), C(zram)), not a path of a multipath map, not already under one of O(targets) and not
        matched by O(exclude). Loop devices are never selected (every lab host sees every loop device of its
        machine) unless their backing file matches O(select_loop_files).
      - When the disk holding C(/) (or a swap area) cannot be identified, nothing is selected and the reason is
        listed in RV(refusals); so is a selection that leaves the host nothing to test (no O(targets) either).
    type: str
    choices: [none, all_data_disks]
    default: none
  select_mode:
    description: Safety class asked for the disks picked by O(select).
    type: str
    choices: [raw_read, raw_write]
    default: raw_read
  exclude:
    description:
      - Disks O(select) must not pick - shell-style patterns matched against the kernel name (V(sdc), V(nvme*)),
        the C(/dev) path, the serial, the WWN or, for a loop device, V(loop:<backing file>).
    type: list
    elements: str
    default: []
  select_loop_files:
    description:
      - Shell-style patterns of loop-device backing files O(select) may pick (labs and tests, for example
        V(/dev/shm/diskproof-lab-rack6/images/rack6-n01-d*.img)). Only loop devices have a backing file, so these
        patterns can never make another disk selectable.
    type: list
    elements: str
    default: []
  destructive:
    description:
      - Allow destructive (V(raw_write)) tests at all, usually the inventory variable C(diskproof_destructive).
      - V(raw_write) is granted for a target only when this is true B(and) every physical disk under it is
        allow-listed in O(destructive_allow) B(and) the target is a whole physical disk with no mount, no swap, no
        fstab line, no partition or partition table, no holder (LVM, md, device-mapper), no filesystem, RAID,
        LVM, swap or other signature (C(wipefs -n), C(blkid -p)), its signatures could be read, the kernel grants a
        read-only exclusive open (nothing holds it, not even a mount in another mount namespace), it is not
        read-only and it is not the boot disk (and the boot disk is known).
    type: bool
    default: false
  destructive_allow:
    description:
      - Disks that may be written, usually the inventory variable C(diskproof_destructive_allow).
      - An entry matches a disk's serial (case-insensitive) or WWN (V(0x5002538e40a22954), V(naa.5002...),
        V(eui....) spellings are equal), as shown in RV(ansible_facts.diskproof_disks).
      - Loop devices have no serial or WWN - an entry V(loop:<backing file>) matches the loop device whose
        backing file is exactly that path (lab and test disks). Kernel names and C(/dev) paths never match -
        they change between boots.
      - An entry V(HOST:<serial, WWN or loop:file>) is host-bound - it matches only when O(host) is HOST
        (case-insensitive), so a list shared by several hosts names each disk on its own host only. WWN entries
        are recommended - a WWN is unique worldwide, a serial only per vendor.
    type: list
    elements: str
    default: []
  host:
    description:
      - The inventory name of this host (the discover role passes C(inventory_hostname)). Host-bound entries of
        O(destructive_allow) match only this name, and every grant records it.
      - Empty - host-bound entries match nothing.
    type: str
    default: ""
  smart:
    description:
      - Run C(smartctl -j -x) on every described disk, and C(nvme smart-log -o json) on NVMe disks when C(nvme) is
        installed. With V(false) the health summary is V(not_checked).
    type: bool
    default: true
  fail_on_refusal:
    description:
      - Fail the task when a target did not get the class it asked for, a target does not exist, or O(select)
        could not run safely. The message lists every reason; the facts are returned with the failure.
      - With V(false) (the default, what the C(discover) role uses) the task succeeds and the reasons are in
        RV(refusals) for the caller to assert on.
    type: bool
    default: false
  allow_non_disk:
    description:
      - Default of O(targets[].allow_non_disk) for every directory target, usually the inventory variable
        C(diskproof_allow_non_disk). With V(false) a directory on a filesystem that is not on a disk is refused
        (code C(not_a_disk)); with V(true) it is accepted with a warning and marked C(not_a_disk) in
        RV(ansible_facts.diskproof_targets_resolved).
    type: bool
    default: false
extends_documentation_fragment:
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
  - diskproof.fleet.attributes.facts_module
notes:
  - Linux only - C(lsblk) (util-linux 2.33+ for C(-J -O)), C(/proc) and C(/sys) are required. C(wipefs), C(blkid),
    C(smartctl) and C(nvme) are used when installed; without C(wipefs) or C(blkid) signatures cannot be read and
    V(raw_write) is refused (C(probe_failed)).
  - Run as root (C(become)) - C(smartctl), C(wipefs) and C(blkid -p) need to open the devices. As another user
    they fail, which shows as no SMART data and C(probe_failed).
  - Never writes. C(wipefs) runs with C(-n) (no-act), C(blkid) with C(-p -c /dev/null) (low-level probe, no
    cache file), C(smartctl) with C(-x) (reads logs; it does not start self-tests).
  - A command that reads a disk (C(wipefs), C(blkid), C(smartctl), C(nvme)) is stopped after 60 s - a failing
    disk can block it for minutes - and the disk is reported not probed (C(usage.probe_errors), so V(raw_write) is
    refused as C(probe_failed)) or its C(smart)/C(nvme_smart_log) unavailable, with the command and the limit as
    the message. Asking a tool its version is stopped after 10 s (the version is then null, with a warning).
  - C(memory_bytes) is the kernel's MemTotal. Lab hosts share their machine's memory; the lab's declared figure is
    the inventory variable C(diskproof_memory_bytes).
seealso:
  - name: diskproof discover role and the destructive interlock
    description: The facts reference and every refusal reason, in C(docs/discover.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/discover.md
"""

EXAMPLES = r"""
- name: Discover the host and two targets (a directory and a raw device, read-only)
  diskproof.fleet.disk_facts:
    targets:
      - path: /srv/diskproof/d0
      - device: /dev/sdb
  become: true

- name: Every data disk (its mounted filesystems as directories, else read-only raw), except the backup disk
  diskproof.fleet.disk_facts:
    select: all_data_disks
    exclude:
      - sdz
      - "WD-WCC4E0123456"
  become: true

- name: Ask for destructive tests on one disk; fail listing every reason when it is refused
  diskproof.fleet.disk_facts:
    targets:
      - device: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4
        mode: raw_write
    destructive: true
    destructive_allow:
      - "0x5000c500a1b2c3d4"
    fail_on_refusal: true
  become: true

- name: Show the class each target got and the disks under it
  ansible.builtin.debug:
    msg: "{{ item.target }} -> {{ item.class }} on {{ item.disks | join(', ') }}"
  loop: "{{ ansible_facts['diskproof_targets_resolved'] }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    diskproof_host:
      description: The host.
      returned: always
      type: dict
      contains:
        hostname:
          description: Kernel host name.
          type: str
          returned: always
          sample: disc-n01
        kernel:
          description: Kernel release (C(uname -r)).
          type: str
          returned: always
          sample: 6.18.44-fc-v509
        architecture:
          description: Machine hardware name (C(uname -m)).
          type: str
          returned: always
          sample: x86_64
        memory_bytes:
          description: MemTotal of C(/proc/meminfo) in bytes; null when unreadable.
          type: int
          returned: always
          sample: 25276518400
        cpu_count:
          description: CPUs in the system (C(os.cpu_count())).
          type: int
          returned: always
          sample: 2
        cpu_usable:
          description: CPUs this process may run on (its affinity mask).
          type: int
          returned: always
          sample: 2
        distribution:
          description: C(id), C(version_id), C(name), C(pretty_name), C(version_codename) of C(/etc/os-release).
          type: dict
          returned: always
          sample: {id: debian, version_id: "12", name: Debian GNU/Linux, pretty_name: Debian GNU/Linux 12 (bookworm),
                   version_codename: bookworm}
        service_mgr:
          description:
            - V(systemd), V(openrc), V(runit), V(s6), V(upstart), V(sysvinit) or V(unknown), from PID 1's name and
              C(/run/systemd/system). A PID 1 that is no known manager with C(/etc/init.d) present gives
              V(sysvinit) - services are run through SysV scripts.
          type: str
          returned: always
          sample: sysvinit
        pid1:
          description: Name of PID 1 (C(/proc/1/comm)); null when unreadable.
          type: str
          returned: always
          sample: systemd
        tools:
          description:
            - Per tool (C(dd), C(fio), C(sysbench), C(bonnie++), C(ioping), C(smartctl), C(nvme)) its C(path) and
              C(version); both null when the tool is not installed, C(version) null when it could not be read.
          type: dict
          returned: always
          sample: {dd: {path: /usr/bin/dd, version: "9.1"}, fio: {path: /usr/bin/fio, version: "3.33"},
                   bonnie++: {path: /usr/sbin/bonnie++, version: 2.00a}, nvme: {path: null, version: null}}
        boot_disks:
          description: Physical disks holding C(/), C(/boot), C(/boot/efi) or C(/efi), each with the mount points it holds.
          type: dict
          returned: always
          sample: {vda: ["/"]}
        swap_disks:
          description: Physical disks holding active swap, each with its swap areas.
          type: dict
          returned: always
          sample: {sdb: [/dev/sdb2]}
        boot_unknown:
          description: Boot mounts or swap areas whose disk could not be identified (then nothing is raw_write).
          type: list
          elements: str
          returned: always
          sample: []
        swaps:
          description: Active swap areas of C(/proc/swaps) (C(filename), C(type), C(size_bytes), C(used_bytes), C(priority)).
          type: list
          elements: dict
          returned: always
          sample: []
        selection:
          description:
            - What O(select) did - C(select), C(mode), C(selected) (kernel names), C(skipped) (kernel name to reason),
              C(targets) (as RV(ansible_facts.diskproof_selected_targets)); null when O(select=none).
          type: dict
          returned: always
          sample: {select: all_data_disks, mode: raw_read, selected: [sdb, sdc], skipped: {sda: "boot disk (/, /boot)"},
                   targets: [{path: /srv/data1}, {device: /dev/sdc, mode: raw_read}]}
    diskproof_disks:
      description:
        - The physical disks under the targets, keyed by kernel name. Sizes in bytes; null when unknown.
      returned: always
      type: dict
      sample:
        loop5:
          name: loop5
          path: /dev/loop5
          maj_min: "7:5"
          type: loop
          transport: loop
          model: null
          vendor: null
          serial: null
          wwn: null
          firmware: null
          size_bytes: 1073741824
          rotational: false
          removable: false
          read_only: false
          logical_block_size: 512
          physical_block_size: 512
          scheduler: none
          write_cache: write back
          write_cache_enabled: null
          loop_backing_file: /dev/shm/diskproof-lab-disc/images/disc-n01-d1.img
          usage: {mount_points: [], partitions: [], holders: [], signatures: [], probe_errors: [], swap: [],
                  fstab: [], boot: [], exclusive_open: null}
          health: unavailable
          smart: {available: false, health: unavailable, exit_status: 1,
                  messages: ["error: /dev/loop5: Unable to detect device type"]}
          nvme_smart_log: null
      contains:
        name:
          description: Kernel name.
          type: str
          returned: always
        transport:
          description: V(nvme), V(sata), V(sas), V(usb), V(iscsi), V(fc), V(virtio), V(loop), V(memory), V(xen), V(mmc), V(scsi) or null.
          type: str
          returned: always
        serial:
          description: Serial number (lsblk, else smartctl, else sysfs) - what O(destructive_allow) matches.
          type: str
          returned: always
        wwn:
          description: World wide name (lsblk, else smartctl as C(0x...), else sysfs C(wwid)) - what O(destructive_allow) matches.
          type: str
          returned: always
        firmware:
          description: Firmware revision (smartctl, else lsblk C(rev), else sysfs).
          type: str
          returned: always
        scheduler:
          description: Active I/O scheduler of C(/sys/block/<disk>/queue/scheduler).
          type: str
          returned: always
        write_cache:
          description: The kernel's view, C(/sys/block/<disk>/queue/write_cache) (V(write back) or V(write through)).
          type: str
          returned: always
        write_cache_enabled:
          description: The device's own volatile write cache setting as smartctl reads it (ATA); null when unknown.
          type: bool
          returned: always
        loop_backing_file:
          description: Backing file of a loop device (what C(loop:) entries of O(destructive_allow) match); null otherwise.
          type: str
          returned: always
        usage:
          description:
            - What uses the disk or anything built on it - C(mount_points) (V(/srv/data (sdb1))), C(partitions),
              C(holders) (LVM, md, device-mapper users), C(signatures) (each C(device), C(offset), C(type), C(uuid),
              C(label), C(kind) - V(partition_table), V(filesystem), V(raid), V(lvm), V(swap), V(crypto),
              V(volume_member)), C(probe_errors) (signatures that could not be read), C(swap) (active swap areas),
              C(fstab) (fstab lines naming it by path, UUID, LABEL, PARTUUID or PARTLABEL), C(boot) (the boot mount
              points on it - C(/), C(/boot), C(/boot/efi), C(/efi)), C(exclusive_open) (V(ok) when the kernel
              granted a read-only exclusive open, else the error - C(EBUSY) and its message while anything holds
              the disk; null when not tried - it is tried only for disks under a V(raw_write) request).
          type: dict
          returned: always
        health:
          description:
            - V(passed), V(failed) (smartctl says failing, or an NVMe critical warning), V(unknown) (SMART read
              but no overall status), V(unavailable) (no SMART here, for example virtio or loop) or V(not_checked)
              (O(smart=false) or smartctl not installed).
          type: str
          returned: always
        smart:
          description:
            - Summary of C(smartctl -j -x) - C(available), C(health), C(passed), C(exit_status), C(exit_meanings),
              C(messages), C(smartctl_version), C(device_type), C(protocol), C(model), C(vendor), C(serial), C(wwn),
              C(firmware), C(capacity_bytes), C(logical_block_size), C(physical_block_size), C(rotation_rate),
              C(write_cache_enabled), C(temperature_c), C(power_on_hours), C(power_cycles), C(ata) (reallocated,
              pending, offline uncorrectable sectors, UDMA CRC errors, attributes failing now), C(nvme), C(scsi).
            - Null when not run.
          type: dict
          returned: always
        nvme_smart_log:
          description:
            - Summary of C(nvme smart-log -o json) for NVMe disks - C(available), C(passed), C(critical_warning),
              C(temperature_c), C(available_spare), C(available_spare_threshold), C(percentage_used), C(media_errors),
              C(error_log_entries), C(unsafe_shutdowns), C(power_on_hours), C(power_cycles), C(data_units_read),
              C(data_units_written), C(data_read_bytes), C(data_written_bytes), C(exit_status), C(messages).
            - Null for other disks or when C(nvme) is not installed.
          type: dict
          returned: always
    diskproof_selected_targets:
      description:
        - The targets O(select) added, as the benchmark role takes them - C(path) (the mount point) for each mounted
          filesystem of a selected disk; C(device) (its C(/dev) path) and C(mode) (O(select_mode)) for a disk with
          nothing mounted. Empty when O(select=none). The benchmark role tests them after its C(diskproof_targets).
      returned: always
      type: list
      elements: dict
      sample: [{path: /srv/data1}, {device: /dev/sdc, mode: raw_read}]
    diskproof_target_identities:
      description:
        - Target directory (normalized path) or device, as the target names it, to the identity of the disk under it -
          C(device), C(disks), C(model), C(serial), C(wwn), C(firmware), C(size_bytes), C(rotational), C(transport)
          (null fields and no C(device) for a target on several disks, md or LVM). The benchmark role copies it into
          every result record, so the report can group peers and match a baseline by serial or WWN.
        - The same as the filter P(diskproof.fleet.target_identities#filter) makes of C(diskproof_targets_resolved) and
          C(diskproof_disks), made on the host so the controller need not load a filter plugin for every host.
      returned: always
      type: dict
      sample:
        /srv/diskproof/d0: {device: sdb, disks: [sdb], model: ST4000NM0035, serial: ZC1A2B3C, wwn: "0x5000c500a1b2c3d4",
                            firmware: TN05, size_bytes: 4000787030016, rotational: true, transport: sata}
    diskproof_targets_resolved:
      description: One entry per target, O(targets) first in order, then the disks O(select) picked.
      returned: always
      type: list
      elements: dict
      sample:
        - target: {device: /dev/loop5}
          kind: device
          source: inventory
          requested: raw_write
          class: raw_read
          granted: false
          device: loop5
          device_path: /dev/loop5
          disks: [loop5]
          refusals:
            - {code: not_destructive, message: diskproof_destructive is not true}
      contains:
        target:
          description:
            - The target as given (C(path) or C(device)); for selected disks the mount point of a filesystem on it
              (C(path)) or the disk's C(/dev) path (C(device)).
          type: dict
          returned: always
        kind:
          description: V(path) or V(device).
          type: str
          returned: always
        source:
          description: V(inventory) (from O(targets)) or V(select).
          type: str
          returned: always
        requested:
          description: The class asked for.
          type: str
          returned: always
        class:
          description:
            - The class granted - V(filesystem), V(raw_read) or V(raw_write). A refused V(raw_write) keeps V(raw_read).
              Null when the target is unusable (missing, not a directory, not a block device).
          type: str
          returned: always
        granted:
          description: Whether C(class) is what was requested.
          type: bool
          returned: always
        device:
          description: Kernel name of the block device holding the directory or named by the device path; null when unknown (tmpfs).
          type: str
          returned: always
        device_path:
          description: C(/dev) path of C(device).
          type: str
          returned: always
        disks:
          description: Kernel names of the physical disks under the target (keys of RV(ansible_facts.diskproof_disks)).
          type: list
          elements: str
          returned: always
        filesystem:
          description: Filesystem type of the mount holding a directory target (from C(/proc/self/mountinfo)).
          type: str
          returned: always
        mount_point:
          description: Mount point of that filesystem; null for devices.
          type: str
          returned: always
        not_a_disk:
          description:
            - True when that filesystem is not on a disk (see O(allow_non_disk)); such a target is refused unless
              allowed, and when allowed the benchmark records carry C(target.not_a_disk).
          type: bool
          returned: always
        grant:
          description:
            - For a device target granted V(raw_read) or V(raw_write) - the grant bound to the disk - C(class), C(host)
              (O(host)), C(device), C(device_path) and C(disks), each disk with C(name), C(maj_min), C(serial), C(wwn),
              C(size_sectors), C(diskseq) (C(/sys/block/<disk>/diskseq), new at every attach) and C(loop) (the loop
              identity - C(backing_file), C(st_dev), C(st_ino) of the backing file - null for other disks).
            - The benchmark runner (M(diskproof.fleet.bench_run)) reads all of it again right before each raw job
              and refuses the job when anything changed, or, for V(raw_write), when the disk is now mounted,
              partitioned, held or carries a signature. Null for other targets.
          type: dict
          returned: always
        refusals:
          description:
            - Why the requested class was not granted, each C(code) and C(message), all of them. Codes -
              C(not_found), C(not_directory), C(not_a_disk), C(not_block_device), C(not_destructive),
              C(not_allow_listed), C(not_whole_disk), C(boot_disk), C(boot_disk_unknown), C(mounted), C(swap),
              C(fstab), C(partitioned), C(holders), C(busy), C(signature), C(probe_failed), C(read_only).
          type: list
          elements: dict
          returned: always
refusals:
  description:
    - Every refusal of every target as one line each (V(TARGET (requested CLASS\) CODE - MESSAGE)), plus problems of
      O(select). Empty when every target got what it asked for.
  returned: always
  type: list
  elements: str
  sample:
    - "/dev/loop5 (requested raw_write) not_destructive: diskproof_destructive is not true"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils._discovery import DISCOVER_OPTIONS, Discovery


def main():
    module = AnsibleModule(argument_spec=dict(DISCOVER_OPTIONS, fail_on_refusal=dict(type="bool", default=False)),
                           supports_check_mode=True)
    facts, refusals = Discovery(module, module.params).discover()
    if refusals and module.params["fail_on_refusal"]:
        module.fail_json(msg="%d refusal(s): %s" % (len(refusals), " | ".join(refusals)), refusals=refusals,
                         ansible_facts=facts)
    module.exit_json(changed=False, refusals=refusals, ansible_facts=facts)


if __name__ == "__main__":
    main()
