# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tables for plugin_utils/_aggregate.py: statistics, primary metric, peer groups, verdicts, report.

Verdicts are asked of the judge's entry points only: the pipeline's ``build_report`` (what the filter calls:
plugin_utils/_report.py) and ``judge_report`` (what the pipeline calls); both judge through ``judge_entries``."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _metrics
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline


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
            "latency_ns": {"read": None, "write": None, "sync": None},
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
    ("a name is not a declaration: 1 MiB 'rand' test, bytes/s", record(test="fio_rand_read", read_bytes_per_s=500e6, read_iops=476.8),
     {"name": "bytes_per_s", "value": 500e6}),
    ("declared IOPS wins over 1 MiB blocks", record(test="custom", params={"judged_on": "iops", "block_size": MIB}, read_bytes_per_s=500e6,
                                                    read_iops=476.8), {"name": "iops", "value": 476.8}),
    ("declared bytes/s wins over 4 KiB blocks", record(test="fio_rand_read", params={"judged_on": "bytes_per_s", "block_size": 4096},
                                                       read_bytes_per_s=4096e3, read_iops=1000.0), {"name": "bytes_per_s", "value": 4096e3}),
    ("IOPS only: IOPS", record(test="custom", write_iops=300.0), {"name": "iops", "value": 300.0}),
    ("mixed directions: sum", record(test="fio_rand_rw", block_size=4096, read_iops=700.0, write_iops=300.0), {"name": "iops", "value": 1000.0}),
    ("mixed bytes/s: sum", record(read_bytes_per_s=100e6, write_bytes_per_s=50e6), {"name": "bytes_per_s", "value": 150e6}),
    ("integer figure", write(200000000), {"name": "bytes_per_s", "value": 200e6}),
    ("no figure", record(), None),
    ("bool is not a figure", write(True), None),
    ("metrics missing", {"test": "dd_seq_write"}, None),
])
def test_primary_metric(case, rec, expected):
    assert _metrics.primary_metric(rec) == expected, case


OK = {"status": "ok", "problems": []}


def judge(records_by_host, statuses=None, outlier_fraction=0.15, **inputs):
    """The report's entries, worst first (``inputs``: build_report's settings, acceptance, baseline)."""
    statuses = statuses if statuses is not None else {host: OK for host in records_by_host}
    return pipeline.build_report(records_by_host, statuses, {}, outlier_fraction, **inputs)["results"]


def groups_of(records_by_host, peer_group="identity"):
    """The report's peer group rows."""
    return pipeline.build_report(records_by_host, {}, {}, settings=agg.make_settings(peer_group=peer_group))["groups"]


def group_key(rec, peer_group="identity"):
    """The peer group key the report gives a record judged alone."""
    (entry,) = judge({"h1": [rec]}, settings=agg.make_settings(peer_group=peer_group))
    return tuple(entry["group"])


def test_peer_group_key_without_model_is_test_and_rotational():
    assert group_key(write(1.0, path="/a", device="sda")) == group_key(write(2.0, path="/b", device="sdz"))
    assert group_key(write(1.0)) != group_key(write(1.0, test="dd_seq_read"))


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------


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
    # Deliberate change (report schema 2): keys carry the fallback identity, rows min, max and basis.
    assert groups_of(records_by_host) == [
        {"key": ["dd_seq_write", "rotational=null"], "basis": "test_rotational", "metric": "bytes_per_s", "measured": 3, "median": 200e6,
         "mad": 0.0, "min": 200e6, "max": 200e6, "judged": True, "spread": 0.0, "pooled_cv": None},
        {"key": ["fio_rand_read", "rotational=null"], "basis": "test_rotational", "metric": "bytes_per_s", "measured": 1, "median": 1.0,
         "mad": 0.0, "min": 1.0, "max": 1.0, "judged": False, "spread": 0.0, "pooled_cv": None},
        {"key": ["fio_rand_read", "rotational=null"], "basis": "test_rotational", "metric": "iops", "measured": 3, "median": 20000.0,
         "mad": 0.0, "min": 10000.0, "max": 20000.0, "judged": True, "spread": 0.0, "pooled_cv": None},
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
    records_by_host = {"h1": [write(200e6)]} if has_records else {}
    entries = [entry for entry in judge(records_by_host, {"h1": status}) if entry["record"] is None]
    assert [(entry["verdict"], entry["reason"]) for entry in entries] == expected, case
    assert all(entry["host"] == "h1" and entry["test"] is None for entry in entries)


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
    records_by_host = {"h1": [write(200e6)], "h2": [write(205e6)], "h3": [write(150e6)]}
    # Judged at a 15 % limit, as the reason text below says (not the default: that may change).
    summary = pipeline.build_report(records_by_host, {host: OK for host in records_by_host}, {}, 0.15)["summary"]
    assert summary["counts"] == dict({verdict: 0 for verdict in agg.VERDICTS}, outlier=1, **{"pass": 2})
    assert summary["total"] == 3
    assert summary["failing"] == [{"host": "h3", "target_path": "/srv/d0", "device": "sdb", "serial": None, "test": "dd_seq_write",
                                   "verdict": "outlier", "reason": "-25.0% vs median 200.0 MB/s (n=3), limit -15%"}]
    assert summary["failing_hosts"] == ["h3"]
    assert summary["passed"] is False


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5, "0.15", None, True])
def test_outlier_fraction_must_be_between_0_and_1(fraction):
    with pytest.raises(ValueError, match="outlier_fraction must be a number between 0 and 1"):
        agg.make_settings(outlier_fraction=fraction)


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------

def test_build_report_shape_and_inputs_untouched():
    records_by_host = {"h1": [write(200e6)], "h2": [write(205e6)], "h3": [write(150e6)]}
    statuses = {"h1": OK, "h2": OK, "h3": OK, "h4": {"status": "unreachable", "problems": [{"task": "W", "status": "unreachable", "message": "x"}]}}
    before = copy.deepcopy((records_by_host, statuses))
    run = {"started": "2026-11-22T00:00:00Z", "finished": "2026-11-22T00:01:00Z", "inventory_size": 4}
    report = pipeline.build_report(records_by_host, statuses, run, 0.2)
    assert (records_by_host, statuses) == before
    # Deliberate change (report schema 2): a baseline section, more rules, peer_group is the option value; then (still 2,
    # additive) differences, the likely causes' group section.
    assert sorted(report) == ["baseline", "differences", "groups", "hosts", "report_schema", "results", "rules", "run", "summary"]
    assert report["report_schema"] == 2
    assert report["run"] == run
    # The judge's defaults (agg.Settings) but the outlier limit asked for, its constants and its verdict list.
    assert report["rules"] == dict(
        agg.Settings()._asdict(), outlier_fraction=0.2, min_peers=agg.MIN_PEERS, small_block_max_bytes=agg.SMALL_BLOCK_MAX_BYTES,
        cache_bypass_min_fraction=agg.CACHE_BYPASS_MIN_FRACTION, verdict_precedence=list(agg.VERDICTS),
        acceptance=[], source=None, errors=[])
    assert report["baseline"] == {"source": None, "started": None, "disks_tests": 0, "hosts_without_baseline": [], "errors": []}
    assert report["hosts"] == {
        "h1": {"status": "ok", "records": 1, "problems": []},
        "h2": {"status": "ok", "records": 1, "problems": []},
        "h3": {"status": "ok", "records": 1, "problems": []},
        "h4": {"status": "unreachable", "records": 0, "problems": [{"task": "W", "status": "unreachable", "message": "x"}]},
    }
    assert report["summary"]["counts"] == dict({verdict: 0 for verdict in agg.VERDICTS}, not_measured=1, outlier=1, **{"pass": 2})
    outlier = report["results"][1]
    assert outlier["record"] == records_by_host["h3"][0]
    assert outlier["primary_metric"] == {"name": "bytes_per_s", "value": 150e6}
    assert outlier["group_median"] == 200e6
    assert outlier["deviation_from_median"] == pytest.approx(-0.25)


