"""Compare a diskproof report with the speeds the lab configured: the lab's own accuracy check."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# test id -> (metric in the result record, field of the lab disk it must match, unit label).
# fio_mixed_70_30 is bound by the read throttle (70 % of its I/Os are reads), so its reads must hit
# the read IOPS limit. Latency, commit-rate and bonnie++ figures have no single configured truth:
# docs/benchmarks.md reports and explains them.
TRUTH_FIELDS: dict[str, tuple[str, str, str]] = {
    "dd_seq_write": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_seq_write_direct": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_block_sweep_4k": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_block_sweep_100k": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_block_sweep_1m": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_block_sweep_10m": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "dd_seq_read": ("read_bytes_per_s", "read_bytes_per_s", "B/s"),
    "zcav_sweep": ("read_bytes_per_s", "read_bytes_per_s", "B/s"),
    "fio_seq_write": ("write_bytes_per_s", "write_bytes_per_s", "B/s"),
    "fio_seq_read": ("read_bytes_per_s", "read_bytes_per_s", "B/s"),
    "fio_rand_read": ("read_iops", "read_iops", "IOPS"),
    "fio_rand_read_qd1": ("read_iops", "read_iops", "IOPS"),
    "fio_rand_write": ("write_iops", "write_iops", "IOPS"),
    "fio_rand_write_qd1": ("write_iops", "write_iops", "IOPS"),
    "fio_mixed_70_30": ("read_iops", "read_iops", "IOPS"),
    "sysbench_rndrd": ("read_iops", "read_iops", "IOPS"),
}


@dataclass(frozen=True)
class Comparison:
    host: str
    device: str | None
    test: str
    configured: float | None
    measured: float | None

    @property
    def relative_error(self) -> float | None:
        if not self.configured or self.measured is None:
            return None
        return (self.measured - self.configured) / self.configured


def lab_disks_by_host(inventory: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    hosts = inventory["all"]["children"]["lab"]["hosts"]
    return {name: list(host_vars.get("diskproof_lab_disks") or []) for name, host_vars in hosts.items()}


def compare(report: Mapping[str, Any], inventory: Mapping[str, Any], tests: list[str] | None = None) -> list[Comparison]:
    """One comparison per (host, disk, test) the lab knows the truth of; missing results count as None.

    ``tests``: the tests every disk must have; default: every test with a truth that any host ran.
    """
    disks = lab_disks_by_host(inventory)
    measured: dict[tuple[str, str | None, str], float | None] = {}
    for entry in report.get("results", []):
        record = entry.get("record") or {}
        test = entry.get("test")
        if test in TRUTH_FIELDS and not record.get("error"):
            measured[(entry["host"], entry.get("device"), test)] = (record.get("metrics") or {}).get(TRUTH_FIELDS[test][0])
    tests_run = set(tests) if tests is not None else {entry.get("test") for entry in report.get("results", [])}
    rows = []
    for host in sorted(disks):
        for disk in disks[host]:
            for test, (_metric, truth_field, _unit) in TRUTH_FIELDS.items():
                if test not in tests_run:
                    continue
                rows.append(Comparison(host, disk.get("device"), test, disk.get(truth_field), measured.get((host, disk.get("device"), test))))
    return rows


def format_table(rows: list[Comparison], tolerance: float) -> tuple[str, bool]:
    """A table of configured vs measured figures, and whether every one is within tolerance."""
    lines = ["%-12s %-7s %-14s %14s %14s %8s  %s" % ("host", "device", "test", "configured", "measured", "error", "")]
    all_within = True
    for row in rows:
        unit = TRUTH_FIELDS[row.test][2]
        error = row.relative_error
        within = error is not None and abs(error) <= tolerance
        all_within = all_within and within
        lines.append("%-12s %-7s %-14s %14s %14s %8s  %s" % (
            row.host, row.device or "-", row.test,
            _figure(row.configured, unit), _figure(row.measured, unit),
            "-" if error is None else "%+.1f%%" % (error * 100),
            "ok" if within else "OUT OF TOLERANCE (±%.0f%%)" % (tolerance * 100)))
    return "\n".join(lines), all_within


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "missing"
    if unit == "B/s":
        return "%.2f MiB/s" % (value / 1048576)
    return "%.1f IOPS" % value
