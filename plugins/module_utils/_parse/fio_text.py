# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse fio's normal (human-readable) output, fio 2.0 to 3.x, and its terse output (``--minimal``,
``--output-format=terse``, terse versions 2 to 5) into the same FioJob figures as the JSON path (fio.py).

fio.parse() comes here only when the text holds no fio JSON: JSON stays preferred, as it is exact.

Normal output, one FioJob per ``name: (groupid=N, jobs=N): err=N`` block (one per job, or one per
group with group_reporting), one Direction per ``read``/``write``/``trim`` line in it:

- fio >= 2.17 (and 3.x): ``read: IOPS=49, BW=49.8MiB/s (52.2MB/s)(101MiB/2027msec)``; KiB/MiB are
  powers of 1024, kB/MB powers of 1000 (fio commit d694a6a7).
- fio 2.0 to 2.16: ``read : io=241236KB, bw=24035KB/s, iops=6008, runt= 10037msec``; KB/MB are powers of
  1024 (fio's default kb_base=1024) and a fraction is not decimal: num2str() printed the remainder of the
  last division ("3.5GB" is 3 GiB + 5 MiB) unless it had to shorten it (lib/num2str.c before fio-2.20,
  commit 9e55f2c7); fio 2.17 to 2.19 print the IOPS= lines that way too, known from their banner line.
- bytes = the printed io amount (rounded by fio to 4-6 digits: a warning says so); bytes/s = those
  bytes / the printed runtime (fio's BW= is the same quotient, rounded once more); IOPS = the
  ``issued`` total of the job / runtime (what fio's JSON prints), else the printed, rounded IOPS.
- ``clat``/``lat (nsec|usec|msec): min=, max=, avg=, stdev=`` and the ``clat percentiles (unit):``
  block, in the unit of their own header; the completion/total latency rule is fio_job.pick_latency's.
- under ``fsync/fdatasync/sync_file_range:``, ``sync (unit): min=, max=, avg=, stdev=`` and its ``sync percentiles``
  block: the job's commit latency (``latency_ns.sync``; the terse output has none).

Terse output: one line per job, ``;``-separated, its first field the terse version, which decides the
layout (fio HOWTO.rst, "Terse output"; fio stat.c show_thread_status_terse_all()):

- v2: ``2;jobname;groupid;error`` then read, write (fio 2.0) and trim (fio >= 2.1) status;
  v3: ``3;fio-version;jobname;groupid;error`` then read and write; v4: read, write and trim;
  v5: as v4 with bandwidth samples and IOPS statistics added to each direction (47 fields, not 41).
- each direction: io (KiB), bandwidth (KiB/s), IOPS, runtime (ms); slat, clat min/max/mean/stdev (usec);
  20 ``pct%=usec`` clat percentiles; lat min/max/mean/stdev (usec); bandwidth min/max/agg%/mean/stdev.
- fio truncates io to whole KiB and IOPS to an integer: a warning says so.

Output holding terse lines and a normal block (``--output-format=terse,normal``, ``--append-terse``)
gives the terse jobs only (more digits), with a warning: the same jobs are not counted twice.
Output with neither job blocks nor terse lines but ``Run status group`` lines gives one record per
group direction line: bytes and bytes/s only (io / the longest runtime), with a warning.

Every line is read once with patterns anchored at its start: time stays linear in the input size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .errors import ParseError
from .fio_job import (DIRECTIONS, PERCENTILES, TOOL, Direction, FioJob, LatencyStats, error_lines_by_code, error_message,
                      exercised, make_direction, noise_warnings, pick_latency)
from .units import IEC_BYTES, KIB, SI_BYTES, BUSYBOX_BYTES, ns_per, parse_unsigned

# fio < 2.20 num2str() printed at most 6 digits (old io= lines, latency min/max) or 4 (the IOPS= lines of
# fio 2.17 to 2.19): the room that decides whether a fraction is its unshortened remainder
LEGACY_MAXLEN = 6
LEGACY_NEW_LINE_MAXLEN = 4
_RELEASE = re.compile(r"fio-([0-9]{1,4})\.([0-9]{1,4})")
TERSE_FIXED_TAIL = 5 + 7 + 10 + 12  # cpu, I/O depths, latency buckets (us), latency buckets (ms)
TERSE_DIR_FIELDS = {2: 41, 3: 41, 4: 41, 5: 47}
TERSE_HEAD_FIELDS = {2: 4, 3: 5, 4: 5, 5: 5}
TERSE_MIN_FIELDS = 100  # a terse line has >= 120 fields; fewer ';' is some other text
_SP = r"[^\S\n]"

_HEADER_TAIL = re.compile(r": \(groupid=([0-9]{1,9}), jobs=([0-9]{1,9})\): err=\s*(-?[0-9]{1,9})")
_DIR_NEW = re.compile(r"(read|write|trim|mixed)\s*: IOPS=([0-9.]+)([kMGTPE]?), BW=[^(\n]*\([^)\n]*\)"
                      r"\(([0-9.]+)([A-Za-z]*)/([0-9]{1,20})msec\)")
_DIR_OLD = re.compile(r"(read|write|trim|mixed)\s*: io=([0-9.]+) ?([A-Za-z]*), bw=[^,\n]*, "
                      r"iops=([0-9.]+)([KkMGTPE]?)\s*, runt=\s*([0-9]{1,20})msec")
# fio 2.0.x wrote a blank before some commas: "min=3 , max=249858 , avg=53.47"
_LAT = re.compile(r"(slat|clat|lat|sync) \((nsec|usec|msec)\): min=\s*([0-9.]+)([KkMGTPE]?)\s*, "
                  r"max=\s*([0-9.]+)([KkMGTPE]?)\s*, avg=\s*([0-9.]+), (?:st)?dev=\s*([0-9.]+)")
_PCT_HEAD = re.compile(r"(slat|clat|lat|sync) percentiles \((nsec|usec|msec)\):")
# one percentile entry, tried only where a number starts (not from every digit of a long run)
_PCT_ENTRY = re.compile(r"(?<![0-9.])([0-9]{1,3}(?:\.[0-9]{1,8})?)th=\[\s*([0-9]{1,20})\]")
_ISSUED = re.compile(r"issued[ a-z]*: total=(?:r=)?([0-9]{1,20})[,/](?:w=)?([0-9]{1,20})"
                     r"(?:[,/](?:[dt]=)?([0-9]{1,20}))?")
_GROUP = re.compile(r"Run status group ([0-9]{1,9}) \(all jobs\):")
_GROUP_NEW = re.compile(r"(READ|WRITE|TRIM|MIXED): bw=[^\n]*?, io=([0-9.]+)([A-Za-z]*) \([^)\n]*\), "
                        r"run=[0-9]{1,20}-([0-9]{1,20})msec")
_GROUP_OLD = re.compile(r"(READ|WRITE|TRIM|MIXED): io=([0-9.]+)([A-Za-z]*), aggrb=[^\n]*?maxt=\s*([0-9]{1,20})msec")
_VERSION_LINE = re.compile(r"fio[- ]([0-9][^\s]*)")  # fio 2.0.x printed "fio 2.0.2"
_TERSE_PCT = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,8})?)%=([0-9]{1,20})")
_INT = re.compile(r"-?[0-9]{1,12}")

