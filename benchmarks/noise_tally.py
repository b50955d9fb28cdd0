#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Quiet on healthy disks, loud on faulty ones: the tallies of issue 30, N runs in a row (docs/benchmarks.md).

Parts (each brings up its own lab and always tears it down; a teardown that fails is an error):

- ``demo``: `make demo`'s flow (tools/demo: lab/rack6.yml up, validate.yml quick, tools/lab compare, down), N times.
  Each run must exit 0, flag rack6-n04 (16 MiB/s, 200 IOPS) on every one of its tests, and nothing else.
- ``faults``: an 8-host lab with planted faults, validate.yml quick, N times: fault-w30 writes 30 % slower,
  fault-iops50 has half the IOPS, fault-all08 is 8 % slower at everything (the judge's noise rule must find it:
  docs/report.md, "Noise"), fault-cut is cut off the network mid-run; four healthy hosts. Every planted fault must
  be found in every run, and no healthy host or test flagged.
- ``awx``: acceptance.yml under ansible-runner, as AWX runs it, with a report store, on a healthy 3-host lab: jobs
  1 and 2 green (job 2 judged against job 1 as its baseline), then one disk slowed to 75 %: job 3 red with that disk
  `regressed` through the store's baseline. N rounds of the three jobs.

    sudo .venv/bin/python benchmarks/noise_tally.py --parts demo --runs 10
    sudo .venv/bin/python benchmarks/noise_tally.py --parts faults --runs 5 --markdown
    sudo .venv/bin/python benchmarks/noise_tally.py --parts awx --runs 1

Prints one line per run and a tally per part. Exit code 0 when every run of every part met its expectation, 1 when
one did not, 2 when a lab or a playbook failed to run at all.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import yaml

from labrun import ROOT, Lab, LabFailed, playbook_env, report_of, run_playbook

MIB = 1 << 20
PARTS = ("demo", "faults", "awx")
DEMO_SPEC = ROOT / "lab/rack6.yml"
DEMO_SLOW_HOST = "rack6-n04"
QUICK_TESTS = ("dd_seq_write", "dd_seq_read", "fio_rand_read", "fio_rand_write", "fio_commit_rate")
FIO_RUNTIME_S = 8


class Run:
    """One run's outcome: ok, and a line saying what was seen."""

    def __init__(self, ok: bool, line: str, flagged: Dict[Tuple[str, str], str]) -> None:
        self.ok = ok
        self.line = line
        self.flagged = flagged


def flagged_entries(report: Dict[str, Any]) -> Dict[Tuple[str, str], str]:
    """(host, test) -> verdict of every entry that is not a pass."""
    return {(entry["host"], entry["test"] or "-"): entry["verdict"] for entry in report["results"]
            if entry["verdict"] != "pass"}


def reasons(report: Dict[str, Any], keys: Sequence[Tuple[str, str]]) -> List[str]:
    return ["%s %s %s: %s" % (entry["host"], entry["test"], entry["verdict"], entry["reason"])
            for entry in report["results"] if (entry["host"], entry["test"] or "-") in keys]


# ---------------------------------------------------------------------------------------------- demo

def demo_run(workdir: pathlib.Path, number: int) -> Run:
    report_dir = workdir / ("demo-%d" % number)
    started = time.monotonic()
    result = subprocess.run([str(ROOT / "tools/demo"), str(DEMO_SPEC), "rack6", str(report_dir)], cwd=ROOT,
                            env=playbook_env(report_dir), capture_output=True, text=True, check=False, timeout=1800)
    seconds = time.monotonic() - started
    report = report_of(report_dir, result)
    flagged = flagged_entries(report)
    expected = {(DEMO_SLOW_HOST, test) for test in QUICK_TESTS}
    unexpected = sorted(set(flagged) - expected)
    missed = sorted(expected - set(flagged))
    out_of_tolerance = [line.strip() for line in result.stdout.splitlines() if "OUT OF TOLERANCE" in line]
    ok = result.returncode == 0 and not unexpected and not missed and not out_of_tolerance
    line = "%.0f s; rc %d; %s flagged on %d/%d tests (%s); other flags: %s; compare out of tolerance: %d" % (
        seconds, result.returncode, DEMO_SLOW_HOST, len(expected) - len(missed), len(expected),
        ", ".join(sorted({flagged[key] for key in expected if key in flagged})) or "-",
        "; ".join(reasons(report, unexpected)) or "none", len(out_of_tolerance))
    return Run(ok, line + ("" if not out_of_tolerance else " (%s)" % " | ".join(out_of_tolerance)), flagged)


