# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's settings: one ``diskproof_*`` variable each, resolved the same way everywhere.

Every playbook and the report callback read the same names (docs/report.md, Settings): a variable
(extra vars, play vars, inventory) wins; when it is not set, the callback's own option decides
(environment, then ansible.cfg, then its default). Thresholds are percentages in variables (what a
survey asks for) and fractions in the callback's options. The report pipeline (which judges) and the
action diskproof.fleet.report (which checks the inputs before any host is touched) both call
``resolve``: they cannot disagree.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate

PERCENT = "percent"
FACTOR = "factor"  # a multiplier above 1, e.g. 2 (twice the peers' median)
CELSIUS = "celsius"  # a temperature limit in degrees Celsius, e.g. 70
TEXT = "text"
BOOLEAN = "boolean"


@dataclass(frozen=True)
class Setting:
    """A report setting: its variable, the callback option behind it (its type, default, choices, environment
    variable and description: the callback's option docs are made from these, doc_fragments/report_settings.py),
    and how the variable is spelled."""

    variable: str
    option: str
    kind: str
    option_type: str
    default: Any
    description: Tuple[str, ...]
    choices: Tuple[str, ...] = ()

    @property
    def env(self) -> str:
        return "DISKPROOF_" + self.option.upper()


# The judge's own defaults (plugin_utils/_aggregate.py Settings) are the settings' defaults: one place each.
_JUDGE = _aggregate.Settings()
SETTINGS = (
    Setting("diskproof_report_dir", "report_dir", TEXT, "path", "./diskproof-report", (
        "Directory that receives C(report.json), C(results.csv), C(junit.xml), C(report.md) and C(report.html); "
        "created when missing.",
        "A relative path is relative to the current directory, or to the directory of the configuration file when "
        "set there.")),
    Setting("diskproof_outlier_percent", "outlier_fraction", PERCENT, "float", _JUDGE.outlier_fraction, (
        "A record whose primary metric is more than this fraction below its group median is an C(outlier). Between "
        "0 and 1, exclusive.",)),
    Setting("diskproof_outlier_z_min_percent", "robust_z_min_deviation", PERCENT, "float", _JUDGE.robust_z_min_deviation, (
        "The floor of the noise rule - a deviation of more than |robust_z_limit| times the measurement's noise makes "
        "a record an C(outlier) only when it is also at least this fraction below its group median (docs/report.md, "
        "Noise). From 0 to 1, 1 excluded.",)),
    Setting("diskproof_latency_outlier_factor", "latency_outlier_factor", FACTOR, "float", _JUDGE.latency_outlier_factor, (
        "A record judged on IOPS (the random tests) whose read or write p99 latency is more than this many times the "
        "median p99 of its peer group is an C(outlier) (docs/report.md, Latency). A number above 1.",)),
    Setting("diskproof_max_temperature_c", "max_temperature_c", CELSIUS, "float", _JUDGE.max_temperature_c, (
        "A result whose disk read hotter than this many degrees Celsius before or after its test is C(unhealthy) "
        "(docs/report.md, Health rules). Above 0 and below %d." % _aggregate.MAX_TEMPERATURE_LIMIT_C,)),
    Setting("diskproof_regression_percent", "regression_fraction", PERCENT, "float", _JUDGE.regression_fraction, (
        "A record more than this fraction below the baseline value for the same disk (serial, else WWN) and test is "
        "C(regressed). Between 0 and 1, exclusive. Needs a baseline (O(baseline_file)).",)),
    Setting("diskproof_max_cv_percent", "max_cv", PERCENT, "float", _JUDGE.max_cv, (
        "A record whose repeat C(samples) vary by a coefficient of variation (sample standard deviation over mean) "
        "above this, and whose repeats straddle a limit, is C(unstable) (docs/report.md, Noise). Between 0 and 1, "
        "exclusive.",)),
    Setting("diskproof_peer_group", "peer_group", TEXT, "str", _JUDGE.peer_group, (
        "How records are grouped for the median. V(identity) compares a disk with disks of the same model, firmware "
        "and capacity running the same test (test and rotational when the model is unknown, as for VMs and loop "
        "devices); V(test) compares every record of a test.",), _aggregate.PEER_GROUP_CHOICES),
    Setting("diskproof_unstable_fails", "unstable_fails", BOOLEAN, "bool", _JUDGE.unstable_fails, (
        "Whether an C(unstable) result fails the run (C(summary.passed) false, a junit failure, acceptance.yml's job "
        "red). Set false where a site accepts noisy disks and only wants them listed.",)),
    Setting("diskproof_rules_file", "rules_file", TEXT, "path", None, (
        "YAML file of acceptance rules (C(rules:) list; docs/report.md). When set it is used instead of the variable "
        "C(diskproof_acceptance); inline rules in the variable C(diskproof_rules_yaml) (a survey textarea) win over "
        "both.",)),
    Setting("diskproof_baseline_file", "baseline_file", TEXT, "path", None, (
        "A previous C(report.json) to judge regressions against. When not set and the report store "
        "(C(diskproof_report_store)) holds a passing run, its C(last-pass/report.json) is the baseline.",)),
)
# Inline rules (a survey textarea) and the rules as a variable: no callback option behind them.
RULES_YAML_VARIABLE = "diskproof_rules_yaml"
ACCEPTANCE_VARIABLE = "diskproof_acceptance"
# Set on localhost by the report_store role when the store holds a last passing report.
STORE_BASELINE_VARIABLE = "diskproof_store_baseline_file"
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class SettingError(ValueError):
    """A setting variable that cannot be used; the message names it and says what it accepts."""


