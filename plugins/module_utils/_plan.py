# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test catalog, the profiles, and the plan: every job the benchmark role runs on one host.

Pure Python (no Ansible imports): the module ``diskproof.fleet.bench_plan`` gathers what the
host looks like (free space, block sizes, memory) and calls ``build_plan``; pytest calls it
directly. Every job carries its exact argv lists (never a shell string) or, for fio, the values
the role's job-file template is rendered from, and the options ``diskproof.fleet.bench_run``
runs it with. docs/tests.md documents the catalog and the sizing rules below.

Sizing rules:

- One test file per target, ``<target>/diskproof-<run id>/diskproof.testfile``, written first by
  ``dd_seq_write`` and then overwritten in place or read by the other tests: reads never target
  a file this run did not write (a sparse or fallocated file never reaches the disk).
- Its size is twice the cache basis (the memory figure, or the cache fence when one is set and
  smaller), rounded up to whole sequential blocks and MiB. Without an explicit fence, a profile's
  default fence applies when the memory figure is larger (quick: 4 GiB, so its run time does not
  grow with RAM); an explicit 0 is no fence.
- Direct-I/O block sizes are multiples of the device's logical block size (else O_DIRECT fails
  with EINVAL); not being a multiple of its physical block size is a warning.
- Each filesystem keeps max(5 %, 1 GiB) free at the fullest moment of the run: directory targets are
  grouped by filesystem (st_dev), and the jobs are walked in run order, counting every test file from
  the job that creates it until it is removed and every extra file set (sysbench, bonnie++) while its
  job runs. A target's test file is removed by its last job that reads or writes it, so the next
  target's files never sit next to it. Otherwise the plan is refused before anything is written,
  naming the filesystem (mount point, device), its targets and the figures.

Raw block-device targets (``kind="raw"``, granted ``raw_read`` or ``raw_write`` by the discover
role) are tested on the device node itself, never through a test file, and nothing is created:

