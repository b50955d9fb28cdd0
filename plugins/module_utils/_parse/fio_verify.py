# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio's verify failures (``verify=``, a ``verify_only`` pass or a write job with ``do_verify``): the blocks whose data
did not read back as written, one ``BadBlock`` each, from the lines fio prints outside its JSON (verify.c).

Every failure names the block fio asked for: ``... at file F offset O, length L (requested block: offset=R,
length=N ...)``; R and N are the block (fio's own ``offset``/``length`` before the parenthesis are wrong for
``verify=pattern`` in fio 3.33, which prints an offset as the length). The lines around it say what was wrong:

- ``verify=pattern``: ``fio: got pattern 'XX', wanted 'YY'. Bad bits N`` and ``fio: bad pattern block offset K``
  before it: the first byte (K, within the block) that differs, and its bits;
- a checksum (``crc32c`` ...): ``<check>: verify failed at ...``, then ``Expected CRC: ...`` / ``Received CRC: ...``:
  the data changed under a header that is still right (flipped bits);
- the header itself: ``verify: bad header offset X, wanted Y`` (the block written for offset X landed at Y: a
  misplaced write), ``verify: bad magic header ...`` (no fio block there at all: never written, or overwritten),
  ``verify: bad header rand_seed / numberio ...`` (a block of another pass: stale), ``bad header length``.

What the failure's kind is (``KIND_*``): what fio's message proves on its own - a checksum mismatch, a misplaced
header, a header of another pass, no header; a pattern mismatch is ``unclassified`` until the block is read again
and compared with each generation's pattern (the runner does that; a parsed output cannot). No Ansible imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

# fio's errno for a verify failure (EILSEQ): the job "failed" because the data was wrong, not the tool.
VERIFY_ERRNO = 84

KIND_FLIPPED = "flipped"          # the data changed: a checksum or the pattern differs in the block's own content
KIND_MISPLACED = "misplaced"      # the block holds what was written for another offset
KIND_STALE = "stale"              # the block holds an earlier pass's data: the write never landed
KIND_NOT_WRITTEN = "not_written"  # no block of this test there at all (zeros, another program's data)
KIND_UNCLASSIFIED = "unclassified"
KINDS = (KIND_FLIPPED, KIND_MISPLACED, KIND_STALE, KIND_NOT_WRITTEN, KIND_UNCLASSIFIED)

_BLOCK = r"at file (?P<file>.+?) offset [0-9]+, length [0-9]+ \(requested block: offset=(?P<offset>[0-9]+), " \
         r"length=(?P<length>[0-9]+)"
_CHECKSUM_FAILED = re.compile(r"(?P<check>[a-z0-9_]+): verify failed " + _BLOCK)
_HEADER_FAILED = re.compile(r"verify: (?P<what>bad (?:magic header|header [a-z_]+) [^ ]+, wanted [^ ]+) " + _BLOCK)
_GOT_PATTERN = re.compile(r"fio: got pattern '([0-9a-f]{2})', wanted '([0-9a-f]{2})'\. Bad bits ([0-9]+)")
_PATTERN_BYTE = re.compile(r"fio: bad pattern block offset ([0-9]+)")
_CRC = re.compile(r"(Expected|Received) CRC: ([0-9a-f]+)")
# Lines that belong to a failure and say nothing more than the failure does.
_NOISE = re.compile(r"fio: verify type mismatch \(|received data dumped as |expected data dumped as ")


@dataclass(frozen=True)
class BadBlock:
    """One block that did not verify: where, how long, what fio checked, what it found, what that proves."""

    file: str
    offset: int
    length: int
    check: str      # "pattern", "crc32c", "md5" ... or "header"
    kind: str       # a KINDS entry
    detail: str     # fio's own words, one line: "got pattern '01', wanted '02' at byte 3 (2 bad bits)"

    def as_dict(self) -> Dict[str, object]:
        return {"offset": self.offset, "length": self.length, "check": self.check, "kind": self.kind,
                "detail": self.detail}


# A record keeps this many bad blocks in full (a disk that reads back zeros everywhere would print one per block);
# bad_blocks_total and kinds count them all.
MAX_BAD_BLOCKS = 64


def integrity_summary(check: object, verified_bytes: object, total: int, blocks: Sequence[BadBlock]) -> Dict[str, object]:
    """A record's integrity: what was checked, how much read back, the bad blocks (the first MAX_BAD_BLOCKS in
    full) and how many of each kind."""
    kinds: Dict[str, int] = {}
    for block in blocks:
        kinds[block.kind] = kinds.get(block.kind, 0) + 1
    return {"check": check, "verified_bytes": verified_bytes, "bad_blocks_total": max(len(blocks), total),
            "bad_blocks": [block.as_dict() for block in blocks[:MAX_BAD_BLOCKS]], "kinds": kinds}


def _header_kind(what: str) -> str:
    if what.startswith("bad magic header"):
        return KIND_NOT_WRITTEN
    if what.startswith("bad header offset"):
        return KIND_MISPLACED
    if what.startswith(("bad header rand_seed", "bad header numberio")):
        return KIND_STALE
    return KIND_UNCLASSIFIED


def bad_blocks(lines: Sequence[str]) -> Tuple[List[BadBlock], List[str]]:
    """(every verify failure of fio's lines, in order; the lines that are not part of one)."""
    found: List[BadBlock] = []
    rest: List[str] = []
    pattern: Optional[str] = None        # the got/wanted line waiting for its block
    byte: Optional[str] = None
    for raw in lines:
        line = raw.strip()
        match = _GOT_PATTERN.fullmatch(line)
        if match:
            pattern = "got 0x%s, wanted 0x%s (%s bit(s) differ)" % match.groups()
            continue
        match = _PATTERN_BYTE.fullmatch(line)
        if match:
            byte = match.group(1)
            continue
        match = _CRC.match(line)
        if match and found and found[-1].check != "header":
            last = found[-1]
            found[-1] = BadBlock(last.file, last.offset, last.length, last.check, last.kind,
                                 "%s; %s CRC %s" % (last.detail, match.group(1).lower(), match.group(2)))
            continue
        if _NOISE.search(line):
            continue
        match = _CHECKSUM_FAILED.match(line)
        if match:
            check = match.group("check")
            if check == "pattern":
                detail = "pattern differs at byte %s of the block: %s" % (byte if byte is not None else "?",
                                                                          pattern or "fio printed no byte")
                kind = KIND_UNCLASSIFIED
            else:
                detail, kind = "%s of the data differs" % check, KIND_FLIPPED
            found.append(BadBlock(match.group("file"), int(match.group("offset")), int(match.group("length")), check,
                                  kind, detail))
            pattern = byte = None
            continue
        match = _HEADER_FAILED.match(line)
        if match:
            found.append(BadBlock(match.group("file"), int(match.group("offset")), int(match.group("length")), "header",
                                  _header_kind(match.group("what")), match.group("what")))
            continue
        rest.append(raw)
    return found, rest
