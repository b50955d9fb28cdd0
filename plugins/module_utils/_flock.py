# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for an exclusive flock, the one loop of the quiesce state directory's mutex (_state_dir) and the report
store's lock (_store). Pure: no Ansible imports."""

from __future__ import annotations

import errno
import fcntl
import time

# What flock(LOCK_NB) says of a lock another process holds: EWOULDBLOCK (EAGAIN on Linux); EACCES on some NFS clients.
_HELD_ELSEWHERE = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)


def wait_for_flock(descriptor: int, timeout_s: float, poll_s: float) -> bool:
    """Take an exclusive flock on descriptor, trying again every poll_s seconds: True once held, False when
    timeout_s passed first. Any other OSError (a filesystem without flock) is raised."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as error:
            if error.errno not in _HELD_ELSEWHERE:
                raise
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
