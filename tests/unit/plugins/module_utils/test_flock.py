"""wait_for_flock: the one wait for an exclusive flock (quiesce's state-directory mutex, the report store's lock)."""
from __future__ import annotations

import errno
import os
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._flock import wait_for_flock


def _open(path):
    return os.open(str(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def test_a_free_lock_is_taken_at_once_and_held_against_a_second_open(tmp_path):
    first, second = _open(tmp_path / "lock"), _open(tmp_path / "lock")
    try:
        assert wait_for_flock(first, timeout_s=5, poll_s=0.01)
        started = time.monotonic()
        assert not wait_for_flock(second, timeout_s=0.2, poll_s=0.01)   # flock: per open file, even in one process
        assert 0.2 <= time.monotonic() - started < 2
    finally:
        os.close(first)
    try:
        assert wait_for_flock(second, timeout_s=0, poll_s=0.01)          # released with the first descriptor
    finally:
        os.close(second)


def test_an_error_other_than_held_elsewhere_is_raised(tmp_path):
    closed = _open(tmp_path / "lock")
    os.close(closed)
    with pytest.raises(OSError) as raised:
        wait_for_flock(closed, timeout_s=5, poll_s=0.01)
    assert raised.value.errno == errno.EBADF
