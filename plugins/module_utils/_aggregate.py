# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet statistics and verdicts over diskproof result records (schema 1).

Pure Python (no Ansible imports) so pytest reaches it directly and the same records can be
re-judged outside a playbook run. The callback ``diskproof.fleet.report`` only collects records
and host outcomes, then calls ``build_report``.

Verdicts, one per record, plus one per host problem that left no record:

- ``error``: the record carries ``error`` (the tool failed; partial figures are not judged).
- ``not_measured``: the host was unreachable, or a task failed without producing a record, or
  the host produced no record at all, or a record has neither a throughput nor an IOPS figure.
- ``outlier``: the record's primary metric is more than ``outlier_fraction`` below the median of
  its peer group, judged only when the group has at least ``MIN_PEERS`` measured members.
- ``pass``: everything else (including groups too small to compare; the reason says so).

The primary metric of a record (``primary_metric``):

- IOPS when an IOPS figure exists and the test is random access (a word of the test id starts
  with "rand", e.g. ``fio_rand_read``, or ``params.rw``/``params.readwrite`` is a fio random
  pattern) or ``params.block_size`` is at most 64 KiB: small-block tests are bound by
  operations, not bytes.
- otherwise bytes per second.
- a record that measured both directions (mixed read/write) is judged on their sum.
"""
from __future__ import annotations

import re
import statistics
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

REPORT_SCHEMA = 1

VERDICT_ERROR = "error"
VERDICT_NOT_MEASURED = "not_measured"
VERDICT_OUTLIER = "outlier"
VERDICT_PASS = "pass"
# Worst first: no valid figure at all, then a figure that is too low, then fine.
VERDICTS = (VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_OUTLIER, VERDICT_PASS)

DEFAULT_OUTLIER_FRACTION = 0.15
# A median of two says nothing about which of the two is wrong.
MIN_PEERS = 3
SMALL_BLOCK_MAX_BYTES = 64 * 1024

METRIC_IOPS = "iops"
METRIC_BYTES_PER_S = "bytes_per_s"

HOST_OK = "ok"
HOST_FAILED = "failed"
HOST_UNREACHABLE = "unreachable"

# "fio_rand_read", "randwrite_4k", "random_read": "rand" at the start of a word of the test id.
_RANDOM_TEST_ID = re.compile(r"(^|[^a-z])rand", re.IGNORECASE)
# fio's own names for its random patterns (rw= / readwrite=).
_RANDOM_FIO_PATTERNS = frozenset(("randread", "randwrite", "randrw", "randtrim"))

GroupKey = Tuple[str, ...]


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------

def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (mean of the two middle values for an even count)."""
    if not values:
        raise ValueError("median of an empty sequence")
    return float(statistics.median(values))


def median_absolute_deviation(values: Sequence[float]) -> float:
    """Median of the absolute deviations from the median (unscaled MAD)."""
    center = median(values)
    return median([abs(value - center) for value in values])


def relative_deviation(value: float, reference: float) -> Optional[float]:
    """(value - reference) / reference, or None when the reference is not positive."""
    if reference <= 0:
        return None
    return (value - reference) / reference


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

def _mapping(value: Any) -> Mapping[str, Any]:
    # Records are caller data: a missing or null sub-dict must read as empty, not crash.
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> Optional[float]:
    # bool is an int subclass; a True figure is a bug upstream, not 1 op/s.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _sum_of_directions(metrics: Mapping[str, Any], read_key: str, write_key: str) -> Optional[float]:
    figures = [figure for figure in (_number(metrics.get(read_key)), _number(metrics.get(write_key))) if figure is not None]
    return sum(figures) if figures else None


def bytes_per_s_of(record: Mapping[str, Any]) -> Optional[float]:
    """Read + write bytes per second of a record (None when neither was measured)."""
    return _sum_of_directions(_mapping(record.get("metrics")), "read_bytes_per_s", "write_bytes_per_s")


def iops_of(record: Mapping[str, Any]) -> Optional[float]:
    """Read + write operations per second of a record (None when neither was measured)."""
    return _sum_of_directions(_mapping(record.get("metrics")), "read_iops", "write_iops")


def is_random_access(record: Mapping[str, Any]) -> bool:
    """True when the test id or the params say the test is random access."""
    if _RANDOM_TEST_ID.search(str(record.get("test") or "")):
        return True
    params = _mapping(record.get("params"))
    pattern = params.get("rw", params.get("readwrite"))
    return str(pattern or "").lower() in _RANDOM_FIO_PATTERNS


def is_small_block(record: Mapping[str, Any]) -> bool:
    """True when params.block_size is known and at most 64 KiB."""
    block_size = _number(_mapping(record.get("params")).get("block_size"))
    return block_size is not None and 0 < block_size <= SMALL_BLOCK_MAX_BYTES


