# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_burnin.py: the health counters of real smartctl / nvme-cli JSON (tests/fixtures/burnin/,
tests/fixtures/quiesce/, each with its .src.md), what counts as grown, and one target's cycles through a real
private state directory: the baseline, the budget, the stop at new errors, the file gone after the last cycle.
The disk's health is read by a stand-in ``smartctl`` (labelled: no disk here has SMART) that prints the real
capture, with the reallocated-sector count raised from its second reading on when told to."""
from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _burnin, _health
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.nvme import nvme_result
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.smartctl import smartctl_result
from ansible_collections.diskproof.fleet.plugins.module_utils._results import NotRun

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
ATA = os.path.join(FIXTURES, "burnin", "smartctl70-ata-attributes.json")
NVME = os.path.join(FIXTURES, "quiesce", "smartctl71-nvme-all.json")


def text_of(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_ata_counters_from_a_real_capture():
    counters = _health.health_counters(smartctl_result(0, text_of(ATA), ""), None)
    assert counters == {"reallocated_sectors": 0, "pending_sectors": None, "offline_uncorrectable": None,
                        "udma_crc_errors": 0, "media_errors": None, "error_log_entries": None, "grown_defects": None,
                        "read_uncorrected": None, "write_uncorrected": None, "critical_warning": None,
                        "health": "passed", "temperature_c": 36, "percentage_used": None, "available_spare": None,
                        "available_spare_threshold": None, "warning_temp_time": None, "critical_comp_time": None,
                        "thermal_throttle_events": None}


def test_nvme_counters_from_a_real_capture():
    counters = _health.health_counters(smartctl_result(0, text_of(NVME), ""), None)
    assert (counters["media_errors"], counters["error_log_entries"], counters["critical_warning"]) == (0, 0, 0)
    assert counters["reallocated_sectors"] is None


def test_no_smart_is_unknown_not_an_error():
    assert _health.health_counters(None, None)["health"] == "unavailable"
    missing = nvme_result(1, "", "nvme: no such device")
    assert _health.health_counters(None, missing)["media_errors"] is None


@pytest.mark.parametrize(("baseline", "now", "expected"), [
    ({"media_errors": 0}, {"media_errors": 12}, ["media errors 0 -> 12"]),
    ({"udma_crc_errors": 3}, {"udma_crc_errors": 5}, ["UDMA CRC errors 3 -> 5"]),
    ({"media_errors": 4}, {"media_errors": 4}, []),
    ({"media_errors": None}, {"media_errors": 9}, []),          # unknown before: nothing to compare
    ({"media_errors": 5}, {"media_errors": 2}, []),             # went down (a reset counter): not a new error
    ({"critical_warning": 0}, {"critical_warning": 4}, ["critical warning 0x00 -> 0x04"]),
    ({"critical_warning": 4}, {"critical_warning": 4}, []),     # already set at the start: not new
    ({"health": "passed"}, {"health": "failed"}, ["SMART health passed -> failed"]),
    ({"health": "failed"}, {"health": "failed"}, []),
    ({"reallocated_sectors": 0, "pending_sectors": 1}, {"reallocated_sectors": 8, "pending_sectors": 3},
     ["reallocated sectors 0 -> 8", "pending sectors 1 -> 3"]),
])
def test_new_problems(baseline, now, expected):
    assert _health.new_problems(baseline, now) == expected


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now


def smartctl_stand_in(tmp_path, grow_after=None):
    """A stand-in smartctl (labelled: this machine's disks have no SMART) printing the real ATA capture; from its
    reading number grow_after + 1 on, the reallocated-sector count is 8 instead of 0."""
    document = json.loads(text_of(ATA))
    grown = json.loads(text_of(ATA))
    for attribute in grown["ata_smart_attributes"]["table"]:
        if attribute["id"] == 5:
            attribute["raw"] = {"value": 8, "string": "8"}
    (tmp_path / "healthy.json").write_text(json.dumps(document))
    (tmp_path / "grown.json").write_text(json.dumps(grown))
    script = tmp_path / "smartctl"
    script.write_text('#!/bin/sh\nn=$(cat "%s/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "%s/count"\n'
                      'if [ %d -gt 0 ] && [ $n -gt %d ]; then cat "%s/grown.json"; else cat "%s/healthy.json"; fi\n'
                      % (tmp_path, tmp_path, grow_after or 0, grow_after or 0, tmp_path, tmp_path))
    script.chmod(0o755)
    return lambda name: str(script) if name == "smartctl" else None


def cycle(state_dir, find_bin, clock, number, cycles=3, budget_s=100.0):
    params = {"burnin_run": "run-1", "burnin_target": "/srv/d0", "burnin_cycle": number, "burnin_cycles": cycles,
              "burnin_budget_s": budget_s}
    return _burnin.Cycle(str(state_dir), params, "/dev/sdb", find_bin, clock=clock)


def state_files(state_dir):
    return sorted(name for name in os.listdir(state_dir) if name.startswith("burnin-"))


def test_cycles_keep_the_baseline_and_the_last_removes_the_state(tmp_path):
    state_dir, clock, find_bin = tmp_path / "state", Clock(), smartctl_stand_in(tmp_path)
    first = cycle(state_dir, find_bin, clock, 1)
    first.begin()
    assert first.baseline["reallocated_sectors"] == 0 and first.baseline["health"] == "passed"
    (name,) = state_files(state_dir)
    assert stat.S_IMODE(os.stat(state_dir / name).st_mode) == 0o600
    records = [{"error": None}]
    clock.now += 10
    assert first.end(records) == "burn-in cycle 1 of up to 3: 10 s of the 1 min 40 s budget used"
    assert records[0]["health"]["grew"] == [] and records[0]["error"] is None
    for number in (2, 3):
        later = cycle(state_dir, find_bin, clock, number)
        later.begin()
        assert later.baseline == first.baseline     # read once, before the target's first cycle
        later.end([{"error": None}])
    assert later.last
    later.finish()
    assert state_files(state_dir) == []
    assert int((tmp_path / "count").read_text()) == 4   # baseline, then one reading after each cycle


def test_a_cycle_past_the_budget_runs_nothing(tmp_path):
    state_dir, clock, find_bin = tmp_path / "state", Clock(), smartctl_stand_in(tmp_path)
    first = cycle(state_dir, find_bin, clock, 1, budget_s=60.0)
    first.begin()
    clock.now += 45
    first.end([{}])
    clock.now += 20          # 65 s since the burn-in began
    with pytest.raises(NotRun, match=r"^burn-in budget of 1 min spent \(1 min 5 s since it began\) after 1 of 3 cycles$") \
            as first_skip:
        cycle(state_dir, find_bin, clock, 2, budget_s=60.0).begin()
    assert first_skip.value.told is False      # the first cycle that runs nothing says why
    with pytest.raises(NotRun) as later_skip:
        cycle(state_dir, find_bin, clock, 3, budget_s=60.0).begin()
    assert later_skip.value.told is True


def test_new_errors_stop_the_burn_in(tmp_path):
    state_dir, clock, find_bin = tmp_path / "state", Clock(), smartctl_stand_in(tmp_path, grow_after=1)
    first = cycle(state_dir, find_bin, clock, 1)
    first.begin()
    records = [{"error": None, "integrity": {"bad_blocks_total": 0}}]
    first.end(records)       # the second reading: reallocated sectors 0 -> 8
    assert records[0]["health"]["grew"] == ["reallocated sectors 0 -> 8"]
    assert records[0]["error"] == ("health: reallocated sectors 0 -> 8 since the burn-in began (cycle 1 of 3): the "
                                   "burn-in stopped")
    with pytest.raises(NotRun, match=r"^burn-in stopped after cycle 1: reallocated sectors 0 -> 8$"):
        cycle(state_dir, find_bin, clock, 2).begin()
    assert int((tmp_path / "count").read_text()) == 2   # the stopped cycle read nothing


def test_an_earlier_tool_error_is_kept_before_the_health_reason(tmp_path):
    state_dir, clock, find_bin = tmp_path / "state", Clock(), smartctl_stand_in(tmp_path, grow_after=1)
    first = cycle(state_dir, find_bin, clock, 1)
    first.begin()
    records = [{"error": "fio: pid=1, err=5/file:io_u.c:1, func=io_u error, error=Input/output error"}]
    first.end(records)
    assert records[0]["error"].startswith("fio: pid=1, err=5") and "; health: reallocated sectors 0 -> 8" in \
        records[0]["error"]


def test_a_disk_without_smart_is_burnt_in_on_its_data_alone(tmp_path):
    state_dir, clock = tmp_path / "state", Clock()
    first = cycle(state_dir, lambda name: None, clock, 1)     # no smartctl, no nvme
    first.begin()
    records = [{}]
    first.end(records)
    assert records[0]["health"]["grew"] == [] and "error" not in records[0]
    assert records[0]["health"]["after"]["health"] == "unavailable"


def test_a_foreign_state_file_is_refused_not_overwritten(tmp_path):
    state_dir, clock = tmp_path / "state", Clock()
    first = cycle(state_dir, lambda name: None, clock, 1)
    first.begin()
    (name,) = state_files(state_dir)
    (state_dir / name).write_text('{"kind": "something else"}')
    with pytest.raises(Exception, match="is not a diskproof burn-in state file"):
        cycle(state_dir, lambda name: None, clock, 2).begin()
