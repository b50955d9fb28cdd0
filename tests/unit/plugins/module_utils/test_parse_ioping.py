"""ioping parser: exact figures from real 0.x and 1.x outputs (tests/fixtures/ioping, each with a .src.md)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import detect, ioping
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "ioping")
KIB = 1024
MIB = 2 ** 20
GIB = 2 ** 30
US = 1e3  # ns per us
MS = 1e6
S = 1e9
LATENCY_KEYS = ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def run(layout, direction, requests, seconds, nbytes, iops, rate, latency, error=None):
    """latency = (min, avg, max, mdev) in ns."""
    return dict(layout=layout, direction=direction, requests=requests, seconds=seconds, nbytes=nbytes, iops=iops,
                rate=rate, latency=latency, error=error)


def summary(direction, requests, seconds, nbytes, latency):
    """1.x summary: ops/s = requests / seconds, bytes/s = bytes / seconds ("completed in" time)."""
    return run("1.x", direction, requests, seconds, nbytes, requests / seconds, nbytes / seconds, latency)


def printed(layout, requests, seconds, iops, rate, latency):
    """0.x/0.9 summary: ioping's own iops and rate as printed; seconds = its run time."""
    return run(layout, "read", requests, seconds, None, iops, rate, latency)


def raw(requests, time_ns, size, latency):
    """1.x raw line: ops/s = valid / time; bytes = valid x size (size = printed rate / iops)."""
    seconds = time_ns / S
    return run("raw-1.x", "read", requests, seconds, requests * size, requests / seconds,
               requests * size / seconds, latency)


NONE = (None, None, None, None)

