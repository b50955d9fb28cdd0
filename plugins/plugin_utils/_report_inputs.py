# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's inputs read on the controller: the acceptance rules file and the baseline report.

One reader for both users: the callback diskproof.fleet.report, which judges with them at the end
of a run (and only warns when they cannot be used), and the lookup diskproof.fleet.report_inputs,
which playbooks call first so that inputs the report could not use stop the run before any host is
touched. Each reader returns (value, errors); an empty error list means the value can be used.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, List, Tuple

import yaml

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate


def plain(value: Any) -> Any:
    """Plain dict/list/str/number copy of a variable value (2.19 tags values with their origin)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def read_rules_file(path: str) -> Tuple[Any, List[str]]:
    """(the YAML document of the rules file, []) or (None, [why it cannot be read])."""
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.safe_load(stream), []
    except (OSError, yaml.YAMLError) as exc:
        return None, ["cannot read %s: %s" % (path, exc)]


def rules_errors(acceptance: Any) -> List[str]:
    """Every problem of the acceptance rules (each naming its path, e.g. rules[0].match.modle); [] when usable."""
    try:
        _aggregate.validate_rules(acceptance)
    except _aggregate.RulesError as exc:
        return exc.errors
    return []


def read_baseline_file(path: str) -> Tuple[Any, List[str]]:
    """(the baseline report.json, []) or (None, [why it cannot be used as a baseline])."""
    try:
        with open(path, encoding="utf-8") as stream:
            baseline = json.load(stream)
        _aggregate.baseline_index(baseline)
        return baseline, []
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, and BaselineError
        return None, ["cannot use %s: %s" % (path, exc)]