def primary_metric(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The figure a record is judged on: ``{"name": "iops" | "bytes_per_s", "value": float}``.

    IOPS when the record has an IOPS figure and is random access or small-block (<= 64 KiB);
    otherwise bytes per second; IOPS as a last resort when that is all there is; None when the
    record has neither.
    """
    iops = iops_of(record)
    bytes_per_s = bytes_per_s_of(record)
    if iops is not None and (is_random_access(record) or is_small_block(record)):
        return {"name": METRIC_IOPS, "value": iops}
    if bytes_per_s is not None:
        return {"name": METRIC_BYTES_PER_S, "value": bytes_per_s}
    if iops is not None:
        return {"name": METRIC_IOPS, "value": iops}
    return None


def peer_group_key(record: Mapping[str, Any]) -> GroupKey:
    """Records judged against each other share this key. For now: the test id."""
    return (str(record.get("test") or ""),)


def target_of(record: Mapping[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """(target path, device) of a record; either may be None."""
    target = _mapping(record.get("target"))
    return target.get("path"), target.get("device")


# ---------------------------------------------------------------------------------------------
# presentation helpers used in reasons (human units, always labelled)
# ---------------------------------------------------------------------------------------------

def format_metric(name: str, value: float) -> str:
    """'200.0 MB/s' (SI, 10^6) for bytes per second, '19750 IOPS' for IOPS."""
    if name == METRIC_BYTES_PER_S:
        return "%.1f MB/s" % (value / 1e6)
    return "%.0f IOPS" % value


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------

def validate_outlier_fraction(outlier_fraction: float) -> float:
    """The fraction as a float, or ValueError unless 0 < fraction < 1."""
    fraction = _number(outlier_fraction)
    if fraction is None or not 0 < fraction < 1:
        raise ValueError("outlier_fraction must be a number between 0 and 1 (exclusive), got %r" % (outlier_fraction,))
    return fraction


def _entry(host: str, record: Optional[Mapping[str, Any]], verdict: str, reason: str, **extra: Any) -> Dict[str, Any]:
    path, device = target_of(record) if record is not None else (None, None)
    entry = {
        "host": host,
        "target_path": path,
        "device": device,
        "test": record.get("test") if record is not None else None,
        "verdict": verdict,
        "reason": reason,
        "primary_metric": None,
        "group_median": None,
        "deviation_from_median": None,
        "record": record,
    }
    entry.update(extra)
    return entry


def _measured(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    # Only records without an error and with a figure take part in the peer statistics.
    if record.get("error"):
        return None
    return primary_metric(record)


def peer_groups(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]]) -> Dict[Tuple[GroupKey, str], List[float]]:
    """Measured primary values per (peer group key, metric name).

    The metric name is part of the key: IOPS and bytes per second never share a median.
    """
    groups: Dict[Tuple[GroupKey, str], List[float]] = {}
    for records in records_by_host.values():
        for record in records:
            metric = _measured(record)
            if metric is not None:
                groups.setdefault((peer_group_key(record), metric["name"]), []).append(metric["value"])
    return groups


def judge_record(host: str, record: Mapping[str, Any], groups: Mapping[Tuple[GroupKey, str], Sequence[float]],
                 outlier_fraction: float = DEFAULT_OUTLIER_FRACTION) -> Dict[str, Any]:
    """Verdict entry for one record against the peer groups built by ``peer_groups``."""
    if record.get("error"):
        return _entry(host, record, VERDICT_ERROR, str(record["error"]))
    metric = primary_metric(record)
    if metric is None:
        return _entry(host, record, VERDICT_NOT_MEASURED, "record has no throughput or IOPS figure")
    peers = groups.get((peer_group_key(record), metric["name"]), [])
    if len(peers) < MIN_PEERS:
        return _entry(host, record, VERDICT_PASS, "not compared: %d measured in group (< %d)" % (len(peers), MIN_PEERS), primary_metric=metric)
    group_median = median(peers)
    deviation = relative_deviation(metric["value"], group_median)
    extra = {"primary_metric": metric, "group_median": group_median, "deviation_from_median": deviation}
    if deviation is None:
        return _entry(host, record, VERDICT_PASS, "not compared: group median is not positive", **extra)
    versus = "%+.1f%% vs median %s (n=%d)" % (deviation * 100, format_metric(metric["name"], group_median), len(peers))
    if deviation < -outlier_fraction:
        return _entry(host, record, VERDICT_OUTLIER, "%s, limit -%.0f%%" % (versus, outlier_fraction * 100), **extra)
    return _entry(host, record, VERDICT_PASS, versus, **extra)


def _problem_reason(problem: Mapping[str, Any]) -> str:
    lines = str(problem.get("message") or "").strip().splitlines()
    first_line = lines[0] if lines else "no message"
    # Unreachable is about the connection, not the task; a failure needs the task to be found.
    if problem.get("status") == HOST_UNREACHABLE:
        return "unreachable: %s" % first_line
    return "failed in task '%s': %s" % (problem.get("task") or "?", first_line)


def host_problem_entries(host: str, status: Mapping[str, Any], has_records: bool) -> List[Dict[str, Any]]:
    """``not_measured`` entries for a host: one per problem that left no record, or one when the
    host produced nothing at all."""
    problems = status.get("problems") or []
    entries = [_entry(host, None, VERDICT_NOT_MEASURED, _problem_reason(problem)) for problem in problems]
    if not entries and not has_records:
        entries.append(_entry(host, None, VERDICT_NOT_MEASURED, "no diskproof_results record from this host"))
    return entries


def _sort_key(entry: Mapping[str, Any]) -> Tuple[Any, ...]:
    deviation = entry.get("deviation_from_median")
    return (
        VERDICTS.index(entry["verdict"]),
        deviation if deviation is not None else 0.0,
        entry["host"],
        entry.get("target_path") or "",
        entry.get("test") or "",
    )


def sort_worst_first(entries: Sequence[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """Entries ordered by verdict severity, then by how far below the median, then by name."""
    return sorted(entries, key=_sort_key)


def judge_fleet(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], host_statuses: Mapping[str, Mapping[str, Any]],
                outlier_fraction: float = DEFAULT_OUTLIER_FRACTION) -> List[Dict[str, Any]]:
    """Verdict entries for every record and every host, worst first.

    ``host_statuses`` maps every host the play targeted to
    ``{"status": "ok" | "failed" | "unreachable", "problems": [{"task", "status", "message"}]}``
    where problems are failed or unreachable task results that carried no record.
    """
    fraction = validate_outlier_fraction(outlier_fraction)
    groups = peer_groups(records_by_host)
    entries = []
    for host in sorted(set(records_by_host) | set(host_statuses)):
        records = records_by_host.get(host) or []
        entries.extend(judge_record(host, record, groups, fraction) for record in records)
        entries.extend(host_problem_entries(host, host_statuses.get(host) or {}, bool(records)))
    return sort_worst_first(entries)


def group_statistics(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """Per peer group: key, metric, measured count, median and MAD of the primary metric."""
    rows = []
    for (key, metric_name), values in sorted(peer_groups(records_by_host).items()):
        rows.append({
            "key": list(key),
            "metric": metric_name,
            "measured": len(values),
            "median": median(values),
            "mad": median_absolute_deviation(values),
            "judged": len(values) >= MIN_PEERS,
        })
    return rows


def summarize(entries: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Counts by verdict (all verdicts present) and the failing entries, worst first."""
    counts = {verdict: 0 for verdict in VERDICTS}
    for entry in entries:
        counts[entry["verdict"]] += 1
    failing = [
        {key: entry.get(key) for key in ("host", "target_path", "device", "test", "verdict", "reason")}
        for entry in sort_worst_first(entries)
        if entry["verdict"] != VERDICT_PASS
    ]
    return {"counts": counts, "total": len(entries), "failing": failing}


def _hosts_section(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], host_statuses: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    hosts = {}
    for host in sorted(set(records_by_host) | set(host_statuses)):
        status = host_statuses.get(host) or {}
        hosts[host] = {
            "status": status.get("status") or HOST_OK,
            "records": len(records_by_host.get(host) or []),
            "problems": list(status.get("problems") or []),
        }
    return hosts


def build_report(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], host_statuses: Mapping[str, Mapping[str, Any]],
                 run_metadata: Mapping[str, Any], outlier_fraction: float = DEFAULT_OUTLIER_FRACTION) -> Dict[str, Any]:
    """The whole report: run metadata, rules, hosts, peer groups, every entry with its verdict, summary.

    Inputs are not modified; entries refer to the given record dicts (copy them first if the
    caller must keep them apart).
    """
    entries = judge_fleet(records_by_host, host_statuses, outlier_fraction)
    return {
        "report_schema": REPORT_SCHEMA,
        "run": dict(run_metadata),
        "rules": {
            "outlier_fraction": validate_outlier_fraction(outlier_fraction),
            "min_peers": MIN_PEERS,
            "small_block_max_bytes": SMALL_BLOCK_MAX_BYTES,
            "peer_group": ["test"],
        },
        "hosts": _hosts_section(records_by_host, host_statuses),
        "groups": group_statistics(records_by_host),
        "results": entries,
        "summary": summarize(entries),
    }
