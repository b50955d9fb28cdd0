# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tables for module_utils/_aggregate.py: statistics, primary metric, peer groups, verdicts, report."""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest

# Loaded by path: the module is pure Python and needs no collection loader.
_AGGREGATE_PATH = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "_aggregate.py"
_SPEC = importlib.util.spec_from_file_location("diskproof_aggregate_under_test", _AGGREGATE_PATH)
agg = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(agg)

MIB = 1048576


def record(test="dd_seq_write", path="/srv/d0", device="sdb", block_size=MIB, error=None, params=None, **metrics):
    """A schema 1 record with only the fields the aggregate reads filled in."""
    return {
        "schema": 1,
        "test": test,
        "tool": "fio" if test.startswith("fio") else "dd",
        "target": {"path": path, "device": device},
        "params": params if params is not None else {"block_size": block_size},
        "metrics": {
            "read_bytes_per_s": metrics.get("read_bytes_per_s"),
            "write_bytes_per_s": metrics.get("write_bytes_per_s"),
            "read_iops": metrics.get("read_iops"),
            "write_iops": metrics.get("write_iops"),
            "fsyncs_per_s": None,
            "latency_ns": {"read": None, "write": None},
        },
        "error": error,
    }


def write(rate, **kwargs):
    return record(write_bytes_per_s=rate, **kwargs)


def verdicts_of(entries):
    return [(entry["host"], entry["test"], entry["target_path"], entry["verdict"]) for entry in entries]


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "expected"), [
    ([7.0], 7.0),
    ([3.0, 1.0, 2.0], 2.0),
    ([4.0, 1.0, 3.0, 2.0], 2.5),
    ([200e6, 205e6, 150e6], 200e6),
])
def test_median(values, expected):
    assert agg.median(values) == expected


@pytest.mark.parametrize(("values", "expected"), [
    ([5.0, 5.0, 5.0], 0.0),
    ([1.0, 2.0, 3.0, 4.0, 100.0], 1.0),
    ([200e6, 205e6, 150e6], 5e6),
    ([20000.0, 19500.0, 21000.0, 12000.0], 750.0),
])
def test_median_absolute_deviation(values, expected):
    assert agg.median_absolute_deviation(values) == expected


@pytest.mark.parametrize("function", [agg.median, agg.median_absolute_deviation])
def test_statistics_refuse_empty_input(function):
    with pytest.raises(ValueError):
        function([])


@pytest.mark.parametrize(("value", "reference", "expected"), [
    (150.0, 200.0, -0.25),
    (200.0, 200.0, 0.0),
    (250.0, 200.0, 0.25),
    (1.0, 0.0, None),
])
def test_relative_deviation(value, reference, expected):
    assert agg.relative_deviation(value, reference) == expected


# ---------------------------------------------------------------------------------------------
# primary metric
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("test", "params", "expected"), [
    ("fio_rand_read", {}, True),
    ("randwrite_4k", {}, True),
    ("RandRW", {}, True),
    ("random_read", {}, True),
    ("dd_seq_write", {}, False),
    ("operand_check", {}, False),
    ("custom", {"rw": "randwrite"}, True),
    ("custom", {"readwrite": "randrw"}, True),
    ("custom", {"rw": "read"}, False),
])
def test_is_random_access(test, params, expected):
    assert agg.is_random_access({"test": test, "params": params}) is expected


