"""systemctl show: blocks, timestamps and time spans (the show captures of a systemd 252 host are read through
_quiesce in test_quiesce_systemd.py); list-units (a real capture in tests/fixtures/quiesce/)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import SourceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.systemctl import (
    parse_list_units, parse_systemctl_show, parse_systemd_time, parse_timespan, timer_entries,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "quiesce"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_show_blocks_one_per_unit_with_repeated_keys_kept():
    blocks = parse_systemctl_show(fixture("systemctl-show-252-before.txt"))
    assert len(blocks) > 1 and all("Id" in block for block in blocks)
    timers = [block for block in blocks if block["Id"].endswith(".timer") and block.get("TimersCalendar")]
    assert timers and all(timer_entries(block["TimersCalendar"]) for block in timers)
    assert parse_systemctl_show("A=1\nB=x=y\nA=2\n\n\nC=3\n") == [{"A": "1\n2", "B": "x=y"}, {"C": "3"}]


def test_show_refuses_what_is_not_key_value():
    with pytest.raises(SourceError, match="not systemctl show output"):
        parse_systemctl_show("Unit cron.service could not be found.")


def test_list_units_names():
    assert parse_list_units(fixture("systemctl-list-timers-active-252.txt"))[0] == "apt-daily-upgrade.timer"
    assert parse_list_units("") == []


@pytest.mark.parametrize("text, seconds", [("3h 37min 15.390283s", 13035.390283), ("1d", 86400.0), ("0", 0.0),
                                           ("20s", 20.0), ("500ms", 0.5), ("infinity", None)])
def test_parse_timespan(text, seconds):
    assert parse_timespan(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_parse_times_refuse_what_they_cannot_read():
    with pytest.raises(SourceError, match="not a systemd time span"):
        parse_timespan("soon")
    with pytest.raises(SourceError, match="TZ=UTC"):
        parse_systemd_time("Thu 2026-11-26 06:00:00 CET")
    assert parse_systemd_time("@1795921800") == 1795921800.0
    assert parse_systemd_time("") is None and parse_systemd_time("n/a") is None