def test_build_report_rejects_a_bad_fraction():
    with pytest.raises(ValueError):
        pipeline.build_report({}, {}, {}, 1.5)


# ---------------------------------------------------------------------------------------------
# peer groups by disk identity
# ---------------------------------------------------------------------------------------------

def disk(rate, model="ST4000NM0035", firmware="TN04", size_bytes=4000787030016, serial=None, rotational=True, transport="sata", **kwargs):
    rec = write(rate, **kwargs)
    rec["target"].update(model=model, firmware=firmware, size_bytes=size_bytes, serial=serial, wwn=None, rotational=rotational,
                         transport=transport)
    return rec


@pytest.mark.parametrize(("case", "rec", "peer_group", "expected"), [
    ("identity", disk(1.0), "identity", ("dd_seq_write", "model=ST4000NM0035", "firmware=TN04", "size_bytes=4000787030016")),
    ("no model: test and rotational", disk(1.0, model=None, rotational=False), "identity", ("dd_seq_write", "rotational=false")),
    ("nothing known", write(1.0), "identity", ("dd_seq_write", "rotational=null")),
    ("null firmware kept", disk(1.0, firmware=None), "identity", ("dd_seq_write", "model=ST4000NM0035", "firmware=null", "size_bytes=4000787030016")),
    ("test only", disk(1.0), "test", ("dd_seq_write",)),
])
def test_peer_group_key(case, rec, peer_group, expected):
    assert group_key(rec, peer_group) == expected, case


def test_disks_are_judged_against_their_own_model_only():
    # Three HDDs at 200 MB/s and three SSDs at 500 MB/s: by test alone every HDD would be an outlier.
    records_by_host = {"h%d" % index: [disk(200e6)] for index in range(3)}
    records_by_host.update({"s%d" % index: [disk(500e6, model="SAMSUNG MZ7LH960", size_bytes=960197124096, rotational=False)] for index in range(3)})
    assert {entry["verdict"] for entry in judge(records_by_host)} == {"pass"}
    by_test = judge(records_by_host, settings=agg.make_settings(peer_group="test"))
    assert sorted(entry["host"] for entry in by_test if entry["verdict"] == "outlier") == ["h0", "h1", "h2"]
    rows = groups_of(records_by_host)
    assert [(row["key"][1], row["basis"], row["measured"], row["min"], row["max"]) for row in rows] == [
        ("model=SAMSUNG MZ7LH960", "identity", 3, 500e6, 500e6), ("model=ST4000NM0035", "identity", 3, 200e6, 200e6)]


# ---------------------------------------------------------------------------------------------
# robust z
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "center", "mad", "expected"), [
    (150.0, 200.0, 5.0, -6.745),
    (200.0, 200.0, 5.0, 0.0),
    (150.0, 200.0, 0.0, None),
])
def test_robust_z(value, center, mad, expected):
    assert agg.robust_z(value, center, mad) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(("case", "rates", "min_deviation", "expected"), [
    # median 200, MAD 1 (spread 1.4826 x 1 / 200 = 0.74 %), no repeats: 188 is -6 % (within 15 %), 8.1 x the noise.
    ("tight group, -6%: outlier by z", [199e6, 200e6, 201e6, 200e6, 188e6], 0.05,
     ("outlier", "-6.0% vs median 200.0 MB/s (n=5); no repeats, group spread 0.7%: 8.1 x the noise (limit 3.5 x)")),
    ("tight group, -0.4%: z alone is not enough", [199.9e6, 200e6, 200.1e6, 200e6, 199.2e6], 0.05,
     ("pass", "-0.4% vs median 200.0 MB/s (n=5)")),
    ("min deviation 0: the pure z rule", [199.9e6, 200e6, 200.1e6, 200e6, 199.2e6], 0.0,
     ("outlier", "-0.4% vs median 200.0 MB/s (n=5); no repeats, group spread 0.1%: 5.4 x the noise (limit 3.5 x)")),
    ("spread group, -10%: pass", [180e6, 200e6, 220e6, 200e6, 180e6], 0.05, ("pass", "-10.0% vs median 200.0 MB/s (n=5)")),
    # Identical figures and no repeats: no noise at all; below the floor is an outlier.
    ("no spread at all, -6%", [200e6, 200e6, 200e6, 200e6, 188e6], 0.05,
     ("outlier", "-6.0% vs median 200.0 MB/s (n=5); no repeats, group spread 0.0%: no spread at all")),
])
def test_noise_outliers_without_repeats(case, rates, min_deviation, expected):
    records_by_host = {"h%d" % index: [write(rate)] for index, rate in enumerate(rates)}
    settings = agg.make_settings(robust_z_min_deviation=min_deviation)
    entries = judge(records_by_host, settings=settings)
    assert verdict_and_reason(entries, "h4") == [expected], case


# ---------------------------------------------------------------------------------------------
# invalid: cache bypass
# ---------------------------------------------------------------------------------------------

def with_io(rec, moved, read_bytes=None, write_bytes=None, device_io=True, direct=False):
    rec["bytes"] = moved
    rec["params"]["direct"] = direct
    rec["device_io"] = {"read_bytes": read_bytes, "write_bytes": write_bytes} if device_io else None
    return rec


GIB = 1073741824


