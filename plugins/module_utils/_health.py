# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk's health, read once: ``smartctl -j -x`` and, for NVMe, ``nvme smart-log -o json``, each stopped after
_proc's probe limit (a failing disk can hold a command for minutes). The discover role's facts and the burn-in's
readings between cycles come from here.

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import _proc
from ._parse.nvme import nvme_result, nvme_unanswered
from ._parse.smartctl import smartctl_result, smartctl_unanswered

# The counters that must not grow under load: key in health_counters' answer -> how a reason names it. Any growth
# stops a burn-in (_burnin.py) and makes a result unhealthy (the judge, docs/report.md).
COUNTERS = (
    ("reallocated_sectors", "reallocated sectors"),
    ("pending_sectors", "pending sectors"),
    ("offline_uncorrectable", "offline uncorrectable sectors"),
    ("udma_crc_errors", "UDMA CRC errors"),
    ("media_errors", "media errors"),
    ("error_log_entries", "error log entries"),
    ("grown_defects", "grown defects"),
    ("read_uncorrected", "uncorrected read errors"),
    ("write_uncorrected", "uncorrected write errors"),
)


def probe_health(find_bin: Callable[[str], Optional[str]], device_path: str,
                 nvme: bool) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """(smartctl summary or None when smartctl is missing, nvme smart-log summary or None when not NVMe or
    nvme-cli is missing) of /dev/<disk>."""
    smart = None
    smartctl = find_bin("smartctl")
    if smartctl is not None:
        rc, out, err = _proc.probe([smartctl, "-j", "-x", device_path])
        smart = smartctl_unanswered(err) if rc is None else smartctl_result(rc, out, err)
    log = None
    nvme_bin = find_bin("nvme") if nvme else None
    if nvme_bin is not None:
        rc, out, err = _proc.probe([nvme_bin, "smart-log", device_path, "-o", "json"])
        log = nvme_unanswered(err) if rc is None else nvme_result(rc, out, err)
    return smart, log


# The readings beside the counters (not judged by new_problems): what a disk state shows before and after a run.
READINGS = ("temperature_c", "percentage_used", "available_spare", "available_spare_threshold", "warning_temp_time",
            "critical_comp_time", "thermal_throttle_events")


def health_counters(smart: Optional[Mapping[str, Any]], nvme: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The watched counters of one reading (smartctl_result / nvme_result summaries): every COUNTERS key (None:
    not reported), critical_warning (NVMe; None: not reported), health (SMART's verdict: passed, failed,
    unknown, unavailable) and every READINGS key (None: not reported; thermal_throttle_events only from nvme
    smart-log)."""
    counters: Dict[str, Any] = {key: None for key, _text in COUNTERS}
    counters.update({key: None for key in READINGS})
    counters.update(critical_warning=None, health=(smart or {}).get("health") or "unavailable")
    # smartctl's own summary last: its temperature.current is the ATA and SCSI drives' temperature
    sources = [(smart or {}).get("ata"), (smart or {}).get("scsi"), (smart or {}).get("nvme"),
               nvme if nvme and nvme.get("available") else None, smart]
    for source in sources:
        if not isinstance(source, Mapping):
            continue
        for key in list(counters):
            if key != "health" and counters[key] is None and isinstance(source.get(key), int):
                counters[key] = source[key]
    return counters


def new_problems(baseline: Mapping[str, Any], now: Mapping[str, Any]) -> List[str]:
    """What grew since the baseline: 'media errors 0 -> 12', 'critical warning 0x00 -> 0x04', 'SMART health
    passed -> failed'; [] when nothing did (or a counter is unknown on either side)."""
    problems = []
    for key, text in COUNTERS:
        before, after = baseline.get(key), now.get(key)
        if isinstance(before, int) and isinstance(after, int) and after > before:
            problems.append("%s %d -> %d" % (text, before, after))
    warning = now.get("critical_warning")
    if isinstance(warning, int) and warning and warning != baseline.get("critical_warning"):
        problems.append("critical warning 0x%02x -> 0x%02x" % (baseline.get("critical_warning") or 0, warning))
    if now.get("health") == "failed" and baseline.get("health") != "failed":
        problems.append("SMART health %s -> failed" % baseline.get("health"))
    return problems
