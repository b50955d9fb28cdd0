"""/proc/loadavg (a real capture in tests/fixtures/quiesce/, with its .src.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.loadavg import parse_loadavg

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_loadavg_real_capture():
    assert parse_loadavg(fixture("loadavg-idle.txt")) == (1.03, 0.86, 1.18)


def test_parse_loadavg_refuses_other_text():
    with pytest.raises(SourceError, match="not /proc/loadavg"):
        parse_loadavg("")
