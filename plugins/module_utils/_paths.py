# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths root writes through that nobody else can swap: pure helpers for bench_plan and bench_run, and the rule
for a private directory (the quiesce state directory, the report store and its upload directory).

The rule (docs/benchmarks.md, "Paths that can't be swapped"):

* The target directory and every directory above it, up to ``/``, must be owned by a trusted user
  (root, the module's own user, or the user sudo came from) and must not be group- or
  world-writable unless the sticky bit is set (like ``/tmp``: then only a file's owner may rename
  or remove it). Anyone else who can write a parent could replace a component with a symlink and
  aim root's dd/fio at a device or a file.
* A symlink on the way is accepted only when the symlink itself is owned by a trusted user (the
  directory holding it passes the rule already, so nobody else can replace it). It is resolved
  once, here; every component of what it points to is checked by the same rule, and the run
  directory is then created and re-verified through the resolved path with ``O_NOFOLLOW`` only.
* The run directory is created by ``mkdir`` relative to an ``O_DIRECTORY|O_NOFOLLOW`` descriptor of
  the resolved target, and its identity (``st_dev``, ``st_ino``) is handed to the runner, which
  re-walks the path with ``O_NOFOLLOW`` from ``/`` before each tool run and refuses any change.

A private directory (``private_directory_problem``, ``ancestor_problem``) is a real directory, not a symlink, owned
by the user running diskproof and writable by nobody else, below parents only root or that user can change (or
sticky ones, like ``/tmp``); files in it are written by ``write_file_at`` relative to its descriptor.

No Ansible imports: unit tests reach it directly, with injectable ``lstat``/``readlink``.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from typing import Callable, Dict, FrozenSet, Mapping, Optional, Tuple

# A chain of symlinks longer than this is refused (the kernel's own limit is 40).
MAX_SYMLINKS = 40

Identity = Tuple[int, int]
StatFunction = Callable[[str], os.stat_result]
ReadlinkFunction = Callable[[str], str]


class PathError(ValueError):
    """A path root must not write through: the message names the path, what is wrong and what to do."""


def trusted_uids(euid: Optional[int] = None, environ: Optional[Mapping[str, str]] = None) -> FrozenSet[int]:
    """root, the module's own user, and the connecting user when sudo (become) says who that was."""
    uids = {0, os.geteuid() if euid is None else euid}
    sudo_uid = (os.environ if environ is None else environ).get("SUDO_UID", "")
    if sudo_uid.isdigit():
        uids.add(int(sudo_uid))
    return frozenset(uids)


def owner_name(uid: int) -> str:
    """'uid N (name)', or 'uid N' for a uid without a user."""
    try:
        import pwd  # stdlib, POSIX only: imported here so the module still imports where it is missing
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except (ImportError, KeyError):
        return "uid %d" % uid


def _mode_text(mode: int) -> str:
    return "%04o" % stat.S_IMODE(mode)


def component_problem(path: str, info: os.stat_result, trusted: FrozenSet[int]) -> Optional[str]:
    """Why another user could replace what is at path (lstat result info), or None when nobody can."""
    if info.st_uid not in trusted:
        kind = "symlink" if stat.S_ISLNK(info.st_mode) else "directory"
        return ("%s %s is owned by %s (mode %s), not by root or the connecting user (%s): its owner could swap it "
                "for a symlink to a device; chown root %s, or choose a target whose directories only root can change"
                % (kind, path, owner_name(info.st_uid), _mode_text(info.st_mode),
                   ", ".join(owner_name(uid) for uid in sorted(trusted)), path))
    if stat.S_ISLNK(info.st_mode):
        return None   # a symlink's own mode means nothing; its directory was checked as the component before
    if not stat.S_ISDIR(info.st_mode):
        return "%s is not a directory (mode %s): the target and every component above it must be directories" % (
            path, _mode_text(info.st_mode))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        who = " and ".join(name for bit, name in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "world"))
                           if info.st_mode & bit)
        return ("directory %s is %s-writable without the sticky bit (owner %s, mode %s): anyone who can write it "
                "could swap the path below it for a symlink to a device; chmod go-w %s (or chmod +t for a shared "
                "scratch directory like /tmp), or choose another target"
                % (path, who, owner_name(info.st_uid), _mode_text(info.st_mode), path))
    return None