# tool=auto and fio.parse(): a normal job header, a direction line, a group summary or a terse line.
MARKERS = re.compile((
    r"^(?:"
    r"[^\n]*?: \(groupid=[0-9]+, jobs=[0-9]+\): err="  # no leading {sp}*: both would take the blanks (quadratic)
    r"|{sp}*(?:read|write|trim){sp}*: (?:IOPS=[0-9]|io=[0-9])"
    r"|{sp}*Run status group [0-9]+ \(all jobs\):"
    r"|[2-5](?:;[^;\n]*){%d})" % TERSE_MIN_FIELDS).replace("{sp}", _SP),
    re.MULTILINE,
)


def recognise(text: str) -> bool:
    """True when text holds fio normal or terse output (not JSON)."""
    return MARKERS.search(text) is not None


@dataclass
class _Section:
    """One direction line of one normal-output job, and the latency lines under it."""

    name: str
    lineno: int
    io_bytes: int
    runtime_ms: int
    printed_iops: float
    rounded_io: Optional[str]
    legacy: bool  # fio < 2.20 (io= ... runt= line): its num2str() fractions
    stats: Dict[str, LatencyStats] = field(default_factory=dict)


@dataclass
class _JobBlock:
    name: str
    lineno: int
    groupid: int
    error_code: int
    sections: List[_Section] = field(default_factory=list)
    sync: Optional[_Section] = None  # the 'fsync/fdatasync/sync_file_range:' lines: the sync latency
    issued: Optional[Tuple[int, ...]] = None


