"""/proc/meminfo: MemTotal."""
from __future__ import annotations

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.meminfo import parse_meminfo


def test_meminfo():
    assert parse_meminfo("MemTotal:       24684100 kB\nMemFree:        22751000 kB\n") == 24684100 * 1024
    assert parse_meminfo("") is None
