# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tables for plugin_utils/_causes.py and the judge's health rules (docs/report.md, "Health rules" and "Likely
causes"): each hint's text exactly, the cohort's majority, the unhealthy verdict's precedence, the setting
max_temperature_c end to end through the filter, and every writer's 'likely cause' column."""
from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.filter import report as report_filter
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _causes, _render
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline

MODEL = "SAMSUNG MZQL23T8HCLS"
SIZE = 3840755982336
HEALTH = {"reallocated_sectors": None, "pending_sectors": None, "offline_uncorrectable": None, "udma_crc_errors": None,
          "media_errors": 0, "error_log_entries": 4, "grown_defects": None, "read_uncorrected": None,
          "write_uncorrected": None, "critical_warning": 0, "health": "passed", "temperature_c": 41,
          "percentage_used": 1, "available_spare": 100, "available_spare_threshold": 10, "warning_temp_time": 0,
          "critical_comp_time": 0, "thermal_throttle_events": 0}


def state(disk="nvme0n1", **changes):
    """A disk_state reading as the host builds it (one side: before or after), healthy and full-speed."""
    reading = {
        "disk": disk, "model": MODEL, "firmware": "GDC5902Q", "rotational": False, "scheduler": "none",
        "nr_requests": 1023, "queue_depth": None, "read_ahead_kb": 128, "max_sectors_kb": 128,
        "logical_block_size": 512, "physical_block_size": 4096, "write_cache": "write back", "partition": None,
        "pcie": {"function": "0000:01:00.0", "speed_gts": 16.0, "width": 4, "max_speed_gts": 16.0, "max_width": 4,
                 "port": "0000:00:02.1", "port_max_speed_gts": 16.0, "port_max_width": 4, "degraded": False,
                 "text": "PCIe link x4 at 16 GT/s, capable x4 at 16 GT/s"},
        "sata": None, "nvme_power": {"power_state": 0, "apst": True}, "health": dict(HEALTH), "unknown": [],
    }
    for key, value in changes.items():
        if key == "health":
            reading["health"].update(value)
        else:
            reading[key] = value
    return reading


def result(host, rate=3.0e9, before=None, after=None, test="fio_seq_read", firmware="GDC5902Q", disk_state=True, error=None,
           model=MODEL):
    """A fio record of host's nvme0n1 with a disk state around it (``before``/``after``: changes to the healthy one)."""
    record = {
        "schema": 1, "test": test, "tool": "fio",
        "target": {"path": "/dev/nvme0n1", "device": "nvme0n1", "model": model, "firmware": firmware,
                   "size_bytes": SIZE, "serial": "S" + host, "rotational": False, "transport": "nvme"},
        "params": {"block_size": 1048576, "rw": "read"},
        "metrics": {"read_bytes_per_s": rate, "write_bytes_per_s": None, "read_iops": None, "write_iops": None},
        "error": error,
    }
    if disk_state:
        record["disk_state"] = copy.deepcopy({"before": state(firmware=firmware, model=model, **(before or {})),
                                              "after": state(firmware=firmware, model=model, **(after or before or {}))})
    return record


DEGRADED_PCIE = {"function": "0000:01:00.0", "speed_gts": 8.0, "width": 2, "max_speed_gts": 16.0, "max_width": 4,
                 "port": "0000:00:02.1", "port_max_speed_gts": 16.0, "port_max_width": 4, "degraded": True,
                 "text": "PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s"}


def fleet():
    """Nine disks of one model: n01 on a degraded link, n02's media errors grew, n03 (slow) and n09 (not) on another
    firmware, n04 with its write cache off; the other four are alike."""
    records = {"n%02d" % number: [result("n%02d" % number)] for number in range(1, 10)}
    records["n01"] = [result("n01", rate=1.6e9, before={"pcie": DEGRADED_PCIE})]
    records["n02"] = [result("n02", rate=1.7e9, after={"health": {"media_errors": 12}})]
    records["n03"] = [result("n03", rate=2.2e9, firmware="GDC5602Q")]
    records["n04"] = [result("n04", rate=2.3e9, before={"write_cache": "write through"})]
    records["n09"] = [result("n09", firmware="GDC5602Q")]
    return records


