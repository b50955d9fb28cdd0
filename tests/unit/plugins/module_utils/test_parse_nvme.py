"""nvme smart-log -o json: both layouts, and nvme-cli's failure on the project VM (tests/fixtures/discover/)."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.nvme import nvme_result

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "discover")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_nvme_cli_failure_on_this_vm_is_data():
    assert nvme_result(1, "", fixture("loop.nvme-smart-log.txt")) == {
        "available": False, "exit_status": 1, "messages": ["smart log: Invalid argument"]}


# The two layouts of `nvme smart-log -o json`: nvme-cli up to 2.10 prints critical_warning as a number,
# 2.11 as an object with the bits spelled out; temperature is in kelvin in both.
@pytest.mark.parametrize(("log", "expected"), [
    ({"critical_warning": 0, "temperature": 310, "avail_spare": 100, "spare_thresh": 10, "percent_used": 2,
      "data_units_written": 36754, "media_errors": 0, "num_err_log_entries": 4, "power_on_hours": 215},
     {"critical_warning": 0, "temperature_c": 37, "available_spare": 100, "available_spare_threshold": 10,
      "percentage_used": 2, "data_written_bytes": 36754 * 512000, "media_errors": 0, "error_log_entries": 4,
      "power_on_hours": 215, "passed": True}),
    ({"critical_warning": {"value": 4, "available_spare": 0, "reliability_degraded": 1}, "temperature": 324,
      "avail_spare": 100, "percent_used": 30, "media_errors": "3"},
     {"critical_warning": 4, "temperature_c": 51, "percentage_used": 30, "media_errors": 3, "passed": False}),
])
def test_nvme_smart_log_layouts(log, expected):
    health = nvme_result(0, json.dumps(log), "")
    assert health["available"] is True
    assert {key: health[key] for key in expected} == expected


def test_thermal_management_counters_are_added_up():
    log = {"critical_warning": 0, "warning_temp_time": 7, "critical_comp_time": 0, "thm_temp1_trans_count": 3,
           "thm_temp2_trans_count": 1}
    health = nvme_result(0, json.dumps(log), "")
    assert (health["warning_temp_time"], health["critical_comp_time"], health["thermal_throttle_events"]) == (7, 0, 4)
    assert nvme_result(0, json.dumps({"critical_warning": 0}), "")["thermal_throttle_events"] is None
