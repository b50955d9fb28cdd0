"""fio parser: exact figures from real JSON (tests/fixtures/fio, each with a .src.md), and ParseError only."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import fio
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fio")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


LATENCY_KEYS = ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]


def lat(mean, minimum, p50, p95, p99, p99_9, p99_99, maximum, stdev):
    return {"mean": mean, "min": minimum, "p50": p50, "p95": p95, "p99": p99, "p99_9": p99_9, "p99_99": p99_99,
            "max": maximum, "stdev": stdev}


# direction: (io_bytes, runtime ms, bytes/s by hand = io_bytes * 1000 / runtime, iops, clat ns: mean, min,
# percentiles 50/95/99/99.9/99.99, max, stddev as read from the fixture's clat_ns, or clat x 1000 for fio 2.x)
CASES = [
    ("fio333-randread-4k-qd32.json", [
        ("randread-4k-qd32", 0, None, {
            "read": (4227072, 5102, 828512.7401019208, 202.273618,
                     lat(158061910.450582, 195794, 200278016, 200278016, 299892736, 299892736, 299892736, 300069855,
                         55086192.284135))}),
    ]),
    ("fio333-seqwrite-1m.json", [
        ("seqwrite-1m", 0, None, {
            "write": (265289728, 5007, 52983768.32434592, 50.529259,
                      lat(79103157.296443, 254548, 100139008, 100139008, 122159104, 122159104, 122159104, 121664268,
                          40539396.008264))}),
    ]),
    ("fio333-randrw-70-30.json", [
        ("randrw-70-30", 0, None, {
            "read": (4161536, 5004, 831641.8864908074, 203.03757,
                     lat(78753705.971457, 47221, 100139008, 100139008, 104333312, 104333312, 104333312, 103986028,
                         40901658.074078)),
            "write": (1806336, 5004, 360978.417266187, 88.129496,
                      lat(72335.675737, 461, 63744, 152576, 171008, 189440, 189440, 189955, 49164.3327))}),
    ]),
    ("fio333-numjobs2.json", [
        ("randread-nj2", 0, None, {
            "read": (1671168, 4002, 417583.2083958021, 101.949025,
                     lat(78456872.210784, 18348, 100139008, 100139008, 101187584, 101187584, 101187584, 101598610,
                         41171602.852405))}),
        ("randread-nj2", 0, None, {
            "read": (1671168, 4002, 417583.2083958021, 101.949025,
                     lat(78453840.031863, 18358, 100139008, 100139008, 101187584, 101187584, 101187584, 101426295,
                         41167164.646918))}),
    ]),
    ("fio333-numjobs2-group-reporting.json", [
        ("randread-nj2", 0, None, {
            "read": (3342336, 4003, 834957.7816637522, 203.847115,
                     lat(78471443.041667, 18989, 100139008, 100139008, 102236160, 102236160, 102236160, 102349476,
                         41145431.813928))}),
    ]),
    ("fio333-jsonplus-randwrite.json", [
        ("randwrite-jsonplus", 0, None, {
            "write": (3309568, 4002, 826978.5107446277, 201.89905,
                      lat(39611455.57797, 19409, 104960, 100139008, 104333312, 105381888, 105381888, 105366612,
                          48866330.612822))}),
    ]),
    ("fio333-write-fdatasync.json", [
        ("commit-4k-fdatasync", 0, None, {
            "write": (819200, 4005, 204544.31960049938, 49.937578,
                      lat(6837.855, 2404, 4192, 16768, 41728, 54016, 54016, 54211, 7126.545408))}),
    ]),
    ("fio333-client-two-servers.json", [
        ("seqread-client", 0, "127.0.0.1:8766", {
            "read": (111149056, 3088, 35993865.28497409, 34.326425,
                     lat(29116494.924528, 102484, 1302528, 100139008, 115867648, 164626432, 164626432, 164653762,
                         44065896.08797))}),
        ("seqread-client", 0, "127.0.0.1:8765", {
            "read": (115343360, 3097, 37243577.65579593, 35.518243,
                     lat(28143575.8, 99769, 142336, 100139008, 104333312, 107479040, 107479040, 107516486, 44939563.344609))}),
    ]),
    ("fio333-warning-before-json.txt", [
        ("seqread-time-based", 0, None, {
            "read": (67108864, 1225, 54782746.12244898, 52.244898,
                     lat(19124374.25, 102453, 158720, 99090432, 125304832, 125304832, 125304832, 125343695, 39863420.713623))}),
    ]),
    ("fio333-error-misaligned-merged.txt", [("write-misaligned", 22, None, {})]),
    ("fio333-error-misaligned-stdout-stderr.txt", [("write-misaligned", 22, None, {})]),
    # fio 2.x: io_bytes in KiB, clat in microseconds, duplicate "0.00" percentile keys
    ("public-fio218-randread-mdraid.json", [
        ("random-io", 0, None, {
            "read": (17989632, 60013, 299762.25151217234, 73.184143,
                     lat(13636394.809, 2761000, 13504000, 20608000, 22912000, 24960000, 26240000, 26160000, 3949424.092))}),
    ]),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    jobs = fio.parse(fixture(name))
    assert [(job.name, job.error_code, job.client) for job in jobs] == [want[:3] for want in expected]
    for index, (job, (_name, _code, _client, directions)) in enumerate(zip(jobs, expected)):
        assert job.index == index
        assert sorted(name for name, _dir in job.directions) == sorted(directions)
        for direction, (io_bytes, runtime, rate, iops, latency) in directions.items():
            found = getattr(job, direction)
            assert (found.io_bytes, found.runtime_ms, found.iops) == (io_bytes, runtime, iops)
            assert found.bytes_per_s == pytest.approx(rate, rel=1e-12)
            assert found.latency_ns == pytest.approx(latency, rel=1e-12)
            assert list(found.latency_ns) == LATENCY_KEYS
        assert job.bytes == sum(values[0] for values in directions.values())


def test_versions_and_seconds():
    (job,) = fio.parse(fixture("fio333-randread-4k-qd32.json"))
    assert (job.version, job.tool_version, job.seconds, job.groupid) == ("fio-3.33", "3.33", 5.102, 0)
    (old,) = fio.parse(fixture("public-fio218-randread-mdraid.json"))
    assert old.tool_version == "2.18-59-g618e"
    assert old.seconds == 60.013


def test_group_reporting_seconds_come_from_the_direction_runtime_not_summed_job_runtime():
    (job,) = fio.parse(fixture("fio333-numjobs2-group-reporting.json"))
    assert job.seconds == 4.003  # job_runtime in the JSON is 8004 (two processes)


def test_fsyncs_per_second_from_the_sync_section():
    (job,) = fio.parse(fixture("fio333-write-fdatasync.json"))
    assert job.fsyncs == 200
    assert job.fsyncs_per_s == pytest.approx(200 / 4.005, rel=1e-12)
    (no_sync,) = fio.parse(fixture("fio333-seqwrite-1m.json"))
    assert no_sync.fsyncs_per_s is None
    assert no_sync.sync_latency_ns is None


def test_sync_latency_is_the_commit_latency_of_the_sync_section():
    # the fixture's sync.lat_ns: min 65258, max 103290029, mean 20013567.32, stddev 39853801.112145,
    # percentiles 50 140288, 95 99090432, 99 100139008, 99.9 103284736, 99.99 103284736 (ns)
    _tool, (result,) = parse_output(fixture("fio333-write-fdatasync.json"))
    assert result["metrics"]["latency_ns"]["sync"] == {
        "mean": 20013567.32, "min": 65258, "p50": 140288, "p95": 99090432, "p99": 100139008, "p99_9": 103284736,
        "p99_99": 103284736, "max": 103290029, "stdev": 39853801.112145}
    assert list(result["metrics"]["latency_ns"]["sync"]) == LATENCY_KEYS
    _tool, (plain,) = parse_output(fixture("fio333-seqwrite-1m.json"))
    assert plain["metrics"]["latency_ns"]["sync"] is None


def test_sync_latency_without_samples_is_none():
    doc = json.loads(fixture("fio333-write-fdatasync.json"))
    doc["jobs"][0]["sync"]["lat_ns"]["N"] = 0
    (job,) = fio.parse(json.dumps(doc))
    assert job.sync_latency_ns is None


def test_all_clients_aggregate_is_skipped():
    jobs = fio.parse(fixture("fio333-client-two-servers.json"))
    assert [job.client for job in jobs] == ["127.0.0.1:8766", "127.0.0.1:8765"]
    assert "All clients" not in [job.name for job in jobs]


def test_lines_around_the_json_become_warnings():
    (job,) = fio.parse(fixture("fio333-warning-before-json.txt"))
    assert job.warnings == ["fio: time_based requires a runtime/timeout setting"]
    (failed,) = fio.parse(fixture("fio333-error-misaligned-stdout-stderr.txt"))
    assert failed.warnings[-1] == (
        "fio: io_u error on file /tmp/dpcap/mnt/fio-mis.dat: Invalid argument: write offset=0, buflen=1000"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("fio333-error-misaligned-merged.txt", "fio: pid=7882, err=22/file:io_u.c:1876, func=io_u error, error=Invalid argument"),
        ("fio333-error-misaligned-stdout-stderr.txt",
         "fio: pid=7218, err=22/file:io_u.c:1876, func=io_u error, error=Invalid argument"),
    ],
)
def test_job_error_is_fios_own_line(name, message):
    (job,) = fio.parse(fixture(name))
    assert job.error == message
    assert (job.bytes, job.seconds, job.write, job.read) == (0, None, None, None)


def test_job_error_without_a_line_names_the_errno():
    doc = json.loads(fixture("fio333-seqwrite-1m.json"))
    doc["jobs"][0]["error"] = 5
    (job,) = fio.parse(json.dumps(doc))
    assert job.error == "fio job 'seqwrite-1m' reported error 5 (%s)" % os.strerror(5)


def test_mixed_job_fills_both_directions_in_the_record():
    _tool, (result,) = parse_output(fixture("fio333-randrw-70-30.json"))
    metrics = result["metrics"]
    assert metrics["read_bytes_per_s"] == pytest.approx(831641.8864908074, rel=1e-12)
    assert metrics["write_bytes_per_s"] == pytest.approx(360978.417266187, rel=1e-12)
    assert (metrics["read_iops"], metrics["write_iops"]) == (203.03757, 88.129496)
    assert metrics["latency_ns"]["write"] == {
        "mean": 72335.675737, "min": 461, "p50": 63744, "p95": 152576, "p99": 171008, "p99_9": 189440,
        "p99_99": 189440, "max": 189955, "stdev": 49164.3327}
    assert metrics["latency_ns"]["read"] == {
        "mean": 78753705.971457, "min": 47221, "p50": 100139008, "p95": 100139008, "p99": 104333312,
        "p99_9": 104333312, "p99_99": 104333312, "max": 103986028, "stdev": 40901658.074078}
    assert list(metrics["latency_ns"]["read"]) == LATENCY_KEYS
    assert (result["bytes"], result["seconds"], result["tool_version"]) == (5967872, 5.004, "3.33")
    assert result["job"] == {"name": "randrw-70-30", "index": 0, "groupid": 0, "client": None}


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        ("fio333-bad-engine.txt", "fio: engine nonexistent not loadable"),
        ("fio333-bad-engine-stdout-stderr.txt", "fio: engine nonexistent not loadable"),
        ("fio333-error-nodir.txt", "fio: /tmp/dpcap/mnt/does-not-exist is not a directory"),
    ],
)
def test_output_without_json_raises_parse_error_quoting_fio(name, quoted):
    with pytest.raises(ParseError) as caught:
        fio.parse(fixture(name))
    assert "expected fio JSON output (--output-format=json), found none (nor fio normal or terse output)" in str(
        caught.value)
    assert quoted in str(caught.value)


def test_truncated_json_raises_parse_error():
    text = fixture("fio333-randread-4k-qd32.json")
    for cut in (1, 100, len(text) // 2, len(text) - 3):
        with pytest.raises(ParseError) as caught:
            fio.parse(text[:cut])
        assert "one complete JSON object" in str(caught.value)


def _mutated(change):
    doc = json.loads(fixture("fio333-randrw-70-30.json"))
    change(doc)
    return json.dumps(doc)


def _set(path, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set(["jobs"], {"a": 1}), "a list of jobs at $.jobs"),
        (_set(["jobs"], []), "at least one job"),
        (_set(["jobs", 0], "x"), "a job object at jobs[0]"),
        (_set(["jobs", 0, "jobname"], 3), "a string at jobs[0].jobname"),
        (_set(["jobs", 0, "error"], "0"), "an integer at jobs[0].error"),
        (_set(["jobs", 0, "error"], True), "an integer at jobs[0].error"),
        (_set(["jobs", 0, "read"], [1]), "an object at jobs[0].read"),
        (_set(["jobs", 0, "read", "io_bytes"], "4161536"), "a non-negative number at jobs[0].read.io_bytes"),
        (_set(["jobs", 0, "read", "io_bytes"], -1), "below 2**64 at jobs[0].read.io_bytes"),
        (_set(["jobs", 0, "read", "io_bytes"], 10 ** 30), "below 2**64 at jobs[0].read.io_bytes"),
        (_set(["jobs", 0, "read", "runtime"], None), "a non-negative number at jobs[0].read.runtime"),
        (_set(["jobs", 0, "read", "iops"], False), "a non-negative number at jobs[0].read.iops"),
        (_set(["jobs", 0, "read", "clat_ns"], 5), "an object at jobs[0].read.clat_ns"),
        (_set(["jobs", 0, "read", "clat_ns", "mean"], "fast"), "jobs[0].read.clat_ns.mean"),
        (_set(["jobs", 0, "read", "clat_ns", "percentile"], []), "an object at jobs[0].read.clat_ns.percentile"),
        (_set(["jobs", 0, "read", "clat_ns", "percentile", "99.000000"], "x"), "clat_ns.percentile.99.000000"),
        (_set(["fio version"], 3.33), "a string at $.fio version"),
        (_set(["jobs", 0, "sync"], "x"), "an object at jobs[0].sync"),
    ],
)
def test_wrong_types_in_json_raise_parse_error(change, message):
    with pytest.raises(ParseError) as caught:
        fio.parse(_mutated(change))
    assert message in str(caught.value)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_raise_parse_error(text):
    raw = fixture("fio333-seqwrite-1m.json").replace('"iops" : 50.529259', '"iops" : %s' % text)
    with pytest.raises(ParseError):
        fio.parse(raw)


@pytest.mark.parametrize("text", ["", "\n\n", "{}", "[1, 2]", '{"jobs": 1}', "{" * 5000, "not fio at all"])
def test_garbage_raises_parse_error(text):
    with pytest.raises(ParseError):
        fio.parse(text)


def test_missing_completion_latency_falls_back_to_total_latency_mean():
    doc = json.loads(fixture("fio333-seqwrite-1m.json"))
    del doc["jobs"][0]["write"]["clat_ns"]
    (job,) = fio.parse(json.dumps(doc))
    # lat_ns of the fixture: min 335808, max 121703506, mean 79153872.667984, stddev 40527126.642415
    assert job.write.latency_ns == {"mean": 79153872.667984, "min": 335808, "p50": None, "p95": None, "p99": None,
                                    "p99_9": None, "p99_99": None, "max": 121703506, "stdev": 40527126.642415}
    assert list(job.write.latency_ns) == LATENCY_KEYS
    assert "no completion latency (clat)" in job.warnings[-1]


def test_total_latency_fallback_leaves_out_what_fio_did_not_print():
    doc = json.loads(fixture("fio333-seqwrite-1m.json"))
    write = doc["jobs"][0]["write"]
    del write["clat_ns"], write["lat_ns"]["min"], write["lat_ns"]["stddev"]
    (job,) = fio.parse(json.dumps(doc))
    assert job.write.latency_ns == {"mean": 79153872.667984, "min": None, "p50": None, "p95": None, "p99": None,
                                    "p99_9": None, "p99_99": None, "max": 121703506, "stdev": None}


def test_fio2_total_latency_fallback_is_scaled_from_microseconds():
    doc = json.loads(fixture("public-fio218-randread-mdraid.json"))
    del doc["jobs"][0]["read"]["clat"]
    (job,) = fio.parse(json.dumps(doc))
    # "lat" of the fixture in us: min 2776, max 26177, mean 13652.220173, stddev 3949.489055
    latency = job.read.latency_ns
    assert list(latency) == LATENCY_KEYS
    assert (latency["p50"], latency["p95"], latency["p99"], latency["p99_9"], latency["p99_99"]) == (None,) * 5
    assert (latency["mean"], latency["min"], latency["max"], latency["stdev"]) == pytest.approx(
        (13652220.173, 2776000, 26177000, 3949489.055), rel=1e-12)
    assert "no completion latency (clat)" in job.warnings[-1]


@pytest.mark.parametrize("key", ["min", "stddev"])
def test_completion_latency_without_min_or_stddev_raises_parse_error(key):
    doc = json.loads(fixture("fio333-seqwrite-1m.json"))
    del doc["jobs"][0]["write"]["clat_ns"][key]
    with pytest.raises(ParseError) as caught:
        fio.parse(json.dumps(doc))
    assert "jobs[0].write.clat_ns.%s" % key in str(caught.value)


def test_two_appended_json_documents_give_jobs_of_both():
    text = fixture("fio333-seqwrite-1m.json") + fixture("fio333-randread-4k-qd32.json")
    jobs = fio.parse(text)
    assert [(job.index, job.name) for job in jobs] == [(0, "seqwrite-1m"), (1, "randread-4k-qd32")]
