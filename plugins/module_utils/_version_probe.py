# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Asking an installed tool its version, the one way disk_facts, bench_plan's preflight and bench_run do: the
arguments of ``_tools.TOOL_VERSION_ARGS``, the C locale, a time limit, the answer read by
``_parse.tool_version`` whatever the exit code (bonnie++ has no version option and exits 1 after printing
it). The time limit is there because a program that never answers (a binary on a dead network mount, a wrapper
script waiting for input) would otherwise hang the module until the play is killed. No Ansible imports.
"""

from __future__ import annotations

import os
import shlex
from typing import Callable, Dict, Iterable, NamedTuple, Optional

from . import _proc
from ._parse.tool_version import parse_tool_version
from ._tools import TOOL_VERSION_ARGS

VERSION_TIMEOUT_S = 10.0


class VersionAnswer(NamedTuple):
    version: Optional[str]   # None: not in the table, no answer, or none found in it
    problem: Optional[str]   # why there is no answer (did not start, did not answer in time); None otherwise


def ask_version(binary: str, tool: str, timeout_s: Optional[float] = None) -> VersionAnswer:
    """The version ``binary`` reports when asked as ``tool`` is asked (the program's own name first, when the
    table knows it: /opt/bin/fio-3.33 is asked as fio), within ``timeout_s`` (default VERSION_TIMEOUT_S)."""
    timeout_s = VERSION_TIMEOUT_S if timeout_s is None else timeout_s
    program = os.path.basename(binary)
    name = program if program in TOOL_VERSION_ARGS else tool
    args = TOOL_VERSION_ARGS.get(name)
    if args is None:
        return VersionAnswer(None, None)
    argv = [binary] + list(args)
    try:
        answer = _proc.run(argv, env=dict(os.environ, LANG="C", LC_ALL="C"), timeout_s=timeout_s)
    except _proc.TimedOut:
        return VersionAnswer(None, "%s did not answer within %g s (it was stopped)" % (shlex.join(argv), timeout_s))
    except OSError as error:
        return VersionAnswer(None, "%s could not be started: %s" % (shlex.join(argv), error.strerror or error))
    return VersionAnswer(parse_tool_version(name, answer.stdout.decode("utf-8", "replace"),
                                            answer.stderr.decode("utf-8", "replace")), None)


def probe_tools(tools: Iterable[str], which: Callable[[str], Optional[str]],
                warn: Callable[[str], None]) -> Dict[str, Dict[str, Optional[str]]]:
    """tool -> {path, version}: each tool found with ``which`` (AnsibleModule.get_bin_path: PATH and the sbin
    directories) and asked its version; a question that got no answer is passed to ``warn``."""
    found: Dict[str, Dict[str, Optional[str]]] = {}
    for tool in tools:
        path = which(tool)
        version = None
        if path:
            version, problem = ask_version(path, tool)
            if problem:
                warn("%s: its version is reported as unknown" % problem)
        found[tool] = {"path": path, "version": version}
    return found
