# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What fio's JSON (fio.py) and its normal and terse output (fio_text.py) make alike: the FioJob and its
directions, latency and steady state, and the rules both apply to fio's figures (exercised, make_direction,
pick_latency) and to its error lines. Neither parser imports the other's code: both import this module."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .fio_verify import BadBlock
from .records import PERCENTILE_KEYS
from .units import ms_to_s

TOOL = "fio"
DIRECTIONS = ("read", "write", "trim")
PERCENTILES = tuple((name, wanted) for wanted, name in PERCENTILE_KEYS)
MAX_NOISE_LINES = 20
_ERR_LINE = re.compile(r"\berr=\s*(-?[0-9]+)/")


@dataclass
class Direction:
    """One I/O direction of one job, in SI base units."""

    io_bytes: int
    runtime_ms: float
    bytes_per_s: Optional[float]
    iops: Optional[float]  # None only from a normal output's group summary line
    total_ios: Optional[int]
    latency_ns: Optional[Dict[str, Optional[float]]]


@dataclass
class FioJob:
    """One fio job (or one client's job) as reported in the JSON output."""

    index: int
    name: str
    groupid: Optional[int]
    client: Optional[str]
    version: Optional[str]
    error_code: int
    error: Optional[str]
    read: Optional[Direction] = None
    write: Optional[Direction] = None
    trim: Optional[Direction] = None
    fsyncs: Optional[int] = None
    # fsync/fdatasync latency (fio's "sync"): a commit's latency, keys of pick_latency; None without syncs
    sync_latency_ns: Optional[Dict[str, Optional[float]]] = None
    warnings: List[str] = field(default_factory=list)
    steadystate: Optional["SteadyState"] = None  # only for a job run with steadystate= (ss_dur > 0)
    # A job run with verify= (its "job options"): what it checked, and every block that did not read back as
    # written (fio_verify.py). None: not a verify job.
    verify: Optional[str] = None
    bad_blocks: Optional[List["BadBlock"]] = None
    verify_total_errors: Optional[int] = None   # fio's total_err (continue_on_error): may count more than it printed

    @property
    def directions(self) -> List[Tuple[str, Direction]]:
        found = [(name, getattr(self, name)) for name in DIRECTIONS]
        return [(name, found_dir) for name, found_dir in found if found_dir is not None]

    @property
    def bytes(self) -> int:
        return sum(found.io_bytes for _name, found in self.directions)

    @property
    def seconds(self) -> Optional[float]:
        """The longest direction runtime: fio's own measure of how long the job did I/O."""
        runtimes = [found.runtime_ms for _name, found in self.directions]
        return ms_to_s(max(runtimes)) if runtimes else None

    @property
    def fsyncs_per_s(self) -> Optional[float]:
        seconds = self.seconds
        if not self.fsyncs or not seconds:
            return None
        return self.fsyncs / seconds

    @property
    def tool_version(self) -> Optional[str]:
        if self.version is None:
            return None
        return self.version[4:] if self.version.startswith("fio-") else self.version


@dataclass
class SteadyState:
    """fio's ``steadystate`` object of one job (fio >= 2.99, a job with ``steadystate=``/``ss=``).

    ``iops``/``bw`` are the samples of the last window (one per second, oldest first; bytes/s for bw).
    fio fills only the figure of its own criterion: ``max_deviation`` for ``iops:``/``bw:``, ``slope``
    for ``*_slope:`` (the other stays 0).
    """

    setting: str          # "ss": the criterion and limit as fio understood them, e.g. "iops:20.000000%"
    duration_s: int       # ss_dur, the window length in samples (seconds)
    attained: bool
    criterion: str        # the criterion's last value, e.g. "3.125000%"
    max_deviation: float
    slope: float
    iops: List[int]
    bw: List[int]


@dataclass
class LatencyStats:
    """One latency statistic of one direction as fio reported it, in ns (JSON, normal or terse output)."""

    mean: Optional[float]
    minimum: Optional[float]
    maximum: Optional[float]
    stdev: Optional[float]
    percentiles: Dict[str, Optional[float]] = field(default_factory=dict)  # keys of PERCENTILES


def pick_latency(clat: Optional[LatencyStats], lat: Optional[LatencyStats], path: str, lat_key: str,
                 warnings: List[str]) -> Optional[Dict[str, Optional[float]]]:
    """The record's latency in ns, keys mean, min, p50, p95, p99, p99_9, max, stdev: the completion latency
    (clat) when it has samples; else the total latency (lat: mean, min, max, stdev, no percentiles, with a
    warning); None if neither has samples. Every fio output format goes through this one rule."""
    if clat is not None:
        latency: Dict[str, Optional[float]] = {"mean": clat.mean, "min": clat.minimum}
        latency.update((name, clat.percentiles.get(name)) for name, _pct in PERCENTILES)
        latency["max"] = clat.maximum
        latency["stdev"] = clat.stdev
        return latency
    if lat is not None:
        warnings.append("%s: no completion latency (clat); latency mean, min, max and stdev are fio's total "
                        "latency (%s), no percentiles" % (path, lat_key))
        latency = {"mean": lat.mean, "min": lat.minimum}
        latency.update((name, None) for name, _pct in PERCENTILES)
        latency["max"] = lat.maximum
        latency["stdev"] = lat.stdev
        return latency
    return None