# One peer group for the whole fleet: under identity (the default) n03 and n09 would be a group of their own, too
# small to judge (the differences section is where a firmware difference shows there).
ONE_GROUP = {"peer_group": "test"}


def report_of(records, **settings):
    return pipeline.build_report(records, {}, {"playbook": "t"}, settings=agg.make_settings(**settings))


def by_host(report):
    return {entry["host"]: entry for entry in report["results"]}


def judged(records, **settings):
    """(report sections, entries) as the writers get them."""
    facts = {host: [(record, agg.record_facts(record)) for record in host_records] for host, host_records in records.items()}
    return agg.judge_report(facts, {}, {"playbook": "t"}, settings=agg.make_settings(**settings))


# ---------------------------------------------------------------------------------------------
# each hint's text
# ---------------------------------------------------------------------------------------------

def test_the_fleet_s_flagged_results_name_their_likely_causes():
    results = by_host(report_of(fleet(), **ONE_GROUP))
    assert results["n01"]["verdict"] == "outlier"
    assert results["n01"]["likely_causes"] == [{"cause": "pcie_link", "text": "PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s"}]
    assert results["n02"]["verdict"] == "unhealthy"
    assert results["n02"]["reason"] == "health: media errors 0 -> 12 during the run"
    assert results["n02"]["likely_causes"] == [{"cause": "health", "text": "media errors 0 -> 12 during the run"}]
    assert results["n03"]["likely_causes"] == [{"cause": "firmware", "text": "firmware GDC5602Q, 7 of 8 peers GDC5902Q"}]
    assert results["n04"]["likely_causes"] == [{"cause": "write_cache", "text": "write cache off (peers: on)"}]
    # A pass gets no causes (its group's differences are listed once, in differences).
    assert results["n05"]["verdict"] == "pass" and results["n05"]["likely_causes"] == []


def test_differences_name_the_disks_that_differ_passing_or_not():
    differences = report_of(fleet())["differences"]
    assert [(row["attribute"], row["text"]) for row in differences] == [
        ("write_cache", "1 of 9 disks in this group has write cache off (n04:nvme0n1); 8 have write cache on"),
        ("firmware", "2 of 9 disks in this group run firmware GDC5602Q (n03:nvme0n1, n09:nvme0n1); 7 run GDC5902Q"),
    ]
    firmware = differences[1]
    assert firmware["model"] == MODEL and firmware["size_bytes"] == SIZE and firmware["cause"] == "firmware"
    assert firmware["values"] == [{"value": "GDC5902Q", "disks_total": 7, "disks": []},
                                  {"value": "GDC5602Q", "disks_total": 2, "disks": [
                                      {"host": "n03", "device": "nvme0n1", "target_path": "/dev/nvme0n1"},
                                      {"host": "n09", "device": "nvme0n1", "target_path": "/dev/nvme0n1"}]}]


def test_three_disks_on_another_firmware_are_a_difference_even_when_all_pass():
    records = {"n%02d" % number: [result("n%02d" % number, firmware="X" if number <= 3 else "Y")] for number in range(1, 9)}
    report = report_of(records)
    assert {entry["verdict"] for entry in report["results"]} == {"pass"}
    assert [row["text"] for row in report["differences"]] == [
        "3 of 8 disks in this group run firmware X (n01:nvme0n1, n02:nvme0n1, n03:nvme0n1); 5 run Y"]