CASES = [
    ("ioping13-c10-dir.txt", [
        summary("read", 9, 4.60, 36 * KIB, (73.9 * US, 510.8 * MS, 4.60 * S, 1.44 * S))]),
    ("ioping13-c10-device.txt", [
        summary("read", 9, 987.0e-6, 36 * KIB, (29.4 * US, 109.7 * US, 143.9 * US, 37.9 * US))]),
    ("ioping13-c10-quiet.txt", [
        summary("read", 9, 0.1988, 36 * KIB, (66.1 * US, 22.1 * MS, 197.5 * MS, 62.0 * MS))]),
    ("ioping13-c10-batch.txt", [raw(9, 1700863, 4096, (119285, 188985, 300626, 62058))]),
    ("ioping13-rate-device.txt", [
        summary("read", 930, 3.09, 3806331, (10.7 * US, 3.33 * MS, 99.1 * MS, 17.7 * MS))]),  # 3.63 MiB
    ("ioping13-rate-batch.txt", [raw(929, 3095364139, 4096, (10726, 3331931, 99094855, 17704869))]),
    ("ioping13-rate-sequential.txt", [
        summary("read", 240, 3.00, 60 * MIB, (166.6 * US, 12.5 * MS, 103.9 * MS, 31.2 * MS))]),
    ("ioping13-rate-tmpfs-mega.txt", [  # "3.34 M requests", "12.7 GiB read"
        summary("read", 3340000, 2.50, 13636521165, (350.0, 748.0, 444.6 * US, 947.0))]),
    ("ioping13-write-direct.txt", [
        summary("write", 9, 3.71e-3, 36 * KIB, (134.0 * US, 411.8 * US, 1.94 * MS, 540.9 * US))]),
    ("ioping13-period-requests.txt", [
        summary("read", 19, 2.77e-3, 76 * KIB, (98.9 * US, 145.8 * US, 175.0 * US, 19.2 * US))]),
    ("ioping13-period-batch.txt", [raw(19, 2995948, 4096, (65258, 157681, 503997, 87641))]),
    ("ioping13-pingpong.txt", [
        summary("mixed", 9, 1.76e-3, 36 * KIB, (93.6 * US, 195.7 * US, 246.7 * US, 46.1 * US))]),
    ("ioping13-too-slow.txt", [
        summary("read", 2, 178.3e-6, 8 * KIB, (87.7 * US, 89.1 * US, 90.5 * US, 1.39 * US))]),
    ("ioping13-error-nonexistent.txt", [
        run(None, None, None, None, None, None, None, NONE,
            error='ioping: stat "/tmp/dpx/nonexistent" failed: No such file or directory')]),
    ("ioping13-error-write-device.txt", [
        run(None, None, None, None, None, None, None, NONE, error="ioping: think twice, then use -WWW to shred this target")]),
    ("public-ioping0x-readme-three-runs.txt", [
        printed("0.x", 5, 4.794, 364.0, 1.4 * MIB, (0.2 * MS, 2.8 * MS, 12.7 * MS, 5.0 * MS)),
        printed("0.x", 186, 3.0046, 62.0, 0.2 * MIB, (6.4 * MS, 16.0 * MS, 26.8 * MS, 4.7 * MS)),
        printed("0.x", 837, 3.0041, 292.0, 72.9 * MIB, (2.0 * MS, 3.4 * MS, 28.9 * MS, 2.0 * MS)),
    ]),
    ("public-ioping09-proliant-rate-four-runs.txt", [
        printed("0.9", 220, 3.01, 73.0, 292.9 * KIB, (3.89 * MS, 13.7 * MS, 21.9 * MS, 3.88 * MS)),
        printed("0.9", 1420, 3.00, 479.0, 119.9 * MIB, (1.16 * MS, 2.08 * MS, 26.8 * MS, 901 * US)),
        printed("0.9", 101100, 3.00, 37600.0, 146.7 * MIB, (19 * US, 26 * US, 5.68 * MS, 22 * US)),
        printed("0.9", 9180, 3.00, 3190.0, 797.5 * MIB, (277 * US, 313 * US, 6.74 * MS, 83 * US)),
    ]),
    ("public-ioping1x-lkml-rate-two-cpus.txt", [  # 276.3 MiB, 314.5 MiB: bytes as printed, rounded to the byte
        summary("read", 70700, 2.97, 289721549, (33.1 * US, 41.9 * US, 87.9 * MS, 452.6 * US)),
        summary("read", 80500, 2.96, 329777152, (33.2 * US, 36.8 * US, 89.2 * US, 2.00 * US)),
    ]),
    ("public-ioping1x-script-read-write.txt", [
        summary("read", 19, 6.40e-3, 76 * KIB, (244.1 * US, 336.7 * US, 432.6 * US, 48.6 * US)),
        summary("write", 19, 2.99e-3, 76 * KIB, (131.8 * US, 157.6 * US, 185.3 * US, 13.0 * US)),
    ]),
    # Annotated request lines (issue 17). ioping 1.3 counts a request unless it is (warmup), (too fast) or
    # (too slow); (fast) and (slow) ones are counted. 76 KiB = 19 x 4096 = 77824 B; 19 / 9.28 ms = 2047.4 iops.
    ("ioping13-warmup-fast-slow.txt", [
        summary("read", 19, 9.28e-3, 76 * KIB, (55.9 * US, 488.3 * US, 6.66 * MS, 1.46 * MS))]),
    ("ioping13-warmup2-too-slow.txt", [  # 20 lines - 2 warmup - 4 too slow = 14; 56 KiB = 14 x 4096
        summary("read", 14, 2.66e-3, 56 * KIB, (121.1 * US, 190.2 * US, 258.5 * US, 46.1 * US))]),
    ("ioping13-write-too-slow.txt", [  # 12 lines - 1 warmup - 6 too slow = 5; 20 KiB = 5 x 4096
        summary("write", 5, 1.91e-3, 20 * KIB, (322.3 * US, 382.2 * US, 446.3 * US, 53.0 * US))]),
    ("ioping13-cached-too-fast.txt", [  # 12 lines - 1 warmup - 1 too fast = 10; 40 KiB = 10 x 4096
        summary("read", 10, 59.4e-6, 40 * KIB, (4.58 * US, 5.94 * US, 7.70 * US, 978.0))]),
    # 15 lines - 3 warmup - 12 too slow = 0 counted: no rate (0 / 0 s) and no latency (ioping prints 0 ns for none)
    ("ioping13-write-all-too-slow.txt", [run("1.x", "write", 0, 0.0, 0, None, None, NONE)]),
]


