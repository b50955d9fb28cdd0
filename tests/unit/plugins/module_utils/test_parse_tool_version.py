"""What each tool prints when asked its version (_tools.TOOL_VERSION_ARGS), read as a version."""
from __future__ import annotations

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.tool_version import parse_tool_version


@pytest.mark.parametrize(("tool", "text", "version"), [
    # first lines as printed on the project VM (LC_ALL=C)
    ("dd", "dd (coreutils) 9.1\nCopyright (C) 2022 Free Software Foundation, Inc.\n", "9.1"),
    ("fio", "fio-3.33\n", "3.33"),
    ("sysbench", "sysbench 1.0.20\n", "1.0.20"),
    ("ioping", "ioping 1.3\n", "1.3"),
    ("smartctl", "smartctl 7.3 2022-02-28 r5338 [x86_64-linux-6.18.44-fc-v509] (local build)\n", "7.3"),
    ("nvme", "nvme version 2.3 (git 2.3)\nlibnvme version 1.3 (git 1.3)\n", "2.3"),
    ("bonnie++", "bonnie++: unrecognized option '--version'\nusage:\nbonnie++ [-d scratch-dir] [-c concurrency]\n\n"
                 "Version: 2.00a\n", "2.00a"),
    ("bonnie++", "usage: bonnie++\n", None),
    ("dd", "", None),
])
def test_tool_versions(tool, text, version):
    assert parse_tool_version(tool, text) == version


def test_stdout_first_then_stderr():
    usage = "bonnie++: unrecognized option '--version'\nusage:\nbonnie++ [-d scratch-dir]\n\nVersion: 2.00a\n"
    assert parse_tool_version("bonnie++", "", usage) == "2.00a"            # usage on stderr, nothing on stdout
    assert parse_tool_version("bonnie++", "\n", usage) == "2.00a"
    assert parse_tool_version("dd", "dd (coreutils) 9.1\n", "dd: warning 8.2.1\n") == "9.1"
    assert parse_tool_version("fio", "", "fio-3.33\n") == "3.33"
