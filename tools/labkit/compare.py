"""Compare a diskproof report with the speeds the lab configured: the lab's own accuracy check.

The truth of a test is the limit that binds it, not always the nominal one. A lab disk has up to
four throttles (read/write bytes per second, read/write IOPS) and the kernel applies each of them,
so a test moving R-byte requests in direction D cannot go faster than either

    bytes test (B/s):  min(D bytes/s limit,  D IOPS limit x R)
    IOPS test:         min(D IOPS limit,     D bytes/s limit / R)

R is the request size of the test's definition: the block size in the record's command (dd
``bs=``, fio ``--bs=`` or ``bs=`` in its job file, sysbench ``--file-block-size=``), else its
``params.block_size``, else the catalog's default (REQUEST_BYTES, for a result that is missing).
It is never taken from what the device saw: if the kernel splits or merges requests, the figure
misses the truth, and the reason is shown beside it (benchmarks/accuracy.py prints the request
size the throttle counted), never folded into the truth. Example: 1 MiB sequential reads on a disk
of 200 MiB/s and 100 IOPS are bound by the IOPS limit at 100 MiB/s.

fio_mixed_70_30 reports its reads: with a read share m (``rwmixread``, 70), reads can run no faster
than the read cap nor than the write cap x m / (100 - m), because fio keeps the mix; with equal
read and write limits the read limit binds (200 IOPS: reads 200, writes 85.7).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

MIB = 1048576

# test id -> (metric in the result record, field of the lab disk it is measured against, unit label).
# The field names the direction and the nominal limit; the truth is the binding limit (module docstring).
# Latency, commit-rate and bonnie++ figures have no single configured truth: docs/benchmarks.md
# reports and explains them.
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

# The request size of each test as the catalog defines it (docs/tests.md, plugins/module_utils/_plan.py
# defaults): used only when there is no record to read it from.
REQUEST_BYTES: dict[str, int] = {
    "dd_seq_write": MIB, "dd_seq_write_direct": MIB, "dd_seq_read": MIB, "zcav_sweep": MIB,
    "dd_block_sweep_4k": 4096, "dd_block_sweep_100k": 102400, "dd_block_sweep_1m": MIB,
    "dd_block_sweep_10m": 10 * MIB,
    "fio_seq_write": MIB, "fio_seq_read": MIB,
    "fio_rand_read": 4096, "fio_rand_read_qd1": 4096, "fio_rand_write": 4096, "fio_rand_write_qd1": 4096,
    "fio_mixed_70_30": 4096, "sysbench_rndrd": 8192,
}

# Tests whose figure is one direction of a fixed mix: test -> default read share in percent.
MIXED_READ_PERCENT: dict[str, int] = {"fio_mixed_70_30": 70}

# dd: K/M/G/T are powers of 1024 (as KiB...), KB/MB/... powers of 1000, c/w/b 1/2/512 (coreutils dd).
# fio (kb_base=1024, its default): k/m/g/t and KiB/MiB/... are powers of 1024.
_DD_UNITS = {"": 1, "c": 1, "w": 2, "b": 512, "k": 1 << 10, "kib": 1 << 10, "kb": 1000, "m": MIB, "mib": MIB,
             "mb": 10 ** 6, "g": 1 << 30, "gib": 1 << 30, "gb": 10 ** 9, "t": 1 << 40, "tib": 1 << 40, "tb": 10 ** 12}
_FIO_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": MIB, "mib": MIB, "g": 1 << 30, "gib": 1 << 30}
_SIZE_RE = re.compile(r"\s*(\d+)\s*([a-zA-Z]*)\s*")


@dataclass(frozen=True)
class Truth:
    """The configured truth of one figure: the binding limit, which limit it is, and the request size used."""

    value: float | None
    bound_by: str | None
    request_bytes: int | None
    request_source: str | None  # "record" (command, job file or params) or "catalog"


@dataclass(frozen=True)
class Comparison:
    host: str
    device: str | None
    test: str
    configured: float | None
    measured: float | None
    bound_by: str | None = None
    request_bytes: int | None = None
    request_source: str | None = None

    @property
    def relative_error(self) -> float | None:
        if not self.configured or self.measured is None:
            return None
        return (self.measured - self.configured) / self.configured


def parse_size(text: str, units: Mapping[str, int]) -> int | None:
    """Bytes from a tool's size argument ("1048576", "1M", "4k"); None for anything else."""
    match = _SIZE_RE.fullmatch(text)
    if not match or match.group(2).lower() not in units:
        return None
    return int(match.group(1)) * units[match.group(2).lower()]


