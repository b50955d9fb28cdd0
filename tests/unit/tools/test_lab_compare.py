"""tools/lab compare: configured vs measured, with missing and errored results counted as failures."""
from __future__ import annotations

from labkit.compare import compare, format_table

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
    assert "n01          loop2   dd_seq_write      32.00 MiB/s    31.87 MiB/s    -0.4%  ok" in table.splitlines()


def test_out_of_tolerance_missing_and_errored_results_fail():
    report = {"results": [
        _entry("n01", "loop2", "dd_seq_write", write_bytes_per_s=32 * MIB * 1.2),
        _entry("n01", "loop2", "dd_seq_read", error="dd: error reading: Input/output error", read_bytes_per_s=32 * MIB),
    ]}
    table, all_within = format_table(compare(report, INVENTORY), 0.05)
    assert all_within is False
    lines = table.splitlines()
    assert "n01          loop2   dd_seq_write      32.00 MiB/s    38.40 MiB/s   +20.0%  OUT OF TOLERANCE (±5%)" in lines
    assert "n01          loop2   dd_seq_read       32.00 MiB/s        missing        -  OUT OF TOLERANCE (±5%)" in lines
    # n01 fio_rand_read is not compared: no host ran it. n02 is missing both tests n01 ran.
    assert sum("missing" in line for line in lines) == 3
    demanded, _within = format_table(compare(report, INVENTORY, ["dd_seq_write", "dd_seq_read", "fio_rand_read"]), 0.05)
    assert sum("missing" in line for line in demanded.splitlines()) == 5
