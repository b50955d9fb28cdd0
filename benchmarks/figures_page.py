# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a section of docs/benchmarks.md, the current figures: run the benchmark its marker names and put what it
printed between the markers, with the date, the commit and the command's exit status.

    .venv/bin/python benchmarks/figures_page.py --list
    .venv/bin/python benchmarks/figures_page.py callback-scale merge-scale

A section is

    <!-- figures NAME FORMAT: COMMAND -->
    ...written here...
    <!-- end figures NAME -->

FORMAT is ``markdown`` (the output as it is, tables set apart by blank lines) or ``text`` (in a code block).
COMMAND runs from the repository root, without a shell. The rest of the page is never touched; what was measured
before goes to docs/benchmarks-history.md by hand, with its date, when a figure changes for a reason worth keeping.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
BEGIN = re.compile(r"^<!-- figures (?P<name>[a-z0-9-]+) (?P<format>markdown|text): (?P<command>.+) -->$")
END = "<!-- end figures %s -->"


class Section(NamedTuple):
    name: str
    format: str
    command: str
    begin: int  # index of the begin marker's line
    end: int    # index of the end marker's line


class PageError(ValueError):
    pass


def sections(lines: Sequence[str]) -> Dict[str, Section]:
    """Every section of the page by name; PageError for a begin marker without its end, or a name used twice."""
    found: Dict[str, Section] = {}
    for index, line in enumerate(lines):
        match = BEGIN.match(line)
        if not match:
            continue
        name = match.group("name")
        if name in found:
            raise PageError("section %s is on the page twice" % name)
        try:
            end = lines.index(END % name, index + 1)
        except ValueError:
            raise PageError("section %s has no end marker (%s)" % (name, END % name)) from None
        found[name] = Section(name, match.group("format"), match.group("command"), index, end)
    return found


def body(section: Section, output: str, returncode: int, when: str, commit: str) -> List[str]:
    """The lines between the markers: when and where it was measured, then the output."""
    status = "" if returncode == 0 else ", exit status %d" % returncode
    lines = ["", "_%s, commit %s%s: `%s`_" % (when, commit, status, section.command), ""]
    printed = output.rstrip("\n").split("\n") if output.strip() else ["(nothing printed)"]
    if section.format == "text":
        return lines + ["```text"] + printed + ["```", ""]
    previous = ""
    for line in printed:
        # A table needs a blank line between it and the text around it.
        if line.startswith("|") != previous.startswith("|") and previous.strip() and line.strip():
            lines.append("")
        lines.append(line)
        previous = line
    return lines + [""]


def replace(lines: Sequence[str], section: Section, new_body: Sequence[str]) -> List[str]:
    return list(lines[:section.begin + 1]) + list(new_body) + list(lines[section.end:])


def commit_of(root: Path) -> str:
    """HEAD, marked +changes when the code measured (plugins/, benchmarks/) differs from it."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"
    changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "plugins", "benchmarks"],
                             capture_output=True, text=True, check=False).stdout.strip()
    return head + (" +changes" if changed else "")


def run(section: Section, root: Path) -> subprocess.CompletedProcess:
    print("== %s: %s" % (section.name, section.command), file=sys.stderr)
    # The benchmark's own progress lines (stderr) go to the terminal; what it prints on stdout is the figures.
    return subprocess.run(shlex.split(section.command), cwd=root, stdout=subprocess.PIPE, text=True, check=False)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("names", nargs="*", help="sections to measure again")
    parser.add_argument("--list", action="store_true", help="print each section's name and command")
    parser.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    lines = args.page.read_text(encoding="utf-8").split("\n")
    found = sections(lines)
    if args.list or not args.names:
        for section in found.values():
            print("%-16s %s" % (section.name, section.command))
        return 0
    unknown = [name for name in args.names if name not in found]
    if unknown:
        parser.error("no section %s on %s (--list)" % (", ".join(unknown), args.page))
    commit = commit_of(ROOT)
    failed = False
    for name in args.names:
        section = sections(lines)[name]
        done = run(section, ROOT)
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = replace(lines, section, body(section, done.stdout, done.returncode, when, commit))
        temporary = args.page.with_name(args.page.name + ".tmp")
        temporary.write_text("\n".join(lines), encoding="utf-8")
        os.replace(temporary, args.page)
        failed = failed or done.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