def _fio_bs(value: str, direction: str) -> int | None:
    # bs=R,W[,T]: one size per direction (fio); a single size applies to both.
    parts = value.split(",")
    part = parts[1] if direction == "write" and len(parts) > 1 and parts[1] else parts[0]
    return parse_size(part, _FIO_UNITS)


def record_request_bytes(record: Mapping[str, Any], direction: str) -> int | None:
    """The request size the record says the test used, in bytes (None when it does not say).

    The command is what ran, so it comes first: dd ``bs=``, fio ``--bs=`` or the job file's ``bs=``,
    sysbench ``--file-block-size=``; then ``params.block_size``.
    """
    command = [str(arg) for arg in record.get("command") or []]
    tool = record.get("tool") or (command[0].rsplit("/", 1)[-1] if command else None)
    found: int | None = None
    for arg in command:
        if tool == "dd" and arg.startswith("bs="):
            found = parse_size(arg[3:], _DD_UNITS)
        elif tool == "fio" and arg.startswith("--bs="):
            found = _fio_bs(arg[5:], direction)
        elif tool == "sysbench" and arg.startswith("--file-block-size="):
            found = parse_size(arg[len("--file-block-size="):], _FIO_UNITS)
    if found is None and tool == "fio" and isinstance(record.get("job_file"), str):
        for line in record["job_file"].splitlines():
            key, _sep, value = line.partition("=")
            if key.strip() in ("bs", "blocksize") and value.strip():
                found = _fio_bs(value.strip(), direction)
    if found:
        return found
    # A size the parser cannot read (dd's 1Mx2 forms, fio ranges): the block size the plan recorded.
    block_size = (record.get("params") or {}).get("block_size")
    return block_size if isinstance(block_size, int) and not isinstance(block_size, bool) and block_size > 0 else None


def record_read_percent(record: Mapping[str, Any], default: int) -> int:
    """``rwmixread`` of a fio record (command or job file), else the test's default."""
    texts = [str(arg).lstrip("-") for arg in record.get("command") or []]
    if isinstance(record.get("job_file"), str):
        texts += [line.strip() for line in record["job_file"].splitlines()]
    for text in texts:
        key, _sep, value = text.partition("=")
        if key.strip() == "rwmixread" and value.strip().isdigit() and 0 < int(value) < 100:
            return int(value)
    return default


def binding_limit(disk: Mapping[str, Any], direction: str, unit: str,
                  request: int | None) -> tuple[float | None, str | None]:
    """The tighter of a direction's two limits, in the test's unit, and its name ("write B/s", "read IOPS")."""
    bytes_limit, iops_limit = disk.get(f"{direction}_bytes_per_s"), disk.get(f"{direction}_iops")
    candidates: list[tuple[float, str]] = []
    if unit == "B/s":
        if bytes_limit:
            candidates.append((float(bytes_limit), f"{direction} B/s"))
        if iops_limit and request:
            candidates.append((float(iops_limit) * request, f"{direction} IOPS"))
    else:
        if iops_limit:
            candidates.append((float(iops_limit), f"{direction} IOPS"))
        if bytes_limit and request:
            candidates.append((float(bytes_limit) / request, f"{direction} B/s"))
    if not candidates:
        return None, None
    value = min(candidate for candidate, _name in candidates)
    # Equal limits (200 MiB/s and 200 IOPS x 1 MiB) bind together: name both.
    names = [name for candidate, name in candidates if abs(candidate - value) <= 1e-9 * value]
    return value, " = ".join(names)


