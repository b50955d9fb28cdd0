"""_discover: target resolution, selection and the refusal matrix over real captured outputs (read by the parsers
of module_utils/_parse, tested in test_parse_<source>.py).

Fixtures are in tests/fixtures/discover/, each with a .src.md saying how and where it was captured.
This kernel has neither device-mapper nor md, so the few LVM/md/multipath trees below are built by
hand in lsblk's own layout (marked HAND-BUILT); everything else is real output.
"""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _discover
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.blkid import blkid_result
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fstab import parse_fstab
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.lsblk import parse_lsblk
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import parse_mountinfo
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.smartctl import parse_smartctl
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.swaps import parse_swaps
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.wipefs import parse_wipefs_json, wipefs_result
from test_parse_fstab import FSTAB  # the hand-written fstab the HostView tests match against

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")

# Device numbers of the captured devices (what os.stat gives for their /dev nodes at capture time).
VM_BLOCK_DEVS = {
    "/dev/vda": "254:0", "/dev/loop0": "7:0", "/dev/loop1": "7:1", "/dev/loop2": "7:2", "/dev/loop3": "7:3",
    "/dev/loop4": "7:4", "/dev/loop2p1": "259:0", "/dev/loop2p2": "259:1", "/dev/zram0": "253:0",
}
LAB_BLOCK_DEVS = {"/dev/vda": "254:0", "/dev/loop3": "7:3", "/dev/loop7": "7:7", "/dev/loop8": "7:8"}
ALLOW_CLEAN = ["loop:/dev/shm/dp-disc-cap/clean.img"]


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def vm_host(fstab_text="", swaps_text=None, mountinfo_text=None, block_devs=None):
    topology = _discover.Topology(parse_lsblk(fixture("vm-states.lsblk.json")))
    return _discover.HostView(
        topology,
        parse_mountinfo(mountinfo_text if mountinfo_text is not None else fixture("vm-states.mountinfo.txt")),
        parse_swaps(swaps_text if swaps_text is not None else fixture("vm-states.swaps.txt")),
        parse_fstab(fstab_text),
        (block_devs or VM_BLOCK_DEVS).get,
    )


def lab_host():
    topology = _discover.Topology(parse_lsblk(fixture("lab-disc-n01.lsblk.json")))
    return _discover.HostView(topology, parse_mountinfo(fixture("lab-disc-n01.mountinfo.txt")),
                              parse_swaps(fixture("lab-disc-n01.swaps.txt")), [], LAB_BLOCK_DEVS.get)


def wipefs_probe(name, rc=0, stderr=""):
    signatures, error = wipefs_result(rc, fixture(name) if rc == 0 else "", stderr)
    first = signatures[0] if signatures else {}
    return {"signatures": signatures, "ids": {"uuid": first.get("uuid"), "label": first.get("label")}, "error": error}


def blkid_probe(kname, name, rc=0):
    values, error = blkid_result(rc, fixture(name), "")
    signatures = [{"device": kname, "offset": None, "type": values["TYPE"], "uuid": values.get("UUID"),
                   "label": values.get("LABEL")}] if values.get("TYPE") else []
    ids = {"uuid": values.get("UUID"), "label": values.get("LABEL"), "partuuid": values.get("PART_ENTRY_UUID"),
           "partlabel": values.get("PART_ENTRY_NAME")}
    return {"signatures": signatures, "ids": ids, "error": error}


# What the module's probes return for the captured devices: wipefs on each disk, blkid on the partitions.
VM_PROBES = {
    "loop0": ("loop-clean.wipefs.json", {}),
    "loop1": ("loop-ext4.wipefs.json", {}),
    "loop2": ("loop-dos-table.wipefs.json",
              {"loop2p1": "loop-ext4-mounted-part.blkid.txt", "loop2p2": "loop-swap-part.blkid.txt"}),
    "loop4": ("loop-ext4-mounted.wipefs.json", {}),
}


def vm_probes(disk):
    if disk == "vda":
        return {"vda": wipefs_probe("vda.wipefs.txt", rc=1, stderr=fixture("vda.wipefs.txt"))}
    wipefs_name, parts = VM_PROBES[disk]
    probes = {disk: wipefs_probe(wipefs_name)}
    for kname, name in parts.items():
        probes[kname] = blkid_probe(kname, name)
    return probes


def vm_disk(host, disk, sysfs=None, smart=None, probes=None):
    backing = {"loop0": "clean.img", "loop1": "ext4.img", "loop2": "part.img", "loop4": "mnt.img"}.get(disk)
    values = {"loop_backing_file": "/dev/shm/dp-disc-cap/" + backing if backing else None, "scheduler": "none"}
    values.update(sysfs or {})
    usage = host.disk_usage(disk, probes if probes is not None else vm_probes(disk))
    return _discover.disk_record(host.topology.nodes[disk], values, smart, None, usage)


