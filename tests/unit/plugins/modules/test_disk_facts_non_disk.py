"""disk_facts on this machine's real mounts: a directory on tmpfs (/dev/shm) is refused as not_a_disk, naming
tmpfs and its mount point, unless allow_non_disk; a directory on the ext4 root is a filesystem target as before.
Read-only (lsblk, /proc/self/mountinfo, stat); SMART off."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _filesystems
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import parse_mountinfo
from ansible_collections.diskproof.fleet.plugins.modules import disk_facts


def filesystem_of(path):
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        return _filesystems.mount_for_path(parse_mountinfo(handle.read()), os.path.realpath(path))


needs_tmpfs_and_disk = pytest.mark.skipif(
    not os.path.isdir("/dev/shm") or (filesystem_of("/dev/shm") or {}).get("fstype") != "tmpfs"
    or (filesystem_of("/tmp") or {}).get("maj_min", "0:").startswith("0:"),
    reason="needs /dev/shm on tmpfs and /tmp on a block device")


def run(capsys, args):
    with patch_module_args(dict({"smart": False}, **args)):
        with pytest.raises(SystemExit):
            disk_facts.main()
    return json.loads(capsys.readouterr().out)


@needs_tmpfs_and_disk
def test_a_tmpfs_directory_is_refused_naming_tmpfs_and_a_disk_directory_is_not(capsys):
    shm = filesystem_of("/dev/shm")["mount_point"]
    result = run(capsys, {"targets": [{"path": "/dev/shm"}, {"path": "/tmp"}]})
    tmpfs, disk = result["ansible_facts"]["diskproof_targets_resolved"]
    assert (tmpfs["class"], tmpfs["not_a_disk"], tmpfs["filesystem"]) == (None, True, "tmpfs")
    assert tmpfs["mount_point"] == shm
    assert [refusal["code"] for refusal in tmpfs["refusals"]] == ["not_a_disk"]
    assert tmpfs["refusals"][0]["message"].startswith("/dev/shm is on tmpfs (mounted at %s, source " % shm)
    assert result["refusals"] == ["/dev/shm (requested filesystem) not_a_disk: " + tmpfs["refusals"][0]["message"]]
    assert (disk["class"], disk["not_a_disk"], disk["refusals"]) == ("filesystem", False, [])
    assert disk["filesystem"] == filesystem_of("/tmp")["fstype"] and disk["disks"]


@needs_tmpfs_and_disk
@pytest.mark.parametrize("args", [
    {"targets": [{"path": "/dev/shm", "allow_non_disk": True}]},
    {"targets": [{"path": "/dev/shm"}], "allow_non_disk": True},
])
def test_allow_non_disk_grants_it_with_a_warning(capsys, args):
    result = run(capsys, args)
    (tmpfs,) = result["ansible_facts"]["diskproof_targets_resolved"]
    assert (tmpfs["class"], tmpfs["granted"], tmpfs["not_a_disk"], tmpfs["disks"]) == ("filesystem", True, True, [])
    assert result["refusals"] == []
    # ansible-core 2.19 returns warnings as structured events: look for the text in them.
    warnings = json.dumps(result["warnings"])
    assert "/dev/shm is on tmpfs" in warnings and "measured because allow_non_disk is true" in warnings


@needs_tmpfs_and_disk
def test_a_target_item_can_refuse_what_the_module_default_allows(capsys):
    result = run(capsys, {"targets": [{"path": "/dev/shm", "allow_non_disk": False}], "allow_non_disk": True})
    assert [refusal["code"] for refusal in result["ansible_facts"]["diskproof_targets_resolved"][0]["refusals"]] \
        == ["not_a_disk"]


@needs_tmpfs_and_disk
def test_target_identities_are_made_on_the_host_from_the_same_facts_as_the_filter(capsys):
    """diskproof_target_identities, which the benchmark role copies into every record, is what the
    target_identities filter makes of the other two facts; a refused target (tmpfs, no disk) gets no device."""
    from ansible_collections.diskproof.fleet.plugins.module_utils._identity import target_identities
    result = run(capsys, {"targets": [{"path": "/tmp/"}, {"path": "/dev/shm"}]})
    facts = result["ansible_facts"]
    identities = facts["diskproof_target_identities"]
    assert identities == target_identities(facts["diskproof_targets_resolved"], facts["diskproof_disks"])
    assert sorted(identities) == ["/dev/shm", "/tmp"]   # normalized paths
    disk = facts["diskproof_targets_resolved"][0]["disks"]
    if len(disk) == 1:
        assert identities["/tmp"]["device"] == disk[0] and identities["/tmp"]["size_bytes"] \
            == facts["diskproof_disks"][disk[0]]["size_bytes"] > 0
    else:   # md or LVM under /tmp: no single disk's identity applies
        assert "device" not in identities["/tmp"] and identities["/tmp"]["disks"] == disk
    assert "device" not in identities["/dev/shm"] and identities["/dev/shm"]["disks"] == []
