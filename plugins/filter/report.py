# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters fleet_report and report_summary: the callback's judgement inside a playbook.

Thin wrappers over the report pipeline (plugin_utils/_report.py, the one the callback and a merge use);
documentation in fleet_report.yml and report_summary.yml beside this file.
"""
from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _report

SOURCE_ARGUMENT = "filter argument"
# The judge's own defaults, as the callback's options and the diskproof_* variables have them (_settings.py).
_JUDGE = _aggregate.Settings()


def fleet_report(records_by_host, host_statuses=None, rules=None, baseline=None, outlier_fraction=_JUDGE.outlier_fraction,
                 peer_group=_JUDGE.peer_group, max_cv=_JUDGE.max_cv, regression_fraction=_JUDGE.regression_fraction, run=None,
                 robust_z_min_deviation=_JUDGE.robust_z_min_deviation, unstable_fails=_JUDGE.unstable_fails,
                 latency_outlier_factor=_JUDGE.latency_outlier_factor, max_temperature_c=_JUDGE.max_temperature_c):
    """The report dict of the callback for {host: [records]}; malformed rules or baseline fail loudly."""
    if not isinstance(records_by_host, Mapping):
        raise AnsibleFilterError("diskproof.fleet.fleet_report: input must be a mapping of host to a list of records, got %s"
                                 % type(records_by_host).__name__)
    records = {}
    for host, host_records in records_by_host.items():
        if host_records is None:
            host_records = []
        if not isinstance(host_records, list) or not all(isinstance(record, Mapping) for record in host_records):
            raise AnsibleFilterError("diskproof.fleet.fleet_report: records of host %s must be a list of result records" % host)
        records[str(host)] = list(host_records)
    if host_statuses is not None and (not isinstance(host_statuses, Mapping)
                                      or not all(isinstance(status, Mapping) for status in host_statuses.values())):
        raise AnsibleFilterError("diskproof.fleet.fleet_report: host_statuses must be a mapping of host to {status, problems}")
    try:
        settings = _aggregate.make_settings(outlier_fraction=outlier_fraction, peer_group=peer_group, max_cv=max_cv,
                                            regression_fraction=regression_fraction,
                                            robust_z_min_deviation=robust_z_min_deviation, unstable_fails=unstable_fails,
                                            latency_outlier_factor=latency_outlier_factor,
                                            max_temperature_c=max_temperature_c)
        return _report.build_report(
            records, dict(host_statuses or {}), dict(run or {}), settings=settings,
            acceptance=rules, rules_source=SOURCE_ARGUMENT if rules is not None else None,
            baseline=baseline, baseline_source=SOURCE_ARGUMENT if baseline is not None else None,
        )
    except _aggregate.RulesError as error:
        raise AnsibleFilterError("diskproof.fleet.fleet_report: bad rules: %s" % "; ".join(error.errors)) from error
    except ValueError as error:  # BaselineError and bad settings
        raise AnsibleFilterError("diskproof.fleet.fleet_report: %s" % error) from error


def report_summary(report):
    """A small dict for set_stats: passed, counts by verdict, total, failing entries and hosts."""
    if not isinstance(report, Mapping) or not isinstance(report.get("summary"), Mapping):
        raise AnsibleFilterError("diskproof.fleet.report_summary: input must be a report from diskproof.fleet.fleet_report or a report.json")
    return _aggregate.stats_summary(report["summary"])


class FilterModule:
    """diskproof fleet report filters."""

    def filters(self):
        return {
            "fleet_report": fleet_report,
            "report_summary": report_summary,
        }
