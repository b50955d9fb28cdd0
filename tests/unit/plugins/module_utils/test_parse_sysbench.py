"""sysbench parser: exact figures from real fileio outputs (tests/fixtures/sysbench, each with a .src.md), and ParseError only."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import detect, sysbench
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "sysbench")
KIB = 1024
MIB = 1024 * 1024
TIB = 1024 ** 4
LATENCY_KEYS = ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def ms(value):
    """sysbench prints latencies in ms; the parser gives ns."""
    return value * 1e6


def run(mode, layout, block, ops, rates, seconds, nbytes=None, latency=None, error=None):
    """Expected figures of one run: ops = (reads/s, writes/s, fsyncs/s), rates = (read B/s, write B/s),
    latency = (min, avg, max, percentile, rank) in ms as printed."""
    return dict(mode=mode, layout=layout, block=block, ops=ops, rates=rates, seconds=seconds, nbytes=nbytes,
                latency=latency, error=error)


def v10(mode, block, ops, seconds, latency):
    """A sysbench 1.0 run: bytes/s are sysbench's ops/s x the block size (see the .src.md)."""
    return run(mode, "1.0", block, ops, (ops[0] * block, ops[1] * block), seconds, None, latency)


def v04(mode, layout, block, counts, seconds, latency):
    """A 0.4/0.5 run: ops/s = count / total time, bytes/s = count x block size / total time."""
    reads, writes, other = counts
    return run(mode, layout, block, (reads / seconds, writes / seconds, other / seconds),
               (reads * block / seconds, writes * block / seconds), seconds, (reads + writes) * block, latency)


NO_FIGURES = ((None, None, None), (None, None), None)