def approx(value):
    return None if value is None else pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    runs = ioping.parse(fixture(name))
    assert len(runs) == len(expected)
    for index, (found, want) in enumerate(zip(runs, expected)):
        assert found.index == index
        assert (found.layout, found.direction, found.error) == (want["layout"], want["direction"], want["error"])
        assert (found.requests, found.seconds, found.bytes) == (want["requests"], approx(want["seconds"]),
                                                                want["nbytes"])
        assert (found.iops, found.bytes_per_s) == (approx(want["iops"]), approx(want["rate"]))
        assert (found.min_ns, found.avg_ns, found.max_ns, found.mdev_ns) == tuple(approx(v) for v in want["latency"])


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_record_latency_of_every_fixture(name, expected):
    """min, avg -> mean, max and mdev -> stdev, in ns, in the direction ioping tested; no percentiles."""
    _tool, results = parse_output(fixture(name), "ioping")
    assert len(results) == len(expected)
    for result, want in zip(results, expected):
        latency_ns = result["metrics"]["latency_ns"]
        if want["direction"] not in ("read", "write") or want["latency"] == NONE:
            assert latency_ns == {"read": None, "write": None, "sync": None}
            continue
        low, avg, high, mdev = want["latency"]
        other = "write" if want["direction"] == "read" else "read"
        assert latency_ns[other] is None
        assert list(latency_ns[want["direction"]]) == LATENCY_KEYS
        assert latency_ns[want["direction"]] == {
            "mean": approx(avg), "min": approx(low), "p50": None, "p95": None, "p99": None, "p99_9": None, "p99_99": None,
            "max": approx(high), "stdev": approx(mdev)}


def test_wall_time_and_generated_requests_of_1x():
    (found,) = ioping.parse(fixture("ioping13-c10-dir.txt"))
    assert (found.generated, found.wall_seconds, found.request_size) == (10, 12.6, 4096)
    assert found.printed_iops == 1  # ioping truncates: 9 / 4.60 s = 1.96
    assert found.iops == pytest.approx(9 / 4.60)
    (slow,) = ioping.parse(fixture("ioping13-too-slow.txt"))
    assert (slow.too_slow, slow.generated) == (7, 10)
    assert "7 request(s) too slow (outside -t/-T) are not in the figures" in slow.warnings


# (fixture, request lines, {annotation: lines}): what ioping 1.3 printed after each request's time.
ANNOTATIONS = [
    ("ioping13-warmup-fast-slow.txt", 20, {"warmup": 1, "fast": 6, "slow": 1}),
    ("ioping13-warmup2-too-slow.txt", 20, {"warmup": 2, "too slow": 4}),
    ("ioping13-write-too-slow.txt", 12, {"warmup": 1, "too slow": 6}),
    ("ioping13-write-all-too-slow.txt", 15, {"warmup": 3, "too slow": 12}),
    ("ioping13-cached-too-fast.txt", 12, {"warmup": 1, "too fast": 1}),
    ("ioping13-too-slow.txt", 10, {"warmup": 1, "too slow": 7}),
]


@pytest.mark.parametrize(("name", "lines", "notes"), ANNOTATIONS, ids=[case[0] for case in ANNOTATIONS])
def test_annotated_request_lines_are_counted_as_ioping_counts_them(name, lines, notes):
    (found,) = ioping.parse(fixture(name))
    assert (found.request_lines, found.annotations) == (lines, notes)
    # counted = lines - warmup - too fast - too slow: the summary's own count, so no disagreement warning
    assert found.requests == lines - notes.get("warmup", 0) - notes.get("too fast", 0) - notes.get("too slow", 0)
    assert not [text for text in found.warnings if "request lines" in text], found.warnings


def test_counted_request_times_add_up_to_the_completed_time():
    """The times of the counted lines (fast and slow included) sum to ioping's "completed in" time:
    79.3 + 199.4 + 313.8 + 105.8 + 208.9 + 219.1 + 85.2 + 222.2 + 206.6 + 92.7 + 228.4 + 167.2 + 98.1 + 6660
    + 57.5 + 58.5 + 55.9 + 135.6 + 82.8 = 9277.0 us; printed "19 requests completed in 9.28 ms"."""
    (found,) = ioping.parse(fixture("ioping13-warmup-fast-slow.txt"))
    assert found.counted_request_ns == pytest.approx(9277.0 * US)
    assert found.seconds == 9.28e-3
    # 121.1 + ... (14 counted lines) = 2663.1 us; printed 2.66 ms. The warmup and too-slow lines are not in it.
    (other,) = ioping.parse(fixture("ioping13-warmup2-too-slow.txt"))
    assert other.counted_request_ns == pytest.approx(2663.1 * US)


def test_slow_requests_stay_in_the_figures_with_a_warning():
    (found,) = ioping.parse(fixture("ioping13-warmup-fast-slow.txt"))
    assert found.max_ns == 6.66 * MS  # the (slow) request is ioping's max: it is counted
    assert ("1 request(s) ioping marked (slow), over twice the running average (1.3; 1.2: the top 5% of the "
            "range so far): counted in the figures, as ioping counts them") in found.warnings


