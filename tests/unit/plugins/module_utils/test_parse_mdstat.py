"""/proc/mdstat over real captures (tests/fixtures/quiesce/mdstat-*.txt, each with a .src.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.mdstat import parse_mdstat

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mdstat-raid6-check.txt", {"md127": ("raid6", "check", 40.4, None)}),
        ("mdstat-raid5-reshape.txt", {"md0": ("raid5", "reshape", 37.6, None)}),
        ("mdstat-raid5-recovery-replace.txt", {"md0": ("raid5", "recovery", 1.4, None)}),
        ("mdstat-raid1-resync.txt", {"md127": ("raid1", "resync", 50.4, None)}),
        ("mdstat-raid1-idle.txt", {"md127": ("raid1", None, None, None)}),
        ("mdstat-raid1-inactive.txt", {"md127": (None, None, None, None)}),
        ("mdstat-resync-delayed.txt", {"md1": ("raid5", "resync", None, "DELAYED"), "md0": ("raid1", "resync", 21.5, None)}),
        ("mdstat-nested-raid10-idle.txt", {"md2": ("raid0", None, None, None), "md1": ("raid1", None, None, None),
                                           "md0": ("raid1", None, None, None)}),
    ],
)
def test_parse_mdstat_real_captures(name, expected):
    arrays = parse_mdstat(fixture(name))
    assert {array: (info["level"], info["action"], info["progress_percent"], info["waiting"])
            for array, info in arrays.items()} == expected


def test_parse_mdstat_members_keep_flagged_devices():
    arrays = parse_mdstat(fixture("mdstat-raid5-recovery-replace.txt"))
    assert arrays["md0"]["members"] == ["sdk1", "sdf1", "sdg1", "sdc1", "sde1", "sdb1"]
    assert (arrays["md0"]["finish"], arrays["md0"]["speed"]) == ("1601.3min", "50071K/sec")
    assert parse_mdstat(fixture("mdstat-nested-raid10-idle.txt"))["md2"]["members"] == ["md0", "md1"]


def test_parse_mdstat_node_exporter_collection():
    arrays = parse_mdstat(fixture("mdstat-node-exporter-collection.txt"))
    assert len(arrays) == 12
    busy = {name: (info["action"], info["progress_percent"], info["waiting"]) for name, info in arrays.items() if info["action"]}
    assert busy == {"md6": ("recovery", 8.5, None), "md8": ("resync", 8.5, None), "md9": ("resync", None, "DELAYED"),
                    "md11": ("resync", None, "PENDING")}
    assert arrays["md11"]["level"] == "raid1"
    assert (arrays["md219"]["level"], arrays["md219"]["members"]) == (None, ["sdb", "sdc", "sda"])
    assert arrays["md4"]["state"] == "inactive"


@pytest.mark.parametrize(("text", "arrays"), [("", {}), ("Personalities : \nunused devices: <none>\n", {})])
def test_parse_mdstat_without_arrays(text, arrays):
    assert parse_mdstat(text) == arrays


def test_parse_mdstat_refuses_other_text():
    with pytest.raises(SourceError, match="not /proc/mdstat"):
        parse_mdstat("MemTotal:       24552916 kB\n")