# ---------------------------------------------------------------------------------------------- faults

HEALTHY_DISK = {"size": "1GiB", "mode": "filesystem", "read_bytes_per_s": 40 * MIB, "write_bytes_per_s": 40 * MIB,
                "read_iops": 400, "write_iops": 400}
# host -> (what is planted, its disk or None for a healthy disk, the tests it must be flagged on and with what)
FAULTS: Dict[str, Tuple[str, Optional[Dict[str, Any]], Dict[str, Tuple[str, ...]]]] = {
    "fault-w30": ("writes 30 % slower", dict(HEALTHY_DISK, write_bytes_per_s=28 * MIB),
                  {"dd_seq_write": ("outlier",)}),
    "fault-iops50": ("half the IOPS", dict(HEALTHY_DISK, read_iops=200, write_iops=200),
                     {"fio_rand_read": ("outlier",), "fio_rand_write": ("outlier",), "fio_commit_rate": ("outlier",)}),
    "fault-all08": ("8 % slower at everything", dict(HEALTHY_DISK, read_bytes_per_s=int(40 * MIB * 0.92),
                                                     write_bytes_per_s=int(40 * MIB * 0.92), read_iops=368,
                                                     write_iops=368),
                    {test: ("outlier",) for test in QUICK_TESTS}),
    "fault-cut": ("cut off the network mid-run", None, {"-": ("not_measured",)}),
}
HEALTHY_HOSTS = ("fault-ok1", "fault-ok2", "fault-ok3", "fault-ok4")
CUT_AFTER_S = 45.0


def faults_spec() -> Dict[str, Any]:
    hosts = [{"name": name} for name in HEALTHY_HOSTS]
    hosts += [{"name": name} if disk is None else {"name": name, "disks": [disk]}
              for name, (_what, disk, _tests) in FAULTS.items()]
    # Eight hosts' buffered writes take turns, as on eight machines (docs/lab.md, "Buffered writes": together, the
    # 8 % host's dd_seq_write hid in the noise they make on this machine's one kernel).
    return {"name": "ntfault", "subnet": "10.231.96.0/24", "buffered_writes": "one_at_a_time",
            "defaults": {"memory_bytes": 128 * MIB, "disks": [HEALTHY_DISK]}, "hosts": hosts}


def faults_run(workdir: pathlib.Path, number: int, cut_after_s: float = CUT_AFTER_S) -> Run:
    report_dir = workdir / ("faults-%d" % number)
    with Lab(faults_spec(), workdir) as lab:
        timer = threading.Timer(cut_after_s, lab.cut, args=("fault-cut",))
        timer.start()
        started = time.monotonic()
        try:
            result = run_playbook(lab.inventory, "playbooks/validate.yml", report_dir,
                                  {"diskproof_profile": "quick", "benchmark_fio_runtime_s": FIO_RUNTIME_S})
        finally:
            timer.cancel()
        seconds = time.monotonic() - started
    report = report_of(report_dir, result)
    flagged = flagged_entries(report)
    found, missed = [], []
    for host, (what, _disk, tests) in FAULTS.items():
        for test, verdicts in tests.items():
            if host == "fault-cut":
                hit = any(key[0] == host and verdict in verdicts for key, verdict in flagged.items())
            else:
                hit = flagged.get((host, test)) in verdicts
            (found if hit else missed).append("%s %s" % (host, test))
    healthy_flags = sorted(key for key in flagged if key[0] in HEALTHY_HOSTS)
    # a planted fault's host flagged on a test its fault does not touch is a false alarm too
    stray = sorted(key for key in flagged if key[0] in FAULTS and key[0] != "fault-cut"
                   and key[1] not in FAULTS[key[0]][2])
    ok = not missed and not healthy_flags and not stray
    line = "%.0f s; faults found %d/%d%s; healthy hosts flagged: %s; other flags on faulty hosts: %s" % (
        seconds, len(found), len(found) + len(missed), "" if not missed else " (missed: %s)" % ", ".join(missed),
        "; ".join(reasons(report, healthy_flags)) or "none", "; ".join(reasons(report, stray)) or "none")
    return Run(ok, line, flagged)


