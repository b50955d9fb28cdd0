"""tools/lab compare: configured vs measured, with missing and errored results counted as failures, and the
truth of each test as the limit that binds it (bytes/s or IOPS x the request size of the test's definition)."""
from __future__ import annotations

import json
import os

import pytest

from labkit.compare import TRUTH_FIELDS, compare, format_table, record_request_bytes, truth_of

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "report",
                       "lab-accm-matrix-excerpt.json")

MIB = 1048576

INVENTORY = {"all": {"children": {"lab": {"hosts": {
    "n01": {"diskproof_lab_disks": [{"device": "loop2", "read_bytes_per_s": 32 * MIB, "write_bytes_per_s": 32 * MIB,
                                     "read_iops": 400, "write_iops": 400}]},
    "n02": {"diskproof_lab_disks": [{"device": "loop3", "read_bytes_per_s": 16 * MIB, "write_bytes_per_s": 16 * MIB,
                                     "read_iops": 200, "write_iops": 200}]},
}}}}}


def _entry(host, device, test, error=None, **metrics):
    return {"host": host, "device": device, "test": test, "record": {"error": error, "metrics": metrics}}


def test_every_figure_within_tolerance():
    report = {"results": [
        _entry("n01", "loop2", "dd_seq_write", write_bytes_per_s=32 * MIB * 0.996),
        _entry("n01", "loop2", "dd_seq_read", read_bytes_per_s=32 * MIB),
        _entry("n01", "loop2", "fio_rand_read", read_iops=404.0),
        _entry("n02", "loop3", "dd_seq_write", write_bytes_per_s=16 * MIB * 0.998),
        _entry("n02", "loop3", "dd_seq_read", read_bytes_per_s=16 * MIB * 1.001),
        _entry("n02", "loop3", "fio_rand_read", read_iops=201.4),
    ]}
    rows = compare(report, INVENTORY)
    assert [(row.host, row.test, round(row.relative_error, 4)) for row in rows] == [
        ("n01", "dd_seq_write", -0.004), ("n01", "dd_seq_read", 0.0), ("n01", "fio_rand_read", 0.01),
        ("n02", "dd_seq_write", -0.002), ("n02", "dd_seq_read", 0.001), ("n02", "fio_rand_read", 0.007),
    ]
    table, all_within = format_table(rows, 0.05)
    assert all_within is True
    assert ("n01          loop2   dd_seq_write      32.00 MiB/s write B/s (1 MiB, catalog)        "
            "31.87 MiB/s    -0.4%  ok") in table.splitlines()


def test_out_of_tolerance_missing_and_errored_results_fail():
    report = {"results": [
        _entry("n01", "loop2", "dd_seq_write", write_bytes_per_s=32 * MIB * 1.2),
        _entry("n01", "loop2", "dd_seq_read", error="dd: error reading: Input/output error", read_bytes_per_s=32 * MIB),
    ]}
    table, all_within = format_table(compare(report, INVENTORY), 0.05)
    assert all_within is False
    lines = table.splitlines()
    assert ("n01          loop2   dd_seq_write      32.00 MiB/s write B/s (1 MiB, catalog)        "
            "38.40 MiB/s   +20.0%  OUT OF TOLERANCE (±5%)") in lines
    assert ("n01          loop2   dd_seq_read       32.00 MiB/s read B/s (1 MiB, catalog)         "
            "    missing        -  OUT OF TOLERANCE (±5%)") in lines
    # n01 fio_rand_read is not compared: no host ran it. n02 is missing both tests n01 ran.
    assert sum("missing" in line for line in lines) == 3
    demanded, _within = format_table(compare(report, INVENTORY, ["dd_seq_write", "dd_seq_read", "fio_rand_read"]), 0.05)
    assert sum("missing" in line for line in demanded.splitlines()) == 5


# --- the binding limit ---

def _disk(mib_per_s, iops):
    return {"device": "loop9", "read_bytes_per_s": mib_per_s * MIB, "write_bytes_per_s": mib_per_s * MIB,
            "read_iops": iops, "write_iops": iops}


def _brief(truth):
    return truth.value, truth.bound_by, truth.request_bytes


def _dd(bs):
    return {"tool": "dd", "command": ["dd", "if=/dev/zero", "of=/x/f", "bs=%s" % bs, "count=256", "oflag=direct"],
            "params": {"block_size": 4096}}


@pytest.mark.parametrize("mib_per_s, iops, truth_mib, bound", [
    (200, 100, 100, "write IOPS"),              # 100 x 1 MiB < 200 MiB/s: the IOPS limit binds
    (200, 200, 200, "write B/s = write IOPS"),  # equal: both bind
    (50, 100, 50, "write B/s"),                 # 100 x 1 MiB > 50 MiB/s
    (25, 1000, 25, "write B/s"),
])
def test_a_bytes_test_is_bound_by_the_tighter_limit(mib_per_s, iops, truth_mib, bound):
    truth = truth_of("dd_seq_write_direct", _disk(mib_per_s, iops), _dd("1M"))
    assert (truth.value, truth.bound_by, truth.request_bytes, truth.request_source) == (
        truth_mib * MIB, bound, MIB, "record")


