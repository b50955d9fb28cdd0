"""/proc/self/mountinfo: the one mount-table parser, over real captured outputs (tests/fixtures/discover/)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _discover, _filesystems
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mountinfo import cgroup2_mount, parse_mountinfo

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_mountinfo_vm_fixture():
    mounts = {mount["mount_point"]: mount for mount in parse_mountinfo(fixture("vm-states.mountinfo.txt"))}
    assert mounts["/"] == {"mount_point": "/", "maj_min": "254:0", "root": "/", "fstype": "ext4", "source": "/dev/vda",
                           "options": "rw,relatime"}
    assert mounts["/tmp/dp-disc-cap/p1"]["maj_min"] == "259:0"
    assert mounts["/run/netns"]["root"] == "/run/netns"


def test_mountinfo_lab_fixture_with_optional_fields():
    mounts = {mount["mount_point"]: mount for mount in parse_mountinfo(fixture("lab-disc-n01.mountinfo.txt"))}
    assert mounts["/srv/diskproof/d0"]["maj_min"] == "7:3"
    assert mounts["/srv/diskproof/d0"]["source"] == "/dev/loop3"
    assert mounts["/srv"]["fstype"] == "tmpfs"


def test_mountinfo_octal_escapes_and_errors():
    line = r"40 27 8:17 / /srv/my\040data rw,relatime shared:5 - ext4 /dev/sdb1 rw"
    assert parse_mountinfo(line)[0]["mount_point"] == "/srv/my data"
    with pytest.raises(SourceError) as caught:
        parse_mountinfo("40 27 8:17 / /srv rw")
    assert "/proc/self/mountinfo" in str(caught.value) and "line 1" in str(caught.value)


def test_mountinfo_is_read_by_the_one_parser_bench_plan_uses_too():
    # discover, the plan, the raw grants and the quiesce's cgroup lookup all read mounts here: no second copy.
    assert not hasattr(_discover, "parse_mountinfo") and not hasattr(_filesystems, "parse_mountinfo")
    assert len(parse_mountinfo(fixture("nondisk-vm.mountinfo.txt"))) > 0
    with pytest.raises(SourceError) as caught:
        parse_mountinfo("40 27 8:17 / /srv rw")
    assert caught.value.source == "/proc/self/mountinfo" and "line 1" in caught.value.expected


def test_parse_errors_name_the_line_and_what_was_expected():
    with pytest.raises(SourceError) as caught:
        parse_mountinfo("40 27 8:17 / /srv rw")
    assert "line 1" in str(caught.value) and "/proc/self/mountinfo" in str(caught.value)
    with pytest.raises(SourceError):
        parse_mountinfo("40 27 817 / /srv rw - ext4 /dev/sdb1 rw")
    assert parse_mountinfo("40 27 8:17 / /srv/my\\040data rw - ext4 /dev/sdb1 rw")[0]["mount_point"] == "/srv/my data"


def test_cgroup2_mount_of_hosts_with_and_without_one():
    # a systemd-nspawn host of systemd 252 and the project VM (both hybrid: v2 at /sys/fs/cgroup/unified); a lab
    # host's mount namespace shows none
    quiesce = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "quiesce")
    with open(os.path.join(quiesce, "mountinfo-cgroup-nspawn-252.txt")) as handle:
        assert cgroup2_mount(handle.read()) == "/sys/fs/cgroup/unified"
    assert cgroup2_mount(fixture("vm-states.mountinfo.txt")) == "/sys/fs/cgroup/unified"
    assert cgroup2_mount(fixture("lab-disc-n01.mountinfo.txt")) is None
    assert cgroup2_mount("") is None