def codes(refusals):
    return [refusal["code"] for refusal in refusals]


# ---------------------------------------------------------------------------------------------------
# Topology: physical disks through partitions, LVM/dm, md, multipath
# ---------------------------------------------------------------------------------------------------


def node(name, maj_min, kind, children=(), mountpoints=(None,), **extra):
    raw = {"name": name, "kname": name, "maj:min": maj_min, "type": kind, "mountpoints": list(mountpoints),
           "children": list(children)}
    raw.update(extra)
    return raw


# HAND-BUILT (no dm/md in this kernel): root LV on md0 (raid1 over sda1 + sdb1), /boot on sda2/sdb2 md1,
# a data disk sdc, sdd with a swap partition, sde removable, sdf with a serial to exclude, two paths
# (sdg, sdh) of one multipath map. lsblk prints a device under each of its parents, as here.
def server_tree():
    def md0():
        return node("md0", "9:0", "raid1", children=[node("dm-0", "253:0", "lvm", mountpoints=["/"])])

    def md1():
        return node("md1", "9:1", "raid1", mountpoints=["/boot"])

    def mpath():
        return node("dm-1", "253:1", "mpath")

    return {"blockdevices": [
        node("sda", "8:0", "disk", size=480103981056, serial="S1", children=[
            node("sda1", "8:1", "part", children=[md0()]), node("sda2", "8:2", "part", children=[md1()])]),
        node("sdb", "8:16", "disk", size=480103981056, serial="S2", children=[
            node("sdb1", "8:17", "part", children=[md0()]), node("sdb2", "8:18", "part", children=[md1()])]),
        node("sdc", "8:32", "disk", size=4000787030016, serial="DATA1", wwn="0x5000c500a1b2c3d4"),
        node("sdd", "8:48", "disk", size=4000787030016, serial="DATA2", children=[
            node("sdd1", "8:49", "part", mountpoints=["[SWAP]"])]),
        node("sde", "8:64", "disk", size=16008609792, rm=True),
        node("sdf", "8:80", "disk", size=4000787030016, serial="WD-BACKUP-01"),
        node("sdg", "8:96", "disk", size=2000398934016, children=[mpath()]),
        node("sdh", "8:112", "disk", size=2000398934016, children=[mpath()]),
        node("sr0", "11:0", "rom", size=1073741312, rm=True),
    ]}


SERVER_MOUNTINFO = (
    "22 1 253:0 / / rw,relatime - ext4 /dev/mapper/vg0-root rw\n"
    "23 22 9:1 / /boot rw,relatime - ext4 /dev/md1 rw\n"
)
SERVER_SWAPS = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sdd1 partition\t8388604\t\t0\t\t-2\n"
SERVER_DEVS = {"/dev/mapper/vg0-root": "253:0", "/dev/md1": "9:1", "/dev/sdd1": "8:49"}


def server_host(mountinfo=SERVER_MOUNTINFO, swaps=SERVER_SWAPS):
    topology = _discover.Topology(parse_lsblk(json.dumps(server_tree())))
    return _discover.HostView(topology, parse_mountinfo(mountinfo), parse_swaps(swaps), [],
                              SERVER_DEVS.get)


@pytest.mark.parametrize(("kname", "disks"), [
    ("dm-0", ["sda", "sdb"]),     # LV on md raid1 on two partitions
    ("md0", ["sda", "sdb"]),
    ("sda1", ["sda"]),
    ("sdc", ["sdc"]),
    ("dm-1", ["sdg", "sdh"]),     # multipath map over two paths
    ("nope", []),
])
def test_physical_disks_through_partitions_lvm_md_and_multipath(kname, disks):
    assert server_host().topology.physical_disks(kname) == disks


def test_physical_disks_of_real_partition_and_descendants():
    topology = vm_host().topology
    assert topology.physical_disks("loop2p1") == ["loop2"]
    assert topology.descendants("loop2") == ["loop2p1", "loop2p2"]
    assert topology.roots == ["loop0", "loop1", "loop2", "loop3", "loop4", "zram0", "vda"]


def test_node_listed_under_two_parents_is_one_node_with_both_parents():
    topology = server_host().topology
    assert topology.parents["md0"] == ["sda1", "sdb1"]
    assert topology.descendants("sda") == ["sda1", "sda2", "md0", "md1", "dm-0"]