@pytest.mark.parametrize(("case", "rec", "invalid", "note"), [
    ("write reached the disk", with_io(write(200e6), GIB, 0, GIB), None, None),
    ("write exactly 95%", with_io(write(200e6), 1000, 0, 950), None, None),
    ("write in the page cache", with_io(write(200e6), GIB, 0, GIB // 10),
     "cache bypass not proven: the device wrote 107374182 of the 1073741824 bytes the tool moved (10.0%, < 95%)", None),
    ("read from the cache", with_io(record(test="dd_seq_read", read_bytes_per_s=3e9), GIB, 4096, 0),
     "cache bypass not proven: the device read 4096 of the 1073741824 bytes the tool moved (0.0%, < 95%)", None),
    ("writes counted do not prove a read", with_io(record(test="dd_seq_read", read_bytes_per_s=3e9), GIB, 0, GIB), "cache bypass not proven: "
     "the device read 0 of the 1073741824 bytes the tool moved (0.0%, < 95%)", None),
    ("mixed: the sum counts", with_io(record(test="fio_rand_rw", block_size=4096, read_iops=1.0, write_iops=1.0), 1000, 500, 500), None, None),
    ("no counters, buffered: note", with_io(write(200e6), GIB, device_io=False), None, "cache bypass not proven: no device counters"),
    ("no counters, direct: nothing", with_io(write(200e6), GIB, device_io=False, direct=True), None, None),
    ("no bytes figure: nothing", write(200e6), None, None),
])
def test_cache_bypass(case, rec, invalid, note):
    assert _metrics.cache_bypass(rec) == (invalid, note), case


@pytest.mark.parametrize(("fraction", "written", "invalid"), [
    (0.95, 960, None),
    (0.975, 960, "cache bypass not proven: the device wrote 960 of the 1000 bytes the tool moved (96.0%, < 97.5%)"),
    (0.5, 400, "cache bypass not proven: the device wrote 400 of the 1000 bytes the tool moved (40.0%, < 50%)"),
])
def test_cache_bypass_at_another_fraction(fraction, written, invalid):
    """The host's runner asks at its own fraction: the one rule, the fraction named as given."""
    assert _metrics.cache_bypass(with_io(write(200e6), 1000, 0, written), fraction) == (invalid, None)


def test_invalid_records_are_judged_and_left_out_of_the_median():
    cached = with_io(write(2000e6), GIB, 0, 4096)
    records_by_host = {"h1": [write(200e6)], "h2": [write(190e6)], "h3": [write(210e6)], "h4": [cached]}
    entries = judge(records_by_host)
    assert [entry["verdict"] for entry in entries if entry["host"] == "h4"] == ["invalid"]
    assert groups_of(records_by_host)[0]["measured"] == 3


# ---------------------------------------------------------------------------------------------
# unstable
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "samples", "expected", "notes"), [
    ("steady", [200e6, 201e6, 199e6], ("pass", "not compared: 1 measured in group (< 3)"), []),
    ("jumpy", [100e6, 200e6, 300e6], ("unstable", "repeats vary: coefficient of variation 50.0% > 5.0% (n=3); no rule, "
                                                  "peer band or baseline to hold them against"), []),
    ("one sample: nothing to compare", [200e6], ("pass", "not compared: 1 measured in group (< 3)"), []),
    ("not numbers", [200e6, "fast"], ("pass", "not compared: 1 measured in group (< 3)"), ["samples ignored: not a list of numbers"]),
])
def test_unstable(case, samples, expected, notes):
    rec = write(200e6)
    rec["samples"] = samples
    entry = judge({"h1": [rec]})[0]
    assert (entry["verdict"], entry["reason"]) == expected, case
    assert entry["notes"] == notes


def test_coefficient_of_variation():
    assert _metrics.coefficient_of_variation([1.0, 1.0]) == 0.0
    assert _metrics.coefficient_of_variation([1.0]) is None
    assert _metrics.coefficient_of_variation([0.0, 0.0]) is None
    assert _metrics.coefficient_of_variation([90.0, 110.0]) == pytest.approx(0.1414, abs=1e-4)


# ---------------------------------------------------------------------------------------------
# acceptance rules
# ---------------------------------------------------------------------------------------------

RULES = {"rules": [
    {"name": "archive HDDs", "match": {"test": "dd_seq_write", "model": "ST4000*", "rotational": True}, "min_write_mb_per_s": 150},
    {"match": {"class": "ssd"}, "datasheet": {"write_mb_per_s": 500, "min_percent": 80}},
    {"match": {"test": "fio_rand_*", "host": "db*"}, "min_read_iops": 10000, "max_read_p99_ms": 2},
]}


def test_validate_rules_normalizes():
    rules = agg.validate_rules(RULES)
    assert rules == [
        {"name": "archive HDDs", "match": {"test": "dd_seq_write", "model": "ST4000*", "rotational": True}, "min_write_mb_per_s": 150.0},
        {"name": None, "match": {"class": "ssd"}, "datasheet": {"write_mb_per_s": 500.0, "min_percent": 80.0}},
        {"name": None, "match": {"test": "fio_rand_*", "host": "db*"}, "min_read_iops": 10000.0, "max_read_p99_ms": 2.0},
    ]
    assert agg.validate_rules(None) == []
    assert agg.validate_rules({"rules": []}) == []


@pytest.mark.parametrize(("case", "acceptance", "errors"), [
    ("not a mapping", ["x"], ["acceptance: must be a mapping with the key 'rules', got list"]),
    ("no rules key", {}, ["acceptance.rules: must be a list of rules, got nothing"]),
    ("unknown top key", {"rules": [], "rule": []}, ["acceptance.rule: unknown key (allowed: rules)"]),
    ("rule not a mapping", {"rules": ["fast"]}, ["rules[0]: must be a mapping, got str"]),
    ("typo in a match key", {"rules": [{"match": {"modle": "X*"}, "min_read_iops": 1}]},
     ["rules[0].match.modle: unknown key (allowed: class, firmware, host, model, rotational, serial, test, transport, wwn)"]),
    ("typo in a limit", {"rules": [{"min_write_mbps": 150}]}, [
        "rules[0].min_write_mbps: unknown key (allowed: datasheet, match, max_read_max_ms, max_read_p99_99_ms, max_read_p99_9_ms, "
        "max_read_p99_ms, max_sync_max_ms, max_sync_p99_99_ms, max_sync_p99_9_ms, max_sync_p99_ms, max_write_max_ms, "
        "max_write_p99_99_ms, max_write_p99_9_ms, max_write_p99_ms, min_fsyncs_per_s, min_read_iops, "
        "min_read_mb_per_s, min_write_iops, min_write_mb_per_s, name)",
        "rules[0]: states no limit (one of min_read_mb_per_s, min_write_mb_per_s, min_read_iops, min_write_iops, min_fsyncs_per_s, "
        "max_read_p99_ms, max_read_p99_9_ms, max_read_p99_99_ms, max_read_max_ms, max_write_p99_ms, max_write_p99_9_ms, "
        "max_write_p99_99_ms, max_write_max_ms, max_sync_p99_ms, max_sync_p99_9_ms, max_sync_p99_99_ms, max_sync_max_ms, "
        "or datasheet)"]),
    ("limit not a number", {"rules": [{"min_write_mb_per_s": "150"}]}, ["rules[0].min_write_mb_per_s: must be a positive number, got '150'"]),
    ("limit zero", {"rules": [{"min_write_mb_per_s": 0}]}, ["rules[0].min_write_mb_per_s: must be a positive number, got 0"]),
    ("bool limit", {"rules": [{"min_read_iops": True}]}, ["rules[0].min_read_iops: must be a positive number, got True"]),
    ("bad class", {"rules": [{"match": {"class": "tape"}, "min_read_iops": 1}]}, ["rules[0].match.class: must be one of hdd, ssd, nvme, got 'tape'"]),
    ("rotational as string", {"rules": [{"match": {"rotational": "yes"}, "min_read_iops": 1}]},
     ["rules[0].match.rotational: must be true or false, got 'yes'"]),
    ("datasheet without percent", {"rules": [{"datasheet": {"write_mb_per_s": 500}}]},
     ["rules[0].datasheet.min_percent: required (the share of the datasheet figure to reach, 0 < min_percent <= 100)"]),
    ("datasheet percent above 100", {"rules": [{"datasheet": {"write_mb_per_s": 500, "min_percent": 120}}]},
     ["rules[0].datasheet.min_percent: must be a number with 0 < min_percent <= 100, got 120"]),
    ("datasheet without figure", {"rules": [{"datasheet": {"min_percent": 80}}]},
     ["rules[0].datasheet: needs at least one figure (read_mb_per_s, write_mb_per_s, read_iops, write_iops, fsyncs_per_s)"]),
    ("every problem, second rule", {"rules": [{"min_read_iops": 1}, {"name": "", "min_read_iops": -1}]},
     ["rules[1].name: must be a non-empty string, got ''", "rules[1].min_read_iops: must be a positive number, got -1"]),
])
def test_validate_rules_names_every_bad_key(case, acceptance, errors):
    with pytest.raises(agg.RulesError) as caught:
        agg.validate_rules(acceptance)
    assert caught.value.errors == errors, case