# ---------------------------------------------------------------------------------------------- awx

AWX_DISK = {"size": "1GiB", "mode": "filesystem", "read_bytes_per_s": 64 * MIB, "write_bytes_per_s": 64 * MIB,
            "read_iops": 500, "write_iops": 500}
AWX_SLOWED = "awxr-n02"
BLKIO = pathlib.Path("/sys/fs/cgroup/blkio")
# The slowed disk: 48 MiB/s reads and writes (75 % of 64), between job 2 and job 3.
SLOWED_BYTES_PER_S = 48 * MIB


def awx_spec() -> Dict[str, Any]:
    return {"name": "ntawx", "subnet": "10.231.97.0/24", "defaults": {"memory_bytes": 128 * MIB, "disks": [AWX_DISK]},
            "hosts": [{"name": "awxr-n%02d" % index} for index in (1, 2, 3)]}


def runner_job(private_dir: pathlib.Path, ident: int, inventory: pathlib.Path, extravars: Dict[str, Any]
               ) -> Tuple[int, Dict[str, Any], Dict[str, Any]]:
    """acceptance.yml run by ansible-runner as AWX runs a job: (rc, the set_stats summary of the playbook_on_stats
    event, the report.json copied into the job's artifacts)."""
    (private_dir / "env").mkdir(parents=True, exist_ok=True)
    (private_dir / "env" / "extravars").write_text(json.dumps(extravars))
    result = subprocess.run([str(ROOT / ".venv/bin/ansible-runner"), "run", str(private_dir), "--project-dir", str(ROOT),
                             "-p", "playbooks/acceptance.yml", "--inventory", str(inventory), "--ident", str(ident)],
                            cwd=ROOT, env=playbook_env(private_dir / "unused-report"), capture_output=True, text=True,
                            check=False, timeout=1800)
    artifacts = private_dir / "artifacts" / str(ident)
    stats: Dict[str, Any] = {}
    for event_file in sorted((artifacts / "job_events").glob("*.json")):
        event = json.loads(event_file.read_text())
        if event.get("event") == "playbook_on_stats":
            stats = (event.get("event_data") or {}).get("artifact_data") or {}
    report = report_of(artifacts / "diskproof-report", result)
    return result.returncode, stats.get("diskproof") or {}, report


def slow_disk(major_minor: str, bytes_per_s: int) -> None:
    for name in ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"):
        (BLKIO / name).write_text("%s %d" % (major_minor, bytes_per_s))


def awx_run(workdir: pathlib.Path, number: int) -> Run:
    run_dir = workdir / ("awx-%d" % number)
    store, private_dir = run_dir / "store", run_dir / "runner"
    run_dir.mkdir(mode=0o700)
    key_file = run_dir / "store.key"
    key_file.write_text(os.urandom(32).hex() + "\n")
    key_file.chmod(0o600)
    extravars = {"diskproof_report_store": str(store), "diskproof_report_store_host": "localhost",
                 "diskproof_store_key_file": str(key_file)}
    jobs = []
    with Lab(awx_spec(), workdir) as lab:
        for ident in (1, 2, 3):
            if ident == 3:
                hosts = yaml.safe_load(lab.inventory.read_text())
                disk = hosts["all"]["children"]["lab"]["hosts"][AWX_SLOWED]["diskproof_lab_disks"][0]
                slow_disk(disk["major_minor"], SLOWED_BYTES_PER_S)
            jobs.append(runner_job(private_dir, ident, lab.inventory, extravars))
    (rc1, summary1, _report1), (rc2, summary2, report2), (rc3, summary3, report3) = jobs
    verdicts3 = {(entry["host"], entry["test"]): entry["verdict"] for entry in report3["results"]}
    failing3 = {(row["host"], row["test"]): row["verdict"] for row in summary3.get("failing") or []}
    slowed = {key: verdict for key, verdict in failing3.items() if key[0] == AWX_SLOWED}
    ok = (rc1 == 0 and summary1.get("passed") is True and rc2 == 0 and summary2.get("passed") is True
          and report2["baseline"]["disks_tests"] == 15
          and rc3 != 0 and summary3.get("passed") is False
          and {key[0] for key in failing3} == {AWX_SLOWED}
          and slowed.get((AWX_SLOWED, "dd_seq_write")) == "regressed"
          and slowed.get((AWX_SLOWED, "dd_seq_read")) == "regressed")
    flagged = {key: verdict for key, verdict in verdicts3.items() if verdict != "pass"}
    line = ("job 1 rc %d passed %s; job 2 rc %d passed %s (baseline: %d disk-tests of job 1); job 3 (%s at %d MiB/s) rc "
            "%d passed %s, failing: %s" % (
                rc1, summary1.get("passed"), rc2, summary2.get("passed"), report2["baseline"]["disks_tests"],
                AWX_SLOWED, SLOWED_BYTES_PER_S // MIB, rc3, summary3.get("passed"),
                "; ".join("%s %s %s" % (host, test, verdict) for (host, test), verdict in sorted(failing3.items()))
                or "none"))
    if not ok:
        line += " | job 1 failing: %s | job 2 failing: %s" % (summary1.get("failing"), summary2.get("failing"))
    return Run(ok, line, flagged)


