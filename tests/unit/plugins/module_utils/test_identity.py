"""_identity: a grant bound to the disk, and the checks the runner makes against it right before a raw job.

The loop-device tests are real: a loop device this test attaches to an image in its own tmp directory
(root only), re-enumerated by detaching and attaching another image at the same number. The SATA, SAS
and NVMe sysfs trees are HAND-BUILT in the kernel's layout (no such disk on the machines this runs on:
loop is the only block device the lab kernel can make); their values are spelled as those drivers print
them (libata's t10 wwid, SCSI naa wwid and VPD page 0x80, NVMe eui wwid, udev's by-id link names).
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _identity

MOUNTINFO_LOOP7 = (
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "301 22 7:7 / /srv/diskproof/d0 rw,relatime - ext4 /dev/loop7 rw\n"
    "302 22 259:3 / /mnt/p1 rw,relatime - ext4 /dev/loop8p1 rw\n"
)


def sysfs_disk(root, name, files, links=()):
    """A /sys/block/<name> tree (and a by-id folder) with these files, relative to the disk's folder."""
    base = root / "block" / name
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (base / "holders").mkdir(parents=True, exist_ok=True)
    by_id = root / "by-id"
    by_id.mkdir(exist_ok=True)
    for link in links:
        (by_id / link).symlink_to("../../" + name)   # as udev makes them: only the last name counts
    return str(root / "block"), str(by_id)


def observed(tmp_path, name, files, links=()):
    sys_block, by_id = sysfs_disk(tmp_path, name, files, links)
    return _identity.observe(name, sys_block=sys_block, by_id=by_id)


SATA = {"dev": "8:16", "size": "1953525168", "diskseq": "4",
        "device/wwid": "t10.ATA     Samsung SSD 860 EVO 1TB                 S3Z1NB0K123456A     "}
SAS = {"dev": "8:32", "size": "1953525168", "diskseq": "5", "device/wwid": "naa.5000c500a1b2c3d4",
       "device/vpd_pg80": b"\x00\x80\x00\x14ZA1B2C3D            "}
NVME = {"dev": "259:0", "size": "1000215216", "diskseq": "2", "wwid": "eui.0025388b91b2e6d1",
        "device/serial": "S4EWNX0R123456     "}


@pytest.mark.parametrize(("name", "files", "links", "serials", "wwns"), [
    ("sdb", SATA, ["ata-Samsung_SSD_860_EVO_1TB_S3Z1NB0K123456A", "wwn-0x5002538e40a22954"],
     ["s3z1nb0k123456a"], ["5002538e40a22954"]),
    ("sdc", SAS, ["scsi-35000c500a1b2c3d4", "wwn-0x5000c500a1b2c3d4"], ["za1b2c3d"], ["5000c500a1b2c3d4"]),
    ("nvme0n1", NVME, ["nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0R123456", "nvme-eui.0025388b91b2e6d1"],
     ["s4ewnx0r123456"], ["0025388b91b2e6d1"]),
    # sysfs alone, no udev (no by-id folder entries)
    ("sdb", SATA, [], ["s3z1nb0k123456a"], []),
    ("sdc", SAS, [], ["za1b2c3d"], ["5000c500a1b2c3d4"]),
])
def test_identity_tokens_read_every_spelling(tmp_path, name, files, links, serials, wwns):
    seen = observed(tmp_path, name, files, links)
    assert seen["present"] and seen["maj_min"] == files["dev"] and seen["diskseq"] == files["diskseq"]
    assert _identity.identity_tokens(seen) == {"serial": serials, "wwn": wwns}


def binding(**values):
    base = {"name": "sdb", "maj_min": "8:16", "serial": "S3Z1NB0K123456A", "wwn": "0x5002538e40a22954",
            "size_sectors": 1953525168, "diskseq": "4", "loop": None}
    base.update(values)
    return base


@pytest.mark.parametrize(("granted", "files", "links", "problems"), [
    # the same disk, by WWN or by serial
    (binding(), SATA, ["wwn-0x5002538e40a22954"], []),
    (binding(wwn=None), SATA, [], []),
    # another disk under the same name
    (binding(), dict(SATA, **{"device/wwid": "t10.ATA     WDC WD10EZEX-08W   WD-WCC6Y1234567"}),
     ["ata-WDC_WD10EZEX-08W_WD-WCC6Y1234567", "wwn-0x50014ee2b1234567"],
     ["sdb is another disk: granted serial S3Z1NB0K123456A, WWN 0x5002538e40a22954, now serial wd-wcc6y1234567, "
      "WWN 50014ee2b1234567"]),
    # re-attached (hot-plug, re-enumeration): a new disk sequence number
    (binding(), dict(SATA, diskseq="9"), [], ["sdb was re-attached since discover (disk sequence number 4, now 9)"]),
    (binding(), dict(SATA, size="1000"), [], ["sdb: the size (512-byte sectors) was 1953525168 at discover, now 1000"]),
    # nothing to compare with: refused, never assumed
    (binding(), {"dev": "8:16", "size": "1953525168", "diskseq": "4"}, [],
     ["sdb: its serial/WWN cannot be read again (nothing in /sys/block/sdb/device/{serial,wwid,vpd_pg80} nor in "
      "/dev/disk/by-id), so it cannot be shown to be the granted disk"]),
])
def test_identity_problems_name_what_changed(tmp_path, granted, files, links, problems):
    assert _identity.identity_problems(granted, observed(tmp_path, "sdb", files, links)) == problems