def test_an_iops_test_is_bound_by_bytes_only_when_its_requests_are_large_enough():
    record = {"tool": "fio", "command": ["fio", "--output-format=json", "/tmp/job.fio"],
              "job_file": "[global]\nrw=randread\n\n[fio_rand_read]\nbs=4096\niodepth=32\n"}
    # 4 KiB x 1000 IOPS = 3.9 MiB/s, far below the slowest matrix disk (25 MiB/s): the IOPS limit binds.
    assert _brief(truth_of("fio_rand_read", _disk(25, 1000), record)) == (1000, "read IOPS", 4096)
    # A 1 MiB/s disk at 1000 IOPS only passes 256 requests of 4 KiB per second: the bytes limit binds.
    assert _brief(truth_of("fio_rand_read", _disk(1, 1000), record)) == (256, "read B/s", 4096)


def test_the_mixed_test_reads_are_bound_by_the_read_limit_or_by_the_writes_that_keep_the_mix():
    record = {"tool": "fio", "command": ["fio", "/tmp/job.fio"], "job_file": "bs=4096\nrw=randrw\nrwmixread=70\n"}
    assert _brief(truth_of("fio_mixed_70_30", _disk(50, 200), record)) == (200, "read IOPS", 4096)
    slow_writes = dict(_disk(50, 200), write_iops=60)  # reads 70/30 x 60 = 140 < 200
    truth = truth_of("fio_mixed_70_30", slow_writes, record)
    assert (round(truth.value, 6), truth.bound_by) == (140, "write IOPS x 70/30")


@pytest.mark.parametrize("record, direction, expected", [
    (_dd("1M"), "write", MIB), (_dd("1048576"), "write", MIB), (_dd("100K"), "write", 102400),
    (_dd("1MB"), "write", 1000000), (_dd("1Mx2"), "write", 4096),  # unreadable: params.block_size
    ({"tool": "fio", "command": ["fio", "--name=x", "--bs=4k", "--rw=randread"]}, "read", 4096),
    ({"tool": "fio", "command": ["fio", "--bs=4k,64k"]}, "write", 65536),
    ({"tool": "fio", "command": ["fio", "job.fio"], "job_file": "[x]\nbs=1M\n"}, "read", MIB),
    ({"tool": "sysbench", "command": ["sysbench", "fileio", "--file-block-size=8192", "run"]}, "read", 8192),
    ({"tool": "ioping", "command": ["ioping"], "params": {"block_size": 4096}}, "read", 4096),  # params: fallback
    ({"tool": "dd", "command": ["dd", "if=/a", "of=/b"]}, "read", None),
])
def test_the_request_size_comes_from_what_ran(record, direction, expected):
    assert record_request_bytes(record, direction) == expected


# --- real records from the matrix lab (tests/fixtures/report/lab-accm-matrix-excerpt.src.md) ---

def _real():
    with open(FIXTURE, encoding="utf-8") as handle:
        data = json.load(handle)
    return data["report"], data["inventory"]


def test_real_records_get_the_binding_limit_with_the_request_size_they_ran_with():
    report, inventory = _real()
    rows = {(row.host, row.test): row for row in compare(report, inventory)}
    assert len(rows) == 15
    seq = {(host, test): (rows[(host, test)].configured / MIB, rows[(host, test)].bound_by)
           for host in ("accm-b200-i100", "accm-b200-i200", "accm-b50-i100")
           for test in ("dd_seq_write_direct", "fio_seq_read")}
    assert seq == {
        ("accm-b200-i100", "dd_seq_write_direct"): (100, "write IOPS"),
        ("accm-b200-i100", "fio_seq_read"): (100, "read IOPS"),
        ("accm-b200-i200", "dd_seq_write_direct"): (200, "write B/s = write IOPS"),
        ("accm-b200-i200", "fio_seq_read"): (200, "read B/s = read IOPS"),
        ("accm-b50-i100", "dd_seq_write_direct"): (50, "write B/s"),
        ("accm-b50-i100", "fio_seq_read"): (50, "read B/s"),
    }
    sizes = {test: (row.request_bytes, row.request_source) for (_host, test), row in rows.items()}
    assert sizes == {"dd_seq_write_direct": (MIB, "record"), "fio_seq_read": (MIB, "record"),
                     "fio_rand_write": (4096, "record"), "fio_mixed_70_30": (4096, "record"),
                     "sysbench_rndrd": (8192, "record")}
    hosts = inventory["all"]["children"]["lab"]["hosts"]
    disks = {host: host_vars["diskproof_lab_disks"][0] for host, host_vars in hosts.items()}
    for (host, test), row in rows.items():
        metric, field, unit = TRUTH_FIELDS[test]
        entry = next(e for e in report["results"] if (e["host"], e["test"]) == (host, test))
        assert row.measured == entry["record"]["metrics"][metric]  # the figure is the record's, untouched
        if unit == "IOPS":
            direction = field.split("_")[0]
            # the bytes limit cannot bind an IOPS test here: the IOPS limit x the request is far below it
            assert disks[host][direction + "_iops"] * row.request_bytes < disks[host][direction + "_bytes_per_s"] / 2
            assert (row.configured, row.bound_by) == (disks[host][field], direction + " IOPS")


def test_real_misses_stay_visible():
    report, inventory = _real()
    rows = compare(report, inventory)
    table, all_within = format_table(rows, 0.03)
    assert all_within is False
    out = sorted((line.split()[0], line.split()[2]) for line in table.splitlines()[1:] if "OUT OF TOLERANCE" in line)
    assert ("accm-b200-i100", "fio_seq_read") in out and ("accm-b200-i200", "fio_seq_read") in out
    # The kernel split the 1 MiB reads in two and the IOPS throttle counted both halves: about half the truth.
    halved = [row.relative_error for row in rows if row.test == "fio_seq_read" and row.host != "accm-b50-i100"]
    assert len(halved) == 2 and all(-0.55 < error < -0.45 for error in halved)