@pytest.mark.parametrize(("kind", "expected"), [
    ("dos", "partition_table"), ("gpt", "partition_table"), ("PMBR", "partition_table"),
    ("ext4", "filesystem"), ("xfs", "filesystem"), ("linux_raid_member", "raid"), ("isw_raid_member", "raid"),
    ("LVM2_member", "lvm"), ("swap", "swap"), ("crypto_LUKS", "crypto"), ("zfs_member", "volume_member"),
])
def test_signature_kind(kind, expected):
    assert _discover.signature_kind(kind) == expected


# ---------------------------------------------------------------------------------------------------
# Host facts: the service manager, the transport
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("comm", "run_systemd", "openrc", "initd", "expected"), [
    ("systemd\n", True, False, True, "systemd"),
    ("init", True, False, True, "systemd"),          # /run/systemd/system: systemd booted (init symlink)
    ("init", False, True, True, "openrc"),
    ("init", False, False, True, "sysvinit"),
    ("runit", False, False, False, "runit"),
    ("s6-svscan", False, False, False, "s6"),
    ("process_api", False, False, True, "sysvinit"),  # this VM: an unknown PID 1, SysV scripts in /etc/init.d
    ("tini", False, False, False, "unknown"),
    (None, False, False, False, "unknown"),
])
def test_service_manager(comm, run_systemd, openrc, initd, expected):
    assert _discover.service_manager(comm, run_systemd, openrc, initd) == expected


def test_transport_of_real_and_typical_nodes():
    nodes = vm_host().topology.nodes
    assert [_discover.transport(nodes[name]) for name in ("vda", "loop0", "zram0")] == ["virtio", "loop", "memory"]
    assert _discover.transport({"kname": "sda", "tran": "SATA"}) == "sata"
    assert _discover.transport({"kname": "nvme0n1", "tran": None, "subsystems": "block:nvme:pci"}) == "nvme"
    assert _discover.transport({"kname": "sdz", "tran": None, "subsystems": "block:scsi:pci"}) == "scsi"


# ---------------------------------------------------------------------------------------------------
# HostView: mounts, swap, fstab and the boot disk
# ---------------------------------------------------------------------------------------------------


def test_vm_boot_swap_and_mounts():
    host = vm_host()
    assert host.boot_disks == {"vda": ["/"]}
    assert host.swap_disks == {"loop2": ["/dev/loop2p2"]}
    assert host.boot_unknown == []
    assert host.mount_points["loop4"] == ["/tmp/dp-disc-cap/mnt"]
    assert host.mount_points["vda"] == ["/", "/run/netns"]


def test_lab_boot_disk_and_target_directory():
    host = lab_host()
    assert host.boot_disks == {"vda": ["/"]} and host.swap_disks == {}
    assert host.node_for_file("/srv/diskproof/d0", "7:3") == "loop3"
    # /srv itself is a tmpfs bind: no disk
    assert host.node_for_file("/srv", "0:27") is None


def test_directory_with_anonymous_device_number_resolves_through_its_mount():
    """btrfs and overlay report st_dev 0:N; the mount's source device is used instead."""
    host = vm_host()
    assert host.node_for_file("/tmp/dp-disc-cap/mnt/sub/dir", "0:99") == "loop4"
    assert host.node_for_file("/tmp/elsewhere", "0:99") == "vda"


def test_boot_disk_through_lvm_and_md_and_swap_on_a_partition():
    host = server_host()
    assert host.boot_disks == {"sda": ["/", "/boot"], "sdb": ["/", "/boot"]}
    assert host.swap_disks == {"sdd": ["/dev/sdd1"]}


def test_unidentifiable_root_is_reported():
    host = server_host(mountinfo="22 1 0:31 / / rw - overlay overlay rw\n", swaps="")
    assert host.boot_unknown == ["/ (overlay overlay)"]
    host = server_host(swaps="Filename Type Size Used Priority\n/dev/gone partition 1024 0 -2\n")
    assert host.boot_unknown == ["swap /dev/gone"]


def test_fstab_matches_by_uuid_label_partuuid_and_path():
    host = vm_host(fstab_text=FSTAB)
    assert vm_disk(host, "loop1")["usage"]["fstab"] == ["UUID=520f938e-c205-4857-92f0-787e39468302 /data ext4"]
    assert vm_disk(host, "loop2")["usage"]["fstab"] == ['LABEL="dpdata" /srv/data ext4', "PARTUUID=872bb48c-02 none swap"]
    assert vm_disk(host, "loop4")["usage"]["fstab"] == ["/dev/loop4 /mnt/four ext4"]
    assert vm_disk(host, "loop0")["usage"]["fstab"] == []