@pytest.mark.parametrize(("case", "rec", "expected"), [
    ("sequential write: bytes/s", write(200e6), {"name": "bytes_per_s", "value": 200e6}),
    ("sequential read: bytes/s", record(test="dd_seq_read", read_bytes_per_s=300e6), {"name": "bytes_per_s", "value": 300e6}),
    ("random test with IOPS: IOPS", record(test="fio_rand_read", block_size=4096, read_bytes_per_s=81920000.0, read_iops=20000.0),
     {"name": "iops", "value": 20000.0}),
    ("random by params, large blocks: IOPS", record(test="custom", params={"rw": "randread", "block_size": MIB}, read_bytes_per_s=1e9, read_iops=1000.0),
     {"name": "iops", "value": 1000.0}),
    ("sequential 4 KiB with IOPS: IOPS", record(test="fio_seq_read", block_size=4096, read_bytes_per_s=4096e3, read_iops=1000.0),
     {"name": "iops", "value": 1000.0}),
    ("exactly 64 KiB with IOPS: IOPS", record(test="fio_seq_read", block_size=65536, read_bytes_per_s=65536e3, read_iops=1000.0),
     {"name": "iops", "value": 1000.0}),
    ("just over 64 KiB: bytes/s", record(test="fio_seq_read", block_size=65537, read_bytes_per_s=65537e3, read_iops=1000.0),
     {"name": "bytes_per_s", "value": 65537e3}),
    ("1 MiB sequential with IOPS: bytes/s", record(test="fio_seq_read", read_bytes_per_s=500e6, read_iops=476.8),
     {"name": "bytes_per_s", "value": 500e6}),
    ("random without IOPS figure: bytes/s", record(test="fio_rand_read", block_size=4096, read_bytes_per_s=8e6), {"name": "bytes_per_s", "value": 8e6}),
    ("IOPS only: IOPS", record(test="custom", write_iops=300.0), {"name": "iops", "value": 300.0}),
    ("mixed directions: sum", record(test="fio_rand_rw", block_size=4096, read_iops=700.0, write_iops=300.0), {"name": "iops", "value": 1000.0}),
    ("mixed bytes/s: sum", record(read_bytes_per_s=100e6, write_bytes_per_s=50e6), {"name": "bytes_per_s", "value": 150e6}),
    ("integer figure", write(200000000), {"name": "bytes_per_s", "value": 200e6}),
    ("no figure", record(), None),
    ("bool is not a figure", write(True), None),
    ("metrics missing", {"test": "dd_seq_write"}, None),
])
def test_primary_metric(case, rec, expected):
    assert agg.primary_metric(rec) == expected, case


def test_peer_group_key_is_the_test_id():
    assert agg.peer_group_key(write(1.0, test="dd_seq_write", path="/a", device="sda")) == agg.peer_group_key(write(2.0, path="/b", device="sdz"))
    assert agg.peer_group_key(write(1.0)) != agg.peer_group_key(write(1.0, test="dd_seq_read"))


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------

OK = {"status": "ok", "problems": []}


def judge(records_by_host, statuses=None, outlier_fraction=0.15):
    statuses = statuses if statuses is not None else {host: OK for host in records_by_host}
    return agg.judge_fleet(records_by_host, statuses, outlier_fraction)


def verdict_and_reason(entries, host):
    return [(entry["verdict"], entry["reason"]) for entry in entries if entry["host"] == host]


@pytest.mark.parametrize(("case", "rates", "outlier_fraction", "expected"), [
    ("16% below: outlier", [200e6, 210e6, 168e6], 0.15,
     {"h3": [("outlier", "-16.0% vs median 200.0 MB/s (n=3), limit -15%")]}),
    ("exactly 15% below: pass", [200e6, 210e6, 170e6], 0.15,
     {"h3": [("pass", "-15.0% vs median 200.0 MB/s (n=3)")]}),
    ("far above: pass, only slow is judged", [200e6, 210e6, 400e6], 0.15,
     {"h3": [("pass", "+90.5% vs median 210.0 MB/s (n=3)")]}),
    ("custom fraction", [200e6, 210e6, 150e6], 0.3,
     {"h3": [("pass", "-25.0% vs median 200.0 MB/s (n=3)")]}),
    ("custom fraction exceeded", [200e6, 210e6, 130e6], 0.3,
     {"h3": [("outlier", "-35.0% vs median 200.0 MB/s (n=3), limit -30%")]}),
    ("two members: not compared", [200e6, 100e6], 0.15,
     {"h2": [("pass", "not compared: 2 measured in group (< 3)")]}),
    ("zero median: not compared", [0.0, 0.0, 0.0], 0.15,
     {"h1": [("pass", "not compared: group median is not positive")]}),
])
def test_peer_verdicts(case, rates, outlier_fraction, expected):
    records_by_host = {"h%d" % (index + 1): [write(rate)] for index, rate in enumerate(rates)}
    entries = judge(records_by_host, outlier_fraction=outlier_fraction)
    for host, verdicts in expected.items():
        assert verdict_and_reason(entries, host) == verdicts, case