def latency_record(host_iops, p99_ns):
    rec = record(test="fio_rand_read", block_size=4096, read_iops=host_iops)
    rec["metrics"]["latency_ns"]["read"] = {"p99": p99_ns}
    return rec


@pytest.mark.parametrize(("case", "host", "rec", "expected"), [
    ("HDD below its minimum", "h1", disk(140e6), ["rule 1 'archive HDDs': write 140.0 MB/s < minimum 150.0 MB/s"]),
    ("HDD at its minimum", "h1", disk(150e6), []),
    ("other model: rule does not match", "h1", disk(100e6, model="WDC WD40"), []),
    ("SSD below 80% of datasheet", "h1", disk(350e6, model="SAMSUNG", rotational=False),
     ["rule 2: 350.0 MB/s is 70.0% of datasheet 500.0 MB/s (< 80%)"]),
    ("db host: IOPS and latency", "db1", latency_record(9000.0, 2.5e6),
     ["rule 3: read 9000 IOPS < minimum 10000 IOPS", "rule 3: read p99 2.50 ms > maximum 2.00 ms"]),
    ("not a db host", "web1", latency_record(9000.0, 2.5e6), []),
    ("figure missing: limit skipped", "db1", record(test="fio_rand_read", block_size=4096, read_iops=20000.0), []),
])
def test_rule_violations(case, host, rec, expected):
    (entry,) = judge({host: [rec]}, acceptance=RULES)
    assert [finding["reason"] for finding in entry["reasons"] if finding["verdict"] == "slow"] == expected, case


def tail(mean=1e6, p99=None, p99_9=None, p99_99=None, maximum=None):
    """One direction's latency_ns (ns), as the parsers write it."""
    return {"mean": mean, "min": 1e5, "p50": mean, "p95": mean, "p99": p99, "p99_9": p99_9, "p99_99": p99_99,
            "max": maximum, "stdev": None}


def random_read(iops=10000.0, direct=True, **latency):
    """A fio_rand_read record (judged on IOPS) with its read latency tail."""
    rec = record(test="fio_rand_read", params={"block_size": 4096, "direct": direct, "judged_on": "iops"}, read_iops=iops)
    rec["metrics"]["latency_ns"]["read"] = tail(**latency)
    return rec


TAIL_RULES = {"rules": [
    {"name": "db SSDs", "match": {"test": "fio_rand_read"}, "max_read_p99_ms": 1.5, "max_read_p99_99_ms": 2.5,
     "max_read_max_ms": 5},
    {"name": "commits", "match": {"test": "fio_commit_rate"}, "max_sync_p99_9_ms": 20},
]}


@pytest.mark.parametrize(("case", "latency", "expected"), [
    ("the whole tail within", {"p99": 1.2e6, "p99_99": 2.4e6, "maximum": 4.9e6}, []),
    ("p99.99 over: the reason names it", {"p99": 1.2e6, "p99_99": 3.1e6, "maximum": 4.9e6},
     ["rule 1 'db SSDs': read p99.99 3.10 ms > maximum 2.50 ms"]),
    ("a 200 ms max behind a good p99", {"p99": 0.9e6, "p99_99": 2.0e6, "maximum": 200e6},
     ["rule 1 'db SSDs': read max 200 ms > maximum 5.00 ms"]),
    ("just over: the digits that tell them apart", {"p99": 1.5004e6, "p99_99": 0.2e6, "maximum": 0.3e6},
     ["rule 1 'db SSDs': read p99 1.5004 ms > maximum 1.5000 ms"]),
    ("a percentile the tool did not print is skipped", {"p99": 1.2e6, "maximum": 4.0e6}, []),
])
def test_latency_tail_rules(case, latency, expected):
    (entry,) = judge({"db1": [random_read(**latency)]}, acceptance=TAIL_RULES)
    assert [finding["reason"] for finding in entry["reasons"] if finding["verdict"] == "slow"] == expected, case
    assert entry["verdict"] == ("slow" if expected else "pass"), case


def test_each_latency_limit_is_kept_beside_its_figure():
    (entry,) = judge({"db1": [random_read(p99=1.2e6, p99_99=3.1e6)]}, acceptance=TAIL_RULES)
    assert entry["latency_checks"] == [
        {"figure": "read_p99_ms", "value": 1.2, "limit": 1.5, "rule": "rule 1 'db SSDs'", "passed": True},
        {"figure": "read_p99_99_ms", "value": 3.1, "limit": 2.5, "rule": "rule 1 'db SSDs'", "passed": False},
    ]   # no max in the record: the max limit is not listed
    (plain,) = judge({"db1": [random_read(p99=1.2e6)]})
    assert plain["latency_checks"] == []


def test_commit_latency_rule_reads_the_sync_latency():
    rec = record(test="fio_commit_rate", params={"block_size": 8192, "direct": False, "judged_on": "iops"}, write_iops=500.0)
    rec["metrics"]["latency_ns"]["write"] = tail(p99=0.05e6, p99_9=0.08e6)   # the buffered write itself: fast
    rec["metrics"]["latency_ns"]["sync"] = tail(p99=9e6, p99_9=31e6)
    (entry,) = judge({"db1": [rec]}, acceptance=TAIL_RULES)
    assert (entry["verdict"], entry["reason"]) == ("slow", "rule 2 'commits': sync p99.9 31.0 ms > maximum 20.0 ms")


def test_validate_rules_takes_every_latency_limit():
    keys = ["max_%s_%s_ms" % (direction, stat) for direction in ("read", "write", "sync")
            for stat in ("p99", "p99_9", "p99_99", "max")]
    (rule,) = agg.validate_rules({"rules": [dict.fromkeys(keys, 3)]})
    assert {key: rule[key] for key in keys} == dict.fromkeys(keys, 3.0)
    with pytest.raises(agg.RulesError) as caught:
        agg.validate_rules({"rules": [{"max_read_p99_999_ms": 1}]})
    assert caught.value.errors[0].startswith("rules[0].max_read_p99_999_ms: unknown key")


def twins(*p99s, direct=True):
    """Hosts n1.. each with one fio_rand_read of the same IOPS and the given read p99 (ns)."""
    return {"n%d" % number: [random_read(p99=p99, direct=direct)] for number, p99 in enumerate(p99s, 1)}


def test_a_tail_twice_its_peers_is_an_outlier():
    entries = {entry["host"]: entry for entry in judge(twins(100e6, 104e6, 98e6, 102e6, 250e6))}
    assert (entries["n5"]["verdict"], entries["n5"]["reason"]) == (
        "outlier", "read p99 250 ms is 2.5 x the peers' median p99 102 ms (n=5), limit 2.0 x")
    assert {host: entry["verdict"] for host, entry in entries.items() if host != "n5"} == dict.fromkeys(["n1", "n2", "n3", "n4"], "pass")


