"""fio normal and terse output: exact figures from real outputs (tests/fixtures/fio, each with a .src.md).

Every expected figure is worked out by hand from the printed line it comes from (quoted in the comment):
bytes = the printed io amount x its unit (KiB/MiB/GiB = 2**10/2**20/2**30; fio 2.x KB/MB = 2**10/2**20;
terse: KiB x 1024), bytes/s = bytes x 1000 / runtime ms, IOPS = the 'issued' total x 1000 / runtime ms
(normal output) or the printed integer (terse), latencies x 1 (nsec), x 1000 (usec), x 10**6 (msec).
"""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import fio, fio_text
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import detect_tool
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fio")
LATENCY_KEYS = ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]
MIB, GIB = 2 ** 20, 2 ** 30


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def lat(scale, mean, minimum, p50, p95, p99, p99_9, p99_99, maximum, stdev):
    """Latency in ns from the printed figures in the unit of their header (scale ns per unit)."""
    figures = (mean, minimum, p50, p95, p99, p99_9, p99_99, maximum, stdev)
    return dict(zip(LATENCY_KEYS, (None if value is None else value * scale for value in figures)))


US, MS = 1000, 1000 * 1000


def clat_pct(clat_scale, pct_scale, mean, minimum, maximum, stdev, p50, p95, p99, p99_9, p99_99):
    """clat line and percentile block in different units (fio 2.x prints clat (msec), percentiles (usec))."""
    return {"mean": mean * clat_scale, "min": minimum * clat_scale, "p50": p50 * pct_scale, "p95": p95 * pct_scale,
            "p99": p99 * pct_scale, "p99_9": p99_9 * pct_scale,
            "p99_99": None if p99_99 is None else p99_99 * pct_scale, "max": maximum * clat_scale,
            "stdev": stdev * clat_scale}