@pytest.mark.parametrize(("before", "after", "expected"), [
    ({"sata": {"speed_gbps": 3.0, "max_gbps": 6.0, "degraded": True, "text": "SATA link 3.0 Gb/s, capable 6.0 Gb/s"},
      "pcie": None}, None, [("sata_link", "SATA link 3.0 Gb/s, capable 6.0 Gb/s")]),
    # No verdict from the host: the speeds say it.
    ({"pcie": dict(DEGRADED_PCIE, degraded=None, text=None)}, None, [("pcie_link", "PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s")]),
    ({"partition": {"name": "sda1", "start_bytes": 32256, "alignment_offset": 3584, "aligned": False}}, None,
     [("alignment", "partition sda1 starts at 32256 B, not a multiple of the 4096 B physical block")]),
    ({"partition": {"name": "sda1", "start_bytes": 1048576, "alignment_offset": 0, "aligned": True}}, None, []),
    (None, {"health": {"temperature_c": 66, "thermal_throttle_events": 3}},
     [("thermal", "temperature 66 °C, thermal throttle events +3")]),
    (None, {"health": {"warning_temp_time": 5}}, [("thermal", "temperature 41 °C, warning temperature time +5 min")]),
    ({"nvme_power": {"power_state": 3, "apst": True}}, {"nvme_power": {"power_state": 3, "apst": False}},
     [("power", "NVMe power state 3 (0 is full power), APST on -> off during the run")]),
    (None, {"health": {"media_errors": 12, "critical_warning": 4, "health": "failed"}},
     [("health", "media errors 0 -> 12 during the run"), ("health", "critical warning 0x00 -> 0x04 during the run"),
      ("health", "SMART health passed -> failed during the run")]),
    # A counter unknown on either side says nothing.
    (None, {"health": {"media_errors": None}}, []),
])
def test_a_disk_s_own_causes(before, after, expected):
    disk = _causes.disk_facts(result("n01", before=before, after=after))
    assert _causes.own_causes(disk, 70.0) == expected


def test_the_causes_are_ranked():
    records = fleet()
    records["n01"] = [result("n01", rate=1.0e9, firmware="GDC5602Q", before={
        "pcie": DEGRADED_PCIE, "write_cache": "write through", "scheduler": "mq-deadline",
        "partition": {"name": "nvme0n1p1", "start_bytes": 512, "alignment_offset": 512, "aligned": False}},
        after={"pcie": DEGRADED_PCIE, "write_cache": "write through", "scheduler": "mq-deadline",
               "partition": {"name": "nvme0n1p1", "start_bytes": 512, "alignment_offset": 512, "aligned": False},
               "health": {"media_errors": 1, "temperature_c": 75, "thermal_throttle_events": 2}})]
    causes = [cause["cause"] for cause in by_host(report_of(records, **ONE_GROUP))["n01"]["likely_causes"]]
    assert causes == ["health", "pcie_link", "write_cache", "firmware", "alignment", "thermal", "settings"]
    assert causes == [kind for kind in _causes.CAUSE_RANK if kind in causes]


# ---------------------------------------------------------------------------------------------
# the cohort
# ---------------------------------------------------------------------------------------------

def test_firmware_is_not_in_the_cohort_key_although_it_is_in_the_peer_group():
    records = fleet()
    for host in ("n03", "n09"):   # slow, both: their identity peer group of two is still too small to judge
        records[host] = [result(host, rate=1.0e9, firmware="GDC5602Q", before={"health": {"temperature_c": 75}})]
    n03 = by_host(report_of(records))["n03"]
    assert "firmware=GDC5602Q" in n03["group"] and n03["verdict"] == "unhealthy"
    # Held against its 8 cohort peers of every firmware, not its group of 2.
    assert n03["likely_causes"] == [{"cause": "firmware", "text": "firmware GDC5602Q, 7 of 8 peers GDC5902Q"},
                                    {"cause": "thermal", "text": "temperature 75 °C"}]


@pytest.mark.parametrize(("others", "expected"), [
    (["on", "on"], ["write cache off (peers: on)"]),           # 2 others: enough
    (["on"], []),                                             # 1 other: too few to say which is odd
    (["on", "off"], []),                                      # no majority among the others
    (["on", "on", "off"], ["write cache off (peers: on)"]),   # 2 of 3 others: a majority
    (["on", "on", "off", "off"], []),                        # 2 of 4: not more than half
])
def test_a_difference_needs_a_majority_of_at_least_two_others(others, expected):
    words = {"on": "write back", "off": "write through"}
    records = {"odd": [result("odd", before={"write_cache": "write through"})]}
    for number, value in enumerate(others):
        records["p%d" % number] = [result("p%d" % number, before={"write_cache": words[value]})]
    entries = judged(records, outlier_fraction=0.5)[1]
    cohorts = _causes.Cohorts()
    for entry in entries:
        cohorts.add(agg.cohort_key(entry.facts), entry.host, entry.device, entry.facts.disk)
    odd = next(entry for entry in entries if entry.host == "odd")
    assert [text for _kind, text in cohorts.peer_causes(agg.cohort_key(odd.facts), odd.facts.disk)] == expected


