#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""validate.yml (quick profile) against localhost vs the same dd and fio commands run by hand.

Both run on a scratch directory of this machine's own disk (created here, removed at the end),
interleaved round by round so the drift of a shared virtual disk hits both sides alike:
each round runs validate.yml (quick profile, 2 runs per test; the test file sized by a cache fence,
or with --no-fence by a declared memory figure) and then the hand-run commands, each twice.
Prints per test the median of diskproof's samples, the median of the hand runs, and their
difference. Target (issue): within 10 %.

    sudo .venv/bin/python benchmarks/localhost_vs_hand.py --rounds 3 --dir /var/tmp/diskproof-scratch
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
from typing import Dict, List

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as handle:
        handle.write("3")


def dd_rate(argv: List[str]) -> float:
    """Bytes / seconds from GNU dd's summary line (never its rounded rate)."""
    result = subprocess.run(argv, capture_output=True, text=True, check=True, env=dict(os.environ, LC_ALL="C"))
    match = re.search(r"^(\d+) bytes .* copied, ([0-9.]+) s", result.stderr, re.M)
    assert match, result.stderr
    return int(match.group(1)) / float(match.group(2))


def fio_iops(test_file: str, size: int, runtime: int, extra: List[str]) -> float:
    argv = ["fio", "--name=hand", "--filename=" + test_file, "--size=%d" % size, "--runtime=%d" % runtime, "--time_based=1",
            "--ramp_time=2", "--randrepeat=0", "--norandommap=1", "--allow_file_create=0", "--output-format=json"] + extra
    job = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)["jobs"][0]
    return job["read"]["iops"] + job["write"]["iops"]


def hand_round(directory: str, size: int, runtime: int, runs: int) -> Dict[str, List[float]]:
    test_file = os.path.join(directory, "hand.testfile")
    count = size // 1048576
    figures: Dict[str, List[float]] = {name: [] for name in ("dd_seq_write", "dd_seq_read", "fio_rand_read",
                                                             "fio_rand_write", "fio_commit_rate")}
    try:
        for _run in range(runs):
            drop_caches()
            figures["dd_seq_write"].append(dd_rate(["dd", "if=/dev/zero", "of=" + test_file, "bs=1048576",
                                                    "count=%d" % count, "conv=fdatasync"]))
        for _run in range(runs):
            drop_caches()
            figures["dd_seq_read"].append(dd_rate(["dd", "if=" + test_file, "of=/dev/null", "bs=1048576",
                                                   "count=%d" % count, "iflag=direct"]))
        for name, extra in (("fio_rand_read", ["--rw=randread", "--bs=4096", "--iodepth=32", "--direct=1", "--ioengine=libaio"]),
                            ("fio_rand_write", ["--rw=randwrite", "--bs=4096", "--iodepth=32", "--direct=1", "--ioengine=libaio"]),
                            ("fio_commit_rate", ["--rw=write", "--bs=8192", "--iodepth=1", "--direct=0", "--ioengine=psync",
                                                 "--fdatasync=1"])):
            for _run in range(runs):
                drop_caches()
                figures[name].append(fio_iops(test_file, size, runtime, extra))
    finally:
        if os.path.exists(test_file):
            os.unlink(test_file)
    return figures


def diskproof_round(directory: str, fence: int, runtime: int, runs: int, report_dir: str,
                    fenced: bool) -> Dict[str, List[float]]:
    # Without the fence the same file size comes from a declared memory figure, and buffered
    # tests run as the hand-run dd does: with the whole page cache of this machine.
    sizing = {"diskproof_cache_fence_bytes": fence} if fenced else {"diskproof_memory_bytes": fence}
    extra = {"diskproof_hosts": "localhost", "diskproof_targets": [{"path": directory}], "diskproof_become": False,
             **sizing, "diskproof_profile": "quick", "benchmark_repeats": runs,
             "benchmark_max_repeats": runs, "benchmark_fio_runtime_s": runtime,
             # This machine's own services and load are not ours to judge: no idle wait failure.
             "quiesce_state_dir": os.path.join(directory, "state"), "quiesce_idle_on_timeout": "continue",
             "quiesce_idle_timeout": 30, "quiesce_idle_max_load_per_cpu": 0,
             "ansible_python_interpreter": sys.executable}
    shutil.rmtree(report_dir, ignore_errors=True)
    env = dict(os.environ, DISKPROOF_REPORT_DIR=report_dir, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(ROOT / "playbooks/validate.yml"),
                    "-e", json.dumps(extra)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    report = json.loads(pathlib.Path(report_dir, "report.json").read_text())
    return {entry["test"]: [float(value) for value in entry["record"]["samples"]] for entry in report["results"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--dir", default="/var/tmp/diskproof-scratch", help="scratch directory (created and removed)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fence", type=int, default=1 << 30, help="cache fence, bytes (test file = 2 x fence)")
    parser.add_argument("--runtime", type=int, default=10, help="fio seconds per run")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--no-fence", action="store_true",
                        help="size from diskproof_memory_bytes instead of a cache fence (buffered tests unfenced, as by hand)")
    args = parser.parse_args()
    created = not os.path.exists(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    ours: Dict[str, List[float]] = {}
    hand: Dict[str, List[float]] = {}
    try:
        for round_number in range(1, args.rounds + 1):
            for test, values in diskproof_round(args.dir, args.fence, args.runtime, 2, "/tmp/diskproof-localhost",
                                                not args.no_fence).items():
                ours.setdefault(test, []).extend(values)
            for test, values in hand_round(args.dir, 2 * args.fence, args.runtime, 2).items():
                hand.setdefault(test, []).extend(values)
            print("round %d done" % round_number, flush=True)
    finally:
        if created:
            shutil.rmtree(args.dir, ignore_errors=True)
    print("\n| test | unit | diskproof (median of %d) | by hand (median of %d) | difference |" % (
        len(next(iter(ours.values()))), len(next(iter(hand.values())))))
    print("|---|---|---|---|---|")
    within = True
    for test in ("dd_seq_write", "dd_seq_read", "fio_rand_read", "fio_rand_write", "fio_commit_rate"):
        unit, scale = ("MB/s", 1e6) if test.startswith("dd") else ("IOPS", 1.0)
        a, b = statistics.median(ours[test]), statistics.median(hand[test])
        difference = (a - b) / b
        within = within and abs(difference) <= args.tolerance
        print("| %s | %s | %.1f | %.1f | %+.1f %% |" % (test, unit, a / scale, b / scale, 100 * difference))
    print("\n%s (tolerance %g %%)" % ("PASS" if within else "FAIL", 100 * args.tolerance))
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