CASES = [
    ("sysbench1020-prepare.txt", [
        run("prepare", "prepare", None, (None, None, None), (None, 268435456 / 12.86), 12.86, 268435456)]),
    ("sysbench1020-rndrd-direct-16k.txt", [
        v10("rndrd", 16 * KIB, (300.10, 0.0, 0.0), 5.0008, (0.01, 3.33, 99.88, 0.10, 95))]),
    ("sysbench1020-seqwr.txt", [
        v10("seqwr", 16 * KIB, (0.0, 1261.40, 203.06), 4.0423, (0.00, 0.68, 153.07, 0.05, 95))]),
    ("sysbench1020-rndwr-fsync10.txt", [
        v10("rndwr", 16 * KIB, (0.0, 108.17, 173.56), 4.0669, (0.00, 3.60, 101.14, 0.10, 95))]),
    ("sysbench1020-seqrd-direct-1m.txt", [
        v10("seqrd", MIB, (19.98, 0.0, 0.0), 4.0521, (0.19, 50.01, 151.47, 99.33, 95))]),
    ("sysbench1020-rndrw-2threads-p99.txt", [
        v10("rndrw", 16 * KIB, (296.05, 197.61, 85.77), 4.1032, (0.01, 3.41, 102.99, 99.33, 99))]),
    ("sysbench1020-warnings-deprecated-options.txt", [
        v10("rndrd", 16 * KIB, (311.50, 0.0, 0.0), 3.0008, (0.00, 3.21, 106.97, 0.05, 95))]),
    ("sysbench1020-seqrewr-report-histogram.txt", [
        v10("seqrewr", 16 * KIB, (0.0, 1268.21, 204.21), 3.0745, (0.00, 0.68, 157.79, 0.02, 95))]),
    ("sysbench1020-rndrd-async.txt", [
        v10("rndrd", 16 * KIB, (299.80, 0.0, 0.0), 3.1079, (0.00, 3.22, 103.65, 0.05, 95))]),
    ("sysbench1020-fatal-bad-mode.txt", [
        run(None, None, None, *NO_FIGURES, error="FATAL: Invalid IO operations mode: rndwrx.")]),
    ("sysbench1020-invalid-option.txt", [
        run(None, None, None, *NO_FIGURES, error="invalid option: --bogus-option=1")]),
    ("sysbench1020-fatal-no-prepare.txt", [
        run("rndrd", None, 16 * KIB, *NO_FIGURES,
            error="FATAL: Cannot open file 'test_file.0' errno = 2 (No such file or directory)")]),
    ("sysbench1020-fatal-short-file.txt", [
        run("rndwr", None, 16 * KIB, *NO_FIGURES,
            error="FATAL: Size of file 'test_file.4' is 15.688MiB, but at least 16MiB is expected.")]),
    ("sysbench1020-log-prepare-then-run.txt", [
        run("prepare", "prepare", None, (None, None, None), (None, 134217728 / 6.49), 6.49, 134217728),
        v10("rndrd", 4 * KIB, (990092.85, 0.0, 0.0), 3.0001, (0.00, 0.00, 12.05, 0.00, 95)),
    ]),
    ("sysbench1020-three-runs-appended.txt", [
        v10("rndwr", 4 * KIB, (0.0, 868933.53, 0.0), 2.0009, (0.00, 0.00, 12.04, 0.00, 95)),
        v10("rndwr", 4 * KIB, (0.0, 913103.34, 0.0), 2.0001, (0.00, 0.00, 5.01, 0.00, 95)),
        v10("rndwr", 4 * KIB, (0.0, 935464.77, 0.0), 2.0001, (0.00, 0.00, 3.94, 0.00, 95)),
    ]),
    ("public-sysbench0412-rpi-rndrw.txt", [
        v04("rndrw", "0.4", 16 * KIB, (479820, 319880, 1023496), 300.0050, (0.01, 0.03, 4.57, 0.06, 95))]),
    ("public-sysbench0412-bananapi-three-runs.txt", [
        v04("seqrd", "0.4", 16 * KIB, (524288, 0, 0), 49.0325, (0.03, 0.09, 9.99, 0.47, 95)),
        v04("seqwr", "0.4", 16 * KIB, (0, 524288, 128), 197.5861, (0.10, 0.37, 1604.23, 0.14, 95)),
        v04("rndrw", "0.4", 16 * KIB, (40920, 27280, 87286), 300.0033, (0.03, 0.38, 11.77, 0.60, 95)),
    ]),
    ("public-sysbench0412-proliant-sata-nvme.txt", [
        v04("rndrw", "0.4", 16 * KIB, (28800, 19200, 61361), 300.0106, (0.00, 2.86, 86.53, 11.77, 95)),
        v04("rndrw", "0.4", 16 * KIB, (195660, 130440, 417378), 300.0005, (0.00, 0.05, 4.72, 0.12, 95)),
    ]),
    ("public-sysbench0412-indented-direct.txt", [
        v04("rndrw", "0.4", 16 * KIB, (34204, 22802, 72960), 300.0058, (0.17, 3.46, 154.32, 8.15, 95))]),
    ("public-sysbench05-report-interval-annotated.txt", [
        v04("rndrd", "0.5", 8 * KIB, (6709, 0, 0), 30.0160, (0.13, 17.89, 254.62, 54.97, 95))]),
    # no banner and no "Block size" line in the excerpt: bytes/s from the printed Tb figures / total time
    ("public-sysbench05-zfs-tab-indented.txt", [
        run(None, "0.5", None, (288875130 / 1800.0001, 192583423 / 1800.0001, 0.0),
            (4.3046 * TIB / 1800.0001, 2.8697 * TIB / 1800.0001), 1800.0001, None, (0.00, 0.03, 354.19, 0.02, 95))]),
    ("public-sysbench10pre-rndrd-16threads.txt", [
        run("rndrd", "1.0-pre", 16 * KIB, (186.33, 0.0, 0.0), (186.33 * 16 * KIB, 0.0), 180.1092, None,
            (0.42, 85.82, 928.45, 277.21, 95))]),
]


