"""/proc/swaps over real captured outputs (tests/fixtures/discover/)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.swaps import parse_swaps

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_swaps_fixtures_and_errors():
    assert parse_swaps(fixture("vm-states.swaps.txt")) == [
        {"filename": "/dev/loop2p2", "type": "partition", "size_bytes": 32501760, "used_bytes": 32501760,
         "priority": -2}]
    assert parse_swaps(fixture("lab-disc-n01.swaps.txt")) == []
    assert parse_swaps("") == []
    assert parse_swaps("Filename Type Size Used Priority\n/swap\\040file file 1024 0 -3\n")[0]["filename"] \
        == "/swap file"
    with pytest.raises(SourceError):
        parse_swaps("/dev/sda2 partition 1 0 -2\n")
    with pytest.raises(SourceError):
        parse_swaps("Filename Type Size Used Priority\n/dev/sda2 partition big 0 -2\n")
