# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report callback's own options (environment, ansible.cfg, default) read outside the callback: what the
action diskproof.fleet.report and the lookup diskproof.fleet.report_inputs fall back to when no variable sets a
setting, exactly as the callback reads them (its ``get_option``)."""
from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible.plugins.loader import callback_loader

CALLBACK = "diskproof.fleet.report"


def callback_option(name: str) -> Any:
    """The callback's option ``name`` as Ansible's configuration resolves it."""
    plugin = callback_loader.get(CALLBACK, class_only=True)
    return C.config.get_config_value(name, plugin_type="callback", plugin_name=plugin._load_name)
