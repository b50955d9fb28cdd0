"""The kernel's block I/O counters: /proc/diskstats (real captures in tests/fixtures/quiesce/, each with a .src.md)
and /sys/block/<dev>/stat, one definition of the fields for both."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.diskstats import parse_block_stat, parse_diskstats
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_diskstats_real_capture():
    stats = parse_diskstats(fixture("diskstats-idle-t0.txt"))
    assert stats["vda"] == {"reads": 168030, "read_sectors": 12826218, "writes": 26139, "write_sectors": 2597168,
                            "in_flight": 0, "io_ticks_ms": 17848}
    assert stats["zram0"]["io_ticks_ms"] == 0 and "loop10" in stats


def test_sys_block_stat_is_a_diskstats_line_without_its_device_columns():
    line = next(line for line in fixture("diskstats-idle-t0.txt").splitlines() if line.split()[2] == "vda")
    counters = parse_block_stat(" ".join(line.split()[3:]))
    assert counters == {"reads": 168030, "read_sectors": 12826218, "writes": 26139, "write_sectors": 2597168,
                        "in_flight": 0}
    assert {key: parse_diskstats(line)["vda"][key] for key in counters} == counters


@pytest.mark.parametrize("text", ["   8       0 sda 1 2 3\n", "   8  0 sda a b c d e f g h i j k\n"])
def test_parse_diskstats_refuses_other_text(text):
    with pytest.raises(SourceError, match="not a /proc/diskstats line"):
        parse_diskstats(text)


@pytest.mark.parametrize("text", ["", "1 2 3", "a b c d e f g h", "1 2 3 4 5 6 -7 8"])
def test_parse_stat_refuses_other_formats(text):
    assert parse_block_stat(text) is None
