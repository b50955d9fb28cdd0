# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health rules and likely causes: what a disk's state around its run says about a result (docs/report.md,
"Likely causes").

Pure Python, no Ansible imports. A record's ``disk_state`` (``{"before": S, "after": S}``, read host-side around
the run) and a burn-in record's ``health`` are read once, by ``disk_facts``, into a compact ``DiskFacts`` that the
judge keeps in ``RecordFacts.disk``; the record itself can go. From it:

- ``health_reasons``: why a result is ``unhealthy`` (counters grew, a critical warning, SMART failed, the
  temperature above ``max_temperature_c``, critical-temperature time grew).
- ``Cohorts``: results of one test on disks of one model and size (firmware deliberately not in the key: the
  identity peer group keys on firmware, so a firmware difference is invisible there). ``likely_causes`` ranks a
  flagged result's causes, its own (health, link, alignment, thermal, power) and its differences from the
  majority of its cohort (write cache, firmware, queue settings); ``differences`` lists, for every disk group,
  each attribute whose disks do not all agree, passing disks included.
"""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping as _MappingABC
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.diskproof.fleet.plugins.module_utils import _pcie
from ansible_collections.diskproof.fleet.plugins.module_utils._disk_state import sata_degraded, sata_text, state_after
from ansible_collections.diskproof.fleet.plugins.module_utils._health import new_problems

DEFAULT_MAX_TEMPERATURE_C = 70.0
# A cohort difference needs this many other members with a known value: one peer cannot say which of two is odd.
MIN_OTHER_MEMBERS = 2
# Disks named per value in report.json differences (the rest counted): a fleet's minority is small, its majority not.
DIFFERENCE_DISKS_LISTED = 50

# Cause kinds, in rank order (likely_causes sorts by it): a counter that grew explains any figure; a degraded link
# caps throughput outright; a volatile cache off costs every write; a firmware apart from its peers often behaves
# apart; a misaligned partition splits every I/O; heat throttles; a low-power state wakes slowly; queue and
# scheduler settings shift figures least.
CAUSE_HEALTH = "health"
CAUSE_PCIE_LINK = "pcie_link"
CAUSE_SATA_LINK = "sata_link"
CAUSE_WRITE_CACHE = "write_cache"
CAUSE_FIRMWARE = "firmware"
CAUSE_ALIGNMENT = "alignment"
CAUSE_THERMAL = "thermal"
CAUSE_POWER = "power"
CAUSE_SETTINGS = "settings"
CAUSE_RANK = (CAUSE_HEALTH, CAUSE_PCIE_LINK, CAUSE_SATA_LINK, CAUSE_WRITE_CACHE, CAUSE_FIRMWARE, CAUSE_ALIGNMENT, CAUSE_THERMAL,
              CAUSE_POWER, CAUSE_SETTINGS)
_CAUSE_ORDER = {kind: rank for rank, kind in enumerate(CAUSE_RANK)}
_CAUSE_ORDER[CAUSE_SATA_LINK] = _CAUSE_ORDER[CAUSE_PCIE_LINK]   # one rank: a disk has one link or the other

# The attributes compared within a cohort, in DiskFacts.profile order: (name, cause kind).
PROFILE = (
    ("write_cache", CAUSE_WRITE_CACHE),
    ("firmware", CAUSE_FIRMWARE),
    ("scheduler", CAUSE_SETTINGS),
    ("nr_requests", CAUSE_SETTINGS),
    ("queue_depth", CAUSE_SETTINGS),
    ("read_ahead_kb", CAUSE_SETTINGS),
    ("max_sectors_kb", CAUSE_SETTINGS),
    ("rotational", CAUSE_SETTINGS),
)
PROFILE_NAMES = tuple(name for name, _kind in PROFILE)
_WRITE_CACHE_WORDS = {"write back": "on", "write through": "off"}

Cause = Tuple[str, str]   # (kind, text)
CohortKey = Tuple[Any, Any, Any]   # (test, model, size_bytes)


class DiskFacts(NamedTuple):
    """What the judge and the causes read of a record's disk state: small and immutable (one per result, 100,000
    in a fleet: docs/benchmarks.md "Callback scale"). Text interned; ``profile`` shared by every disk set up alike."""

    model: Optional[str]              # as the disk names itself: the cohort's model when the target's is unknown
    profile: Tuple[Any, ...]          # the PROFILE values before the run ("on"/"off" for the write cache); None unknown
    health: Tuple[str, ...]           # what grew: 'media errors 0 -> 12 during the run'
    link: Optional[Tuple[str, str]]   # a degraded link: (pcie_link, 'PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s')
    misaligned: Optional[str]         # 'partition sda1 starts at 32256 B, not a multiple of the 4096 B physical block'
    temperature_c: Optional[float]    # the higher of the readings before and after
    throttle_events: Optional[int]    # thermal throttle events added during the run
    warning_temp_minutes: Optional[int]   # time above the warning temperature added during the run
    critical_temp_minutes: Optional[int]  # time above the critical temperature added during the run
    power: Optional[str]              # 'NVMe power state 3' / 'APST on -> off during the run'


_EMPTY: Tuple[str, ...] = ()
# A burn-in's counters are held against its first cycle's reading, not this run's (module_utils/_burnin.py).
BURNIN_SUFFIX = " since the burn-in began"
# What starts the reason of a health counter that grew (the burn-in's own error text starts so too).
HEALTH_PREFIX = "health: "
# Profiles and DiskFacts seen, each kept once: a fleet's disks of one model are set up alike and mostly healthy, so
# 100,000 results share a few hundred (docs/benchmarks.md, "Callback scale"). Bounded: a fleet of all-different
# disks stops sharing rather than growing this without limit.
_SHARED: Dict[Tuple[Any, ...], Tuple[Any, ...]] = {}
_SHARED_MAX = 65536


def _text(value: Any) -> Optional[str]:
    return sys.intern(str.__str__(value)) if isinstance(value, str) and value else None


def _whole(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _degrees_or_none(value: Any) -> Optional[float]:
    # A reading as it is (whole degrees stay ints: small ints are shared, a float is a new object per result).
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_EMPTY_MAPPING: Mapping[str, Any] = {}


def _mapping(value: Any) -> Mapping[str, Any]:
    # dict first: records are dicts, and an ABC check per field is most of disk_facts' time at fleet scale.
    return value if isinstance(value, (dict, _MappingABC)) else _EMPTY_MAPPING


def _grew(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> Optional[int]:
    """after - before of a counter when it grew, else None."""
    old, new = _whole(before.get(key)), _whole(after.get(key))
    return new - old if old is not None and new is not None and new > old else None


def _shared(value: Any) -> Any:
    """The one kept copy of an equal tuple (a profile, a DiskFacts)."""
    found = _SHARED.get(value)
    if found is not None:
        return found
    if len(_SHARED) < _SHARED_MAX:
        _SHARED[value] = value
    return value


def _profile(state: Mapping[str, Any]) -> Tuple[Any, ...]:
    values: List[Any] = []
    for name in PROFILE_NAMES:
        value = state.get(name)
        if name == "write_cache":
            value = _WRITE_CACHE_WORDS.get(value) if isinstance(value, str) else None
        elif name == "rotational":
            value = value if isinstance(value, bool) else None
        elif isinstance(value, str):
            value = _text(value)
        else:
            value = _whole(value)
        values.append(value)
    return _shared(tuple(values))


def degraded_link(state: Mapping[str, Any]) -> Optional[Tuple[str, str]]:
    """(cause, text) of a degraded PCIe or SATA link, None when not degraded: the host's verdict and text, else the
    same rules (module_utils/_pcie.py, _disk_state.py) applied to the speeds the record gives."""
    pcie = _mapping(state.get("pcie"))
    if pcie:
        link = {"speed_gts": _number(pcie.get("speed_gts")), "width": _whole(pcie.get("width")),
                "max_speed_gts": _number(pcie.get("max_speed_gts")), "max_width": _whole(pcie.get("max_width"))}
        port = (_number(pcie.get("port_max_speed_gts")), _whole(pcie.get("port_max_width")))
        degraded = pcie.get("degraded")
        if degraded is None:
            degraded = _pcie.degraded(link, *port)
        if degraded is True:
            return CAUSE_PCIE_LINK, _text(pcie.get("text")) or sys.intern(_pcie.link_text(link, *port))
    sata = _mapping(state.get("sata"))
    if sata:
        speed, max_speed = _number(sata.get("speed_gbps")), _number(sata.get("max_gbps"))
        degraded = sata.get("degraded")
        if degraded is None:
            degraded = sata_degraded(speed, max_speed)
        if degraded is True:
            return CAUSE_SATA_LINK, _text(sata.get("text")) or sys.intern(sata_text(speed, max_speed))
    return None


def misaligned_text(state: Mapping[str, Any]) -> Optional[str]:
    """'partition sda1 starts at 32256 B, not a multiple of the 4096 B physical block', None when aligned or unknown."""
    partition = _mapping(state.get("partition"))
    if partition.get("aligned") is not False:
        return None
    name = partition.get("name") or "?"
    start = _whole(partition.get("start_bytes"))
    block = _whole(state.get("physical_block_size"))
    where = "starts at %d B" % start if start is not None else "start unknown"
    if block:
        return sys.intern("partition %s %s, not a multiple of the %d B physical block" % (name, where, block))
    return sys.intern("partition %s %s, misaligned (alignment offset %s)" % (name, where, partition.get("alignment_offset")))


def _power_text(before: Mapping[str, Any], after: Mapping[str, Any]) -> Optional[str]:
    first, last = _mapping(before.get("nvme_power")), _mapping(after.get("nvme_power"))
    parts = []
    states = [state for state in (_whole(first.get("power_state")), _whole(last.get("power_state"))) if state is not None]
    if states and max(states) > 0:
        parts.append("NVMe power state %d (0 is full power)" % max(states))
    old, new = first.get("apst"), last.get("apst")
    if isinstance(old, bool) and isinstance(new, bool) and old != new:
        parts.append("APST %s -> %s during the run" % ("on" if old else "off", "on" if new else "off"))
    return sys.intern(", ".join(parts)) if parts else None


def disk_facts(record: Mapping[str, Any]) -> Optional[DiskFacts]:
    """The DiskFacts of a record: its ``disk_state`` and a burn-in's ``health``; None when it has neither (records
    from before disk states were read: no hints, no health verdict)."""
    state = _mapping(record.get("disk_state"))
    burnin = _mapping(record.get("health"))
    grew = burnin.get("grew")
    if not state and not isinstance(grew, list):
        return None
    before, after = _mapping(state.get("before")), _mapping(state_after(state))
    first = before or after
    health_before, health_after = _mapping(before.get("health")), _mapping(after.get("health"))
    problems = ["%s during the run" % problem for problem in new_problems(health_before, health_after)] \
        if health_before and health_after else []
    if isinstance(grew, list):
        problems.extend(problem + BURNIN_SUFFIX for problem in grew if isinstance(problem, str))
    temperatures = [value for value in (_degrees_or_none(health_before.get("temperature_c")),
                                        _degrees_or_none(health_after.get("temperature_c"))) if value is not None]
    return _shared(DiskFacts(
        model=_text(first.get("model")),
        profile=_profile(first),
        health=tuple(sys.intern(problem) for problem in problems) if problems else _EMPTY,
        link=degraded_link(before) or degraded_link(after),
        misaligned=misaligned_text(first),
        temperature_c=max(temperatures) if temperatures else None,
        throttle_events=_grew(health_before, health_after, "thermal_throttle_events"),
        warning_temp_minutes=_grew(health_before, health_after, "warning_temp_time"),
        critical_temp_minutes=_grew(health_before, health_after, "critical_comp_time"),
        power=_power_text(before, after),
    ))


# ---------------------------------------------------------------------------------------------
# health rules: the unhealthy verdict
# ---------------------------------------------------------------------------------------------

def _degrees(value: float) -> str:
    return "%g °C" % value


def too_hot(disk: DiskFacts, max_temperature_c: float) -> bool:
    return disk.temperature_c is not None and disk.temperature_c > max_temperature_c


def health_reasons(disk: Optional[DiskFacts], max_temperature_c: float) -> List[str]:
    """Why the result is unhealthy ([] when it is not): 'health: media errors 0 -> 12 during the run',
    'temperature 78 °C, above the 70 °C limit', 'critical temperature time +2 min during the run'."""
    if disk is None:
        return []
    reasons = [HEALTH_PREFIX + problem for problem in disk.health]
    if too_hot(disk, max_temperature_c):
        reasons.append("temperature %s, above the %s limit" % (_degrees(disk.temperature_c), _degrees(max_temperature_c)))  # type: ignore[arg-type]
    if disk.critical_temp_minutes:
        reasons.append("critical temperature time +%d min during the run" % disk.critical_temp_minutes)
    return reasons


# ---------------------------------------------------------------------------------------------
# likely causes
# ---------------------------------------------------------------------------------------------

def thermal_text(disk: DiskFacts, max_temperature_c: float) -> Optional[str]:
    """'temperature 78 °C, thermal throttle events +3': when the disk was above the limit, throttled or spent time
    above its warning or critical temperature during the run; None otherwise."""
    parts = []
    if disk.throttle_events:
        parts.append("thermal throttle events +%d" % disk.throttle_events)
    if disk.warning_temp_minutes:
        parts.append("warning temperature time +%d min" % disk.warning_temp_minutes)
    if disk.critical_temp_minutes:
        parts.append("critical temperature time +%d min" % disk.critical_temp_minutes)
    if not parts and not too_hot(disk, max_temperature_c):
        return None
    if disk.temperature_c is not None:
        parts.insert(0, "temperature %s" % _degrees(disk.temperature_c))
    return ", ".join(parts)


def own_causes(disk: DiskFacts, max_temperature_c: float) -> List[Cause]:
    """The causes one disk's state shows by itself, whatever its peers."""
    causes: List[Cause] = [(CAUSE_HEALTH, problem) for problem in disk.health]
    if disk.link:
        causes.append(disk.link)
    if disk.misaligned:
        causes.append((CAUSE_ALIGNMENT, disk.misaligned))
    thermal = thermal_text(disk, max_temperature_c)
    if thermal:
        causes.append((CAUSE_THERMAL, thermal))
    if disk.power:
        causes.append((CAUSE_POWER, disk.power))
    return causes


