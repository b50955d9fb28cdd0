"""blkid -p -o export over real captured outputs (tests/fixtures/discover/)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.blkid import blkid_result

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize(("name", "rc", "stderr", "values", "error"), [
    ("loop-clean.blkid.txt", 2, "", {}, None),
    ("loop-ext4.blkid.txt", 0, "", {"TYPE": "ext4", "UUID": "520f938e-c205-4857-92f0-787e39468302",
                                    "USAGE": "filesystem"}, None),
    ("loop-dos-table.blkid.txt", 0, "", {"PTTYPE": "dos", "PTUUID": "872bb48c"}, None),
    ("loop-ext4-mounted-part.blkid.txt", 0, "", {"TYPE": "ext4", "LABEL": "dpdata", "PART_ENTRY_UUID": "872bb48c-01",
                                                 "PART_ENTRY_DISK": "7:2"}, None),
    ("loop-swap-part.blkid.txt", 0, "", {"TYPE": "swap", "LABEL": "dpswap", "PART_ENTRY_UUID": "872bb48c-02"}, None),
    # exit 2 is also "nothing found": only the message on stderr tells the failure apart
    ("vda.blkid.txt", 2, "blkid: error: /dev/vda: Operation not permitted", {},
     "blkid exit code 2: blkid: error: /dev/vda: Operation not permitted"),
])
def test_blkid_result(name, rc, stderr, values, error):
    text = fixture(name)
    found, problem = blkid_result(rc, "" if stderr else text, stderr)
    assert {key: found[key] for key in values} == values
    assert problem == error
