# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units, spelled out: every human unit maps to an exact factor, or the caller gets a ParseError.

Which table applies is decided by the caller from the tool and its dialect, never from the
number: "MB" is 10**6 bytes in GNU dd (SI) but 2**20 bytes in busybox dd.
"""

from __future__ import annotations

import math
import re

from .errors import ParseError

KIB = 1024
NS_PER_US = 1000
MS_PER_S = 1000
SECTOR_BYTES = 512

# SI prefixes as GNU coreutils prints them (human_SI | human_B): lower-case k for kilo.
SI_BYTES = {
    "B": 1,
    "kB": 10 ** 3,
    "MB": 10 ** 6,
    "GB": 10 ** 9,
    "TB": 10 ** 12,
    "PB": 10 ** 15,
    "EB": 10 ** 18,
    "ZB": 10 ** 21,
    "YB": 10 ** 24,
    "RB": 10 ** 27,
    "QB": 10 ** 30,
}

# IEC binary prefixes, as GNU coreutils >= 8.24 prints them next to the SI figure.
IEC_BYTES = {
    "B": 1,
    "KiB": 2 ** 10,
    "MiB": 2 ** 20,
    "GiB": 2 ** 30,
    "TiB": 2 ** 40,
    "PiB": 2 ** 50,
    "EiB": 2 ** 60,
    "ZiB": 2 ** 70,
    "YiB": 2 ** 80,
    "RiB": 2 ** 90,
    "QiB": 2 ** 100,
}

# busybox make_human_readable_str(): powers of 1024 written with SI-looking letters.
BUSYBOX_BYTES = {
    "B": 1,
    "KB": 2 ** 10,
    "MB": 2 ** 20,
    "GB": 2 ** 30,
    "TB": 2 ** 40,
    "PB": 2 ** 50,
    "EB": 2 ** 60,
    "ZB": 2 ** 70,
    "YB": 2 ** 80,
}

# BSD dd and coreutils 5 print a plain integer rate.
PLAIN_BYTES = {
    "bytes": 1,
}

# sysbench 0.4/0.5 (and the 1.0 prepare banner) write binary sizes as "Kb", "Mb", "Gb": "13.895Mb/sec"
# is 13.895 x 2**20 bytes per second (bytes read / seconds / 1048576), not megabits nor 10**6 bytes.
SYSBENCH_LEGACY_BYTES = {
    "b": 1,
    "B": 1,
    "Kb": 2 ** 10,
    "Mb": 2 ** 20,
    "Gb": 2 ** 30,
    "Tb": 2 ** 40,
    "Pb": 2 ** 50,
    "Eb": 2 ** 60,
}

# bonnie++ counts in KiB: CSV and 1.x text rates are "K/sec" (1024 bytes), file sizes "300M", "4G" are
# MiB and GiB (-s is in MiB); the 1.98+ text table suffixes rates with k, m, g: KiB/s, MiB/s, GiB/s.
BONNIE_SIZE_BYTES = {
    "": 2 ** 20,  # -s without a unit is MiB
    "K": 2 ** 10,
    "M": 2 ** 20,
    "G": 2 ** 30,
    "T": 2 ** 40,
    "P": 2 ** 50,
}
BONNIE_RATE_BYTES = {
    "": 2 ** 10,  # "K/sec" column of the 1.03-1.97 text table and every CSV rate
    "k": 2 ** 10,
    "m": 2 ** 20,
    "g": 2 ** 30,
    "t": 2 ** 40,
}

# ioping 0.x prints "mb/s" for (bytes / 2**20) per second; 1.x prints IEC units (see IEC_BYTES).
IOPING_LEGACY_BYTES = {
    "mb": 2 ** 20,
}

SYSTEMS = {
    "si": SI_BYTES,
    "iec": IEC_BYTES,
    "busybox": BUSYBOX_BYTES,
    "plain": PLAIN_BYTES,
    "sysbench": SYSBENCH_LEGACY_BYTES,
    "bonnie_size": BONNIE_SIZE_BYTES,
    "bonnie_rate": BONNIE_RATE_BYTES,
    "ioping_legacy": IOPING_LEGACY_BYTES,
}

# Decimal count suffixes (ioping print_int: "27.5 k requests", "9.12 k iops" are 10**3).
COUNT_SUFFIXES = {
    "": 1,
    "k": 10 ** 3,
    "M": 10 ** 6,
    "G": 10 ** 9,
    "T": 10 ** 12,
    "P": 10 ** 15,
    "E": 10 ** 18,
}

# Durations to nanoseconds: sysbench "ms", bonnie++ latency "us"/"ms"/"s", ioping "ns" to "hour".
NS_PER_TIME_UNIT = {
    "ns": 1,
    "us": 1000,
    "ms": 1000 * 1000,
    "s": 1000 * 1000 * 1000,
    "min": 60 * 1000 * 1000 * 1000,
    "hour": 3600 * 1000 * 1000 * 1000,
}
NS_PER_S = NS_PER_TIME_UNIT["s"]
MAX_NUMBER_DIGITS = 40  # longer digit strings are not tool output (and int() refuses > 4300 digits)

_DECIMAL = re.compile(r"^[0-9]+(?:[.,][0-9]+)?(?:[eE][-+]?[0-9]+)?$")


def parse_decimal(text: str, tool: str, line: str, lineno: int | None = None) -> float:
    """Parse an unsigned decimal written with a point or a decimal comma ("0,5"), %g exponent allowed."""
    if not _DECIMAL.match(text):
        raise ParseError(tool, "a decimal number, got '%s'" % text[:60], line, lineno)
    value = float(text.replace(",", "."))
    if not math.isfinite(value):
        raise ParseError(tool, "a finite number, got '%s'" % text[:60], line, lineno)
    return value


def decimal_places(text: str) -> int:
    """Digits after the decimal separator of a printed number ("52,4" -> 1, "392" -> 0)."""
    mantissa = re.split(r"[eE]", text)[0]
    for sep in (".", ","):
        if sep in mantissa:
            return len(mantissa.split(sep, 1)[1])
    return 0


def byte_factor(unit: str, system: str, tool: str, line: str, lineno: int | None = None) -> int:
    """Bytes per unit in the named system ("si", "iec", "busybox", "plain"); unknown unit -> ParseError."""
    table = SYSTEMS.get(system)
    if table is None or unit not in table:
        raise ParseError(tool, "a known %s byte unit, got '%s'" % (system, unit[:60]), line, lineno)
    return table[unit]


def to_bytes(number: str, unit: str, system: str, tool: str, line: str, lineno: int | None = None) -> float:
    """Printed size ("1,1", "GB", "si") -> bytes."""
    return parse_decimal(number, tool, line, lineno) * byte_factor(unit, system, tool, line, lineno)


def kib_to_bytes(kib: float) -> float:
    """fio 2.x reports io_bytes and bw in KiB (1024 bytes)."""
    return kib * KIB


def us_to_ns(microseconds: float) -> float:
    """fio 2.x reports latencies in microseconds."""
    return microseconds * NS_PER_US


def ms_to_s(milliseconds: float) -> float:
    """fio reports runtimes in milliseconds."""
    return milliseconds / MS_PER_S


def sectors_to_bytes(sectors: int) -> int:
    """/sys/block/<dev>/stat counts 512-byte sectors whatever the device's logical block size."""
    return sectors * SECTOR_BYTES


