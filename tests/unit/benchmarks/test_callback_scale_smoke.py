# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/callback_scale.py works: 50 hosts x 12 results through the real report callback.

A functional check of the benchmark (what it feeds arrives in the report, every file is
written, the callback did not disable itself), not a timing test: the figures are the
benchmark's own business (docs/benchmarks.md).
"""
from __future__ import annotations

import json
import os

import pytest

HOSTS = 50
RESULTS_PER_HOST = 12


@pytest.fixture(scope="module")
def callback_scale(load_benchmark):
    return load_benchmark("callback_scale")


def _run(callback_scale, report_dir, monkeypatch, *extra):
    # The developer's own settings must not change what the callback does.
    for key in [key for key in os.environ if key.startswith("DISKPROOF_")]:
        monkeypatch.delenv(key)
    figures = callback_scale.main(["--hosts", str(HOSTS), "--results-per-host", str(RESULTS_PER_HOST), "--report-dir", str(report_dir)] + list(extra))
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    return figures, report


def test_fleet_with_failures_arrives_whole(callback_scale, tmp_path, monkeypatch):
    figures, report = _run(callback_scale, tmp_path / "report", monkeypatch)
    generated = figures["generated"]

    assert figures["problems"] == [] and not figures["callback_disabled"], figures["warnings"]
    # The smallest fleet still has one of each: unreachable host, error record, failure without record.
    assert generated["unreachable_hosts"] >= 1 and generated["error_records"] >= 1 and generated["no_record_failures"] >= 1
    # Every one of the 50 x 12 result slots was either fed as a record or is known not to have run.
    assert generated["records"] + generated["slots_not_run"] == HOSTS * RESULTS_PER_HOST

    assert len(report["hosts"]) == HOSTS
    assert sum(host["records"] for host in report["hosts"].values()) == generated["records"]
    assert sum(1 for host in report["hosts"].values() if host["status"] == "unreachable") == generated["unreachable_hosts"]

    entries = report["results"]
    with_record = [entry for entry in entries if entry["record"] is not None]
    without_record = [entry for entry in entries if entry["record"] is None]
    assert len(with_record) == generated["records"]
    assert len(without_record) == generated["not_measured_rows"]
    assert {entry["verdict"] for entry in without_record} == {"not_measured"}
    assert report["summary"]["total"] == generated["records"] + generated["not_measured_rows"]
    assert report["summary"]["counts"]["error"] == generated["error_records"]

    # Every file the callback wrote is there, report.json and results.csv at least.
    assert {"report.json", "results.csv"} <= set(figures["files"])
    for name, size in figures["files"].items():
        assert (tmp_path / "report" / name).stat().st_size == size


def test_healthy_fleet_is_600_entries(callback_scale, tmp_path, monkeypatch):
    _figures, report = _run(callback_scale, tmp_path / "report", monkeypatch,
                            "--unreachable-rate", "0", "--error-rate", "0", "--no-record-rate", "0")
    assert len(report["hosts"]) == HOSTS
    assert report["summary"]["total"] == HOSTS * RESULTS_PER_HOST
    assert all(entry["record"] is not None for entry in report["results"])
    # 3 targets x 4 tests per host, each once.
    assert len({(entry["host"], entry["target_path"], entry["test"]) for entry in report["results"]}) == HOSTS * RESULTS_PER_HOST
    assert {entry["test"] for entry in report["results"]} == {"dd_seq_write", "fio_rand_write", "dd_seq_read", "fio_rand_read"}


def test_fleet_scale_files_agree(callback_scale, tmp_path, monkeypatch):
    """Beyond 200 results the pages list only what is not pass; report.json and results.csv hold
    every result, and report.md / report.html are what the pipeline makes of report.json's records."""
    figures, report = _run(callback_scale, tmp_path / "report", monkeypatch)
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _render

    total = report["summary"]["total"]
    assert total > _render.LISTING_LIMIT
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert markdown == _render.render_markdown(*judged_again(report))
    assert (tmp_path / "report" / "report.html").read_text(encoding="utf-8") == _render.render_html(*judged_again(report))
    assert "report.json and results.csv hold all %d results." % total in markdown
    csv_lines = (tmp_path / "report" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert len(csv_lines) == 1 + total
    assert figures["files"]["report.json"] > figures["files"]["report.html"]


def judged_again(report):
    """report.json's records and host outcomes judged again (default settings, its own run): what the pipeline
    makes of report.json as a record set."""
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _report
    collection = _report.collection_of(report)
    return _aggregate.judge_report(collection.by_host, collection.host_statuses, report["run"],
                                   settings=_aggregate.make_settings())


def test_disk_states_reach_the_likely_causes(callback_scale, tmp_path, monkeypatch):
    """--disk-state: every record carries before/after readings; the few odd disks it seeds are named."""
    _figures, report = _run(callback_scale, tmp_path / "report", monkeypatch, "--disk-state", "--seed", "3")
    with_record = [entry for entry in report["results"] if entry["record"] is not None]
    assert all(set(entry["record"]["disk_state"]) == {"before", "after"} for entry in with_record)
    # Causes only on what is not a pass; every cause kind one the schema knows.
    assert all(not entry["likely_causes"] for entry in report["results"] if entry["verdict"] == "pass")
    kinds = {cause["cause"] for entry in report["results"] for cause in entry["likely_causes"]}
    assert kinds <= {"health", "pcie_link", "sata_link", "write_cache", "firmware", "alignment", "thermal", "power", "settings"}
    assert all(row["values"] and row["text"] for row in report["differences"])
