# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet statistics and verdicts over diskproof result records (schema 1).

Pure Python (no Ansible imports) so pytest reaches it directly and the same records can be
re-judged outside a playbook run. The callback ``diskproof.fleet.report`` and the filter
``diskproof.fleet.fleet_report`` only collect their inputs, then call ``build_report``.
docs/report.md is the user documentation of everything below.

One entry per record, plus one per host problem that left no record. Each entry keeps every
finding (``reasons``) and the verdict of the worst one, in this precedence:

- ``error``: the record carries ``error`` (the tool failed; partial figures are not judged).
- ``not_measured``: the host was unreachable, or a task failed without producing a record, or
  the host produced no record at all, or a record has neither a throughput nor an IOPS figure.
- ``invalid``: the block-device counters saw less than 95 % of the bytes the tool says it moved
  (the page cache was measured, not the disk). No counters: not invalid, a note says so.
- ``slow``: an acceptance rule (absolute minimum, maximum p99 latency, datasheet percentage) fails.
- ``regressed``: more than ``regression_fraction`` below the baseline report's value for the same
  disk (serial, else WWN) and test.
- ``outlier``: more than ``outlier_fraction`` below the median of its peer group, or a robust
  z-score 0.6745 * (x - median) / MAD below ``robust_z_limit`` while also at least
  ``robust_z_min_deviation`` below the median; judged only when the group has ``MIN_PEERS``.
- ``unstable``: the record's ``samples`` (per-repeat primary values) vary by a coefficient of
  variation above ``max_cv``.
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

import fnmatch
import math
import re
import statistics
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

# 2: verdicts invalid/slow/regressed/unstable, reasons, identity peer groups, acceptance rules, baseline.
REPORT_SCHEMA = 2
# Baselines may come from reports of either shape: both keep results[].record.
BASELINE_REPORT_SCHEMAS = (1, 2)

VERDICT_ERROR = "error"
VERDICT_NOT_MEASURED = "not_measured"
VERDICT_INVALID = "invalid"
VERDICT_SLOW = "slow"
VERDICT_REGRESSED = "regressed"
VERDICT_OUTLIER = "outlier"
VERDICT_UNSTABLE = "unstable"
VERDICT_PASS = "pass"
# Precedence, worst first: no valid figure at all, then a figure that cannot be trusted, then a
# figure that breaks a stated rule, then one that is worse than before, then worse than its peers.
VERDICTS = (VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_INVALID, VERDICT_SLOW, VERDICT_REGRESSED, VERDICT_OUTLIER,
            VERDICT_UNSTABLE, VERDICT_PASS)
# What makes summary.passed false. Unstable is worth a look, not a failed acceptance.
FAILING_VERDICTS = (VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_INVALID, VERDICT_SLOW, VERDICT_REGRESSED, VERDICT_OUTLIER)

DEFAULT_OUTLIER_FRACTION = 0.15
DEFAULT_ROBUST_Z_LIMIT = -3.5
# Identical lab disks spread by 0.1 %; a z-score alone would call -0.2 % an outlier there.
DEFAULT_ROBUST_Z_MIN_DEVIATION = 0.05
ROBUST_Z_SCALE = 0.6745
DEFAULT_MAX_CV = 0.05
DEFAULT_REGRESSION_FRACTION = 0.10
# device_io must account for this share of the bytes the tool moved.
CACHE_BYPASS_MIN_FRACTION = 0.95
# A median of two says nothing about which of the two is wrong.
MIN_PEERS = 3
SMALL_BLOCK_MAX_BYTES = 64 * 1024

PEER_GROUP_IDENTITY = "identity"
PEER_GROUP_TEST = "test"
PEER_GROUP_CHOICES = (PEER_GROUP_IDENTITY, PEER_GROUP_TEST)
# The basis a group key was built on (groups[].basis).
BASIS_IDENTITY = "identity"
BASIS_TEST_ROTATIONAL = "test_rotational"
BASIS_TEST = "test"

METRIC_IOPS = "iops"
METRIC_BYTES_PER_S = "bytes_per_s"

HOST_OK = "ok"
HOST_FAILED = "failed"
HOST_UNREACHABLE = "unreachable"

NOTE_NO_DEVICE_COUNTERS = "cache bypass not proven: no device counters"

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


def _key_value(value: Any) -> str:
    # JSON spelling, so a key reads the same in report.json: true, null, 4000787030016.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def disk_class(record: Mapping[str, Any]) -> Optional[str]:
    """``nvme`` (transport nvme), ``hdd`` (rotational), ``ssd`` (not rotational) or None (unknown)."""
    target = _mapping(record.get("target"))
    if str(target.get("transport") or "").lower() == "nvme":
        return "nvme"
    rotational = target.get("rotational")
    if isinstance(rotational, bool):
        return "hdd" if rotational else "ssd"
    return None


