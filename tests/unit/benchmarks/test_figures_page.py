# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/benchmarks.md is written by the benchmark scripts: benchmarks/figures_page.py runs the command a section's
marker names and replaces only that section."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

PAGE = """# Figures

Prose the script never touches.

<!-- figures one markdown: {python} -c "print('a line'); print('| a | b |'); print('|---|---|'); print('| 1 | 2 |')" -->
old one
<!-- end figures one -->

Between the sections.

<!-- figures two text: {python} -c "import sys; print('plain'); sys.exit(3)" -->
old two
<!-- end figures two -->
""".format(python=sys.executable)


@pytest.fixture(scope="module", name="figures_page")
def fixture_figures_page(load_benchmark):
    return load_benchmark("figures_page")


def test_a_section_is_replaced_by_what_its_command_printed_and_nothing_else(figures_page, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    assert figures_page.main(["--page", str(page), "one"]) == 0
    text = page.read_text(encoding="utf-8")
    assert "old one" not in text and "old two" in text
    assert text.startswith("# Figures\n\nProse the script never touches.\n") and "\nBetween the sections.\n" in text
    lines = text.split("\n")
    begin, end = lines.index(PAGE.split("\n")[4]), lines.index("<!-- end figures one -->")
    written = lines[begin + 1:end]
    assert written[1].startswith("_") and "commit " in written[1] and "exit status" not in written[1]
    # The table is set apart from the line before it, as Markdown needs.
    assert written[3:] == ["a line", "", "| a | b |", "|---|---|", "| 1 | 2 |", ""]
    # Measuring again replaces the section, it does not add to it.
    assert figures_page.main(["--page", str(page), "one"]) == 0
    assert page.read_text(encoding="utf-8").split("\n").count("a line") == 1


def test_a_text_section_is_a_code_block_and_a_failed_command_says_so(figures_page, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    assert figures_page.main(["--page", str(page), "two"]) == 1
    text = page.read_text(encoding="utf-8")
    assert "exit status 3" in text and "```text\nplain\n```\n" in text and "old one" in text


def test_a_section_without_its_end_marker_is_refused(figures_page):
    lines = PAGE.replace("<!-- end figures two -->", "").split("\n")
    with pytest.raises(figures_page.PageError, match="two has no end marker"):
        figures_page.sections(lines)


def test_every_section_of_the_page_runs_a_benchmark_script(figures_page):
    found = figures_page.sections((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").split("\n"))
    assert {"callback-scale", "merge-scale", "module-cost", "parse-bounds"} <= set(found)
    for section in found.values():
        argv = shlex.split(section.command)
        assert argv[0] == ".venv/bin/python" and (ROOT / argv[1]).is_file(), section
        assert argv[1].startswith("benchmarks/"), section
