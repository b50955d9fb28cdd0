"""The tool preflight: every tool a plan runs is present with a usable version, else a refusal naming the
package to install (Debian and RHEL names)."""
from __future__ import annotations

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._tools import PACKAGES, tool_problems


def found(**tools):
    return {name: {"path": "/usr/bin/" + name, "version": version} for name, version in tools.items()}


def test_present_tools_with_usable_versions_pass():
    assert tool_problems(["dd", "fio", "sysbench", "bonnie++", "ioping"],
                         found(dd="9.1", fio="3.33", sysbench="1.0.20", **{"bonnie++": "2.00a"}, ioping="1.3")) == []


@pytest.mark.parametrize(("needed", "tools", "message"), [
    (["dd", "fio"], found(dd="9.1"),
     "fio is not installed (not found in PATH or the sbin directories): install the package fio "
     "(Debian/Ubuntu: apt-get install fio; RHEL and derivatives: dnf install fio)"),
    (["bonnie++"], {},
     "bonnie++ is not installed (not found in PATH or the sbin directories): install the package bonnie++ "
     "(Debian/Ubuntu: apt-get install bonnie++; RHEL and derivatives: dnf install bonnie++, from EPEL)"),
    (["sysbench"], found(sysbench="0.4.12"),
     "sysbench 0.4.12 at /usr/bin/sysbench is older than 1.0, the oldest version the plan's commands work with: "
     "install a newer package sysbench (Debian/Ubuntu: apt-get install sysbench; RHEL and derivatives: "
     "dnf install sysbench, from EPEL)"),
    (["fio"], found(fio=None),
     "fio at /usr/bin/fio did not report a version (fio --version): it does not run here, or is not fio; "
     "reinstall the package fio (Debian/Ubuntu: apt-get install fio; RHEL and derivatives: dnf install fio)"),
])
def test_missing_or_unusable_tools_are_named_with_their_package(needed, tools, message):
    assert tool_problems(needed, tools) == [message]


def test_every_tool_a_plan_can_run_has_a_package():
    from ansible_collections.diskproof.fleet.plugins.module_utils._plan import CATALOG, SSD_PURGE_METHODS
    assert {entry.tool for entry in CATALOG.values()} <= set(PACKAGES)
    assert {"blkdiscard", "nvme", "hdparm"} <= set(PACKAGES) and SSD_PURGE_METHODS


def test_one_version_table_for_discover_the_plan_and_the_evidence():
    from ansible_collections.diskproof.fleet.plugins.module_utils import _discover, _evidence
    from ansible_collections.diskproof.fleet.plugins.module_utils._tools import TOOL_VERSION_ARGS
    assert not hasattr(_discover, "TOOL_VERSION_ARGS")
    # the snapshot asks every tool but bonnie++ (its package manager says its version), in the table's order
    assert _evidence.VERSION_COMMANDS == (
        ("dd", ["dd", "--version"]), ("fio", ["fio", "--version"]), ("sysbench", ["sysbench", "--version"]),
        ("ioping", ["ioping", "-v"]), ("smartctl", ["smartctl", "--version"]), ("nvme", ["nvme", "version"]))
    assert [tool for tool, _argv in _evidence.VERSION_COMMANDS] == [tool for tool in TOOL_VERSION_ARGS if tool != "bonnie++"]