def test_disk_usage_of_the_partitioned_disk():
    usage = vm_disk(vm_host(), "loop2")["usage"]
    assert usage["mount_points"] == ["/tmp/dp-disc-cap/p1 (loop2p1)"]
    assert usage["partitions"] == ["loop2p1", "loop2p2"]
    assert usage["swap"] == ["/dev/loop2p2 (loop2p2)"]
    assert [(s["device"], s["type"], s["kind"]) for s in usage["signatures"]] == [
        ("loop2", "dos", "partition_table"), ("loop2p1", "ext4", "filesystem"), ("loop2p2", "swap", "swap")]
    assert usage["holders"] == [] and usage["probe_errors"] == [] and usage["boot"] == []


def test_disk_usage_holders_from_tree_and_sysfs():
    host = server_host()
    usage = host.disk_usage("sda", {name: {"signatures": [], "ids": {}, "error": None}
                                    for name in host.topology.subtree("sda")}, {"sda": ["dm-9"]})
    assert usage["holders"] == ["md0", "md1", "dm-0", "dm-9"]
    assert usage["mount_points"] == ["/boot (md1)", "/ (dm-0)"]
    assert usage["boot"] == ["/", "/boot"]


def test_unprobed_descendant_is_a_probe_error():
    host = vm_host()
    usage = host.disk_usage("loop2", {"loop2": wipefs_probe("loop-dos-table.wipefs.json")})
    assert usage["probe_errors"] == ["loop2p1: not probed", "loop2p2: not probed"]


# ---------------------------------------------------------------------------------------------------
# disk_record
# ---------------------------------------------------------------------------------------------------


def test_disk_record_of_the_vm_disk():
    host = vm_host()
    smart = parse_smartctl(fixture("vda.smartctl-x.json"))
    sysfs = {"serial": "overlayblk", "write_cache": "write back", "rotational": "1",
             "scheduler": "none [mq-deadline] kyber bfq"}
    record = vm_disk(host, "vda", sysfs=sysfs, smart=smart)
    assert {key: record[key] for key in ("name", "path", "transport", "serial", "wwn", "model", "rotational",
                                         "logical_block_size", "physical_block_size", "size_bytes", "scheduler",
                                         "write_cache", "write_cache_enabled", "health")} == {
        "name": "vda", "path": "/dev/vda", "transport": "virtio", "serial": "overlayblk", "wwn": None, "model": None,
        "rotational": True, "logical_block_size": 512, "physical_block_size": 4096, "size_bytes": 274877906944,
        "scheduler": "mq-deadline", "write_cache": "write back", "write_cache_enabled": None, "health": "unavailable"}
    assert record["usage"]["boot"] == ["/"]
    assert record["usage"]["probe_errors"] == [
        "vda: wipefs exit code 1: wipefs: error: /dev/vda: probing initialization failed: Operation not permitted"]


@pytest.mark.parametrize(("smart", "nvme", "health"), [
    (None, None, "not_checked"),
    ({"available": False, "health": "unavailable"}, None, "unavailable"),
    ({"available": True, "health": "failed"}, None, "failed"),
    ({"available": False, "health": "unavailable"}, {"available": True, "passed": False}, "failed"),
    (None, {"available": True, "passed": True}, "passed"),
])
def test_disk_record_health(smart, nvme, health):
    node = vm_host().topology.nodes["loop0"]
    assert _discover.disk_record(node, {}, smart, nvme, {})["health"] == health


def test_disk_record_identity_priority_lsblk_then_smartctl_then_sysfs():
    node = dict(vm_host().topology.nodes["loop0"], serial=None, wwn="0x5000c500a1b2c3d4", model=None, rev="SN03")
    smart = {"serial": "ZA1234", "wwn": "0x5000c500ffffffff", "model": "ST4000NM0035", "firmware": "TN05"}
    record = _discover.disk_record(node, {"serial": "sysfs-serial", "model": "sysfs-model"}, smart, None, {})
    assert (record["serial"], record["wwn"], record["model"], record["firmware"]) == (
        "ZA1234", "0x5000c500a1b2c3d4", "ST4000NM0035", "TN05")


# ---------------------------------------------------------------------------------------------------
# The destructive interlock: allow list and the refusal matrix
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("disk", "allow", "match"), [
    ({"serial": "ZA1234AB"}, ["za1234ab"], "za1234ab"),
    ({"serial": "ZA1234AB"}, ["ZA1234A"], None),
    ({"wwn": "0x5000c500a1b2c3d4"}, ["naa.5000C500A1B2C3D4"], "naa.5000C500A1B2C3D4"),
    ({"wwn": "0x5000c500a1b2c3d4"}, ["5000c500a1b2c3d4"], "5000c500a1b2c3d4"),
    ({"wwn": "eui.0025388b91b2e6d1"}, ["eui.0025388B91B2E6D1"], "eui.0025388B91B2E6D1"),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["loop:/dev/shm/x/d1.img"], "loop:/dev/shm/x/d1.img"),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["loop:/dev/shm/x/d1"], None),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["/dev/shm/x/d1.img", "/dev/loop5", "loop5"], None),
    # kernel names, /dev paths and blank entries never match; a disk without identity never matches
    ({"name": "sdb", "path": "/dev/sdb", "serial": "S1"}, ["sdb", "/dev/sdb", "", "  "], None),
    ({"serial": None, "wwn": None}, ["", "loop:"], None),
    # a loop: entry never matches a real disk, whatever its serial
    ({"serial": "loop:/dev/shm/x/d1.img"}, ["loop:/dev/shm/x/d1.img"], None),
])
def test_allow_list_match(disk, allow, match):
    assert _discover.allow_list_match(disk, allow) == match