def approx(value):
    return None if value is None else pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    runs = sysbench.parse(fixture(name))
    assert len(runs) == len(expected)
    for index, (found, want) in enumerate(zip(runs, expected)):
        assert found.index == index
        assert (found.mode, found.layout, found.block_size, found.error) == (
            want["mode"], want["layout"], want["block"], want["error"])
        assert (found.reads_per_s, found.writes_per_s, found.fsyncs_per_s) == tuple(approx(v) for v in want["ops"])
        assert (found.read_bytes_per_s, found.write_bytes_per_s) == tuple(approx(v) for v in want["rates"])
        assert (found.seconds, found.bytes) == (want["seconds"], want["nbytes"])
        if want["latency"] is None:
            assert found.latency is None
        else:
            low, avg, high, pct, rank = want["latency"]
            latency = found.latency
            assert (latency.min, latency.avg, latency.max, latency.percentile) == (
                approx(ms(low)), approx(ms(avg)), approx(ms(high)), approx(ms(pct)))
            assert latency.percentile_rank == rank


@pytest.mark.parametrize(
    ("name", "versions"),
    [
        ("sysbench1020-rndrd-direct-16k.txt", ["1.0.20"]),
        ("sysbench1020-log-prepare-then-run.txt", ["1.0.20", "1.0.20"]),
        ("public-sysbench0412-bananapi-three-runs.txt", ["0.4.12"] * 3),
        ("public-sysbench05-report-interval-annotated.txt", ["0.5"]),
        ("public-sysbench05-zfs-tab-indented.txt", [None]),
        ("public-sysbench10pre-rndrd-16threads.txt", ["1.0"]),
    ],
)
def test_versions_from_the_banner(name, versions):
    assert [found.version for found in sysbench.parse(fixture(name))] == versions


def test_legacy_totals_are_kept_and_cross_checked_against_the_printed_mb_per_s():
    (found,) = sysbench.parse(fixture("public-sysbench0412-rpi-rndrw.txt"))
    assert (found.reads, found.writes, found.other, found.events) == (479820, 319880, 1023496, 799700)
    assert found.requests_per_s == 2665.62
    # "(41.65Mb/sec)": Mb is MiB in sysbench 0.4, the total of both directions
    assert found.printed_total_bytes_per_s == pytest.approx(41.65 * MIB)
    assert found.read_bytes_per_s + found.write_bytes_per_s == pytest.approx(41.65 * MIB, rel=5e-4)
    assert found.warnings == []


def test_1_0_bytes_per_second_agree_with_the_printed_mib_per_second():
    (found,) = sysbench.parse(fixture("sysbench1020-rndrd-direct-16k.txt"))
    assert found.printed_read_bytes_per_s == pytest.approx(4.69 * MIB)
    assert found.read_bytes_per_s == pytest.approx(4916838.4)  # 300.10 x 16384, 4.689 MiB/s
    assert found.warnings == []  # within the rounding of "4.69"


def test_warning_lines_printed_before_the_banner_belong_to_the_run():
    (found,) = sysbench.parse(fixture("sysbench1020-warnings-deprecated-options.txt"))
    assert found.warnings == [
        "WARNING: the --test option is deprecated. You can pass a script name or path on the command line without "
        "any options.",
        "WARNING: --max-time is deprecated, use --time instead",
    ]


def test_fatal_run_keeps_its_warning_and_has_no_figures():
    (found,) = sysbench.parse(fixture("sysbench1020-fatal-no-prepare.txt"))
    assert found.warnings == ["WARNING: Did you forget to run the prepare step?"]
    assert not found.has_results


def test_report_interval_histogram_and_annotations_are_not_results():
    (found,) = sysbench.parse(fixture("sysbench1020-seqrewr-report-histogram.txt"))
    assert found.warnings == []
    (annotated,) = sysbench.parse(fixture("public-sysbench05-report-interval-annotated.txt"))
    assert annotated.requests_per_s == 223.51  # "223.51 Requests/sec executed  # <comment>"
    assert annotated.warnings == []


def test_missing_block_size_falls_back_to_the_printed_sizes_with_a_warning():
    (found,) = sysbench.parse(fixture("public-sysbench05-zfs-tab-indented.txt"))
    assert found.warnings == ["no 'Block size' line: bytes/s from sysbench's rounded 'Read ... Written ...' figures"]