def exercised(io_bytes: int, runtime_ms: float, total_ios: Optional[float]) -> bool:
    """False for a direction the job did not do (or whose only I/O failed at once): no record figures."""
    return io_bytes != 0 or bool(total_ios and runtime_ms)


def make_direction(io_bytes: int, runtime_ms: float, iops: Optional[float], total_ios: Optional[int],
                   latency: Optional[Dict[str, Optional[float]]], path: str, warnings: List[str]) -> Direction:
    """One direction's figures: bytes/s = io_bytes / runtime (fio's own bandwidth figures are this quotient
    truncated or rounded), for every fio output format."""
    bytes_per_s = io_bytes * 1000.0 / runtime_ms if runtime_ms > 0 else None
    if bytes_per_s is None:
        warnings.append("%s: runtime 0 ms, bytes per second unknown" % path)
    return Direction(io_bytes, runtime_ms, bytes_per_s, iops, total_ios, latency)


def strerror_text(code: int) -> str:
    try:
        return os.strerror(code)
    except (ValueError, OverflowError):
        return "unknown error"


def error_lines_by_code(noise: List[str]) -> Dict[str, str]:
    """fio's own line for each error code it printed ('err= 5/'), the first one; read once for all jobs."""
    found: Dict[str, str] = {}
    for line in noise:
        for match in _ERR_LINE.finditer(line):
            found.setdefault(match.group(1), line)
    return found


# fio's fail-fast options (max_latency=, rate_min=) end a job with ETIMEDOUT / EIO and one line saying why.
_MAX_LATENCY = re.compile(r"fio: latency of ([0-9]+) nsec exceeds specified max \(([0-9]+) nsec\): .* (read|write|trim) "
                          r"[0-9]+ [0-9]+$")
_RATE_MIN = re.compile(r"^(?P<job>.+?): rate_min=(?P<min>[0-9]+)B/s not met, got (?P<got>[0-9]+)B/s$")
ETIMEDOUT, EIO = 110, 5
# How a fail-fast end starts the record's error: the report judges such a record slow, not error (the disk was
# measured and found too slow; the tool did not break).
FAIL_FAST_PREFIX = "fail-fast: "


def _ms(ns: str) -> str:
    ms = int(ns) / 1e6
    return ("%.1f ms" if ms >= 1 else "%.3f ms") % ms


def fail_fast_lines(noise: List[str]) -> Dict[str, str]:
    """What fio's fail-fast lines say, read once for all jobs: {"": the first max_latency reason, job name: its
    rate_min reason}."""
    found: Dict[str, str] = {}
    for line in noise:
        text = line.strip()
        latency = _MAX_LATENCY.search(text)
        if latency:
            found.setdefault("", FAIL_FAST_PREFIX + "a %s took %s, over max_latency %s" % (
                latency.group(3), _ms(latency.group(1)), _ms(latency.group(2))))
            continue
        rate = _RATE_MIN.match(text)
        if rate:
            found.setdefault(rate.group("job"), FAIL_FAST_PREFIX + "%.2f MB/s, under rate_min %.2f MB/s" % (
                int(rate.group("got")) / 1e6, int(rate.group("min")) / 1e6))
    return found


def fail_fast_reason(code: int, name: str, found: Dict[str, str]) -> Optional[str]:
    """Why a job with max_latency= (ETIMEDOUT) or rate_min= (EIO) ended early, from fail_fast_lines; None for any
    other end. fio's max_latency line does not name the job; a job ended by ETIMEDOUT takes it."""
    if code == ETIMEDOUT:
        return found.get("")
    if code == EIO:
        return found.get(name) if name else None
    return None


def error_message(code: int, name: str, err_lines: Dict[str, str]) -> Optional[str]:
    if code == 0:
        return None
    line = err_lines.get("%d" % code)
    if line is not None:
        return line
    return "fio job '%s' reported error %d (%s)" % (name, code, strerror_text(code))


def noise_warnings(noise: List[str]) -> List[str]:
    if len(noise) <= MAX_NOISE_LINES:
        return noise
    return noise[:MAX_NOISE_LINES] + ["... %d more lines of fio output outside the JSON" % (len(noise) - MAX_NOISE_LINES)]
