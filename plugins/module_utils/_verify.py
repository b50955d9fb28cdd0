# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio_verify's data (docs/tests.md, "Data integrity"): what each block holds, and what a bad block holds instead.

Every block a verify pass writes is fio's ``verify=pattern`` with ``verify_pattern=0xGGGGGGGG%o``: a 12-byte unit
repeated from the block's first byte - the pass's generation (4 bytes, big-endian, as the hex is written) and the
block's own offset in the file or device (``%o``: 8 bytes, little-endian, fio lib/pattern.c) - so a block read back
says which pass wrote it and for which offset. The generation is the run's 16-bit tag (CRC-32 of the run id) and the
pass number: a block left by another run is never taken for this run's.

fio finds a pattern block that differs and names its first differing byte; it cannot tell why. ``classify`` reads
what the block holds now and says it:

- ``flipped``: most of it is this pass's block for this offset, some bits differ (or all of it reads back right
  now: the read fio checked returned other data, an unstable read);
- ``stale``: it is this offset's block of an earlier generation (an earlier pass, or another run): this pass's
  write never landed;
- ``misplaced``: it is a block written for another offset;
- ``not_written``: no block of a verify pass at all (zeros, another program's data).

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

import binascii
import mmap
import os
from collections import Counter
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ._parse.fio_verify import (KIND_FLIPPED, KIND_MISPLACED, KIND_NOT_WRITTEN, KIND_STALE, KIND_UNCLASSIFIED,
                                BadBlock, bad_blocks, integrity_summary)

UNIT_BYTES = 12
PASS_BITS = 16
MAX_PASSES = (1 << PASS_BITS) - 1
# Bad blocks read again and classified per pass; the rest keep fio's own finding (unclassified): a disk that reads
# back zeros everywhere would have the runner re-read the whole target.
CLASSIFY_LIMIT = 4096


def run_tag(run_id: str) -> int:
    return binascii.crc32(run_id.encode("utf-8")) & ((1 << (32 - PASS_BITS)) - 1)


def generation(run_id: str, pass_number: int) -> int:
    """The 32-bit generation pass_number (1, 2, ...) of run run_id writes into each block."""
    if not 1 <= pass_number <= MAX_PASSES:
        raise ValueError("a verify pass number is 1 to %d, not %r" % (MAX_PASSES, pass_number))
    return run_tag(run_id) << PASS_BITS | pass_number


def pattern_option(gen: int) -> str:
    """fio's verify_pattern for generation gen: the generation, then the block's offset."""
    return "0x%08x%%o" % gen


def _unit(gen: int, offset: int) -> bytes:
    return gen.to_bytes(4, "big") + offset.to_bytes(8, "little")


def expected_block(gen: int, offset: int, length: int) -> bytes:
    """The bytes fio writes for the block at offset of generation gen."""
    unit = _unit(gen, offset)
    return (unit * (length // UNIT_BYTES + 1))[:length]


def _describe_generation(found: int, gen: int) -> str:
    if found >> PASS_BITS == gen >> PASS_BITS:
        return "pass %d of this run" % (found & MAX_PASSES)
    return "generation 0x%08x (another run's verify pass)" % found


def classify(data: bytes, offset: int, gen: int) -> Tuple[str, str]:
    """(kind, what the block holds) of the block at offset that generation gen's verify found bad; data: the block
    as read again now."""
    want = expected_block(gen, offset, len(data))
    if data == want:
        return KIND_FLIPPED, "reads back right now: the verify's read returned other data (an unstable read)"
    whole = len(data) // UNIT_BYTES
    units = [data[index * UNIT_BYTES:(index + 1) * UNIT_BYTES] for index in range(whole)]
    right = sum(1 for unit in units if unit == want[:UNIT_BYTES])
    if whole and right * 2 >= whole:
        differing = [index for index in range(len(data)) if data[index] != want[index]]
        bits = sum(bin(data[index] ^ want[index]).count("1") for index in differing)
        return KIND_FLIPPED, "%d bit(s) in %d byte(s) differ from this pass's block, the first at byte %d" % (
            bits, len(differing), differing[0])
    if not any(data):
        return KIND_NOT_WRITTEN, "holds zeros: no block of this test"
    decoded = Counter((int.from_bytes(unit[:4], "big"), int.from_bytes(unit[4:], "little")) for unit in units)
    if decoded:
        (found_gen, found_offset), count = decoded.most_common(1)[0]
        # A pass number is never 0: a unit without one is not a verify block.
        if count * 2 >= whole and found_gen & MAX_PASSES:
            if found_offset == offset:
                return KIND_STALE, "holds %s for this offset: this pass's write never landed" % (
                    _describe_generation(found_gen, gen))
            # A pattern unit that names a block offset of the device, not 12 bytes of chance.
            if found_offset % 512 == 0:
                return KIND_MISPLACED, "holds the block %s wrote for offset %d" % (
                    "this pass" if found_gen == gen else _describe_generation(found_gen, gen), found_offset)
    return KIND_NOT_WRITTEN, "holds no block of this test (its first bytes: %s)" % data[:16].hex()


def read_block(path: str, offset: int, length: int) -> bytes:
    """length bytes at offset of path, past the page cache (O_DIRECT; a plain read where the filesystem refuses
    it, after asking the kernel to drop its cached pages)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
        direct = True
    except OSError:
        fd, direct = os.open(path, os.O_RDONLY), False
    try:
        if direct:
            buffer = mmap.mmap(-1, length)   # page aligned, as O_DIRECT needs
            try:
                got = os.preadv(fd, [buffer], offset)
                return bytes(buffer[:got])
            except OSError:
                pass        # EINVAL: not aligned for this device, or no O_DIRECT here after all
            finally:
                buffer.close()
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


Reader = Callable[[str, int, int], bytes]


def reclassified(blocks: Sequence[BadBlock], path: str, gen: int, read: Reader = read_block,
                 limit: int = CLASSIFY_LIMIT) -> List[BadBlock]:
    """blocks with each pattern block (up to limit) read again from path and classified; the rest as fio found."""
    result: List[BadBlock] = []
    done = 0
    for block in blocks:
        if block.check != "pattern" or block.kind != KIND_UNCLASSIFIED or done >= limit:
            result.append(block)
            continue
        done += 1
        try:
            data = read(path, block.offset, block.length)
        except OSError as error:
            result.append(BadBlock(block.file, block.offset, block.length, block.check, block.kind,
                                   "%s; not read again: %s" % (block.detail, error.strerror or error)))
            continue
        if len(data) != block.length:
            kind, what = KIND_NOT_WRITTEN, "reads back %d of its %d bytes" % (len(data), block.length)
        else:
            kind, what = classify(data, block.offset, gen)
        result.append(BadBlock(block.file, block.offset, block.length, block.check, kind,
                               "%s; read again: %s" % (block.detail, what)))
    return result


def apply(records: Sequence[Dict[str, object]], text: str, path: Optional[str], gen: int,
          read: Reader = read_block) -> None:
    """Each verify record of a pass's output (text) with its pattern blocks classified from what path holds now."""
    found, _rest = bad_blocks(text.splitlines())
    if not found or path is None:
        return
    for record in records:
        integrity = record.get("integrity")
        if not isinstance(integrity, dict) or not integrity.get("bad_blocks_total"):
            continue
        blocks = reclassified(found, path, gen, read)
        total = max(len(blocks), int(integrity.get("bad_blocks_total") or 0))
        record["integrity"] = integrity_summary(integrity.get("check"), integrity.get("verified_bytes"), total,
                                                blocks)
        classified = sum(1 for block in blocks if block.kind != KIND_UNCLASSIFIED)
        if classified < len(blocks):
            record.setdefault("warnings", []).append(  # type: ignore[union-attr]
                "%d of %d bad blocks classified (read again); the rest as fio found them" % (classified, len(blocks)))
