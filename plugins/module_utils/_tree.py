# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Directories the project created: their identity, and removing them without following symlinks or
crossing into other filesystems (``remove_tree``; ``remove_tree_at`` for a directory named inside one already
open). Used by bench_run (its workdir), bench_plan (an aborted run's leftovers), the cancel path
(module_utils/_cancel.py) and the report store (pruned runs, dead uploads). No Ansible imports.
"""

from __future__ import annotations

import os
import stat
from typing import List, Tuple


def identity(path: str) -> Tuple[int, int]:
    """(st_dev, st_ino) of path itself (not of a symlink target)."""
    info = os.lstat(path)
    return info.st_dev, info.st_ino


def _clear_directory(fd: int, device: int, where: str, problems: List[str]) -> None:
    with os.scandir(fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        path = os.path.join(where, name)
        try:
            if is_dir:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if info.st_dev != device:
                    problems.append("%s is on another filesystem (a mount point?): left in place" % path)
                    continue
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    _clear_directory(child, device, path, problems)
                finally:
                    os.close(child)
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        except OSError as error:
            problems.append("%s: %s" % (path, error.strerror or error))


def remove_tree(path: str, expected: Tuple[int, int]) -> List[str]:
    """Remove the directory path and everything in it; returns the problems (empty when all went).

    Refuses when path is no longer the directory identified by ``expected`` (dev, inode): replaced
    by a symlink or another directory. Symlinks inside are removed, never followed; directories
    on another filesystem (mounted inside) are left alone.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as error:
        return ["%s: %s" % (path, error)]
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) != tuple(expected):
        return ["%s is not the directory this run created (replaced while running): not removed" % path]
    problems: List[str] = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        return ["%s: %s" % (path, error)]
    try:
        _clear_directory(fd, info.st_dev, path, problems)
    finally:
        os.close(fd)
    if not problems:
        try:
            os.rmdir(path)
        except OSError as error:
            problems.append("%s: %s" % (path, error))
    return problems


def remove_tree_at(parent: int, name: str, where: str) -> List[str]:
    """Remove the directory ``name`` in the directory open as ``parent`` and everything in it, never following a
    symlink (``name`` itself included: a symlink or a file there is refused) nor leaving its filesystem; returns the
    problems (empty when all went). ``where`` is its path, for the messages."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return []
    except OSError as error:
        return ["%s: %s" % (where, error.strerror or error)]
    if not stat.S_ISDIR(info.st_mode):
        return ["%s is not a directory (a symlink or a file was put there): not removed" % where]
    problems: List[str] = []
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as error:
        return ["%s: %s" % (where, error.strerror or error)]
    try:
        if os.fstat(fd).st_ino != info.st_ino:
            return ["%s was replaced while it was being removed: not removed" % where]
        _clear_directory(fd, info.st_dev, where, problems)
    finally:
        os.close(fd)
    if not problems:
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError as error:
            problems.append("%s: %s" % (where, error.strerror or error))
    return problems
