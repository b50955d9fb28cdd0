#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accuracy of the test catalog on lab disks of known speed, and the naive mistakes for contrast.

Brings up a lab (default lab/accuracy.yml: one disk at 50 MiB/s and 200 IOPS; --matrix:
lab/accuracy-matrix.yml, nine hosts, {25, 50, 200} MiB/s x {100, 200, 1000} IOPS, all in one run),
runs playbooks/validate.yml with a profile (default standard) through the real report callback, then
benchmarks/contrast.yml (naive buffered dd without sync, a buffered re-read with and without the
cache fence) on every host, compares every figure that has a configured truth with it (the binding
limit: tools/labkit/compare.py), prints the other figures (commit rate, latency, bonnie++) with their
explanation, and always tears the lab down. While the playbooks run it samples, on this machine,
each lab disk's throttle counters (root blkio cgroup io_serviced / io_service_bytes) and its
/sys/block/<dev>/stat, so every figure shows the request size the throttle counted and the device
saw during that run. With several hosts it adds a matrix: test x host of relative errors.

    sudo .venv/bin/python benchmarks/accuracy.py                       # standard, 10 s fio runs
    sudo .venv/bin/python benchmarks/accuracy.py --profile full --tolerance 0.03 --markdown
    sudo .venv/bin/python benchmarks/accuracy.py --matrix --markdown   # nine hosts at once
    .venv/bin/python benchmarks/accuracy.py --report-only --markdown   # the tables again, from --out

Exit code 0 when every compared figure is within the tolerance (default 3 %), 1 otherwise,
2 when the lab or a playbook failed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from labkit.compare import (  # noqa: E402  (after the path is set)
    MIXED_READ_PERCENT, TRUTH_FIELDS, Comparison, binding_limit, bound_text, compare)

import yaml  # noqa: E402

MIB = 1 << 20
MATRIX_SPEC = ROOT / "lab/accuracy-matrix.yml"
BLKIO = pathlib.Path("/sys/fs/cgroup/blkio")
SAMPLE_INTERVAL_S = 0.5
# Counters kept per disk and sample: the throttle's (what it charged against the limits) and the device's.
COUNTERS = ("thr_read_ios", "thr_read_bytes", "thr_write_ios", "thr_write_bytes",
            "dev_read_ios", "dev_read_bytes", "dev_write_ios", "dev_write_bytes")


def run(argv: List[str], env: Optional[Dict[str, str]] = None) -> int:
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode


