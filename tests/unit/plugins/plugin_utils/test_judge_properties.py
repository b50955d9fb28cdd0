# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Random fleets through the judge (plugin_utils/_report.build_report: the pipeline's judge_report, then report.json read
back): what must hold for any fleet.

Every record is judged exactly once; every host appears; an entry's verdict is its worst finding
(verdict precedence) and the entries come worst first; each peer group's median, MAD, count, min
and max are those of its members' primary figures; the summary counts what the results hold.

derandomize: CI draws the same 150 fleets every run, so a failure is reproducible, never a flake;
explore further by calling a test's ``.hypothesis.inner_test`` under your own settings (e.g. 4000
examples, as done when this was written: no counterexample).
"""
from __future__ import annotations

import json
import statistics

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline

TESTS = ("dd_seq_write", "dd_seq_read", "fio_rand_read")
MODELS = (("ST4000NM000A", True), ("SAMSUNG MZ7L3960", False), (None, None))
RANK = {verdict: rank for rank, verdict in enumerate(agg.VERDICTS)}


@st.composite
def records(draw, host_index):
    test = draw(st.sampled_from(TESTS))
    model, rotational = draw(st.sampled_from(MODELS))
    figure = draw(st.one_of(st.none(), st.floats(min_value=1.0, max_value=5e9, allow_nan=False)))
    direction = "read" if "read" in test else "write"
    metrics = {}
    if figure is not None:
        metrics["%s_iops" % direction if test.startswith("fio") else "%s_bytes_per_s" % direction] = figure
    target = {
        "path": "/srv/d%d" % draw(st.integers(0, 2)), "device": "sd%s" % "bcd"[host_index % 3], "model": model,
        "firmware": "F1" if model else None, "size_bytes": 960197124096 if model else None, "rotational": rotational,
        "serial": draw(st.one_of(st.none(), st.sampled_from(["S1", "S2", "S3"]))), "wwn": None, "transport": "sata",
    }
    record = {
        "schema": 1, "test": test, "tool": test.partition("_")[0], "target": target,
        "params": {"block_size": 4096 if test.startswith("fio") else 1048576}, "metrics": metrics, "bytes": 2 ** 30,
        "seconds": draw(st.floats(min_value=0.0, max_value=600.0, allow_nan=False)),
    }
    if draw(st.integers(0, 9)) == 0:
        record["error"] = "tool failed"
    if draw(st.integers(0, 9)) == 0:
        record["device_io"] = {"read_bytes": 0, "write_bytes": 0}  # the page cache was measured: invalid
    if draw(st.integers(0, 4)) == 0:
        samples = st.lists(st.floats(min_value=1.0, max_value=5e9, allow_nan=False), min_size=2, max_size=4)
        record["samples"] = draw(samples)
    return record


@st.composite
def fleets(draw):
    hosts = ["h%d" % index for index in range(draw(st.integers(1, 8)))]
    records_by_host = {}
    statuses = {}
    for index, host in enumerate(hosts):
        kept = draw(st.lists(records(index), max_size=5))
        if kept:
            records_by_host[host] = kept
        status = draw(st.sampled_from([agg.HOST_OK, agg.HOST_FAILED, agg.HOST_UNREACHABLE]))
        problems = []
        if status != agg.HOST_OK and draw(st.booleans()):
            problems.append({"task": "Run", "status": status, "message": "lost"})
        statuses[host] = {"status": status, "problems": problems}
    return records_by_host, statuses


def _judged(fleet):
    records_by_host, statuses = fleet
    return pipeline.build_report(records_by_host, statuses, {"playbook": "p"}), records_by_host, statuses


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(fleets())
def test_every_record_is_judged_once_and_every_host_appears(fleet):
    report, records_by_host, statuses = _judged(fleet)
    results = report["results"]
    judged = sorted(json.dumps(entry["record"], sort_keys=True) for entry in results if entry["record"] is not None)
    assert judged == sorted(json.dumps(record, sort_keys=True) for records in records_by_host.values() for record in records)
    assert set(report["hosts"]) == set(records_by_host) | set(statuses)
    for host in set(statuses) - set(records_by_host):
        assert [entry["verdict"] for entry in results if entry["host"] == host] and all(
            entry["verdict"] == "not_measured" for entry in results if entry["host"] == host)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(fleets())
def test_verdict_is_the_worst_finding_and_results_come_worst_first(fleet):
    report, _records_by_host, _statuses = _judged(fleet)
    results = report["results"]
    for entry in results:
        ranks = [RANK[finding["verdict"]] for finding in entry["reasons"]]
        assert ranks == sorted(ranks) and entry["verdict"] == entry["reasons"][0]["verdict"]
    assert [RANK[entry["verdict"]] for entry in results] == sorted(RANK[entry["verdict"]] for entry in results)
    summary = report["summary"]
    assert summary["total"] == len(results) == sum(summary["counts"].values())
    verdicts = [entry["verdict"] for entry in results]
    assert summary["counts"] == {verdict: verdicts.count(verdict) for verdict in agg.VERDICTS}
    failing = agg.failing_verdicts(report["rules"]["unstable_fails"])
    assert summary["passed"] is (not any(verdict in failing for verdict in verdicts) and not summary["input_errors"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(fleets())
def test_group_figures_are_those_of_the_group_s_members(fleet):
    report, _records_by_host, _statuses = _judged(fleet)
    # Members: the entries of the group whose figure counts (a failed or invalid record is judged, not counted).
    measured = [entry for entry in report["results"] if entry["group"] is not None and entry["primary_metric"]
                and not any(finding["verdict"] in ("error", "invalid") for finding in entry["reasons"])]
    assert {(tuple(entry["group"]), entry["primary_metric"]["name"]) for entry in measured} == {
        (tuple(group["key"]), group["metric"]) for group in report["groups"]}
    for group in report["groups"]:
        values = [entry["primary_metric"]["value"] for entry in measured
                  if entry["group"] == group["key"] and entry["primary_metric"]["name"] == group["metric"]]
        assert group["measured"] == len(values) > 0
        assert group["median"] == statistics.median(values)
        assert group["mad"] == statistics.median([abs(value - group["median"]) for value in values])
        assert (group["min"], group["max"]) == (min(values), max(values))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(fleets())
def test_the_report_is_what_the_judge_said(fleet):
    """build_report is report.json read back: it holds every section and entry field judge_report made (nothing lost
    in its JSON), and each entry's record in the place the caller gave (the callback's: a place in its spool)."""
    report, records_by_host, statuses = _judged(fleet)
    facts_by_host = {host: [((host, index), agg.record_facts(record)) for index, record in enumerate(records)]
                     for host, records in records_by_host.items()}
    sections, entries = agg.judge_report(facts_by_host, statuses, {"playbook": "p"}, settings=agg.make_settings())
    assert sections == dict(report, results=[])
    places = [entry.record for entry in entries]
    assert [None if place is None else records_by_host[place[0]][place[1]] for place in places] == [
        entry["record"] for entry in report["results"]]
    assert [agg.entry_fields(entry) for entry in entries] == [
        {key: value for key, value in entry.items() if key != "record"} for entry in report["results"]]
