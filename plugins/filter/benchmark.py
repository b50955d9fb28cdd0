# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the benchmark role needs; thin wrappers over pure module_utils."""
from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, build_plan, target_identities
from ansible_collections.diskproof.fleet.plugins.module_utils._sizing import SizingError, buffered_test_size


def benchmark_plan(targets, memory_bytes, tests, fio_runtime_s, identities=None):
    """The ordered job list for one host; see module_utils/_plan.py."""
    try:
        return build_plan(targets, memory_bytes, tests, fio_runtime_s, identities)
    except PlanError as error:
        raise AnsibleFilterError("diskproof.fleet.benchmark_plan: %s" % error) from error


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
            "benchmark_plan": benchmark_plan,
            "buffered_test_size": buffered_test_size_filter,
            "target_identities": target_identities_filter,
        }
