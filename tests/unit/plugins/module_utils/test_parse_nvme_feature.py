"""nvme get-feature's current value (issue 34, readers): real lines quoted from public documents
(tests/fixtures/disk_state/nvme-get-feature.src.md)."""
from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.nvme_feature import (
    FEATURE_APST, FEATURE_POWER_MANAGEMENT, apst_enabled, feature_value, power_state,
)

FIXTURE = pathlib.Path(__file__).parents[3] / "fixtures" / "disk_state" / "nvme-get-feature.json"
OUTPUTS = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize(("key", "state"), [
    ("pinebook-pro-ps0", 0), ("ceph-experiments-ps0-human", 0), ("blog-ps3-human", 3), ("notes-ps4", 4),
])
def test_power_state_of_real_outputs(key, state):
    assert power_state(feature_value(OUTPUTS[key], FEATURE_POWER_MANAGEMENT)) == state


@pytest.mark.parametrize("key", sorted(OUTPUTS))
def test_another_feature_is_not_read_from_a_power_management_line(key):
    with pytest.raises(SourceError, match="0x0c"):
        feature_value(OUTPUTS[key], FEATURE_APST)


@pytest.mark.parametrize("text", ["", "NVMe status: INVALID_FIELD: A reserved coded value or an unsupported value "
                                      "in a defined field(0x2)\n", "get-feature:0x2 (Power Management)\n"])
def test_no_value_line_is_an_error(text):
    with pytest.raises(SourceError):
        feature_value(text, FEATURE_POWER_MANAGEMENT)


def test_bits_outside_the_fields_are_ignored():
    # Power Management: bits 7:5 are the workload hint, not the state; APST: only bit 0 enables it.
    assert power_state(0xE3) == 3
    assert apst_enabled(0x01) is True and apst_enabled(0x02) is False
    assert power_state(None) is None and apst_enabled(None) is None
