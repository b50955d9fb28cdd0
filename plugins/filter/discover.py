# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the discover facts; thin wrappers over pure module_utils.

Documentation in discovery_summary.yml beside this file.
"""
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.diskproof.fleet.plugins.module_utils._discover import discovery_summary


def discovery_summary_filter(facts):
    """One line per host, target, disk and tool from a host's discover facts (ansible_facts)."""
    try:
        return discovery_summary(facts["diskproof_host"], facts["diskproof_targets_resolved"], facts["diskproof_disks"])
    except (KeyError, TypeError, AttributeError) as error:
        raise AnsibleFilterError("diskproof.fleet.discovery_summary needs the facts of the discover role: %s" % error) from error


class FilterModule:
    """diskproof discover filters."""

    def filters(self):
        return {"discovery_summary": discovery_summary_filter}