# A plain unsigned decimal as the tools print it: the parsers' patterns capture it, parse_unsigned reads it.
UNSIGNED = r"[0-9]+(?:\.[0-9]+)?"
_UNSIGNED = re.compile("^%s$" % UNSIGNED)


def parse_unsigned(text: str, tool: str, line: str, lineno: int | None = None) -> float:
    """A plain unsigned decimal ("300.10", "16384"): point only, no exponent, at most 40 digits."""
    if len(text) > MAX_NUMBER_DIGITS or not _UNSIGNED.match(text):
        raise ParseError(tool, "an unsigned decimal number, got '%s'" % text[:60], line, lineno)
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(tool, "a finite number, got '%s'" % text[:60], line, lineno)
    return value


def count_factor(suffix: str, tool: str, line: str, lineno: int | None = None) -> int:
    """Multiplier of a decimal count suffix ("k" = 1000); unknown suffix -> ParseError."""
    if suffix not in COUNT_SUFFIXES:
        raise ParseError(tool, "a known count suffix (k, M, G, T), got '%s'" % suffix[:60], line, lineno)
    return COUNT_SUFFIXES[suffix]


def ns_per(unit: str, tool: str, line: str, lineno: int | None = None) -> int:
    """Nanoseconds per time unit (ns, us, ms, s, min, hour); unknown unit -> ParseError."""
    if unit not in NS_PER_TIME_UNIT:
        raise ParseError(tool, "a known time unit (ns, us, ms, s, min, hour), got '%s'" % unit[:60], line, lineno)
    return NS_PER_TIME_UNIT[unit]


def finite(value: float, tool: str, what: str, line: str, lineno: int | None = None) -> float:
    """value when it is a finite number >= 0, else ParseError (a product or quotient overflowed)."""
    if not math.isfinite(value) or value < 0:
        raise ParseError(tool, "a finite, non-negative %s" % what, line, lineno)
    return value
