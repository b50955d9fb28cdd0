# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a cancelled job removes itself: this run's run directories, and only those.

After a cancel (AWX/AAP sends SIGTERM to ansible-playbook) the play's ``always:`` cleanup never runs,
so bench_run removes the run directories it was given (bench_plan's ``<target>/diskproof-<run id>``)
itself. A directory is removed only when its ``.diskproof-run`` note proves it is this run's: a real
directory (not a symlink) named ``diskproof-<id>``, whose note is a plain file saying
``diskproof run <id>,`` on its first line and ``host: <this host>``. Removal never follows symlinks
and leaves other filesystems mounted inside alone (``_tree.remove_tree``).

No Ansible imports: unit tests reach it directly.
"""
from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Tuple

from . import _tree

NOTE = ".diskproof-run"
PREFIX = "diskproof-"


def read_note(run_dir: str) -> Optional[Tuple[str, Dict[str, str]]]:
    """(first line, key: value fields) of run_dir's note, or None without a plain-file note."""
    try:
        handle = os.open(os.path.join(run_dir, NOTE), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        text = os.read(handle, 4096).decode("utf-8", "replace")
    finally:
        os.close(handle)
    lines = text.splitlines() or [""]
    fields = {}
    for line in lines[1:]:
        key, separator, value = line.partition(":")
        if separator:
            fields[key.strip()] = value.strip()
    return lines[0], fields


def not_ours(run_dir: str, host: str) -> Optional[str]:
    """None when run_dir is a run directory this host's run created (its note says so), else why not."""
    name = os.path.basename(os.path.normpath(run_dir))
    if not os.path.isabs(run_dir) or not name.startswith(PREFIX) or len(name) == len(PREFIX):
        return "not an absolute path named %s<run id>" % PREFIX
    try:
        info = os.lstat(run_dir)
    except FileNotFoundError:
        return "gone already"
    except OSError as error:
        return str(error)
    if not stat.S_ISDIR(info.st_mode):
        return "not a directory (a symlink or a file)"
    note = read_note(run_dir)
    if note is None:
        return "no %s note" % NOTE
    first, fields = note
    if not first.startswith("diskproof run %s," % name[len(PREFIX):]):
        return "its %s note names another run" % NOTE
    if fields.get("host") != host:
        return "its %s note names host %r, not this host (%s)" % (NOTE, fields.get("host"), host)
    return None


def remove_run_dirs(run_dirs: List[str], host: str) -> Tuple[List[str], List[str]]:
    """Remove each of run_dirs that is proven this run's: (removed, problems). A directory that is gone already
    is neither; one whose note does not prove it is left alone, with the reason among the problems."""
    removed: List[str] = []
    problems: List[str] = []
    for run_dir in run_dirs:
        reason = not_ours(run_dir, host)
        if reason == "gone already":
            continue
        if reason is not None:
            problems.append("%s left alone: %s" % (run_dir, reason))
            continue
        found = _tree.remove_tree(run_dir, _tree.identity(run_dir))
        if found:
            problems.extend(found)
        else:
            removed.append(run_dir)
    return removed, problems