# direction: (io_bytes, runtime ms, bytes/s, iops, total_ios, latency ns)
CASES = [
    # fio 3.33, rw=randrw rwmixread=70 (normal output): read in usec, write in nsec
    ("fio333-normal-randrw-70-30.txt", [("randrw-70-30", 0, 0, "3.33", {
        # read: IOPS=8462, BW=33.1MiB/s (34.7MB/s)(66.1MiB/2001msec); issued rwts: total=16934,7188,0,0
        "read": (round(66.1 * MIB), 2001, round(66.1 * MIB) * 1000 / 2001, 16934 * 1000 / 2001, 16934,
                 # clat (usec): min=33, max=14568, avg=101.24, stdev=415.41; 50/95/99/99.90th = 47, 92, 1876, 5932
                 lat(US, 101.24, 33, 47, 92, 1876, 5932, 12256, 14568, 415.41)),
        # write: IOPS=3592, BW=14.0MiB/s (14.7MB/s)(28.1MiB/2001msec); 0 zone resets
        "write": (round(28.1 * MIB), 2001, round(28.1 * MIB) * 1000 / 2001, 7188 * 1000 / 2001, 7188,
                  # clat (nsec): min=1952, max=61132, avg=3431.43, stdev=2396.06; percentiles 2896 6752 9664 38144
                  lat(1, 3431.43, 1952, 2896, 6752, 9664, 38144, 61184, 61132, 2396.06)),
    })]),
    # fio 3.33, numjobs=2 without group_reporting: one block per process
    ("fio333-normal-numjobs2.txt", [
        ("seqwrite-nj2", 0, 0, "3.33", {
            # write: IOPS=78.7k, BW=4918MiB/s (5157MB/s)(4923MiB/1001msec); issued rwts: total=0,78765,0,0
            "write": (4923 * MIB, 1001, 4923 * MIB * 1000 / 1001, 78765 * 1000 / 1001, 78765,
                      # clat (nsec): min=1402, max=21919k, avg=9710.46, stdev=283554.41; 1976 3312 4448 1122304
                      lat(1, 9710.46, 1402, 1976, 3312, 4448, 1122304, 14745600, 21919000, 283554.41))}),
        ("seqwrite-nj2", 0, 0, "3.33", {
            # write: IOPS=94.3k, BW=5895MiB/s (6182MB/s)(5925MiB/1005msec); issued rwts: total=0,94798,0,0
            "write": (5925 * MIB, 1005, 5925 * MIB * 1000 / 1005, 94798 * 1000 / 1005, 94798,
                      # clat (nsec): min=1362, max=20724k, avg=7599.55, stdev=204429.07; 2128 3216 17792 954368
                      lat(1, 7599.55, 1362, 2128, 3216, 17792, 954368, 12255232, 20724000, 204429.07))}),
    ]),
    # fio 3.33, numjobs=2 --group_reporting: one block (jobs=2) for the group
    ("fio333-normal-numjobs2-group-reporting.txt", [("seqwrite-nj2", 0, 0, "3.33", {
        # write: IOPS=203k, BW=12.4GiB/s (13.3GB/s)(12.4GiB/1002msec); issued rwts: total=0,203864,0,0
        "write": (round(12.4 * GIB), 1002, round(12.4 * GIB) * 1000 / 1002, 203864 * 1000 / 1002, 203864,
                  # clat (nsec): min=1352, max=20164k, avg=7181.25, stdev=150085.45; 2008 3472 7840 1318912
                  lat(1, 7181.25, 1352, 2008, 3472, 7840, 1318912, 7045120, 20164000, 150085.45)),
    })]),
    # fio 3.33, two stonewalled groups; the first with fdatasync=1 (its sync block belongs to no direction)
    ("fio333-normal-two-groups-fdatasync.txt", [
        ("seqwrite-g0", 0, 0, "3.33", {
            # write: IOPS=2462, BW=2463MiB/s (2582MB/s)(2465MiB/1001msec); issued rwts: total=0,2465,0,0
            "write": (2465 * MIB, 1001, 2465 * MIB * 1000 / 1001, 2465 * 1000 / 1001, 2465,
                      # clat (usec): min=67, max=1834, avg=80.60, stdev=38.13; 76 108 141 243 (not sync's 273...)
                      lat(US, 80.60, 67, 76, 108, 141, 243, 1827, 1834, 38.13))}),
        ("randread-g1", 1, 0, "3.33", {
            # read: IOPS=22.8k, BW=88.9MiB/s (93.2MB/s)(8192KiB/90msec); issued rwts: total=2048,0,0,0
            "read": (8192 * 1024, 90, 8192 * 1024 * 1000 / 90, 2048 * 1000 / 90, 2048,
                     # clat (usec): min=34, max=222, avg=43.68, stdev=11.09; 42 49 85 192
                     lat(US, 43.68, 34, 42, 49, 85, 192, 223, 222, 11.09))}),
    ]),
    # fio 3.33 randtrim on a regular file: the job failed with err=25 before any I/O
    ("fio333-normal-trim-unsupported.txt", [("trim-file", 0, 25, "3.33", {})]),
    # terse v2 (fio 3.33 --terse-version=2): no fio version field; read, write and trim status
    ("fio333-terse-v2.txt", [("randread-terse", 0, 0, None, {
        # 2;randread-terse;0;0;68336;68267;17066;1001;...;21;7938;57.477751;174.797653; 37 78 272 2867
        "read": (68336 * 1024, 1001, 68336 * 1024 * 1000 / 1001, 17066, None,
                 lat(US, 57.477751, 21, 37, 78, 272, 2867, 6127, 7938, 174.797653)),
    })]),
    # terse v3 (the default): read and write status only
    ("fio333-terse-v3.txt", [("randread-terse", 0, 0, "3.33", {
        # 3;fio-3.33;randread-terse;0;0;50820;50769;12692;1001;...;24;11119;76.893548;278.615815; 45 91 856 3620
        "read": (50820 * 1024, 1001, 50820 * 1024 * 1000 / 1001, 12692, None,
                 lat(US, 76.893548, 24, 45, 91, 856, 3620, 10420, 11119, 278.615815)),
    })]),
    # terse v4: read, write and trim status
    ("fio333-terse-v4.txt", [("randread-terse", 0, 0, "3.33", {
        # 4;fio-3.33;randread-terse;0;0;59644;59584;14896;1001;...;28;9394;65.683728;294.296588; 43 61 134 5275
        "read": (59644 * 1024, 1001, 59644 * 1024 * 1000 / 1001, 14896, None,
                 lat(US, 65.683728, 28, 43, 61, 134, 5275, 8585, 9394, 294.296588)),
    })]),
    # terse v5: 47 fields per direction (bw samples and IOPS statistics added)
    ("fio333-terse-v5.txt", [("randread-terse", 0, 0, "3.33", {
        # 5;fio-3.33;randread-terse;0;0;57264;57206;14301;1001;...;23;7186;68.901817;222.272460; 43 72 749 3686
        "read": (57264 * 1024, 1001, 57264 * 1024 * 1000 / 1001, 14301, None,
                 lat(US, 68.901817, 23, 43, 72, 749, 3686, 6193, 7186, 222.272460)),
    })]),
    # terse v3, numjobs=2 and a description (last field of each line)
    ("fio333-terse-v3-numjobs2-description.txt", [
        ("randwrite-terse-nj2", 0, 0, "3.33", {
            # write: 1065980;1064915;266228;1001;...;0;4221;2.191233;22.080452; 0 1 2 264
            "write": (1065980 * 1024, 1001, 1065980 * 1024 * 1000 / 1001, 266228, None,
                      lat(US, 2.191233, 0, 0, 1, 2, 264, 518, 4221, 22.080452))}),
        ("randwrite-terse-nj2", 0, 0, "3.33", {
            # write: 2129924;2123553;530888;1003;...;0;3564;1.148381;9.717295; 1 1 2 11
            "write": (2129924 * 1024, 1003, 2129924 * 1024 * 1000 / 1003, 530888, None,
                      lat(US, 1.148381, 0, 1, 1, 2, 11, 76, 3564, 9.717295))}),
    ]),
    # --output-format=terse,normal: the terse line, then the normal block of the same job (taken once)
    ("fio333-terse-then-normal.txt", [("seqread-mixed", 0, 0, "3.33", {
        # 3;fio-3.33;seqread-mixed;0;0;2687616;2684931;20976;1001;...;2;5382;45.546125;281.330569; 4 10 1957 2605
        "read": (2687616 * 1024, 1001, 2687616 * 1024 * 1000 / 1001, 20976, None,
                 lat(US, 45.546125, 2, 4, 10, 1957, 2605, 4882, 5382, 281.330569)),
    })]),
    # --append-terse: the same, the terse line printed before the normal block
    ("fio333-append-terse.txt", [("seqread-append", 0, 0, "3.33", {
        # 3;fio-3.33;seqread-append;0;0;2022016;2005968;15671;1008;...;2;16615;60.949167;467.165956; 4 23 2179 4423
        "read": (2022016 * 1024, 1008, 2022016 * 1024 * 1000 / 1008, 15671, None,
                 lat(US, 60.949167, 2, 4, 23, 2179, 4423, 16318, 16615, 467.165956)),
    })]),
    # fio 2.2.10 (public): old 'write: io=..., bw=..., iops=..., runt=...' line, clat (msec) with percentiles (usec)
    ("public-fio2210-rbd-write.txt", [("vol_base_test", 0, 0, "2.2.10", {
        # write: io=1024.0MB, bw=26099KB/s, iops=101, runt= 40177msec; issued : total=r=0/w=4096/d=0
        "write": (1024 * MIB, 40177, 1024 * MIB * 1000 / 40177, 4096 * 1000 / 40177, 4096,
                  # clat (msec): min=7, max=31, avg= 9.76, stdev= 2.02; percentiles (usec) 9152 14656 17280 20352
                  clat_pct(MS, US, 9.76, 7, 31, 2.02, 9152, 14656, 17280, 20352, 31360)),
    })]),
    ("public-fio2210-rbd-read.txt", [("vol_base_test", 0, 0, "2.2.10", {
        # read : io=1024.0MB, bw=99278KB/s, iops=387, runt= 10562msec; issued : total=r=4096/w=0/d=0
        "read": (1024 * MIB, 10562, 1024 * MIB * 1000 / 10562, 4096 * 1000 / 10562, 4096,
                 # clat (usec): min=1799, max=9337, avg=2568.43, stdev=485.34; 2448 3376 4320 6624
                 lat(US, 2568.43, 1799, 2448, 3376, 4320, 6624, 9280, 9337, 485.34)),
    })]),
    # fio 2.0.2 (public, fio's own commit message): a verify job, read and write in one job block; 'fio 2.0.2'
    # banner, 'iops=256000 , runt=     1msec', 'min=2 , max=13 ,'; the read section has no clat line (the bug
    # the commit fixed), so no read latency, its zero percentiles not taken
    ("public-fio202-verify-write-read.txt", [("test", 0, 0, "2.0.2", {
        # read : io=1024.0KB, bw=1000.0MB/s, iops=256000 , runt=     1msec; issued : total=r=256/w=256/d=0
        "read": (1024 * 1024, 1, 1024 * 1024 * 1000 / 1, 256 * 1000 / 1, 256, None),
        # write: io=1024.0KB, bw=341333KB/s, iops=85333 , runt=     3msec
        "write": (1024 * 1024, 3, 1024 * 1024 * 1000 / 3, 256 * 1000 / 3, 256,
                  # clat (usec): min=2 , max=13 , avg= 3.30, stdev= 0.78; 50/95/99/99.90th = 3, 4, 4, 13
                  lat(US, 3.30, 2, 3, 4, 4, 13, None, 13, 0.78)),
    })]),
    # fio 2.x (public, fio's own commit message): the read line and the group summary, no job header line
    ("public-fio2x-group-summary-only.txt", [("group 0 (all jobs)", 0, 0, None, {
        # READ: io=101207GB, aggrb=491309KB/s, ..., mint=216000016msec, maxt=216000016msec (GB = 2**30 in fio 2.x)
        "read": (101207 * GIB, 216000016, 101207 * GIB * 1000 / 216000016, None, None, None),
    })]),
    # fio 3.25 (public): fdatasync=1, clat in nsec, the sync block after it
    ("public-fio325-fdatasync-nsec.txt", [("mytest", 0, 0, "3.25", {
        # write: IOPS=4801, BW=18.8MiB/s (19.7MB/s)(22.0MiB/1173msec); issued rwts: total=0,5632,0,0
        "write": (22 * MIB, 1173, 22 * MIB * 1000 / 1173, 5632 * 1000 / 1173, 5632,
                  # clat (nsec): min=10519, max=57976, avg=13462.14, stdev=2609.65; 12608 18560 23168 38656
                  lat(1, 13462.14, 10519, 12608, 18560, 23168, 38656, 58112, 57976, 2609.65)),
    })]),
    # fio 3.1 (public): 'issued rwt: total=0,262144,0,' (three directions), slat max=1128.7k
    ("public-fio31-posixaio-write.txt", [("myjob", 0, 0, "3.1", {
        # write: IOPS=5980, BW=93.4MiB/s (97.0MB/s)(4096MiB/43832msec)
        "write": (4096 * MIB, 43832, 4096 * MIB * 1000 / 43832, 262144 * 1000 / 43832, 262144,
                  # clat (usec): min=3660, max=25559, avg=5318.66, stdev=876.90; 5211 6587 7963 13173
                  lat(US, 5318.66, 3660, 5211, 6587, 7963, 13173, 25297, 25559, 876.90)),
    })]),
    # terse v3 from public issues (fio 3.7 randrw, fio 3.19 seq read, fio 3.27 with gtod_reduce: no latency)
    ("public-fio37-terse-v3-randrw.txt", [("bio", 0, 0, "3.7", {
        # 28709340;159349;500;180166;...;743;1632665;127194.504051;124259.989230; 94896 337641 549453 1249902
        "read": (28709340 * 1024, 180166, 28709340 * 1024 * 1000 / 180166, 500, None,
                 lat(US, 127194.504051, 743, 94896, 337641, 549453, 1249902, 1501560, 1632665, 124259.989230)),
        # 28707618;159339;498;180166;...;1118;1592279;127550.672844;126465.260968; 94896 337641 549453 1233125
        "write": (28707618 * 1024, 180166, 28707618 * 1024 * 1000 / 180166, 498, None,
                  lat(US, 127550.672844, 1118, 94896, 337641, 549453, 1233125, 1501560, 1592279, 126465.260968)),
    })]),
    ("public-fio319-terse-v3-seqread.txt", [("seq-read", 0, 0, "3.19-45-gc650", {
        # 581120;506202;4035;1148;...;14655;23539;16062.664435;1195.969762; 15925 17694 21626 22151
        "read": (581120 * 1024, 1148, 581120 * 1024 * 1000 / 1148, 4035, None,
                 lat(US, 16062.664435, 14655, 15925, 17694, 21626, 22151, 23461, 23539, 1195.969762)),
    })]),
    ("public-fio327-terse-v3-gtod-reduce.txt", [("test", 0, 0, "3.27", {
        # read 76932;118356;29589;650; write 25468;39181;9795;650; every latency 0 (gtod_reduce: not measured)
        "read": (76932 * 1024, 650, 76932 * 1024 * 1000 / 650, 29589, None, None),
        "write": (25468 * 1024, 650, 25468 * 1024 * 1000 / 650, 9795, None, None),
    })]),
    # fio 3.33 normal output already among the fixtures (it was refused before): one read job
    ("fio333-normal-text-output.txt", [("seqread-normal", 0, 0, "3.33", {
        # read: IOPS=49, BW=49.8MiB/s (52.2MB/s)(101MiB/2027msec); issued rwts: total=101,0,0,0
        "read": (101 * MIB, 2027, 101 * MIB * 1000 / 2027, 101 * 1000 / 2027, 101,
                 # clat (usec): min=94, max=121205, avg=20058.49, stdev=40325.03; 143 99091 103285 121111
                 lat(US, 20058.49, 94, 143, 99091, 103285, 121111, 121111, 121205, 40325.03)),
    })]),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    jobs = fio.parse(fixture(name))
    assert [(job.name, job.groupid, job.error_code, job.tool_version) for job in jobs] == [
        want[:4] for want in expected]
    for index, (job, (_name, _gid, _code, _version, directions)) in enumerate(zip(jobs, expected)):
        assert job.index == index
        assert sorted(found for found, _dir in job.directions) == sorted(directions)
        for direction, (io_bytes, runtime, rate, iops, total, latency) in directions.items():
            found = getattr(job, direction)
            assert (found.io_bytes, found.runtime_ms, found.total_ios) == (io_bytes, runtime, total)
            assert found.bytes_per_s == pytest.approx(rate, rel=1e-12)
            assert found.iops == (None if iops is None else pytest.approx(iops, rel=1e-12))
            if latency is None:
                assert found.latency_ns is None
            else:
                assert list(found.latency_ns) == LATENCY_KEYS
                # fio 2.0.2 (public-fio202-*) printed no 99.99th percentile: None where the expected figure is None
                assert [key for key, value in found.latency_ns.items() if value is None] == [
                    key for key, value in latency.items() if value is None]
                assert {key: value for key, value in found.latency_ns.items() if value is not None} == pytest.approx(
                    {key: value for key, value in latency.items() if value is not None}, rel=1e-12)


@pytest.mark.parametrize("name", [case[0] for case in CASES])
def test_tool_auto_recognises_every_text_fixture_as_fio(name):
    assert detect_tool(fixture(name)) == "fio"
    tool, records = parse_output(fixture(name))
    assert tool == "fio" and len(records) == len(dict(CASES)[name])


def test_record_has_the_json_path_schema():
    """The mixed rw job through parse_output: the same keys and rules as fio JSON records."""
    _tool, (json_record,) = parse_output(fixture("fio333-randrw-70-30.json"))
    _tool, (record,) = parse_output(fixture("fio333-normal-randrw-70-30.txt"))
    assert record.keys() == json_record.keys()
    assert record["metrics"].keys() == json_record["metrics"].keys()
    assert record["job"] == {"name": "randrw-70-30", "index": 0, "groupid": 0, "client": None}
    metrics = record["metrics"]
    assert metrics["read_bytes_per_s"] == pytest.approx(round(66.1 * MIB) * 1000 / 2001, rel=1e-12)
    assert metrics["write_iops"] == pytest.approx(7188 * 1000 / 2001, rel=1e-12)
    assert list(metrics["latency_ns"]["write"]) == LATENCY_KEYS
    # bytes: 66.1 MiB + 28.1 MiB rounded each; seconds: the longest direction runtime, 2001 ms
    assert (record["bytes"], record["seconds"], record["tool_version"]) == (
        round(66.1 * MIB) + round(28.1 * MIB), 2.001, "3.33")
    assert metrics["fsyncs_per_s"] is None


def test_rounded_io_is_said_in_a_warning():
    (job,) = fio.parse(fixture("fio333-normal-text-output.txt"))
    assert job.warnings == [
        "job 'seqread-normal' read (line 6): fio printed io=101MiB, rounded; bytes and bytes/s (bytes / 2027 ms) "
        "are that rounded figure: run fio with --output-format=json for exact ones"]


def test_terse_truncation_is_said_in_a_warning():
    (job,) = fio.parse(fixture("fio333-terse-v3.txt"))
    assert job.warnings == [
        "terse v3 job 'randread-terse' (line 1): fio prints io in whole KiB and IOPS as an integer (both "
        "truncated), latencies in whole usec (min, max, percentiles)"]


@pytest.mark.parametrize("name", ["fio333-terse-then-normal.txt", "fio333-append-terse.txt"])
def test_terse_and_normal_output_of_the_same_job_count_once(name):
    (job,) = fio.parse(fixture(name))
    assert job.warnings[-1].startswith("fio's normal output follows the terse lines: figures taken from the terse")


def test_failed_job_carries_fios_own_error_line():
    (job,) = fio.parse(fixture("fio333-normal-trim-unsupported.txt"))
    assert job.error == ("fio: pid=24347, err=25/file:ioengines.c:399, func=td_io_queue, "
                         "error=Inappropriate ioctl for device")
    assert (job.bytes, job.seconds) == (0, None)


def test_sync_latency_is_not_taken_for_the_write_latency():
    (job, _second) = fio.parse(fixture("fio333-normal-two-groups-fdatasync.txt"))
    # sync (usec): min=237, max=2430, avg=287.74: none of it in the write figures
    assert job.write.latency_ns["max"] == 1834 * US
    assert job.fsyncs is None  # the text prints no sync count ('issued' counts it 0); only JSON has it


def test_json_stays_preferred_when_both_are_present():
    text = fixture("fio333-randread-4k-qd32.json") + "\n" + fixture("fio333-normal-text-output.txt")
    jobs = fio.parse(text)
    assert [job.name for job in jobs] == ["randread-4k-qd32"]
    assert jobs[0].read.io_bytes == 4227072


def test_group_summary_alone_gives_bytes_and_rate_per_group():
    """Only the 'Run status group' lines of a real output (the job block cut away by whoever pasted it)."""
    text = fixture("fio333-normal-two-groups-fdatasync.txt")
    summary = text[text.index("Run status group 0"):]
    first, second = fio.parse(summary)
    # WRITE: ... io=2465MiB (2585MB), run=1001-1001msec; READ: ... io=8192KiB (8389kB), run=90-90msec
    assert (first.name, first.groupid, first.write.io_bytes, first.write.runtime_ms) == (
        "group 0 (all jobs)", 0, 2465 * MIB, 1001)
    assert first.write.bytes_per_s == pytest.approx(2465 * MIB * 1000 / 1001, rel=1e-12)
    assert (first.write.iops, first.write.latency_ns) == (None, None)
    assert (second.groupid, second.read.io_bytes, second.read.runtime_ms) == (1, 8192 * 1024, 90)
    assert "only fio's group summary" in first.warnings[0]


def test_fio2_group_summary_line():
    text = fixture("public-fio2210-rbd-read.txt")
    (job,) = fio.parse(text[text.index("Run status group"):])
    # READ: io=1024.0MB, aggrb=99278KB/s, minb=99278KB/s, maxb=99278KB/s, mint=10562msec, maxt=10562msec
    assert (job.read.io_bytes, job.read.runtime_ms) == (1024 * MIB, 10562)


@pytest.mark.parametrize(("printed", "expected"), [
    # fio < 2.20 num2str(): the digits after the point are the remainder of the last division by 1024
    ("3.5GB", 3 * GIB + 5 * MIB),  # 1 digit of room 4: remainder 5 MiB, not 0.5 GiB
    ("1.512MB", MIB + 512 * 1024),
    ("1024.0MB", 1024 * MIB),      # room 1, one digit: shortened or not, read as a decimal
    ("241236KB", 241236 * 1024),
])
def test_fio2_fractions_are_remainders(printed, expected):
    """A rule test on the real fio 2.2.10 write line with its io= figure replaced (fio < 2.20's num2str)."""
    text = fixture("public-fio2210-rbd-write.txt").replace("io=1024.0MB, bw=26099KB/s", "io=%s, bw=26099KB/s" % printed)
    (job,) = fio.parse(text)
    assert job.write.io_bytes == expected


def test_fio20_blanks_before_commas():
    """fio 2.0.x printed 'iops=151 , runt=' and 'min=275 , max=87560 , avg=': lines of a real fio 2.0 output
    (LKML, 2012-07-24, "[RFC][PATCH] Make io_submit non-blocking", Ankit Jain:
    http://www.uwsg.indiana.edu/hypermail/linux/kernel/1207.3/00139.html, which quotes only the read and slat
    lines) put in place of the 2.2.10 read and clat lines: its slat figures stand in on the clat line here."""
    text = fixture("public-fio2210-rbd-read.txt")
    text = text.replace("  read : io=1024.0MB, bw=99278KB/s, iops=387, runt= 10562msec",
                        "  read : io=102120KB, bw=618740 B/s, iops=151 , runt=169006msec")
    text = text.replace("    clat (usec): min=1799, max=9337, avg=2568.43, stdev=485.34",
                        "    clat (usec): min=275 , max=87560 , avg=6571.88, stdev=2799.57")
    (job,) = fio.parse(text)
    assert (job.read.io_bytes, job.read.runtime_ms) == (102120 * 1024, 169006)
    assert (job.read.latency_ns["min"], job.read.latency_ns["max"], job.read.latency_ns["mean"]) == (
        275 * US, 87560 * US, pytest.approx(6571.88 * US, rel=1e-12))


def test_fio3_fractions_are_decimal():
    text = fixture("fio333-normal-text-output.txt").replace("(101MiB/2027msec)", "(3.50GiB/2027msec)")
    (job,) = fio.parse(text)
    assert job.read.io_bytes == round(3.5 * GIB)


@pytest.mark.parametrize(("banner", "expected"), [
    ("fio-2.18", 3 * GIB + 5 * MIB),  # fio 2.17-2.19: IOPS= lines, num2str() before its fraction fix (maxlen 4)
    ("fio-2.20", round(3.5 * GIB)),
    ("fio-3.33", round(3.5 * GIB)),
])
def test_fio217_to_219_fractions_are_remainders_when_the_banner_says_so(banner, expected):
    """A rule test on the real fio 3.33 output with its banner and io figure replaced."""
    text = fixture("fio333-normal-text-output.txt").replace("(101MiB/2027msec)", "(3.5GiB/2027msec)")
    (job,) = fio.parse(text.replace("\nfio-3.33\n", "\n%s\n" % banner))
    assert job.read.io_bytes == expected


@pytest.mark.parametrize(("change", "message"), [
    (lambda text: ";".join(text.split(";")[:110]), "terse version 3 with at least 121 ';'-separated fields, got 110"),
    (lambda text: text.replace("50.000000%=45", "50.000000%=abc"), "a terse clat percentile"),
    (lambda text: text.replace(";50820;", ";50x20;"), "an unsigned decimal number"),
    (lambda text: text.replace(";0;0;50820;", ";zero;0;50820;"), "terse groupid and error as integers"),
])
def test_bad_terse_lines_raise_parse_error(change, message):
    with pytest.raises(ParseError) as caught:
        fio.parse(change(fixture("fio333-terse-v3.txt")))
    assert message in str(caught.value)
    assert caught.value.lineno == 1


def test_unknown_byte_unit_raises_parse_error_naming_the_line():
    text = fixture("fio333-normal-text-output.txt").replace("(101MiB/2027msec)", "(101XiB/2027msec)")
    with pytest.raises(ParseError) as caught:
        fio.parse(text)
    assert "a byte unit fio prints" in str(caught.value)
    assert caught.value.lineno == 6


def test_text_without_fio_figures_still_names_what_is_expected():
    with pytest.raises(ParseError) as caught:
        fio_text.parse("Run status group 0 (all jobs):\n")
    assert "no job block" in str(caught.value)


def test_every_fio_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in names:
        if not name.endswith(".src.md"):
            assert name.rsplit(".", 1)[0] + ".src.md" in names, name


def test_sync_latency_block_is_the_commit_latency():
    # public-fio325-fdatasync-nsec.txt, under fsync/fdatasync/sync_file_range:
    #   sync (usec): min=161, max=345, avg=192.48, stdev=20.09
    #   sync percentiles (usec): 50.00th=[186], 95.00th=[235], 99.00th=[260], 99.90th=[302], 99.99th=[347]
    (job,) = fio.parse(fixture("public-fio325-fdatasync-nsec.txt"))
    assert job.sync_latency_ns == pytest.approx(lat(US, 192.48, 161, 186, 235, 260, 302, 347, 345, 20.09), rel=1e-12)
    _tool, (record,) = parse_output(fixture("public-fio325-fdatasync-nsec.txt"))
    assert record["metrics"]["latency_ns"]["sync"] == job.sync_latency_ns
    # the write's own completion latency is not the sync's
    assert record["metrics"]["latency_ns"]["write"]["max"] != job.sync_latency_ns["max"]
    (plain,) = fio.parse(fixture("fio333-normal-text-output.txt"))
    assert plain.sync_latency_ns is None