def _percent(setting: Setting, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not 0 <= number < 100:
        raise SettingError("%s must be a percentage from 0 to 100 (100 excluded), e.g. 15, got %r" % (setting.variable, value))
    return number / 100


def _factor(setting: Setting, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not 1 < number < float("inf"):
        raise SettingError("%s must be a number above 1, e.g. 2 (twice the peers' median), got %r" % (setting.variable, value))
    return number


def _celsius(setting: Setting, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not 0 < number < _aggregate.MAX_TEMPERATURE_LIMIT_C:
        raise SettingError("%s must be degrees Celsius above 0 and below %d, e.g. 70, got %r"
                           % (setting.variable, _aggregate.MAX_TEMPERATURE_LIMIT_C, value))
    return number


def _boolean(setting: Setting, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingError("%s must be true or false, got %r" % (setting.variable, value))


def variable_value(setting: Setting, value: Any) -> Any:
    """The option value a variable stands for (percent -> fraction); SettingError when unusable."""
    if setting.kind == PERCENT:
        return _percent(setting, value)
    if setting.kind == BOOLEAN:
        return _boolean(setting, value)
    if setting.kind == FACTOR:
        return _factor(setting, value)
    if setting.kind == CELSIUS:
        return _celsius(setting, value)
    return None if value is None else str(value)


def _is_set(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.strip() == "")


def resolve(variables: Mapping[str, Any], option: Callable[[str], Any]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """({option: value}, {option: where it came from}) for every setting.

    ``variables``: the (templated) variables of the play; ``option(name)``: the callback's option
    (environment, ansible.cfg or default). An empty variable counts as not set (a blank survey
    field). The baseline falls back to the report store's last passing report, when known.
    """
    values: Dict[str, Any] = {}
    sources: Dict[str, str] = {}
    for setting in SETTINGS:
        value = variables.get(setting.variable)
        if _is_set(value):
            values[setting.option] = variable_value(setting, value)
            sources[setting.option] = "variable " + setting.variable
        else:
            values[setting.option] = option(setting.option)
            sources[setting.option] = "callback option " + setting.option
    if not _is_set(values["baseline_file"]) and _is_set(variables.get(STORE_BASELINE_VARIABLE)):
        values["baseline_file"] = str(variables[STORE_BASELINE_VARIABLE])
        sources["baseline_file"] = "the report store's last-pass report (%s)" % STORE_BASELINE_VARIABLE
    return values, sources


def judge_settings(values: Mapping[str, Any]) -> _aggregate.Settings:
    """The judge's settings from ``resolve``'s values; ValueError names a bad one."""
    return _aggregate.make_settings(
        outlier_fraction=values["outlier_fraction"], peer_group=values["peer_group"], max_cv=values["max_cv"],
        regression_fraction=values["regression_fraction"], robust_z_min_deviation=values["robust_z_min_deviation"],
        unstable_fails=values["unstable_fails"], latency_outlier_factor=values["latency_outlier_factor"],
        max_temperature_c=values["max_temperature_c"],
    )


def inline_rules(variables: Mapping[str, Any]) -> Optional[str]:
    """The survey's inline rules text, when given."""
    text = variables.get(RULES_YAML_VARIABLE)
    return str(text) if _is_set(text) else None
