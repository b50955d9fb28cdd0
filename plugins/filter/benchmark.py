# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the benchmark role needs; thin wrappers over pure module_utils (planning is the bench_plan module)."""
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import target_identities
from ansible_collections.diskproof.fleet.plugins.module_utils._sizing import SizingError, buffered_test_size


def buffered_test_size_filter(memory_bytes, block_size):
    """Bytes of a buffered test file: 2 x memory rounded up to whole blocks."""
    try:
        return buffered_test_size(memory_bytes, block_size)
    except SizingError as error:
        raise AnsibleFilterError("diskproof.fleet.buffered_test_size: %s" % error) from error


def target_identities_filter(resolved, disks):
    """Directory -> disk identity, from the discover role's diskproof_targets_resolved and diskproof_disks."""
    try:
        return target_identities(resolved, disks)
    except (AttributeError, TypeError) as error:
        raise AnsibleFilterError("diskproof.fleet.target_identities needs the discover role's facts: %s" % error) from error


class FilterModule:
    """diskproof sizing and planning filters."""

    def filters(self):
        return {
            "buffered_test_size": buffered_test_size_filter,
            "target_identities": target_identities_filter,
        }
