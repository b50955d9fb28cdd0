"""cgroup v2 cpu.stat (a real capture of a systemd-nspawn host in tests/fixtures/quiesce/, with its .src.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.cgroup import parse_cpu_stat
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_cpu_stat_real_capture():
    assert parse_cpu_stat(fixture("cgroup2-cpu-stat-nspawn-252.txt")) == 151239906


def test_cpu_stat_without_usage_usec_is_refused():
    with pytest.raises(SourceError, match="no usage_usec"):
        parse_cpu_stat("nr_periods 0\n")
