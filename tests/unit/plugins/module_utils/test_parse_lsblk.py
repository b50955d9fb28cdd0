"""lsblk -J -b -O: the device tree over real captured outputs (tests/fixtures/discover/, each with a .src.md
saying how and where it was captured)."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.lsblk import parse_lsblk

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_lsblk_vm_tree_roots_children_and_values():
    tree = parse_lsblk(fixture("vm-states.lsblk.json"))
    assert [node["kname"] for node in tree] == ["loop0", "loop1", "loop2", "loop3", "loop4", "zram0", "vda"]
    loop2 = tree[2]
    assert [(child["kname"], child["maj_min"], child["mountpoints"]) for child in loop2["children"]] == [
        ("loop2p1", "259:0", ["/tmp/dp-disc-cap/p1"]), ("loop2p2", "259:1", ["[SWAP]"])]
    vda = tree[6]
    assert {key: vda[key] for key in ("maj_min", "size_bytes", "rotational", "logical_block_size",
                                      "physical_block_size", "scheduler", "subsystems", "vendor", "serial", "tran",
                                      "mountpoints", "type", "path")} == {
        "maj_min": "254:0", "size_bytes": 274877906944, "rotational": True, "logical_block_size": 512,
        "physical_block_size": 4096, "scheduler": "mq-deadline", "subsystems": "block:virtio:pci", "vendor": "0x1af4",
        "serial": None, "tran": None, "mountpoints": ["/run/netns", "/"], "type": "disk", "path": "/dev/vda"}
    # No udev on the VM: lsblk knows no filesystem types; the signatures come from wipefs/blkid.
    assert tree[1]["fstype"] is None and tree[4]["fstype"] is None


def test_lsblk_lab_host_sees_its_mount_namespace():
    tree = {node["kname"]: node for node in parse_lsblk(fixture("lab-disc-n01.lsblk.json"))}
    assert tree["loop3"]["mountpoints"] == ["/srv/diskproof/d0",
                                            "/dev/shm/diskproof-lab-disc/hosts/disc-n01/srv/diskproof/d0"]
    assert tree["loop7"]["mountpoints"] == [] and tree["loop7"]["size_bytes"] == 268435456


def test_lsblk_older_output_with_string_flags_and_single_mountpoint():
    """lsblk before 2.33 printed "0"/"1" and one "mountpoint"; derived from the real vda node."""
    raw = json.loads(fixture("vm-states.lsblk.json"))["blockdevices"][6]
    raw = dict(raw, rota="1", rm="0", ro="0", size=str(raw["size"]))
    del raw["mountpoints"]
    node = parse_lsblk(json.dumps({"blockdevices": [raw]}))[0]
    assert (node["rotational"], node["removable"], node["read_only"]) == (True, False, False)
    assert node["size_bytes"] == 274877906944 and node["mountpoints"] == ["/"]


@pytest.mark.parametrize(("text", "expected"), [
    ("", "lsblk JSON: expected JSON"),
    ("lsblk: unknown column", "lsblk JSON: expected JSON"),
    ('{"devices": []}', 'a "blockdevices" list'),
    ('{"blockdevices": [{"name": "sda", "type": "disk"}]}', "maj:min of sda (run lsblk with -O)"),
    ('{"blockdevices": [{"name": "sda", "maj:min": "8:0"}]}', "type of sda"),
    ('{"blockdevices": [{"name": "sda", "maj:min": "8:0", "type": "disk", "rota": "yes"}]}', "a boolean for rota of sda"),
    ('{"blockdevices": [{"name": "sda", "maj:min": "8:0", "type": "disk", "size": "1G"}]}', "an integer for size of sda"),
    ('{"blockdevices": ["sda"]}', "an object per block device"),
])
def test_lsblk_errors_name_what_was_expected(text, expected):
    with pytest.raises(SourceError) as caught:
        parse_lsblk(text)
    assert expected in str(caught.value)
