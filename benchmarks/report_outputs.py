#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every file the report path writes, for fixed fleets, in one directory: the byte-for-byte check
of a refactoring of the callback, the judge or the writers.

Writes into OUT, one directory per case:

- six fleets driven through the real callback by benchmarks/callback_scale.py (fixed seeds):
  every result listed (8 hosts with unreachable hosts, error records and slow disks), 50 hosts
  (past the pages' listing limit), peer groups by test with a tight max_cv, acceptance rules,
  and a fleet judged against a baseline of itself (regressions): report.json, results.csv,
  junit.xml, report.md, report.html, the console table and the callback's warnings;
- the real lab reports of benchmarks/data and tests/fixtures/report: their records judged again and
  written (report.md, report.html, junit.xml).

The run's clock and OUT itself are replaced by <now> and <out>, so two runs of the same code give
the same tree. Before a change, write a tree; after it, write another with ``--compare`` the first:

    .venv/bin/python benchmarks/report_outputs.py /tmp/outputs-before
    .venv/bin/python benchmarks/report_outputs.py /tmp/outputs-after --compare /tmp/outputs-before

It prints every file compared and exits 1 when one differs (diff -r shows how).
"""
from __future__ import annotations

import argparse
import datetime
import filecmp
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / ".ansible" / "collections"))

# (Names are labels: the second rule asks for 90 % whatever its name says; kept as the first trees were written.)
RULES = """rules:
  - name: archive HDDs
    match: {test: dd_seq_write, model: "ST4000*", rotational: true}
    min_write_mb_per_s: 210
  - name: SSDs reach 80 % of the datasheet
    match: {class: ssd, test: dd_seq_write}
    datasheet: {write_mb_per_s: 530, min_percent: 90}
  - name: random read floor
    match: {test: fio_rand_read, class: ssd}
    min_read_iops: 90000
"""
REPORT_FIXTURES = ("benchmarks/data/lab-rack6-report.json", "tests/fixtures/report/lab-rack6-report.json",
                   "tests/fixtures/report/lab-slc-problems-report.json")
# case -> benchmarks/callback_scale.py arguments ({rules}, {baseline}: files of this run).
FLEETS = {
    "small-all-listed": ["--hosts", "8", "--unreachable-rate", "0.15", "--error-rate", "0.05",
                         "--no-record-rate", "0.03", "--slow-rate", "0.25"],
    "fifty-hosts": ["--hosts", "50"],
    "peer-group-test": ["--hosts", "12", "--seed", "7", "--option", "peer_group=test", "--option", "max_cv=0.01"],
    "rules": ["--hosts", "12", "--seed", "11", "--option", "rules_file={rules}", "--option", "unstable_fails=false"],
    # The same 8 hosts twice: first all healthy, then a quarter of the disks slow, judged against the first.
    "baseline-source": ["--hosts", "8", "--unreachable-rate", "0", "--slow-rate", "0"],
    "baseline": ["--hosts", "8", "--unreachable-rate", "0", "--slow-rate", "0.25",
                 "--option", "baseline_file={baseline}", "--option", "regression_fraction=0.05"],
}


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sizes(directory: Path) -> str:
    return ", ".join("%s %d B" % (path.name, path.stat().st_size) for path in sorted(directory.iterdir()))


def write_fleets(out: Path) -> None:
    scale = _load("callback_scale", REPO_ROOT / "benchmarks" / "callback_scale.py")
    (out / "rules.yml").write_text(RULES, encoding="utf-8")
    for name, arguments in FLEETS.items():
        files = {"rules": out / "rules.yml", "baseline": out / "baseline-source" / "report.json"}
        arguments = [part.format(**files) for part in arguments]
        options = scale.build_parser().parse_args(arguments)
        work = Path(tempfile.mkdtemp(prefix="diskproof-report-outputs-"))
        try:
            figures = scale.run_once(hosts=options.hosts, results_per_host=options.results_per_host, seed=options.seed,
                                     report_dir=str(out / name), unreachable_rate=options.unreachable_rate,
                                     error_rate=options.error_rate, no_record_rate=options.no_record_rate,
                                     slow_rate=options.slow_rate, extra_options=dict(options.option), workdir=str(work))
            # The console table and the callback's warnings are outputs too.
            shutil.copy(work / "console" / "stdout.txt", out / name / "console.txt")
            shutil.copy(work / "console" / "stderr.txt", out / name / "console-stderr.txt")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if figures["problems"] or figures["callback_disabled"]:
            print("%s: the callback reported problems: %s" % (name, figures["problems"]))
        print("%-40s %s" % (name, _sizes(out / name)))


def write_fixtures(out: Path) -> None:
    """The real lab reports' records judged again (default settings, each report's own run metadata) and
    written as report.md, report.html and junit.xml: the pages of real lab data."""
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _junit, _render, _report
    for source in REPORT_FIXTURES:
        report = json.loads((REPO_ROOT / source).read_text(encoding="utf-8"))
        collection = _report.collection_of(report)
        sections, entries = _aggregate.judge_report(collection.by_host, collection.host_statuses, report["run"],
                                                    settings=_aggregate.make_settings())
        where = out / ("fixture-%s-%s" % (Path(source).parent.name, Path(source).stem))
        where.mkdir(exist_ok=True)
        (where / "report.md").write_text(_render.render_markdown(sections, entries), encoding="utf-8")
        (where / "report.html").write_text(_render.render_html(sections, entries), encoding="utf-8")
        junit = _junit.JunitWriter(sections)
        for entry in entries:
            junit.add(entry)
        with open(where / "junit.xml", "w", encoding="utf-8") as stream:
            junit.write(stream.write)
        print("%-40s %s" % (where.name, _sizes(where)))


def normalise(out: Path) -> None:
    """The run's own clock and the output directory are the only things that differ between two
    runs of the same code: replace them so that two output trees compare byte for byte."""
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    now = re.compile(re.escape(today) + r"T\d\d:\d\d:\d\dZ?")
    for path in sorted(out.rglob("*")):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            path.write_text(now.sub("<now>", text.replace(str(out), "<out>")), encoding="utf-8")


def compare(out: Path, reference: Path) -> int:
    """Print each file of both trees with same / DIFFERENT / only in one; 1 when any is not the same."""
    ours = {path.relative_to(out) for path in out.rglob("*") if path.is_file()}
    theirs = {path.relative_to(reference) for path in reference.rglob("*") if path.is_file()}
    different = 0
    for relative in sorted(ours | theirs):
        if relative not in theirs or relative not in ours:
            state = "only in %s" % (out if relative in ours else reference)
        else:
            state = "same" if filecmp.cmp(out / relative, reference / relative, shallow=False) else "DIFFERENT"
        different += state != "same"
        print("  %-60s %s" % (relative, state))
    verdict = "%d differ" % different if different else "all identical"
    print("%d files compared with %s: %s" % (len(ours | theirs), reference, verdict))
    return 1 if different else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("out", type=Path, help="directory to write (created; files in it are overwritten)")
    parser.add_argument("--compare", type=Path, metavar="DIR", help="a tree an earlier run wrote: compare file by file")
    args = parser.parse_args(argv)
    # The developer's own settings must not change what the callback does.
    for key in [key for key in os.environ if key.startswith("DISKPROOF_")]:
        del os.environ[key]
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    write_fleets(out)
    write_fixtures(out)
    normalise(out)
    return compare(out, args.compare.resolve()) if args.compare else 0


if __name__ == "__main__":
    sys.exit(main())