def private_directory_problem(what: str, path: str, info: os.stat_result, euid: int, fix: str) -> Optional[str]:
    """Why ``path`` (lstat/fstat ``info``) cannot be a private directory, or None: it must be a real directory owned
    by ``euid`` and writable by nobody else (others could swap the files in it). ``what`` names it ("the state
    directory", "diskproof_report_store"); ``fix`` is what to do, appended to an ownership or mode problem."""
    if stat.S_ISLNK(info.st_mode):
        return "%s %s is a symbolic link: give the real directory" % (what, path)
    if not stat.S_ISDIR(info.st_mode):
        return "%s %s is not a directory" % (what, path)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != euid:
        return "%s %s is owned by %s (mode %04o), not by %s that runs diskproof: %s" % (
            what, path, owner_name(info.st_uid), mode, owner_name(euid), fix)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "%s %s (owner %s) has mode %04o (group- or world-writable): %s" % (
            what, path, owner_name(info.st_uid), mode, fix)
    return None


def ancestor_problem(what: str, path: str, info: os.stat_result, euid: int) -> Optional[str]:
    """A parent of a private directory must be owned by root or ``euid`` and not writable by others, unless sticky
    (/tmp): otherwise someone else could rename the directory away and put their own in its place. The rule every
    target path follows (component_problem)."""
    problem = component_problem(path, info, frozenset((0, euid)))
    return None if problem is None else "a parent of %s: %s" % (what, problem)


def write_file_at(directory: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Atomically replace ``name`` in the directory open as ``directory``: a new file with an unpredictable name
    (O_CREAT|O_EXCL|O_NOFOLLOW), written and fsynced, given ``mode``, renamed over ``name``, then the directory
    fsynced. A reader sees the old file or the new one, never a part; a planted name is never written through."""
    temporary = ".%s.%s.tmp" % (name, secrets.token_hex(8))
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=directory)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
            os.fchmod(descriptor, mode)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    os.fsync(directory)


def resolve_trusted(path: str, trusted: FrozenSet[int], lstat: StatFunction = os.lstat,
                    readlink: ReadlinkFunction = os.readlink) -> str:
    """The real path of the directory ``path`` (absolute), resolved once, component by component,
    every directory and symlink met on the way checked by the rule; PathError naming the first one
    that fails."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise PathError("%r is not an absolute path: give the target as an absolute directory path" % (path,))
    current = "/"
    root_problem = component_problem("/", lstat("/"), trusted)
    if root_problem:
        raise PathError(root_problem)
    pending = [name for name in path.split("/") if name]
    followed = 0
    while pending:
        name = pending.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)   # the parent of a resolved directory was checked already
            continue
        candidate = os.path.join(current, name)
        try:
            info = lstat(candidate)
        except OSError as error:
            raise PathError("%s (on the way to %s): %s" % (candidate, path, error.strerror or error)) from error
        problem = component_problem(candidate, info, trusted)
        if problem:
            raise PathError(problem)
        if stat.S_ISLNK(info.st_mode):
            followed += 1
            if followed > MAX_SYMLINKS:
                raise PathError("%s: more than %d symlinks on the way; give the target's real path"
                                % (path, MAX_SYMLINKS))
            link = readlink(candidate)
            if link.startswith("/"):
                current = "/"
            pending = [part for part in link.split("/") if part] + pending
            continue
        current = candidate
    return current


def open_directory_nofollow(path: str) -> int:
    """A descriptor of the directory ``path`` (absolute, already resolved), opened one component at a
    time from ``/`` with ``O_NOFOLLOW``: OSError (ELOOP or ENOTDIR) when any component is a symlink."""
    if not path.startswith("/") or any(part in (".", "..") for part in path.split("/")):
        raise PathError("%s is not an absolute, resolved path" % path)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open("/", flags)
    try:
        for name in (part for part in path.split("/") if part):
            child = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def describe_replacement(path: str, lstat: StatFunction = os.lstat, readlink: ReadlinkFunction = os.readlink) -> str:
    """What is at path now, for a message about a swapped directory."""
    try:
        info = lstat(path)
    except OSError as error:
        return "is gone (%s)" % (error.strerror or error)
    if stat.S_ISLNK(info.st_mode):
        try:
            return "is now a symlink to %s" % readlink(path)
        except OSError:
            return "is now a symlink"
    if stat.S_ISDIR(info.st_mode):
        return "is now another directory (device %d, inode %d)" % (info.st_dev, info.st_ino)
    return "is now a file of mode %s" % _mode_text(info.st_mode)


