# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report callback's options, made from plugin_utils/_settings.py's SETTINGS: each option's type, default,
choices, environment variable, ansible.cfg key and description are written once, there (the defaults are the
judge's own, plugin_utils/_aggregate.py)."""
from __future__ import annotations

import yaml  # ansible-core's own dependency; doc fragments are read on the controller only

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _settings


def _variable_line(setting: _settings.Setting) -> str:
    if setting.kind == _settings.PERCENT:
        return "Variable C(%s) (a percentage, e.g. %g)." % (setting.variable, setting.default * 100)
    if setting.kind == _settings.FACTOR:
        return "Variable C(%s) (a multiplier, e.g. %g)." % (setting.variable, setting.default)
    if setting.kind == _settings.CELSIUS:
        return "Variable C(%s) (degrees Celsius, e.g. %g)." % (setting.variable, setting.default)
    return "Variable C(%s)." % setting.variable


def _options() -> str:
    options = {}
    for setting in _settings.SETTINGS:
        option = {"description": list(setting.description) + [_variable_line(setting)], "type": setting.option_type}
        if setting.choices:
            option["choices"] = list(setting.choices)
        if setting.default is not None:
            option["default"] = setting.default
        option["env"] = [{"name": setting.env}]
        option["ini"] = [{"section": "diskproof_report", "key": setting.option}]
        options[setting.option] = option
    return yaml.safe_dump({"options": options}, sort_keys=False, width=120)


class ModuleDocFragment:
    """The callback's option docs (DOCUMENTATION, set below from the settings)."""


# Set outside the class body, where ansible-test's yamllint reads every assignment as a string literal; the fragment
# loader finds it as any class attribute.
ModuleDocFragment.DOCUMENTATION = _options()