- every size is min(the test-file size, the device size rounded down to the job's block size), so
  dd ``count``/``skip``, fio ``size=`` (and its offsets) and ioping ``-S`` stay inside the device;
  the ZCAV sweep spans the whole device (outer to inner tracks on a platter);
- ``raw_read`` runs only the read tests; ``raw_write`` also the direct and fio write tests; tests
  that need a filesystem (a buffered test file, files of their own) are skipped with a reason. A
  write test asked for explicitly on a ``raw_read`` target is refused, naming the interlock;
- reads need no prior write (the device holds data), so ``dd_seq_write`` is not added for them.
"""
from __future__ import annotations

import dataclasses
import math
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._filesystems import KIND_MEMORY, FilesystemFacts, allowed_warning, refusal_message
from ._metrics import METRIC_BYTES_PER_S, METRIC_IOPS
from . import _verify
from ._sizing import (
    RESERVE_FRACTION, RESERVE_MIN_BYTES, SizingError, buffered_test_size, check_direct_block_size, check_free_space,
    evenly_spaced_offsets, round_up,
)

MIB = 1 << 20
TEST_FILE_NAME = "diskproof.testfile"
RUN_DIR_PREFIX = "diskproof-"

# fio job files and argv values carry the path; fio reads ':' as a file separator and expands
# '${VAR}', so only these characters are accepted in target paths.
SAFE_PATH = re.compile(r"^[A-Za-z0-9._/+@%,=-]+$")
SAFE_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
SAFE_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")

# The dd block sweep: request sizes from a small database page to a large streaming write.
SWEEP_BLOCK_SIZES = ((4096, "4k"), (102400, "100k"), (1048576, "1m"), (10485760, "10m"))

Job = Dict[str, Any]


class PlanError(ValueError):
    """Inputs that cannot produce a safe, trustworthy plan; the message says what to fix."""


# The plan's block sizes (Settings fields) a test's commands use.
SEQUENTIAL, RANDOM, COMMIT, SYSBENCH = "sequential_block_size", "random_block_size", "commit_block_size", "sysbench_block_size"


@dataclass(frozen=True)
class FioJob:
    """A test that is one fio job of the role's template, built from these values alone (``_fio``)."""

    rw: str                                  # fio rw=
    block: str                               # which of the plan's block sizes: SEQUENTIAL, RANDOM or COMMIT
    iodepth: int
    values: Tuple[Tuple[str, Any], ...] = ()  # more job values (rwmixread, direct=0, ioengine, fdatasync)
    commit_write_cache: bool = False          # the write cache as benchmark_commit_write_cache says (fio_commit_rate)


@dataclass(frozen=True)
class CatalogEntry:
    tool: str
    summary: str
    uses_test_file: bool    # reads or overwrites the run's test file (so dd_seq_write must run first)
    buffered: bool          # goes through the page cache: sized from the cache basis, runs in the fence
    judged_on: str          # the figure the report judges: METRIC_IOPS or METRIC_BYTES_PER_S (records carry it)
    extra_files: str = ""   # "" | "sysbench" | "sysbench_fsync" | "bonnie": files of its own
    raw: str = ""           # on a raw device: "read" (raw_read), "write" (raw_write only), "" (needs a filesystem)
    raw_only: bool = False  # only on a raw device (never a directory target): the SSD steady-state tests
    direct_block: str = ""  # the block size it uses with O_DIRECT (checked against each device's), "" none
    fio: Optional[FioJob] = None  # a plain fio job: nothing more to build it (the plan's generic fio branch)


IOPS, BYTES = METRIC_IOPS, METRIC_BYTES_PER_S
CATALOG: Dict[str, CatalogEntry] = {
    "dd_seq_write": CatalogEntry("dd", "sequential write, 1 MiB blocks, conv=fdatasync, 2 x RAM: the figure vendors accept",
                                 True, True, BYTES),
    "dd_seq_write_direct": CatalogEntry("dd", "sequential write, 1 MiB blocks, oflag=direct (no page cache)", True, False,
                                        BYTES, raw="write", direct_block=SEQUENTIAL),
    "dd_block_sweep": CatalogEntry("dd", "writes of 4 KiB, 100 KiB, 1 MiB and 10 MiB blocks with conv=fdatasync", True, True,
                                   BYTES),
    "dd_seq_read": CatalogEntry("dd", "sequential read of the test file (or raw device), 1 MiB blocks, iflag=direct, "
                                "caches dropped", True, False, BYTES, raw="read", direct_block=SEQUENTIAL),
    "zcav_sweep": CatalogEntry("dd", "read rate at evenly spaced offsets of the test file or the whole raw device (a curve)",
                               True, False, BYTES, raw="read", direct_block=SEQUENTIAL),
    "bonnie": CatalogEntry("bonnie++", "bonnie++ -f -n 0: block write, rewrite, read, seeks over 2 x RAM of files",
                           False, True, IOPS, "bonnie"),
    "fio_seq_write": CatalogEntry("fio", "sequential write, 1 MiB blocks, QD8, direct", True, False, BYTES, raw="write",
                                  direct_block=SEQUENTIAL, fio=FioJob("write", SEQUENTIAL, 8)),
    "fio_seq_read": CatalogEntry("fio", "sequential read, 1 MiB blocks, QD8, direct", True, False, BYTES, raw="read",
                                 direct_block=SEQUENTIAL, fio=FioJob("read", SEQUENTIAL, 8)),
    "fio_rand_read": CatalogEntry("fio", "random read, 4 KiB, QD32, direct", True, False, IOPS, raw="read",
                                  direct_block=RANDOM, fio=FioJob("randread", RANDOM, 32)),
    "fio_rand_read_qd1": CatalogEntry("fio", "random read, 4 KiB, QD1, direct", True, False, IOPS, raw="read",
                                      direct_block=RANDOM, fio=FioJob("randread", RANDOM, 1)),
    "fio_rand_write": CatalogEntry("fio", "random write, 4 KiB, QD32, direct", True, False, IOPS, raw="write",
                                   direct_block=RANDOM, fio=FioJob("randwrite", RANDOM, 32)),
    "fio_rand_write_qd1": CatalogEntry("fio", "random write, 4 KiB, QD1, direct", True, False, IOPS, raw="write",
                                       direct_block=RANDOM, fio=FioJob("randwrite", RANDOM, 1)),
    "fio_mixed_70_30": CatalogEntry("fio", "random 70 % read / 30 % write, 4 KiB, QD32, direct", True, False, IOPS,
                                    raw="write", direct_block=RANDOM,
                                    fio=FioJob("randrw", RANDOM, 32, (("rwmixread", 70),))),
    "fio_commit_rate": CatalogEntry("fio", "8 KiB writes, fdatasync after each: a database's commit ceiling",
                                    True, True, IOPS, raw="write",
                                    fio=FioJob("write", COMMIT, 1, (("direct", 0), ("ioengine", "psync"), ("fdatasync", 1)),
                                               commit_write_cache=True)),
    "sysbench_rndrd": CatalogEntry("sysbench", "sysbench fileio 8 KiB random reads, O_DIRECT, over 2 x RAM of files",
                                   False, False, IOPS, "sysbench", direct_block=SYSBENCH),
    "sysbench_fsync": CatalogEntry("sysbench", "sysbench fileio 8 KiB random writes with fsync after each", False, True,
                                   IOPS, "sysbench_fsync"),
    "ioping_latency": CatalogEntry("ioping", "ioping 4 KiB direct reads, one at a time: request latency", True, False,
                                   IOPS, raw="read", direct_block=RANDOM),
    # Data integrity (docs/tests.md): VERIFY_PASSES write-and-verify passes, each a job of its own (fio_verify_1of2 ...).
    "fio_verify": CatalogEntry("fio", "data integrity: write 4 KiB blocks that carry their offset and the pass's "
                               "generation, read each back and compare (fio verify=pattern), two passes", True, False,
                               BYTES, raw="write", direct_block=RANDOM),
    # Burn-in (profile burnin, docs/tests.md): write-and-verify cycles over the whole target within a time budget, the
    # disk's health counters read around each (module_utils/_burnin.py), a job per cycle (burnin_3of40 ...).
    "burnin": CatalogEntry("fio", "burn-in: cycles of 1 MiB blocks that carry their offset and the cycle's generation, "
                           "written over the whole target (a raw_write device: all of it) and read back, within "
                           "a time budget; stopped at a new media error, CRC error or critical warning", True, False,
                           BYTES, raw="write", direct_block=SEQUENTIAL),
    # SSD steady state (SNIA PTS style): raw_write devices only, in this order; docs/tests.md.
    "ssd_precondition": CatalogEntry("fio", "SSD preconditioning: sequential 128 KiB writes, QD32, direct, of 2 x the "
                                     "device's capacity (optionally purged first)", False, False, BYTES, raw="write",
                                     raw_only=True),
    "ssd_steady_rand_write": CatalogEntry("fio", "random write, 4 KiB, QD32, direct, until steady state "
                                          "(fio steadystate=) or the time limit", False, False, IOPS, raw="write",
                                          raw_only=True, direct_block=RANDOM),
    "ssd_steady_rand_read": CatalogEntry("fio", "random read, 4 KiB, QD32, direct, until steady state "
                                         "(fio steadystate=) or the time limit", False, False, IOPS, raw="write",
                                         raw_only=True, direct_block=RANDOM),
}
CATALOG_ORDER = tuple(CATALOG)
SSD_TESTS = tuple(test for test, entry in CATALOG.items() if entry.raw_only)
SSD_PRECONDITION_BLOCK_SIZE = 128 * 1024
SSD_PRECONDITION_IODEPTH = 32
# fio_verify: two passes, so that a write that never landed shows as the first pass's data (stale), not as zeros.
VERIFY_PASSES = 2
VERIFY_IODEPTH = 16
# burnin: at most this many cycles per target (a loop item each); QD of its 1 MiB writes and reads.
BURNIN_MAX_CYCLES = 1000
BURNIN_IODEPTH = 8
BURNIN_MAX_HOURS = 24 * 30
# Progress: the preconditioning runs as this many jobs per pass over the device, each a loop item of its own.
SSD_PRECONDITION_PARTS_PER_PASS = 4
# fio's IOPS criteria (the catalog's steady-state tests judge IOPS): iops:<limit>[%] or iops_slope:<limit>[%].
SSD_CRITERION = re.compile(r"^(iops|iops_slope):([0-9]+(?:\.[0-9]+)?)(%?)$")
SSD_PURGE_METHODS = ("blkdiscard", "nvme_format", "ata_secure_erase")
# Firmware erases: only with ssd_purge_firmware_erase (an extra switch beyond the raw_write interlock).
SSD_FIRMWARE_PURGES = ("nvme_format", "ata_secure_erase")


@dataclass(frozen=True)
class Profile:
    tests: Tuple[str, ...]
    repeats: int
    max_repeats: int
    fio_runtime_s: int
    summary: str
    # Cache fence applied when none is given and the memory figure is larger (None: size from 2 x the memory figure).
    default_cache_fence_bytes: Optional[int] = None


# The quick profile's default cache fence. A memory cgroup this size makes an 8 GiB test file as honest as 2 x RAM
# (docs/benchmarks.md, the cache fence): large enough to pass through a drive's or RAID controller's own cache
# (typically <= 4 GiB), small enough that quick takes minutes whatever the RAM (about 2 min per target at 1 GB/s).
QUICK_DEFAULT_FENCE_BYTES = 4 << 30

PROFILES: Dict[str, Profile] = {
    "quick": Profile(("dd_seq_write", "dd_seq_read", "fio_rand_read", "fio_rand_write", "fio_commit_rate"), 2, 3, 10,
                     "a few minutes per host: scheduled acceptance checks", QUICK_DEFAULT_FENCE_BYTES),
    "standard": Profile(("dd_seq_write", "dd_seq_write_direct", "dd_seq_read", "fio_seq_write", "fio_seq_read",
                         "fio_rand_read", "fio_rand_read_qd1", "fio_rand_write", "fio_rand_write_qd1", "fio_mixed_70_30",
                         "fio_commit_rate", "sysbench_rndrd", "ioping_latency", "fio_verify"), 3, 5, 30,
                        "rack handover: every access pattern that matters, three runs each"),
    "evidence": Profile(("dd_seq_write", "dd_seq_write_direct", "dd_block_sweep", "dd_seq_read", "bonnie",
                         "fio_seq_write", "fio_seq_read", "fio_rand_read", "fio_rand_write", "fio_commit_rate",
                         "fio_verify"), 3, 5, 30,
                        "vendor dispute: dd and bonnie++ first (vendors trust them), then fio"),
    "full": Profile(tuple(test for test in CATALOG_ORDER if test not in SSD_TESTS and test != "burnin"), 3, 5, 30,
                    "everything in the catalog but the SSD steady-state tests and the burn-in"),
    "ssd_steady_state": Profile(SSD_TESTS, 1, 1, 30, "fresh SSDs on raw_write devices: precondition, then random "
                                "write and read until steady"),
    "burnin": Profile(("dd_seq_write", "burnin"), 1, 1, 30, "handover burn-in: write-and-verify cycles over each "
                      "target for burnin_hours, health counters read around every cycle"),
}


RAW_CLASSES = ("raw_read", "raw_write")
TARGET_KINDS = ("filesystem", "raw")
# What a refused write test on a raw_read target must say: how raw_write is granted.
INTERLOCK = ("writing a bare device needs class raw_write, which the discover role grants only behind the destructive "
             "interlock: mode raw_write on the target, diskproof_destructive: true, the disk's serial or WWN (loop "
             "devices: loop:<backing file>) in diskproof_destructive_allow, and the disk unmounted, unused and without "
             "partitions or signatures (docs/discover.md)")


@dataclass(frozen=True)
class TargetFacts:
    """One target as the host sees it (gathered by the bench_plan module).

    ``kind="filesystem"``: ``path`` is a directory; the tests use a test file in its run directory.
    ``kind="raw"``: ``path`` is the device as the inventory names it (``/dev/disk/by-id/...``),
    ``device_path`` the device node the tools open, ``device_size_bytes`` its size and
    ``granted_class`` what the discover role granted (``raw_read`` or ``raw_write``).
    """
    path: str
    free_bytes: int = 0
    filesystem_size_bytes: int = 0
    device: Optional[str] = None
    logical_block_size: int = 512
    physical_block_size: int = 4096
    rotational: Optional[bool] = None
    identity: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "filesystem"
    device_path: Optional[str] = None
    device_size_bytes: Optional[int] = None
    granted_class: Optional[str] = None
    # The filesystem of a directory target as _filesystems.classify_mount saw it (None: not looked at), and
    # whether a target that is not on a disk may run anyway (allow_non_disk).
    filesystem: Optional[FilesystemFacts] = None
    allow_non_disk: bool = False
    # st_dev of a directory target ("major:minor"): targets sharing it share the free space, so the plan sums
    # what coexists on it. None (not looked at): the target counts as a filesystem of its own.
    filesystem_id: Optional[str] = None
    mount_point: Optional[str] = None        # where that filesystem is mounted, for messages
    filesystem_device: Optional[str] = None  # its block device (a partition's own name), None for tmpfs and such

    @property
    def raw(self) -> bool:
        return self.kind == "raw"


@dataclass(frozen=True)
class Settings:
    run_id: str
    memory_bytes: int
    tests: Tuple[str, ...] = ()
    profile: str = "standard"
    cache_fence_bytes: Optional[int] = None
    fio_runtime_s: Optional[int] = None
    fio_ramp_s: int = 2
    repeats: Optional[int] = None
    max_repeats: Optional[int] = None
    max_cv: float = 0.05
    sequential_block_size: int = MIB
    random_block_size: int = 4096
    commit_block_size: int = 8192
    sysbench_block_size: int = 8192
    commit_write_cache: str = "unchanged"
    bonnie_user: str = "nobody"
    expected_bytes_per_s: float = 150e6
    reserve_fraction: float = RESERVE_FRACTION
    reserve_min_bytes: int = RESERVE_MIN_BYTES
    zcav_points: int = 16
    ioping_count: int = 30
    keep_raw_dir: str = ""
    # SSD steady state (ssd_* tests): bytes to precondition (None: 2 x the device), fio's criterion, the window,
    # the ramp before it and the time limit in seconds, the largest slope excursion across the window (% of the
    # mean; None: fio's criterion alone), and the optional purge before the preconditioning.
    ssd_precondition_bytes: Optional[int] = None
    ssd_steady_criterion: str = "iops:20%"
    ssd_steady_window_s: int = 60
    ssd_steady_ramp_s: int = 30
    ssd_steady_time_limit_s: int = 1800
    ssd_steady_max_slope_excursion_percent: Optional[float] = 10.0
    ssd_purge: bool = False
    ssd_purge_method: str = "blkdiscard"
    ssd_purge_firmware_erase: bool = False
    # Run the SSD steady-state tests after the profile's own (the evidence option); ignored with an explicit list.
    include_ssd_steady_state: bool = False
    # Add fio_verify to a profile without it (quick); ignored with an explicit list.
    include_verify: bool = False
    # fio's fail-fast rules on every fio job, per direction (0: off): a completed I/O slower than max_latency, or a
    # rate under rate_min over a second, ends the job (fio's ETIMEDOUT / EIO) and the report judges it slow.
    fio_max_read_latency_ms: float = 0.0
    fio_max_write_latency_ms: float = 0.0
    fio_min_read_mb_per_s: float = 0.0
    fio_min_write_mb_per_s: float = 0.0
    # The burn-in's time budget per target (profile burnin), in hours.
    burnin_hours: float = 4.0


@dataclass
class Plan:
    jobs: List[Job]
    run_dirs: List[str]
    raw_dirs: List[str]
    tests: List[str]
    profile: str
    cache_basis_bytes: int
    test_file_bytes: int
    repeats: int
    max_repeats: int
    fio_runtime_s: int
    space: Dict[str, Dict[str, int]]
    warnings: List[str]
    # Raw device targets: path -> {device_path, device, class, size_bytes, logical/physical_block_size}.
    raw_targets: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    # Tests of the list that do not run on a target: {target, test, reason} (needs_filesystem | needs_raw_write).
    skipped: List[Dict[str, str]] = field(default_factory=list)
    # Per filesystem (its st_dev, or the target path when unknown): mount_point, device, targets, peak_bytes (all
    # that is on it at the fullest moment of the run), peak_job {test, target}, free_bytes, size_bytes, reserve_bytes.
    filesystems: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    # The cache fence the buffered jobs run in (None: none), and whether it is the profile's default.
    cache_fence_bytes: Optional[int] = None
    cache_fence_default: bool = False
    # Every program the jobs run (argv[0] of the commands and setups: dd, fio, bonnie++ ...), in run order.
    tools: List[str] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "jobs": self.jobs, "run_dirs": self.run_dirs, "raw_dirs": self.raw_dirs, "tests": self.tests, "profile": self.profile,
            "cache_basis_bytes": self.cache_basis_bytes, "test_file_bytes": self.test_file_bytes,
            "repeats": self.repeats, "max_repeats": self.max_repeats, "fio_runtime_s": self.fio_runtime_s,
            "space": self.space, "warnings": self.warnings, "raw_targets": self.raw_targets, "skipped": self.skipped,
            "filesystems": self.filesystems, "cache_fence_bytes": self.cache_fence_bytes,
            "cache_fence_default": self.cache_fence_default, "tools": self.tools,
            "estimate_s": sum(job["estimate_s"] for job in self.jobs),
        }


