"""Units: explicit SI, IEC and busybox tables, decimal commas, and ParseError for anything unknown."""
from __future__ import annotations

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import units
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError, printable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("392", 392.0),
        ("2.74184", 2.74184),
        ("0,5", 0.5),  # de_DE decimal comma
        ("1,28096", 1.28096),
        ("6.0752e-05", 6.0752e-05),  # printf %g, as GNU dd prints short times
        ("5,5173e-05", 5.5173e-05),  # %g in de_DE
        ("1E+03", 1000.0),
    ],
)
def test_parse_decimal(text, expected):
    assert units.parse_decimal(text, "dd", "line") == expected


@pytest.mark.parametrize("text", ["", "abc", "1,2.3", "1.2,3", "-1", "1 000", "1e", ".5", "5.", "inf", "nan", "1e999"])
def test_parse_decimal_refuses_anything_else(text):
    with pytest.raises(ParseError) as caught:
        units.parse_decimal(text, "dd", "the line", 7)
    assert caught.value.tool == "dd"
    assert caught.value.line == "the line"
    assert caught.value.lineno == 7


@pytest.mark.parametrize(
    ("unit", "system", "factor"),
    [
        ("B", "si", 1),
        ("kB", "si", 1000),
        ("MB", "si", 10 ** 6),
        ("GB", "si", 10 ** 9),
        ("TB", "si", 10 ** 12),
        ("KiB", "iec", 1024),
        ("MiB", "iec", 2 ** 20),
        ("GiB", "iec", 2 ** 30),
        ("KB", "busybox", 1024),  # busybox: SI-looking letters, powers of 1024
        ("MB", "busybox", 2 ** 20),
        ("GB", "busybox", 2 ** 30),
        ("bytes", "plain", 1),
    ],
)
def test_byte_factor(unit, system, factor):
    assert units.byte_factor(unit, system, "dd", "line") == factor


@pytest.mark.parametrize(
    ("unit", "system"),
    [
        ("KB", "si"),  # GNU writes kilo as k; KB is not an SI unit: never guess
        ("kiB", "iec"),
        ("MiB", "si"),
        ("MB", "iec"),
        ("mb", "si"),
        ("XB", "si"),
        ("kB", "busybox"),
        ("MB", "nonsense"),
    ],
)
def test_byte_factor_refuses_unknown_units(unit, system):
    with pytest.raises(ParseError) as caught:
        units.byte_factor(unit, system, "dd", "1 bytes (1 %s) copied" % unit, 3)
    assert "'%s'" % unit in str(caught.value)
    assert "offending line 3: '1 bytes (1 %s) copied'" % unit in str(caught.value)


def test_to_bytes_uses_the_named_system():
    assert units.to_bytes("1,1", "GB", "si", "dd", "line") == pytest.approx(1.1e9, rel=1e-15)
    assert units.to_bytes("1.0", "GiB", "iec", "dd", "line") == 2 ** 30
    assert units.to_bytes("80.0", "MB", "busybox", "dd", "line") == 83886080


@pytest.mark.parametrize(("text", "places"), [("392", 0), ("52,4", 1), ("2.74184", 5), ("6.0752e-05", 4)])
def test_decimal_places(text, places):
    assert units.decimal_places(text) == places


def test_conversions():
    assert units.kib_to_bytes(17568) == 17989632
    assert units.us_to_ns(22912) == 22912000
    assert units.ms_to_s(5102) == 5.102
    assert units.sectors_to_bytes(131072) == 67108864


def test_parse_error_message_names_tool_expectation_and_line():
    error = ParseError("fio", "a JSON object", "fio: engine libaio not loadable", 1)
    assert str(error) == "fio output: expected a JSON object; offending line 1: 'fio: engine libaio not loadable'"
    assert ParseError("dd", "dd output").message == "dd output: expected dd output"
    assert str(ParseError("dd", "x", "abc")) == "dd output: expected x; offending line: 'abc'"


def test_printable_escapes_control_characters_and_shortens():
    assert printable("a\rb\x00c\udc80") == "a\\x0db\\x00c\\udc80"
    assert printable("Datensätze ein") == "Datensätze ein"
    assert printable("x" * 500, limit=10) == "x" * 10 + "..."
