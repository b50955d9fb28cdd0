# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test sizing math, pure Python (no Ansible imports) so pytest reaches it directly.

A buffered test file must be larger than the page cache can hold, or reads come from RAM and
writes are absorbed by it; twice the memory figure is the rule vendors and reviewers accept.
"""
from __future__ import annotations

from typing import List

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


# A filesystem under test keeps at least this much free after the test files are written: a full
# filesystem slows down (fragmented allocation) and can take the host's services down with it.
RESERVE_FRACTION = 0.05
RESERVE_MIN_BYTES = 1 << 30


def _format_bytes(value: int) -> str:
    """Exact bytes plus a binary-unit reading, e.g. '268435456 B (256.0 MiB)'."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= scale:
            return "%d B (%.1f %s)" % (value, value / scale, unit)
    return "%d B" % value


def check_direct_block_size(name: str, block_size: object, device: str, logical: int, physical: int) -> List[str]:
    """Refuse an O_DIRECT block size the device cannot take; warnings for a merely slow one.

    O_DIRECT needs transfers (and file offsets, which are multiples of the block size here) in whole
    logical blocks, or the kernel answers EINVAL; a size that is not a multiple of the physical block
    forces the drive into read-modify-write, which measures the penalty rather than the disk.
    """
    size = _require_positive_int(name, block_size)
    sizes = "%s has logical block size %d and physical block size %d" % (device, logical, physical)
    if size % logical:
        suggestion = round_up(size, max(logical, physical))
        raise SizingError("%s %d is not a multiple of the logical block size: %s, so O_DIRECT would fail with EINVAL; "
                          "use a multiple of %d such as %d" % (name, size, sizes, max(logical, physical), suggestion))
    if size % physical:
        return ["%s %d is not a multiple of the physical block size (%s): the drive does read-modify-write and "
                "the figure includes that penalty" % (name, size, sizes)]
    return []


def check_free_space(where: str, needed: int, free: int, filesystem_size: int,
                     reserve_fraction: float = RESERVE_FRACTION, reserve_min: int = RESERVE_MIN_BYTES,
                     at_once: str = "") -> int:
    """The reserve kept free; refuses when ``needed`` bytes would leave less than it.

    ``where`` names the filesystem (a target path, or its mount point, device and targets); ``needed``
    is everything the run has on it at its fullest moment, which ``at_once`` describes (e.g. "while
    sysbench_rndrd runs on /srv/a"). The reserve is max(reserve_fraction x filesystem size, reserve_min).
    """
    reserve = max(int(filesystem_size * reserve_fraction), reserve_min)
    if needed + reserve > free:
        raise SizingError(
            "not enough free space on %s: the tests need %s%s and the filesystem must keep %s free "
            "(max(%g%% of %s, %s)), but only %s is available; free space, lower the memory figure with a "
            "cache fence (diskproof_cache_fence_bytes), or choose fewer tests"
            % (where, _format_bytes(needed), " at once (%s)" % at_once if at_once else "", _format_bytes(reserve),
               reserve_fraction * 100, _format_bytes(filesystem_size), _format_bytes(reserve_min),
               _format_bytes(free)))
    return reserve


def evenly_spaced_offsets(span: int, chunk: int, points: int, align: int) -> List[int]:
    """``points`` offsets from 0 to span - chunk (both ends included), each a multiple of ``align``.

    For a ZCAV sweep: reading ``chunk`` bytes at each offset covers the whole span from the start
    to the end without reading past it.
    """
    _require_positive_int("span", span)
    _require_positive_int("chunk", chunk)
    _require_positive_int("align", align)
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise SizingError("a sweep needs at least 2 points, got %r" % (points,))
    if chunk > span:
        raise SizingError("a sweep reads %s at each point but the span is only %s" % (_format_bytes(chunk), _format_bytes(span)))
    last = (span - chunk) // align * align
    offsets = sorted({(last * index // (points - 1)) // align * align for index in range(points)})
    return offsets