# ---------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------

def _positive_int(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise PlanError("%s must be a whole number >= %d, got %r" % (name, minimum, value))
    return value


def select_tests(profile: str, tests: Sequence[str]) -> List[str]:
    """The tests to run in order: the explicit list, else the profile's; dd_seq_write first when needed."""
    if profile not in PROFILES:
        raise PlanError("unknown profile %r; profiles: %s" % (profile, ", ".join(PROFILES)))
    if isinstance(tests, (str, bytes)):
        raise PlanError("tests must be a list of test ids, got the string %r" % (tests,))
    chosen = list(tests) if tests else list(PROFILES[profile].tests)
    unknown = [test for test in chosen if test not in CATALOG]
    if unknown:
        raise PlanError("unknown test id(s) %s; known tests: %s" % (", ".join(map(repr, unknown)), ", ".join(CATALOG_ORDER)))
    selected = list(dict.fromkeys(chosen))
    # Every test of the test file reads or overwrites what dd_seq_write laid down.
    if any(CATALOG[test].uses_test_file for test in selected) and "dd_seq_write" in selected:
        selected.remove("dd_seq_write")
        selected.insert(0, "dd_seq_write")
    elif any(CATALOG[test].uses_test_file for test in selected):
        selected.insert(0, "dd_seq_write")
    return selected


def _unsafe_chars(value: str) -> str:
    return ", ".join(repr(char) for char in sorted({char for char in value if not SAFE_PATH.match(char)}))


def _check_target(index: int, target: TargetFacts) -> TargetFacts:
    """The target with its paths normalised, or PlanError saying what to fix."""
    if target.kind not in TARGET_KINDS:
        raise PlanError("targets[%d]: kind must be filesystem or raw, got %r" % (index, target.kind))
    path = target.path
    if target.raw:
        return _check_raw_target(index, target)
    if not isinstance(path, str) or not path or not posixpath.isabs(path):
        raise PlanError("targets[%d].path must be an absolute directory path, got %r" % (index, path))
    if not SAFE_PATH.match(path):
        raise PlanError("targets[%d].path %r contains %s: test commands and fio job files only take paths of letters, "
                        "digits and . _ - / + @ %% , = (mount the filesystem under such a path)"
                        % (index, path, _unsafe_chars(path)))
    _check_block_sizes(index, target, path)
    # Second line of defence behind discover (skipped with --skip-tags discover): the same rule, the same words.
    if target.filesystem is not None and target.filesystem.not_a_disk and not target.allow_non_disk:
        raise PlanError("targets[%d]: %s" % (index, refusal_message(path, target.filesystem)))
    return dataclasses.replace(target, path=posixpath.normpath(path))


def _check_block_sizes(index: int, target: TargetFacts, name: str) -> None:
    for attribute in ("logical_block_size", "physical_block_size"):
        value = getattr(target, attribute)
        if isinstance(value, bool) or not isinstance(value, int) or value < 512 or value & (value - 1):
            raise PlanError("targets[%d] (%s): %s must be a power of two >= 512, got %r" % (index, name, attribute, value))


def _check_raw_target(index: int, target: TargetFacts) -> TargetFacts:
    given = target.path
    if not isinstance(given, str) or not given or not posixpath.isabs(given):
        raise PlanError("targets[%d].device must be the absolute path of a block device such as /dev/sdb, got %r"
                        % (index, given))
    node = target.device_path or given
    if not isinstance(node, str) or not posixpath.isabs(node):
        raise PlanError("targets[%d] (%s): device_path must be an absolute device path, got %r" % (index, given, node))
    if not SAFE_PATH.match(node):
        raise PlanError("targets[%d].device %r (node %r) contains %s: test commands and fio job files only take paths of "
                        "letters, digits and . _ - / + @ %% , = (name the device by its /dev/<name> node)"
                        % (index, given, node, _unsafe_chars(node)))
    size = target.device_size_bytes
    if isinstance(size, bool) or not isinstance(size, int) or size < 512:
        raise PlanError("targets[%d] (%s): device_size_bytes must be a whole number >= 512, got %r (an empty device, "
                        "such as a loop device without a backing file, cannot be tested)" % (index, given, size))
    if target.granted_class not in RAW_CLASSES:
        raise PlanError("targets[%d] (%s): the device has no granted class (got %r): run the discover role first; it "
                        "grants raw_read/raw_write" % (index, given, target.granted_class))
    _check_block_sizes(index, target, given)
    return dataclasses.replace(target, path=posixpath.normpath(given), device_path=posixpath.normpath(node))


# ---------------------------------------------------------------------------------------------
# job builders
# ---------------------------------------------------------------------------------------------

def _memory_backed(target: TargetFacts) -> bool:
    """A directory on tmpfs/ramfs (allowed with allow_non_disk): its files are page cache that cannot be dropped."""
    return target.filesystem is not None and target.filesystem.kind == KIND_MEMORY


def _job(test: str, tool: str, target: TargetFacts, params: Dict[str, Any], settings: "_Resolved", **options: Any) -> Job:
    job: Job = {
        "test": test, "tool": tool, "argv": None, "sweep": None, "fio": None, "creates": None,
        "drop_caches": True, "direction": None, "repeats": settings.repeats, "max_repeats": settings.max_repeats,
        "max_cv": settings.max_cv, "setup": [], "cleanup": [], "chdir": None, "workdir": None, "workdir_owner": None,
        "cache_fence_bytes": (settings.fence if CATALOG[_catalog_id(test)].buffered and not _memory_backed(target)
                              else None),
        "write_cache": "unchanged", "estimate_s": 0.0,
    }
    job.update(options)
    base = {"block_size": None, "size_bytes": None, "direct": False, "sync": None, "iodepth": 1, "numjobs": 1,
            "runtime_s": None}
    base.update(params)
    # What the report judges this test on: declared in the catalog, carried by its records.
    base["judged_on"] = CATALOG[_catalog_id(test)].judged_on
    base["cache_fence_bytes"] = job["cache_fence_bytes"]
    job["params"] = base
    if target.raw:
        # No test file: the tools open the device node; records say which device and what was allowed.
        job["target"] = dict(target.identity, path=target.path, kind="raw", device_path=target.device_path,
                             device_size_bytes=target.device_size_bytes, test_file=None,
                             **{"class": target.granted_class})
    else:
        job["target"] = dict(target.identity, path=target.path, test_file=settings.test_file(target))
        if target.filesystem is not None and target.filesystem.not_a_disk:
            # The report keeps these apart from disks (own peer group by filesystem type).
            job["target"].update(not_a_disk=True, filesystem=target.filesystem.fstype)
    if target.device and "device" not in target.identity:
        job["target"]["device"] = target.device
    job["description"] = CATALOG[_catalog_id(test)].summary
    return job


def _catalog_id(test: str) -> str:
    if test.startswith("fio_verify_"):
        return "fio_verify"         # fio_verify_2of2: one pass of it
    if test.startswith("burnin_"):
        return "burnin"             # burnin_3of40: one cycle of it
    if test.startswith("ssd_precondition_"):
        return "ssd_precondition"   # ssd_precondition_3of8: one part of the preconditioning
    return "dd_block_sweep" if test.startswith("dd_block_sweep_") else test


class _Resolved:
    """Settings with the profile defaults applied and the sizes worked out."""

    def __init__(self, settings: Settings, profile: Profile, run_dirs: Mapping[str, str]) -> None:
        self.raw = settings
        self.repeats = settings.repeats if settings.repeats is not None else profile.repeats
        default_max = max(profile.max_repeats, self.repeats)
        self.max_repeats = settings.max_repeats if settings.max_repeats is not None else default_max
        self.max_cv = settings.max_cv
        self.runtime = settings.fio_runtime_s if settings.fio_runtime_s is not None else profile.fio_runtime_s
        self.ramp = settings.fio_ramp_s
        memory = settings.memory_bytes
        # An explicit fence wins; 0 turns the profile's default off; the default applies only when it is smaller
        # than the memory figure (a smaller host gets the same file from 2 x RAM without a memory cgroup).
        default = profile.default_cache_fence_bytes
        self.fence_default = settings.cache_fence_bytes is None and bool(default) and memory > default
        self.fence = default if self.fence_default else (settings.cache_fence_bytes or None)
        self.basis = min(memory, self.fence) if self.fence else memory
        seq = settings.sequential_block_size
        self.seq = seq
        self.file_bytes = buffered_test_size(self.basis, seq * MIB // math.gcd(seq, MIB))
        self.run_dirs = run_dirs

    def run_dir(self, target: TargetFacts) -> str:
        return self.run_dirs[target.path]

    def test_file(self, target: TargetFacts) -> str:
        return posixpath.join(self.run_dirs[target.path], TEST_FILE_NAME)

    def data_path(self, target: TargetFacts) -> str:
        """What the tools read and write: the run's test file, or the raw device node itself."""
        return target.device_path if target.raw else self.test_file(target)  # type: ignore[return-value]

    def span(self, target: TargetFacts, block_size: int, test: str) -> int:
        """Bytes a job covers: the test file, or min(test file, device rounded down to whole blocks)."""
        if not target.raw:
            return self.file_bytes
        return min(self.file_bytes, self.device_span(target, block_size, test))

    @staticmethod
    def device_span(target: TargetFacts, block_size: int, test: str) -> int:
        """The device size rounded down to whole blocks: no offset or size goes past its end."""
        size = int(target.device_size_bytes or 0) // block_size * block_size
        if size < block_size:
            raise PlanError("%s on %s: the device (%d bytes) is smaller than one %d-byte block"
                            % (test, target.path, target.device_size_bytes, block_size))
        return size

    def timed(self, seconds: float) -> float:
        return float(seconds) * self.repeats


def _dd_write(test: str, target: TargetFacts, s: _Resolved, block_size: int, flags: List[str], creates: bool) -> Job:
    count = s.span(target, block_size, test) // block_size
    if count < 1:
        raise PlanError("%s: the test file (%d bytes) is smaller than one %d-byte block; raise the memory figure"
                        % (test, s.file_bytes, block_size))
    path = s.data_path(target)
    direct = "oflag=direct" in flags
    argv = ["dd", "if=/dev/zero", "of=" + path, "bs=%d" % block_size, "count=%d" % count] + flags
    params = {"block_size": block_size, "size_bytes": count * block_size, "direct": direct,
              "sync": None if direct else "fdatasync"}
    return _job(test, "dd", target, params, s, argv=argv, creates=path if creates else None, direction="write",
                estimate_s=s.timed(count * block_size / s.raw.expected_bytes_per_s))


def _fio(test: str, target: TargetFacts, s: _Resolved, rw: str, block_size: int, iodepth: int, **extra: Any) -> Job:
    size = s.span(target, block_size, test)
    readonly = rw in ("read", "randread")
    values = {"name": test, "filename": s.data_path(target), "rw": rw, "bs": block_size, "iodepth": iodepth,
              "size": size, "runtime": s.runtime, "ramp_time": s.ramp, "direct": 1, "ioengine": "libaio",
              "rwmixread": None, "fdatasync": None, "readonly": readonly, "raw": target.raw}
    values.update(extra)
    params = {"block_size": block_size, "size_bytes": size, "direct": values["direct"] == 1,
              "sync": "fdatasync" if values["fdatasync"] else None, "iodepth": iodepth, "runtime_s": s.runtime,
              "rw": rw, "ioengine": values["ioengine"]}
    values.update(_fail_fast(s.raw, params))
    if values["rwmixread"] is not None:
        params["rwmixread"] = values["rwmixread"]
    # fio's read-only safety check (a job that could write is refused) exists only as the command-line flag
    # --readonly: fio 3.x rejects readonly= in a job file.
    argv = ["fio", "--output-format=json"] + (["--readonly"] if readonly else [])
    return _job(test, "fio", target, params, s, argv=argv, fio=values, estimate_s=s.timed(s.runtime + s.ramp))


def _fail_fast(settings: Settings, params: Dict[str, Any]) -> Dict[str, Optional[str]]:
    """fio's max_latency= (microseconds) and rate_min= (bytes/s) values, "read,write" with 0 for a direction off,
    or None when both are off; what is set goes into the record's params too."""
    values: Dict[str, Optional[str]] = {"max_latency": None, "rate_min": None}
    latency = (settings.fio_max_read_latency_ms, settings.fio_max_write_latency_ms)
    if any(latency):
        values["max_latency"] = "%d,%d" % tuple(round(limit * 1000) for limit in latency)
        params["max_latency_ms"] = {"read": latency[0], "write": latency[1]}
    rate = (settings.fio_min_read_mb_per_s, settings.fio_min_write_mb_per_s)
    if any(rate):
        values["rate_min"] = "%d,%d" % tuple(round(limit * 1e6) for limit in rate)
        params["rate_min_mb_per_s"] = {"read": rate[0], "write": rate[1]}
    return values


def _sysbench(test: str, target: TargetFacts, s: _Resolved, total: int, files: int, run_args: List[str],
              buffered: bool) -> Job:
    workdir = posixpath.join(s.run_dir(target), test)
    common = ["sysbench", "fileio", "--file-total-size=%d" % total, "--file-num=%d" % files,
              "--file-block-size=%d" % s.raw.sysbench_block_size]
    params = {"block_size": s.raw.sysbench_block_size, "size_bytes": total, "direct": not buffered,
              "sync": "fsync" if buffered else None, "runtime_s": s.runtime, "files": files}
    return _job(test, "sysbench", target, params, s, argv=common + run_args + ["--time=%d" % s.runtime, "--events=0",
                                                                               "--threads=1", "--percentile=99", "run"],
                setup=[common + ["prepare"]], cleanup=[common + ["cleanup"]], chdir=workdir, workdir=workdir,
                estimate_s=total / s.raw.expected_bytes_per_s + s.timed(s.runtime))


def _jobs_for(test: str, target: TargetFacts, s: _Resolved) -> List[Job]:
    seq, rand = s.seq, s.raw.random_block_size
    path = s.data_path(target)
    if target.raw:
        # build_plan filters the tests per target already; this is the last line of defence.
        allowed = ("read", "write") if target.granted_class == "raw_write" else ("read",)
        if CATALOG[test].raw not in allowed:
            raise PlanError("%s cannot run on the %s device %s" % (test, target.granted_class, target.path))
    if test == "dd_seq_write":
        return [_dd_write(test, target, s, seq, ["conv=fdatasync"], creates=True)]
    if test == "dd_seq_write_direct":
        return [_dd_write(test, target, s, seq, ["oflag=direct", "conv=notrunc"], creates=False)]
    if test == "dd_block_sweep":
        return [_dd_write("dd_block_sweep_" + label, target, s, size, ["conv=fdatasync,notrunc"], creates=False)
                for size, label in SWEEP_BLOCK_SIZES]
    if test == "dd_seq_read":
        count = s.span(target, seq, test) // seq
        return [_job(test, "dd", target, {"block_size": seq, "size_bytes": count * seq, "direct": True}, s,
                     argv=["dd", "if=" + path, "of=/dev/null", "bs=%d" % seq, "count=%d" % count, "iflag=direct"],
                     direction="read", estimate_s=s.timed(count * seq / s.raw.expected_bytes_per_s))]
    if test == "zcav_sweep":
        # A raw device is swept over its whole size (outer to inner tracks), not just the test-file size.
        span = s.device_span(target, seq, test) if target.raw else s.file_bytes
        chunk = max(seq, min(span // s.raw.zcav_points, 64 * MIB) // seq * seq)
        try:
            offsets = evenly_spaced_offsets(span, chunk, s.raw.zcav_points, seq)
        except SizingError as error:
            raise PlanError("zcav_sweep: %s" % error) from error
        sweep = [{"offset_bytes": offset, "argv": ["dd", "if=" + path, "of=/dev/null", "bs=%d" % seq,
                                                   "count=%d" % (chunk // seq), "skip=%d" % (offset // seq),
                                                   "iflag=direct"]} for offset in offsets]
        params = {"block_size": seq, "size_bytes": chunk * len(offsets), "direct": True, "points": len(offsets),
                  "chunk_bytes": chunk, "span_bytes": span}
        return [_job(test, "dd", target, params, s, sweep=sweep, direction="read", repeats=1, max_repeats=1,
                     estimate_s=chunk * len(offsets) / s.raw.expected_bytes_per_s)]
    if test == "bonnie":
        workdir = posixpath.join(s.run_dir(target), "bonnie")
        size_mib, ram_mib = s.file_bytes // MIB, max(1, s.basis // MIB)
        argv = ["bonnie++", "-d", workdir, "-s", "%d" % size_mib, "-r", "%d" % ram_mib, "-n", "0", "-f",
                "-u", s.raw.bonnie_user, "-q", "-m", target.device or "disk"]
        params = {"block_size": 8192, "size_bytes": size_mib * MIB, "direct": False, "ram_mib": ram_mib}
        return [_job(test, "bonnie", target, params, s, argv=argv, workdir=workdir, workdir_owner=s.raw.bonnie_user,
                     estimate_s=s.timed(3 * size_mib * MIB / s.raw.expected_bytes_per_s))]
    fio = CATALOG[test].fio
    if fio is not None:
        block = {SEQUENTIAL: seq, RANDOM: rand, COMMIT: s.raw.commit_block_size}[fio.block]
        job = _fio(test, target, s, fio.rw, block, fio.iodepth, **dict(fio.values))
        if fio.commit_write_cache:
            job["write_cache"] = job["params"]["write_cache"] = s.raw.commit_write_cache
        return [job]
    if test == "sysbench_rndrd":
        total = round_up(2 * s.basis, 8 * MIB)
        run_args = ["--file-test-mode=rndrd", "--file-extra-flags=direct", "--file-fsync-freq=0"]
        return [_sysbench(test, target, s, total, 8, run_args, buffered=False)]
    if test == "sysbench_fsync":
        # Every write is fsynced, so the page cache cannot flatter it: a bounded file is enough.
        total = min(round_up(2 * s.basis, 8 * MIB), 1 << 30)
        return [_sysbench(test, target, s, total, 1, ["--file-test-mode=rndwr", "--file-fsync-freq=1"], buffered=True)]
    if test == "fio_verify":
        return _verify_jobs(test, target, s)
    if test == "burnin":
        return _burnin_jobs(test, target, s)
    if test in SSD_TESTS:
        return _ssd_jobs(test, target, s)
    if test == "ioping_latency":
        count = s.raw.ioping_count
        # On a raw device the requests land anywhere on it (-S = the device size in whole requests).
        span = s.device_span(target, rand, test) if target.raw else s.file_bytes
        argv = ["ioping", "-B", "-D", "-c", "%d" % count, "-i", "100ms", "-s", "%d" % rand, "-S", "%d" % span, path]
        params = {"block_size": rand, "size_bytes": span, "direct": True, "requests": count}
        return [_job(test, "ioping", target, params, s, argv=argv, direction="read", estimate_s=s.timed(count * 0.1))]
    raise PlanError("no job builder for %r" % test)  # pragma: no cover - CATALOG and builders move together


def _verify_jobs(test: str, target: TargetFacts, s: _Resolved) -> List[Job]:
    """fio_verify: VERIFY_PASSES jobs, each writing the whole span (sequential 4 KiB blocks, O_DIRECT) with pattern
    blocks of its own generation, then reading every block back and comparing it (docs/tests.md, "Data integrity").

    verify=pattern with %o: each block carries its offset and the generation (module_utils/_verify.py), so bench_run
    can tell a flipped bit, a misplaced write and a write that never landed apart by reading the block again;
    continue_on_error=verify: every bad block, not only the first; verify_state_save=0: no state file left in the
    working directory.
    """
    jobs = []
    for number in range(1, VERIFY_PASSES + 1):
        job = _pattern_pass(test, target, s, s.raw.random_block_size, VERIFY_IODEPTH, number, VERIFY_PASSES)
        job["description"] = "%s: pass %d of %d, generation 0x%08x" % (
            CATALOG[test].summary, number, VERIFY_PASSES, job["params"]["verify_generation"])
        jobs.append(job)
    return jobs


def _pattern_pass(test: str, target: TargetFacts, s: _Resolved, block: int, iodepth: int, number: int, passes: int,
                  span: Optional[int] = None) -> Job:
    """Pass ``number`` of ``passes`` (``<test>_<number>of<passes>``): sequential writes of pattern blocks of the
    pass's own generation over the job's span (or ``span`` bytes), then every block read back and compared."""
    generation = _verify.generation(s.raw.run_id, number)
    job = _fio("%s_%dof%d" % (test, number, passes), target, s, "write", block, iodepth, time_based=False,
               runtime=None, ramp_time=None, verify_pattern=_verify.pattern_option(generation))
    if span is not None:
        job["fio"]["size"] = job["params"]["size_bytes"] = span
    job["params"].update(runtime_s=None, verify="pattern", verify_generation=generation, verify_pass=number,
                         verify_passes=passes)
    # Written once and read once: the figure is the pass's, repeats would only rewrite the same blocks.
    job.update(repeats=1, max_repeats=1, estimate_s=2.0 * job["fio"]["size"] / s.raw.expected_bytes_per_s)
    return job


def _burnin_jobs(test: str, target: TargetFacts, s: _Resolved) -> List[Job]:
    """burnin: as many write-and-verify cycles as burnin_hours hold at expected_mb_per_s (1 to BURNIN_MAX_CYCLES),
    each a job over the whole target - the test file, or all of a raw_write device - in sequential 1 MiB pattern
    blocks of the cycle's own generation (so a write that never landed shows the previous cycle's data), read back
    and compared. bench_run reads the health counters around each cycle, skips the cycles past the budget and
    stops the rest at a new error (module_utils/_burnin.py)."""
    block = s.raw.sequential_block_size
    span = s.device_span(target, block, test) if target.raw else s.file_bytes
    cycle_s = 2.0 * span / s.raw.expected_bytes_per_s
    budget_s = s.raw.burnin_hours * 3600.0
    # as many as the budget holds at the expected speed; a faster disk finishes early, a slower one is cut at it
    cycles = max(1, min(BURNIN_MAX_CYCLES, int(math.ceil(budget_s / cycle_s)))) if cycle_s > 0 else 1
    jobs = []
    for number in range(1, cycles + 1):
        job = _pattern_pass(test, target, s, block, BURNIN_IODEPTH, number, cycles, span)
        job["params"].update(burnin_cycle=number, burnin_cycles=cycles, burnin_budget_s=budget_s,
                             burnin_run=s.raw.run_id, burnin_target=target.path)
        job["description"] = "burn-in cycle %d of up to %d (budget %g h), generation 0x%08x" % (
            number, cycles, s.raw.burnin_hours, job["params"]["verify_generation"])
        jobs.append(job)
    return jobs


def _ssd_purge_argv(method: str, device_path: str) -> List[List[str]]:
    """The purge before the preconditioning, as argv lists (run once, recorded as the first part's setup).

    blkdiscard without -f keeps its own refusal of a device with signatures; nvme format --ses=1 erases the
    namespace's user data; ATA secure erase sets a temporary user password (the erase clears it again).
    """
    if method == "blkdiscard":
        return [["blkdiscard", "-v", device_path]]
    if method == "nvme_format":
        return [["nvme", "format", device_path, "--ses=1", "--force"]]
    return [["hdparm", "--user-master", "u", "--security-set-pass", "diskproof", device_path],
            ["hdparm", "--user-master", "u", "--security-erase", "diskproof", device_path]]


def _ssd_precondition_parts(span: int, total: int, block: int) -> List[Tuple[int, int]]:
    """(offset, size) of each preconditioning job: sequential passes over the device, each in
    SSD_PRECONDITION_PARTS_PER_PASS parts (a progress line per part), total bytes in all."""
    edges = sorted({span * index // SSD_PRECONDITION_PARTS_PER_PASS // block * block
                    for index in range(SSD_PRECONDITION_PARTS_PER_PASS)} | {span})
    parts: List[Tuple[int, int]] = []
    written = 0
    while written < total:
        for start, end in zip(edges, edges[1:]):
            if written >= total:
                break
            size = min(end - start, total - written)
            parts.append((start, size))
            written += size
    return parts


def _ssd_jobs(test: str, target: TargetFacts, s: _Resolved) -> List[Job]:
    settings = s.raw
    if not target.raw or target.granted_class != "raw_write":
        raise PlanError("%s runs only on a raw_write device, not on %s" % (test, target.path))
    if test == "ssd_precondition":
        block = SSD_PRECONDITION_BLOCK_SIZE
        span = s.device_span(target, block, test)
        total = settings.ssd_precondition_bytes or 2 * span
        total = max(block, total // block * block)
        parts = _ssd_precondition_parts(span, total, block)
        purge = _ssd_purge_argv(settings.ssd_purge_method, str(target.device_path)) if settings.ssd_purge else []
        jobs = []
        done = 0
        for number, (offset, size) in enumerate(parts, 1):
            name = "ssd_precondition_%dof%d" % (number, len(parts))
            job = _fio(name, target, s, "write", block, SSD_PRECONDITION_IODEPTH, size=size, offset=offset,
                       time_based=False, runtime=None, ramp_time=None)
            job["params"].update(size_bytes=size, runtime_s=None, offset_bytes=offset, precondition_total_bytes=total,
                                 precondition_done_bytes=done + size, pass_number=done // span + 1,
                                 purge=(settings.ssd_purge_method if settings.ssd_purge else None))
            job.update(repeats=1, max_repeats=1, drop_caches=False, estimate_s=size / settings.expected_bytes_per_s,
                       setup=purge if number == 1 else [])
            job["description"] = "%s: pass %d of %s, bytes %d-%d of the device (%d of %d written after this part)" % (
                CATALOG[test].summary, done // span + 1, "%g" % (total / span), offset, offset + size, done + size,
                total)
            done += size
            jobs.append(job)
        return jobs
    rw = "randwrite" if test == "ssd_steady_rand_write" else "randread"
    block = settings.random_block_size
    limit = settings.ssd_steady_time_limit_s
    # The whole device (the SNIA test range), not min(test file, device).
    job = _fio(test, target, s, rw, block, 32, size=s.device_span(target, block, test), runtime=limit, ramp_time=0,
               steadystate=settings.ssd_steady_criterion, ss_dur=settings.ssd_steady_window_s,
               ss_ramp=settings.ssd_steady_ramp_s)
    job["params"].update(size_bytes=job["fio"]["size"], runtime_s=limit, steadystate=settings.ssd_steady_criterion,
                         ss_window_s=settings.ssd_steady_window_s, ss_ramp_s=settings.ssd_steady_ramp_s,
                         ss_max_slope_excursion_percent=settings.ssd_steady_max_slope_excursion_percent)
    job.update(repeats=1, max_repeats=1, drop_caches=False, estimate_s=float(limit))
    return [job]


def _mark_preconditioned(jobs: List[Job]) -> None:
    """params.preconditioned_bytes of each steady-state job: what this run's preconditioning wrote to its device
    before it (the last part's running total; 0 when the run did not precondition)."""
    written: Dict[str, int] = {}
    for job in jobs:
        device = job["target"].get("device_path")
        if _catalog_id(job["test"]) == "ssd_precondition":
            written[device] = job["params"]["precondition_done_bytes"]
        elif job["test"] in SSD_TESTS:
            job["params"]["preconditioned_bytes"] = written.get(device, 0)


def _extra_space(test: str, s: _Resolved) -> int:
    kind = CATALOG[test].extra_files
    if kind == "sysbench":
        return round_up(2 * s.basis, 8 * MIB)
    if kind == "sysbench_fsync":
        return min(round_up(2 * s.basis, 8 * MIB), 1 << 30)
    if kind == "bonnie":
        return s.file_bytes
    return 0


def _direct_block_sizes(selected: Sequence[str], settings: Settings) -> List[Tuple[str, int]]:
    """(setting name, value) of every block size used with O_DIRECT by the selected tests (the catalog says which)."""
    used = {CATALOG[test].direct_block for test in selected}
    return [(name, getattr(settings, name)) for name in (SEQUENTIAL, RANDOM, SYSBENCH) if name in used]


def _check_settings(settings: Settings) -> None:
    if not isinstance(settings.run_id, str) or not SAFE_RUN_ID.match(settings.run_id):
        raise PlanError("run_id must be 1-64 letters, digits, '.', '_' or '-', got %r" % (settings.run_id,))
    _positive_int("memory_bytes", settings.memory_bytes, MIB)
    # None: the profile's default fence; 0: no fence.
    if settings.cache_fence_bytes is not None and settings.cache_fence_bytes != 0:
        _positive_int("cache_fence_bytes", settings.cache_fence_bytes, 16 * MIB)
    for name in ("fio_runtime_s", "repeats", "max_repeats"):
        if getattr(settings, name) is not None:
            _positive_int(name, getattr(settings, name))
    _positive_int("fio_ramp_s", settings.fio_ramp_s, 0)
    hours = settings.burnin_hours
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= BURNIN_MAX_HOURS:
        raise PlanError("burnin_hours must be a number of hours above 0 and at most %d, got %r"
                        % (BURNIN_MAX_HOURS, hours))
    for name in ("fio_max_read_latency_ms", "fio_max_write_latency_ms", "fio_min_read_mb_per_s",
                 "fio_min_write_mb_per_s"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
            raise PlanError("%s must be a number >= 0 (0: off), got %r" % (name, value))
    if settings.repeats is not None and settings.max_repeats is not None and settings.max_repeats < settings.repeats:
        raise PlanError("max_repeats (%d) must be >= repeats (%d)" % (settings.max_repeats, settings.repeats))
    if isinstance(settings.max_cv, bool) or not isinstance(settings.max_cv, (int, float)) or not 0 < settings.max_cv < 1:
        raise PlanError("max_cv must be a fraction between 0 and 1 (0.05 = 5 %%), got %r" % (settings.max_cv,))
    # Alignment of the direct-I/O sizes is checked per device (build_plan), naming its block sizes.
    for name in ("sequential_block_size", "random_block_size", "commit_block_size", "sysbench_block_size"):
        _positive_int(name, getattr(settings, name))
    if settings.commit_write_cache not in ("unchanged", "off"):
        raise PlanError("commit_write_cache must be 'unchanged' or 'off', got %r" % (settings.commit_write_cache,))
    if not SAFE_USER.match(settings.bonnie_user or ""):
        raise PlanError("bonnie_user must be a plain user name, got %r" % (settings.bonnie_user,))
    if isinstance(settings.expected_bytes_per_s, bool) or not isinstance(settings.expected_bytes_per_s, (int, float)) \
            or settings.expected_bytes_per_s <= 0:
        raise PlanError("expected_bytes_per_s must be a positive number, got %r" % (settings.expected_bytes_per_s,))
    if not 0 <= settings.reserve_fraction < 1:
        raise PlanError("reserve_fraction must be between 0 and 1, got %r" % (settings.reserve_fraction,))
    _positive_int("reserve_min_bytes", settings.reserve_min_bytes, 0)
    _positive_int("zcav_points", settings.zcav_points, 2)
    _positive_int("ioping_count", settings.ioping_count)
    if settings.keep_raw_dir and (not posixpath.isabs(settings.keep_raw_dir) or not SAFE_PATH.match(settings.keep_raw_dir)):
        raise PlanError("keep_raw_dir must be an absolute path of letters, digits and . _ - / + @ %% , =, got %r"
                        % (settings.keep_raw_dir,))
    _check_ssd_settings(settings)


def _check_ssd_settings(settings: Settings) -> None:
    if settings.ssd_precondition_bytes is not None:
        _positive_int("ssd_precondition_bytes", settings.ssd_precondition_bytes, SSD_PRECONDITION_BLOCK_SIZE)
    if not isinstance(settings.ssd_steady_criterion, str) or not SSD_CRITERION.match(settings.ssd_steady_criterion):
        raise PlanError("ssd_steady_criterion must be fio's iops:<limit>[%%] or iops_slope:<limit>[%%] (e.g. iops:20%% "
                        "or iops_slope:0.3%%), got %r" % (settings.ssd_steady_criterion,))
    _positive_int("ssd_steady_window_s", settings.ssd_steady_window_s, 2)
    _positive_int("ssd_steady_ramp_s", settings.ssd_steady_ramp_s, 0)
    _positive_int("ssd_steady_time_limit_s", settings.ssd_steady_time_limit_s)
    needed = settings.ssd_steady_ramp_s + 2 * settings.ssd_steady_window_s
    if settings.ssd_steady_time_limit_s < needed:
        raise PlanError("ssd_steady_time_limit_s (%d) must be at least ssd_steady_ramp_s + 2 x ssd_steady_window_s "
                        "= %d: fio needs the ramp and a full window before it can judge, and a time limit that "
                        "ends with the first window never sees the window move" % (settings.ssd_steady_time_limit_s, needed))
    slope = settings.ssd_steady_max_slope_excursion_percent
    if slope is not None and (isinstance(slope, bool) or not isinstance(slope, (int, float)) or slope <= 0):
        raise PlanError("ssd_steady_max_slope_excursion_percent must be a positive number (10 = the SNIA 10 %%) or "
                        "null (fio's criterion alone), got %r" % (slope,))
    if settings.ssd_purge_method not in SSD_PURGE_METHODS:
        raise PlanError("ssd_purge_method must be one of %s, got %r" % (", ".join(SSD_PURGE_METHODS),
                                                                        settings.ssd_purge_method))
    firmware = settings.ssd_purge_method in SSD_FIRMWARE_PURGES
    if settings.ssd_purge and firmware and not settings.ssd_purge_firmware_erase:
        raise PlanError("ssd_purge_method %s erases the drive through its firmware: it needs ssd_purge_firmware_erase: "
                        "true as well (blkdiscard needs only ssd_purge)" % settings.ssd_purge_method)


def _raw_tests(index: int, target: TargetFacts, selected: Sequence[str], requested: Sequence[str], explicit: bool,
               skipped: List[Dict[str, str]]) -> List[str]:
    """The tests of the list that run on a raw device; the others go to ``skipped`` with their reason.

    Reads run on raw_read and raw_write; writes only on raw_write (asked explicitly on raw_read: refused);
    tests needing a filesystem never. dd_seq_write added only to lay out a test file is dropped silently.
    """
    tests: List[str] = []
    refused: List[str] = []
    for test in selected:
        kind = CATALOG[test].raw
        if test not in requested:
            continue
        if kind == "read" or (kind == "write" and target.granted_class == "raw_write"):
            tests.append(test)
        elif kind == "write":
            if explicit:
                refused.append(test)
            skipped.append({"target": target.path, "test": test, "reason": "needs_raw_write"})
        else:
            skipped.append({"target": target.path, "test": test, "reason": "needs_filesystem"})
    if refused:
        raise PlanError("targets[%d] (%s) is raw_read: %s %s to the device, and %s; drop the write test(s) for this "
                        "target or ask raw_write behind the interlock"
                        % (index, target.path, ", ".join(refused), "writes" if len(refused) == 1 else "write",
                           INTERLOCK))
    return tests


def _directory_tests(target: TargetFacts, selected: Sequence[str], skipped: List[Dict[str, str]]) -> List[str]:
    """The tests of the list that run on a directory target: all but the raw-device-only SSD tests."""
    tests = []
    for test in selected:
        if CATALOG[test].raw_only:
            skipped.append({"target": target.path, "test": test, "reason": "needs_raw_write_device"})
        else:
            tests.append(test)
    return tests


def _ssd_skip_warnings(skipped: Sequence[Mapping[str, str]], targets: Sequence[TargetFacts]) -> List[str]:
    lines = []
    for target in targets:
        tests = [entry["test"] for entry in skipped
                 if entry["target"] == target.path and entry["reason"] == "needs_raw_write_device"]
        if tests:
            lines.append("%s: skipped %s: the SSD steady-state tests write the whole device and run only on a raw "
                         "device target granted raw_write (%s)" % (target.path, ", ".join(tests), INTERLOCK))
    return lines


def _skip_warnings(skipped: Sequence[Mapping[str, str]], raw_targets: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """One line per target and reason, naming the tests left out and why."""
    lines: List[str] = []
    for path, info in raw_targets.items():
        for reason, why in (
                ("needs_raw_write", "they write to the device and %s" % INTERLOCK),
                ("needs_filesystem", "they need a filesystem (a buffered test file or files of their own): give them "
                                     "a directory target")):
            tests = [entry["test"] for entry in skipped if entry["target"] == path and entry["reason"] == reason]
            if tests:
                lines.append("%s (%s): skipped %s: %s" % (path, info["class"], ", ".join(tests), why))
    return lines


def build_plan(targets: Sequence[TargetFacts], settings: Settings) -> Plan:
    """Every job for every target of one host, in run order, or PlanError before anything is written."""
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence) or not targets:
        raise PlanError("diskproof_targets must be a non-empty list such as [{path: /srv/disk1}], got %r: set it, or "
                        "diskproof_select: all_data_disks to test the disks the discover role selects" % (targets,))
    _check_settings(settings)
    selected = select_tests(settings.profile, settings.tests)
    explicit = bool(settings.tests)
    requested = list(settings.tests) if explicit else list(PROFILES[settings.profile].tests)
    if settings.include_verify and not explicit and "fio_verify" not in selected:
        selected, requested = selected + ["fio_verify"], requested + ["fio_verify"]
        if "dd_seq_write" not in selected:
            selected.insert(0, "dd_seq_write")
    if settings.include_ssd_steady_state and not explicit:
        # After the profile's tests: their figures are the fresh drive's, these the preconditioned drive's.
        added = [test for test in SSD_TESTS if test not in selected]
        selected, requested = selected + added, requested + added
    targets = [_check_target(index, target) for index, target in enumerate(targets)]
    paths = [target.path for target in targets if not target.raw]
    duplicates = sorted({path for path in paths if paths.count(path) > 1})
    if duplicates:
        raise PlanError("diskproof_targets lists the same directory more than once: %s" % ", ".join(duplicates))
    nodes = [target.device_path for target in targets if target.raw]
    duplicates = sorted({str(node) for node in nodes if nodes.count(node) > 1})
    if duplicates:
        raise PlanError("diskproof_targets lists the same device more than once: %s" % ", ".join(duplicates))
    filesystems = {target.device: target.path for target in targets if not target.raw and target.device}
    for index, target in enumerate(targets):
        if target.raw and target.granted_class == "raw_write" and target.device in filesystems:
            raise PlanError("targets[%d] (%s) is raw_write but the directory target %s is on the same disk %s: writing "
                            "the bare device would destroy that filesystem; test one or the other"
                            % (index, target.path, filesystems[target.device], target.device))
    run_dirs = {target.path: posixpath.join(target.path, RUN_DIR_PREFIX + settings.run_id)
                for target in targets if not target.raw}
    try:
        resolved = _Resolved(settings, PROFILES[settings.profile], run_dirs)
    except SizingError as error:
        raise PlanError(str(error)) from error
    if resolved.max_repeats < resolved.repeats:
        raise PlanError("max_repeats (%d) must be >= repeats (%d)" % (resolved.max_repeats, resolved.repeats))

    skipped: List[Dict[str, str]] = []
    per_target = [_raw_tests(index, target, selected, requested, explicit, skipped) if target.raw
                  else _directory_tests(target, selected, skipped) for index, target in enumerate(targets)]
    raw_targets = {target.path: {"device_path": target.device_path, "device": target.device,
                                 "class": target.granted_class, "size_bytes": target.device_size_bytes,
                                 "logical_block_size": target.logical_block_size,
                                 "physical_block_size": target.physical_block_size}
                   for target in targets if target.raw}
    warnings: List[str] = []
    for target, tests in zip(targets, per_target):
        device = target.device or target.path
        for name, value in _direct_block_sizes(tests, settings):
            try:
                warnings.extend(check_direct_block_size(name, value, device, target.logical_block_size,
                                                        target.physical_block_size))
            except SizingError as error:
                raise PlanError("%s: %s" % (target.path, error)) from error
    warnings.extend(_skip_warnings(skipped, raw_targets))
    warnings.extend(_ssd_skip_warnings(skipped, targets))
    warnings.extend(allowed_warning(target.path, target.filesystem) for target in targets
                    if not target.raw and target.filesystem is not None and target.filesystem.not_a_disk)
    if resolved.fence:
        warnings.extend("%s is on %s: its buffered tests run without the cache fence (the test file is memory "
                        "itself, charged to the fence's memory cgroup, which would kill the tool)"
                        % (target.path, target.filesystem.fstype)  # type: ignore[union-attr]
                        for target in targets if _memory_backed(target))

    jobs: List[Job] = []
    raw_dirs: List[str] = []
    for target, tests in zip(targets, per_target):
        # Raw outputs per target: the same test on two targets must not share file names.
        name = str(target.device_path if target.raw else target.path)
        raw_dir = posixpath.join(settings.keep_raw_dir, name.strip("/").replace("/", "_") or "root") \
            if settings.keep_raw_dir else None
        if raw_dir:
            raw_dirs.append(raw_dir)
        for test in tests:
            for job in _jobs_for(test, target, resolved):
                job["keep_raw"] = raw_dir
                jobs.append(job)
    if not jobs:
        raise PlanError("none of the tests %s can run on these targets: %s" % (", ".join(requested), "; ".join(warnings)))
    _mark_preconditioned(jobs)
    # Refused here, before anything is written: nothing was created yet (the module creates the run directories).
    space, filesystems = _space_per_filesystem(targets, jobs, _remove_test_files_after_last_use(jobs), resolved)
    ran = {_catalog_id(job["test"]) for job in jobs}
    return Plan(jobs=jobs, run_dirs=[run_dirs[target.path] for target in targets if not target.raw], raw_dirs=raw_dirs,
                tests=[test for test in selected if test in ran], profile=settings.profile,
                cache_basis_bytes=resolved.basis, test_file_bytes=resolved.file_bytes, repeats=resolved.repeats,
                max_repeats=resolved.max_repeats, fio_runtime_s=resolved.runtime, space=space, warnings=warnings,
                raw_targets=raw_targets, skipped=skipped, filesystems=filesystems,
                cache_fence_bytes=resolved.fence if any(job["cache_fence_bytes"] for job in jobs) else None,
                cache_fence_default=resolved.fence_default, tools=_tools_of(jobs))


def _tools_of(jobs: Sequence[Job]) -> List[str]:
    """The programs the jobs run (their argv, sweep and setup commands), once each in run order: the tool preflight
    checks each is installed before anything is stopped."""
    commands = [job["argv"] or [job["tool"]] for job in jobs] + [step["argv"] for job in jobs
                                                                 for step in job["sweep"] or []]
    commands += [argv for job in jobs for argv in job["setup"]]
    return list(dict.fromkeys(str(argv[0]) for argv in commands if argv))


def _remove_test_files_after_last_use(jobs: List[Job]) -> Dict[int, str]:
    """Give the last job that reads or writes each test file a cleanup that removes it; job index -> test file.

    Jobs run one after the other (the role loops over them in this order), and bench_run always runs cleanup
    after the job's runs, also after a failure: so the next target's files never sit next to this one's.
    """
    last: Dict[str, int] = {}
    for index, job in enumerate(jobs):
        test_file = job["target"].get("test_file")
        if test_file and CATALOG[_catalog_id(job["test"])].uses_test_file:
            last[test_file] = index
    for test_file, index in last.items():
        jobs[index]["cleanup"] = list(jobs[index]["cleanup"]) + [["rm", "-f", "--", test_file]]
    return {index: test_file for test_file, index in last.items()}


def _filesystem_name(key: str, figures: Mapping[str, Any]) -> str:
    """How a refusal names a filesystem: its mount point, device and st_dev, and the targets on it."""
    if key in figures["targets"]:
        return key   # its filesystem was not looked at (no st_dev): the target stands for it
    return "the filesystem %s holding the target%s %s" % (
        _filesystem_label(key, figures), "s" if len(figures["targets"]) > 1 else "", ", ".join(figures["targets"]))


def _filesystem_label(key: str, figures: Mapping[str, Any]) -> str:
    """'mounted at /srv (device sdb1, 8:17)'; the mount point and device only when known."""
    label = ", ".join(part for part in (figures["device"] and "device %s" % figures["device"], key) if part)
    return ("mounted at %s (%s)" % (figures["mount_point"], label)) if figures["mount_point"] else label


def _space_per_filesystem(targets: Sequence[TargetFacts], jobs: Sequence[Job], removals: Mapping[int, str],
                          s: _Resolved) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Dict[str, Any]]]:
    """Walk the jobs in run order, as the run will: a test file is there from the job that creates it until the
    job that removes it, an extra file set (sysbench, bonnie++) while its own job runs. The fullest moment of each
    filesystem must leave the reserve free, else PlanError naming the filesystem, its targets and the figures.

    Returns (per target: needed_bytes = its own fullest moment, free_bytes, reserve_bytes, filesystem;
    per filesystem: see Plan.filesystems).
    """
    directories = [target for target in targets if not target.raw]
    key_of = {target.path: target.filesystem_id or target.path for target in directories}
    filesystems: Dict[str, Dict[str, Any]] = {}
    for target in directories:
        figures = filesystems.setdefault(key_of[target.path], {
            "mount_point": target.mount_point, "device": target.filesystem_device,
            "targets": [], "peak_bytes": 0, "peak_job": None, "free_bytes": target.free_bytes,
            "size_bytes": target.filesystem_size_bytes, "reserve_bytes": 0})
        figures["targets"].append(target.path)
        # Each target's free space was read in turn: the least of them is what the filesystem surely has.
        figures["free_bytes"] = min(figures["free_bytes"], target.free_bytes)
    own = {target.path: 0 for target in directories}
    present: Dict[str, Tuple[str, int]] = {}   # test file -> (its target, bytes) while it is on disk
    for index, job in enumerate(jobs):
        path = job["target"]["path"]
        if job["target"].get("kind") == "raw" or path not in key_of:
            continue   # nothing is created on a raw device: no run directory, no space to keep
        if job["creates"]:
            present[job["creates"]] = (path, s.file_bytes)
        extra = _extra_space(_catalog_id(job["test"]), s)
        figures = filesystems[key_of[path]]
        here = extra + sum(size for owner, size in present.values() if key_of[owner] == key_of[path])
        if here > figures["peak_bytes"]:
            figures["peak_bytes"], figures["peak_job"] = here, {"test": job["test"], "target": path}
        own[path] = max(own[path], extra + sum(size for owner, size in present.values() if owner == path))
        if index in removals:
            present.pop(removals[index], None)
    for key, figures in filesystems.items():
        peak_job = figures["peak_job"]
        try:
            figures["reserve_bytes"] = check_free_space(
                _filesystem_name(key, figures), figures["peak_bytes"], figures["free_bytes"], figures["size_bytes"],
                s.raw.reserve_fraction, s.raw.reserve_min_bytes,
                at_once="while %s runs on %s" % (peak_job["test"], peak_job["target"]) if peak_job else "")
        except SizingError as error:
            raise PlanError(str(error)) from error
    space = {target.path: {"needed_bytes": own[target.path], "free_bytes": target.free_bytes,
                           "reserve_bytes": filesystems[key_of[target.path]]["reserve_bytes"],
                           "filesystem": key_of[target.path]} for target in directories}
    return space, filesystems


def _human(value: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return "%.1f %s" % (value / scale, unit)
    return "%d B" % value


def plan_lines(plan: Plan, memory_bytes: int, fence: Optional[int]) -> List[str]:
    """The plan as people read it: sizing first, then one line per job with its estimate."""
    fence = plan.cache_fence_bytes or fence
    basis = ("cache fence %s" % _human(fence)) if fence and plan.cache_basis_bytes == fence else \
        ("memory figure %s" % _human(memory_bytes))
    if plan.cache_fence_default:
        basis += (" (the %s profile's default: diskproof_cache_fence_bytes: 0 sizes it from the memory figure %s "
                  "instead)" % (plan.profile, _human(memory_bytes)))
    total = sum(job["estimate_s"] for job in plan.jobs)
    lines = ["profile %s: %d tests, %d jobs, %d run(s) each (up to %d when unstable), about %d min"
             % (plan.profile, len(plan.tests), len(plan.jobs), plan.repeats, plan.max_repeats, math.ceil(total / 60)),
             "test file %s = 2 x %s, rounded to whole blocks" % (_human(plan.test_file_bytes), basis)]
    for path, figures in plan.space.items():
        lines.append("%s: needs %s, keeps %s free of %s available" % (
            path, _human(figures["needed_bytes"]), _human(figures["reserve_bytes"]), _human(figures["free_bytes"])))
    for key, figures in plan.filesystems.items():
        if len(figures["targets"]) > 1:
            lines.append("filesystem %s: targets %s: at most %s at once, keeps %s free of %s available" % (
                _filesystem_label(key, figures).replace("mounted at ", "", 1), ", ".join(figures["targets"]),
                _human(figures["peak_bytes"]), _human(figures["reserve_bytes"]), _human(figures["free_bytes"])))
    for path, info in plan.raw_targets.items():
        lines.append("%s: raw device %s (%s), %s, logical block %d B: tests run on the device node, each within "
                     "min(test file, device), the ZCAV sweep over the whole device; nothing is created" % (
                         path, info["device_path"], info["class"], _human(info["size_bytes"]), info["logical_block_size"]))
    several = len(plan.space) + len(plan.raw_targets) > 1
    for job in plan.jobs:
        params = job["params"]
        lines.append("%-22s %-9s bs %-9s size %-10s ~%ds%s%s" % (
            job["test"], job["tool"], _human(params["block_size"]) if params.get("block_size") else "-",
            _human(params["size_bytes"]) if params.get("size_bytes") else "-", round(job["estimate_s"]),
            "  (fenced)" if job["cache_fence_bytes"] else "", "  on %s" % job["target"]["path"] if several else ""))
    lines.extend("warning: " + warning for warning in plan.warnings)
    return lines