def test_blank_lines_do_not_matter():
    text = fixture("public-sysbench0412-bananapi-three-runs.txt")
    squeezed = "\n".join(line for line in text.splitlines() if line.strip())
    assert [(r.mode, r.read_bytes_per_s, r.latency) for r in sysbench.parse(squeezed)] == [
        (r.mode, r.read_bytes_per_s, r.latency) for r in sysbench.parse(text)
    ]


def test_zero_run_0_4_keeps_zero_figures_and_refuses_the_uninitialised_minimum():
    # real 0.4.12 output (dyu/vps-comparison, see the .src.md of the rndrw fixtures for the layout): all
    # counters 0, "min: 18446744073709.55ms" (ULLONG_MAX ns), no percentile line
    text = "\n".join([
        "sysbench 0.4.12:  multi-threaded system evaluation benchmark",
        "Block size 4Kb",
        "Doing random r/w test",
        "Threads started!",
        "FATAL: Failed to read file! file: 12 pos: 12578816 errno = 0 ()",
        "Done.",
        "Operations performed:  0 Read, 0 Write, 0 Other = 0 Total",
        "Read 0b  Written 0b  Total transferred 0b  (0b/sec)",
        "    0.00 Requests/sec executed",
        "Test execution summary:",
        "    total time:                          0.0021s",
        "    total number of events:              0",
        "    total time taken by event execution: 0.0000",
        "    per-request statistics:",
        "         min:                            18446744073709.55ms",
        "         avg:                                  0.00ms",
        "         max:                                  0.00ms",
    ])
    (found,) = sysbench.parse(text)
    assert found.error == "FATAL: Failed to read file! file: 12 pos: 12578816 errno = 0 ()"
    assert (found.reads_per_s, found.read_bytes_per_s, found.bytes, found.seconds) == (0.0, 0.0, 0, 0.0021)
    assert (found.latency.min, found.latency.avg, found.latency.max, found.latency.percentile) == (None, 0.0, 0.0, None)
    assert not found.completed_requests
    _tool, (result,) = parse_output(text, "sysbench")
    assert result["metrics"]["latency_ns"] == {"read": None, "write": None, "sync": None}
    assert result["error"].startswith("FATAL: Failed to read file!")


# records


def test_record_of_a_read_test_fills_only_the_read_direction():
    tool, (result,) = parse_output(fixture("sysbench1020-rndrd-direct-16k.txt"))
    assert tool == "sysbench"
    record = make_record(result, test="sysbench_rand_read")
    assert record["tool_version"] == "1.0.20"
    assert record["job"] == {"name": "rndrd", "index": 0, "groupid": None, "client": None}
    assert record["metrics"] == {
        "read_bytes_per_s": pytest.approx(300.10 * 16384, rel=1e-12),
        "write_bytes_per_s": None,
        "read_iops": 300.10,
        "write_iops": None,
        "fsyncs_per_s": None,
        "latency_ns": {"read": {"mean": pytest.approx(3.33e6), "min": pytest.approx(0.01e6), "p50": None,
                                "p95": pytest.approx(0.10e6), "p99": None, "p99_9": None, "p99_99": None,
                                "max": pytest.approx(99.88e6), "stdev": None}, "write": None, "sync": None},
    }
    assert list(record["metrics"]["latency_ns"]["read"]) == LATENCY_KEYS
    assert (record["bytes"], record["seconds"], record["error"]) == (None, 5.0008, None)


def test_record_of_a_write_test_with_fsync():
    _tool, (result,) = parse_output(fixture("sysbench1020-rndwr-fsync10.txt"), "sysbench")
    metrics = result["metrics"]
    assert (metrics["read_bytes_per_s"], metrics["read_iops"]) == (None, None)
    assert metrics["write_bytes_per_s"] == pytest.approx(108.17 * 16384, rel=1e-12)
    assert (metrics["write_iops"], metrics["fsyncs_per_s"]) == (108.17, 173.56)
    assert metrics["latency_ns"]["write"] == {
        "mean": pytest.approx(3.60e6), "min": 0.0, "p50": None, "p95": pytest.approx(0.10e6), "p99": None,
        "p99_9": None, "p99_99": None, "max": pytest.approx(101.14e6), "stdev": None}