def test_error_records_are_judged_error_and_left_out_of_the_median():
    records_by_host = {"h1": [write(200e6)], "h2": [write(100e6)], "h3": [write(50e6, error="dd: No space left on device")]}
    entries = judge(records_by_host)
    assert verdict_and_reason(entries, "h3") == [("error", "dd: No space left on device")]
    # Two measured members remain: too few to call h2 an outlier.
    assert verdict_and_reason(entries, "h2") == [("pass", "not compared: 2 measured in group (< 3)")]


def test_groups_are_per_test_and_per_metric():
    records_by_host = {
        "h1": [write(200e6), record(test="fio_rand_read", block_size=4096, read_iops=20000.0)],
        "h2": [write(200e6), record(test="fio_rand_read", block_size=4096, read_iops=20000.0)],
        "h3": [write(200e6), record(test="fio_rand_read", block_size=4096, read_iops=10000.0)],
        # Same test id, but only a bytes/s figure: never compared with IOPS.
        "h4": [record(test="fio_rand_read", block_size=4096, read_bytes_per_s=1.0)],
    }
    entries = judge(records_by_host)
    assert verdicts_of(entries) == [
        ("h3", "fio_rand_read", "/srv/d0", "outlier"),
        ("h1", "dd_seq_write", "/srv/d0", "pass"),
        ("h1", "fio_rand_read", "/srv/d0", "pass"),
        ("h2", "dd_seq_write", "/srv/d0", "pass"),
        ("h2", "fio_rand_read", "/srv/d0", "pass"),
        ("h3", "dd_seq_write", "/srv/d0", "pass"),
        ("h4", "fio_rand_read", "/srv/d0", "pass"),
    ]
    assert verdict_and_reason(entries, "h4") == [("pass", "not compared: 1 measured in group (< 3)")]
    assert agg.group_statistics(records_by_host) == [
        {"key": ["dd_seq_write"], "metric": "bytes_per_s", "measured": 3, "median": 200e6, "mad": 0.0, "judged": True},
        {"key": ["fio_rand_read"], "metric": "bytes_per_s", "measured": 1, "median": 1.0, "mad": 0.0, "judged": False},
        {"key": ["fio_rand_read"], "metric": "iops", "measured": 3, "median": 20000.0, "mad": 0.0, "judged": True},
    ]


@pytest.mark.parametrize(("case", "status", "has_records", "expected"), [
    ("unreachable", {"status": "unreachable", "problems": [{"task": "Write", "status": "unreachable", "message": "Connection refused\nmore"}]}, False,
     [("not_measured", "unreachable: Connection refused")]),
    ("failed before any record", {"status": "failed", "problems": [{"task": "Preflight", "status": "failed", "message": "read-only"}]}, False,
     [("not_measured", "failed in task 'Preflight': read-only")]),
    ("failed without message", {"status": "failed", "problems": [{"task": "Preflight", "status": "failed", "message": ""}]}, False,
     [("not_measured", "failed in task 'Preflight': no message")]),
    ("ok, no record", OK, False, [("not_measured", "no diskproof_results record from this host")]),
    ("status unknown, no record", {}, False, [("not_measured", "no diskproof_results record from this host")]),
    ("ok with records", OK, True, []),
    ("failed later, records and a problem", {"status": "failed", "problems": [{"task": "Read", "status": "failed", "message": "fio exited 1"}]}, True,
     [("not_measured", "failed in task 'Read': fio exited 1")]),
])
def test_host_problem_entries(case, status, has_records, expected):
    entries = agg.host_problem_entries("h1", status, has_records)
    assert [(entry["verdict"], entry["reason"]) for entry in entries] == expected, case
    assert all(entry["record"] is None and entry["test"] is None for entry in entries)


