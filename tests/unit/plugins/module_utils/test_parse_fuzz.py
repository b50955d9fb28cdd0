"""Property-based test of all five parsers (fio: JSON, normal and terse text) and tool=auto: fragments
of every real fixture, mutated (truncation, line deletion/duplication, digit replacement, unit
swapping, random unicode, lines of other tools, JSON type swaps for fio), pure random text, and dd's
direction inference from shell transcripts.

Whatever the input, only ParseError may escape, and every record returned has finite, non-negative
numbers. 12,400 examples in all (see MAX_EXAMPLES), derandomized so CI runs the same inputs every
time, no deadline (the machine may be busy); the whole file takes well under a minute.
"""
from __future__ import annotations

import copy
import json
import math
import os
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import fio_text
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import detect_tool
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.registry import TOOLS

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
MAX_EXAMPLES = {
    "dd": 1500, "fio": 1200, "fio_json": 1000, "fio_text": 1000, "sysbench": 1500, "bonnie": 1500, "ioping": 1500,
    "auto": 1500, "random": 500, "dd_direction": 600, "dd_command": 600,
}
TOTAL_EXAMPLES = sum(MAX_EXAMPLES.values())

UNITS = ["B", "kB", "KB", "MB", "GB", "KiB", "MiB", "GiB", "TiB", "b", "Kb", "Mb", "Gb", "Tb", "mb", "k", "m", "g",
         "K", "M", "G", "ns", "us", "ms", "s", "min", "hour", "%", "+++++", "+++", "bytes", "seconds", "secs", "xB"]
NUMBERS = ["0", "0.00", "1", "18446744073709.55", "9" * 30, "9" * 400, "1e999", "1,5", "-1", ".5", "5.", "NaN", "inf",
           "4294967296", "0.0000001", "+++++", ""]
JSON_VALUES = [None, True, False, 0, -1, 1.5, 2 ** 70, -(2 ** 70), "x", "", "1.0", [], [1, 2], {}, {"a": 1},
               float("nan"), float("inf")]


def _read(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read()


def _fixtures(tool):
    directory = os.path.join(FIXTURES, tool)
    return [_read(os.path.join(directory, name)) for name in sorted(os.listdir(directory)) if not name.endswith(".src.md")]


TEXTS = {tool: _fixtures(tool) for tool in TOOLS}
ALL_LINES = sorted({line for texts in TEXTS.values() for text in texts for line in text.split("\n") if line.strip()})


def _json_only(text):
    """Whether text is one JSON document and nothing else (a capture with fio's stderr after its JSON is not)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


FIO_DOCS = [text for text in TEXTS["fio"] if text.lstrip().startswith("{") and _json_only(text)]
# fio's normal and terse output (fio_text): mutated on their own too, not only as part of every fio fixture
TEXTS["fio_text"] = [text for text in TEXTS["fio"] if fio_text.recognise(text) and '"jobs"' not in text]

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_numbers(value, where="record"):
    """Every number in a record is finite and >= 0 (booleans are not numbers here)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, "%s.%s" % (where, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            _check_numbers(item, "%s[%d]" % (where, position))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        assert math.isfinite(value) and value >= 0, (where, value)


def _parse_and_check(text, tool):
    """Parse; only ParseError may escape; every record it gives is sound."""
    try:
        found, results = parse_output(text, tool)
    except ParseError as error:
        assert error.tool in TOOLS + ("tool=auto",)
        assert str(error)  # the message can be built (tool, expected, escaped line)
        event("%s: ParseError" % tool)
        return None
    event("%s: records" % tool)
    assert found in TOOLS
    assert results
    for result in results:
        record = make_record(result)
        _check_numbers({key: record[key] for key in ("job", "metrics", "bytes", "seconds")})
        assert all(isinstance(text, str) for text in record["warnings"])
        assert record["error"] is None or isinstance(record["error"], str)
    return found


@st.composite
def mutated(draw, tools):
    """A real output of one of tools, then 0 to 5 mutations."""
    tool = draw(st.sampled_from(tools))
    lines = draw(st.sampled_from(TEXTS[tool])).split("\n")
    for _step in range(draw(st.integers(min_value=0, max_value=5))):
        kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "digits", "unit", "unicode", "splice", "noop"]))
        lines = lines or [""]
        position = draw(st.integers(min_value=0, max_value=max(0, len(lines) - 1)))
        line = lines[position] if lines else ""
        if kind == "truncate":
            text = "\n".join(lines)
            text = text[:draw(st.integers(min_value=0, max_value=len(text)))]
            lines = text.split("\n")
        elif kind == "delete" and lines:
            del lines[position]
        elif kind == "duplicate" and lines:
            lines.insert(position, line)
        elif kind == "digits":
            digits = [index for index, char in enumerate(line) if char.isdigit()]
            if digits:
                at = draw(st.sampled_from(digits))
                lines[position] = line[:at] + draw(st.sampled_from(NUMBERS)) + line[at + 1:]
        elif kind == "unit":
            present = [unit for unit in UNITS if unit in line]
            if present:
                lines[position] = line.replace(draw(st.sampled_from(present)), draw(st.sampled_from(UNITS)), 1)
        elif kind == "unicode":
            at = draw(st.integers(min_value=0, max_value=len(line)))
            lines[position] = line[:at] + draw(st.text(max_size=12)) + line[at:]
        elif kind == "splice":
            lines.insert(position, draw(st.sampled_from(ALL_LINES)))
    return "\n".join(lines)


