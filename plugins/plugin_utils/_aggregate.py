# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet statistics and verdicts over diskproof result records (schema 1).

Pure Python (no Ansible imports) so pytest reaches it directly and the same records can be
re-judged outside a playbook run. Its one caller is the report pipeline (plugin_utils/_report.py), which the
callback ``diskproof.fleet.report``, the action ``diskproof.fleet.report`` and the filter
``diskproof.fleet.fleet_report`` all go through: it calls ``judge_report``. docs/report.md is the user
documentation of everything below.

One entry per record, plus one per host problem that left no record. Each entry keeps every
finding (``reasons``) and the verdict of the worst one, in this precedence:

- ``corrupt``: a verify test's ``integrity`` has bad blocks.
- ``unhealthy``: the disk's health got worse during the run (``_causes.health_reasons``: a counter grew, a critical
  warning, SMART failed, above ``max_temperature_c``; a burn-in's ``health: ...`` error).
- ``error``: the record carries ``error`` (the tool failed; partial figures are not judged).
- ``not_measured``: the host was unreachable, or a task failed without producing a record, or
  the host produced no record at all, or a record has neither a throughput nor an IOPS figure.
- ``invalid``: the block-device counters saw less than 95 % of the bytes the tool says it moved
  (the page cache was measured, not the disk). No counters: not invalid, a note says so.
- ``not_steady``: a steady-state test (``ssd_steady_*``: the record has ``steady_state``) did not reach
  steady state within its time limit: its figure is the last window's mean, not a steady-state figure,
  so it is not worth comparing with a datasheet, a baseline or peers until the drive settles.
- ``slow``: an acceptance rule (absolute minimum, maximum p99 latency, datasheet percentage) fails.
- ``regressed``: more than ``regression_fraction`` below the baseline report's value for the same
  disk (serial, else WWN) and test.
- ``outlier``: more than ``outlier_fraction`` below the median of its peer group, or a robust
  z-score 0.6745 * (x - median) / MAD below ``robust_z_limit`` while also at least
  ``robust_z_min_deviation`` below the median; judged only when the group has ``MIN_PEERS``.
- ``unstable``: the record's ``samples`` (per-repeat primary values) vary by a coefficient of
  variation above ``max_cv``.
- ``pass``: everything else (including groups too small to compare; the reason says so).

An entry that is not a pass gets its likely causes (``Entry.causes``: ``_causes.Cohorts.likely_causes``), and the
report the groups' ``differences``.

The primary metric of a record (``primary_metric``, module_utils/_metrics.py):

