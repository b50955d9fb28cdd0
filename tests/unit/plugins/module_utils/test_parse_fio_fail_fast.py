# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio's fail-fast rules (max_latency=, rate_min=) into the record's error and the verdict slow: real captures of
fio 3.33 on a throttled loop device (tests/fixtures/fio/fio333-fail-fast-*.src.md say how)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fio_job import FAIL_FAST_PREFIX, fail_fast_lines, fail_fast_reason
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fio")


def record_of(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        _tool, (result,) = parse_output(handle.read())
    return make_record(result, test="fio_seq_write", target={"path": "/dev/loop0", "device": "loop0"},
                       params={"block_size": 65536, "direct": True})


@pytest.mark.parametrize(("fixture", "reason"), [
    ("fio333-fail-fast-max-latency.txt", "fail-fast: a write took 124.9 ms, over max_latency 50.0 ms"),
    ("fio333-fail-fast-rate-min.txt", "fail-fast: 1.05 MB/s, under rate_min 4.19 MB/s"),
])
def test_fail_fast_end_is_named_and_judged_slow(fixture, reason):
    record = record_of(fixture)
    # the reason first, fio's own error line after it
    assert record["error"].startswith(reason + " (")
    (entry,) = pipeline.build_report({"h1": [record]}, {"h1": {"status": "ok", "problems": []}}, {})["results"]
    assert (entry["verdict"], entry["reason"]) == ("slow", record["error"])


@pytest.mark.parametrize(("code", "line"), [
    # the same lines under another error code: not a fail-fast end
    (5, "fio: latency of 124945433 nsec exceeds specified max (50000000 nsec): /dev/loop0 write 65536 65536"),
    (110, "t: rate_min=4194304B/s not met, got 1048576B/s"),
    # another job's rate line
    (5, "other: rate_min=4194304B/s not met, got 1048576B/s"),
    (5, "fio: pid=1, err=5/file:io_u.c:1, func=io_u error, error=Input/output error"),
])
def test_other_ends_are_not_fail_fast(code, line):
    assert fail_fast_reason(code, "t", fail_fast_lines([line])) is None


def test_a_plain_error_stays_error():
    record = record_of("fio333-fail-fast-rate-min.txt")
    record["error"] = "fio: pid=1, err=5/file:io_u.c:1, func=io_u error, error=Input/output error"
    assert not record["error"].startswith(FAIL_FAST_PREFIX)
    (entry,) = pipeline.build_report({"h1": [record]}, {"h1": {"status": "ok", "problems": []}}, {})["results"]
    assert entry["verdict"] == "error"
