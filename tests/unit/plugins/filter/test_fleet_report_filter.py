# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_report filter (acceptance.yml's judge) on real lab records
(tests/fixtures/report/accj-green-dd-seq-write.src.md): three equal disks, one 14.1 % low."""
from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.diskproof.fleet.plugins.filter.report import fleet_report

RECORDS = json.loads((Path(__file__).resolve().parents[3] / "fixtures" / "report" / "accj-green-dd-seq-write.json").read_text())


def verdicts(report):
    return {entry["host"]: entry["verdict"] for entry in report["results"]}


def test_the_noise_rule_flags_the_low_disk_by_default_even_with_a_wide_outlier_fraction():
    report = fleet_report(RECORDS, outlier_fraction=0.5)
    assert verdicts(report) == {"accj-n01": "pass", "accj-n02": "outlier", "accj-n03": "pass"}
    reason = next(entry["reason"] for entry in report["results"] if entry["host"] == "accj-n02")
    assert reason.startswith("-14.1% ") and reason.endswith("x the noise (limit 3.5 x)")


def test_robust_z_min_deviation_sets_how_far_below_the_median_a_z_outlier_must_be():
    assert verdicts(fleet_report(RECORDS, outlier_fraction=0.5, robust_z_min_deviation=0.5)) == {
        "accj-n01": "pass", "accj-n02": "pass", "accj-n03": "pass"}
    assert fleet_report(RECORDS, robust_z_min_deviation=0.14)["rules"]["robust_z_min_deviation"] == 0.14
    # 14.1 % low is still an outlier when the floor is below it.
    assert verdicts(fleet_report(RECORDS, outlier_fraction=0.5, robust_z_min_deviation=0.14))["accj-n02"] == "outlier"
