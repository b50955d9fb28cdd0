# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the benchmark role needs; thin wrappers over pure module_utils (planning is the bench_plan module).

Documentation in target_identities.yml beside this file.
"""
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.diskproof.fleet.plugins.module_utils._identity import target_identities


def target_identities_filter(resolved, disks):
    """Directory -> disk identity, from the discover role's diskproof_targets_resolved and diskproof_disks."""
    try:
        return target_identities(resolved, disks)
    except (AttributeError, TypeError) as error:
        raise AnsibleFilterError("diskproof.fleet.target_identities needs the discover role's facts: %s" % error) from error


class FilterModule:
    """diskproof planning filters."""

    def filters(self):
        return {
            "target_identities": target_identities_filter,
        }