def _value_text(name: str, value: Any) -> str:
    if name == "rotational":
        return "rotational" if value else "non-rotational"
    return str(value)


def difference_text(name: str, value: Any, majority: Any, count: int, others: int) -> str:
    """'write cache off (peers: on)', 'firmware GDC5602Q, 7 of 8 peers GDC5902Q', 'scheduler none, 7 of 8 peers
    mq-deadline'."""
    if name == "write_cache":
        return "write cache %s (peers: %s)" % (value, majority)
    if name == "rotational":
        return "%s, %d of %d peers %s" % (_value_text(name, value), count, others, _value_text(name, majority))
    return "%s %s, %d of %d peers %s" % (name, value, count, others, majority)


class Cohorts:
    """Results of one test on disks of one model and size, counted per PROFILE attribute; and per disk group (model,
    size) which disk shows which value (``differences``). Filled once (``add``), then read."""

    def __init__(self) -> None:
        self._counts: Dict[CohortKey, List[Counter]] = {}
        # (model, size) -> (host, device) -> (the disk's profile, its target path) in its first result: a disk counts
        # once in a group however many tests it ran, and the profiles are shared tuples (30,000 disks: a few MB).
        self._disks: Dict[Tuple[Any, Any], Dict[Tuple[str, str], Tuple[Tuple[Any, ...], Any]]] = {}

    def add(self, key: Optional[CohortKey], host: str, device: Any, disk: Optional[DiskFacts], target_path: Any = None) -> None:
        if key is None or disk is None:
            return
        counts = self._counts.get(key)
        if counts is None:
            counts = self._counts[key] = [Counter() for _name in PROFILE_NAMES]
        for index, value in enumerate(disk.profile):
            if value is not None:
                counts[index][value] += 1
        self._disks.setdefault(key[1:], {}).setdefault((host, str(device or "")), (disk.profile, target_path))

    def peer_causes(self, key: Optional[CohortKey], disk: DiskFacts) -> List[Cause]:
        """The disk's differences from the majority of the other members of its cohort (more than half of those with
        a known value, and at least MIN_OTHER_MEMBERS of them)."""
        counts = None if key is None else self._counts.get(key)
        if counts is None:
            return []
        causes: List[Cause] = []
        for index, value in enumerate(disk.profile):
            if value is None:
                continue
            counter = counts[index]
            others = sum(counter.values()) - 1
            if others < MIN_OTHER_MEMBERS:
                continue
            majority, count = max(((other, seen - (other == value)) for other, seen in counter.items()),
                                  key=lambda pair: (pair[1], str(pair[0])))
            if majority != value and count * 2 > others:
                name, kind = PROFILE[index]
                causes.append((kind, difference_text(name, value, majority, count, others)))
        return causes

    def likely_causes(self, key: Optional[CohortKey], disk: Optional[DiskFacts], max_temperature_c: float) -> Tuple[Cause, ...]:
        """Every cause of a result, ranked (CAUSE_RANK; one kind keeps its order); () without a disk state."""
        if disk is None:
            return ()
        causes = own_causes(disk, max_temperature_c) + self.peer_causes(key, disk)
        return tuple(sorted(causes, key=lambda cause: _CAUSE_ORDER[cause[0]]))

    def differences(self) -> List[Dict[str, Any]]:
        """report.json ``differences``: each attribute on which the disks of a group (model and size) do not all agree,
        its values most common first, each with its disks (the most common value's counted only)."""
        rows = []
        for (model, size_bytes), disks in sorted(self._disks.items(), key=lambda item: tuple(map(str, item[0]))):
            for index, (name, kind) in enumerate(PROFILE):
                counts = Counter(profile[index] for profile, _path in disks.values() if profile[index] is not None)
                if len(counts) < 2:
                    continue
                ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
                total = sum(counts.values())
                values = []
                for rank, (value, count) in enumerate(ordered):
                    listed = [] if rank == 0 else sorted((host, device, path) for (host, device), (profile, path) in disks.items()
                                                         if profile[index] == value)[:DIFFERENCE_DISKS_LISTED]
                    values.append({"value": value, "disks_total": count, "disks": [
                        {"host": host, "device": device, "target_path": path} for host, device, path in listed]})
                rows.append({"model": model, "size_bytes": size_bytes, "attribute": name, "cause": kind,
                             "values": values, "text": group_difference_text(name, values, total)})
        return rows