def test_request_lines_that_disagree_with_the_summary_are_a_warning():
    # Drop the (warmup) note: the lines now say 20 counted requests, ioping's summary says 19.
    text = fixture("ioping13-warmup-fast-slow.txt").replace(" (warmup)", "", 1)
    (found,) = ioping.parse(text)
    assert found.requests == 19  # the statistics block stays the source of the figures
    assert ("request lines say 20 counted requests (20 lines - 0 warmup - 0 too fast - 0 too slow), the "
            "statistics block 19: the statistics block is used") in found.warnings


def test_no_counted_request_gives_no_latency():
    (found,) = ioping.parse(fixture("ioping13-write-all-too-slow.txt"))
    assert (found.min_ns, found.avg_ns, found.max_ns, found.mdev_ns) == (None, None, None, None)
    assert ("no request counted (3 warmup, 12 too slow): ioping's 0 ns latencies and 0 iops are not figures"
            in found.warnings)
    _tool, (result,) = parse_output(fixture("ioping13-write-all-too-slow.txt"), "ioping")
    assert result["metrics"]["write_iops"] is None and result["metrics"]["latency_ns"]["write"] is None


def test_request_lines_without_a_statistics_block_say_the_output_was_cut():
    text = "".join(fixture("ioping13-warmup-fast-slow.txt").splitlines(True)[:20])
    with pytest.raises(ParseError) as caught:
        ioping.parse(text)
    assert "20 request line(s) but no statistics block (the output was cut before ioping ended)" in str(caught.value)


def test_raw_line_gives_the_exact_request_size_and_wall_time():
    (found,) = ioping.parse(fixture("ioping13-rate-batch.txt"))
    assert (found.request_size, found.generated, found.wall_seconds) == (4096, 930, 3.097771061)
    assert found.printed_bytes_per_s == 1229317
    assert found.bytes_per_s == pytest.approx(1229317, abs=0.5)  # ioping's %.0f of the same quotient


def test_period_lines_are_replaced_by_the_total():
    (found,) = ioping.parse(fixture("ioping13-period-batch.txt"))
    assert found.warnings[0] == "3 periodic raw line(s) (ioping -p) before the total line not used"
    (summary_run,) = ioping.parse(fixture("ioping13-period-requests.txt"))
    assert "3 periodic raw line(s) (ioping -p) not used: the statistics block is the total" in summary_run.warnings


def test_period_lines_without_a_total_are_one_record_each():
    text = "\n".join(fixture("ioping13-period-batch.txt").splitlines()[:3]) + "\n"
    runs = ioping.parse(text)
    assert [found.requests for found in runs] == [5, 5, 5]


def test_request_lines_of_one_run_do_not_leak_into_the_next():
    first, second, third = ioping.parse(fixture("public-ioping0x-readme-three-runs.txt"))
    assert (first.request_size, second.request_size, third.request_size) == (4096, None, None)
    assert "read assumed" not in " ".join(first.warnings)
    assert "ioping output does not say the direction: read assumed (ioping reads unless -W)" in second.warnings


def test_direction_of_raw_output_from_argv_or_the_caller():
    text = fixture("ioping13-c10-batch.txt")
    assert ioping.parse(text, ["ioping", "-B", "-W", "-c", "10", "/srv"])[0].direction == "write"
    assert ioping.parse(text, ["ioping", "-BG", "/srv"])[0].direction == "mixed"
    assert ioping.parse(text, None, "write")[0].direction == "write"
    plain = ioping.parse(text, ["/usr/bin/ioping", "-B", "-c", "10", "/srv"])[0]
    assert (plain.direction, plain.warnings) == ("read", [])  # ioping reads unless -W: certain from argv
    assert ioping.parse(text)[0].warnings == [
        "ioping output does not say the direction: read assumed (ioping reads unless -W)"]