# ---------------------------------------------------------------------------------------------- tally

RUNNERS: Dict[str, Callable[[pathlib.Path, int], Run]] = {"demo": demo_run, "faults": faults_run, "awx": awx_run}


def tally(part: str, runs: Sequence[Run]) -> str:
    verdicts = collections.Counter(verdict for run in runs for verdict in run.flagged.values())
    return "%s: %d of %d runs as expected; flags by verdict over all runs: %s" % (
        part, sum(run.ok for run in runs), len(runs), ", ".join("%s %d" % item for item in sorted(verdicts.items()))
        or "none")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--parts", default="demo,faults", help="comma-separated: %s (default demo,faults)"
                        % ", ".join(PARTS))
    parser.add_argument("--runs", type=int, default=5, help="runs of each part (default 5)")
    parser.add_argument("--json", help="write every run's outcome to this file")
    parser.add_argument("--markdown", action="store_true", help="print the runs as a Markdown table at the end")
    parser.add_argument("--keep", metavar="DIR", help="keep every run's reports in DIR (default: a temporary directory, "
                                                      "removed at the end)")
    args = parser.parse_args(argv)
    parts = [part.strip() for part in args.parts.split(",") if part.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error("unknown part(s): %s (known: %s)" % (", ".join(unknown), ", ".join(PARTS)))
    outcomes: Dict[str, List[Run]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="diskproof-noise-tally-") as scratch:
            workdir = args.keep or scratch
            pathlib.Path(workdir).mkdir(parents=True, exist_ok=True)
            for part in parts:
                outcomes[part] = []
                for number in range(1, args.runs + 1):
                    run = RUNNERS[part](pathlib.Path(workdir), number)
                    outcomes[part].append(run)
                    # Progress on stderr: stdout is the figures (benchmarks/figures_page.py puts it on the page).
                    print("%s run %d: %s: %s" % (part, number, "as expected" if run.ok else "NOT AS EXPECTED", run.line),
                          file=sys.stderr, flush=True)
    except LabFailed as error:
        print("noise_tally: %s" % error, file=sys.stderr)
        return 2
    finally:
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(
                {part: [{"ok": run.ok, "line": run.line, "flagged": ["%s %s %s" % (host, test, verdict) for
                                                                     (host, test), verdict in sorted(run.flagged.items())]}
                        for run in runs] for part, runs in outcomes.items()}, indent=1))
    for part, runs in outcomes.items():
        print(tally(part, runs))
    if args.markdown:
        print("\n| part | run | as expected | what was seen |\n|---|---:|---|---|")
        for part, runs in outcomes.items():
            for number, run in enumerate(runs, 1):
                print("| %s | %d | %s | %s |" % (part, number, "yes" if run.ok else "**no**", run.line))
    return 0 if all(run.ok for runs in outcomes.values() for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
