# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_version_probe.ask_version: the one way discover, the plan preflight and the runner ask a tool its version.
Real processes answer: this machine's own dd, and stand-in programs (shell scripts, named so in each test)
that answer the way sysbench, ioping, bonnie++ and fio do, or never answer."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._version_probe import VersionAnswer, ask_version


def program(directory, name, body):
    """A stand-in program: a shell script called name."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.requires_tools("dd")
def test_this_machines_dd_answers():
    answer = ask_version(shutil.which("dd"), "dd")
    assert answer.problem is None and answer.version and answer.version[0].isdigit(), answer


def test_each_tool_is_asked_as_the_table_says_and_read_whatever_its_exit_code(tmp_path):
    # Stand-ins answering only to the arguments the real programs take, in the C locale.
    sysbench = program(tmp_path, "sysbench", '[ "$1" = --version ] && [ "$LC_ALL" = C ] || exit 3\n'
                                             'echo "sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta2)"\n')
    ioping = program(tmp_path, "ioping", '[ "$1" = -v ] || exit 3\necho "ioping 1.3"\n')
    bonnie = program(tmp_path, "bonnie++", 'echo "usage: bonnie++ [-d scratch-dir]" >&2\necho "Version: 2.00a" >&2\n'
                                           'exit 1\n')
    (tmp_path / "opt").mkdir()
    fio = program(tmp_path / "opt", "fio-3.33", '[ "$1" = --version ] || exit 3\necho fio-3.33\n')
    assert ask_version(sysbench, "sysbench") == VersionAnswer("1.0.20", None)
    assert ask_version(ioping, "ioping") == VersionAnswer("1.3", None)
    assert ask_version(bonnie, "bonnie++") == VersionAnswer("2.00a", None)   # no version option: usage, exit 1
    assert ask_version(fio, "fio") == VersionAnswer("3.33", None)            # a name outside the table: asked as fio


def test_a_program_outside_the_table_is_not_run(tmp_path):
    ran = tmp_path / "ran"
    generic = program(tmp_path, "generic", "touch %s\n" % ran)
    assert ask_version(generic, "generic") == VersionAnswer(None, None)
    assert not ran.exists()


def test_a_program_that_never_answers_is_stopped_at_the_time_limit(tmp_path):
    # Stand-in for a binary that hangs (a dead network mount, a wrapper waiting for input): it records its
    # PID and sleeps far longer than the limit.
    pid_file = tmp_path / "pid"
    hanging = program(tmp_path, "fio", "echo $$ > %s\nexec sleep 60\n" % pid_file)
    started = time.monotonic()
    answer = ask_version(hanging, "fio", timeout_s=0.5)
    elapsed = time.monotonic() - started
    assert answer == VersionAnswer(None, "%s --version did not answer within 0.5 s (it was stopped)" % hanging)
    assert elapsed < 5, elapsed
    with pytest.raises(ProcessLookupError):   # stopped and reaped, not left running
        os.kill(int(pid_file.read_text()), 0)


def test_a_program_that_cannot_start_is_a_problem_not_an_exception(tmp_path):
    broken = tmp_path / "fio"
    broken.write_text("not a program\n")   # not executable
    answer = ask_version(str(broken), "fio")
    assert answer.version is None and answer.problem.startswith("%s --version could not be started: " % broken)