def playbook(inventory: str, playbook_path: str, report_dir: str, extra: Dict[str, Any]) -> int:
    env = dict(os.environ, DISKPROOF_REPORT_DIR=report_dir, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    argv = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", inventory, playbook_path]
    if extra:
        # One JSON object: key=value form splits at spaces, which broke lists such as --tests a,b.
        argv += ["-e", json.dumps(extra)]
    return run(argv, env)


def figure(record: Dict[str, Any], name: str) -> Optional[float]:
    value = (record.get("metrics") or {}).get(name)
    return float(value) if isinstance(value, (int, float)) else None


def latency(record: Dict[str, Any], direction: str, key: str) -> Optional[float]:
    lat = ((record.get("metrics") or {}).get("latency_ns") or {}).get(direction) or {}
    value = lat.get(key)
    return float(value) / 1e6 if isinstance(value, (int, float)) else None


def fmt(value: Optional[float], scale: float = 1.0, digits: int = 2) -> str:
    return "-" if value is None else "%.*f" % (digits, value / scale)


# --- device counters, sampled on this machine while the playbooks run (the lab is local) ---

def lab_disks(inventory: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """host -> its first lab disk (device, major_minor, limits) from the lab inventory, slowest first
    (by write bytes/s, then write IOPS, then name): the order of the matrix columns."""
    hosts = inventory["all"]["children"]["lab"]["hosts"]
    disks = {name: (host_vars.get("diskproof_lab_disks") or [{}])[0] for name, host_vars in hosts.items()}
    return dict(sorted(disks.items(), key=lambda item: (item[1].get("write_bytes_per_s") or 0,
                                                        item[1].get("write_iops") or 0, item[0])))


def _blkio_counts(name: str, devices: Dict[str, str]) -> Dict[str, Dict[str, int]]:
    """{device: {Read: n, Write: n}} from a root blkio cgroup rwstat file ("MAJ:MIN Read N" lines)."""
    by_mm = {mm: dev for dev, mm in devices.items()}
    counts: Dict[str, Dict[str, int]] = {dev: {} for dev in devices}
    try:
        text = (BLKIO / name).read_text()
    except OSError:
        return counts
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in by_mm and parts[1] in ("Read", "Write"):
            counts[by_mm[parts[0]]][parts[1]] = int(parts[2])
    return counts


def read_counters(devices: Dict[str, str]) -> Dict[str, Dict[str, int]]:
    """One snapshot: per device (name -> MAJ:MIN) the throttle's and the device's I/O and byte counters."""
    ios = _blkio_counts("blkio.throttle.io_serviced", devices)
    nbytes = _blkio_counts("blkio.throttle.io_service_bytes", devices)
    snapshot = {}
    for dev in devices:
        try:
            stat = [int(field) for field in pathlib.Path("/sys/block", dev, "stat").read_text().split()]
        except (OSError, ValueError):
            continue
        # /sys/block/<dev>/stat: reads completed, merged, sectors read, ms, writes completed, merged, sectors written
        snapshot[dev] = {"thr_read_ios": ios[dev].get("Read", 0), "thr_read_bytes": nbytes[dev].get("Read", 0),
                         "thr_write_ios": ios[dev].get("Write", 0), "thr_write_bytes": nbytes[dev].get("Write", 0),
                         "dev_read_ios": stat[0], "dev_read_bytes": stat[2] * 512,
                         "dev_write_ios": stat[4], "dev_write_bytes": stat[6] * 512}
    return snapshot


class Sampler(threading.Thread):
    """Snapshots the lab disks' counters every SAMPLE_INTERVAL_S seconds (wall clock, as the records' times)."""

    def __init__(self, devices: Dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.devices = devices
        self.samples: List[Dict[str, Any]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while True:
            self.samples.append({"t": time.time(), "disks": read_counters(self.devices)})
            if self.stopping.wait(SAMPLE_INTERVAL_S):
                self.samples.append({"t": time.time(), "disks": read_counters(self.devices)})
                return

    def stop(self) -> List[Dict[str, Any]]:
        self.stopping.set()
        self.join()
        return self.samples


def epoch(iso: Optional[str]) -> Optional[float]:
    if not iso:
        return None
    try:
        return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


def window_delta(samples: List[Dict[str, Any]], device: Optional[str],
                 record: Dict[str, Any]) -> Optional[Dict[str, int]]:
    """The counters' change over the record's run: from the last sample before its start to the first one
    after its end. The records' times are whole seconds, so the window is widened to them (at most about
    1.5 s of the neighbouring run of the same test, or the cache drop before it)."""
    start, end = epoch(record.get("started")), epoch(record.get("finished"))
    if not device or start is None or end is None:
        return None
    before = [s for s in samples if s["t"] <= start and device in s["disks"]]
    after = [s for s in samples if s["t"] >= end + 1 and device in s["disks"]]
    if not before or not after:
        return None
    first, last = before[-1]["disks"][device], after[0]["disks"][device]
    return {key: last[key] - first[key] for key in COUNTERS}


def request_sizes(delta: Optional[Dict[str, int]], direction: str) -> Tuple[Optional[float], Optional[float]]:
    """(mean bytes per I/O the throttle charged, mean bytes per request the device completed) in a direction."""
    if not delta:
        return None, None
    sizes = []
    for side in ("thr", "dev"):
        ios, nbytes = delta["%s_%s_ios" % (side, direction)], delta["%s_%s_bytes" % (side, direction)]
        sizes.append(nbytes / ios if ios > 0 else None)
    return sizes[0], sizes[1]


def rate_series(samples: List[Dict[str, Any]], device: Optional[str], record: Dict[str, Any], direction: str,
                unit: str) -> List[float]:
    """What the device completed per sample interval during the record's run (MiB/s or IOPS), from the
    samples between its start and its end (whole seconds, so the first and last interval may be partial)."""
    start, end = epoch(record.get("started")), epoch(record.get("finished"))
    if not device or start is None or end is None:
        return []
    inside = [s for s in samples if start <= s["t"] <= end + 1 and device in s["disks"]]
    key = "dev_%s_%s" % (direction, "bytes" if unit == "B/s" else "ios")
    scale = MIB if unit == "B/s" else 1.0
    return [(later["disks"][device][key] - earlier["disks"][device][key]) / (later["t"] - earlier["t"]) / scale
            for earlier, later in zip(inside, inside[1:]) if later["t"] > earlier["t"]]


def miss_rows(compared: List[Comparison], report: Dict[str, Any], samples: List[Dict[str, Any]],
              tolerance: float) -> List[List[str]]:
    """Each figure outside the tolerance with the device's rate through its run: evidence for the cause."""
    records = records_by_key(report)
    rows = []
    for row in compared:
        error = row.relative_error
        if error is not None and abs(error) <= tolerance:
            continue
        unit = TRUTH_FIELDS[row.test][2]
        direction = TRUTH_FIELDS[row.test][1].split("_", 1)[0]
        record = records.get((row.host, row.test), {})
        series = rate_series(samples, row.device, record, direction, unit)
        charged, seen = request_sizes(window_delta(samples, row.device, record), direction)
        scale = MIB if unit == "B/s" else 1.0
        rows.append([row.host, row.test, "-" if error is None else "%+.1f%%" % (100 * error),
                     "%s (%s)" % (fmt(row.configured, scale), bound_text(row)),
                     " ".join("%.0f" % value for value in series) or "-",
                     "%s / %s" % (size_text(charged), size_text(seen)), "%s s" % record.get("seconds", "-")])
    return rows


def size_text(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return "%.2f MiB" % (value / MIB) if value >= MIB else "%.1f KiB" % (value / 1024)


# --- tables ---

def records_by_key(report: Dict[str, Any]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    return {(entry.get("host"), entry.get("test")): entry.get("record") or {} for entry in report.get("results", [])}


def accuracy_rows(report: Dict[str, Any], inventory: Dict[str, Any], tolerance: float,
                  samples: Optional[List[Dict[str, Any]]] = None) -> Tuple[List[List[str]], List[Comparison]]:
    """One row per figure; the last three columns explain, they never change the truth: the mean request
    size the throttle charged and the device completed during the run, and what the throttle lets through
    at the charged size (min(bytes/s, IOPS x charged size) for a bytes test)."""
    records = records_by_key(report)
    disks = lab_disks(inventory)
    rows, compared = [], compare(report, inventory)
    for row in compared:
        unit = TRUTH_FIELDS[row.test][2]
        direction = TRUTH_FIELDS[row.test][1].split("_", 1)[0]
        scale = MIB if unit == "B/s" else 1.0
        label = "MiB/s" if unit == "B/s" else "IOPS"
        error = row.relative_error
        verdict = "ok" if error is not None and abs(error) <= tolerance else "OUT"
        charged, seen = request_sizes(window_delta(samples or [], row.device, records.get((row.host, row.test), {})),
                                      direction)
        allowed = None
        if charged and row.test not in MIXED_READ_PERCENT:
            allowed, _bound = binding_limit(disks.get(row.host, {}), direction, unit, int(round(charged)))
        rows.append([row.host, row.test, "%s %s" % (fmt(row.configured, scale), label), bound_text(row),
                     "%s %s" % (fmt(row.measured, scale), label), "-" if error is None else "%+.1f%%" % (100 * error),
                     verdict, size_text(charged), size_text(seen),
                     "-" if allowed is None or row.measured is None else "%s (%+.1f%%)" % (
                         fmt(allowed, scale), 100 * (row.measured - allowed) / allowed)])
    return rows, compared


def combination(disk: Dict[str, Any], host: str) -> str:
    """ "25/100" (MiB/s / IOPS) when reads and writes have the same limits, else the host name."""
    bps, iops = disk.get("write_bytes_per_s"), disk.get("write_iops")
    if bps and iops and bps == disk.get("read_bytes_per_s") and iops == disk.get("read_iops"):
        return "%g/%d" % (bps / MIB, iops)
    return host


def matrix_rows(compared: List[Comparison], inventory: Dict[str, Any], tolerance: float,
                markdown: bool) -> Tuple[List[str], List[List[str]], List[List[str]]]:
    """Test x host: relative errors (misses marked), and the configured truth with the limit that binds."""
    disks = lab_disks(inventory)
    hosts = list(disks)
    header = ["test"] + [combination(disks[host], host) for host in hosts]
    cells = {(row.host, row.test): row for row in compared}
    tests = [test for test in TRUTH_FIELDS if any(row.test == test for row in compared)]
    errors, truths = [], []
    for test in tests:
        error_line, truth_line = [test], [test]
        for host in hosts:
            row = cells.get((host, test))
            error = row.relative_error if row else None
            if error is None:
                error_line.append("missing")
            else:
                text = "%+.1f%%" % (100 * error)
                if abs(error) > tolerance:
                    text = "**%s**" % text if markdown else text + " !"
                error_line.append(text)
            if row is None or row.configured is None:
                truth_line.append("-")
            else:
                unit = TRUTH_FIELDS[test][2]
                value = "%g" % round(row.configured / MIB, 2) if unit == "B/s" else "%g" % round(row.configured, 1)
                direction = TRUTH_FIELDS[test][1].split("_", 1)[0]
                truth_line.append("%s (%s)" % (value, short_bound(row.bound_by, direction)))
        errors.append(error_line)
        truths.append(truth_line)
    return header, errors, truths


def short_bound(bound: Optional[str], direction: str) -> str:
    """ "write B/s = write IOPS" -> "B/s = IOPS" for a write test; other directions keep their name."""
    parts = (bound or "-").split(" = ")
    return " = ".join(part[len(direction) + 1:] if part.startswith(direction + " ") else part for part in parts)


def contrast_rows(contrast: Dict[str, Any], inventory: Dict[str, Any]) -> List[List[str]]:
    """Per host: the naive write and the two re-reads against the binding limit for their request size."""
    disks = lab_disks(inventory)
    records = records_by_key(contrast)
    rows = []
    for host, disk in disks.items():
        line = [combination(disk, host)]
        for test, direction, metric in (("naive_dd_write_no_sync", "write", "write_bytes_per_s"),
                                        ("dd_buffered_reread_unfenced", "read", "read_bytes_per_s"),
                                        ("dd_buffered_reread_fenced", "read", "read_bytes_per_s")):
            record = records.get((host, test)) or {}
            request = (record.get("params") or {}).get("block_size") or MIB
            truth, bound = binding_limit(disk, direction, "B/s", request)
            value = figure(record, metric)
            moved = record.get("bytes")
            seen = (record.get("device_io") or {}).get(direction + "_bytes")
            if value is None or not truth:
                line.append("-")
                continue
            ratio = value / truth
            verb = "read" if direction == "read" else "wrote"
            share = "" if not moved or seen is None else ", device %s %.0f%%" % (verb, 100.0 * seen / moved)
            vs = "x%.0f" % ratio if ratio >= 2 else "%+.1f%%" % (100 * (ratio - 1))
            line.append("%.2f MiB/s (%s vs %g, %s%s)" % (value / MIB, vs, round(truth / MIB, 2), bound, share))
        rows.append(line)
    return rows


def other_rows(report: Dict[str, Any]) -> List[List[str]]:
    """Figures without a single configured truth: commit rate, latency, bonnie++, stability."""
    rows = []
    for entry in report.get("results", []):
        record = entry.get("record") or {}
        test = entry.get("test")
        if test in TRUTH_FIELDS or not record:
            continue
        parts = []
        for name, label, scale in (("write_bytes_per_s", "write MiB/s", MIB), ("read_bytes_per_s", "read MiB/s", MIB),
                                   ("read_iops", "read IOPS", 1), ("write_iops", "write IOPS", 1),
                                   ("fsyncs_per_s", "fsyncs/s", 1)):
            value = figure(record, name)
            if value is not None:
                parts.append("%s %s" % (label, fmt(value, scale)))
        for direction in ("read", "write"):
            p50, p99 = latency(record, direction, "p50"), latency(record, direction, "p99")
            mean = latency(record, direction, "mean")
            if mean is not None:
                parts.append("%s latency mean %s ms p50 %s p99 %s" % (direction, fmt(mean, 1, 3), fmt(p50, 1, 3),
                                                                      fmt(p99, 1, 3)))
        device_io = record.get("device_io") or {}
        moved = record.get("bytes")
        if isinstance(moved, (int, float)) and moved:
            seen = (device_io.get("write_bytes") or 0) + (device_io.get("read_bytes") or 0)
            parts.append("device saw %.0f%% of the bytes" % (100.0 * seen / moved))
        rows.append([entry.get("host"), test, "; ".join(parts), entry.get("verdict") or "-"])
    return rows


def stability_rows(report: Dict[str, Any]) -> List[List[str]]:
    rows = []
    for entry in report.get("results", []):
        record = entry.get("record") or {}
        if record.get("samples"):
            cv = record.get("cv")
            rows.append([entry.get("host"), entry.get("test"), str(len(record["samples"])),
                         "-" if cv is None else "%.2f%%" % (100 * cv)])
    return rows


def table(header: List[str], rows: List[List[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _column in header) + "|"]
        lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)) for row in [header] + rows)


def git_code() -> str:
    """git HEAD, and whether the checkout has uncommitted changes (the figures belong to that code)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False)
    return (head.stdout.strip() or "unknown") + (" + uncommitted changes" if dirty.stdout.strip() else "")


def run_lab(args: argparse.Namespace) -> int:
    """Lab up, sampler on, catalog and contrast playbooks, lab down; everything the tables need goes to --out."""
    spec = yaml.safe_load(pathlib.Path(args.spec).read_text())
    state_dir = "/run/diskproof-lab/" + spec["name"]
    out = pathlib.Path(args.out)
    catalog_dir, contrast_dir = out / "catalog", out / "contrast"
    for stale in (catalog_dir / "report.json", contrast_dir / "report.json", out / "run.json", out / "io-samples.json"):
        if stale.exists():
            stale.unlink()  # a failed playbook must not leave an older run's figures to be read
    out.mkdir(parents=True, exist_ok=True)
    lab = [sys.executable, str(ROOT / "tools/lab")]
    run(lab + ["down", "--state", state_dir])
    if run(lab + ["up", "--state", state_dir, args.spec]) != 0:
        return 2
    meta: Dict[str, Any] = {"spec": os.path.relpath(args.spec, ROOT), "profile": args.profile, "runtime": args.runtime,
                            "code": git_code(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    sampler = None
    rc = 0
    try:
        inventory_path = state_dir + "/inventory.yml"
        inventory = yaml.safe_load(pathlib.Path(inventory_path).read_text())
        (out / "inventory.yml").write_text(yaml.safe_dump(inventory))
        sampler = Sampler({disk["device"]: disk["major_minor"] for disk in lab_disks(inventory).values()
                           if disk.get("device") and disk.get("major_minor")})
        sampler.start()
        extra: Dict[str, Any] = {"diskproof_profile": args.profile, "benchmark_fio_runtime_s": args.runtime}
        if args.repeats:
            extra["benchmark_repeats"] = args.repeats
        if args.tests:
            extra["benchmark_tests"] = args.tests.split(",")
        started = time.monotonic()
        rc = playbook(inventory_path, str(ROOT / "playbooks/validate.yml"), str(catalog_dir), extra)
        meta["catalog_s"] = time.monotonic() - started
        if not args.no_contrast:
            started = time.monotonic()
            rc = playbook(inventory_path, str(ROOT / "benchmarks/contrast.yml"), str(contrast_dir), {}) or rc
            meta["contrast_s"] = time.monotonic() - started
    finally:
        if sampler is not None:
            (out / "io-samples.json").write_text(json.dumps(sampler.stop()))
        run(lab + ["down", "--state", state_dir])
    meta["rc"] = rc
    meta["load_after"] = pathlib.Path("/proc/loadavg").read_text().split()[:3]
    (out / "run.json").write_text(json.dumps(meta, indent=1))
    return 0


def load_json(path: pathlib.Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def report_tables(args: argparse.Namespace) -> int:
    """Every table, from the files of the run in --out."""
    out = pathlib.Path(args.out)
    meta = load_json(out / "run.json") or {}
    report = load_json(out / "catalog" / "report.json")
    inventory = yaml.safe_load((out / "inventory.yml").read_text()) if (out / "inventory.yml").exists() else None
    if report is None or inventory is None:
        print("no report.json or inventory.yml under %s: the run failed (see above)" % out)
        return 2
    contrast = load_json(out / "contrast" / "report.json")
    samples = load_json(out / "io-samples.json") or []
    md = args.markdown
    rows, compared = accuracy_rows(report, inventory, args.tolerance, samples)
    hosts = lab_disks(inventory)
    print("\n## Accuracy: profile %s, fio/sysbench runs of %s s, lab %s, %d host(s) in parallel "
          "(%.0f s wall for the profile, %.0f s for the contrast)\n"
          % (meta.get("profile", "?"), meta.get("runtime", "?"), os.path.basename(str(meta.get("spec", "?"))),
             len(hosts), meta.get("catalog_s", 0), meta.get("contrast_s", 0)))
    print("code: %s; started %s; load average after: %s\n" % (meta.get("code", "?"), meta.get("started", "?"),
                                                              " ".join(meta.get("load_after", []))))
    print(table(["host", "test", "configured (binding)", "bound by (request size)", "measured (median)", "error",
                 "within %g%%" % (100 * args.tolerance), "request charged by the throttle", "device request",
                 "throttle allows at the charged size (measured vs it)"],
                rows, md))
    passed = sum(row[6] == "ok" for row in rows)
    if len(hosts) > 1:
        header, errors, truths = matrix_rows(compared, inventory, args.tolerance, md)
        print("\n## Matrix: relative error, test x host (MiB/s / IOPS; %s = outside %g%%)\n"
              % ("**bold**" if md else "!", 100 * args.tolerance))
        print(table(header, errors, md))
        print("\n%d of %d figures within %g%%; profile %.0f s wall for %d hosts in parallel\n"
              % (passed, len(rows), 100 * args.tolerance, meta.get("catalog_s", 0), len(hosts)))
        print("## Matrix: configured truth (MiB/s or IOPS) and the limit that binds\n")
        print(table(header, truths, md))
    misses = miss_rows(compared, report, samples, args.tolerance)
    if misses:
        print("\n## Outside %g%%: what the device completed during the run, every %g s\n"
              % (100 * args.tolerance, SAMPLE_INTERVAL_S))
        print(table(["host", "test", "error", "truth (bound by)", "device MiB/s or IOPS per interval",
                     "request charged / device request", "run"], misses, md))
    print("\n## Figures without a single configured truth\n")
    print(table(["host", "test", "figures", "verdict"], other_rows(report), md))
    print("\n## Repeats and spread\n")
    print(table(["host", "test", "runs", "CV"], stability_rows(report), md))
    if contrast is not None:
        print("\n## Naive tests on the same disk, for contrast\n")
        print(table(["host", "test", "figures", "verdict"], other_rows(contrast), md))
        print("\n## Contrast against the binding limit (1 MiB requests)\n")
        print(table(["MiB/s / IOPS", "naive dd, no sync", "buffered re-read, no fence", "the same re-read, fenced"],
                    contrast_rows(contrast, inventory), md))
    within = bool(rows) and passed == len(rows)
    print("\n%s: %d of %d figures within %g%%"
          % ("PASS" if within else "FAIL", passed, len(rows), 100 * args.tolerance))
    if meta.get("rc"):
        print("a playbook failed (exit code %d): see the output above" % meta["rc"])
        return 2
    return 0 if within else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--spec", default=str(ROOT / "lab/accuracy.yml"), help="lab SPEC (default lab/accuracy.yml)")
    parser.add_argument("--matrix", dest="spec", action="store_const", const=str(MATRIX_SPEC),
                        help="the matrix lab: --spec lab/accuracy-matrix.yml")
    parser.add_argument("--profile", default="standard", choices=["quick", "standard", "evidence", "full"])
    parser.add_argument("--tests", default="", help="comma-separated test ids instead of the profile's")
    parser.add_argument("--runtime", type=int, default=10, help="seconds per fio/sysbench run (default 10)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per test (default: the profile's)")
    parser.add_argument("--tolerance", type=float, default=0.03, help="allowed relative error (default 0.03)")
    parser.add_argument("--out", default="/tmp/diskproof-accuracy", help="report directories go here")
    parser.add_argument("--no-contrast", action="store_true", help="skip benchmarks/contrast.yml")
    parser.add_argument("--markdown", action="store_true", help="print tables as Markdown (for docs/benchmarks.md)")
    parser.add_argument("--report-only", action="store_true",
                        help="no lab: print the tables again from the files of the last run in --out")
    args = parser.parse_args()
    if not args.report_only:
        rc = run_lab(args)
        if rc:
            return rc
    return report_tables(args)


if __name__ == "__main__":
    sys.exit(main())