def test_a_tail_within_the_factor_passes_and_the_factor_is_a_setting():
    fleet = twins(100e6, 104e6, 98e6, 102e6, 190e6)
    assert {entry["verdict"] for entry in judge(fleet)} == {"pass"}
    settings = agg.make_settings(latency_outlier_factor=1.5)
    entries = {entry["host"]: entry for entry in pipeline.build_report(fleet, {host: OK for host in fleet}, {}, settings=settings)["results"]}
    assert entries["n5"]["verdict"] == "outlier" and entries["n5"]["reason"].endswith("limit 1.5 x")


@pytest.mark.parametrize(("case", "fleet"), [
    ("two peers say nothing", twins(100e6, 250e6)),
    ("buffered records are the page cache's latency", twins(100e6, 104e6, 98e6, 250e6, direct=False)),
])
def test_the_peer_tail_rule_is_not_applied(case, fleet):
    assert {entry["verdict"] for entry in judge(fleet)} == {"pass"}, case


def test_throughput_tests_are_not_judged_on_their_tail():
    fleet = {"n%d" % number: [record(test="fio_seq_read", params={"block_size": MIB, "direct": True}, read_bytes_per_s=500e6)]
             for number in range(1, 5)}
    fleet["n4"][0]["metrics"]["latency_ns"]["read"] = tail(p99=900e6)
    for number in range(1, 4):
        fleet["n%d" % number][0]["metrics"]["latency_ns"]["read"] = tail(p99=50e6)
    assert {entry["verdict"] for entry in judge(fleet)} == {"pass"}


@pytest.mark.parametrize("factor", [1, 0.5, "2", None, float("inf")])
def test_make_settings_refuses_a_latency_factor_not_above_one(factor):
    with pytest.raises(ValueError, match="latency_outlier_factor must be a number above 1"):
        agg.make_settings(latency_outlier_factor=factor)


# ---------------------------------------------------------------------------------------------
# baseline
# ---------------------------------------------------------------------------------------------

def baseline_report(*records):
    return {"report_schema": 1, "run": {"started": "2026-10-01T00:00:00Z"}, "results": [{"record": rec} for rec in records] + [{"record": None}]}


def test_baseline_index_by_serial_or_wwn():
    by_wwn = write(300e6)
    by_wwn["target"]["wwn"] = "0x5000c500a1b2c3d4"
    index = agg.baseline_index(baseline_report(disk(200e6, serial="ZC1"), disk(220e6, serial="ZC1"), by_wwn, write(1.0),
                                               disk(50e6, serial="ZC2", error="dd failed")))
    assert index == {("serial", "ZC1", "dd_seq_write", "bytes_per_s"): 210e6, ("wwn", "0x5000c500a1b2c3d4", "dd_seq_write", "bytes_per_s"): 300e6}


@pytest.mark.parametrize(("baseline", "message"), [
    ([], "baseline: must be a report.json mapping, got list"),
    ({"report_schema": 9, "results": []}, "baseline: report_schema must be one of 1, 2, got 9"),
    ({"report_schema": 2}, "baseline: results must be a list"),
])
def test_baseline_must_be_a_report(baseline, message):
    with pytest.raises(agg.BaselineError, match="^%s$" % message.replace("(", r"\(").replace(")", r"\)")):
        agg.baseline_index(baseline)


@pytest.mark.parametrize(("case", "rate", "expected", "notes"), [
    ("11% slower: regressed", 178e6, ("regressed", "-11.0% vs baseline 200.0 MB/s (serial ZC1), limit -10%"), []),
    ("10% slower: pass", 180e6, ("pass", "not compared: 1 measured in group (< 3)"), []),
    ("faster: pass", 250e6, ("pass", "not compared: 1 measured in group (< 3)"), []),
])
def test_regressed(case, rate, expected, notes):
    entry = judge({"h1": [disk(rate, serial="ZC1")]}, baseline=baseline_report(disk(200e6, serial="ZC1")))[0]
    assert (entry["verdict"], entry["reason"]) == expected, case
    assert entry["baseline_value"] == 200e6
    assert entry["deviation_from_baseline"] == pytest.approx(rate / 200e6 - 1)


def test_a_disk_without_serial_or_wwn_is_found_by_host_and_target():
    # Loop devices and many VM disks have neither: the same target path on the same host is the disk.
    baseline = {"report_schema": 2, "results": [{"host": "h1", "record": disk(200e6)}]}
    assert list(agg.baseline_index(baseline)) == [("host and target", "h1:/srv/d0", "dd_seq_write", "bytes_per_s")]
    entry = judge({"h1": [disk(150e6)]}, baseline=baseline)[0]
    assert (entry["verdict"], entry["reason"]) == ("regressed", "-25.0% vs baseline 200.0 MB/s (host and target h1:/srv/d0), limit -10%")
    # Another host's disk at the same path, and a disk that has a serial, are not matched by position.
    assert judge({"h2": [disk(150e6)]}, baseline=baseline)[0]["notes"] == ["no baseline for this disk and test"]
    assert judge({"h1": [disk(150e6, serial="NEW")]}, baseline=baseline)[0]["notes"] == [
        "no baseline for this disk and test"]


def test_disk_missing_from_the_baseline_gets_a_note():
    entry = judge({"h1": [disk(100e6, serial="OTHER")]}, baseline=baseline_report(disk(200e6, serial="ZC1")))[0]
    assert (entry["verdict"], entry["notes"], entry["baseline_value"]) == ("pass", ["no baseline for this disk and test"], None)


# ---------------------------------------------------------------------------------------------
# precedence, every reason kept
# ---------------------------------------------------------------------------------------------

def test_worst_finding_wins_and_every_finding_is_kept():
    slow_cached = with_io(disk(100e6, serial="ZC9"), GIB, 0, 4096)
    slow_cached["samples"] = [50e6, 100e6, 150e6]
    records_by_host = {"h1": [disk(200e6)], "h2": [disk(200e6)], "h3": [disk(200e6)], "h4": [slow_cached]}
    entries = judge(records_by_host, acceptance=RULES, baseline=baseline_report(disk(200e6, serial="ZC9")))
    entry = next(entry for entry in entries if entry["host"] == "h4")
    assert entry["verdict"] == "invalid"
    assert [finding["verdict"] for finding in entry["reasons"]] == ["invalid", "slow", "regressed", "outlier", "unstable"]
    assert entry["reason"] == entry["reasons"][0]["reason"]


@pytest.mark.parametrize(("verdicts", "unstable_fails", "passed"), [
    (["pass", "pass"], True, True),
    (["pass", "unstable"], True, False),
    (["pass", "unstable"], False, True),
    (["pass", "slow"], False, False),
    (["not_measured"], True, False),
])
def test_summary_passed(verdicts, unstable_fails, passed):
    entries = [agg.Entry("h%d" % index, None, None, verdict, ((verdict, "why"),), (), None, None, None, None, None, None)
               for index, verdict in enumerate(verdicts)]
    assert agg.summarize_entries(entries, unstable_fails=unstable_fails)["passed"] is passed


