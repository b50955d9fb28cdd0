"""smartctl -j -x over real captured outputs (tests/fixtures/discover/) and reference outputs of other machines."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.smartctl import (
    SMARTCTL_EXIT_BITS, parse_smartctl, smart_selftest, smartctl_result,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


QUIESCE_FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def quiesce_fixture(name):
    return (QUIESCE_FIXTURES / name).read_text()


# Reference smartctl outputs of other machines (SATA, SAS, NVMe, MegaRAID, failed open), kept outside the
# project; the test that reads them is skipped where they are not present.
REFERENCE_SMART = "/work/shared/reference-outputs/smart"


@pytest.mark.parametrize(("name", "exit_status", "message", "bits"), [
    ("vda.smartctl-x.json", 1, "error: /dev/vda: Unable to detect device type", [0]),
    ("loop.smartctl-x.json", 1, "error: /dev/loop0: Unable to detect device type", [0]),
    ("vda.smartctl-x-d-sat.json", 2, "error: Smartctl open device: /dev/vda [SAT] failed: Operation not permitted", [1]),
])
def test_no_smart_here_is_data_not_an_error(name, exit_status, message, bits):
    summary = parse_smartctl(fixture(name))
    assert summary["available"] is False and summary["health"] == "unavailable" and summary["passed"] is None
    assert summary["exit_status"] == exit_status and summary["messages"] == [message]
    assert summary["exit_meanings"] == [SMARTCTL_EXIT_BITS[bit] for bit in bits]
    assert summary["smartctl_version"] == "7.3" and summary["serial"] is None
    assert smartctl_result(exit_status, fixture(name), "") == summary


def test_smartctl_output_that_is_not_json_becomes_unavailable():
    result = smartctl_result(127, "", "smartctl: not found\n")
    assert result["available"] is False and result["health"] == "unavailable"
    assert result["exit_status"] == 127 and "smartctl JSON: expected JSON" in result["messages"][0]
    with pytest.raises(SourceError):
        parse_smartctl('{"json_format_version": [1, 0]}')


# Expected figures from each reference's .src.md (smartctl 6.7-7.1 on other machines).
REFERENCE_EXPECTED = {
    "scrutiny-smart-ata-full.json": dict(available=True, health="passed", exit_status=0, model="Samsung SSD 860 EVO 500GB",
                                         serial="S3YZNB0KB00864E", firmware="RVT02B6Q", wwn="0x5002538e40a22954",
                                         capacity_bytes=500107862016, temperature_c=36, power_on_hours=14551,
                                         power_cycles=13, write_cache_enabled=True, rotation_rate=0),
    "scrutiny-smart-fail.json": dict(available=False, health="unavailable", exit_status=2, model=None, serial=None,
                                     temperature_c=None),
    "scrutiny-smart-megaraid0.json": dict(available=True, health="passed", exit_status=4, model="WD4000FYYX",
                                          firmware="00.0D1K4", capacity_bytes=4000787030016, temperature_c=36,
                                          power_on_hours=37787, power_cycles=70, rotation_rate=7200),
    "scrutiny-smart-nvme-failed.json": dict(available=True, health="passed", exit_status=0, firmware="2B2QEXE7",
                                            capacity_bytes=500107862016, temperature_c=35, power_on_hours=12798),
    "scrutiny-smart-scsi2.json": dict(available=True, health="passed", exit_status=0, vendor="SEAGATE",
                                      model="SEAGATE ST1200MM0088", firmware="N004", capacity_bytes=1200243695616,
                                      temperature_c=31, power_on_hours=5675),
}


@pytest.mark.skipif(not os.path.isdir(REFERENCE_SMART), reason="reference smartctl outputs not on this machine")
@pytest.mark.parametrize("name", sorted(REFERENCE_EXPECTED))
def test_smartctl_reference_outputs(name):
    with open(os.path.join(REFERENCE_SMART, name)) as handle:
        summary = parse_smartctl(handle.read())
    assert {key: summary[key] for key in REFERENCE_EXPECTED[name]} == REFERENCE_EXPECTED[name]
    if name == "scrutiny-smart-ata-full.json":
        assert summary["ata"] == {"reallocated_sectors": 0, "pending_sectors": None, "offline_uncorrectable": None,
                                  "udma_crc_errors": 0, "failing_now": []}
    if name == "scrutiny-smart-megaraid0.json":
        assert summary["ata"]["pending_sectors"] == 0 and summary["messages"] == [
            "warning: Warning: This result is based on an Attribute check."]
    if name == "scrutiny-smart-nvme-failed.json":
        assert {key: summary["nvme"][key] for key in ("critical_warning", "percentage_used", "media_errors",
                                                      "available_spare", "data_written_bytes")} == {
            "critical_warning": 0, "percentage_used": 3, "media_errors": 7, "available_spare": 99,
            "data_written_bytes": 65602088 * 512000}
    if name == "scrutiny-smart-scsi2.json":
        assert summary["scsi"] == {"grown_defects": 0, "read_uncorrected": 0, "write_uncorrected": 0}


# ---------------------------------------------------------------------------------------------
# SMART self-tests (real smartctl JSON in tests/fixtures/quiesce/; the NVMe and SCSI running cases from
# smartmontools' names)


@pytest.mark.parametrize(
    ("name", "protocol", "in_progress", "remaining", "detail"),
    [
        ("smartctl70-ata-selftest-in-progress.json", "ata", True, 10, "in progress, 10% remaining"),
        ("smartctl70-ata-selftest-completed.json", "ata", False, None, "completed without error"),
        ("smartctl71-nvme-all.json", None, None, None, None),
        ("smartctl73-virtio-no-smart.json", None, None, None, "/dev/vda: Unable to detect device type"),
    ],
)
def test_smart_selftest_real_outputs(name, protocol, in_progress, remaining, detail):
    result = smart_selftest(json.loads(quiesce_fixture(name)))
    assert (result["protocol"], result["in_progress"], result["remaining_percent"], result["detail"]) == (
        protocol, in_progress, remaining, detail)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"ata_smart_data": {"self_test": {"status": {"value": 249}}}}, ("ata", True, 90)),     # no remaining_percent key
        ({"ata_smart_data": {"self_test": {"status": {"value": 0x19}}}}, ("ata", False, None)),  # aborted by host: not running
        ({"nvme_self_test_log": {"current_self_test_operation": {"value": 1, "string": "Short self-test in progress"},
                                 "current_self_test_completion_percent": 30}}, ("nvme", True, 70)),
        ({"nvme_self_test_log": {"current_self_test_operation": {"value": 0, "string": "No self-test in progress"}}},
         ("nvme", False, None)),
        ({"scsi_self_test_status": {"in_progress": True}}, ("scsi", True, None)),
        ([], (None, None, None)),
    ],
)
def test_smart_selftest_table(document, expected):
    result = smart_selftest(document)
    assert (result["protocol"], result["in_progress"], result["remaining_percent"]) == expected


@pytest.mark.parametrize(("speed", "expected"), [
    # the real capture's (tests/fixtures/quiesce/smartctl70-ata-selftest-completed.src.md): 6.0 of 6.0 Gb/s
    (json.loads((Path(FIXTURES).parent / "quiesce" / "smartctl70-ata-selftest-completed.json").read_text())[
        "interface_speed"], {"current_gbps": 6.0, "max_gbps": 6.0}),
    ({"max": {"string": "6.0 Gb/s"}, "current": {"string": "3.0 Gb/s"}}, {"current_gbps": 3.0, "max_gbps": 6.0}),
    ({"max": {"units_per_second": 30, "bits_per_unit": 100000000}}, {"current_gbps": None, "max_gbps": 3.0}),
    ("6.0 Gb/s", None),
])
def test_sata_interface_speed(speed, expected):
    document = {"smartctl": {"version": [7, 3], "exit_status": 0}, "interface_speed": speed}
    assert parse_smartctl(json.dumps(document))["interface_speed"] == expected