@pytest.mark.parametrize(("target", "destructive", "allow", "expected"), [
    # the acceptance matrix, on real captured states
    ("loop0", True, ALLOW_CLEAN, []),                                                   # clean, allowed: granted
    ("loop0", False, ALLOW_CLEAN, ["not_destructive"]),                                 # diskproof_destructive unset
    ("loop0", True, [], ["not_allow_listed"]),                                          # not allow-listed
    ("loop1", True, ["loop:/dev/shm/dp-disc-cap/ext4.img"], ["signature"]),             # ext4 signature
    ("loop4", True, ["loop:/dev/shm/dp-disc-cap/mnt.img"], ["mounted", "signature"]),   # mounted
    ("loop2", True, ["loop:/dev/shm/dp-disc-cap/part.img"],                             # partitioned (+ in use)
     ["mounted", "swap", "partitioned", "signature"]),
    # every reason at once
    ("loop2", False, [], ["not_destructive", "not_allow_listed", "mounted", "swap", "partitioned", "signature"]),
    ("loop2p1", True, ["loop:/dev/shm/dp-disc-cap/part.img"],
     ["not_whole_disk", "mounted", "swap", "partitioned", "signature"]),
    ("vda", True, ["overlayblk"], ["boot_disk", "mounted", "probe_failed"]),
])
def test_refusal_matrix_on_captured_states(target, destructive, allow, expected):
    host = vm_host()
    disks = [vm_disk(host, name, sysfs={"serial": "overlayblk"} if name == "vda" else None)
             for name in host.topology.physical_disks(target)]
    refusals = _discover.raw_write_refusals(target, host.topology, disks, destructive, allow, host.boot_unknown)
    assert codes(refusals) == expected


def test_refusal_messages_name_the_evidence():
    host = vm_host(fstab_text=FSTAB)
    refusals = _discover.raw_write_refusals("loop2p1", host.topology, [vm_disk(host, "loop2")], False, [],
                                            host.boot_unknown)
    assert {refusal["code"]: refusal["message"] for refusal in refusals} == {
        "not_destructive": "diskproof_destructive is not true",
        "not_allow_listed": "loop2 (loop backing file /dev/shm/dp-disc-cap/part.img) is not in "
                            "diskproof_destructive_allow",
        "not_whole_disk": "loop2p1 is a partition on loop2, not a whole disk: raw writes go to whole disks only",
        "mounted": "loop2 is mounted: /tmp/dp-disc-cap/p1 (loop2p1)",
        "swap": "loop2 holds active swap: /dev/loop2p2 (loop2p2)",
        "fstab": 'loop2 is named in /etc/fstab: LABEL="dpdata" /srv/data ext4; PARTUUID=872bb48c-02 none swap',
        "partitioned": "loop2 is partitioned: dos partition table, partitions loop2p1, loop2p2",
        "signature": "loop2 carries signatures: ext4 (filesystem) on loop2p1; swap (swap) on loop2p2",
    }


def test_refusals_for_holders_read_only_unknown_boot_and_missing_identity():
    host = server_host(mountinfo="22 1 0:31 / / rw - overlay overlay rw\n", swaps="")
    probes = {name: {"signatures": [], "ids": {}, "error": None} for name in host.topology.subtree("sdg")}
    disk = _discover.disk_record(host.topology.nodes["sdg"], {"read_only": "1"}, None, None,
                                 host.disk_usage("sdg", probes))
    disk["read_only"] = True
    refusals = _discover.raw_write_refusals("sdg", host.topology, [disk], True, ["S1"], host.boot_unknown)
    assert codes(refusals) == ["not_allow_listed", "boot_disk_unknown", "holders", "read_only"]
    assert refusals[0]["message"] == "sdg has no serial, WWN or loop backing file to match diskproof_destructive_allow"
    assert refusals[1]["message"] == ("the disk holding / (overlay overlay) could not be identified, so it cannot "
                                      "be ruled out")
    assert refusals[2]["message"] == "sdg is in use by dm-1"


