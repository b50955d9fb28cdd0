# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools a host runs, pure Python: how to ask each its version, and the preflight (is every program a plan
runs installed, in a version its commands work with?).

How to ask a tool its version is defined once, in ``TOOL_VERSION_ARGS`` (discover reports it, bench_plan checks
it, bench_run records it, the evidence snapshot keeps the raw answer); ``_version_probe.ask_version`` asks, with a
time limit, and ``_parse.tool_version`` reads the answer. A refusal also needs the package
that provides each tool on Debian/Ubuntu and on RHEL and derivatives, and the oldest version whose command line
the plan's argv uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ._parse.tool_version import version_tuple

# --version style arguments per tool. bonnie++ has no version option: any unknown option prints its usage,
# which ends in "Version: 2.00a" (_parse.tool_version reads it).
TOOL_VERSION_ARGS: Dict[str, List[str]] = {
    "dd": ["--version"],
    "fio": ["--version"],
    "sysbench": ["--version"],
    "bonnie++": ["--version"],
    "ioping": ["-v"],
    "smartctl": ["--version"],
    "nvme": ["version"],
}


@dataclass(frozen=True)
class Package:
    debian: str
    rhel: str
    rhel_repository: str = ""   # "" (the distribution's own repositories) or e.g. "EPEL"

    def advice(self) -> str:
        """'(Debian/Ubuntu: apt-get install fio; RHEL and derivatives: dnf install fio)'."""
        return "(Debian/Ubuntu: apt-get install %s; RHEL and derivatives: dnf install %s%s)" % (
            self.debian, self.rhel, ", from " + self.rhel_repository if self.rhel_repository else "")


# Every program a plan can run (the catalog's tools, the SSD purges) -> its package.
PACKAGES: Dict[str, Package] = {
    "dd": Package("coreutils", "coreutils"),
    "fio": Package("fio", "fio"),
    "sysbench": Package("sysbench", "sysbench", "EPEL"),
    "bonnie++": Package("bonnie++", "bonnie++", "EPEL"),
    "ioping": Package("ioping", "ioping", "EPEL"),
    "smartctl": Package("smartmontools", "smartmontools"),
    "blkdiscard": Package("util-linux", "util-linux"),
    "nvme": Package("nvme-cli", "nvme-cli"),
    "hdparm": Package("hdparm", "hdparm"),
    "sdparm": Package("sdparm", "sdparm"),
}

# The oldest versions the plan's command lines work with: sysbench 0.4 takes `--test=fileio`, not the
# `sysbench fileio` the plan runs; fio before 3.0 lacks steadystate= and the JSON fields the parser reads.
MINIMUM_VERSIONS: Dict[str, Tuple[int, ...]] = {
    "fio": (3, 0),
    "sysbench": (1, 0),
}


def _package(tool: str) -> Package:
    return PACKAGES.get(tool, Package(tool, tool))


def tool_problems(needed: Sequence[str], found: Mapping[str, Mapping[str, Any]],
                  version_args: Mapping[str, Sequence[str]] = ()) -> List[str]:
    """One refusal line per needed tool that is missing, reports no version, or is too old; [] when all are usable.

    ``found``: tool -> {path (None: not installed), version (None: none reported)}, as the bench_plan module probes
    them; a tool without version arguments (``version_args``, default: every tool has them) needs only a path.
    """
    problems: List[str] = []
    for tool in needed:
        package = _package(tool)
        entry = found.get(tool) or {}
        path, version = entry.get("path"), entry.get("version")
        if not path:
            problems.append("%s is not installed (not found in PATH or the sbin directories): install the package %s %s"
                            % (tool, package.debian, package.advice()))
            continue
        if version_args and tool not in version_args:
            continue   # nothing to ask it: present is all a refusal can check
        if not version:
            args = " ".join(version_args.get(tool, ["--version"])) if version_args else "--version"
            problems.append("%s at %s did not report a version (%s %s): it does not run here, or is not %s; reinstall "
                            "the package %s %s" % (tool, path, tool, args, tool, package.debian, package.advice()))
            continue
        minimum = MINIMUM_VERSIONS.get(tool)
        have = version_tuple(str(version))
        if minimum and (have is None or have < minimum):
            problems.append("%s %s at %s is older than %s, the oldest version the plan's commands work with: install a "
                            "newer package %s %s" % (tool, version, path, ".".join(map(str, minimum)), package.debian,
                                                     package.advice()))
    return problems