def test_a_disk_that_is_gone_is_refused(tmp_path):
    (tmp_path / "block").mkdir()
    seen = _identity.observe("sdq", sys_block=str(tmp_path / "block"), by_id=str(tmp_path))
    assert _identity.identity_problems(binding(name="sdq"), seen) == ["sdq is gone (no /sys/block/sdq)"]


def test_usage_problems_mounts_by_number_partitions_holders_signatures(tmp_path):
    files = {"dev": "7:8", "size": "524288", "loop8p1/partition": "1", "loop8p1/dev": "259:3",
             "loop8p1/holders/dm-0": ""}
    seen = observed(tmp_path, "loop8", files)
    mounts = _identity.parse_mountinfo(MOUNTINFO_LOOP7)
    signatures = [{"type": "dos", "offset": 510}]
    assert _identity.usage_problems(seen, mounts, signatures, None) == [
        "loop8 is mounted now: /mnt/p1 (loop8p1)",
        "loop8 has partitions now: loop8p1",
        "loop8 is held now by dm-0",
        "loop8 carries signatures now: dos at offset 0x1fe",
    ]
    clean = observed(tmp_path, "loop9", {"dev": "7:9", "size": "524288"})
    assert _identity.usage_problems(clean, mounts, [], None) == []
    assert _identity.usage_problems(clean, mounts, [], "wipefs exit code 1: x") == [
        "loop9: signatures could not be read (wipefs exit code 1: x), so the disk cannot be shown to be unused"]


def test_verify_grant_checks_usage_only_for_raw_write(tmp_path):
    seen = {"loop7": observed(tmp_path, "loop7", {"dev": "7:7", "size": "524288", "diskseq": "3"})}
    grant = _identity.make_grant("raw_read", "n01", {"device": "loop7", "device_path": "/dev/loop7"},
                                 [{"name": "loop7", "maj_min": "7:7", "diskseq": "3", "size_sectors": 524288}])
    # raw_read: mounted is fine (discover grants raw_read to a mounted disk too); only the identity counts
    assert _identity.verify_grant(grant, seen, MOUNTINFO_LOOP7) == []
    grant["class"] = "raw_write"
    problems = _identity.verify_grant(grant, seen, MOUNTINFO_LOOP7, {"loop7": []}, {"loop7": None},
                                      "EBUSY: Device or resource busy")
    assert problems == [
        "loop7 is mounted now: /srv/diskproof/d0 (loop7)",
        "/dev/loop7: the kernel refuses an exclusive open (EBUSY: Device or resource busy): something holds it - a "
        "mount (perhaps in another mount namespace), swap, device-mapper or md",
    ]
    message = _identity.refusal_message(grant, problems)
    assert message.startswith("raw_write grant of /dev/loop7 no longer holds, nothing was run on it: loop7 is mounted")
    assert message.endswith("rerun the discover role (--tags discover, or the whole playbook) so the grant describes "
                            "the disk as it is now")


@pytest.mark.parametrize("grant", [None, "raw_write", {"class": "raw_write"}, {"class": "raw_write", "disks": []}])
def test_a_grant_without_disks_is_refused(grant):
    with pytest.raises(_identity.IdentityError, match="is not a grant from discover"):
        _identity.check_grant(grant)


needs_losetup = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("losetup") is None,
                                   reason="needs root and losetup (attaches a loop device to its own image)")


@needs_losetup
def test_a_real_loop_device_re_enumerated_at_the_same_number_is_another_disk(tmp_path):
    """Real: a loop device on this test's own image, then detached and attached to another image of the same size
    at the same number (what a reboot or a re-enumeration does to /dev/sdX). The loop identity and the disk
    sequence number both show it."""
    first, second = tmp_path / "first.img", tmp_path / "second.img"
    for image in (first, second):
        with open(image, "wb") as handle:
            handle.truncate(8 << 20)
    device = subprocess.run(["losetup", "-f", "--show", str(first)], check=True, capture_output=True,
                            text=True).stdout.strip()
    name = os.path.basename(device)
    try:
        seen = _identity.observe(name)
        assert seen["loop"]["backing_file"] == str(first)
        info = os.stat(first)
        assert (seen["loop"]["st_dev"], seen["loop"]["st_ino"]) == (info.st_dev, info.st_ino)
        granted = _identity.disk_binding({"name": name, "maj_min": seen["maj_min"]}, seen)
        assert _identity.identity_problems(granted, _identity.observe(name)) == []
        subprocess.run(["losetup", "-d", device], check=True)
        subprocess.run(["losetup", device, str(second)], check=True)
        problems = _identity.identity_problems(granted, _identity.observe(name))
        assert problems[0] == "%s: the loop backing file was %s at discover, now %s" % (name, first, second)
        assert any(problem.startswith("%s was re-attached since discover" % name) for problem in problems), problems
        # The same image again at the same number: the file matches, the new attach still shows.
        subprocess.run(["losetup", "-d", device], check=True)
        subprocess.run(["losetup", device, str(first)], check=True)
        problems = _identity.identity_problems(granted, _identity.observe(name))
        assert [problem.split(" (")[0] for problem in problems] == ["%s was re-attached since discover" % name]
    finally:
        # Only ever our own images: another process may have taken the number in between.
        backing = _identity.observe(name).get("loop") or {}
        if backing.get("backing_file") in (str(first), str(second)):
            subprocess.run(["losetup", "-d", device], check=False)