def test_record_of_a_mixed_test_keeps_latency_out_of_the_directions_with_a_warning():
    _tool, (result,) = parse_output(fixture("sysbench1020-rndrw-2threads-p99.txt"), "sysbench")
    metrics = result["metrics"]
    assert (metrics["read_iops"], metrics["write_iops"], metrics["fsyncs_per_s"]) == (296.05, 197.61, 85.77)
    assert metrics["latency_ns"] == {"read": None, "write": None, "sync": None}
    assert "not attributed to a direction" in result["warnings"][-1]


def test_a_95th_percentile_run_fills_p95_and_a_99th_percentile_run_p99():
    _tool, (result,) = parse_output(fixture("sysbench1020-seqrd-direct-1m.txt"), "sysbench")
    read = result["metrics"]["latency_ns"]["read"]
    assert (read["p50"], read["p95"], read["p99"], read["p99_9"], read["p99_99"]) == (
        None, pytest.approx(99.33e6), None, None, None)
    text = fixture("sysbench1020-rndrw-2threads-p99.txt").replace("random r/w", "random read")
    _tool, (result,) = parse_output(text, "sysbench")
    read = result["metrics"]["latency_ns"]["read"]
    assert (read["p50"], read["p95"], read["p99"], read["p99_9"], read["p99_99"]) == (
        None, None, pytest.approx(99.33e6), None, None)
    assert (read["min"], read["mean"], read["max"], read["stdev"]) == (
        pytest.approx(0.01e6), pytest.approx(3.41e6), pytest.approx(102.99e6), None)


@pytest.mark.parametrize(("rank", "key"), [("50", "p50"), ("95", "p95"), ("99", "p99"), ("99.9", "p99_9"),
                                           ("99.99", "p99_99"), ("90", None)])
def test_the_percentile_goes_to_the_key_of_its_rank(rank, key):
    text = fixture("sysbench1020-rndrd-direct-16k.txt").replace("95th percentile:", "%sth percentile:" % rank)
    _tool, (result,) = parse_output(text, "sysbench")
    read = result["metrics"]["latency_ns"]["read"]
    expected = {name: None for name in ("p50", "p95", "p99", "p99_9", "p99_99")}
    if key is not None:
        expected[key] = pytest.approx(0.10e6)
    assert {name: read[name] for name in expected} == expected
    assert (read["min"], read["mean"], read["max"], read["stdev"]) == (
        pytest.approx(0.01e6), pytest.approx(3.33e6), pytest.approx(99.88e6), None)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_record_latency_of_every_fixture(name, expected):
    """min, avg -> mean, max and the printed percentile by its rank, in ns; no stdev (sysbench prints none)."""
    _tool, results = parse_output(fixture(name), "sysbench")
    assert len(results) == len(expected)
    for result, want in zip(results, expected):
        found = [latency for latency in result["metrics"]["latency_ns"].values() if latency is not None]
        if want["latency"] is None or want["mode"] in ("rndrw", None):
            assert found == []  # no latency, or one for reads and writes together: not attributed
            continue
        low, avg, high, pct, rank = want["latency"]
        figures = {"mean": ms(avg), "min": ms(low), "p50": None, "p95": None, "p99": None, "p99_9": None, "p99_99": None,
                   "max": ms(high), "stdev": None}
        figures[{95: "p95", 99: "p99"}[rank]] = ms(pct)
        (latency,) = found
        assert list(latency) == LATENCY_KEYS
        assert latency == {key: approx(value) for key, value in figures.items()}


