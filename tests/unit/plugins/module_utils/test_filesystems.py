"""_filesystems: the one rule that says whether a directory target is on a disk, over real mountinfo lines
(tests/fixtures/discover/nondisk-*.mountinfo.txt, each with a .src.md: captured on this VM, or taken from
Docker's mount test data; the few hand-built lines are marked there), and the plan's second line of
defence (_plan: refusal, not_a_disk on the jobs, no cache fence on memory).
"""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _filesystems
from ansible_collections.diskproof.fleet.plugins.module_utils._filesystems import (
    FilesystemFacts, classify_mount, mount_for_path, refusal_message,
)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import parse_mountinfo
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, Settings, TargetFacts, build_plan

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")
# Block device nodes of the captures (what os.stat says they are); anything else is not one.
BLOCK_SOURCES = {"/dev/vda", "/dev/loop1", "/dev/loop2", "/dev/mapper/ssd-root--f20", "/dev/sdb1", "/dev/sdc1",
                 "/dev/sdd2"}
MIB = 1 << 20


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def judged(name):
    """mount point -> (fstype, kind) for every mount of a captured mountinfo."""
    found = {}
    for mount in parse_mountinfo(fixture(name)):
        facts = classify_mount(mount, mount["source"] in BLOCK_SOURCES)
        found[mount["mount_point"]] = (facts.fstype, facts.kind)
    return found


@pytest.mark.parametrize("mount_point, fstype, kind", [
    ("/", "ext4", None),
    ("/dev/shm/diskproof-lab-bcancel/hosts/bcancel-n01/srv/diskproof/d0", "ext4", None),    # ext4 on a loop device
    ("/dev/shm/diskproof-lab-bspace/hosts/bspace-n01/srv/diskproof/d0", "ext4", None),
    ("/run/netns", "ext4", None),                                                           # a bind of the root
    ("/tmp/ndcap/base", "tmpfs", "memory"),
    ("/tmp/ndcap/ovl", "overlay", "union"),
    ("/tmp/ndcap/ram", "ramfs", "memory"),
    ("/dev/shm", "tmpfs", "memory"),
    ("/dev", "devtmpfs", "memory"),
    ("/proc", "proc", "kernel interface"),
    ("/sys", "sysfs", "kernel interface"),
    ("/sys/fs/cgroup/memory", "cgroup", "kernel interface"),
    ("/sys/fs/cgroup/unified", "cgroup2", "kernel interface"),
    ("/dev/pts", "devpts", "kernel interface"),
    ("/run/netns/dp-bcancel-bcancel-n01", "nsfs", "kernel interface"),
])
def test_mounts_captured_on_this_vm(mount_point, fstype, kind):
    assert judged("nondisk-vm.mountinfo.txt")[mount_point] == (fstype, kind)


@pytest.mark.parametrize("mount_point, fstype, kind", [
    ("/DATA/foo_bla_bla", "cifs", "network"),
    ("/run/user/1000/gvfs", "fuse.gvfsd-fuse", "FUSE"),
    ("/proc/sys/fs/binfmt_misc", "autofs", "kernel interface"),
    ("/boot", "ext4", None),
    ("/var/lib/docker/aufs/mnt/b750fe79269d2ec9a3c593ef05b4332b1d1a02a62b4accb2c21d589ff2f5f2dc", "aufs", "union"),
    ("/run/lock", "tmpfs", "memory"),
    ("/mnt/nas", "nfs", "network"),
    ("/mnt/nas4", "nfs4", "network"),
    ("/mnt/smb", "smb3", "network"),
    ("/mnt/ssh", "fuse.sshfs", "FUSE"),
    ("/mnt/fuse", "fuse", "FUSE"),
    ("/mnt/host", "9p", "host share"),
    ("/mnt/virtio", "virtiofs", "host share"),
    ("/tank/data", "zfs", None),                     # rule 2: a pool filesystem, source a dataset name
    ("/media/backup", "fuseblk", None),              # rule 2: FUSE on a block device (ntfs-3g)
    ("/srv/btrfs", "btrfs", None),                   # rule 3: anonymous 0:N, but its source is a block device
    ("/srv/odd", "weirdfs", "no block device"),      # rule 3: anonymous 0:N and source 'none'
])
def test_mounts_of_other_machines(mount_point, fstype, kind):
    assert judged("nondisk-other.mountinfo.txt")[mount_point] == (fstype, kind)


def test_a_root_named_by_a_node_that_is_not_there_is_still_a_disk_by_its_device_number():
    # /dev/disk/by-label/DOROOT is not a block device here; 253:0 (major != 0) is a real block device.
    roots = [mount for mount in parse_mountinfo(fixture("nondisk-other.mountinfo.txt")) if mount["mount_point"] == "/"]
    assert [classify_mount(mount, False).not_a_disk for mount in roots] == [False, False]


