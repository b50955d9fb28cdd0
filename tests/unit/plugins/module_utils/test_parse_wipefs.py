"""wipefs -n -J over real captured outputs (tests/fixtures/discover/); the message of SourceError, which every
system-source parser raises."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError, SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.wipefs import wipefs_result

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize(("name", "signatures"), [
    ("loop-clean.wipefs.json", []),
    ("loop-ext4.wipefs.json", [{"device": "loop1", "offset": 1080, "type": "ext4",
                                "uuid": "520f938e-c205-4857-92f0-787e39468302", "label": None}]),
    ("loop-ext4-mounted.wipefs.json", [{"device": "loop4", "offset": 1080, "type": "ext4",
                                        "uuid": "604770e4-8508-4efd-92ab-463e04f99bb7", "label": None}]),
    ("loop-dos-table.wipefs.json", [{"device": "loop2", "offset": 510, "type": "dos", "uuid": None, "label": None}]),
    ("lab-disc-n01-d0.wipefs.json", [{"device": "loop3", "offset": 1080, "type": "ext4",
                                      "uuid": "a77f097e-6fa5-4337-99a0-8e7b0d1ecc59", "label": None}]),
    ("lab-disc-n01-d1.wipefs.json", []),
])
def test_wipefs_fixtures(name, signatures):
    assert wipefs_result(0, fixture(name), "") == (signatures, None)


def test_wipefs_failure_and_bad_output_are_probe_errors():
    assert wipefs_result(1, "", fixture("vda.wipefs.txt")) == (
        [], "wipefs exit code 1: wipefs: error: /dev/vda: probing initialization failed: Operation not permitted")
    signatures, error = wipefs_result(0, "DEVICE OFFSET TYPE UUID LABEL\nloop1 0x438 ext4", "")
    assert signatures == [] and "wipefs JSON: expected JSON" in error


def test_source_error_message():
    error = SourceError("wipefs JSON", "a hexadecimal offset", "0xZZ\x07")
    assert str(error) == "wipefs JSON: expected a hexadecimal offset; found: '0xZZ\\x07'"
    assert isinstance(error, ValueError) and isinstance(error, ParseError)
    assert (error.source, error.expected, error.found) == ("wipefs JSON", "a hexadecimal offset", "0xZZ\\x07")