def group_difference_text(name: str, values: Sequence[Mapping[str, Any]], total: int) -> str:
    """'1 of 8 disks in this group runs firmware GDC5602Q (h9:nvme0n1); 7 run GDC5902Q'."""
    parts = []
    for value in values[1:]:
        count = value["disks_total"]
        named = ", ".join("%s:%s" % (disk["host"], disk["device"]) for disk in value["disks"])
        if count > len(value["disks"]):
            named += ", +%d more" % (count - len(value["disks"]))
        parts.append("%d of %d disks in this group %s (%s)" % (count, total, _state_phrase(name, value["value"], count), named))
    parts.append("%d %s" % (values[0]["disks_total"], _state_phrase(name, values[0]["value"], values[0]["disks_total"], short=True)))
    return "; ".join(parts)


def _state_phrase(name: str, value: Any, count: int, short: bool = False) -> str:
    """'runs firmware X' / 'run X', 'have write cache off', 'are rotational'."""
    one = count == 1
    if name == "write_cache":
        return "%s write cache %s" % ("has" if one else "have", value)
    if name == "rotational":
        return "%s %s" % ("is" if one else "are", _value_text(name, value))
    return "%s %s" % ("runs" if one else "run", value if short else "%s %s" % (name, value))


def cause_rows(causes: Iterable[Cause]) -> List[Dict[str, str]]:
    """report.json results[].likely_causes."""
    return [{"cause": kind, "text": text} for kind, text in causes]


def causes_text(causes: Sequence[Cause]) -> str:
    """Every cause, ranked, joined with '; ' (the pages' and results.csv's 'likely cause')."""
    return "; ".join(text for _kind, text in causes)
