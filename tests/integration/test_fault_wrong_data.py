"""Planted wrong-data faults found through the real playbook (lab `lcorrupt`, lcorrupt_lab.yml): issue 33's integrity.

One host, three raw 64 MiB lab disks granted raw_write through the real interlock. d1 gets a bit of byte 40 MiB + 100
flipped after each write to its block; on d2 the 64 KiB at 32 MiB keep their first data and every later write is
undone (SPEC `flip_byte_at`, `stale_region_at`: lab features, tools/labkit/datafault.py works on the backing image
while the test runs). validate.yml runs fio_verify (two write-and-verify passes). Proves: d1 is `corrupt` in both
passes, one flipped block at 40 MiB, the reason naming the kind and the offset; d2 passes pass 1 and is `corrupt` in
pass 2 with 16 blocks holding pass 1's data (writes that never landed) at 32 MiB; the healthy d0 of the same run
passes both; report.md lists the bad blocks; `status` counts the planted faults; `down` stops the process.
Root only.
"""
from __future__ import annotations

import datetime
import json
import re
import time
from pathlib import Path

from labhelpers import REPO, inventory_path, lab, lab_disks, needs_root, playbook, raw_write_grant

SPEC = Path(__file__).resolve().parent / "lcorrupt_lab.yml"
LAB = "lcorrupt"
HOST = "lcorrupt-n01"
MIB = 1 << 20
FLIP_AT = 40 * MIB + 100
STALE_AT = 32 * MIB
STATE = Path("/dev/shm/diskproof-lab-%s/datafaults" % LAB)

pytestmark = needs_root


def fault_state(index):
    return json.loads((STATE / ("%s-d%d.json" % (HOST, index))).read_text())


def finished_at(entry):
    return datetime.datetime.strptime(entry["record"]["finished"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def test_flipped_bits_and_writes_that_never_landed_are_corrupt_and_told_apart(tmp_path):
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        disks = lab_disks(LAB, HOST)
        devices, allow = (list(column) for column in zip(*(raw_write_grant(LAB, disk) for disk in disks)))
        assert disks[1]["flip_byte_at"] == FLIP_AT and disks[2]["stale_region_at"] == STALE_AT
        started = time.monotonic()
        returncode, output, report = playbook(inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path, {
            "diskproof_targets": [{"device": device, "mode": "raw_write"} for device in devices],
            "diskproof_destructive": True, "diskproof_destructive_allow": allow, "benchmark_tests": ["fio_verify"],
            "quiesce_idle_window": 1}, timeout=900)
        took = time.monotonic() - started
        assert report is not None, output
        entries = {(entry["record"]["target"]["path"], entry["test"]): entry for entry in report["results"]
                   if entry.get("record")}
        for key, entry in sorted(entries.items()):
            print("%s %s: %s %s" % (key[0], key[1], entry["verdict"], entry["reason"]))
        flips, stale = fault_state(1), fault_state(2)
        # Time to detection: from the first planted fault to the end of the pass that reported it (whole seconds).
        print("planted: %d flips, found %.0f s after the first; %d put-backs, found %.0f s after the first; "
              "validate.yml %.0f s" % (
                  flips["flips"], finished_at(entries[(devices[1], "fio_verify_1of2")]) - flips["first_flip"],
                  stale["put_backs"], finished_at(entries[(devices[2], "fio_verify_2of2")]) - stale["first_put_back"],
                  took))
        # The healthy disk: both passes read back every block.
        for test in ("fio_verify_1of2", "fio_verify_2of2"):
            healthy = entries[(devices[0], test)]
            assert healthy["verdict"] == "pass", healthy
            assert "64 MiB read back as written (fio verify=pattern)" in healthy["notes"], healthy
        # d1: the flipped bit, in each pass (the planter flips it after each write lands).
        for test in ("fio_verify_1of2", "fio_verify_2of2"):
            flipped = entries[(devices[1], test)]
            assert flipped["verdict"] == "corrupt", flipped
            assert flipped["reason"].startswith("1 bad block in 64 MiB read back (fio verify=pattern): 1 with changed "
                                                "data (flipped bits); the first at offset %d, 4096 bytes: pattern "
                                                "differs at byte 100 of the block" % (40 * MIB)), flipped["reason"]
            assert flipped["reason"].endswith("read again: 1 bit(s) in 1 byte(s) differ from this pass's block, the "
                                              "first at byte 100"), flipped["reason"]
        assert flips["flips"] >= 2
        # d2: pass 1 lands, pass 2's writes to the region are undone: 16 blocks hold pass 1's data.
        assert entries[(devices[2], "fio_verify_1of2")]["verdict"] == "pass"
        never_landed = entries[(devices[2], "fio_verify_2of2")]
        assert never_landed["verdict"] == "corrupt", never_landed
        assert never_landed["reason"].startswith(
            "16 bad blocks in 64 MiB read back (fio verify=pattern): 16 holding an earlier pass's data (writes that "
            "never landed); the first at offset %d, 4096 bytes: " % STALE_AT), never_landed["reason"]
        assert never_landed["reason"].endswith("holds pass 1 of this run for this offset: this pass's write never "
                                               "landed"), never_landed["reason"]
        blocks = never_landed["record"]["integrity"]["bad_blocks"]
        assert [block["offset"] for block in blocks] == [STALE_AT + 4096 * number for number in range(16)]
        assert stale["put_backs"] >= 1 and stale["stale_region_kept"] is True
        # validate.yml reports; the report fails, and report.md lists every bad block.
        assert returncode == 0 and report["summary"]["passed"] is False and report["summary"]["counts"]["corrupt"] == 3
        markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
        assert "## Bad blocks" in markdown
        assert "| %s | fio_verify_2of2 | %s | %d | 4096 | stale:" % (HOST, devices[2], STALE_AT) in markdown
        status = lab("status", "--name", LAB).stdout
        assert re.search(r"a bit of byte %d flipped after each write to its block, \d+ so far" % FLIP_AT, status), status
    finally:
        lab("down", "--name", LAB)
    assert not Path("/dev/shm/diskproof-lab-%s" % LAB).exists()