- what the record declares, ``params.judged_on`` (the test catalog's, module_utils/_plan.py).
- without it: IOPS when an IOPS figure exists and ``params.rw``/``params.readwrite`` is a fio random
  pattern or ``params.block_size`` is at most 64 KiB (small-block tests are bound by operations, not
  bytes); otherwise bytes per second. The test id is a name and is never read for this.
- a record that measured both directions (mixed read/write) is judged on their sum.

One path: a record is read once, into ``RecordFacts`` (``record_facts``): the few values judging
and the writers need, so the record itself need not stay in memory (the callback spools it).
``judge_entries`` judges facts into ``Entry`` tuples; ``judge_report`` adds the report's other
sections. Every writer reads those entries (plugin_utils/_report.py): report.json is
``report_json_chunks`` (each entry's line around the record's own JSON text), and the filter's report
(``_report.build_report``) is that text read back. docs/benchmarks.md measures it at 10,000 hosts x 12 results.
"""
from __future__ import annotations

import copy
import fnmatch
import json
import math
import statistics
import struct
import sys
from collections.abc import Mapping as _MappingABC
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

# The figure rules hosts apply too (primary metric, cache bypass, CV) live in module_utils/_metrics.py.
from ansible_collections.diskproof.fleet.plugins.module_utils._metrics import (
    CACHE_BYPASS_MIN_FRACTION, METRIC_BYTES_PER_S, METRIC_IOPS, SMALL_BLOCK_MAX_BYTES, bypass_finding,
    coefficient_of_variation, primary_of, sum_of)
from ansible_collections.diskproof.fleet.plugins.module_utils._metrics import mapping_or_empty as _mapping
from ansible_collections.diskproof.fleet.plugins.module_utils._metrics import number_or_none as _number
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fio_job import FAIL_FAST_PREFIX
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _causes
from ansible_collections.diskproof.fleet.plugins.plugin_utils._baseline_trust import lost_baseline_hosts

# 2: verdicts invalid/slow/regressed/unstable, reasons, identity peer groups, acceptance rules, baseline.
# Later additions kept 2, as corrupt and not_steady did: new keys (results[].likely_causes, differences,
# rules.max_temperature_c) and the verdict unhealthy are additive; every reader of 2 reads them (docs/report.md).
REPORT_SCHEMA = 2
# Baselines may come from reports of either shape: both keep results[].record.
BASELINE_REPORT_SCHEMAS = (1, 2)

VERDICT_CORRUPT = "corrupt"
VERDICT_UNHEALTHY = "unhealthy"
VERDICT_ERROR = "error"
VERDICT_NOT_MEASURED = "not_measured"
VERDICT_INVALID = "invalid"
VERDICT_NOT_STEADY = "not_steady"
VERDICT_SLOW = "slow"
VERDICT_REGRESSED = "regressed"
VERDICT_OUTLIER = "outlier"
VERDICT_UNSTABLE = "unstable"
VERDICT_PASS = "pass"
# Precedence, worst first: data that did not read back as written (no speed makes up for it), then no valid figure at
# all, then a figure that cannot be trusted, then a figure that breaks a stated rule, then one that is worse than
# before, then worse than its peers.
# not_steady sits with the untrustworthy figures: a steady-state test that never settled measured no
# steady state, so what its figure breaks (rules, baseline, peers) comes after.
# unhealthy right after corrupt: a disk whose error counters grew (or that overheated) under the test is the finding
# whatever its figure, and a burn-in's tool error is most often that damage showing (docs/report.md, Verdicts).
VERDICTS = (VERDICT_CORRUPT, VERDICT_UNHEALTHY, VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_INVALID, VERDICT_NOT_STEADY, VERDICT_SLOW,
            VERDICT_REGRESSED, VERDICT_OUTLIER, VERDICT_UNSTABLE, VERDICT_PASS)
# What kind of finding each verdict is (the pages' style): "bad" (no valid figure), "warn" (a figure judged too low or
# unsteady), "muted" (nothing measured), "ok".
VERDICT_KINDS = {VERDICT_CORRUPT: "bad", VERDICT_UNHEALTHY: "bad", VERDICT_ERROR: "bad", VERDICT_NOT_MEASURED: "muted",
                 VERDICT_INVALID: "bad", VERDICT_NOT_STEADY: "warn", VERDICT_SLOW: "warn", VERDICT_REGRESSED: "warn",
                 VERDICT_OUTLIER: "warn", VERDICT_UNSTABLE: "warn", VERDICT_PASS: "ok"}
# What makes summary.passed false. Unstable is worth a look, not a failed acceptance.
FAILING_VERDICTS = (VERDICT_CORRUPT, VERDICT_UNHEALTHY, VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_INVALID, VERDICT_NOT_STEADY, VERDICT_SLOW,
                    VERDICT_REGRESSED, VERDICT_OUTLIER)
_RANK = {verdict: rank for rank, verdict in enumerate(VERDICTS)}

DEFAULT_OUTLIER_FRACTION = 0.15
DEFAULT_ROBUST_Z_LIMIT = -3.5
# Identical lab disks spread by 0.1 %; a z-score alone would call -0.2 % an outlier there.
DEFAULT_ROBUST_Z_MIN_DEVIATION = 0.05
ROBUST_Z_SCALE = 0.6745
# MAD x 1.4826 estimates the standard deviation of normally distributed figures (1 / 0.6745).
ROBUST_SD_SCALE = 1.4826
DEFAULT_MAX_CV = 0.05
DEFAULT_REGRESSION_FRACTION = 0.10
# A p99 this many times its peers' median is a tail worth a look (docs/report.md, "Latency"): a slow-failing drive's
# tail grows several-fold long before its mean moves, while healthy twins' p99 stay within tens of percent.
DEFAULT_LATENCY_OUTLIER_FACTOR = 2.0
# Above this the disk is unhealthy (docs/report.md, "Health rules"): most drives' warning temperature is 70-85 °C, and
# a test that heats a disk past 70 °C in a rack measures its throttling, not its speed.
DEFAULT_MAX_TEMPERATURE_C = _causes.DEFAULT_MAX_TEMPERATURE_C
# No drive runs at 150 °C: a larger limit is a typo (Fahrenheit, an extra digit), not a site's choice.
MAX_TEMPERATURE_LIMIT_C = 150
# A median of two says nothing about which of the two is wrong.
MIN_PEERS = 3

PEER_GROUP_IDENTITY = "identity"
PEER_GROUP_TEST = "test"
PEER_GROUP_CHOICES = (PEER_GROUP_IDENTITY, PEER_GROUP_TEST)
# The basis a group key was built on (groups[].basis).
BASIS_IDENTITY = "identity"
BASIS_TEST_ROTATIONAL = "test_rotational"
BASIS_TEST = "test"
# Targets that are not on a disk (target.not_a_disk: tmpfs, overlay, NFS ...): grouped by filesystem type only,
# whatever peer_group says, so they are never compared with disks (nor disks with them).
BASIS_NOT_A_DISK = "not_a_disk"
NOT_A_DISK_KEY_PREFIX = "not_a_disk="

HOST_OK = "ok"
HOST_FAILED = "failed"
HOST_UNREACHABLE = "unreachable"

NOTE_SAMPLES_IGNORED = "samples ignored: not a list of numbers"
NOTE_NOT_A_DISK = ("not a disk (%s): compared only with other %s targets; acceptance rules and baseline are for "
                   "disks and were not applied")
REASON_NO_FIGURE = "record has no throughput or IOPS figure"
# A dd rate kept without a direction (the parser could not tell read from write): shown, not judged.
REASON_NO_DIRECTION = ("dd rate %s of unknown direction (metrics.transfer_bytes_per_s) is not judged: "
                       "parse again with direction=read, write or copy")

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

def _key_value(value: Any) -> str:
    # JSON spelling, so a key reads the same in report.json: true, null, 4000787030016.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _disk_class(rotational: Any, transport: Any) -> Optional[str]:
    if str(transport or "").lower() == "nvme":
        return "nvme"
    if isinstance(rotational, bool):
        return "hdd" if rotational else "ssd"
    return None


def not_a_disk_filesystem(target: Mapping[str, Any]) -> Optional[str]:
    """The filesystem type of a target marked ``not_a_disk: true`` ("unknown" when unnamed), else None."""
    if target.get("not_a_disk") is not True:
        return None
    filesystem = target.get("filesystem")
    return str(filesystem) if filesystem not in (None, "") else "unknown"


def peer_group_key(facts: RecordFacts, peer_group: str) -> GroupKey:
    """Records judged against each other share this key (with the metric name: a peer group).

    ``identity``: test, model, firmware and capacity of the target disk; when the model is unknown
    (VMs, loop devices) test and rotational. ``test``: the test id alone. A target that is not a
    disk (``target.not_a_disk``), under either: test and its filesystem type.
    """
    test_id = str(facts.test or "")
    target = facts.target
    if target.not_a_disk is not None:
        return (test_id, NOT_A_DISK_KEY_PREFIX + target.not_a_disk)
    if peer_group == PEER_GROUP_TEST:
        return (test_id,)
    if target.model is None:
        return (test_id, "rotational=" + _key_value(target.rotational))
    return (test_id, "model=" + _key_value(target.model), "firmware=" + _key_value(target.firmware),
            "size_bytes=" + _key_value(target.size_bytes))


def key_basis(key: GroupKey) -> str:
    """Which fields a key was built from: identity, test_rotational, test or not_a_disk."""
    if len(key) == 1:
        return BASIS_TEST
    if key[1].startswith(NOT_A_DISK_KEY_PREFIX):
        return BASIS_NOT_A_DISK
    return BASIS_TEST_ROTATIONAL if key[1].startswith("rotational=") else BASIS_IDENTITY


def _disk_id(serial: Any, wwn: Any) -> Optional[Tuple[str, str]]:
    if serial not in (None, ""):
        return "serial", str(serial)
    if wwn not in (None, ""):
        return "wwn", str(wwn)
    return None


def _position_id(host: Any, path: Any) -> Optional[Tuple[str, str]]:
    """The baseline key of a disk with neither serial nor WWN (many VM disks, loop devices): the
    same target on the same host. Weaker than a serial (a replaced disk inherits its slot's
    history), so the reason names it."""
    if host in (None, "") or path in (None, ""):
        return None
    return "host and target", "%s:%s" % (host, path)


# ---------------------------------------------------------------------------------------------
# record facts: what judging and the writers read, taken once per record
# ---------------------------------------------------------------------------------------------

class Target(NamedTuple):
    """RecordFacts.target: the record's target fields, and not_a_disk_filesystem of them."""

    path: Any
    device: Any
    model: Any
    firmware: Any
    size_bytes: Any
    rotational: Any
    transport: Any
    not_a_disk: Optional[str]


# The latency figures the rules and the report read: the tail (p99, p99.9, p99.99, max) of each direction's completion
# latency and of the commit latency (metrics.latency_ns.sync: fsync/fdatasync), as rule figures in ms.
LATENCY_DIRECTIONS = ("read", "write", "sync")
LATENCY_STATS = (("p99", "p99"), ("p99_9", "p99.9"), ("p99_99", "p99.99"), ("max", "max"))
LATENCY_FIGURES = tuple("%s_%s_ms" % (direction, stat) for direction in LATENCY_DIRECTIONS for stat, _label in LATENCY_STATS)
# figure -> "read p99.99": how a reason names it
LATENCY_FIGURE_TEXT = {"%s_%s_ms" % (direction, stat): "%s %s" % (direction, label)
                       for direction in LATENCY_DIRECTIONS for stat, label in LATENCY_STATS}


class Figures(NamedTuple):
    """RecordFacts.figures: metrics.<name>, and the latencies (ns) of LATENCY_FIGURES, in that order."""

    read_bytes_per_s: Any
    write_bytes_per_s: Any
    read_iops: Any
    write_iops: Any
    fsyncs_per_s: Any
    # The LATENCY_FIGURES values (ns) packed (_TAILS, NaN where not a number), or None when the record has none.
    # Packed: a fleet keeps 100,000 of these, and 12 doubles in one bytes object take a third of a tuple of floats
    # (docs/benchmarks.md "Callback scale").
    latency_ns: Optional[bytes]
    transfer_bytes_per_s: Any  # a dd rate of unknown direction: shown in the reason, never judged


_SCALARS = (str, int, float, bool, type(None))


class RecordFacts(NamedTuple):
    """The values of one record that judging and the writers read (``record_facts``).

    Only immutable values: the record dict itself can go (or be changed by whoever owns it) once
    its facts are taken. Values are the record's own (``test``, ``target`` fields, ``error``,
    ``figures``, ``tool``, ``seconds``, ``bytes``), unconverted, so every writer shows what the
    record said; ``metric_*``, ``invalid``, ``note`` and ``samples`` are derived.
    """

    test: Any
    target: Target
    serial: Any
    wwn: Any
    error: Any
    metric_name: Optional[str]                 # primary metric; None: no throughput or IOPS figure
    metric_value: Optional[float]
    invalid: Optional[str]                     # cache_bypass: why the figure cannot be trusted
    note: Optional[str]                        # cache_bypass: a note
    figures: Figures
    samples: Optional[Tuple[Optional[float], ...]]  # None: no samples; (None,) when not a list
    tool: Any
    seconds: Any
    bytes: Any
    not_steady: Optional[str] = None           # steady_state: why steady state was not attained (None: attained or n/a)
    runs_total: Any = None                     # every measured run, those set aside included (bench_run)
    length_factor: Any = None                  # 2: the samples come from runs twice the planned length
    # What the pages show besides the judgement, so that no writer reads the record again:
    description: str = ""                      # record_description: 'fio 3.33, block 4 KiB, O_DIRECT, iodepth 32'
    zcav: Optional[Tuple[Tuple[float, float], ...]] = None  # metrics.zcav as (offset, read bytes/s), sorted
    steady: Optional[Mapping[str, Any]] = None  # a copy of steady_state (ssd_steady_* only)
    direct: bool = False                       # params.direct: O_DIRECT, the page cache out of the latency
    integrity: Optional["Integrity"] = None    # a verify test's record.integrity (None: not a verify test)
    burnin: Optional[str] = None               # a burn-in cycle's progress ('burn-in cycle 3 of up to 9: ...')
    disk: Optional[_causes.DiskFacts] = None   # disk_state (and a burn-in's health): health rules, likely causes


def _own(value: Any) -> Any:
    """A value safe to keep once the record is gone: scalars as they are, anything else copied.

    Text is kept as plain str (not Ansible's tagged subclass) and interned: a fleet repeats its
    tests, paths, models and serials thousands of times, and each result brings its own copies
    (10,000 hosts x 12 results: 70 MB of duplicates otherwise, docs/benchmarks.md)."""
    if isinstance(value, str):
        return sys.intern(str.__str__(value))
    if isinstance(value, _SCALARS):
        return value
    return copy.deepcopy(value)


def record_facts(record: Mapping[str, Any]) -> RecordFacts:
    """The facts of one record: what judging and the writers read of it."""
    target = _mapping(record.get("target"))
    metrics = _mapping(record.get("metrics"))
    latency = _mapping(metrics.get("latency_ns"))
    tails = [_mapping(latency.get(direction)) for direction in LATENCY_DIRECTIONS]
    figures = Figures(*[_own(value) for value in (
        metrics.get("read_bytes_per_s"), metrics.get("write_bytes_per_s"), metrics.get("read_iops"),
        metrics.get("write_iops"), metrics.get("fsyncs_per_s"))],
        latency_ns=_packed_tails(tails),
        transfer_bytes_per_s=_own(metrics.get("transfer_bytes_per_s")))
    read_bytes_per_s, write_bytes_per_s = _number(figures.read_bytes_per_s), _number(figures.write_bytes_per_s)
    read_iops, write_iops = _number(figures.read_iops), _number(figures.write_iops)
    reads = read_bytes_per_s is not None or read_iops is not None
    writes = write_bytes_per_s is not None or write_iops is not None
    test = _own(record.get("test"))
    metric_name = metric_value = invalid = note = None
    params = _mapping(record.get("params"))
    if reads or writes:
        metric_name, metric_value = primary_of(params, sum_of(read_bytes_per_s, write_bytes_per_s),
                                               sum_of(read_iops, write_iops))
        invalid, note = bypass_finding(_number(record.get("bytes")), reads, writes, record.get("device_io"), params)
    samples = record.get("samples")
    if samples is not None:
        samples = tuple(_number(sample) for sample in samples) if isinstance(samples, list) else (None,)
    steady = record.get("steady_state")
    return RecordFacts(
        test=test,
        target=Target(*[_own(value) for value in (
            target.get("path"), target.get("device"), target.get("model"), target.get("firmware"),
            target.get("size_bytes"), target.get("rotational"), target.get("transport"),
            not_a_disk_filesystem(target))]),
        serial=_own(target.get("serial")),
        wwn=_own(target.get("wwn")),
        error=_own(record.get("error")),
        metric_name=metric_name,
        metric_value=metric_value,
        invalid=invalid,
        note=note,
        figures=figures,
        samples=samples,
        tool=_own(record.get("tool")),
        seconds=_own(record.get("seconds")),
        bytes=_own(record.get("bytes")),
        not_steady=None if steady is None else _not_steady(steady),
        runs_total=_own(record.get("runs_total")),
        length_factor=_own(record.get("length_factor")),
        description=sys.intern(record_description(record)),
        zcav=_zcav_points(metrics.get("zcav")),
        steady=copy.deepcopy(steady) if isinstance(steady, _MappingABC) else None,
        direct=_is_direct(params.get("direct")),
        integrity=_integrity(record.get("integrity")),
        burnin=_own(_mapping(record.get("burnin")).get("progress")),
        disk=_causes.disk_facts(record),
    )


_TAILS = struct.Struct("<%dd" % len(LATENCY_FIGURES))


def _packed_tails(tails: Sequence[Mapping[str, Any]]) -> Optional[bytes]:
    """The LATENCY_FIGURES values of each direction's latency_ns as Figures.latency_ns keeps them (None: no number)."""
    values = [_number(tail.get(stat)) for tail in tails for stat, _label in LATENCY_STATS]
    if all(value is None for value in values):
        return None
    return _TAILS.pack(*[math.nan if value is None else value for value in values])


def latency_figure_values(figures: Figures) -> List[Optional[float]]:
    """The LATENCY_FIGURES values (ns) of a record's figures, in that order (None where not given)."""
    if figures.latency_ns is None:
        return [None] * len(LATENCY_FIGURES)
    return [None if math.isnan(value) else value for value in _TAILS.unpack(figures.latency_ns)]


class Integrity(NamedTuple):
    """RecordFacts.integrity: what the judge and the pages read of record.integrity (fio verify)."""

    check: Any                       # "pattern", "crc32c" ...
    verified_bytes: Any
    bad_blocks_total: int
    kinds: Tuple[Tuple[str, int], ...]   # (kind, count), most first
    blocks: Tuple[Tuple[Any, Any, Any, Any], ...]   # (offset, length, kind, detail): the first PAGE_BAD_BLOCKS

    @property
    def first(self) -> Optional[Tuple[Any, Any, Any]]:
        """(offset, length, detail) of the first bad block."""
        return None if not self.blocks else (self.blocks[0][0], self.blocks[0][1], self.blocks[0][3])


# Bad blocks a page lists per entry (the record keeps 64, module_utils/_parse/fio_verify.py MAX_BAD_BLOCKS).
PAGE_BAD_BLOCKS = 16

# How a reason names each kind of bad block (module_utils/_parse/fio_verify.py KINDS).
INTEGRITY_KIND_TEXT = {"flipped": "with changed data (flipped bits)", "misplaced": "holding another offset's data "
                       "(misplaced writes)", "stale": "holding an earlier pass's data (writes that never landed)",
                       "not_written": "holding no block of this test", "unclassified": "not classified"}


def _integrity(found: Any) -> Optional[Integrity]:
    if not isinstance(found, _MappingABC):
        return None
    total = _number(found.get("bad_blocks_total"))
    kinds = _mapping(found.get("kinds"))
    counted = sorted(((str(kind), int(count)) for kind, count in kinds.items() if _number(count)),
                     key=lambda item: (-item[1], item[0]))
    listed = found.get("bad_blocks")
    blocks = tuple((_own(block.get("offset")), _own(block.get("length")), _own(block.get("kind")),
                    _own(block.get("detail")))
                   for block in (_mapping(item) for item in (listed if isinstance(listed, list) else [])[:PAGE_BAD_BLOCKS]))
    return Integrity(_own(found.get("check")), _own(found.get("verified_bytes")), int(total or 0), tuple(counted),
                     blocks)


def integrity_reason(integrity: Integrity) -> str:
    """'18 bad blocks in 8 MiB read back (fio verify=pattern): 16 holding an earlier pass's data (...), ...; the
    first at offset 1048576, 4096 bytes: ...'."""
    verified = _number(integrity.verified_bytes)
    text = "%d bad block%s in %s read back (fio verify=%s)" % (
        integrity.bad_blocks_total, "" if integrity.bad_blocks_total == 1 else "s",
        bytes_size_text(verified) if verified is not None else "an unknown amount", integrity.check)
    if integrity.kinds:
        text += ": " + ", ".join("%d %s" % (count, INTEGRITY_KIND_TEXT.get(kind, kind)) for kind, count in integrity.kinds)
    if integrity.first is not None:
        text += "; the first at offset %s, %s bytes: %s" % integrity.first
    return text


def _corrupt(facts: "RecordFacts") -> bool:
    return facts.integrity is not None and facts.integrity.bad_blocks_total > 0


def _is_direct(value: Any) -> bool:
    """params.direct as the plan writes it (true) or as a fio job file has it (1); not 1.0, not "yes"."""
    return value is True or (isinstance(value, int) and not isinstance(value, bool) and value == 1)


def _zcav_points(points: Any) -> Optional[Tuple[Tuple[float, float], ...]]:
    """metrics.zcav of a ZCAV sweep as sorted (offset, read bytes/s) pairs; None when it has none."""
    if not isinstance(points, list):
        return None
    pairs = []
    for point in points:
        point = _mapping(point)
        offset, rate = finite_number(point.get("offset_bytes")), finite_number(point.get("read_bytes_per_s"))
        if offset is not None and rate is not None:
            pairs.append((offset, rate))
    return tuple(sorted(pairs)) or None


def _percent_text(value: Any) -> str:
    number = _number(value)
    return "?" if number is None else "%.1f%%" % number


def _not_steady(steady: Any) -> Optional[str]:
    """Why a steady-state record did not attain steady state (its steady_state from _steady.py), or None."""
    steady = _mapping(steady)
    if steady.get("attained") is True:
        return None
    mean = _number(steady.get("iops_mean"))
    return "steady state not attained within %s s (%s%s): last %s s window mean %s IOPS, max deviation %s, slope " \
        "excursion %s%s" % (
            steady.get("time_limit_s"), steady.get("criterion"),
            "" if steady.get("max_slope_excursion_percent") is None
            else ", slope excursion <= %s%%" % (steady.get("max_slope_excursion_percent"),),
            steady.get("window_s"), "?" if mean is None else "%.0f" % mean,
            _percent_text(steady.get("max_deviation_percent")), _percent_text(steady.get("slope_excursion_percent")),
            "" if not steady.get("why_not") else " (%s)" % (steady.get("why_not"),))


def _measured_metric(facts: RecordFacts) -> Optional[Tuple[str, float]]:
    # Only records without an error, with a figure, not disproven by the device counters and not corrupt take
    # part in the peer statistics and in a baseline.
    if facts.error or facts.invalid is not None or facts.metric_name is None or _corrupt(facts):
        return None
    return facts.metric_name, facts.metric_value  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# presentation helpers used in reasons (human units, always labelled)
# ---------------------------------------------------------------------------------------------

def one_line_text(value: Any) -> str:
    """Any value as one line of text ('' for None; a dict or list as sorted JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = str(value)
    return " ".join(text.split())


def finite_number(value: Any) -> Optional[float]:
    """The value as a float when it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def number_text(value: float) -> str:
    """A figure with the digits it deserves: 12,345 / 123 / 12.3 / 1.23 / 0.123 / 0."""
    magnitude = abs(value)
    if magnitude >= 1000:
        return "{:,.0f}".format(value)
    if magnitude >= 100:
        return "%.0f" % value
    if magnitude >= 10:
        return "%.1f" % value
    if magnitude >= 1:
        return "%.2f" % value
    if magnitude >= 0.001:
        return "%.3f" % value
    return "0"


def bytes_size_text(value: float) -> str:
    """'4 KiB', '1.50 GiB', '512 B'."""
    for factor, unit in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if value >= factor and value % (factor // 1024 or 1) == 0:
            scaled = value / factor
            return "%s %s" % ("%d" % scaled if scaled == int(scaled) else number_text(scaled), unit)
    return "%d B" % value


def record_description(record: Mapping[str, Any]) -> str:
    """'fio 3.33, block 4 KiB, size 256 MiB, O_DIRECT, iodepth 32': how a record's test was run."""
    params = _mapping(record.get("params"))
    parts = []
    tool = " ".join(part for part in (one_line_text(record.get("tool")), one_line_text(record.get("tool_version"))) if part)
    if tool:
        parts.append(tool)
    block = finite_number(params.get("block_size"))
    if block:
        parts.append("block %s" % bytes_size_text(block))
    size = finite_number(params.get("size_bytes"))
    if size:
        parts.append("size %s" % bytes_size_text(size))
    if params.get("direct") is True:
        parts.append("O_DIRECT")
    if one_line_text(params.get("sync")):
        parts.append("sync %s" % one_line_text(params.get("sync")))
    iodepth = finite_number(params.get("iodepth"))
    if iodepth:
        parts.append("iodepth %d" % iodepth)
    return ", ".join(parts)


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


class Settings(NamedTuple):
    """Validated judgement parameters (see ``make_settings``)."""

    outlier_fraction: float = DEFAULT_OUTLIER_FRACTION
    peer_group: str = PEER_GROUP_IDENTITY
    max_cv: float = DEFAULT_MAX_CV
    regression_fraction: float = DEFAULT_REGRESSION_FRACTION
    robust_z_limit: float = DEFAULT_ROBUST_Z_LIMIT
    robust_z_min_deviation: float = DEFAULT_ROBUST_Z_MIN_DEVIATION
    latency_outlier_factor: float = DEFAULT_LATENCY_OUTLIER_FACTOR
    # A figure whose repeats vary more than max_cv cannot be trusted to pass: it fails acceptance
    # unless the site says otherwise (docs/report.md, Verdicts).
    unstable_fails: bool = True
    max_temperature_c: float = DEFAULT_MAX_TEMPERATURE_C


def make_settings(outlier_fraction: Any = DEFAULT_OUTLIER_FRACTION, peer_group: Any = PEER_GROUP_IDENTITY, max_cv: Any = DEFAULT_MAX_CV,
                  regression_fraction: Any = DEFAULT_REGRESSION_FRACTION, robust_z_limit: Any = DEFAULT_ROBUST_Z_LIMIT,
                  robust_z_min_deviation: Any = DEFAULT_ROBUST_Z_MIN_DEVIATION, unstable_fails: Any = True,
                  latency_outlier_factor: Any = DEFAULT_LATENCY_OUTLIER_FACTOR,
                  max_temperature_c: Any = DEFAULT_MAX_TEMPERATURE_C) -> Settings:
    """Settings with every value checked; ValueError names the bad one."""
    if peer_group not in PEER_GROUP_CHOICES:
        raise ValueError("peer_group must be one of %s, got %r" % (", ".join(PEER_GROUP_CHOICES), peer_group))
    z_limit = _number(robust_z_limit)
    if z_limit is None or z_limit >= 0:
        raise ValueError("robust_z_limit must be a negative number, got %r" % (robust_z_limit,))
    min_deviation = _number(robust_z_min_deviation)
    if min_deviation is None or not 0 <= min_deviation < 1:
        raise ValueError("robust_z_min_deviation must be a number from 0 to 1 (1 excluded), got %r" % (robust_z_min_deviation,))
    if not isinstance(unstable_fails, bool):
        raise ValueError("unstable_fails must be true or false, got %r" % (unstable_fails,))
    factor = _number(latency_outlier_factor)
    if factor is None or not 1 < factor < math.inf:
        raise ValueError("latency_outlier_factor must be a number above 1, got %r" % (latency_outlier_factor,))
    temperature = _number(max_temperature_c)
    if temperature is None or not 0 < temperature < MAX_TEMPERATURE_LIMIT_C:
        raise ValueError("max_temperature_c must be a number of degrees Celsius above 0 and below %d, got %r"
                         % (MAX_TEMPERATURE_LIMIT_C, max_temperature_c))
    return Settings(
        outlier_fraction=_fraction("outlier_fraction", outlier_fraction),
        peer_group=str(peer_group),
        max_cv=_fraction("max_cv", max_cv),
        regression_fraction=_fraction("regression_fraction", regression_fraction),
        robust_z_limit=z_limit,
        robust_z_min_deviation=min_deviation,
        latency_outlier_factor=factor,
        unstable_fails=unstable_fails,
        max_temperature_c=float(temperature),
    )


# ---------------------------------------------------------------------------------------------
# peer statistics
# ---------------------------------------------------------------------------------------------

def robust_z(value: float, center: float, mad: float) -> Optional[float]:
    """0.6745 * (value - median) / MAD (Iglewicz and Hoaglin), None when MAD is 0."""
    if mad <= 0:
        return None
    return ROBUST_Z_SCALE * (value - center) / mad


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
# acceptance rules
# ---------------------------------------------------------------------------------------------

class RulesError(ValueError):
    """Acceptance rules that cannot be used; ``errors`` lists every problem with its path."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


# threshold key -> (figure, direction): "min" fails below, "max" fails above. The latency limits: max_<figure> of every
# LATENCY_FIGURES entry (max_read_p99_ms, max_read_p99_99_ms, max_write_max_ms, max_sync_p99_9_ms ...).
THRESHOLDS = {
    "min_read_mb_per_s": ("read_mb_per_s", "min"),
    "min_write_mb_per_s": ("write_mb_per_s", "min"),
    "min_read_iops": ("read_iops", "min"),
    "min_write_iops": ("write_iops", "min"),
    "min_fsyncs_per_s": ("fsyncs_per_s", "min"),
}
THRESHOLDS.update(("max_" + figure, (figure, "max")) for figure in LATENCY_FIGURES)
DATASHEET_FIGURES = ("read_mb_per_s", "write_mb_per_s", "read_iops", "write_iops", "fsyncs_per_s")
MATCH_STRING_KEYS = ("test", "host", "model", "firmware", "serial", "wwn", "transport")
DISK_CLASSES = ("hdd", "ssd", "nvme")
FIGURE_UNITS = {
    "read_mb_per_s": "MB/s", "write_mb_per_s": "MB/s", "read_iops": "IOPS", "write_iops": "IOPS",
    "fsyncs_per_s": "fsyncs/s",
}
FIGURE_UNITS.update((figure, "ms") for figure in LATENCY_FIGURES)
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


def _positive_figures(given: Mapping[str, Any], keys: Iterable[str], path: str, errors: List[str]) -> Dict[str, float]:
    """The figures of keys that given holds, each a positive number; an error for each that is not."""
    figures: Dict[str, float] = {}
    for key in keys:
        if key in given:
            value = _positive(given[key])
            if value is None:
                errors.append("%s.%s: must be a positive number, got %r" % (path, key, given[key]))
            else:
                figures[key] = value
    return figures


def _validate_datasheet(datasheet: Any, path: str, errors: List[str]) -> Optional[Dict[str, float]]:
    if not isinstance(datasheet, Mapping):
        errors.append("%s: must be a mapping, got %s" % (path, type(datasheet).__name__))
        return None
    _unknown_keys(datasheet, _DATASHEET_KEYS, path, errors)
    normalized: Dict[str, float] = _positive_figures(datasheet, DATASHEET_FIGURES, path, errors)
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
    normalized.update(_positive_figures(rule, THRESHOLDS, path, errors))
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


def _rule_matches(rule: Mapping[str, Any], host: str, facts: RecordFacts) -> bool:
    target = facts.target
    for key, pattern in rule["match"].items():
        if key == "class":
            if _disk_class(target.rotational, target.transport) != pattern:
                return False
        elif key == "rotational":
            if target.rotational is not pattern:
                return False
        else:
            actual = _match_value(key, host, facts)
            if actual is None or not fnmatch.fnmatchcase(str(actual), pattern):
                return False
    return True


def _match_value(key: str, host: str, facts: RecordFacts) -> Any:
    if key == "host":
        return host
    if key == "test":
        return facts.test
    if key == "serial":
        return facts.serial
    if key == "wwn":
        return facts.wwn
    return getattr(facts.target, key)


def _rule_figures(facts: RecordFacts) -> Dict[str, Optional[float]]:
    def scaled(value: Any, divisor: float) -> Optional[float]:
        number = _number(value)
        return None if number is None else number / divisor

    figures = facts.figures
    found = {
        "read_mb_per_s": scaled(figures.read_bytes_per_s, 1e6),
        "write_mb_per_s": scaled(figures.write_bytes_per_s, 1e6),
        "read_iops": _number(figures.read_iops),
        "write_iops": _number(figures.write_iops),
        "fsyncs_per_s": _number(figures.fsyncs_per_s),
    }
    found.update(zip(LATENCY_FIGURES, (scaled(value, 1e6) for value in latency_figure_values(figures))))
    return found


def _rule_label(rule: Mapping[str, Any], index: int) -> str:
    return "rule %d%s" % (index + 1, " '%s'" % rule["name"] if rule.get("name") else "")


def _figure_digits(figure: str, value: float) -> int:
    if FIGURE_UNITS[figure] == "ms":
        # a tail of 0.05 ms (NVMe) and one of 300 ms (a stalled HDD) both keep three digits that mean something
        return 3 if value < 1 else 2 if value < 10 else 1 if value < 100 else 0
    return 0 if FIGURE_UNITS[figure] in ("IOPS", "fsyncs/s") else 1


def _figure_text(figure: str, value: float, digits: Optional[int] = None) -> str:
    return "%.*f %s" % (_figure_digits(figure, value) if digits is None else digits, value, FIGURE_UNITS[figure])


def _against_limit(figure: str, value: float, limit: float) -> Tuple[str, str]:
    """(value text, limit text), with the digits it takes to tell them apart: never '1.50 ms > maximum 1.50 ms'."""
    texts = _figure_text(figure, value), _figure_text(figure, limit)
    digits = max(_figure_digits(figure, value), _figure_digits(figure, limit))
    while texts[0] == texts[1] and digits < 6:
        digits += 1
        texts = _figure_text(figure, value, digits), _figure_text(figure, limit, digits)
    return texts


class RuleCheck(NamedTuple):
    """One limit of one rule that applies to a record: the figure it reads, the limit and which side fails."""

    label: str          # "rule 2 'archive HDDs'"
    figure: str         # a FIGURE_UNITS key: write_mb_per_s, read_p99_ms ...
    limit: float        # in the figure's unit
    direction: str      # "min" (fails below) or "max" (fails above)
    datasheet: Optional[float] = None   # the datasheet figure a "min" limit was derived from (min_percent of it)
    percent: Optional[float] = None


def _rule_checks(host: str, facts: RecordFacts, rules: Sequence[Mapping[str, Any]]) -> List[RuleCheck]:
    """Every limit of every rule matching the record, in rule order."""
    checks = []
    for index, rule in enumerate(rules):
        if not _rule_matches(rule, host, facts):
            continue
        label = _rule_label(rule, index)
        checks.extend(RuleCheck(label, figure, rule[key], direction) for key, (figure, direction) in THRESHOLDS.items()
                      if rule.get(key) is not None)
        datasheet = rule.get("datasheet") or {}
        checks.extend(RuleCheck(label, figure, datasheet[figure] * datasheet["min_percent"] / 100.0, "min",
                                datasheet[figure], datasheet["min_percent"])
                      for figure in DATASHEET_FIGURES if figure in datasheet)
    return checks


def _check_fails(check: RuleCheck, value: float) -> bool:
    return value < check.limit if check.direction == "min" else value > check.limit


def _check_reason(check: RuleCheck, value: float) -> str:
    if check.datasheet is not None:
        return "%s: %s is %.1f%% of datasheet %s (< %g%%)" % (
            check.label, _figure_text(check.figure, value), 100.0 * value / check.datasheet,
            _figure_text(check.figure, check.datasheet), check.percent)
    if check.direction == "min":
        return "%s: %s %s < minimum %s" % (check.label, check.figure.partition("_")[0], _figure_text(check.figure, value),
                                           _figure_text(check.figure, check.limit))
    return "%s: %s %s > maximum %s" % ((check.label, LATENCY_FIGURE_TEXT[check.figure]) + _against_limit(check.figure, value, check.limit))


class LatencyCheck(NamedTuple):
    """A latency figure of a record beside the rule limit that applies to it (report.html shows each)."""

    figure: str     # a LATENCY_FIGURES entry: read_p99_99_ms ...
    value: float    # ms
    limit: float    # ms
    rule: str       # "rule 2 'db SSDs'"
    passed: bool


def latency_check_text(check: LatencyCheck) -> str:
    """'read p99.99 3.10 ms > 2.50 ms (rule 1 'db SSDs')': a latency figure beside its limit, as the pages show it."""
    value, limit = _against_limit(check.figure, check.value, check.limit)
    return "%s %s %s %s (%s)" % (LATENCY_FIGURE_TEXT[check.figure], value, "\u2264" if check.passed else ">", limit, check.rule)


def _rule_results(host: str, facts: RecordFacts, rules: Sequence[Mapping[str, Any]]) -> Tuple[List[str], Tuple[LatencyCheck, ...]]:
    """(the reasons of every rule limit the record's figures break, every latency limit beside its figure)."""
    checks = _rule_checks(host, facts, rules)
    if not checks:
        return [], ()
    figures = _rule_figures(facts)
    reasons: List[str] = []
    latency: List[LatencyCheck] = []
    for check in checks:
        value = figures[check.figure]
        if value is None:
            continue
        failed = _check_fails(check, value)
        if failed:
            reasons.append(_check_reason(check, value))
        if check.figure in LATENCY_FIGURE_TEXT:
            latency.append(LatencyCheck(check.figure, value, check.limit, check.label, not failed))
    return reasons, tuple(latency)


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
    if not isinstance(baseline, _MappingABC):
        raise BaselineError("baseline: must be a report.json mapping, got %s" % type(baseline).__name__)
    if baseline.get("report_schema") not in BASELINE_REPORT_SCHEMAS:
        raise BaselineError("baseline: report_schema must be one of %s, got %r" % (", ".join(map(str, BASELINE_REPORT_SCHEMAS)), baseline.get("report_schema")))
    results = baseline.get("results")
    if not isinstance(results, list):
        raise BaselineError("baseline: results must be a list")
    values: Dict[Tuple[str, str, str, str], List[float]] = {}
    for entry in results:
        record = _mapping(entry).get("record")
        if not isinstance(record, _MappingABC):
            continue
        facts = record_facts(record)
        disk_id = _disk_id(facts.serial, facts.wwn) or _position_id(_mapping(entry).get("host"), facts.target.path)
        metric = _measured_metric(facts)
        # A not_a_disk figure (tmpfs, NFS ...) is no disk's baseline.
        if disk_id is None or metric is None or facts.target.not_a_disk is not None:
            continue
        values.setdefault((disk_id[0], disk_id[1], str(facts.test or ""), metric[0]), []).append(metric[1])
    return {key: median(figures) for key, figures in values.items()}


def _baseline_value(facts: RecordFacts, index: Mapping[Tuple[str, str, str, str], float], metric_name: str,
                    host: Any = None) -> Optional[Tuple[str, str, float]]:
    test = str(facts.test or "")
    candidates = [(field, str(disk_id)) for field, disk_id in (("serial", facts.serial), ("wwn", facts.wwn)) if disk_id not in (None, "")]
    if not candidates:
        position = _position_id(host, facts.target.path)
        candidates = [position] if position is not None else []
    for field, disk_id in candidates:
        value = index.get((field, disk_id, test, metric_name))
        if value is not None:
            return field, disk_id, value
    return None


# ---------------------------------------------------------------------------------------------
# verdicts
# ---------------------------------------------------------------------------------------------

Finding = Tuple[str, str]


class Entry(NamedTuple):
    """One judged record or host problem, compact: ``entry_fields`` spells it as report.json does.

    ``record`` is whatever the caller judged (the filter and a merge: the record dict; the callback: the
    place it spooled the record's JSON to); ``facts`` is None for a host problem. ``findings``
    are sorted worst first, so ``findings[0][0]`` is the verdict. ``group`` is set exactly when
    the entry was judged on a primary metric (then ``primary_metric`` is shown).
    """

    host: str
    record: Any
    facts: Optional[RecordFacts]
    verdict: str
    findings: Tuple[Finding, ...]
    notes: Tuple[str, ...]
    group: Optional[GroupKey]
    group_median: Optional[float]
    deviation_from_median: Optional[float]
    robust_z: Optional[float]
    baseline_value: Optional[float]
    deviation_from_baseline: Optional[float]
    noise: Optional[Noise] = None
    latency: Tuple[LatencyCheck, ...] = ()   # every latency rule limit beside its figure
    causes: Tuple[_causes.Cause, ...] = ()   # likely causes, ranked (flagged results only: not pass)

    # What every writer reads of an entry besides its fields (None for a host problem).

    @property
    def test(self) -> Any:
        return None if self.facts is None else self.facts.test

    @property
    def target_path(self) -> Any:
        return None if self.facts is None else self.facts.target.path

    @property
    def device(self) -> Any:
        return None if self.facts is None else self.facts.target.device

    @property
    def disk_id(self) -> Optional[str]:
        """The serial, else the WWN, of the entry's disk."""
        found = None if self.facts is None else _disk_id(self.facts.serial, self.facts.wwn)
        return None if found is None else found[1]

    @property
    def reason(self) -> str:
        return entry_reason(self)

    @property
    def primary(self) -> Tuple[Optional[str], Optional[float]]:
        """(metric name, value) the entry was judged on; (None, None) when it was not compared."""
        if self.group is None or self.facts is None:
            return None, None
        return self.facts.metric_name, self.facts.metric_value


def _no_figure_reason(facts: RecordFacts) -> str:
    transfer = _number(facts.figures.transfer_bytes_per_s)
    return REASON_NO_FIGURE if transfer is None else REASON_NO_DIRECTION % format_metric(METRIC_BYTES_PER_S, transfer)


def _plain_entry(host: str, record: Any, facts: Optional[RecordFacts], verdict: str, reason: str) -> Entry:
    return Entry(host, record, facts, verdict, ((verdict, reason),), (), None, None, None, None, None, None)


def repeat_figures(facts: RecordFacts) -> Optional[Tuple[float, ...]]:
    """The record's repeats (``samples``) when there are at least two and all are numbers, else None."""
    samples = facts.samples
    if samples is None or len(samples) < 2 or any(figure is None for figure in samples):
        return None
    return samples  # type: ignore[return-value]


def repeat_cv(facts: RecordFacts) -> Optional[float]:
    """Coefficient of variation of the record's repeats (None: fewer than two, or not all numbers)."""
    figures = repeat_figures(facts)
    return None if figures is None else coefficient_of_variation(list(figures))


def pooled_cv(cvs: Sequence[float]) -> Optional[float]:
    """The typical spread of one repeat in a group: the median of its members' repeat CVs (None: none). A median, so
    one unstable member does not widen the band its peers and it are held to."""
    return median(cvs) if cvs else None


class _PeerGroup(NamedTuple):
    key: GroupKey
    described: Dict[str, Any]  # describe() of its members' figures
    spread: Optional[float]    # ROBUST_SD_SCALE * MAD / median: the members' robust relative standard deviation
    pooled_cv: Optional[float]  # pooled_cv of the members' repeats


class Noise(NamedTuple):
    """What an entry's deviation from its group median is measured against (docs/report.md, "Noise").

    ``repeats_cv``: the CV of the record's own repeats; ``pooled_cv``: the group's pooled repeat CV; ``group_spread``:
    the group's robust relative standard deviation; ``total``: sqrt(group_spread^2 + max(repeats_cv, pooled_cv)^2);
    ``z``: deviation / total (None when total is 0)."""

    repeats_cv: Optional[float]
    pooled_cv: Optional[float]
    group_spread: Optional[float]
    total: float
    z: Optional[float]


def noise_of(deviation: float, repeats_cv: Optional[float], group: _PeerGroup) -> Noise:
    """The entry's Noise in its group."""
    repeat_part = max(repeats_cv or 0.0, group.pooled_cv or 0.0)
    total = math.sqrt((group.spread or 0.0) ** 2 + repeat_part ** 2)
    return Noise(repeats_cv, group.pooled_cv, group.spread, total, deviation / total if total > 0 else None)


def band_fraction(settings: Settings, noise_total: float) -> float:
    """How far below the group median a figure may be before it is an outlier: the deviation noise_total explains
    (|robust_z_limit| times it), at least the floor robust_z_min_deviation, at most outlier_fraction."""
    return min(settings.outlier_fraction, max(settings.robust_z_min_deviation, -settings.robust_z_limit * noise_total))


class _Judge:
    """Judges the records of one fleet against its peer groups (described once), rules and baseline."""

    def __init__(self, groups: Mapping[Tuple[GroupKey, str], Sequence[float]], settings: Settings,
                 rules: Sequence[Mapping[str, Any]], baseline: Optional[BaselineIndex],
                 group_cvs: Optional[Mapping[Tuple[GroupKey, str], Sequence[float]]] = None,
                 lost_baseline: Optional[Mapping[str, str]] = None, cohorts: Optional[_causes.Cohorts] = None) -> None:
        self.settings = settings
        self.cohorts = cohorts or _causes.Cohorts()
        self.rules = rules
        self.baseline = baseline
        self.lost_baseline = lost_baseline or {}   # host -> why the store's baseline has none of its disks
        self.latency_groups: Dict[Tuple[GroupKey, str], Tuple[float, int]] = {}  # _latency_groups
        self.groups = {}
        for group, values in groups.items():
            described = describe(values)
            center = described["median"]
            spread = ROBUST_SD_SCALE * described["mad"] / center if center > 0 else None
            self.groups[group] = _PeerGroup(group[0], described, spread, pooled_cv((group_cvs or {}).get(group) or ()))

    def group_rows(self) -> List[Dict[str, Any]]:
        """report.json ``groups``: every peer group, by key and metric."""
        rows = []
        for (key, metric_name), group in sorted(self.groups.items()):
            row: Dict[str, Any] = {"key": list(key), "basis": key_basis(key), "metric": metric_name}
            row.update(group.described)
            row["judged"] = group.described["measured"] >= MIN_PEERS
            row["spread"] = group.spread
            row["pooled_cv"] = group.pooled_cv
            rows.append(row)
        return rows

    def judge(self, host: str, record: Any, facts: RecordFacts) -> Entry:
        """The entry of a record, with its likely causes when it is not a pass."""
        entry = self.verdict_entry(host, record, facts)
        if entry.verdict == VERDICT_PASS or facts.disk is None:
            return entry
        return entry._replace(causes=self.cohorts.likely_causes(cohort_key(facts), facts.disk, self.settings.max_temperature_c))

    def verdict_entry(self, host: str, record: Any, facts: RecordFacts) -> Entry:
        """The entry of a record, judged."""
        unhealthy, error = _health_findings(facts, self.settings.max_temperature_c)
        if _corrupt(facts):
            bad: List[Finding] = [(VERDICT_CORRUPT, integrity_reason(facts.integrity))] + unhealthy
            if error:
                bad.append((VERDICT_ERROR, error))
            return Entry(host, record, facts, VERDICT_CORRUPT, tuple(bad), (), None, None, None, None, None, None)
        if error or (unhealthy and facts.error):
            # fio's own fail-fast rule (max_latency=, rate_min=) ended the job: the disk was too slow, not the tool
            slow = error.startswith(FAIL_FAST_PREFIX)
            failed: List[Finding] = unhealthy + ([(VERDICT_SLOW if slow else VERDICT_ERROR, error)] if error else [])
            return Entry(host, record, facts, failed[0][0], tuple(failed), (), None, None, None, None, None, None)
        name, value = facts.metric_name, facts.metric_value
        if name is None or value is None:
            missing: List[Finding] = unhealthy + [(VERDICT_NOT_MEASURED, _no_figure_reason(facts))]
            return Entry(host, record, facts, missing[0][0], tuple(missing), (), None, None, None, None, None, None)
        settings = self.settings
        notes: List[str] = [facts.note] if facts.note else []
        if facts.burnin:
            notes.append(str(facts.burnin))
        if facts.integrity is not None:
            verified = _number(facts.integrity.verified_bytes)
            notes.append("%s read back as written (fio verify=%s)" % (
                bytes_size_text(verified) if verified is not None else "every block", facts.integrity.check))
        findings: List[Finding] = unhealthy + ([(VERDICT_INVALID, facts.invalid)] if facts.invalid else [])
        if facts.not_steady is not None:
            findings.append((VERDICT_NOT_STEADY, facts.not_steady))
        not_a_disk = facts.target.not_a_disk
        latency: Tuple[LatencyCheck, ...] = ()
        if not_a_disk is not None:
            notes.append(NOTE_NOT_A_DISK % (not_a_disk, not_a_disk))
        else:
            violations, latency = _rule_results(host, facts, self.rules)
            findings.extend((VERDICT_SLOW, reason) for reason in violations)
        reference = change = None
        if self.baseline is not None and not_a_disk is None:
            found = _baseline_value(facts, self.baseline, name, host)
            if found is None:
                notes.append(self.lost_baseline.get(host, "no baseline for this disk and test"))
            else:
                field, disk_id, reference = found
                change = relative_deviation(value, reference)
                if change is not None and change < -settings.regression_fraction:
                    findings.append((VERDICT_REGRESSED, "%+.1f%% vs baseline %s (%s %s), limit -%.0f%%" % (
                        change * 100, format_metric(name, reference), field, disk_id, settings.regression_fraction * 100)))
        key = peer_group_key(facts, settings.peer_group)
        group = self.groups.get((key, name))
        if group is not None:
            key = group.key  # the entry refers to its group's key: one tuple per group, not one per record
        stats = group.described if group is not None else {"measured": 0}
        center = deviation = z_score = noise = None
        own_cv = repeat_cv(facts)
        if stats["measured"] < MIN_PEERS:
            peer = (VERDICT_PASS, "not compared: %d measured in group (< %d)" % (stats["measured"], MIN_PEERS))
        else:
            center = stats["median"]
            z_score = robust_z(value, center, stats["mad"])
            deviation = relative_deviation(value, center)
            if deviation is None:
                peer = (VERDICT_PASS, "not compared: group median is not positive")
            else:
                noise = noise_of(deviation, own_cv, group)  # type: ignore[arg-type]
                peer = self.peer_finding(name, deviation, center, stats["measured"], facts, noise)
                if peer[0] != VERDICT_PASS:
                    findings.append(peer)
        findings.extend(self.latency_findings(key, facts))
        if facts.samples is not None and any(figure is None for figure in facts.samples):
            notes.append(NOTE_SAMPLES_IGNORED)
        if own_cv is not None and own_cv > settings.max_cv:
            thresholds = self.repeat_thresholds(host, facts, name, value, center, group, reference)
            straddled = _straddled(name, repeat_figures(facts), thresholds)  # type: ignore[arg-type]
            varied = _varied_text(facts, own_cv, settings.max_cv)
            if straddled or not thresholds:
                against = straddled or "no rule, peer band or baseline to hold them against"
                findings.append((VERDICT_UNSTABLE, "%s; %s" % (varied, against)))
            else:
                kinds = sorted({kind for kind, _limit, _what in thresholds})
                notes.append("%s, but every repeat clears %s: passed" % (varied, _joined(kinds)))
        # Worst first; findings of one verdict keep their order.
        ordered = tuple(sorted(findings, key=lambda finding: _RANK[finding[0]])) if findings else (peer,)
        return Entry(host, record, facts, ordered[0][0], ordered, tuple(notes), key, center, deviation, z_score, reference,
                     change, noise, latency)

    def latency_findings(self, key: GroupKey, facts: RecordFacts) -> List[Finding]:
        """outlier for each direction whose p99 is more than latency_outlier_factor times its peers' median p99 (records
        judged on IOPS: the random tests, where a tail is the disk's and not the transfer size's)."""
        findings: List[Finding] = []
        for direction, p99_ns in _latency_p99s(facts):
            peers = self.latency_groups.get((key, direction))
            if peers is None or peers[1] < MIN_PEERS or peers[0] <= 0:
                continue
            center, measured = peers
            factor = self.settings.latency_outlier_factor
            if p99_ns > factor * center:
                findings.append((VERDICT_OUTLIER, "%s p99 %s is %.1f x the peers' median p99 %s (n=%d), limit %.1f x" % (
                    direction, _figure_text(direction + "_p99_ms", p99_ns / 1e6), p99_ns / center,
                    _figure_text(direction + "_p99_ms", center / 1e6), measured, factor)))
        return findings

    def peer_finding(self, name: str, deviation: float, center: float, measured: int, facts: RecordFacts,
                     noise: Noise) -> Finding:
        """outlier or pass against the group (docs/report.md, "Noise"): below outlier_fraction always; below the
        floor robust_z_min_deviation only when the deviation is more than |robust_z_limit| times the noise."""
        settings = self.settings
        versus = "%+.1f%% vs median %s (n=%d)" % (deviation * 100, format_metric(name, center), measured)
        if deviation < -settings.outlier_fraction:
            return VERDICT_OUTLIER, "%s, limit -%.0f%%" % (versus, settings.outlier_fraction * 100)
        if deviation <= -settings.robust_z_min_deviation and (noise.z is None or noise.z < settings.robust_z_limit):
            return VERDICT_OUTLIER, "%s; %s: %s" % (versus, _noise_text(facts, noise), (
                "no spread at all" if noise.z is None else
                "%.1f x the noise (limit %.1f x)" % (-noise.z, -settings.robust_z_limit)))
        return VERDICT_PASS, versus

    def repeat_thresholds(self, host: str, facts: RecordFacts, name: str, value: float, center: Optional[float],
                          group: Optional[_PeerGroup], reference: Optional[float]) -> List[Tuple[str, float, str]]:
        """(kind, limit on the primary figure, what it is) of every limit the repeats of an unstable figure are held
        against: each rule limit on a rate (scaled to the primary figure), the peer band's lower edge, the baseline's."""
        settings = self.settings
        thresholds: List[Tuple[str, float, str]] = []
        figures = _rule_figures(facts)
        not_a_disk = facts.target.not_a_disk is not None   # rules and baseline are for disks (judge: a note)
        for check in [] if not_a_disk else _rule_checks(host, facts, self.rules):
            figure = figures[check.figure]
            if check.direction == "min" and figure:  # a rate: it moves with the primary figure from repeat to repeat
                thresholds.append(("every rule", check.limit * value / figure, "%s's %s %s" % (
                    check.label, "datasheet share" if check.datasheet is not None else "minimum",
                    _figure_text(check.figure, check.limit))))
        if center is not None and group is not None:
            band = band_fraction(settings, noise_of(0.0, None, group).total)
            thresholds.append(("the peer band", center * (1 - band), "the peer band's lower edge %s (-%.1f%% of median %s)"
                               % (format_metric(name, center * (1 - band)), band * 100, format_metric(name, center))))
        if reference is not None:
            limit = reference * (1 - settings.regression_fraction)
            thresholds.append(("the baseline", limit, "the baseline's limit %s (-%.0f%% of %s)" % (
                format_metric(name, limit), settings.regression_fraction * 100, format_metric(name, reference))))
        return thresholds


def cohort_key(facts: RecordFacts) -> Optional[_causes.CohortKey]:
    """The cohort a result's likely causes are found against (_causes.Cohorts): test, model and capacity, firmware left
    out (identity peer groups key on it, so a firmware difference would be invisible there). The model is the target's,
    else the one the disk state read (a disk discover could not name); None for a target that is not a disk or of
    unknown model."""
    target = facts.target
    model = target.model if target.model is not None else None if facts.disk is None else facts.disk.model
    if target.not_a_disk is not None or model is None:
        return None
    return (facts.test, model, target.size_bytes)


def _health_findings(facts: RecordFacts, max_temperature_c: float) -> Tuple[List[Finding], str]:
    """(the unhealthy findings of a record, its error without the burn-in's health reason). A burn-in that saw a
    counter grow names it in the record's error ('health: ...'): that text is the unhealthy reason, as the host wrote
    it, and not a tool error; a tool error before it ('<tool>; health: ...') stays an error."""
    error = str(facts.error) if facts.error else ""
    reasons = _causes.health_reasons(facts.disk, max_temperature_c)
    if not reasons:
        return [], error
    if error.startswith(BURNIN_HEALTH_PREFIX):
        host_reason, error = error, ""
    elif BURNIN_HEALTH_SEPARATOR in error:
        error, _separator, rest = error.partition(BURNIN_HEALTH_SEPARATOR)
        host_reason = BURNIN_HEALTH_PREFIX + rest
    else:
        host_reason = ""
    if host_reason:
        # The host's text names what grew; the reasons made here from the same counters would say it twice.
        reasons = [host_reason] + [reason for reason in reasons if not reason.startswith(_causes.HEALTH_PREFIX)]
    return [(VERDICT_UNHEALTHY, reason) for reason in reasons], error


# How the burn-in (module_utils/_burnin.py Cycle.end) names a health counter that grew in a record's error.
BURNIN_HEALTH_PREFIX = _causes.HEALTH_PREFIX
BURNIN_HEALTH_SEPARATOR = "; " + _causes.HEALTH_PREFIX


def _joined(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else "%s and %s" % (", ".join(words[:-1]), words[-1])


def _noise_text(facts: RecordFacts, noise: Noise) -> str:
    """'repeats within 0.6%, peers' repeats CV 0.2%, group spread 0.7%': the noise a deviation was held against."""
    figures = repeat_figures(facts)
    if figures is not None and statistics.median(figures) > 0:
        repeats = "repeats within %.1f%%" % (100.0 * (max(figures) - min(figures)) / statistics.median(figures))
    else:
        repeats = "no repeats"
    pooled = "" if noise.pooled_cv is None else ", peers' repeats CV %.1f%%" % (100.0 * noise.pooled_cv)
    spread = "?" if noise.group_spread is None else "%.1f%%" % (100.0 * noise.group_spread)
    return "%s%s, group spread %s" % (repeats, pooled, spread)


def _varied_text(facts: RecordFacts, cv: float, max_cv: float) -> str:
    figures = repeat_figures(facts) or ()
    total = facts.runs_total if isinstance(facts.runs_total, int) and facts.runs_total > len(figures) else None
    return "repeats vary: coefficient of variation %.1f%% > %.1f%% (n=%d%s%s)" % (
        cv * 100, max_cv * 100, len(figures), "" if total is None else ", %d runs in all" % total,
        ", runs %d x as long" % facts.length_factor if isinstance(facts.length_factor, int) and facts.length_factor > 1
        else "")


def _straddled(name: str, figures: Sequence[float], thresholds: Sequence[Tuple[str, float, str]]) -> str:
    """What the repeats straddle: some below a limit, some not ('' when they are all on one side of each)."""
    straddled = [what for _kind, limit, what in thresholds
                 if any(figure < limit for figure in figures) and not all(figure < limit for figure in figures)]
    if not straddled:
        return ""
    return "repeats %s to %s straddle %s" % (format_metric(name, min(figures)), format_metric(name, max(figures)),
                                             "; ".join(straddled))


def _problem_reason(problem: Mapping[str, Any]) -> str:
    lines = str(problem.get("message") or "").strip().splitlines()
    first_line = lines[0] if lines else "no message"
    # Unreachable is about the connection, not the task; a failure needs the task to be found.
    if problem.get("status") == HOST_UNREACHABLE:
        return "unreachable: %s" % first_line
    return "failed in task '%s': %s" % (problem.get("task") or "?", first_line)


def _problem_entries(host: str, status: Mapping[str, Any], has_records: bool) -> List[Entry]:
    problems = status.get("problems") or []
    entries = [_plain_entry(host, None, None, VERDICT_NOT_MEASURED, _problem_reason(problem)) for problem in problems]
    if not entries and not has_records:
        entries.append(_plain_entry(host, None, None, VERDICT_NOT_MEASURED, "no diskproof_results record from this host"))
    return entries


def _entry_sort_key(entry: Entry) -> Tuple[Any, ...]:
    facts = entry.facts
    deviation = entry.deviation_from_median
    return (
        _RANK[entry.verdict],
        deviation if deviation is not None else 0.0,
        entry.host,
        (facts.target.path if facts is not None else None) or "",
        (facts.test if facts is not None else None) or "",
    )


RecordsWithFacts = Mapping[str, Sequence[Tuple[Any, RecordFacts]]]


# The directions whose p99 the peer rule compares (the commit latency has its own test, judged on IOPS too, but its
# syncs are the filesystem's as much as the disk's: rules only).
LATENCY_PEER_DIRECTIONS = ("read", "write")
_P99_INDEX = {direction: LATENCY_FIGURES.index(direction + "_p99_ms") for direction in LATENCY_PEER_DIRECTIONS}


def _latency_p99s(facts: RecordFacts) -> List[Tuple[str, float]]:
    """(direction, p99 ns) of each direction of a direct-I/O record judged on IOPS that has a positive p99. Buffered
    records (fio_commit_rate's writes, sysbench_fsync) are left out: their write latency is a copy into the page
    cache, the controller's CPU and not the disk's."""
    if facts.metric_name != METRIC_IOPS or not facts.direct or facts.error or facts.invalid is not None:
        return []
    found = []
    for direction in LATENCY_PEER_DIRECTIONS:
        value = latency_figure_values(facts.figures)[_P99_INDEX[direction]]
        if value is not None and value > 0 and math.isfinite(value):
            found.append((direction, value))
    return found


def _latency_groups(facts_by_host: RecordsWithFacts, settings: Settings) -> Dict[Tuple[GroupKey, str], Tuple[float, int]]:
    """(peer group key, direction) -> (median p99 ns, records) over the records _latency_p99s reads."""
    values: Dict[Tuple[GroupKey, str], List[float]] = {}
    for records in facts_by_host.values():
        for _record, facts in records:
            found = _latency_p99s(facts)
            if found:
                key = peer_group_key(facts, settings.peer_group)
                for direction, value in found:
                    values.setdefault((key, direction), []).append(value)
    return {group: (median(found), len(found)) for group, found in values.items()}


def judge_entries(facts_by_host: RecordsWithFacts, host_statuses: Mapping[str, Mapping[str, Any]], settings: Settings,
                  rules: Sequence[Mapping[str, Any]] = (), baseline: Optional[BaselineIndex] = None,
                  lost_baseline: Optional[Mapping[str, str]] = None
                  ) -> Tuple[List[Entry], List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(entries worst first, peer group rows, differences rows): one entry per record of ``{host: [(record, facts)]}``
    and per host problem that left no record (``host_statuses``: every host the play targeted, as
    ``{"status": "ok" | "failed" | "unreachable", "problems": [{"task", "status", "message"}]}``).

    ``rules`` are ``validate_rules`` rules, ``baseline`` a ``baseline_index``. Each record is
    judged once, by its facts only: ``record`` is handed back in ``Entry.record`` as it is.
    """
    # The peer groups: the figures of every record measured (no error, cache bypass not disproven).
    groups: Dict[Tuple[GroupKey, str], List[float]] = {}
    group_cvs: Dict[Tuple[GroupKey, str], List[float]] = {}
    for records in facts_by_host.values():
        for _record, facts in records:
            measured = _measured_metric(facts)
            if measured is not None:
                group = (peer_group_key(facts, settings.peer_group), measured[0])
                groups.setdefault(group, []).append(measured[1])
                cv = repeat_cv(facts)
                if cv is not None:
                    group_cvs.setdefault(group, []).append(cv)
    cohorts = _causes.Cohorts()
    for host, records in facts_by_host.items():
        for _record, facts in records:
            cohorts.add(cohort_key(facts), host, facts.target.device, facts.disk, facts.target.path)
    judge = _Judge(groups, settings, rules, baseline, group_cvs, lost_baseline, cohorts)
    judge.latency_groups = _latency_groups(facts_by_host, settings)
    entries: List[Entry] = []
    for host in sorted(set(facts_by_host) | set(host_statuses)):
        records = facts_by_host.get(host) or []
        entries.extend(judge.judge(host, record, facts) for record, facts in records)
        entries.extend(_problem_entries(host, host_statuses.get(host) or {}, bool(records)))
    entries.sort(key=_entry_sort_key)
    return entries, judge.group_rows(), cohorts.differences()


# ---------------------------------------------------------------------------------------------
# entries as report.json spells them
# ---------------------------------------------------------------------------------------------

def entry_reason(entry: Entry) -> str:
    """The reasons of the verdict, joined with '; '."""
    findings = entry.findings
    if len(findings) == 1:
        return findings[0][1]
    verdict = entry.verdict
    return "; ".join(reason for finding, reason in findings if finding == verdict)


def entry_fields(entry: Entry) -> Dict[str, Any]:
    """The entry as in report.json ``results``, without its ``record``."""
    name, value = entry.primary
    return {
        "host": entry.host,
        "target_path": entry.target_path,
        "device": entry.device,
        "serial": entry.disk_id,
        "test": entry.test,
        "verdict": entry.verdict,
        "reason": entry_reason(entry),
        "reasons": [{"verdict": finding, "reason": reason} for finding, reason in entry.findings],
        "notes": list(entry.notes),
        "group": list(entry.group) if entry.group is not None else None,
        "primary_metric": None if name is None else {"name": name, "value": value},
        "group_median": entry.group_median,
        "deviation_from_median": entry.deviation_from_median,
        "robust_z": entry.robust_z,
        "baseline_value": entry.baseline_value,
        "deviation_from_baseline": entry.deviation_from_baseline,
        "noise": None if entry.noise is None else entry.noise._asdict(),
        "latency_checks": [check._asdict() for check in entry.latency],
        "likely_causes": _causes.cause_rows(entry.causes),
    }


def entry_dict(entry: Entry) -> Dict[str, Any]:
    """The entry as in report.json ``results``; ``record`` is the caller's record (or None)."""
    fields = entry_fields(entry)
    fields["record"] = entry.record
    return fields


# Where an entry's record goes in its report.json line (sorted keys: after "reasons").
_RECORD_SLOT = '"record":null'


def _compact_json(value: Any) -> str:
    # report.json's spelling (ASCII): keys sorted, no spaces.
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def entry_json_parts(entry: Entry) -> Tuple[str, str]:
    """(text before the record, text after it) of the entry's report.json line, the compact JSON of
    ``entry_dict``: the caller puts the record's own JSON text between them (the callback: as it
    spooled it, in the record's own key order)."""
    fields = entry_fields(entry)
    fields["record"] = None
    # The only "record" key of the line (an encoded string cannot hold an unescaped quote).
    before, _slot, after = _compact_json(fields).partition(_RECORD_SLOT)
    return before + '"record":', after


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------

def failing_verdicts(unstable_fails: bool = True) -> Tuple[str, ...]:
    """The verdicts that fail a run: FAILING_VERDICTS, and unstable unless the site lets it pass."""
    return FAILING_VERDICTS + (VERDICT_UNSTABLE,) if unstable_fails else FAILING_VERDICTS


def summarize_entries(entries: Sequence[Entry], input_errors: Sequence[str] = (), unstable_fails: bool = True) -> Dict[str, Any]:
    """Counts by verdict (all verdicts present), the failing entries (already worst first:
    ``judge_entries``) and ``passed``: false when any entry fails (``failing_verdicts``) or an input
    that was asked for (rules, baseline) could not be used: ``input_errors``."""
    counts = {verdict: 0 for verdict in VERDICTS}
    failing = []
    failing_set = failing_verdicts(unstable_fails)
    for entry in entries:
        counts[entry.verdict] += 1
        if entry.verdict in failing_set:
            failing.append({"host": entry.host, "target_path": entry.target_path, "device": entry.device,
                            "serial": entry.disk_id, "test": entry.test, "verdict": entry.verdict,
                            "reason": entry_reason(entry)})
    return {
        "counts": counts,
        "total": len(entries),
        "failing": failing,
        "failing_hosts": sorted(set(row["host"] for row in failing)),
        "input_errors": list(input_errors),
        "passed": not failing and not input_errors,
    }


def stats_summary(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """What set_stats publishes of a report's summary: passed, counts by verdict, total, failing
    entries and hosts, input errors."""
    return {
        "passed": bool(summary.get("passed")),
        "counts": dict(summary.get("counts") or {}),
        "total": summary.get("total"),
        "failing": [dict(row) for row in summary.get("failing") or []],
        "failing_hosts": list(summary.get("failing_hosts") or []),
        "input_errors": list(summary.get("input_errors") or []),
    }


def _hosts_section(records_by_host: Mapping[str, Sequence[Any]], host_statuses: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    hosts = {}
    for host in sorted(set(records_by_host) | set(host_statuses)):
        status = host_statuses.get(host) or {}
        hosts[host] = {
            "status": status.get("status") or HOST_OK,
            "records": len(records_by_host.get(host) or []),
            "problems": list(status.get("problems") or []),
        }
    return hosts


def judge_report(facts_by_host: RecordsWithFacts, host_statuses: Mapping[str, Mapping[str, Any]], run_metadata: Mapping[str, Any], *,
                 settings: Settings, acceptance: Any = None, rules_source: Optional[str] = None, rules_errors: Sequence[str] = (),
                 baseline: Any = None, baseline_source: Optional[str] = None, baseline_errors: Sequence[str] = (),
                 input_errors: Sequence[str] = ()) -> Tuple[Dict[str, Any], List[Entry]]:
    """The report with ``results`` left empty, and its entries worst first (``_report.judge``).

    ``facts_by_host``: ``{host: [(record, facts)]}`` where ``record`` is whatever the caller wants
    back in ``Entry.record`` and ``facts`` its ``record_facts``. For callers that write the
    entries one by one (``entry_json_parts``) instead of holding a dict per entry.
    """
    rules = validate_rules(acceptance)
    index = baseline_index(baseline) if baseline is not None else None
    # Hosts the store's baseline run did not measure although a newer passing run did (a slice, a --limit run).
    lost = lost_baseline_hosts(baseline) if index is not None else {}
    entries, groups, differences = judge_entries(facts_by_host, host_statuses, settings, rules, index, lost)
    baseline_run = _mapping(_mapping(baseline).get("run"))
    report = {
        "report_schema": REPORT_SCHEMA,
        "run": dict(run_metadata),
        "rules": {
            "outlier_fraction": settings.outlier_fraction,
            "robust_z_limit": settings.robust_z_limit,
            "robust_z_min_deviation": settings.robust_z_min_deviation,
            "latency_outlier_factor": settings.latency_outlier_factor,
            "max_temperature_c": settings.max_temperature_c,
            "min_peers": MIN_PEERS,
            "small_block_max_bytes": SMALL_BLOCK_MAX_BYTES,
            "peer_group": settings.peer_group,
            "max_cv": settings.max_cv,
            "regression_fraction": settings.regression_fraction,
            "unstable_fails": settings.unstable_fails,
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
            "hosts_without_baseline": sorted(host for host in lost if host in facts_by_host),
            "errors": list(baseline_errors),
        },
        "hosts": _hosts_section(facts_by_host, host_statuses),
        "groups": groups,
        "differences": differences,
        "results": [],
        "summary": summarize_entries(entries, ["rules: " + error for error in rules_errors] + ["baseline: " + error for error in baseline_errors]
                                     + list(input_errors), settings.unstable_fails),
    }
    return report, entries


def report_json_frame(report: Mapping[str, Any]) -> Tuple[str, str]:
    """(text before the first entry, text after the last) of report.json for ``report``.

    The layout: one top-level key per line, sorted, compact; ``results`` one entry per line,
    each line preceded by a newline (and the entries after the first by a comma)::

        {"baseline":{...},
        "groups":[...],
        ...
        "results":[
        {...},
        {...}
        ],
        "rules":{...},
        ...}

    Still one JSON document: ``json.load`` reads it as ``json.dump`` would have written it.
    """
    head: List[str] = []
    tail: List[str] = []
    keys = sorted(report)
    if "results" not in keys:
        raise ValueError("report without results")
    for key in keys:
        if key == "results":
            continue
        (head if key < "results" else tail).append("%s:%s" % (_compact_json(key), _compact_json(report[key])))
    before = "{" + "".join(item + ",\n" for item in head) + '"results":['
    after = "\n]" + "".join(",\n" + item for item in tail) + "}\n"
    return before, after


def record_json(record: Mapping[str, Any]) -> bytes:
    """A record as report.json holds it: compact ASCII JSON in the record's own key order (bench_run writes them
    in schema order); a value JSON cannot carry (none in a bench_run record) as its str()."""
    return json.dumps(record, separators=(",", ":"), default=str).encode("ascii")


def report_json_chunks(report: Mapping[str, Any], entries: Iterable[Entry],
                       record_json_of: Callable[[Any], bytes]) -> Iterator[bytes]:
    """report.json, a piece at a time: ``report_json_frame`` around one line per entry (``entry_json_parts``) with
    its record's JSON text (``record_json_of(entry.record)``) in its place. The one spelling of report.json: the
    files the pipeline writes, and the filter's report read back (``_report.report_dict``)."""
    head, tail = report_json_frame(report)
    yield head.encode("ascii")
    separator = b"\n"
    for entry in entries:
        before, after = entry_json_parts(entry)
        yield b"".join((separator, before.encode("ascii"),
                        b"null" if entry.facts is None else record_json_of(entry.record), after.encode("ascii")))
        separator = b",\n"
    yield tail.encode("ascii")