def peer_group_key(record: Mapping[str, Any], peer_group: str = PEER_GROUP_IDENTITY) -> GroupKey:
    """Records judged against each other share this key (the metric is added by ``peer_groups``).

    ``identity``: test, model, firmware and capacity of the target disk; when the model is unknown
    (VMs, loop devices) test and rotational. ``test``: the test id alone.
    """
    test = str(record.get("test") or "")
    if peer_group == PEER_GROUP_TEST:
        return (test,)
    target = _mapping(record.get("target"))
    if target.get("model") is None:
        return (test, "rotational=" + _key_value(target.get("rotational")))
    return (test, "model=" + _key_value(target.get("model")), "firmware=" + _key_value(target.get("firmware")),
            "size_bytes=" + _key_value(target.get("size_bytes")))


def key_basis(key: GroupKey) -> str:
    """Which fields a key was built from: identity, test_rotational or test."""
    if len(key) == 1:
        return BASIS_TEST
    return BASIS_TEST_ROTATIONAL if key[1].startswith("rotational=") else BASIS_IDENTITY


def disk_id_of(record: Mapping[str, Any]) -> Optional[Tuple[str, str]]:
    """(``serial`` | ``wwn``, value) identifying the physical disk across runs, or None."""
    target = _mapping(record.get("target"))
    for field in ("serial", "wwn"):
        value = target.get(field)
        if value not in (None, ""):
            return field, str(value)
    return None


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
# parameters
# ---------------------------------------------------------------------------------------------

def _fraction(name: str, value: Any) -> float:
    fraction = _number(value)
    if fraction is None or not 0 < fraction < 1:
        raise ValueError("%s must be a number between 0 and 1 (exclusive), got %r" % (name, value))
    return fraction


def validate_outlier_fraction(outlier_fraction: Any) -> float:
    """The fraction as a float, or ValueError unless 0 < fraction < 1."""
    return _fraction("outlier_fraction", outlier_fraction)


class Settings(NamedTuple):
    """Validated judgement parameters (see ``make_settings``)."""

    outlier_fraction: float = DEFAULT_OUTLIER_FRACTION
    peer_group: str = PEER_GROUP_IDENTITY
    max_cv: float = DEFAULT_MAX_CV
    regression_fraction: float = DEFAULT_REGRESSION_FRACTION
    robust_z_limit: float = DEFAULT_ROBUST_Z_LIMIT
    robust_z_min_deviation: float = DEFAULT_ROBUST_Z_MIN_DEVIATION


def make_settings(outlier_fraction: Any = DEFAULT_OUTLIER_FRACTION, peer_group: Any = PEER_GROUP_IDENTITY, max_cv: Any = DEFAULT_MAX_CV,
                  regression_fraction: Any = DEFAULT_REGRESSION_FRACTION, robust_z_limit: Any = DEFAULT_ROBUST_Z_LIMIT,
                  robust_z_min_deviation: Any = DEFAULT_ROBUST_Z_MIN_DEVIATION) -> Settings:
    """Settings with every value checked; ValueError names the bad one."""
    if peer_group not in PEER_GROUP_CHOICES:
        raise ValueError("peer_group must be one of %s, got %r" % (", ".join(PEER_GROUP_CHOICES), peer_group))
    z_limit = _number(robust_z_limit)
    if z_limit is None or z_limit >= 0:
        raise ValueError("robust_z_limit must be a negative number, got %r" % (robust_z_limit,))
    min_deviation = _number(robust_z_min_deviation)
    if min_deviation is None or not 0 <= min_deviation < 1:
        raise ValueError("robust_z_min_deviation must be a number from 0 to 1 (1 excluded), got %r" % (robust_z_min_deviation,))
    return Settings(
        outlier_fraction=validate_outlier_fraction(outlier_fraction),
        peer_group=str(peer_group),
        max_cv=_fraction("max_cv", max_cv),
        regression_fraction=_fraction("regression_fraction", regression_fraction),
        robust_z_limit=z_limit,
        robust_z_min_deviation=min_deviation,
    )


# ---------------------------------------------------------------------------------------------
# peer statistics
# ---------------------------------------------------------------------------------------------

def robust_z(value: float, center: float, mad: float) -> Optional[float]:
    """0.6745 * (value - median) / MAD (Iglewicz and Hoaglin), None when MAD is 0."""
    if mad <= 0:
        return None
    return ROBUST_Z_SCALE * (value - center) / mad