def test_other_tests_and_other_models_are_not_peers():
    # odd's cohort: fio_seq_read on its model: n01 alone (n02-n05 ran another test, m01-m02 are another model).
    records = {"n%02d" % number: [result("n%02d" % number, test="fio_seq_read" if number == 1 else "fio_seq_write")]
               for number in range(1, 6)}
    records.update({"m%02d" % number: [result("m%02d" % number, model="OTHER MODEL")] for number in (1, 2)})
    records["odd"] = [result("odd", rate=1.0e9, firmware="OTHER")]
    odd = by_host(report_of(records, **ONE_GROUP))["odd"]
    assert odd["verdict"] == "outlier" and odd["likely_causes"] == []
    records["n06"] = [result("n06")]   # a second peer of its own kind: now the firmware stands out
    odd = by_host(report_of(records, **ONE_GROUP))["odd"]
    assert odd["likely_causes"] == [{"cause": "firmware", "text": "firmware OTHER, 2 of 2 peers GDC5902Q"}]


@pytest.mark.parametrize(("name", "changed", "expected"), [
    ("scheduler", "mq-deadline", "scheduler mq-deadline, 8 of 8 peers none"),
    ("nr_requests", 64, "nr_requests 64, 8 of 8 peers 1023"),
    ("queue_depth", 32, None),   # the peers' queue depth is unknown: nothing to hold it against
    ("read_ahead_kb", 4096, "read_ahead_kb 4096, 8 of 8 peers 128"),
    ("max_sectors_kb", 1280, "max_sectors_kb 1280, 8 of 8 peers 128"),
    ("rotational", True, "rotational, 8 of 8 peers non-rotational"),
])
def test_queue_and_scheduler_differences(name, changed, expected):
    records = {"n%02d" % number: [result("n%02d" % number)] for number in range(1, 9)}
    records["odd"] = [result("odd", rate=1.0e9, before={name: changed})]
    causes = by_host(report_of(records))["odd"]["likely_causes"]
    assert causes == ([] if expected is None else [{"cause": "settings", "text": expected}])


# ---------------------------------------------------------------------------------------------
# health rules: the unhealthy verdict
# ---------------------------------------------------------------------------------------------

def test_unhealthy_ranks_after_corrupt_and_before_error():
    assert agg.VERDICTS[:3] == ("corrupt", "unhealthy", "error")
    assert agg.VERDICT_KINDS["unhealthy"] == "bad" and "unhealthy" in agg.FAILING_VERDICTS


def test_unhealthy_beats_error_and_slow_and_corrupt_beats_unhealthy():
    grew = {"health": {"media_errors": 3}}
    records = {"n%02d" % number: [result("n%02d" % number)] for number in range(1, 6)}
    records["err"] = [result("err", after=grew, error="fio exited 1: Input/output error")]
    records["slow"] = [result("slow", rate=1.0e9, after=grew)]
    corrupt = result("bad", after=grew)
    corrupt["integrity"] = {"check": "crc32c", "bad_blocks_total": 1, "bad_blocks": [
        {"offset": 0, "length": 4096, "kind": "flipped", "detail": "x"}], "kinds": {"flipped": 1}, "verified_bytes": 4096}
    records["bad"] = [corrupt]
    results = by_host(report_of(records))
    assert [(item["verdict"], item["reason"]) for item in results["err"]["reasons"]] == [
        ("unhealthy", "health: media errors 0 -> 3 during the run"), ("error", "fio exited 1: Input/output error")]
    assert [item["verdict"] for item in results["slow"]["reasons"]] == ["unhealthy", "outlier"]
    assert [item["verdict"] for item in results["bad"]["reasons"]] == ["corrupt", "unhealthy"]