def truth_of(test: str, disk: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> Truth:
    """The configured truth of ``test`` on ``disk``: the binding limit (module docstring)."""
    metric, truth_field, unit = TRUTH_FIELDS[test]
    direction = truth_field.split("_", 1)[0]
    request = record_request_bytes(record, direction) if record else None
    source = "record" if request else None
    if request is None and test in REQUEST_BYTES:
        request, source = REQUEST_BYTES[test], "catalog"
    value, bound = binding_limit(disk, direction, unit, request)
    if test in MIXED_READ_PERCENT and direction == "read" and unit == "IOPS":
        share = record_read_percent(record or {}, MIXED_READ_PERCENT[test])
        write_request = record_request_bytes(record, "write") if record else None
        write_cap, write_bound = binding_limit(disk, "write", unit, write_request or request)
        if write_cap is not None:
            via_writes = write_cap * share / (100 - share)
            if value is None or via_writes < value * (1 - 1e-9):
                value, bound = via_writes, f"{write_bound} x {share}/{100 - share}"
    return Truth(value, bound, request, source)


def lab_disks_by_host(inventory: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    hosts = inventory["all"]["children"]["lab"]["hosts"]
    return {name: list(host_vars.get("diskproof_lab_disks") or []) for name, host_vars in hosts.items()}


def compare(report: Mapping[str, Any], inventory: Mapping[str, Any],
            tests: Sequence[str] | None = None) -> list[Comparison]:
    """One comparison per (host, disk, test) the lab knows the truth of; missing results count as None.

    ``tests``: the tests every disk must have; default: every test with a truth that any host ran.
    """
    disks = lab_disks_by_host(inventory)
    records: dict[tuple[str, str | None, str], Mapping[str, Any]] = {}
    for entry in report.get("results", []):
        record = entry.get("record") or {}
        test = entry.get("test")
        if test in TRUTH_FIELDS and record:
            records[(entry["host"], entry.get("device"), test)] = record
    tests_run = set(tests) if tests is not None else {entry.get("test") for entry in report.get("results", [])}
    rows = []
    for host in sorted(disks):
        for disk in disks[host]:
            for test, (metric, _truth_field, _unit) in TRUTH_FIELDS.items():
                if test not in tests_run:
                    continue
                record = records.get((host, disk.get("device"), test))
                truth = truth_of(test, disk, record)
                value = (record.get("metrics") or {}).get(metric) if record and not record.get("error") else None
                measured = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                rows.append(Comparison(host, disk.get("device"), test, truth.value, measured, truth.bound_by,
                                       truth.request_bytes, truth.request_source))
    return rows


def format_table(rows: list[Comparison], tolerance: float) -> tuple[str, bool]:
    """A table of configured (binding) vs measured figures, and whether every one is within tolerance."""
    layout = "%-12s %-7s %-14s %14s %-30s %14s %8s  %s"
    lines = [(layout % ("host", "device", "test", "configured", "bound by", "measured", "error", "")).rstrip()]
    all_within = True
    for row in rows:
        unit = TRUTH_FIELDS[row.test][2]
        error = row.relative_error
        within = error is not None and abs(error) <= tolerance
        all_within = all_within and within
        lines.append(layout % (
            row.host, row.device or "-", row.test, _figure(row.configured, unit), bound_text(row),
            _figure(row.measured, unit), "-" if error is None else "%+.1f%%" % (error * 100),
            "ok" if within else "OUT OF TOLERANCE (±%.0f%%)" % (tolerance * 100)))
    return "\n".join(lines), all_within


def bound_text(row: Comparison) -> str:
    """"write IOPS x 1 MiB": which limit is the truth, with the request size it was computed from."""
    if not row.bound_by:
        return "-"
    size = _size(row.request_bytes) if row.request_bytes else "?"
    return "%s (%s%s)" % (row.bound_by, size, ", catalog" if row.request_source == "catalog" else "")


def _size(count: int) -> str:
    for unit, factor in (("MiB", MIB), ("KiB", 1024)):
        if count % factor == 0:
            return "%d %s" % (count // factor, unit)
    return "%d B" % count


def _figure(value: float | None, unit: str) -> str:
    if value is None:
        return "missing"
    if unit == "B/s":
        return "%.2f MiB/s" % (value / 1048576)
    return "%.1f IOPS" % value