def coefficient_of_variation(samples: Sequence[float]) -> Optional[float]:
    """Sample standard deviation / mean; None for fewer than 2 samples or a mean that is not positive."""
    if len(samples) < 2:
        return None
    mean = statistics.mean(samples)
    if mean <= 0:
        return None
    return statistics.stdev(samples) / mean


def describe(values: Sequence[float]) -> Dict[str, Any]:
    """count, median, MAD, min and max of a non-empty sequence."""
    return {
        "measured": len(values),
        "median": median(values),
        "mad": median_absolute_deviation(values),
        "min": float(min(values)),
        "max": float(max(values)),
    }


# ---------------------------------------------------------------------------------------------
# cache bypass
# ---------------------------------------------------------------------------------------------

def _directions(record: Mapping[str, Any]) -> Tuple[bool, bool]:
    metrics = _mapping(record.get("metrics"))
    reads = _number(metrics.get("read_bytes_per_s")) is not None or _number(metrics.get("read_iops")) is not None
    writes = _number(metrics.get("write_bytes_per_s")) is not None or _number(metrics.get("write_iops")) is not None
    return reads, writes


def cache_bypass(record: Mapping[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """(reason it is invalid, note) for a record; both None when the device saw enough.

    Invalid: a write-only record whose ``device_io.write_bytes``, a read-only record whose
    ``device_io.read_bytes``, or a mixed record whose sum of both is below 95 % of ``bytes``.
    Without counters the record is not judged invalid; buffered records (``params.direct`` not
    true) get the note "cache bypass not proven: no device counters".
    """
    moved = _number(record.get("bytes"))
    reads, writes = _directions(record)
    if moved is None or moved <= 0 or not (reads or writes):
        return None, None
    device_io = record.get("device_io")
    direct = _mapping(record.get("params")).get("direct") is True
    if not isinstance(device_io, Mapping):
        return None, (None if direct else NOTE_NO_DEVICE_COUNTERS)
    read_bytes, write_bytes = _number(device_io.get("read_bytes")), _number(device_io.get("write_bytes"))
    if reads and writes:
        seen, what = (None if read_bytes is None or write_bytes is None else read_bytes + write_bytes), "read and wrote"
    elif writes:
        seen, what = write_bytes, "wrote"
    else:
        seen, what = read_bytes, "read"
    if seen is None:
        return None, (None if direct else NOTE_NO_DEVICE_COUNTERS)
    if seen < CACHE_BYPASS_MIN_FRACTION * moved:
        return ("cache bypass not proven: the device %s %d of the %d bytes the tool moved (%.1f%%, < %.0f%%)"
                % (what, seen, moved, 100.0 * seen / moved, CACHE_BYPASS_MIN_FRACTION * 100)), None
    return None, None


# ---------------------------------------------------------------------------------------------
# acceptance rules
# ---------------------------------------------------------------------------------------------

class RulesError(ValueError):
    """Acceptance rules that cannot be used; ``errors`` lists every problem with its path."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


# threshold key -> (figure, direction): "min" fails below, "max" fails above.
THRESHOLDS = {
    "min_read_mb_per_s": ("read_mb_per_s", "min"),
    "min_write_mb_per_s": ("write_mb_per_s", "min"),
    "min_read_iops": ("read_iops", "min"),
    "min_write_iops": ("write_iops", "min"),
    "min_fsyncs_per_s": ("fsyncs_per_s", "min"),
    "max_read_p99_ms": ("read_p99_ms", "max"),
    "max_write_p99_ms": ("write_p99_ms", "max"),
}
DATASHEET_FIGURES = ("read_mb_per_s", "write_mb_per_s", "read_iops", "write_iops", "fsyncs_per_s")
MATCH_STRING_KEYS = ("test", "host", "model", "firmware", "serial", "wwn", "transport")
DISK_CLASSES = ("hdd", "ssd", "nvme")
FIGURE_UNITS = {
    "read_mb_per_s": "MB/s", "write_mb_per_s": "MB/s", "read_iops": "IOPS", "write_iops": "IOPS",
    "fsyncs_per_s": "fsyncs/s", "read_p99_ms": "ms", "write_p99_ms": "ms",
}
_MATCH_KEYS = MATCH_STRING_KEYS + ("class", "rotational")
_RULE_KEYS = ("name", "match", "datasheet") + tuple(THRESHOLDS)
_DATASHEET_KEYS = DATASHEET_FIGURES + ("min_percent",)


def _positive(value: Any) -> Optional[float]:
    number = _number(value)
    return number if number is not None and number > 0 and math.isfinite(number) else None


def _unknown_keys(mapping: Mapping[str, Any], allowed: Sequence[str], path: str, errors: List[str]) -> None:
    for key in sorted(str(key) for key in mapping if key not in allowed):
        errors.append("%s.%s: unknown key (allowed: %s)" % (path, key, ", ".join(sorted(allowed))))


def _validate_match(match: Any, path: str, errors: List[str]) -> Dict[str, Any]:
    if match is None:
        return {}
    if not isinstance(match, Mapping):
        errors.append("%s: must be a mapping, got %s" % (path, type(match).__name__))
        return {}
    _unknown_keys(match, _MATCH_KEYS, path, errors)
    normalized: Dict[str, Any] = {}
    for key in MATCH_STRING_KEYS:
        if key in match:
            value = match[key]
            if not isinstance(value, str) or not value:
                errors.append("%s.%s: must be a non-empty string (shell-style pattern), got %r" % (path, key, value))
            else:
                normalized[key] = str(value)
    if "class" in match:
        if match["class"] not in DISK_CLASSES:
            errors.append("%s.class: must be one of %s, got %r" % (path, ", ".join(DISK_CLASSES), match["class"]))
        else:
            normalized["class"] = str(match["class"])
    if "rotational" in match:
        if not isinstance(match["rotational"], bool):
            errors.append("%s.rotational: must be true or false, got %r" % (path, match["rotational"]))
        else:
            normalized["rotational"] = bool(match["rotational"])
    return normalized


def _validate_datasheet(datasheet: Any, path: str, errors: List[str]) -> Optional[Dict[str, float]]:
    if not isinstance(datasheet, Mapping):
        errors.append("%s: must be a mapping, got %s" % (path, type(datasheet).__name__))
        return None
    _unknown_keys(datasheet, _DATASHEET_KEYS, path, errors)
    normalized: Dict[str, float] = {}
    for key in DATASHEET_FIGURES:
        if key in datasheet:
            value = _positive(datasheet[key])
            if value is None:
                errors.append("%s.%s: must be a positive number, got %r" % (path, key, datasheet[key]))
            else:
                normalized[key] = value
    percent = _number(datasheet.get("min_percent"))
    if "min_percent" not in datasheet:
        errors.append("%s.min_percent: required (the share of the datasheet figure to reach, 0 < min_percent <= 100)" % path)
    elif percent is None or not 0 < percent <= 100:
        errors.append("%s.min_percent: must be a number with 0 < min_percent <= 100, got %r" % (path, datasheet["min_percent"]))
    else:
        normalized["min_percent"] = percent
    if not any(key in normalized for key in DATASHEET_FIGURES) and not any(key in datasheet for key in DATASHEET_FIGURES):
        errors.append("%s: needs at least one figure (%s)" % (path, ", ".join(DATASHEET_FIGURES)))
    return normalized


def _validate_rule(rule: Any, path: str, errors: List[str]) -> Dict[str, Any]:
    if not isinstance(rule, Mapping):
        errors.append("%s: must be a mapping, got %s" % (path, type(rule).__name__))
        return {}
    _unknown_keys(rule, _RULE_KEYS, path, errors)
    normalized: Dict[str, Any] = {"name": None, "match": _validate_match(rule.get("match"), path + ".match", errors)}
    if "name" in rule:
        if not isinstance(rule["name"], str) or not rule["name"]:
            errors.append("%s.name: must be a non-empty string, got %r" % (path, rule["name"]))
        else:
            normalized["name"] = str(rule["name"])
    for key in THRESHOLDS:
        if key in rule:
            value = _positive(rule[key])
            if value is None:
                errors.append("%s.%s: must be a positive number, got %r" % (path, key, rule[key]))
            else:
                normalized[key] = value
    if "datasheet" in rule:
        datasheet = _validate_datasheet(rule["datasheet"], path + ".datasheet", errors)
        if datasheet is not None:
            normalized["datasheet"] = datasheet
    if not any(key in rule for key in THRESHOLDS) and "datasheet" not in rule:
        errors.append("%s: states no limit (one of %s, or datasheet)" % (path, ", ".join(THRESHOLDS)))
    return normalized


def validate_rules(acceptance: Any) -> List[Dict[str, Any]]:
    """Normalized rules from ``{rules: [...]}`` (None: no rules); RulesError lists every problem.

    Each normalized rule: ``name`` (str or None), ``match`` (dict), the thresholds it states as
    floats and ``datasheet`` (figures and ``min_percent``) when given.
    """
    if acceptance is None:
        return []
    if not isinstance(acceptance, Mapping):
        raise RulesError(["acceptance: must be a mapping with the key 'rules', got %s" % type(acceptance).__name__])
    errors: List[str] = []
    _unknown_keys(acceptance, ("rules",), "acceptance", errors)
    rules = acceptance.get("rules")
    if not isinstance(rules, list):
        errors.append("acceptance.rules: must be a list of rules, got %s" % ("nothing" if rules is None else type(rules).__name__))
        raise RulesError(errors)
    normalized = [_validate_rule(rule, "rules[%d]" % index, errors) for index, rule in enumerate(rules)]
    if errors:
        raise RulesError(errors)
    return normalized


def _rule_matches(rule: Mapping[str, Any], host: str, record: Mapping[str, Any]) -> bool:
    target = _mapping(record.get("target"))
    for key, pattern in rule["match"].items():
        if key == "class":
            if disk_class(record) != pattern:
                return False
        elif key == "rotational":
            if target.get("rotational") is not pattern:
                return False
        else:
            actual = host if key == "host" else (record.get("test") if key == "test" else target.get(key))
            if actual is None or not fnmatch.fnmatchcase(str(actual), pattern):
                return False
    return True


def rule_figures(record: Mapping[str, Any]) -> Dict[str, Optional[float]]:
    """The figures rules compare, in rule units (MB = 10^6 bytes, ms = 10^-3 s)."""
    metrics = _mapping(record.get("metrics"))
    latency = _mapping(metrics.get("latency_ns"))

    def scaled(value: Any, divisor: float) -> Optional[float]:
        number = _number(value)
        return None if number is None else number / divisor

    return {
        "read_mb_per_s": scaled(metrics.get("read_bytes_per_s"), 1e6),
        "write_mb_per_s": scaled(metrics.get("write_bytes_per_s"), 1e6),
        "read_iops": _number(metrics.get("read_iops")),
        "write_iops": _number(metrics.get("write_iops")),
        "fsyncs_per_s": _number(metrics.get("fsyncs_per_s")),
        "read_p99_ms": scaled(_mapping(latency.get("read")).get("p99"), 1e6),
        "write_p99_ms": scaled(_mapping(latency.get("write")).get("p99"), 1e6),
    }


def _rule_label(rule: Mapping[str, Any], index: int) -> str:
    return "rule %d%s" % (index + 1, " '%s'" % rule["name"] if rule.get("name") else "")


def _figure_text(figure: str, value: float) -> str:
    digits = 0 if FIGURE_UNITS[figure] in ("IOPS", "fsyncs/s") else 1
    return "%.*f %s" % (digits, value, FIGURE_UNITS[figure])


def rule_violations(host: str, record: Mapping[str, Any], rules: Sequence[Mapping[str, Any]]) -> List[str]:
    """One reason per broken limit of every matching rule; a limit whose figure the record lacks is skipped."""
    figures = rule_figures(record)
    reasons = []
    for index, rule in enumerate(rules):
        if not _rule_matches(rule, host, record):
            continue
        label = _rule_label(rule, index)
        for key, (figure, direction) in THRESHOLDS.items():
            limit, value = rule.get(key), figures[figure]
            if limit is None or value is None:
                continue
            io_direction = figure.partition("_")[0]
            if direction == "min" and value < limit:
                reasons.append("%s: %s %s < minimum %s" % (label, io_direction, _figure_text(figure, value), _figure_text(figure, limit)))
            elif direction == "max" and value > limit:
                reasons.append("%s: %s p99 %s > maximum %s" % (label, io_direction, _figure_text(figure, value), _figure_text(figure, limit)))
        datasheet = rule.get("datasheet") or {}
        for figure in DATASHEET_FIGURES:
            if figure not in datasheet or figures[figure] is None:
                continue
            required = datasheet[figure] * datasheet["min_percent"] / 100.0
            if figures[figure] < required:
                reasons.append("%s: %s is %.1f%% of datasheet %s (< %g%%)" % (
                    label, _figure_text(figure, figures[figure]), 100.0 * figures[figure] / datasheet[figure],
                    _figure_text(figure, datasheet[figure]), datasheet["min_percent"]))
    return reasons


# ---------------------------------------------------------------------------------------------
# baseline
# ---------------------------------------------------------------------------------------------

class BaselineError(ValueError):
    """A baseline that is not a diskproof report.json."""


BaselineIndex = Dict[Tuple[str, str, str, str], float]


def baseline_index(baseline: Any) -> BaselineIndex:
    """(id kind, disk id, test, metric name) -> baseline value, from a previous report.json.

    Only records that measured something valid count (no error, cache bypass not disproven); a
    disk measured several times per test in the baseline is represented by the median.
    """
    if not isinstance(baseline, Mapping):
        raise BaselineError("baseline: must be a report.json mapping, got %s" % type(baseline).__name__)
    if baseline.get("report_schema") not in BASELINE_REPORT_SCHEMAS:
        raise BaselineError("baseline: report_schema must be one of %s, got %r" % (", ".join(map(str, BASELINE_REPORT_SCHEMAS)), baseline.get("report_schema")))
    results = baseline.get("results")
    if not isinstance(results, list):
        raise BaselineError("baseline: results must be a list")
    values: Dict[Tuple[str, str, str, str], List[float]] = {}
    for entry in results:
        record = _mapping(entry).get("record")
        if not isinstance(record, Mapping):
            continue
        disk_id = disk_id_of(record)
        metric = _measured(record)
        if disk_id is None or metric is None:
            continue
        values.setdefault((disk_id[0], disk_id[1], str(record.get("test") or ""), metric["name"]), []).append(metric["value"])
    return {key: median(figures) for key, figures in values.items()}


def baseline_value(record: Mapping[str, Any], index: Mapping[Tuple[str, str, str, str], float], metric_name: str) -> Optional[Tuple[str, str, float]]:
    """(id kind, disk id, value) of the record's disk and test in the baseline, or None."""
    target = _mapping(record.get("target"))
    test = str(record.get("test") or "")
    for field in ("serial", "wwn"):
        disk_id = target.get(field)
        if disk_id in (None, ""):
            continue
        value = index.get((field, str(disk_id), test, metric_name))
        if value is not None:
            return field, str(disk_id), value
    return None


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------

def _entry(host: str, record: Optional[Mapping[str, Any]], findings: Sequence[Tuple[str, str]], **extra: Any) -> Dict[str, Any]:
    """An entry: the worst finding's verdict, its reason(s) joined, every finding kept in ``reasons``."""
    path, device = target_of(record) if record is not None else (None, None)
    verdict = min((finding[0] for finding in findings), key=VERDICTS.index)
    disk_id = disk_id_of(record) if record is not None else None
    entry = {
        "host": host,
        "target_path": path,
        "device": device,
        "serial": disk_id[1] if disk_id is not None else None,
        "test": record.get("test") if record is not None else None,
        "verdict": verdict,
        "reason": "; ".join(reason for finding, reason in findings if finding == verdict),
        "reasons": [{"verdict": finding, "reason": reason} for finding, reason in sorted(findings, key=lambda item: VERDICTS.index(item[0]))],
        "notes": [],
        "group": None,
        "primary_metric": None,
        "group_median": None,
        "deviation_from_median": None,
        "robust_z": None,
        "baseline_value": None,
        "deviation_from_baseline": None,
        "record": record,
    }
    entry.update(extra)
    return entry


def _measured(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    # Only records without an error, with a figure and not disproven by the device counters take
    # part in the peer statistics and in a baseline.
    if record.get("error") or cache_bypass(record)[0] is not None:
        return None
    return primary_metric(record)


def peer_groups(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]],
                peer_group: str = PEER_GROUP_IDENTITY) -> Dict[Tuple[GroupKey, str], List[float]]:
    """Measured primary values per (peer group key, metric name).

    The metric name is part of the key: IOPS and bytes per second never share a median.
    """
    groups: Dict[Tuple[GroupKey, str], List[float]] = {}
    for records in records_by_host.values():
        for record in records:
            metric = _measured(record)
            if metric is not None:
                groups.setdefault((peer_group_key(record, peer_group), metric["name"]), []).append(metric["value"])
    return groups


def _peer_findings(metric: Mapping[str, Any], peers: Sequence[float], settings: Settings,
                   stats: Optional[Mapping[str, Any]] = None) -> Tuple[List[Tuple[str, str]], Dict[str, Any]]:
    if len(peers) < MIN_PEERS:
        return [(VERDICT_PASS, "not compared: %d measured in group (< %d)" % (len(peers), MIN_PEERS))], {}
    stats = stats if stats is not None else describe(peers)
    deviation = relative_deviation(metric["value"], stats["median"])
    z_score = robust_z(metric["value"], stats["median"], stats["mad"])
    extra = {"group_median": stats["median"], "deviation_from_median": deviation, "robust_z": z_score}
    if deviation is None:
        return [(VERDICT_PASS, "not compared: group median is not positive")], extra
    versus = "%+.1f%% vs median %s (n=%d)" % (deviation * 100, format_metric(metric["name"], stats["median"]), len(peers))
    if deviation < -settings.outlier_fraction:
        return [(VERDICT_OUTLIER, "%s, limit -%.0f%%" % (versus, settings.outlier_fraction * 100))], extra
    if z_score is not None and z_score < settings.robust_z_limit and deviation <= -settings.robust_z_min_deviation:
        return [(VERDICT_OUTLIER, "%s, robust z %.1f < %.1f" % (versus, z_score, settings.robust_z_limit))], extra
    return [(VERDICT_PASS, versus)], extra


def _unstable_finding(record: Mapping[str, Any], max_cv: float, notes: List[str]) -> Optional[Tuple[str, str]]:
    samples = record.get("samples")
    if samples is None:
        return None
    figures = [_number(sample) for sample in samples] if isinstance(samples, list) else [None]
    if any(figure is None for figure in figures):
        notes.append("samples ignored: not a list of numbers")
        return None
    cv = coefficient_of_variation([figure for figure in figures if figure is not None])
    if cv is None or cv <= max_cv:
        return None
    return VERDICT_UNSTABLE, "repeats vary: coefficient of variation %.1f%% > %.1f%% (n=%d)" % (cv * 100, max_cv * 100, len(figures))


def judge_record(host: str, record: Mapping[str, Any], groups: Mapping[Tuple[GroupKey, str], Sequence[float]],
                 outlier_fraction: float = DEFAULT_OUTLIER_FRACTION, settings: Optional[Settings] = None,
                 rules: Sequence[Mapping[str, Any]] = (), baseline: Optional[Mapping[Tuple[str, str, str, str], float]] = None,
                 group_stats: Optional[Dict[Tuple[GroupKey, str], Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Verdict entry for one record against the peer groups built by ``peer_groups``, the
    normalized ``rules`` (``validate_rules``) and a ``baseline_index``. ``group_stats`` is a cache
    of each group's statistics shared across the records of one fleet (judge_fleet passes one), so
    a group of n disks is described once, not n times."""
    settings = settings if settings is not None else make_settings(outlier_fraction)
    if record.get("error"):
        return _entry(host, record, [(VERDICT_ERROR, str(record["error"]))])
    metric = primary_metric(record)
    if metric is None:
        return _entry(host, record, [(VERDICT_NOT_MEASURED, "record has no throughput or IOPS figure")])
    key = peer_group_key(record, settings.peer_group)
    notes: List[str] = []
    invalid, note = cache_bypass(record)
    if note:
        notes.append(note)
    findings: List[Tuple[str, str]] = [(VERDICT_INVALID, invalid)] if invalid else []
    findings.extend((VERDICT_SLOW, reason) for reason in rule_violations(host, record, rules))
    extra: Dict[str, Any] = {"primary_metric": metric, "group": list(key), "notes": notes}
    if baseline is not None:
        found = baseline_value(record, baseline, metric["name"])
        if found is None:
            notes.append("no baseline for this disk and test")
        else:
            field, disk_id, value = found
            change = relative_deviation(metric["value"], value)
            extra.update(baseline_value=value, deviation_from_baseline=change)
            if change is not None and change < -settings.regression_fraction:
                findings.append((VERDICT_REGRESSED, "%+.1f%% vs baseline %s (%s %s), limit -%.0f%%" % (
                    change * 100, format_metric(metric["name"], value), field, disk_id, settings.regression_fraction * 100)))
    group = (key, metric["name"])
    peers = groups.get(group, [])
    stats = None
    if group_stats is not None and len(peers) >= MIN_PEERS:
        stats = group_stats.get(group)
        if stats is None:
            stats = group_stats[group] = describe(peers)
    peer_findings, peer_extra = _peer_findings(metric, peers, settings, stats)
    extra.update(peer_extra)
    findings.extend(finding for finding in peer_findings if finding[0] != VERDICT_PASS)
    unstable = _unstable_finding(record, settings.max_cv, notes)
    if unstable is not None:
        findings.append(unstable)
    if not findings:
        findings = peer_findings
    return _entry(host, record, findings, **extra)


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
    entries = [_entry(host, None, [(VERDICT_NOT_MEASURED, _problem_reason(problem))]) for problem in problems]
    if not entries and not has_records:
        entries.append(_entry(host, None, [(VERDICT_NOT_MEASURED, "no diskproof_results record from this host")]))
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
    """Entries ordered by verdict precedence, then by how far below the median, then by name."""
    return sorted(entries, key=_sort_key)


def judge_fleet(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], host_statuses: Mapping[str, Mapping[str, Any]],
                outlier_fraction: float = DEFAULT_OUTLIER_FRACTION, settings: Optional[Settings] = None,
                rules: Sequence[Mapping[str, Any]] = (), baseline: Optional[Mapping[Tuple[str, str, str, str], float]] = None) -> List[Dict[str, Any]]:
    """Verdict entries for every record and every host, worst first.

    ``host_statuses`` maps every host the play targeted to
    ``{"status": "ok" | "failed" | "unreachable", "problems": [{"task", "status", "message"}]}``
    where problems are failed or unreachable task results that carried no record. ``settings``
    (``make_settings``) overrides ``outlier_fraction``; ``rules`` are normalized rules and
    ``baseline`` a ``baseline_index``.
    """
    settings = settings if settings is not None else make_settings(outlier_fraction)
    groups = peer_groups(records_by_host, settings.peer_group)
    group_stats: Dict[Tuple[GroupKey, str], Dict[str, Any]] = {}
    entries = []
    for host in sorted(set(records_by_host) | set(host_statuses)):
        records = records_by_host.get(host) or []
        entries.extend(judge_record(host, record, groups, settings=settings, rules=rules, baseline=baseline, group_stats=group_stats)
                       for record in records)
        entries.extend(host_problem_entries(host, host_statuses.get(host) or {}, bool(records)))
    return sort_worst_first(entries)


def group_statistics(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], peer_group: str = PEER_GROUP_IDENTITY) -> List[Dict[str, Any]]:
    """Per peer group: key, basis, metric, measured count, median, MAD, min and max of the primary metric."""
    rows = []
    for (key, metric_name), values in sorted(peer_groups(records_by_host, peer_group).items()):
        row: Dict[str, Any] = {"key": list(key), "basis": key_basis(key), "metric": metric_name}
        row.update(describe(values))
        row["judged"] = len(values) >= MIN_PEERS
        rows.append(row)
    return rows


FAILING_FIELDS = ("host", "target_path", "device", "serial", "test", "verdict", "reason")


def summarize(entries: Sequence[Mapping[str, Any]], input_errors: Sequence[str] = ()) -> Dict[str, Any]:
    """Counts by verdict (all verdicts present), the failing entries worst first, and ``passed``.

    ``passed`` is false when any entry fails (``FAILING_VERDICTS``) or an input that was asked for
    (rules, baseline) could not be used: ``input_errors``.
    """
    counts = {verdict: 0 for verdict in VERDICTS}
    for entry in entries:
        counts[entry["verdict"]] += 1
    failing = [{key: entry.get(key) for key in FAILING_FIELDS} for entry in sort_worst_first(entries) if entry["verdict"] in FAILING_VERDICTS]
    return {
        "counts": counts,
        "total": len(entries),
        "failing": failing,
        "failing_hosts": sorted(set(row["host"] for row in failing)),
        "input_errors": list(input_errors),
        "passed": not failing and not input_errors,
    }


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
                 run_metadata: Mapping[str, Any], outlier_fraction: float = DEFAULT_OUTLIER_FRACTION, *,
                 settings: Optional[Settings] = None, acceptance: Any = None, rules_source: Optional[str] = None,
                 rules_errors: Sequence[str] = (), baseline: Any = None, baseline_source: Optional[str] = None,
                 baseline_errors: Sequence[str] = ()) -> Dict[str, Any]:
    """The whole report: run metadata, rules, baseline, hosts, peer groups, every entry, summary.

    ``acceptance`` is the raw ``{rules: [...]}`` (RulesError when malformed), ``baseline`` a
    previous report.json as a dict (BaselineError when it is not one). A caller that could not
    load either passes what went wrong as ``rules_errors`` / ``baseline_errors``: the report
    shows them and ``summary.passed`` is false. Inputs are not modified; entries refer to the
    given record dicts (copy them first if the caller must keep them apart).
    """
    settings = settings if settings is not None else make_settings(outlier_fraction)
    rules = validate_rules(acceptance)
    index = baseline_index(baseline) if baseline is not None else None
    entries = judge_fleet(records_by_host, host_statuses, settings=settings, rules=rules, baseline=index)
    baseline_run = _mapping(_mapping(baseline).get("run"))
    return {
        "report_schema": REPORT_SCHEMA,
        "run": dict(run_metadata),
        "rules": {
            "outlier_fraction": settings.outlier_fraction,
            "robust_z_limit": settings.robust_z_limit,
            "robust_z_min_deviation": settings.robust_z_min_deviation,
            "min_peers": MIN_PEERS,
            "small_block_max_bytes": SMALL_BLOCK_MAX_BYTES,
            "peer_group": settings.peer_group,
            "max_cv": settings.max_cv,
            "regression_fraction": settings.regression_fraction,
            "cache_bypass_min_fraction": CACHE_BYPASS_MIN_FRACTION,
            "verdict_precedence": list(VERDICTS),
            "acceptance": rules,
            "source": rules_source,
            "errors": list(rules_errors),
        },
        "baseline": {
            "source": baseline_source,
            "started": baseline_run.get("started") if index is not None else None,
            "disks_tests": len(index) if index is not None else 0,
            "errors": list(baseline_errors),
        },
        "hosts": _hosts_section(records_by_host, host_statuses),
        "groups": group_statistics(records_by_host, settings.peer_group),
        "results": entries,
        "summary": summarize(entries, ["rules: " + error for error in rules_errors] + ["baseline: " + error for error in baseline_errors]),
    }