@pytest.mark.parametrize(("exclusive", "expected"), [
    (None, []), ("ok", []), ("EBUSY: Device or resource busy", ["busy"]),
])
def test_exclusive_open_refusal(exclusive, expected):
    """A mount in another mount namespace shows nowhere but in the kernel refusing O_EXCL (EBUSY)."""
    host = vm_host()
    usage = host.disk_usage("loop0", vm_probes("loop0"), {}, exclusive)
    disk = _discover.disk_record(host.topology.nodes["loop0"], {"loop_backing_file": "/dev/shm/dp-disc-cap/clean.img"},
                                 None, None, usage)
    refusals = _discover.raw_write_refusals("loop0", host.topology, [disk], True, ALLOW_CLEAN, [])
    assert codes(refusals) == expected
    if expected:
        assert refusals[0]["message"] == ("loop0: the kernel refuses an exclusive open (EBUSY: Device or resource busy): "
                                          "something holds it, possibly a mount in another mount namespace")


def test_lab_raw_disk_is_granted_and_filesystem_disk_refused():
    host = lab_host()
    clean = {"loop7": {"signatures": parse_wipefs_json(fixture("lab-disc-n01-d1.wipefs.json")), "ids": {},
                       "error": None}}
    used = {"loop3": {"signatures": parse_wipefs_json(fixture("lab-disc-n01-d0.wipefs.json")), "ids": {},
                      "error": None}}
    images = "/dev/shm/diskproof-lab-disc/images/"
    raw = _discover.disk_record(host.topology.nodes["loop7"], {"loop_backing_file": images + "disc-n01-d1.img"}, None,
                                None, host.disk_usage("loop7", clean))
    ext4 = _discover.disk_record(host.topology.nodes["loop3"], {"loop_backing_file": images + "disc-n01-d0.img"}, None,
                                 None, host.disk_usage("loop3", used))
    allow = ["loop:" + images + "disc-n01-d1.img", "loop:" + images + "disc-n01-d0.img"]
    assert _discover.raw_write_refusals("loop7", host.topology, [raw], True, allow, host.boot_unknown) == []
    assert codes(_discover.raw_write_refusals("loop3", host.topology, [ext4], True, allow, host.boot_unknown)) == [
        "mounted", "signature"]


# ---------------------------------------------------------------------------------------------------
# select: all_data_disks
# ---------------------------------------------------------------------------------------------------


def test_select_on_the_vm_picks_nothing():
    selected, skipped, problems = _discover.select_data_disks(vm_host(), [], {})
    assert selected == [] and problems == []
    assert skipped == {"loop0": "type loop is never a data disk", "loop1": "type loop is never a data disk",
                       "loop2": "type loop is never a data disk", "loop3": "type loop is never a data disk",
                       "loop4": "type loop is never a data disk", "zram0": "memory-backed", "vda": "boot disk (/)"}


def test_select_on_a_server_skips_boot_swap_removable_and_excluded():
    identities = {"sdf": {"serial": "WD-BACKUP-01", "wwn": None}, "sdc": {"serial": "DATA1", "wwn": "0x5000c500a1b2c3d4"}}
    selected, skipped, problems = _discover.select_data_disks(server_host(), ["WD-BACKUP-*"], identities)
    assert selected == ["sdc"] and problems == []
    multipath = "a path of multipath map dm-1 (name the map as a device target)"
    assert skipped == {"sda": "boot disk (/, /boot)", "sdb": "boot disk (/, /boot)", "sdd": "holds active swap (/dev/sdd1)",
                       "sde": "removable", "sdf": "excluded by 'WD-BACKUP-*'", "sdg": multipath, "sdh": multipath,
                       "sr0": "type rom is never a data disk"}
    selected, skipped, problems = _discover.select_data_disks(server_host(), ["0x5000c500*", "/dev/sdf"], identities)
    assert selected == [] and skipped["sdc"] == "excluded by '0x5000c500*'" and skipped["sdf"] == "excluded by '/dev/sdf'"
    selected, skipped, problems = _discover.select_data_disks(server_host(), ["DATA?"], identities)
    assert selected == ["sdf"]


def test_select_refuses_when_the_root_disk_is_unknown():
    host = server_host(mountinfo="22 1 0:31 / / rw - overlay overlay rw\n")
    selected, skipped, problems = _discover.select_data_disks(host, [], {})
    assert selected == [] and skipped["sdc"] == "boot disk unknown"
    assert problems == ["select all_data_disks: the disk holding / (overlay overlay) could not be identified, so no disk "
                        "is selected (it could be the boot disk)"]


LAB_IMAGES = "/dev/shm/diskproof-lab-disc/images/"
LAB_IDENTITIES = {"loop%d" % number: {"serial": None, "wwn": None, "loop_backing_file": LAB_IMAGES + image}
                  for number, image in ((3, "disc-n01-d0.img"), (7, "disc-n01-d1.img"), (8, "disc-n02-d0.img"),
                                        (9, "disc-n02-d1.img"))}


