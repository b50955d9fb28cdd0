# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio verify failures into the record's integrity (module_utils/_parse/fio_verify.py through fio.py): real captures
of fio 3.33 verifying a loop device with planted faults (tests/fixtures/fio/fio333-verify-*.src.md say how)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import fio, fio_verify
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fio_verify import KINDS, bad_blocks
from ansible_collections.diskproof.fleet.plugins.plugin_utils._aggregate import INTEGRITY_KIND_TEXT
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fio")
MIB = 1 << 20


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def record_of(name):
    _tool, (result,) = parse_output(fixture(name))
    return make_record(result)


def test_pattern_verify_finds_each_planted_block():
    record = record_of("fio333-verify-pattern-three-faults.txt")
    integrity = record["integrity"]
    # 1 flipped byte at 1 MiB + 100, the block of 2 MiB copied to 1 MiB + 4 KiB, 16 blocks of pass 1 at 3 MiB.
    assert [block["offset"] for block in integrity["bad_blocks"]] == [MIB, MIB + 4096] + [3 * MIB + 4096 * n for n in range(16)]
    assert {block["length"] for block in integrity["bad_blocks"]} == {4096}
    assert integrity["bad_blocks"][0] == {
        "offset": MIB, "length": 4096, "check": "pattern", "kind": "unclassified",
        "detail": "pattern differs at byte 100 of the block: got 0x10, wanted 0x00 (1 bit(s) differ)"}
    assert integrity["bad_blocks"][1]["detail"] == "pattern differs at byte 5 of the block: got 0x00, wanted 0x10 (1 bit(s) differ)"
    assert integrity["bad_blocks"][2]["detail"] == "pattern differs at byte 3 of the block: got 0x01, wanted 0x02 (2 bit(s) differ)"
    assert (integrity["check"], integrity["verified_bytes"], integrity["bad_blocks_total"], integrity["kinds"]) == (
        "pattern", 8 * MIB, 18, {"unclassified": 18})
    # The data was wrong, not the tool: no error; fio's verify lines are the integrity, not warnings.
    assert record["error"] is None
    assert not any("verify" in warning or "pattern" in warning for warning in record["warnings"]), record["warnings"]
    # verify_only fakes the write direction (runtime 0): no write rate; the read is what was verified.
    assert record["metrics"]["write_bytes_per_s"] is None
    assert record["metrics"]["read_bytes_per_s"] is not None


def test_checksum_and_header_failures_say_what_kind_they_are():
    integrity = record_of("fio333-verify-crc32c-three-faults.txt")["integrity"]
    assert integrity["bad_blocks"] == [
        {"offset": MIB, "length": 4096, "check": "crc32c", "kind": "flipped",
         "detail": "crc32c of the data differs; expected CRC 5ee26883; received CRC 3e826026"},
        {"offset": MIB + 4096, "length": 4096, "check": "header", "kind": "misplaced",
         "detail": "bad header offset 2097152, wanted 1052672"},
        {"offset": 3 * MIB, "length": 4096, "check": "header", "kind": "not_written",
         "detail": "bad magic header 0, wanted acca"},
    ]
    assert (integrity["bad_blocks_total"], integrity["kinds"]) == (3, {"flipped": 1, "misplaced": 1, "not_written": 1})


def test_a_verify_stopped_at_the_first_bad_block_says_how_far_it_read():
    record = record_of("fio333-verify-crc32c-stop-first.txt")
    integrity = record["integrity"]
    assert (integrity["verified_bytes"], integrity["bad_blocks_total"]) == (MIB + 4096, 1)
    assert integrity["bad_blocks"][0]["kind"] == "flipped"
    assert record["error"] is None   # EILSEQ is the finding: the bad block, not a tool failure


def test_a_clean_verify_has_integrity_without_bad_blocks():
    integrity = record_of("fio333-verify-pattern-clean.json")["integrity"]
    assert integrity == {"check": "pattern", "verified_bytes": 8 * MIB, "bad_blocks_total": 0, "bad_blocks": [],
                         "kinds": {}}


@pytest.mark.parametrize("name", ["fio333-randread-4k-qd32.json", "fio333-write-fdatasync.json"])
def test_a_job_without_verify_has_no_integrity(name):
    assert record_of(name)["integrity"] is None
    (job,) = fio.parse(fixture(name))
    assert job.bad_blocks is None


def test_more_bad_blocks_than_a_record_keeps_are_counted():
    text = fixture("fio333-verify-pattern-three-faults.txt")
    block = ("fio: got pattern '01', wanted '02'. Bad bits 2\nfio: bad pattern block offset 3\n"
             "pattern: verify failed at file /dev/loop1 offset %d, length %d (requested block: offset=%d, length=4096, "
             "flags=88)\n")
    text += "".join(block % (offset, offset, offset) for offset in range(4 * MIB, 5 * MIB, 4096))   # 256 more
    _tool, (result,) = parse_output(text)
    integrity = make_record(result)["integrity"]
    assert integrity["bad_blocks_total"] == 18 + 256
    assert len(integrity["bad_blocks"]) == fio_verify.MAX_BAD_BLOCKS
    assert integrity["kinds"] == {"unclassified": 18 + 256}


def test_every_kind_is_in_the_schema_and_in_the_report_s_words():
    schema = json.loads((Path(__file__).resolve().parents[4] / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    block = schema["$defs"]["record"]["properties"]["integrity"]["properties"]["bad_blocks"]["items"]
    assert block["properties"]["kind"]["enum"] == list(KINDS)
    assert sorted(INTEGRITY_KIND_TEXT) == sorted(KINDS)


def test_lines_that_are_not_verify_failures_are_left_alone():
    lines = ["fio: pid=1, err=84/file:io_u.c:2152, func=io_u_sync_complete, error=Invalid",
             "crc32c: verify failed at file /dev/sdb offset 0, length 4096 (requested block: offset=0, length=4096, flags=88)",
             "       Expected CRC: 1", "       Received CRC: 2", "something else"]
    found, rest = bad_blocks(lines)
    assert [(block.offset, block.kind, block.detail) for block in found] == [
        (0, "flipped", "crc32c of the data differs; expected CRC 1; received CRC 2")]
    assert rest == [lines[0], lines[4]]