def _number(text: str, line: str, lineno: int) -> float:
    """An unsigned decimal; an int when fio printed no point (as the JSON path has them)."""
    value = parse_unsigned(text, TOOL, line, lineno)  # ParseError unless plain digits (and a point), <= 40
    return value if "." in text else int(text)


def _printed(number: str, factor: int, base: int, legacy: bool, line: str, lineno: int,
             maxlen: int = LEGACY_MAXLEN) -> float:
    """A num2str() figure times its unit. fio < 2.20 wrote the remainder of its last division by base after
    the point ("3.5GB" = 3 GiB + 5 MiB) when it fit in maxlen digits unshortened: taken as that remainder."""
    value = _number(number, line, lineno)  # ParseError for anything but a plain decimal of <= 40 digits
    if legacy and "." in number and factor >= base:
        whole, fraction = number.split(".", 1)
        if len(fraction) < maxlen - len(whole) - 1:
            return int(whole) * factor + int(fraction) * (factor // base)
    return value * factor


def _byte_factor(unit: str, legacy: bool, line: str, lineno: int) -> int:
    """fio 2.x: B, KB, MB ... powers of 1024; fio 3.x: KiB, MiB ... (1024) or kB, MB ... (1000)."""
    table = BUSYBOX_BYTES if legacy else (IEC_BYTES if unit in IEC_BYTES else SI_BYTES)
    if unit not in table:
        raise ParseError(TOOL, "a byte unit fio prints (B, KiB, MiB, kB, MB or fio 2.x KB, MB), got '%s'"
                         % unit[:20], line, lineno)
    return table[unit]


def _count(number: str, suffix: str, legacy: bool, line: str, lineno: int, maxlen: int = LEGACY_MAXLEN) -> float:
    """A count printed with an SI suffix (k or K = 1000)."""
    factors = {"": 1, "k": 10 ** 3, "K": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
               "E": 10 ** 18}
    return _printed(number, factors[suffix], 1000, legacy, line, lineno, maxlen)


def _io_amount(number: str, unit: str, legacy: bool, line: str, lineno: int, units_legacy: Optional[bool] = None,
               maxlen: int = LEGACY_MAXLEN) -> Tuple[int, Optional[str]]:
    factor = _byte_factor(unit, legacy if units_legacy is None else units_legacy, line, lineno)
    amount = int(round(_printed(number, factor, KIB, legacy, line, lineno, maxlen)))
    return amount, (number + unit if factor > 1 else None)


def before_fraction_fix(version: Optional[str]) -> bool:
    """fio 2.17 to 2.19 print the IOPS= lines with fio < 2.20's fractions; known only from the banner."""
    found = _RELEASE.match(version or "")
    return found is not None and (int(found.group(1)), int(found.group(2))) < (2, 20)


def _direction_line(line: str, lineno: int, version: Optional[str]) -> Optional[_Section]:
    found = _DIR_NEW.match(line)
    if found is not None:
        name, iops, suffix, io_number, io_unit, runtime = found.groups()
        legacy = before_fraction_fix(version)
        io_bytes, rounded = _io_amount(io_number, io_unit, legacy, line, lineno, False, LEGACY_NEW_LINE_MAXLEN)
        return _Section(name, lineno, io_bytes, int(runtime),
                        _count(iops, suffix, legacy, line, lineno, LEGACY_NEW_LINE_MAXLEN), rounded, legacy)
    found = _DIR_OLD.match(line)
    if found is not None:
        name, io_number, io_unit, iops, suffix, runtime = found.groups()
        io_bytes, rounded = _io_amount(io_number, io_unit, True, line, lineno)
        return _Section(name, lineno, io_bytes, int(runtime), _count(iops, suffix, True, line, lineno), rounded,
                        True)
    return None


def _latency_line(found: "re.Match[str]", legacy: bool, line: str, lineno: int) -> LatencyStats:
    _kind, unit, low, low_suffix, high, high_suffix, mean, stdev = found.groups()
    scale = ns_per(unit[0] + "s" if unit != "nsec" else "ns", TOOL, line, lineno)
    return LatencyStats(_number(mean, line, lineno) * scale,
                        _count(low, low_suffix, legacy, line, lineno) * scale,
                        _count(high, high_suffix, legacy, line, lineno) * scale,
                        _number(stdev, line, lineno) * scale)


def _percentile_entries(line: str, scale: int, target: LatencyStats) -> None:
    for found in _PCT_ENTRY.finditer(line):
        pct = float(found.group(1))
        for name, wanted in PERCENTILES:
            if abs(pct - wanted) < 1e-6:
                target.percentiles[name] = int(found.group(2)) * scale


def _job_header(line: str, lineno: int) -> Optional[_JobBlock]:
    position = line.find(": (groupid=")
    if position <= 0:
        return None
    found = _HEADER_TAIL.match(line, position)
    if found is None:
        return None
    return _JobBlock(line[:position].strip(), lineno, int(found.group(1)), int(found.group(3)))


def _issued(found: "re.Match[str]") -> Tuple[int, ...]:
    return tuple(int(value) for value in found.groups() if value is not None)


@dataclass
class _Normal:
    """Everything read from the normal-output lines of one text."""

    blocks: List[_JobBlock] = field(default_factory=list)
    groups: List[Tuple[int, str, int, Optional[str], int, int]] = field(default_factory=list)
    terse: List[Tuple[int, str]] = field(default_factory=list)
    messages: List[str] = field(default_factory=list)
    version: Optional[str] = None


def _read_lines(text: str) -> _Normal:
    read = _Normal()
    block: Optional[_JobBlock] = None
    section: Optional[_Section] = None
    percentiles: Optional[Tuple[LatencyStats, int]] = None
    group: Optional[int] = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("|"):
            if percentiles is not None:
                _percentile_entries(line, percentiles[1], percentiles[0])
            continue
        percentiles = None
        if line.startswith("fio:"):
            read.messages.append(line)
            continue
        if line[:2] in ("2;", "3;", "4;", "5;") and line.count(";") >= TERSE_MIN_FIELDS:
            read.terse.append((lineno, line))
            block = section = None
            continue
        found = _VERSION_LINE.fullmatch(line) if read.version is None else None
        if found is not None:
            read.version = "fio-" + found.group(1)
            continue
        header = _job_header(line, lineno)
        if header is not None:
            block, section, group = header, None, None
            read.blocks.append(block)
            continue
        found = _GROUP.match(line)
        if found is not None:
            block = section = None
            group = int(found.group(1))
            continue
        if group is not None:
            _group_line(read, group, line, lineno)
            continue
        if block is None:
            continue
        new_section = _direction_line(line, lineno, read.version)
        if new_section is not None:
            section = new_section
            block.sections.append(section)
            continue
        found = _ISSUED.match(line)
        if found is not None:
            block.issued = _issued(found)
            continue
        if line.startswith("fsync/fdatasync"):
            # The sync latency lines below it belong to no direction: the job's commit latency.
            section = block.sync = _Section("sync", lineno, 0, 0, 0.0, None, False)
            continue
        if section is None:
            continue
        found = _LAT.match(line)
        if found is not None:
            section.stats.setdefault(found.group(1), _latency_line(found, section.legacy, line, lineno))
            continue
        found = _PCT_HEAD.match(line)
        kind = "sync" if section is block.sync else "clat"
        if found is not None and found.group(1) == kind and kind in section.stats:
            unit = found.group(2)
            percentiles = (section.stats[kind], ns_per("ns" if unit == "nsec" else unit[0] + "s", TOOL, line, lineno))
    return read


def _group_line(read: _Normal, group: int, line: str, lineno: int) -> None:
    new_legacy = before_fraction_fix(read.version)
    for pattern, legacy, maxlen in ((_GROUP_NEW, new_legacy, LEGACY_NEW_LINE_MAXLEN),
                                    (_GROUP_OLD, True, LEGACY_MAXLEN)):
        found = pattern.match(line)
        if found is not None:
            name, number, unit, runtime = found.groups()
            io_bytes, rounded = _io_amount(number, unit, legacy, line, lineno, pattern is _GROUP_OLD, maxlen)
            read.groups.append((group, name.lower(), io_bytes, rounded, int(runtime), lineno))
            return


def _section_direction(block: _JobBlock, section: _Section, index: int, warnings: List[str]) -> Optional[Direction]:
    path = "job '%s' %s (line %d)" % (block.name, section.name, section.lineno)
    total: Optional[int] = None
    if block.issued is not None and index < len(block.issued):
        total = block.issued[index]
    if not exercised(section.io_bytes, section.runtime_ms, total):
        return None
    if total is not None and section.runtime_ms > 0:
        iops: Optional[float] = total * 1000.0 / section.runtime_ms  # fio's JSON iops: issued / runtime
    else:
        iops = section.printed_iops
        warnings.append("%s: IOPS as fio printed it (rounded): no 'issued' line to count I/Os from" % path)
    if section.rounded_io is not None:
        warnings.append("%s: fio printed io=%s, rounded; bytes and bytes/s (bytes / %d ms) are that rounded "
                        "figure: run fio with --output-format=json for exact ones"
                        % (path, section.rounded_io, section.runtime_ms))
    stats = section.stats
    latency = pick_latency(stats.get("clat"), stats.get("lat"), path, "lat", warnings)
    return make_direction(section.io_bytes, section.runtime_ms, iops, total, latency, path, warnings)


def _normal_jobs(read: _Normal, err_lines: Dict[str, str], noise: List[str]) -> List[FioJob]:
    jobs: List[FioJob] = []
    for block in read.blocks:
        warnings = list(noise)
        job = FioJob(len(jobs), block.name, block.groupid, None, read.version, block.error_code,
                     error_message(block.error_code, block.name, err_lines))
        for section in block.sections:
            if section.name == "mixed":
                warnings.append("job '%s' (line %d): unified_rw_reporting 'mixed' figures are not attributed to "
                                "read or write" % (block.name, section.lineno))
                continue
            index = DIRECTIONS.index(section.name)
            if getattr(job, section.name) is None:
                setattr(job, section.name, _section_direction(block, section, index, warnings))
        if block.sync is not None and "sync" in block.sync.stats:
            job.sync_latency_ns = pick_latency(block.sync.stats["sync"], None, "job '%s' sync (line %d)" % (
                block.name, block.sync.lineno), "sync", warnings)
        job.warnings = warnings
        jobs.append(job)
    return jobs


def _group_jobs(read: _Normal, noise: List[str]) -> List[FioJob]:
    """Only fio's 'Run status group' summary: one record per group direction line, bytes and bytes/s."""
    jobs: List[FioJob] = []
    for group, name, io_bytes, rounded, runtime_ms, lineno in read.groups:
        path = "group %d %s (line %d)" % (group, name, lineno)
        warnings = list(noise) + ["%s: only fio's group summary: no job blocks, so no IOPS nor latency; "
                                  "bytes/s = io / the group's longest runtime (%d ms)" % (path, runtime_ms)]
        if rounded is not None:
            warnings.append("%s: fio printed io=%s, rounded; bytes and bytes/s are that rounded figure"
                            % (path, rounded))
        job = FioJob(len(jobs), "group %d (all jobs)" % group, group, None, read.version, 0, None)
        if name in DIRECTIONS and exercised(io_bytes, runtime_ms, None):
            setattr(job, name, make_direction(io_bytes, runtime_ms, None, None, None, path, warnings))
        else:
            warnings.append("%s: unified 'mixed' figures are not attributed to read or write" % path)
        job.warnings = warnings
        jobs.append(job)
    return jobs


def _terse_layout(fields: List[str], line: str, lineno: int) -> Tuple[int, int, int]:
    """(version, directions, fields per direction) from the version field and the field count."""
    version = int(fields[0])
    per_dir = TERSE_DIR_FIELDS[version]
    head = TERSE_HEAD_FIELDS[version]
    directions = 2 if version == 3 else 3
    if version == 2 and len(fields) < head + 3 * per_dir + TERSE_FIXED_TAIL:
        directions = 2  # fio 2.0 printed no trim status in terse v2
    wanted = head + directions * per_dir + TERSE_FIXED_TAIL
    if len(fields) < wanted:
        raise ParseError(TOOL, "terse version %d with at least %d ';'-separated fields, got %d (fio HOWTO, "
                         "'Terse output')" % (version, wanted, len(fields)), line, lineno)
    return version, directions, per_dir


def _terse_stat(fields: List[str], at: int, line: str, lineno: int) -> Optional[LatencyStats]:
    """min, max, mean, stdev in usec; all zero when fio had no samples."""
    low, high, mean, stdev = (_number(value, line, lineno) for value in fields[at:at + 4])
    if not (high > 0 or mean > 0):
        return None
    return LatencyStats(mean * 1000, low * 1000, high * 1000, stdev * 1000)


def _terse_direction(fields: List[str], at: int, path: str, line: str, lineno: int,
                     warnings: List[str]) -> Optional[Direction]:
    kib, _bw, iops, runtime = (_number(value, line, lineno) for value in fields[at:at + 4])
    io_bytes = int(kib * KIB)
    if not exercised(io_bytes, runtime, None):
        return None
    clat = _terse_stat(fields, at + 8, line, lineno)
    if clat is not None:
        for value in fields[at + 12:at + 32]:
            found = _TERSE_PCT.fullmatch(value)
            if found is None:
                raise ParseError(TOOL, "a terse clat percentile 'pct%%=usec' at %s, got '%s'" % (path, value[:40]),
                                 line, lineno)
            pct = float(found.group(1))
            for name, wanted in PERCENTILES:
                if abs(pct - wanted) < 1e-6:
                    clat.percentiles[name] = int(found.group(2)) * 1000
    lat = _terse_stat(fields, at + 32, line, lineno)
    latency = pick_latency(clat, lat, path, "lat", warnings)
    return make_direction(io_bytes, runtime, iops, None, latency, path, warnings)


def _terse_job(index: int, lineno: int, line: str, err_lines: Dict[str, str], noise: List[str]) -> FioJob:
    fields = line.split(";")
    version, directions, per_dir = _terse_layout(fields, line, lineno)
    head = TERSE_HEAD_FIELDS[version]
    fio_version = None if version == 2 else fields[1]
    name, groupid, code = fields[head - 3:head]
    if not (_INT.fullmatch(groupid) and _INT.fullmatch(code)):
        raise ParseError(TOOL, "terse groupid and error as integers", line, lineno)
    warnings = list(noise)
    job = FioJob(index, name, int(groupid), None, fio_version, int(code), error_message(int(code), name, err_lines))
    for number, direction in enumerate(DIRECTIONS[:directions]):
        path = "terse v%d job '%s' %s (line %d)" % (version, name, direction, lineno)
        setattr(job, direction, _terse_direction(fields, head + number * per_dir, path, line, lineno, warnings))
    if job.directions:
        warnings.append("terse v%d job '%s' (line %d): fio prints io in whole KiB and IOPS as an integer (both "
                        "truncated), latencies in whole usec (min, max, percentiles)" % (version, name, lineno))
    job.warnings = warnings
    return job


def parse(text: str) -> List[FioJob]:
    """Every job of fio normal or terse output in text, in order; ParseError when there is none."""
    read = _read_lines(text)
    noise = noise_warnings(read.messages)
    err_lines = error_lines_by_code(read.messages)
    if read.terse:
        jobs = [_terse_job(index, lineno, line, err_lines, noise) for index, (lineno, line) in enumerate(read.terse)]
        if read.blocks:
            for job in jobs:
                job.warnings.append("fio's normal output follows the terse lines: figures taken from the terse "
                                    "lines only (the same jobs, more digits)")
        return jobs
    if read.blocks:
        return _normal_jobs(read, err_lines, noise)
    if read.groups:
        return _group_jobs(read, noise)
    raise ParseError(TOOL, "fio JSON (--output-format=json), normal or terse output: no job block "
                     "('name: (groupid=N, jobs=N): err=N'), terse line or 'Run status group' line found")