def test_an_unstable_result_fails_the_report_unless_the_site_lets_it_pass():
    # Three repeats 100, 142, 100 MB/s: the 42 % spread that acceptance.yml once called a pass.
    noisy = write(100e6)
    noisy["samples"] = [100e6, 142e6, 100e6]
    for unstable_fails, passed in ((True, False), (False, True)):
        report = pipeline.build_report({"h1": [noisy]}, {}, {}, settings=agg.make_settings(unstable_fails=unstable_fails))
        assert report["results"][0]["verdict"] == "unstable"
        assert report["summary"]["passed"] is passed
        assert [row["verdict"] for row in report["summary"]["failing"]] == (["unstable"] if unstable_fails else [])


def test_rules_or_baseline_that_could_not_be_used_fail_the_summary():
    report = pipeline.build_report({"h1": [write(200e6)]}, {}, {}, rules_errors=["rules[0].x: unknown key"], rules_source="/etc/rules.yml")
    assert report["rules"]["errors"] == ["rules[0].x: unknown key"]
    assert report["summary"]["input_errors"] == ["rules: rules[0].x: unknown key"]
    assert report["summary"]["passed"] is False


def test_build_report_with_rules_and_baseline():
    records_by_host = {"h1": [disk(140e6, serial="ZC1")]}
    report = pipeline.build_report(records_by_host, {}, {}, acceptance=RULES, rules_source="play variable diskproof_acceptance",
                                   baseline=baseline_report(disk(200e6, serial="ZC1")), baseline_source="/r/old/report.json")
    assert report["results"][0]["verdict"] == "slow"
    assert [finding["verdict"] for finding in report["results"][0]["reasons"]] == ["slow", "regressed"]
    assert len(report["rules"]["acceptance"]) == 3
    assert report["baseline"] == {"source": "/r/old/report.json", "started": "2026-10-01T00:00:00Z", "disks_tests": 1,
                                  "hosts_without_baseline": [], "errors": []}
    with pytest.raises(agg.RulesError):
        pipeline.build_report(records_by_host, {}, {}, acceptance={"rules": [{}]})


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"peer_group": "model"}, "peer_group must be one of identity, test, got 'model'"),
    ({"max_cv": 0}, "max_cv must be a number between 0 and 1"),
    ({"regression_fraction": 1.2}, "regression_fraction must be a number between 0 and 1"),
    ({"robust_z_limit": 3.5}, "robust_z_limit must be a negative number"),
])
def test_make_settings_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        agg.make_settings(**kwargs)


# ---------------------------------------------------------------------------------------------
# compact judging for fleets: record facts, entries, report.json spelled without dicts
# ---------------------------------------------------------------------------------------------

def facts_of(records_by_host):
    """What judge_report takes: {host: [(record, its record_facts)]}."""
    return {host: [(rec, agg.record_facts(rec)) for rec in records] for host, records in records_by_host.items()}


def verify_record(bad=(), verified=8 << 20, check="pattern", read_bytes_per_s=50e6, error=None, total=None):
    """A verify test's record: its read-back rate and integrity with these (offset, kind, detail) bad blocks."""
    rec = record(test="fio_verify", params={"block_size": 4096, "direct": True, "judged_on": "bytes_per_s"},
                 read_bytes_per_s=read_bytes_per_s, error=error)
    blocks = [{"offset": offset, "length": 4096, "check": check, "kind": kind, "detail": detail} for offset, kind, detail in bad]
    kinds = {}
    for block in blocks:
        kinds[block["kind"]] = kinds.get(block["kind"], 0) + 1
    rec["integrity"] = {"check": check, "verified_bytes": verified, "bad_blocks_total": len(blocks) if total is None else total,
                        "bad_blocks": blocks, "kinds": kinds}
    return rec