def _swap(doc, draw):
    """Replace one value somewhere in a JSON document by one of another type."""
    path = []
    node = doc
    while isinstance(node, (dict, list)) and node and draw(st.integers(min_value=0, max_value=5)):
        keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        key = draw(st.sampled_from(keys))
        path.append((node, key))
        node = node[key]
    if path:
        parent, key = path[-1]
        parent[key] = copy.deepcopy(draw(st.sampled_from(JSON_VALUES)))
    return doc


@st.composite
def fio_json_swapped(draw):
    text = draw(st.sampled_from(FIO_DOCS))
    doc = json.loads(text)
    for _swap_number in range(draw(st.integers(min_value=1, max_value=4))):
        doc = _swap(doc, draw)
    return json.dumps(doc)


@pytest.mark.parametrize("tool", ["dd", "fio", "sysbench", "bonnie", "ioping"])
def test_mutated_real_outputs_give_sound_records_or_parse_error(tool):
    @settings(max_examples=MAX_EXAMPLES[tool], **SETTINGS)
    @given(mutated([tool]))
    def check(text):
        _parse_and_check(text, tool)

    check()


@settings(max_examples=MAX_EXAMPLES["fio_text"], **SETTINGS)
@given(mutated(["fio_text"]))
def test_mutated_fio_normal_and_terse_outputs_give_sound_records_or_parse_error(text):
    _parse_and_check(text, "fio")


@settings(max_examples=MAX_EXAMPLES["fio_json"], **SETTINGS)
@given(fio_json_swapped())
def test_fio_json_type_swaps_give_sound_records_or_parse_error(text):
    _parse_and_check(text, "fio")


@settings(max_examples=MAX_EXAMPLES["auto"], **SETTINGS)
@given(mutated(TOOLS))
def test_auto_detection_of_mutated_outputs(text):
    try:
        tool = detect_tool(text)
    except ParseError:
        tool = None
    found = _parse_and_check(text, "auto")
    assert found is None or found == tool


@settings(max_examples=MAX_EXAMPLES["random"], **SETTINGS)
@given(st.one_of(st.text(max_size=400), st.lists(st.sampled_from(ALL_LINES + ["", " ", "\r", "\t"]), max_size=30)
                 .map("\n".join)))
def test_random_text_and_shuffled_real_lines(text):
    for tool in ("auto",) + TOOLS:
        _parse_and_check(text, tool)


DD_ARGVS = [None, [], ["dd", "if=/dev/zero", "of=/srv/f"], ["dd", "if=/srv/f", "of=/dev/null"], ["dd", "if=a", "of=b"],
            ["dd", "bs=1M", "oflag=direct"], ["dd", "if=/dev/zero", "of=/dev/null"]]


@settings(max_examples=MAX_EXAMPLES["dd_direction"], **SETTINGS)
@given(mutated(["dd"]), st.sampled_from([None, "read", "write", "copy"]), st.sampled_from(DD_ARGVS))
def test_dd_direction_never_drops_or_invents_a_rate(text, direction, argv):
    """Whatever the text's command lines, the stated direction or argv: the rate is kept in
    transfer_bytes_per_s, and read/write hold that same rate or nothing."""
    try:
        _tool, results = parse_output(text, "dd", direction, argv)
    except ParseError:
        return
    for result in results:
        metrics = result["metrics"]
        rate = metrics["transfer_bytes_per_s"]
        if result["bytes"] is not None and result["seconds"]:
            assert rate == result["bytes"] / result["seconds"]
        for key in ("read_bytes_per_s", "write_bytes_per_s"):
            assert metrics[key] is None or metrics[key] == rate
        if direction is not None and rate is not None:
            assert metrics[("write" if direction == "write" else "read") + "_bytes_per_s"] == rate
        _check_numbers(metrics)


_SHELL = st.text(alphabet="dd if=of=/\\\"' ;|&<>()`#2x3D\t", max_size=80)


@settings(max_examples=MAX_EXAMPLES["dd_command"], **SETTINGS)
@given(st.one_of(_SHELL, st.sampled_from(ALL_LINES), st.text(max_size=200)))
def test_dd_command_lines_are_read_or_ignored_never_crash(line):
    from ansible_collections.diskproof.fleet.plugins.module_utils._parse import dd
    for argv in dd.commands_from_line(line):
        assert argv[0].endswith("dd") and len(argv) > 1
        assert all("=" in operand for operand in argv[1:])
        assert dd.direction_from_argv(argv) in (None, "read", "write", "copy")


def test_example_budget_is_at_least_ten_thousand():
    assert TOTAL_EXAMPLES >= 10000


def test_fixture_corpus_is_the_real_one():
    counts = {tool: len(texts) for tool, texts in TEXTS.items()}
    assert sum(counts.values()) >= 60 and min(counts.values()) >= 10, counts
    assert len(FIO_DOCS) >= 8


_STARTED = []


@pytest.fixture(autouse=True, scope="module")
def _clock():
    _STARTED.append(time.monotonic())
    yield


def test_zz_report_elapsed_time(capsys):
    """Runs last in this file (pytest keeps file order): prints how long the file took."""
    with capsys.disabled():
        print("\ntest_parse_fuzz.py: %d hypothesis examples, %.1f s" % (TOTAL_EXAMPLES, time.monotonic() - _STARTED[0]))
