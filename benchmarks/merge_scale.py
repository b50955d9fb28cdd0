#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller cost of playbooks/merge.yml: N hosts in K record sets, CPU per host.

Builds one fleet's report.json with benchmarks/callback_scale.py (the real callback, fixed seed: N hosts x R
results of the real lab records, with failed and unreachable hosts), cuts it into K record sets by host, as
the slices of a sliced job hold them, and runs the real ansible-playbook playbooks/merge.yml over them with
the report callback enabled, as its own process. Measured: the CPU of that process and everything it
started (user + system, resource.RUSAGE_CHILDREN) and its wall time; the figure is CPU per host.

``--repo DIR`` runs the merge.yml of another checkout (for example ``git worktree add /tmp/old-code <commit>``)
on the very same record sets: the before/after of a change measured back to back, in one invocation:

    .venv/bin/python benchmarks/merge_scale.py --hosts 500 --record-sets 5 --repeat 3
    .venv/bin/python benchmarks/merge_scale.py --hosts 500 --record-sets 5 --repeat 3 --repo /tmp/old-code --repo .

Target (issue 32): 500 hosts <= 50 ms controller CPU per host.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_MS_PER_HOST = 50.0


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_sets(hosts: int, results_per_host: int, parts: int, workdir: Path) -> list:
    """K record sets (report.json files) of one fleet judged by the callback, cut by host."""
    scale = _load("callback_scale", REPO_ROOT / "benchmarks" / "callback_scale.py")
    whole = workdir / "whole"
    figures = scale.run_once(hosts=hosts, results_per_host=results_per_host, report_dir=str(whole),
                             workdir=str(workdir / "scale"))
    if figures["problems"] or figures["callback_disabled"]:
        raise SystemExit("the callback reported problems: %s" % figures["problems"])
    report = json.loads((whole / "report.json").read_text(encoding="utf-8"))
    names = sorted(report["hosts"])
    paths = []
    for index in range(parts):
        part = set(names[index::parts])
        path = workdir / ("slice%d" % (index + 1)) / "report.json"
        path.parent.mkdir()
        path.write_text(json.dumps(dict(report, hosts={host: report["hosts"][host] for host in names if host in part},
                                        results=[entry for entry in report["results"] if entry["host"] in part])),
                        encoding="utf-8")
        paths.append(path)
    return paths


def merge_once(repo: Path, paths: list, workdir: Path) -> dict:
    """One ansible-playbook run of repo's merge.yml over paths: CPU (s), wall (s), exit code, report written."""
    report_dir = workdir / "merged"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "DISKPROOF_"))}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(repo / ".ansible" / "collections"),
               ANSIBLE_CALLBACKS_ENABLED="diskproof.fleet.report", DISKPROOF_REPORT_DIR=str(report_dir),
               ANSIBLE_HOME=str(workdir / ".ansible"), ANSIBLE_REMOTE_TMP=str(workdir / ".ansible" / "tmp"),
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_NOCOLOR="1")
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), str(repo / "playbooks" / "merge.yml"),
            "-e", json.dumps({"diskproof_record_sets": [str(path) for path in paths]})]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    completed = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    written = (report_dir / "report.json").is_file()
    if completed.returncode != 0 or not written:
        sys.stderr.write(completed.stdout[-3000:] + completed.stderr[-3000:])
    return {"cpu_s": cpu, "wall_s": wall, "returncode": completed.returncode, "written": written}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--results-per-host", type=int, default=12)
    parser.add_argument("--record-sets", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="merges per checkout (the median is the figure)")
    parser.add_argument("--repo", type=Path, action="append", help="checkout whose merge.yml runs (default: this one)")
    args = parser.parse_args(argv)
    repos = [repo.resolve() for repo in args.repo] if args.repo else [REPO_ROOT]
    with tempfile.TemporaryDirectory(prefix="diskproof-merge-scale-") as temp:
        workdir = Path(temp)
        paths = record_sets(args.hosts, args.results_per_host, args.record_sets, workdir)
        sizes = sum(path.stat().st_size for path in paths)
        print("%d hosts x %d results in %d record sets (%s bytes)"
              % (args.hosts, args.results_per_host, len(paths), format(sizes, ",")))
        failed = False
        for repo in repos:
            head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True, check=False).stdout.strip()
            runs = []
            for index in range(args.repeat):
                where = workdir / ("run-%s-%d" % (head or "x", index))
                where.mkdir()
                runs.append(merge_once(repo, paths, where))
            cpu = statistics.median(run["cpu_s"] for run in runs)
            per_host = 1000.0 * cpu / args.hosts
            ok = all(run["written"] for run in runs)
            failed = failed or not ok or per_host > TARGET_MS_PER_HOST
            print("%s (%s): CPU %s s, median %.2f s = %.1f ms per host (target <= %.0f); wall %s s; exit %s; %s" % (
                repo, head, " ".join("%.2f" % run["cpu_s"] for run in runs), cpu, per_host, TARGET_MS_PER_HOST,
                " ".join("%.1f" % run["wall_s"] for run in runs), " ".join(str(run["returncode"]) for run in runs),
                "PASS" if ok and per_host <= TARGET_MS_PER_HOST else "FAIL"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