def test_select_picks_loop_devices_only_by_their_backing_file_and_excludes_by_loop_name():
    # Without select_loop_files no loop device is a data disk (the lab host sees every loop device of the machine).
    selected, skipped, problems = _discover.select_data_disks(lab_host(), [], LAB_IDENTITIES)
    assert selected == [] and problems == [] and skipped["loop3"] == "type loop is never a data disk"
    selected, skipped, problems = _discover.select_data_disks(lab_host(), [], LAB_IDENTITIES,
                                                              [LAB_IMAGES + "disc-n01-d*.img"])
    assert selected == ["loop3", "loop7"] and problems == []
    assert skipped["loop8"] == ("loop device whose backing file (%sdisc-n02-d0.img) matches no pattern of "
                                "select_loop_files" % LAB_IMAGES)
    assert skipped["loop0"] == "loop device whose backing file (none) matches no pattern of select_loop_files"
    assert skipped["vda"] == "boot disk (/)"
    selected, skipped, problems = _discover.select_data_disks(lab_host(), ["loop:*-d1.img"], LAB_IDENTITIES,
                                                              [LAB_IMAGES + "disc-n01-d*.img"])
    assert selected == ["loop3"] and skipped["loop7"] == "excluded by 'loop:*-d1.img'"


def test_selected_disks_are_tested_through_their_mounted_filesystem_else_raw():
    targets, skipped = _discover.selected_targets(lab_host(), ["loop3", "loop7"], "raw_read")
    # loop3 is mounted twice (the lab's copy under /dev/shm and the host's /srv): the shortest mount point.
    assert targets == [{"path": "/srv/diskproof/d0"}, {"device": "/dev/loop7", "mode": "raw_read"}] and skipped == {}
    targets, skipped = _discover.selected_targets(lab_host(), ["loop7", "loop3"], "raw_write")
    assert targets == [{"device": "/dev/loop7", "mode": "raw_write"}, {"path": "/srv/diskproof/d0"}]


def test_a_selected_disk_mounted_only_read_only_or_as_a_subdirectory_is_skipped():
    mountinfo = ("22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
                 "109 105 7:3 / /srv/diskproof/d0 ro,relatime master:10 - ext4 /dev/loop3 rw\n"
                 "110 105 7:8 /sub /srv/sub rw,relatime - ext4 /dev/loop8 rw\n")
    topology = _discover.Topology(parse_lsblk(fixture("lab-disc-n01.lsblk.json")))
    host = _discover.HostView(topology, parse_mountinfo(mountinfo), [], [], LAB_BLOCK_DEVS.get)
    targets, skipped = _discover.selected_targets(host, ["loop3", "loop8", "loop7"], "raw_read")
    assert targets == [{"device": "/dev/loop7", "mode": "raw_read"}]
    assert skipped == {
        "loop3": "mounted only read-only or as a subdirectory (/srv/diskproof/d0): nothing to write a test file in, "
                 "and a mounted disk is never tested raw",
        "loop8": "mounted only read-only or as a subdirectory (/srv/sub): nothing to write a test file in, "
                 "and a mounted disk is never tested raw"}


def test_a_selection_that_leaves_nothing_names_every_disk_seen_and_what_to_do():
    message = _discover.no_data_disk_problem("rack6-n01", {"vda": "boot disk (/)", "loop0": "type loop is never a data "
                                                           "disk", "loop1": "type loop is never a data disk"})
    assert message == ("select all_data_disks: no data disk found on rack6-n01 (vda: boot disk (/); loop0, loop1: type "
                       "loop is never a data disk). Set diskproof_targets (directories or devices to test), or change "
                       "diskproof_exclude / diskproof_select_loop_files")


def test_every_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in sorted(names):
        if not name.endswith(".src.md"):
            note = os.path.splitext(name)[0] + ".src.md"
            assert note in names, name
            with open(os.path.join(FIXTURES, note)) as handle:
                assert handle.readline().strip() == "# " + name, note


