"""/proc/<pid>/stat (a real capture in tests/fixtures/quiesce/, with its .src.md): the one reading of it, for the
quiesce's process identity and the runner's process-group members."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.proc_pid_stat import (
    fields_after_command, parse_proc_stat,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_parse_proc_stat_real_capture():
    assert parse_proc_stat(fixture("proc-pid-stat.txt")) == ("R", 270611)


def test_parse_proc_stat_with_parentheses_in_the_name():
    text = "42 (odd) name)) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5555 0 0\n"
    assert parse_proc_stat(text) == ("S", 5555)
    with pytest.raises(SourceError):
        parse_proc_stat("garbage")


def test_fields_after_the_command_name():
    assert fields_after_command(fixture("proc-pid-stat.txt"))[0] == "R"
    assert fields_after_command("42 (a b) c) S 1 42")[:3] == ["S", "1", "42"]
    assert fields_after_command("garbage") == []
