# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test sizing math, pure Python (no Ansible imports) so pytest reaches it directly.

A buffered test file must be larger than the page cache can hold, or reads come from RAM and
writes are absorbed by it; twice the memory figure is the rule vendors and reviewers accept.
"""
from __future__ import annotations

# Twice the memory: even a host that caches everything it can still has to hit the disk for
# half of the file.
BUFFERED_SIZE_FACTOR = 2


class SizingError(ValueError):
    """A sizing input that cannot produce a trustworthy test."""


def _require_positive_int(name: str, value: object) -> int:
    # bool is an int subclass; True as a size is a mistake, not 1 byte.
    if isinstance(value, bool) or not isinstance(value, int):
        raise SizingError("%s must be a positive integer number of bytes, got %r" % (name, value))
    if value <= 0:
        raise SizingError("%s must be a positive integer number of bytes, got %d" % (name, value))
    return value


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value``."""
    return -(-value // multiple) * multiple


def buffered_test_size(memory_bytes: int, block_size: int, factor: int = BUFFERED_SIZE_FACTOR) -> int:
    """Size in bytes of a buffered test file: ``factor`` x memory, rounded up to whole blocks."""
    _require_positive_int("memory_bytes", memory_bytes)
    _require_positive_int("block_size", block_size)
    _require_positive_int("factor", factor)
    return round_up(memory_bytes * factor, block_size)