@pytest.mark.parametrize(("after", "limit", "reasons"), [
    ({"health": {"temperature_c": 78}}, 70, ["temperature 78 °C, above the 70 °C limit"]),
    ({"health": {"temperature_c": 78}}, 80, []),
    ({"health": {"temperature_c": 70}}, 70, []),   # at the limit: not above it
    ({"health": {"critical_comp_time": 2}}, 70, ["critical temperature time +2 min during the run"]),
    ({"health": {"thermal_throttle_events": 3}}, 70, []),   # throttling is a hint, not a verdict
    ({"health": {"critical_warning": 2}}, 70, ["health: critical warning 0x00 -> 0x02 during the run"]),
])
def test_the_health_rules(after, limit, reasons):
    entry = by_host(report_of({"h1": [result("h1", after=after)]}, max_temperature_c=limit))["h1"]
    assert [item["reason"] for item in entry["reasons"] if item["verdict"] == "unhealthy"] == reasons
    assert entry["verdict"] == ("unhealthy" if reasons else "pass")


BURNIN_REASON = "health: reallocated sectors 0 -> 8 since the burn-in began (cycle 1 of 3): the burn-in stopped"


@pytest.mark.parametrize(("error", "reasons"), [
    (BURNIN_REASON, [("unhealthy", BURNIN_REASON)]),
    ("fio exited 1; " + BURNIN_REASON, [("unhealthy", BURNIN_REASON), ("error", "fio exited 1")]),
])
def test_a_burn_in_s_health_error_is_unhealthy_with_the_host_s_reason(error, reasons):
    record = result("h1", disk_state=False, error=error, test="burnin_1of3")
    record["health"] = {"baseline": {"reallocated_sectors": 0}, "after": {"reallocated_sectors": 8},
                        "grew": ["reallocated sectors 0 -> 8"]}
    entry = by_host(report_of({"h1": [record]}))["h1"]
    assert [(item["verdict"], item["reason"]) for item in entry["reasons"]] == reasons
    assert entry["likely_causes"] == [{"cause": "health", "text": "reallocated sectors 0 -> 8 since the burn-in began"}]


def test_a_burn_in_cycle_where_nothing_grew_is_judged_as_before():
    record = result("h1", disk_state=False, test="burnin_1of3")
    record["health"] = {"baseline": {}, "after": {}, "grew": []}
    entry = by_host(report_of({"h1": [record]}))["h1"]
    assert entry["verdict"] == "pass" and entry["likely_causes"] == []


def test_old_records_without_a_disk_state_get_no_hints_and_no_error():
    records = {"n%02d" % number: [result("n%02d" % number, disk_state=False)] for number in range(1, 6)}
    records["slow"] = [result("slow", rate=1.0e9, disk_state=False)]
    report = report_of(records)
    assert by_host(report)["slow"]["verdict"] == "outlier"
    assert all(entry["likely_causes"] == [] for entry in report["results"]) and report["differences"] == []
    assert agg.record_facts(records["slow"][0]).disk is None


def test_a_disk_state_of_unknowns_is_no_hint():
    record = result("h1")
    record["disk_state"] = {"before": {key: None for key in state()}, "after": None}
    disk = agg.record_facts(record).disk
    assert disk is not None and _causes.own_causes(disk, 70.0) == [] and _causes.health_reasons(disk, 70.0) == []


# ---------------------------------------------------------------------------------------------
# the setting, end to end
# ---------------------------------------------------------------------------------------------

def test_max_temperature_c_through_the_filter():
    records = {"h1": [result("h1", after={"health": {"temperature_c": 78}})]}
    hot = report_filter.fleet_report(records)
    assert hot["rules"]["max_temperature_c"] == 70.0
    assert hot["results"][0]["verdict"] == "unhealthy" and hot["summary"]["passed"] is False
    cool = report_filter.fleet_report(records, max_temperature_c=80)
    assert cool["rules"]["max_temperature_c"] == 80.0 and cool["results"][0]["verdict"] == "pass"


@pytest.mark.parametrize("limit", [0, -5, 150, "hot", True])
def test_max_temperature_c_refuses_a_bad_value(limit):
    with pytest.raises(ValueError, match="max_temperature_c must be a number of degrees Celsius above 0 and below 150"):
        agg.make_settings(max_temperature_c=limit)


