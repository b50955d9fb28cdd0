"""timedatectl: the NTP offset of timesync-status (quoted from a public gist) and what show says of NTP (a real capture
of a systemd 252 host, tests/fixtures/evidence/, with its .src.md)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.timedatectl import (
    parse_timedatectl_show, parse_timesync_status,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "evidence")


def fixture(name: str) -> bytes:
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


# timedatectl timesync-status, quoted from https://gist.github.com/virnik0/958455467ed96b294a23bd4c702cf0a1
# (2022-02-18; the page shows the lines without timedatectl's right-aligned indentation).
TIMESYNC_STATUS = """\
Server: 10.43.16.1 (10.43.16.1)
Poll interval: 1min 4s (min: 32s; max 34min 8s)
Leap: normal
Version: 4
Stratum: 2
Reference: C37190C9
Precision: 4us (-18)
Root distance: 33.637ms (max: 5s)
Offset: +4.523ms
Delay: 221us
Jitter: 0
Packet count: 1
Frequency: +39,437ppm
"""


def test_timedatectl_offset_with_its_unit():
    offset = parse_timesync_status(TIMESYNC_STATUS)
    assert offset["offset_s"] == pytest.approx(0.004523)
    assert offset["source"] == "timedatectl timesync-status"
    indented = TIMESYNC_STATUS.replace("Offset: ", "       Offset: ")
    assert parse_timesync_status(indented)["offset_s"] == pytest.approx(0.004523)


def test_no_offset_line_is_no_offset():
    assert parse_timesync_status("") is None


def test_timedatectl_show_says_whether_the_clock_is_ntp_synchronized():
    found = parse_timedatectl_show(fixture("nspawn-timedatectl-show.txt").decode("utf-8"))
    assert found == {"ntp_synchronized": False, "ntp": False, "can_ntp": True, "time": "Wed 2026-11-25 23:33:09 UTC",
                     "timezone": "Etc/UTC", "local_rtc": False}
    assert parse_timedatectl_show("") is None