def test_record_of_prepare_is_a_write():
    _tool, (result,) = parse_output(fixture("sysbench1020-prepare.txt"), "sysbench")
    assert result["job"]["name"] == "prepare"
    assert result["metrics"]["write_bytes_per_s"] == pytest.approx(268435456 / 12.86, rel=1e-12)
    assert (result["metrics"]["write_iops"], result["bytes"], result["seconds"]) == (None, 268435456, 12.86)


def test_record_of_a_failed_run_carries_the_fatal_line():
    _tool, (result,) = parse_output(fixture("sysbench1020-fatal-bad-mode.txt"), "auto")
    assert result["error"] == "FATAL: Invalid IO operations mode: rndwrx."
    assert result["metrics"]["read_bytes_per_s"] is None
    assert result["tool_version"] == "1.0.20"


def test_zfs_run_without_mode_fills_the_directions_it_measured():
    _tool, (result,) = parse_output(fixture("public-sysbench05-zfs-tab-indented.txt"), "sysbench")
    assert result["metrics"]["read_iops"] == pytest.approx(288875130 / 1800.0001)
    assert result["metrics"]["write_iops"] == pytest.approx(192583423 / 1800.0001)
    assert result["metrics"]["fsyncs_per_s"] is None


def test_detect_tool_recognises_every_sysbench_fixture():
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".src.md"):
            assert detect.detect_tool(fixture(name)) == "sysbench", name


def test_every_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in names:
        if not name.endswith(".src.md"):
            assert os.path.splitext(name)[0] + ".src.md" in names, name


@pytest.mark.parametrize(
    ("text", "expected_in_message"),
    [
        ("", "sysbench output: expected sysbench fileio results"),
        ("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nRemoving test files...\n",
         "expected sysbench fileio results"),
        ("sysbench 0.4.12:  multi-threaded system evaluation benchmark\nDoing CPU performance benchmark\n"
         "Test execution summary:\n    total time:                          6.6806s\n",
         "this is another sysbench test); offending line: 'Doing CPU performance benchmark'"),
        # a result section whose figure is not a number: named, never guessed
        ("File operations:\n    reads/s:                      3x7.50\n    writes/s:  0.00\n",
         "'reads/s: N' in the File operations / Throughput sections"),
        ("File operations:\n    reads/s:  1.00\n    writes/s:  0.00\n    fsyncs/s:  0.00\nThroughput:\n"
         "    read, MiB/s:  0.02\n    written, MiB/s:  0.00\n",
         "'total time: N.NNNNs' in the General statistics section"),
        ("Block size 16Qb\n", "a known sysbench byte unit, got 'Qb'"),
        ("Block size 16Kb\nOperations performed:  5 Read, 0 Write, 0 Other = 5 Total\n",
         "'total time: N.NNNNs' after 'Operations performed:'"),
        ("Block size 16Kb\nOperations performed:  5 Read, 0 Write, 0 Other = 5 Total\n"
         "Read 80Kb  Written 0b  Total transferred 80Kb  (80Qb/sec)\n    total time:   1.0000s\n",
         "a known sysbench byte unit, got 'Qb'"),
        ("Operations performed:  5 Read, 0 Write, 0 Other = 5 Total\n    total time:   1.0000s\n",
         "'Block size N' before the results, or the 'Read N Written N' line"),
        ("File operations:\n reads/s: 1.0\n writes/s: 0.0\n fsyncs/s: 0.0\n read, MiB/s: 0.0\n written, MiB/s: 0.0\n"
         " total time: 1.0s\nLatency (ms):\n min: 1.5us\n",
         "offending line 9"),
        ("reads/s: " + "9" * 400 + "\n", "an unsigned decimal number"),
    ],
)
def test_malformed_input_raises_parse_error_naming_the_line(text, expected_in_message):
    with pytest.raises(ParseError) as caught:
        sysbench.parse(text)
    assert expected_in_message in str(caught.value)
    assert caught.value.tool == "sysbench"


def test_non_text_input_is_a_parse_error():
    with pytest.raises(ParseError):
        sysbench.parse(b"sysbench")