# ---------------------------------------------------------------------------------------------
# the writers' column
# ---------------------------------------------------------------------------------------------

def test_every_writer_shows_the_likely_causes(tmp_path):
    sections, entries = judged(fleet(), **ONE_GROUP)
    markdown = _render.render_markdown(sections, entries)
    assert "| Verdict | Host | Test | Target | Device | Figure | vs median | Reason | Likely cause |" in markdown
    assert "PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s |" in markdown
    assert "## Differences within disk groups" in markdown
    page = _render.render_html(sections, entries)
    assert "<th scope=\"col\">Likely cause</th>" in page and "firmware GDC5602Q, 7 of 8 peers GDC5902Q" in page
    paths, _listing = pipeline.write_files(sections, entries, agg.record_json, str(tmp_path))
    rows = {row["host"]: row for row in csv.DictReader(io.StringIO(Path(paths[1]).read_text(encoding="utf-8")))}
    assert rows["n04"]["likely_causes"] == "write cache off (peers: on)" and rows["n05"]["likely_causes"] == ""
    lines = [line for line, _colour in pipeline.table_lines(sections, _render.listing_of(entries))]
    n02 = next(index for index, line in enumerate(lines) if line.startswith("n02 "))
    assert lines[n02 + 1] == "    likely cause: media errors 0 -> 12 during the run"
    assert not any("likely cause" in line for line in lines if line.startswith("n05"))
    junit = Path(paths[2]).read_text(encoding="utf-8")
    assert "likely cause: PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s" in junit
    report = json.loads(Path(paths[0]).read_text(encoding="utf-8"))
    assert report["differences"] == sections["differences"]


def test_html_escapes_a_cause():
    records = fleet()
    records["n03"] = [result("n03", rate=2.2e9, firmware="<b>&")]
    sections, entries = judged(records, **ONE_GROUP)
    page = _render.render_html(sections, entries)
    assert "firmware &lt;b&gt;&amp;, 7 of 8 peers GDC5902Q" in page and "<b>&" not in page


def test_disk_facts_share_their_profile():
    first, second = (agg.record_facts(result(host)).disk for host in ("n01", "n02"))
    assert first.profile is second.profile


def test_a_disk_discover_could_not_name_is_grouped_by_the_model_its_state_read():
    records = fleet()
    for host_records in records.values():
        host_records[0]["target"].update(model=None, firmware=None)   # a loop device, say: discover names no model
    report = report_of(records)
    assert by_host(report)["n01"]["group"] == ["fio_seq_read", "rotational=false"]   # the peer group: test, rotational
    assert by_host(report)["n03"]["likely_causes"] == [{"cause": "firmware", "text": "firmware GDC5602Q, 7 of 8 peers GDC5902Q"}]
    assert [row["model"] for row in report["differences"]] == [MODEL, MODEL]


def test_a_report_with_causes_and_differences_validates_against_the_shipped_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[4] / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    report = report_of(fleet(), **ONE_GROUP)
    assert report["differences"] and any(entry["likely_causes"] for entry in report["results"])
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(report)
    assert schema["$defs"]["cause"]["enum"] == list(_causes.CAUSE_RANK)


@pytest.mark.parametrize("size_bytes, text", [(3.84e12, "3.84 TB"), (960e9, "960 GB"), (134217728, "134 MB")])
def test_a_disk_group_names_its_capacity_as_a_label_would(size_bytes, text):
    assert _render._disk_size_text(size_bytes) == text


def test_a_link_the_host_could_not_judge_is_judged_by_the_same_rule_port_included():
    """No verdict from the host: _pcie's rule on the record's speeds - an x4 8 GT/s link under a port that can do no
    more than 8 GT/s is not degraded, however fast the device could go."""
    held_by_port = dict(DEGRADED_PCIE, width=4, port_max_speed_gts=8.0, degraded=None, text=None)
    assert _causes.degraded_link({"pcie": held_by_port}) is None
    assert _causes.degraded_link({"pcie": dict(held_by_port, port_max_speed_gts=None)}) == (
        "pcie_link", "PCIe link x4 at 8 GT/s, capable x4 at 16 GT/s")
