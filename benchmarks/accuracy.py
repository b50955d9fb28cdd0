#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accuracy of the test catalog on lab disks of known speed, and the naive mistakes for contrast.

Brings up a lab (default lab/accuracy.yml: one disk at 50 MiB/s and 200 IOPS), runs
playbooks/validate.yml with a profile (default standard) through the real report callback, then
benchmarks/contrast.yml (naive buffered dd without sync, a buffered re-read with and without the
cache fence), compares every figure that has a configured truth with it, prints the other figures
(commit rate, latency, bonnie++) with their explanation, and always tears the lab down.

    sudo .venv/bin/python benchmarks/accuracy.py                       # standard, 10 s fio runs
    sudo .venv/bin/python benchmarks/accuracy.py --profile full --tolerance 0.03 --markdown

Exit code 0 when every compared figure is within the tolerance (default 3 %), 1 otherwise,
2 when the lab or a playbook failed.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from labkit.compare import TRUTH_FIELDS, compare  # noqa: E402  (after the path is set)

import yaml  # noqa: E402

MIB = 1 << 20


def run(argv: List[str], env: Optional[Dict[str, str]] = None) -> int:
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode


def playbook(inventory: str, playbook_path: str, report_dir: str, extra: Dict[str, Any]) -> int:
    env = dict(os.environ, DISKPROOF_REPORT_DIR=report_dir, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    argv = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", inventory, playbook_path]
    for key, value in extra.items():
        argv += ["-e", "%s=%s" % (key, json.dumps(value) if not isinstance(value, str) else value)]
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


def accuracy_rows(report: Dict[str, Any], inventory: Dict[str, Any], tolerance: float) -> List[List[str]]:
    rows = []
    for row in compare(report, inventory):
        unit = TRUTH_FIELDS[row.test][2]
        scale = MIB if unit == "B/s" else 1.0
        label = "MiB/s" if unit == "B/s" else "IOPS"
        error = row.relative_error
        verdict = "ok" if error is not None and abs(error) <= tolerance else "OUT"
        rows.append([row.host, row.test, "%s %s" % (fmt(row.configured, scale), label),
                     "%s %s" % (fmt(row.measured, scale), label), "-" if error is None else "%+.1f%%" % (100 * error),
                     verdict])
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
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)] if rows else [len(h) for h in header]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)) for row in [header] + rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--spec", default=str(ROOT / "lab/accuracy.yml"), help="lab SPEC (default lab/accuracy.yml)")
    parser.add_argument("--profile", default="standard", choices=["quick", "standard", "evidence", "full"])
    parser.add_argument("--tests", default="", help="comma-separated test ids instead of the profile's")
    parser.add_argument("--runtime", type=int, default=10, help="seconds per fio/sysbench run (default 10)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per test (default: the profile's)")
    parser.add_argument("--tolerance", type=float, default=0.03, help="allowed relative error (default 0.03)")
    parser.add_argument("--out", default="/tmp/diskproof-accuracy", help="report directories go here")
    parser.add_argument("--no-contrast", action="store_true", help="skip benchmarks/contrast.yml")
    parser.add_argument("--markdown", action="store_true", help="print tables as Markdown (for docs/benchmarks.md)")
    args = parser.parse_args()

    spec = yaml.safe_load(pathlib.Path(args.spec).read_text())
    state_dir = "/run/diskproof-lab/" + spec["name"]
    lab = [sys.executable, str(ROOT / "tools/lab")]
    run(lab + ["down", "--state", state_dir])
    if run(lab + ["up", "--state", state_dir, args.spec]) != 0:
        return 2
    try:
        inventory_path = state_dir + "/inventory.yml"
        inventory = yaml.safe_load(pathlib.Path(inventory_path).read_text())
        extra: Dict[str, Any] = {"benchmark_profile": args.profile, "benchmark_fio_runtime_s": args.runtime}
        if args.repeats:
            extra["benchmark_repeats"] = args.repeats
        if args.tests:
            extra["benchmark_tests"] = args.tests.split(",")
        catalog_dir = os.path.join(args.out, "catalog")
        started = time.monotonic()
        rc = playbook(inventory_path, str(ROOT / "playbooks/validate.yml"), catalog_dir, extra)
        catalog_s = time.monotonic() - started
        report = json.loads(pathlib.Path(catalog_dir, "report.json").read_text())
        contrast = None
        if not args.no_contrast:
            contrast_dir = os.path.join(args.out, "contrast")
            rc = playbook(inventory_path, str(ROOT / "benchmarks/contrast.yml"), contrast_dir, {}) or rc
            contrast = json.loads(pathlib.Path(contrast_dir, "report.json").read_text())
    finally:
        run(lab + ["down", "--state", state_dir])

    rows = accuracy_rows(report, inventory, args.tolerance)
    print("\n## Accuracy: profile %s, fio/sysbench runs of %d s, lab %s (%.0f s wall)\n"
          % (args.profile, args.runtime, os.path.basename(args.spec), catalog_s))
    print(table(["host", "test", "configured", "measured (median)", "error", "within %g%%" % (100 * args.tolerance)],
                rows, args.markdown))
    print("\n## Figures without a single configured truth\n")
    print(table(["host", "test", "figures", "verdict"], other_rows(report), args.markdown))
    print("\n## Repeats and spread\n")
    print(table(["host", "test", "runs", "CV"], stability_rows(report), args.markdown))
    if contrast is not None:
        print("\n## Naive tests on the same disk, for contrast\n")
        print(table(["host", "test", "figures", "verdict"], other_rows(contrast), args.markdown))
    within = bool(rows) and all(row[-1] == "ok" for row in rows)
    passed = sum(row[-1] == "ok" for row in rows)
    print("\n%s: %d of %d figures within %g%%" % ("PASS" if within else "FAIL", passed, len(rows), 100 * args.tolerance))
    if rc:
        print("a playbook failed (exit code %d): see the output above" % rc)
        return 2
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
