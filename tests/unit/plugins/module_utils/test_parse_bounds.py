"""Bounded input: every parser (tools, system files and commands) and tool=auto take time proportional to the
size of their input.

bench_facts parses whatever a tool printed or whatever file src= names, and disk_facts, quiesce and evidence
parse lsblk, smartctl, /proc, systemctl ... on production hosts: a regex that backtracks (the issue's case: 22
lines of numbers took seconds in tool=auto, 30 lines minutes) or a search restarted at every line turns a few
kB of unlucky text into a hung module.

The adversarial shapes are benchmarks/parse_bounds.py's (one list for the benchmark and this test).
The test asserts growth, not speed: the CPU time for 1 MB (best of 3) may be at most GROWTH_LIMIT
times the CPU time for 100 kB (best of 5; linear is 10-15x, quadratic ~100x), or below GROWTH_FLOOR_S
(too fast for a ratio to mean anything). CPU time, not wall time: other work on a shared machine
does not count. Each parse is stopped after PARSE_TIMEOUT_S CPU seconds (SIGPROF interrupts re). The
1-second target for 1 MB is the benchmark's, printed in docs/parsers.md.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import (
    dd, kernel_log, lsblk, nvme, smartctl, sysbench, sysfs, tool_version, wipefs)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import detect_tool
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError, printable

SCRIPT = Path(__file__).resolve().parents[4] / "benchmarks" / "parse_bounds.py"
SMALL, LARGE = 100 * 1000, 1000 * 1000
GROWTH_LIMIT = 30.0
GROWTH_FLOOR_S = 0.03
LARGE_LIMIT_S = 5.0  # the benchmark's target is 1 s; two shared cores and a busy CI need margin
PARSE_TIMEOUT_S = 10.0


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("parse_bounds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _load_benchmark()


def _seconds(parser, text, repeat):
    try:
        return BENCH.best_seconds(parser, text, repeat, timeout=PARSE_TIMEOUT_S)
    except BENCH.TimedOut:
        pytest.fail("parse of %d characters still running after %.0f s" % (len(text), PARSE_TIMEOUT_S))


@pytest.mark.parametrize("lines", [22, 30])
def test_lines_of_numbers_are_detected_at_once(lines):
    """The issue's case: ioping -B raw lines (10 integers) and one line that is not one."""
    text = "1 2 3 4 5 6 7 8 9 10\n" * lines + "x\n"
    for parser in (detect_tool, lambda found: parse_output(found, "auto")):
        assert _seconds(parser, text, 1) < 0.5
    with pytest.raises(ParseError, match="tool=auto output"):
        detect_tool(text)
    assert detect_tool(text[:-2]) == "ioping"  # without the foreign line: raw ioping output


@pytest.fixture(scope="module")
def texts():
    """Each shape at both sizes, built once."""
    return {(shape, size): build(size) for shape, build in BENCH.SHAPES.items() for size in (SMALL, LARGE)}


@pytest.mark.parametrize("shape", sorted(BENCH.SHAPES))
@pytest.mark.parametrize("parser", sorted(BENCH.PARSERS))
def test_parse_time_grows_linearly_with_adversarial_input(parser, shape, texts):
    """Only ParseError may escape (best_seconds lets anything else through), and 10x the text
    takes at most GROWTH_LIMIT times as long."""
    parse = BENCH.PARSERS[parser]
    small = _seconds(parse, texts[(shape, SMALL)], 5)
    large = _seconds(parse, texts[(shape, LARGE)], 3)
    assert large <= max(GROWTH_LIMIT * small, GROWTH_FLOOR_S), \
        "%s on %s: %.4f s for 100 kB, %.4f s for 1 MB (x%.0f)" % (parser, shape, small, large, large / max(small, 1e-9))
    assert large <= LARGE_LIMIT_S


def test_numbers_longer_than_any_counter_are_parse_errors():
    """A count of thousands of digits is a ParseError naming the line, never int()'s ValueError."""
    digits = "9" * 5000
    for text, parse in (
        (digits + "+0 records in\n0+0 records out\n", dd.parse),
        ("1+0 records in\n1+0 records out\n" + digits + " bytes (1 kB) copied, 1 s, 1 kB/s\n", dd.parse),
        ("Operations performed:  %s Read, 0 Write, 0 Other = 0 Total\ntotal time: 1.0s\nBlock size 16Kb\n" % digits,
         sysbench.parse),
        ("%s bytes written in 1.00 seconds (1.00 MiB/sec).\n" % digits, sysbench.parse),
    ):
        with pytest.raises(ParseError):
            parse(text)


def test_system_values_of_thousands_of_digits_are_unknown():
    """A /sys value or a tool version of more digits than int() takes (4300) is unknown, not a ValueError."""
    assert sysfs.link_width("9" * 5000) is None
    assert sysfs.link_width("16") == 16
    assert sysfs.whole_number("9" * 5000) is None and sysfs.signed_number("-" + "9" * 5000) is None
    assert sysfs.whole_number("256") == 256 and sysfs.signed_number("-1") == -1
    assert tool_version.version_tuple("9" * 5000) is None
    assert tool_version.version_tuple("3." + "1" * 5000) is None
    assert tool_version.version_tuple("3.33") == (3, 33)


def test_json_nested_deeper_than_the_decoder_recurses_is_no_document():
    """JSON nested deeper than json's recursion: a ParseError of the source (the JSON tools), no message
    (journalctl lines), never RecursionError."""
    deep = "[" * 100000
    for parse in (lsblk.parse_lsblk, smartctl.parse_smartctl, nvme.parse_nvme_smart_log, wipefs.parse_wipefs_json):
        with pytest.raises(ParseError, match="JSON"):
            parse(deep)
    entry = '{"_SOURCE_MONOTONIC_TIMESTAMP": "12269410034", "MESSAGE": "nvme0n1: p1 p2"}'
    assert kernel_log.journal_kernel_text(deep + "\n" + entry + "\n") == ("[12269.410034] nvme0n1: p1 p2\n", 1)


def test_a_quoted_line_is_escaped_only_as_far_as_it_is_shown():
    """printable() of a 1 MB line: the first 400 characters escaped, then '...' (not 1 MB escaped)."""
    line = "\x00" * 1000000
    assert printable(line) == "\\x00" * 100 + "..."
    assert printable("a\tb") == "a\\x09b"
    assert printable("x" * 400) == "x" * 400
    assert printable("x" * 401) == "x" * 400 + "..."