def _every_kind_of_entry():
    """Records and statuses that give every verdict and every field shape an entry can have."""
    unstable = disk(201e6, serial="ZC5")
    unstable["samples"] = [150e6, 201e6, 250e6]
    odd_samples = disk(202e6, serial="ZC6")
    odd_samples["samples"] = "three runs"
    quoted = disk(199e6, serial="ZC7", path='/srv/"d\\0" \u00e9', device="sd\tx")
    by_wwn = disk(200e6, serial="")
    by_wwn["target"]["wwn"] = "0x5000c500a1b2c3d4"
    never_settled = disk(203e6, serial="ZC11", test="ssd_steady_rand_write")
    never_settled["steady_state"] = {"attained": False, "criterion": "iops:20%", "window_s": 10, "time_limit_s": 60,
                                     "iops_mean": 407.3, "max_deviation_percent": 63.2, "slope_excursion_percent": None,
                                     "iops": [150, 519, 600], "why_not": 'fio\'s "criterion"\n'}
    no_direction = record()  # a dd rate bench_facts kept without a direction: named in the reason, not judged
    no_direction["metrics"]["transfer_bytes_per_s"] = 49e6
    corrupt = verify_record(bad=[(1048576, "flipped", "crc32c of the data differs")])
    # Its media errors grew during the run, on a degraded SATA link: unhealthy, with likely causes.
    unhealthy = disk(204e6, serial="ZC12")
    unhealthy["disk_state"] = {"before": {"firmware": "TN04", "health": {"media_errors": 0}},
                               "after": {"sata": {"speed_gbps": 3.0, "max_gbps": 6.0, "degraded": True,
                                                  "text": "SATA link 3.0 Gb/s, capable 6.0 Gb/s"},
                                         "health": {"media_errors": 12}}}
    records_by_host = {
        "h1": [disk(200e6, serial="ZC1"), disk(140e6, serial="ZC2"), unstable, unhealthy],
        "h2": [disk(205e6, serial="ZC3"), odd_samples, with_io(disk(198e6, serial="ZC4"), GIB, 0, GIB // 10)],
        "db1": [latency_record(9000.0, 2.5e6), quoted, by_wwn, disk(None, serial="ZC8", error="dd: I/O error\nline 2")],
        "h3": [record(), disk(196e6, serial="ZC9", model=None, rotational=1), disk(197e6, serial="ZC10", model=None, rotational=True),
               never_settled, no_direction, corrupt],
    }
    statuses = {host: OK for host in records_by_host}
    statuses["h4"] = {"status": "unreachable", "problems": [{"task": "W", "status": "unreachable", "message": "refused"}]}
    statuses["h5"] = OK
    baseline = baseline_report(disk(240e6, serial="ZC1"), disk(200e6, serial="ZC3"))
    return records_by_host, statuses, baseline


def test_a_block_that_did_not_read_back_is_corrupt_and_ranked_worst():
    stale = [(3145728 + 4096 * n, "stale", "pattern differs at byte 3 of the block: got 0x01, wanted 0x02 (2 bit(s) differ)")
             for n in range(16)]
    bad = [(1048576, "flipped", "pattern differs at byte 100 of the block: got 0x10, wanted 0x00 (1 bit(s) differ)"),
           (1052672, "misplaced", "pattern differs at byte 5 of the block: got 0x00, wanted 0x10 (1 bit(s) differ)")] + stale
    fleet = {"n1": [verify_record(bad=bad, read_bytes_per_s=500e6), disk(None, serial="Z1", error="dd: I/O error")],
             "n2": [verify_record()], "n3": [verify_record()]}
    entries = judge(fleet)
    assert [(entry["host"], entry["verdict"]) for entry in entries][:2] == [("n1", "corrupt"), ("n1", "error")]
    assert entries[0]["reason"] == (
        "18 bad blocks in 8 MiB read back (fio verify=pattern): 16 holding an earlier pass's data (writes that never "
        "landed), 1 with changed data (flipped bits), 1 holding another offset's data (misplaced writes); the first at "
        "offset 1048576, 4096 bytes: pattern differs at byte 100 of the block: got 0x10, wanted 0x00 (1 bit(s) differ)")
    # A corrupt disk is not compared by its read rate, nor counted in its peers' median (fast, 500 MB/s, it would pull
    # the median up); the clean ones are, with a note of what they read back.
    assert entries[0]["group"] is None
    groups = pipeline.build_report(fleet, {host: OK for host in fleet}, {})["groups"]
    assert [(group["metric"], group["measured"], group["median"]) for group in groups
            if group["key"][0] == "fio_verify"] == [("bytes_per_s", 2, 50e6)]
    clean = [entry for entry in entries if entry["host"] in ("n2", "n3")]
    assert [entry["verdict"] for entry in clean] == ["pass", "pass"]
    assert all("8 MiB read back as written (fio verify=pattern)" in entry["notes"] for entry in clean)
    report = pipeline.build_report(fleet, {host: OK for host in fleet}, {})
    assert report["summary"]["passed"] is False
    assert report["summary"]["counts"]["corrupt"] == 1
    assert report["rules"]["verdict_precedence"][0] == "corrupt"


def test_corrupt_keeps_the_tool_error_beside_it():
    (entry,) = judge({"n1": [verify_record(bad=[(0, "flipped", "crc32c of the data differs")], error="exit code 1: fio: pid=1")]})
    assert [finding["verdict"] for finding in entry["reasons"]] == ["corrupt", "error"]
    assert entry["reasons"][0]["reason"].startswith("1 bad block in 8 MiB read back (fio verify=pattern): 1 with changed data")
    assert entry["reasons"][1]["reason"] == "exit code 1: fio: pid=1"


def test_bad_blocks_beyond_the_listed_ones_are_counted():
    (entry,) = judge({"n1": [verify_record(bad=[(0, "unclassified", "pattern differs")], total=262144)]})
    assert entry["reason"].startswith("262144 bad blocks in 8 MiB read back (fio verify=pattern): 1 not classified;")


def test_entry_json_parts_spell_every_entry_exactly_as_json_dumps():
    records_by_host, statuses, baseline = _every_kind_of_entry()
    facts_by_host = facts_of(records_by_host)
    _report, entries = agg.judge_report(facts_by_host, statuses, {}, settings=agg.make_settings(), acceptance=RULES, baseline=baseline)
    assert {entry.verdict for entry in entries} == set(agg.VERDICTS) - {"outlier"}
    for entry in entries:
        before, after = agg.entry_json_parts(entry)
        record_json = json.dumps(entry.record, sort_keys=True, separators=(",", ":"))
        assert before + record_json + after == json.dumps(agg.entry_dict(entry), sort_keys=True, separators=(",", ":"))


def test_judge_report_is_build_report_without_the_dicts():
    records_by_host, statuses, baseline = _every_kind_of_entry()
    report = pipeline.build_report(records_by_host, statuses, {"playbook": "p"}, acceptance=RULES, baseline=baseline, baseline_source="b")
    facts_by_host = {host: [(index, agg.record_facts(rec)) for index, rec in enumerate(records)]
                     for host, records in records_by_host.items()}
    sections, entries = agg.judge_report(facts_by_host, statuses, {"playbook": "p"}, settings=agg.make_settings(), acceptance=RULES,
                                         baseline=baseline, baseline_source="b")
    assert sections["results"] == []
    assert {key: value for key, value in sections.items() if key != "results"} == {key: value for key, value in report.items() if key != "results"}
    assert [agg.entry_fields(entry) for entry in entries] == [{key: value for key, value in entry.items() if key != "record"} for entry in report["results"]]
    # The judge reads the facts only, never Entry.record (the callback's is a place in its spool).
    assert any(agg.entry_reason(entry).startswith("dd rate 49.0 MB/s of unknown direction") for entry in entries)
    # Entry.record is what the caller handed in: here the record's index in its host's list.
    assert [records_by_host[entry.host][entry.record] if entry.facts is not None else None for entry in entries] == [
        entry["record"] for entry in report["results"]]


def compact(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def test_report_json_frame_one_entry_per_line():
    records_by_host, statuses, baseline = _every_kind_of_entry()
    report = pipeline.build_report(records_by_host, statuses, {"playbook": "p"}, baseline=baseline)
    head, tail = agg.report_json_frame(report)
    lines = [compact(entry) for entry in report["results"]]
    text = head + "".join(("\n" if index == 0 else ",\n") + line for index, line in enumerate(lines)) + tail
    assert json.loads(text) == json.loads(json.dumps(report))
    assert text.splitlines()[:6] == ['{"baseline":' + compact(report["baseline"]) + ",",
                                     '"differences":' + compact(report["differences"]) + ",",
                                     '"groups":' + compact(report["groups"]) + ",",
                                     '"hosts":' + compact(report["hosts"]) + ",", '"report_schema":2,', '"results":[']
    assert text.splitlines()[6:6 + len(lines)] == [line + "," for line in lines[:-1]] + [lines[-1]]
    assert text.endswith("}\n") and text.isascii()
    empty = pipeline.build_report({}, {}, {})
    head, tail = agg.report_json_frame(empty)
    assert json.loads(head + tail) == empty


def test_record_facts_keep_nothing_of_the_record():
    rec = disk(200e6, serial="ZC1")
    rec["samples"] = [1.0, 2.0]
    rec["target"]["firmware"] = ["odd", "list"]
    rec["metrics"]["fsyncs_per_s"] = {"odd": 1}
    facts = agg.record_facts(rec)
    before = copy.deepcopy(facts)
    rec["target"]["firmware"].append("changed")
    rec["metrics"]["fsyncs_per_s"]["odd"] = 2
    rec["samples"].append(3.0)
    rec["target"]["serial"] = "other"
    assert facts == before
    assert facts.samples == (1.0, 2.0) and facts.target.firmware == ["odd", "list"]


def test_facts_keep_true_and_1_apart():
    records_by_host = {"h1": [disk(200e6, model=None, rotational=True)], "h2": [disk(200e6, model=None, rotational=1)],
                       "h3": [disk(200e6, model=None, rotational=True)]}
    facts_by_host = facts_of(records_by_host)
    assert facts_by_host["h2"][0][1].target.rotational == 1 and facts_by_host["h2"][0][1].target.rotational is not True
    _sections, entries = agg.judge_report(facts_by_host, {}, {}, settings=agg.make_settings())
    assert {entry.host: entry.group for entry in entries} == {
        "h1": ("dd_seq_write", "rotational=true"), "h2": ("dd_seq_write", "rotational=1"), "h3": ("dd_seq_write", "rotational=true")}


def test_entry_json_parts_hold_a_record_slot_text_cannot_fake():
    """A reason, host or path spelling '"record":null' does not move the record's place."""
    records_by_host, statuses, baseline = _every_kind_of_entry()
    tricky = '"record":null,"x":'
    records_by_host = {tricky + host: [dict(rec, target=dict(rec.get("target") or {}, path=tricky)) for rec in records]
                       for host, records in records_by_host.items()}
    statuses = {tricky + host: status for host, status in statuses.items()}
    facts_by_host = facts_of(records_by_host)
    _report, entries = agg.judge_report(facts_by_host, statuses, {}, settings=agg.make_settings(), acceptance=RULES, baseline=baseline)
    for entry in entries:
        before, after = agg.entry_json_parts(entry)
        record_json = json.dumps(entry.record, sort_keys=True, separators=(",", ":"))
        assert before + record_json + after == json.dumps(agg.entry_dict(entry), sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# targets that are not disks (target.not_a_disk, from allow_non_disk)
# ---------------------------------------------------------------------------------------------

def not_a_disk(rate, filesystem="tmpfs", **kwargs):
    """A record of a directory on tmpfs/overlay/NFS ... as the benchmark role writes it: no disk identity."""
    rec = write(rate, device=None, **kwargs)
    rec["target"].update(not_a_disk=True, filesystem=filesystem, model=None, serial=None, rotational=None)
    return rec


@pytest.mark.parametrize(("case", "rec", "peer_group", "expected"), [
    ("identity", not_a_disk(1.0), "identity", ("dd_seq_write", "not_a_disk=tmpfs")),
    ("test: still apart", not_a_disk(1.0, filesystem="nfs4"), "test", ("dd_seq_write", "not_a_disk=nfs4")),
    ("unnamed filesystem", not_a_disk(1.0, filesystem=None), "identity", ("dd_seq_write", "not_a_disk=unknown")),
    ("false is a disk", dict(write(1.0), target={"path": "/srv/d0", "not_a_disk": False, "filesystem": "ext4"}),
     "identity", ("dd_seq_write", "rotational=null")),
])
def test_peer_group_key_of_targets_that_are_not_disks(case, rec, peer_group, expected):
    assert group_key(rec, peer_group) == expected, case
    (row,) = groups_of({"h1": [rec]}, peer_group)
    assert row["basis"] == ("not_a_disk" if "not_a_disk=" in expected[-1] else "test_rotational")


@pytest.mark.parametrize("peer_group", ["identity", "test"])
def test_a_tmpfs_is_never_compared_with_disks(peer_group):
    # Three VM disks of unknown model and rotational (key test + rotational=null, like a tmpfs had) at 50 MB/s,
    # and a tmpfs at 1 GB/s: together, the tmpfs would sit in the disks' median and group.
    records_by_host = {"h%d" % index: [disk(50e6, model=None, rotational=None)] for index in range(3)}
    records_by_host["odd"] = [not_a_disk(1e9)]
    settings = agg.make_settings(peer_group=peer_group)
    entries = {entry["host"]: entry for entry in judge(records_by_host, settings=settings)}
    assert entries["odd"]["group"] == ["dd_seq_write", "not_a_disk=tmpfs"]
    assert entries["odd"]["reason"] == "not compared: 1 measured in group (< 3)"
    assert entries["odd"]["notes"] == ["not a disk (tmpfs): compared only with other tmpfs targets; acceptance rules "
                                       "and baseline are for disks and were not applied"]
    assert {entries["h%d" % index]["reason"] for index in range(3)} == {"+0.0% vs median 50.0 MB/s (n=3)"}
    rows = {tuple(row["key"]): row for row in groups_of(records_by_host, peer_group)}
    assert rows[("dd_seq_write", "not_a_disk=tmpfs")]["basis"] == "not_a_disk"
    assert [row["measured"] for key, row in rows.items() if key != ("dd_seq_write", "not_a_disk=tmpfs")] == [3]


def test_targets_that_are_not_disks_are_grouped_by_filesystem_type():
    records_by_host = {"t%d" % index: [not_a_disk(1e9 + index)] for index in range(3)}
    records_by_host.update({"n%d" % index: [not_a_disk(80e6, filesystem="nfs4")] for index in range(2)})
    records_by_host["n2"] = [not_a_disk(40e6, filesystem="nfs4")]
    entries = {entry["host"]: entry for entry in judge(records_by_host)}
    assert {entries["t%d" % index]["verdict"] for index in range(3)} == {"pass"}
    assert entries["n2"]["verdict"] == "outlier" and "(n=3)" in entries["n2"]["reason"]   # against nfs4 only


def test_rules_and_baseline_for_disks_are_not_applied_to_a_target_that_is_not_a_disk():
    rules = {"rules": [{"match": {"test": "dd_seq_write"}, "min_write_mb_per_s": 2000}]}
    slow_disk, tmpfs = disk(100e6, serial="ZC1"), not_a_disk(1e9)
    tmpfs["target"]["serial"] = "ZC1"   # even a serial (never there in practice) does not tie it to a disk
    baseline = baseline_report(disk(200e6, serial="ZC1"), not_a_disk(5e9))
    assert agg.baseline_index(baseline) == {("serial", "ZC1", "dd_seq_write", "bytes_per_s"): 200e6}
    judged = judge({"disk": [slow_disk], "odd": [tmpfs]}, acceptance=rules, baseline=baseline)
    entries = {entry["host"]: entry for entry in judged}
    assert entries["disk"]["verdict"] == "slow"
    assert entries["odd"]["verdict"] == "pass" and entries["odd"]["baseline_value"] is None
    assert "acceptance rules and baseline are for disks" in entries["odd"]["notes"][-1]


def test_docs_report_md_verdict_table_is_the_judge_s():
    """docs/report.md's "Verdicts and precedence" table: the judge's verdicts in precedence order, "yes" where a
    verdict fails summary.passed (unstable: unless diskproof_unstable_fails is false), and junit.xml's element as
    plugin_utils/_junit.py writes it (<error> when nothing was measured, else <failure>)."""
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _junit
    lines = (Path(__file__).resolve().parents[4] / "docs" / "report.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| verdict | when | fails `summary.passed` | junit.xml |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    assert [row[0].strip("`") for row in rows] == list(agg.VERDICTS)
    for verdict, fails, junit in ((row[0].strip("`"), row[-2], row[-1]) for row in rows):
        if verdict == agg.VERDICT_UNSTABLE:
            assert fails == "yes, unless `diskproof_unstable_fails: false`" and junit.startswith("`<failure>`")
        elif verdict in agg.FAILING_VERDICTS:
            assert fails == "yes", verdict
            assert junit == ("`<error>`" if verdict in _junit.ERROR_VERDICTS else "`<failure>`"), verdict
        else:
            assert (fails, junit) == ("no", "passes"), verdict


def test_the_shipped_schema_names_the_judge_s_verdicts():
    """docs/report.schema.json spells the verdicts out (JSON Schema cannot import them): it must list
    exactly the judge's, in precedence order, and let summary.failing hold every verdict that can fail
    a run (unstable included, since unstable_fails is the default)."""
    schema = json.loads((Path(__file__).resolve().parents[4] / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    summary = schema["properties"]["summary"]["properties"]
    assert schema["$defs"]["verdict"]["enum"] == list(agg.VERDICTS)
    assert summary["counts"]["required"] == list(agg.VERDICTS)
    assert set(summary["failing"]["items"]["properties"]["verdict"]["enum"]) == set(agg.failing_verdicts(unstable_fails=True))
