"""chronyc tracking: the clock's offset from NTP time (quoted from a public page, and real outputs published on
powersj.io: tests/fixtures/evidence/, each with a .src.md)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.chronyc import (
    chronyc_unsynchronised, parse_chronyc_tracking,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "evidence")


def fixture(name: str) -> bytes:
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


# chronyc tracking on Ubuntu, quoted from http://chinasem.cn/article/931648 (2024-04-24).
CHRONYC_TRACKING = """\
Reference ID    : AC1005E7 (ntpxx)
Stratum         : 12
Ref time (UTC)  : Tue Apr 23 07:24:09 2024
System time     : 0.000001974 seconds slow of NTP time
Last offset     : -0.000000769 seconds
RMS offset      : 49509376.000000000 seconds
Frequency       : 1.125 ppm slow
Residual freq   : -0.000 ppm
Skew            : 0.040 ppm
Root delay      : 0.000241462 seconds
Root dispersion : 0.011518663 seconds
Update interval : 65.2 seconds
Leap status     : Normal
"""


def test_chronyc_system_time_slow_is_a_negative_offset():
    offset = parse_chronyc_tracking(CHRONYC_TRACKING)
    assert offset["offset_s"] == pytest.approx(-0.000001974)
    assert offset["line"] == "System time     : 0.000001974 seconds slow of NTP time"
    assert offset["source"] == "chronyc tracking" and offset["meaning"] == "this host's clock minus NTP time"


def test_real_outputs_synchronised_and_not():
    synced = fixture("chronyc-tracking-synchronised.txt").decode()
    assert parse_chronyc_tracking(synced)["offset_s"] == pytest.approx(-0.000669840)
    assert chronyc_unsynchronised(synced) is None
    unsynced = fixture("chronyc-tracking-unsynchronised.txt").decode()
    assert parse_chronyc_tracking(unsynced) is None
    assert chronyc_unsynchronised(unsynced) == "Leap status     : Not synchronised"


def test_no_offset_line_is_no_offset():
    assert parse_chronyc_tracking("506 Cannot talk to daemon\n") is None