def test_record_of_a_read_summary():
    tool, (result,) = parse_output(fixture("ioping13-c10-device.txt"))
    assert tool == "ioping"
    record = make_record(result, test="ioping_read")
    assert record["job"] == {"name": "/dev/loop3 (block device 1 GiB)", "index": 0, "groupid": None, "client": None}
    assert record["metrics"] == {
        "read_bytes_per_s": pytest.approx(36864 / 987.0e-6),
        "write_bytes_per_s": None,
        "read_iops": pytest.approx(9 / 987.0e-6),
        "write_iops": None,
        "fsyncs_per_s": None,
        "latency_ns": {"read": {"mean": pytest.approx(109.7e3), "min": pytest.approx(29.4e3), "p50": None,
                                "p95": None, "p99": None, "p99_9": None, "p99_99": None, "max": pytest.approx(143.9e3),
                                "stdev": pytest.approx(37.9e3)}, "write": None, "sync": None},
    }
    assert list(record["metrics"]["latency_ns"]["read"]) == LATENCY_KEYS
    assert (record["bytes"], record["seconds"], record["tool_version"]) == (36864, 987.0e-6, None)


def test_record_of_a_write_and_of_ping_pong():
    _tool, (result,) = parse_output(fixture("ioping13-write-direct.txt"), "ioping")
    assert result["metrics"]["write_iops"] == pytest.approx(9 / 3.71e-3)
    assert result["metrics"]["read_iops"] is None
    # min/avg/max/mdev = 134.0 us / 411.8 us / 1.94 ms / 540.9 us
    assert result["metrics"]["latency_ns"] == {"read": None, "write": {
        "mean": pytest.approx(411.8e3), "min": pytest.approx(134.0e3), "p50": None, "p95": None, "p99": None,
        "p99_9": None, "p99_99": None, "max": pytest.approx(1.94e6), "stdev": pytest.approx(540.9e3)}, "sync": None}
    _tool, (mixed,) = parse_output(fixture("ioping13-pingpong.txt"), "ioping")
    assert mixed["metrics"]["read_iops"] is mixed["metrics"]["write_iops"] is None
    assert mixed["metrics"]["latency_ns"] == {"read": None, "write": None, "sync": None}
    assert mixed["warnings"][-1] == "ioping alternated reads and writes (-G): figures not attributed to a direction"


def test_record_of_an_error():
    _tool, (result,) = parse_output(fixture("ioping13-error-nonexistent.txt"))
    assert result["error"] == 'ioping: stat "/tmp/dpx/nonexistent" failed: No such file or directory'
    assert result["metrics"]["read_iops"] is None


def test_detect_tool_recognises_every_ioping_fixture():
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".src.md"):
            assert detect.detect_tool(fixture(name)) == "ioping", name


def test_ping_is_not_ioping():
    text = ("--- 10.0.0.1 ping statistics ---\n5 packets transmitted, 5 received, 0% packet loss, time 4188ms\n"
            "rtt min/avg/max/mdev = 0.251/0.362/0.682/0.163 ms\n")
    with pytest.raises(ParseError):
        detect.detect_tool(text)
    with pytest.raises(ParseError):
        ioping.parse(text)


def test_every_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in names:
        if not name.endswith(".src.md"):
            assert os.path.splitext(name)[0] + ".src.md" in names, name


@pytest.mark.parametrize(
    ("text", "expected_in_message"),
    [
        ("", "ioping output: expected an ioping statistics block"),
        ("hello\n", "offending line 1: 'hello'"),
        ("--- /tmp (ext4 /dev/sda1) ioping statistics ---\n", "'N requests completed in T, ...' after the statistics"),
        ("--- /tmp (ext4 /dev/sda1) ioping statistics ---\n9 requests completed in 1.2 fortnights, 36 KiB read, "
         "1 iops, 1 KiB/s\n", "offending line 2"),
        ("--- /tmp (ext4 /dev/sda1) ioping statistics ---\n9 requests completed in 1.2 ms, 36 KiB read, 7.5 k iops, "
         "28.9 MiB/s\ngenerated 10 requests in 9.00 s, 40 KiB, 1 iops, 4.44 KiB/s\n",
         "'min/avg/max/mdev = ...' after the summary"),
        ("--- /tmp (ext4 /dev/sda1) ioping statistics ---\n9 requests completed in 1.2 ms, 36 KiB read, 7.5 k iops, "
         "28.9 MiB/s\nmin/avg/max/mdev = 1 furlong / 2 us / 3 us / 4 us\n", "offending line 3"),
    ],
)
def test_malformed_input_raises_parse_error_naming_the_line(text, expected_in_message):
    with pytest.raises(ParseError) as caught:
        ioping.parse(text)
    assert expected_in_message in str(caught.value)
    assert caught.value.tool == "ioping"