def test_every_listed_type_is_not_a_disk_and_fuse_subtypes_too():
    for fstype in ("tmpfs", "ramfs", "overlay", "nfs", "nfs4", "cifs", "smb3", "fuse", "9p", "virtiofs"):
        mount = {"fstype": fstype, "source": "/dev/sda1", "maj_min": "8:1", "mount_point": "/x"}
        assert classify_mount(mount, True).not_a_disk, fstype   # the type decides, whatever the source
    assert _filesystems.fstype_kind("fuse.s3fs") == "FUSE"
    assert _filesystems.fstype_kind("fuseblk") is None
    assert _filesystems.fstype_kind("ext4") is None


def test_the_mount_holding_a_path_is_the_deepest_and_the_top_of_a_stack():
    mounts = parse_mountinfo(fixture("nondisk-vm.mountinfo.txt"))
    assert mount_for_path(mounts, "/tmp/ndcap/ovl/dir/file")["fstype"] == "overlay"
    assert mount_for_path(mounts, "/tmp/ndcapx")["fstype"] == "ext4"          # a prefix of a name is no parent
    assert mount_for_path(mounts, "/dev/shm/x")["mount_point"] == "/dev/shm"
    assert mount_for_path(mounts, "/dev/shm/x")["maj_min"] == "0:27"          # the second /dev/shm, on top


def test_the_refusal_names_type_mount_point_source_and_what_to_do():
    tmpfs = FilesystemFacts("tmpfs", "/srv/scratch", "tmpfs", "memory")
    message = refusal_message("/srv/scratch/t", tmpfs)
    assert message.startswith("/srv/scratch/t is on tmpfs (mounted at /srv/scratch, source tmpfs): a memory "
                              "filesystem, not a disk")
    assert "allow_non_disk: true on this target (or diskproof_allow_non_disk: true)" in message
    odd = refusal_message("/srv/odd", FilesystemFacts("weirdfs", "/srv/odd", "none", "no block device"))
    assert "its source 'none' is no block device" in odd


# -- the plan: second line of defence (discover skipped) ------------------------------------------------------

TMPFS = FilesystemFacts("tmpfs", "/srv/t", "diskproof-test", "memory")
EXT4 = FilesystemFacts("ext4", "/srv/d0", "/dev/loop3", None)


def plan_of(*targets, fence=32 * MIB):
    settings = Settings(run_id="r1", memory_bytes=32 * MIB, tests=("dd_seq_write", "dd_seq_read"), repeats=1,
                        cache_fence_bytes=fence, reserve_min_bytes=MIB)
    return build_plan(list(targets), settings)


def target(path, filesystem, allow=False):
    return TargetFacts(path=path, free_bytes=512 * MIB, filesystem_size_bytes=1024 * MIB, filesystem=filesystem,
                       allow_non_disk=allow)


def test_the_plan_refuses_a_target_that_is_not_a_disk_with_the_same_words():
    with pytest.raises(PlanError) as caught:
        plan_of(target("/srv/d0", EXT4), target("/srv/t", TMPFS))
    assert str(caught.value) == "targets[1]: " + refusal_message("/srv/t", TMPFS)


def test_an_allowed_target_is_marked_on_every_job_and_runs_without_the_cache_fence():
    plan = plan_of(target("/srv/d0", EXT4), target("/srv/t", TMPFS, allow=True))
    on_tmpfs = [job for job in plan.jobs if job["target"]["path"] == "/srv/t"]
    on_disk = [job for job in plan.jobs if job["target"]["path"] == "/srv/d0"]
    assert [job["test"] for job in on_tmpfs] == ["dd_seq_write", "dd_seq_read"]
    assert all(job["target"]["not_a_disk"] is True and job["target"]["filesystem"] == "tmpfs" for job in on_tmpfs)
    assert all("not_a_disk" not in job["target"] for job in on_disk)
    # A memory cgroup fence would be charged the tmpfs file itself and kill dd (seen: exit 137).
    assert [job["cache_fence_bytes"] for job in on_tmpfs] == [None, None]
    assert [job["cache_fence_bytes"] for job in on_disk] == [32 * MIB, None]
    assert any("measured because allow_non_disk is true" in warning for warning in plan.warnings)
    assert any("without the cache fence" in warning for warning in plan.warnings)


def test_a_disk_target_and_an_unchecked_one_are_planned_as_before():
    plan = plan_of(target("/srv/d0", EXT4), target("/srv/d1", None))
    assert all("not_a_disk" not in job["target"] for job in plan.jobs)
    assert not any("allow_non_disk" in warning for warning in plan.warnings)