def verify_directory(path: str, expected: Identity, trusted: FrozenSet[int],
                     opener: Callable[[str], int] = open_directory_nofollow) -> int:
    """A descriptor of ``path`` when it still is the directory identified by ``expected`` (st_dev,
    st_ino), reached without following any symlink, owned by a trusted user and not writable by
    others; else PathError saying it was swapped. The caller closes the descriptor."""
    try:
        fd = opener(path)
    except PathError:
        raise
    except OSError as error:
        # Which component changed: the first one that is no longer a plain directory.
        where = path
        parts = [part for part in path.split("/") if part]
        for count in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:count])
            try:
                if not stat.S_ISDIR(os.lstat(prefix).st_mode):
                    where = prefix
                    break
            except OSError:
                where = prefix
                break
        raise PathError("the run directory %s was swapped after the plan created it: %s %s (walked from / without "
                        "following symlinks: %s); refusing to run a tool that would write through it - find out who "
                        "replaced it, remove it and run again"
                        % (path, "it" if where == path else "its component " + where,
                           describe_replacement(where), error.strerror or error)) from error
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != tuple(expected):
            raise PathError("the run directory %s was swapped after the plan created it: it is now device %d, inode "
                            "%d, the plan created device %d, inode %d; refusing to run a tool in it - find out who "
                            "replaced it, remove it and run again"
                            % (path, info.st_dev, info.st_ino, expected[0], expected[1]))
        problem = component_problem(path, info, trusted)
        if problem:
            raise PathError("the run directory %s changed after the plan created it: %s" % (path, problem))
    except BaseException:
        os.close(fd)
        raise
    return fd


def same_identity(path: str, expected: Identity, stat_function: StatFunction = os.stat) -> Optional[str]:
    """None when path (followed, as a tool opening it by name would) is the directory expected, else why not."""
    try:
        info = stat_function(path)
    except OSError as error:
        return "%s: %s" % (path, error.strerror or error)
    if (info.st_dev, info.st_ino) != tuple(expected):
        return ("%s now leads to device %d, inode %d, not to the run directory the plan created (device %d, inode %d)"
                % (path, info.st_dev, info.st_ino, expected[0], expected[1]))
    return None


def make_directory(parent: str, name: str, mode: int, trusted: FrozenSet[int]) -> Tuple[int, os.stat_result]:
    """Create ``parent/name`` (parent absolute and resolved) relative to an O_NOFOLLOW descriptor of
    parent, open it O_NOFOLLOW and check by fstat that it is the directory just made, owned by us;
    returns (its descriptor, its fstat). FileExistsError when the name is taken; PathError when what
    was opened is not what mkdir made."""
    if "/" in name or name in ("", ".", ".."):
        raise PathError("%r is not a plain directory name" % (name,))
    parent_fd = open_directory_nofollow(parent)
    try:
        os.mkdir(name, mode, dir_fd=parent_fd)
        made = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=parent_fd)
    finally:
        os.close(parent_fd)
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (made.st_dev, made.st_ino) or info.st_uid != os.geteuid():
            raise PathError("%s/%s was replaced between mkdir and open (now owned by %s, device %d, inode %d): "
                            "someone is racing this run; remove it and run again"
                            % (parent.rstrip("/"), name, owner_name(info.st_uid), info.st_dev, info.st_ino))
        os.fchmod(fd, mode)   # mkdir's mode went through the umask
        info = os.fstat(fd)
        problem = component_problem("%s/%s" % (parent.rstrip("/"), name), info, trusted)
        if problem:
            raise PathError(problem)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def run_dir_record(path: str, resolved: str, info: os.stat_result) -> Dict[str, object]:
    """What bench_plan hands the runner about one run directory it created."""
    return {"path": path, "resolved": resolved, "device": info.st_dev, "inode": info.st_ino}
