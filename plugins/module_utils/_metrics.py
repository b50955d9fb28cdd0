# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figure rules host and controller share: which figure a record is judged on, whether the
device counters prove the cache was bypassed, how much repeats vary.

Host code (the runner, evidence) needs these to decide about a record before it leaves the host;
the controller's judge (plugins/plugin_utils/_aggregate.py) applies the same rules to the fleet.
This is the only piece of the judge that ships to hosts: stdlib only, no Ansible imports.

- ``primary_metric``: what ``params.judged_on`` declares (the test catalog's, module_utils/_plan.py, which
  the plan puts in every job's params) when the record has that figure. A record without the declaration
  (output parsed by bench_facts, a test of your own, a record from before the catalog declared it):
  IOPS when an IOPS figure exists and ``params.rw``/``params.readwrite`` is a fio random pattern or
  ``params.block_size`` is at most 64 KiB; otherwise bytes per second. The test id is never read for it.
  A record that measured both directions is judged on their sum.
- ``cache_bypass``: the block-device counters must account for ``CACHE_BYPASS_MIN_FRACTION`` of
  the bytes the tool says it moved.
- ``coefficient_of_variation``: sample standard deviation over mean of the repeats.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping as _MappingABC
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

# device_io must account for this share of the bytes the tool moved.
CACHE_BYPASS_MIN_FRACTION = 0.95
SMALL_BLOCK_MAX_BYTES = 64 * 1024

METRIC_IOPS = "iops"
METRIC_BYTES_PER_S = "bytes_per_s"

NOTE_NO_DEVICE_COUNTERS = "cache bypass not proven: no device counters"

# fio's own names for its random patterns (rw= / readwrite=).
_RANDOM_FIO_PATTERNS = frozenset(("randread", "randwrite", "randrw", "randtrim"))

# The judge's per-record path calls these 100,000 times at fleet scale: exact types first
# (type(x) is float, type(x) is dict), subclasses and anything else the general way.
# pylint: disable=unidiomatic-typecheck

# What a read-only lookup of a missing sub-dict returns: shared, and nobody can fill it by mistake.
EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """The value when it is a mapping, else an empty read-only one (records are caller data: a
    missing or null sub-dict must read as empty, not crash)."""
    # dict first: isinstance against the Mapping ABC costs ten times more.
    if type(value) is dict or isinstance(value, _MappingABC):
        return value
    return EMPTY_MAPPING


def number_or_none(value: Any) -> Optional[float]:
    """The value as a float when it is an int or float, else None (a bool figure is a bug upstream, not 1 op/s)."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def sum_of(first: Optional[float], second: Optional[float]) -> Optional[float]:
    """first + second of the figures present, None when neither is (0 + x, so -0.0 reads 0.0)."""
    if first is None:
        return None if second is None else 0 + second
    return 0 + first if second is None else first + second


def _sum_of_directions(metrics: Mapping[str, Any], read_key: str, write_key: str) -> Optional[float]:
    return sum_of(number_or_none(metrics.get(read_key)), number_or_none(metrics.get(write_key)))


def bytes_per_s_of(record: Mapping[str, Any]) -> Optional[float]:
    """Read + write bytes per second of a record (None when neither was measured)."""
    return _sum_of_directions(mapping_or_empty(record.get("metrics")), "read_bytes_per_s", "write_bytes_per_s")


def iops_of(record: Mapping[str, Any]) -> Optional[float]:
    """Read + write operations per second of a record (None when neither was measured)."""
    return _sum_of_directions(mapping_or_empty(record.get("metrics")), "read_iops", "write_iops")


def _random_params(params: Mapping[str, Any]) -> bool:
    pattern = params.get("rw", params.get("readwrite"))
    return str(pattern or "").lower() in _RANDOM_FIO_PATTERNS


def _small_block(params: Mapping[str, Any]) -> bool:
    block_size = number_or_none(params.get("block_size"))
    return block_size is not None and 0 < block_size <= SMALL_BLOCK_MAX_BYTES


def primary_of(params: Mapping[str, Any], bytes_per_s: Optional[float],
               iops: Optional[float]) -> Optional[Tuple[str, float]]:
    """(metric name, value) of ``primary_metric`` from a record's parts, None when it has no figure.

    What the record declares (``params.judged_on``: the test catalog's, docs/tests.md) decides. Without it (output
    parsed by bench_facts, a job of your own, an old baseline) the params do: a random fio pattern or a block of at
    most 64 KiB is judged on IOPS when there is an IOPS figure. The test id is a name, never read for this."""
    declared = params.get("judged_on")
    if declared == METRIC_IOPS and iops is not None:
        return METRIC_IOPS, iops
    if declared == METRIC_BYTES_PER_S and bytes_per_s is not None:
        return METRIC_BYTES_PER_S, bytes_per_s
    if iops is not None and (_random_params(params) or _small_block(params)):
        return METRIC_IOPS, iops
    if bytes_per_s is not None:
        return METRIC_BYTES_PER_S, bytes_per_s
    if iops is not None:
        return METRIC_IOPS, iops
    return None


def primary_metric(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The figure a record is judged on: ``{"name": "iops" | "bytes_per_s", "value": float}``.

    What ``params.judged_on`` declares, when the record has that figure; else IOPS when the record has
    an IOPS figure and is random access or small-block (<= 64 KiB); otherwise bytes per second; IOPS
    as a last resort when that is all there is; None when the record has neither.
    """
    params = mapping_or_empty(record.get("params"))
    found = primary_of(params, bytes_per_s_of(record), iops_of(record))
    return None if found is None else {"name": found[0], "value": found[1]}


def coefficient_of_variation(samples: Sequence[float]) -> Optional[float]:
    """Sample standard deviation / mean; None for fewer than 2 samples or a mean that is not positive."""
    if len(samples) < 2:
        return None
    mean = statistics.mean(samples)
    if mean <= 0:
        return None
    return statistics.stdev(samples) / mean


def _directions(record: Mapping[str, Any]) -> Tuple[bool, bool]:
    metrics = mapping_or_empty(record.get("metrics"))
    reads = any(number_or_none(metrics.get(key)) is not None for key in ("read_bytes_per_s", "read_iops"))
    writes = any(number_or_none(metrics.get(key)) is not None for key in ("write_bytes_per_s", "write_iops"))
    return reads, writes


def bypass_finding(moved: Optional[float], reads: bool, writes: bool, device_io: Any, params: Mapping[str, Any],
                   min_fraction: float = CACHE_BYPASS_MIN_FRACTION) -> Tuple[Optional[str], Optional[str]]:
    """``cache_bypass`` from a record's parts: bytes moved, the directions it measured, its
    device_io and params."""
    if moved is None or moved <= 0 or not (reads or writes):
        return None, None
    direct = params.get("direct") is True
    if not isinstance(device_io, _MappingABC):
        return None, (None if direct else NOTE_NO_DEVICE_COUNTERS)
    read_bytes = number_or_none(device_io.get("read_bytes"))
    write_bytes = number_or_none(device_io.get("write_bytes"))
    if reads and writes:
        seen, what = (None if read_bytes is None or write_bytes is None else read_bytes + write_bytes), "read and wrote"
    elif writes:
        seen, what = write_bytes, "wrote"
    else:
        seen, what = read_bytes, "read"
    if seen is None:
        return None, (None if direct else NOTE_NO_DEVICE_COUNTERS)
    if seen < min_fraction * moved:
        # %g: 95, 97.5 (the fraction as the user wrote it, not rounded to a whole percent).
        return ("cache bypass not proven: the device %s %d of the %d bytes the tool moved (%.1f%%, < %s%%)"
                % (what, seen, moved, 100.0 * seen / moved, "%g" % (min_fraction * 100))), None
    return None, None


def cache_bypass(record: Mapping[str, Any],
                 min_fraction: float = CACHE_BYPASS_MIN_FRACTION) -> Tuple[Optional[str], Optional[str]]:
    """(reason it is invalid, note) for a record; both None when the device saw enough.

    Invalid: a write-only record whose ``device_io.write_bytes``, a read-only record whose
    ``device_io.read_bytes``, or a mixed record whose sum of both is below ``min_fraction`` (95 %)
    of ``bytes``. Without counters the record is not judged invalid; buffered records
    (``params.direct`` not true) get the note "cache bypass not proven: no device counters".
    """
    reads, writes = _directions(record)
    return bypass_finding(number_or_none(record.get("bytes")), reads, writes, record.get("device_io"),
                          mapping_or_empty(record.get("params")), min_fraction)
