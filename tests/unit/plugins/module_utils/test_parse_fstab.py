"""/etc/fstab: entries and what each spec names (tests/fixtures/discover/ holds the VM's real, empty one)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fstab import fstab_spec, parse_fstab

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


FSTAB = """# /etc/fstab: static file system information.
UUID=520f938e-c205-4857-92f0-787e39468302 /data ext4 defaults 0 2
LABEL="dpdata"  /srv/data ext4 noauto 0 0
PARTUUID=872bb48c-02 none swap sw 0 0
/dev/loop4 /mnt/four ext4 defaults
tmpfs /tmp tmpfs defaults 0 0
server:/export /nfs nfs defaults 0 0
"""


def test_fstab_fixture_and_entries():
    assert parse_fstab(fixture("vm-etc.fstab.txt")) == []
    entries = parse_fstab(FSTAB)
    assert [entry["file"] for entry in entries] == ["/data", "/srv/data", "none", "/mnt/four", "/tmp", "/nfs"]
    assert entries[3]["vfstype"] == "ext4" and entries[3]["options"] == "defaults"
    with pytest.raises(SourceError):
        parse_fstab("/dev/sda1\n")


@pytest.mark.parametrize(("spec", "expected"), [
    ("UUID=520f938e-c205-4857-92f0-787e39468302", ("uuid", "520f938e-c205-4857-92f0-787e39468302")),
    ('LABEL="dpdata"', ("label", "dpdata")),
    ("PARTUUID=872bb48c-01", ("partuuid", "872bb48c-01")),
    ("PARTLABEL=data", ("partlabel", "data")),
    ("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1", ("path", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1")),
    ("tmpfs", ("other", "tmpfs")),
    ("server:/export", ("other", "server:/export")),
])
def test_fstab_spec(spec, expected):
    assert fstab_spec(spec) == expected