def test_record_without_figures_is_not_measured():
    entries = judge({"h1": [record()]})
    assert verdict_and_reason(entries, "h1") == [("not_measured", "record has no throughput or IOPS figure")]


def test_every_targeted_host_appears_worst_first():
    records_by_host = {"h1": [write(200e6)], "h2": [write(205e6)], "h3": [write(150e6)], "h4": [write(None, error="dd failed")]}
    statuses = {
        "h1": OK, "h2": OK, "h3": OK, "h4": {"status": "failed", "problems": []},
        "h5": {"status": "unreachable", "problems": [{"task": "Write", "status": "unreachable", "message": "refused"}]},
        "h6": OK,
    }
    entries = judge(records_by_host, statuses)
    assert [(entry["host"], entry["verdict"]) for entry in entries] == [
        ("h4", "error"), ("h5", "not_measured"), ("h6", "not_measured"), ("h3", "outlier"), ("h1", "pass"), ("h2", "pass"),
    ]


def test_summary_counts_every_verdict_and_lists_failing_worst_first():
    entries = judge({"h1": [write(200e6)], "h2": [write(205e6)], "h3": [write(150e6)]})
    summary = agg.summarize(entries)
    assert summary["counts"] == {"error": 0, "not_measured": 0, "outlier": 1, "pass": 2}
    assert summary["total"] == 3
    assert summary["failing"] == [{"host": "h3", "target_path": "/srv/d0", "device": "sdb", "test": "dd_seq_write", "verdict": "outlier",
                                   "reason": "-25.0% vs median 200.0 MB/s (n=3), limit -15%"}]


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5, "0.15", None, True])
def test_outlier_fraction_must_be_between_0_and_1(fraction):
    with pytest.raises(ValueError):
        agg.validate_outlier_fraction(fraction)


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------

def test_build_report_shape_and_inputs_untouched():
    records_by_host = {"h1": [write(200e6)], "h2": [write(205e6)], "h3": [write(150e6)]}
    statuses = {"h1": OK, "h2": OK, "h3": OK, "h4": {"status": "unreachable", "problems": [{"task": "W", "status": "unreachable", "message": "x"}]}}
    before = copy.deepcopy((records_by_host, statuses))
    run = {"started": "2026-11-22T00:00:00Z", "finished": "2026-11-22T00:01:00Z", "inventory_size": 4}
    report = agg.build_report(records_by_host, statuses, run, 0.2)
    assert (records_by_host, statuses) == before
    assert sorted(report) == ["groups", "hosts", "report_schema", "results", "rules", "run", "summary"]
    assert report["report_schema"] == 1
    assert report["run"] == run
    assert report["rules"] == {"outlier_fraction": 0.2, "min_peers": 3, "small_block_max_bytes": 65536, "peer_group": ["test"]}
    assert report["hosts"] == {
        "h1": {"status": "ok", "records": 1, "problems": []},
        "h2": {"status": "ok", "records": 1, "problems": []},
        "h3": {"status": "ok", "records": 1, "problems": []},
        "h4": {"status": "unreachable", "records": 0, "problems": [{"task": "W", "status": "unreachable", "message": "x"}]},
    }
    assert report["summary"]["counts"] == {"error": 0, "not_measured": 1, "outlier": 1, "pass": 2}
    outlier = report["results"][1]
    assert outlier["record"] == records_by_host["h3"][0]
    assert outlier["primary_metric"] == {"name": "bytes_per_s", "value": 150e6}
    assert outlier["group_median"] == 200e6
    assert outlier["deviation_from_median"] == pytest.approx(-0.25)


def test_build_report_rejects_a_bad_fraction():
    with pytest.raises(ValueError):
        agg.build_report({}, {}, {}, 1.5)