def test_discovery_summary_one_line_per_host_target_disk_and_tool():
    from ansible_collections.diskproof.fleet.plugins.module_utils._discover import discovery_summary, format_iec
    host = {"distribution": {"pretty_name": "Debian GNU/Linux 12 (bookworm)"}, "kernel": "6.18.44", "cpu_count": 2,
            "memory_bytes": 25274720256, "service_mgr": "sysvinit", "boot_disks": {"vda": ["/"]},
            "tools": {"fio": {"version": "3.33"}, "nvme": {"version": None}}}
    targets = [{"target": {"path": "/srv/diskproof/d0"}, "class": "filesystem", "disks": ["loop0"]},
               {"target": {"device": "/dev/sdz"}, "class": None, "disks": []}]
    disks = {"loop0": {"transport": "loop", "size_bytes": 1073741824, "model": None, "serial": None,
                       "loop_backing_file": "/dev/shm/d0.img", "health": "unavailable"},
             "sdb": {"transport": "sata", "size_bytes": 4000787030016, "model": "ST4000NM0035", "serial": "ZC1A2B3C",
                     "health": "passed"}}
    assert discovery_summary(host, targets, disks) == {
        "host": "Debian GNU/Linux 12 (bookworm), kernel 6.18.44, 2 CPUs, 23.5 GiB RAM, service manager sysvinit, boot disk vda",
        "tools": {"fio": "3.33", "nvme": "missing"},
        "targets": {"/srv/diskproof/d0": "filesystem on loop0", "/dev/sdz": "unusable on no disk"},
        "disks": {"loop0": "loop, 1.00 GiB, model?, loop:/dev/shm/d0.img, health unavailable",
                  "sdb": "sata, 3.64 TiB, ST4000NM0035, ZC1A2B3C, health passed"},
    }
    assert [format_iec(n) for n in (None, 512, 1024, 1536 * 1024)] == ["size?", "512 bytes", "1.00 KiB", "1.50 MiB"]


# -- host-bound allow-list entries (HOST:serial, HOST:wwn, HOST:loop:file) -------------------------------------

@pytest.mark.parametrize(("disk", "allow", "host", "match"), [
    ({"serial": "S3Z1NB0K123456A"}, ["n01:S3Z1NB0K123456A"], "n01", "n01:S3Z1NB0K123456A"),
    ({"serial": "S3Z1NB0K123456A"}, ["N01:s3z1nb0k123456a"], "n01", "N01:s3z1nb0k123456a"),     # case-insensitive
    ({"serial": "S3Z1NB0K123456A"}, ["n02:S3Z1NB0K123456A"], "n01", None),                      # another host's disk
    ({"serial": "S3Z1NB0K123456A"}, ["n01:S3Z1NB0K123456A"], None, None),                       # host unknown
    ({"wwn": "0x5000c500a1b2c3d4"}, ["n01:naa.5000C500A1B2C3D4"], "n01", "n01:naa.5000C500A1B2C3D4"),
    ({"wwn": "0x5000c500a1b2c3d4"}, ["n02:0x5000c500a1b2c3d4"], "n01", None),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["n01:loop:/dev/shm/x/d1.img"], "n01", "n01:loop:/dev/shm/x/d1.img"),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["n02:loop:/dev/shm/x/d1.img"], "n01", None),
    # the existing forms keep working, with or without a host
    ({"serial": "S1"}, ["S1"], "n01", "S1"),
    ({"wwn": "0x5000c500a1b2c3d4"}, ["5000c500a1b2c3d4"], None, "5000c500a1b2c3d4"),
    ({"loop_backing_file": "/dev/shm/x/d1.img"}, ["loop:/dev/shm/x/d1.img"], "n01", "loop:/dev/shm/x/d1.img"),
    # a serial that itself contains a colon still matches as a whole
    ({"serial": "AB:12"}, ["AB:12"], "n01", "AB:12"),
    # the host part is never matched against the disk: "n01:" alone names nothing
    ({"serial": "n01"}, ["n01:"], "n01", None),
])
def test_allow_list_host_bound_entries(disk, allow, host, match):
    assert _discover.allow_list_match(disk, allow, host) == match


def test_a_host_bound_entry_of_another_host_is_not_allow_listed_and_says_so():
    host = vm_host()
    disk = vm_disk(host, "loop0")
    refusals = _discover.raw_write_refusals("loop0", host.topology, [disk], True,
                                            ["other-host:" + ALLOW_CLEAN[0]], host.boot_unknown, "n01")
    assert codes(refusals) == ["not_allow_listed"]
    assert refusals[0]["message"].endswith("is not in diskproof_destructive_allow (entries HOST:... count only on "
                                           "host n01)"), refusals[0]["message"]
    assert _discover.raw_write_refusals("loop0", host.topology, [disk], True, ["n01:" + ALLOW_CLEAN[0]],
                                        host.boot_unknown, "n01") == []


def test_not_a_disk_is_a_refusal_code_reported_right_after_not_directory():
    refusals = [{"code": "not_found", "message": "a"}, {"code": "not_a_disk", "message": "b"},
                {"code": "not_directory", "message": "c"}]
    codes = [refusal["code"] for refusal in _discover.sort_refusals(refusals)]
    assert codes == ["not_found", "not_directory", "not_a_disk"]
