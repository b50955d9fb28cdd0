# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvme smart-log DEVICE -o json`` (nvme-cli 1.x and 2.x): the NVMe health log as a summary.

The same log inside smartctl's JSON (nvme_smart_health_information_log) is summarised by ``nvme_health``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from .errors import SOURCE_QUOTED_CHARS, ParseError, SourceError, printable
from .values import load_json, number

SOURCE = "nvme smart-log JSON"

_NVME_KEYS = (
    ("critical_warning", ("critical_warning",)),
    ("available_spare", ("available_spare", "avail_spare")),
    ("available_spare_threshold", ("available_spare_threshold", "spare_thresh")),
    ("percentage_used", ("percentage_used", "percent_used")),
    ("media_errors", ("media_errors",)),
    ("error_log_entries", ("num_err_log_entries",)),
    ("unsafe_shutdowns", ("unsafe_shutdowns",)),
    ("power_on_hours", ("power_on_hours",)),
    ("power_cycles", ("power_cycles",)),
    ("data_units_read", ("data_units_read",)),
    ("data_units_written", ("data_units_written",)),
    ("warning_temp_time", ("warning_temp_time",)),
    ("critical_comp_time", ("critical_comp_time",)),
    ("thm_temp1_trans_count", ("thm_temp1_trans_count",)),
    ("thm_temp2_trans_count", ("thm_temp2_trans_count",)),
)
NVME_DATA_UNIT_BYTES = 512000  # NVMe data units are thousands of 512-byte units


def nvme_health(log: Dict[str, Any], temperature_c: Optional[int]) -> Dict[str, Any]:
    """The health summary of an NVMe SMART / health log (nvme-cli's or smartctl's spelling of the keys)."""
    health: Dict[str, Any] = {}
    for key, aliases in _NVME_KEYS:
        health[key] = next((number(log[alias]) for alias in aliases if alias in log), None)
    health["temperature_c"] = temperature_c
    # Thermal management transitions (the drive throttled itself at its TMT1 / TMT2 temperature): nvme-cli prints
    # both counters, smartctl's JSON neither.
    transitions = [health[key] for key in ("thm_temp1_trans_count", "thm_temp2_trans_count") if health[key] is not None]
    health["thermal_throttle_events"] = sum(transitions) if transitions else None
    for direction in ("read", "written"):
        units = health["data_units_" + direction]
        health["data_%s_bytes" % direction] = None if units is None else units * NVME_DATA_UNIT_BYTES
    return health


def _kelvin_to_celsius(value: Any) -> Optional[int]:
    """nvme-cli prints the composite temperature in kelvin (a number, or text like '318 K' / '45 C')."""
    if isinstance(value, str):
        match = re.match(r"^\s*(-?[0-9]+)\s*(K|C|°C)?\s*$", value)
        if not match:
            return None
        degrees = int(match.group(1))
        return degrees if match.group(2) in ("C", "°C") else degrees - 273
    kelvin = number(value)
    return None if kelvin is None else kelvin - 273


def parse_nvme_smart_log(text: str) -> Dict[str, Any]:
    """Health summary of `nvme smart-log -o json` (nvme-cli 1.x and 2.x; critical_warning may be an object)."""
    data = load_json(text, SOURCE)
    if not isinstance(data, dict) or "critical_warning" not in data:
        raise SourceError(SOURCE, "an object with critical_warning", text.strip()[:200])
    health = nvme_health(data, _kelvin_to_celsius(data.get("temperature")))
    health["passed"] = health["critical_warning"] == 0 if health["critical_warning"] is not None else None
    return health


def nvme_result(rc: int, stdout: str, stderr: str) -> Dict[str, Any]:
    """An nvme smart-log run as data: the health summary, or available false with nvme-cli's message."""
    if rc == 0:
        try:
            health = parse_nvme_smart_log(stdout)
        except ParseError as error:
            return {"available": False, "exit_status": rc, "messages": [str(error)]}
        health.update(available=True, exit_status=rc, messages=[])
        return health
    message = (stderr.strip() or stdout.strip() or "(no output)").splitlines()[0]
    return {"available": False, "exit_status": rc, "messages": [printable(message, SOURCE_QUOTED_CHARS)]}


def nvme_unanswered(why: str) -> Dict[str, Any]:
    """nvme smart-log gave no answer (stopped at its time limit, or not started): unavailable, no exit status."""
    return {"available": False, "exit_status": None, "messages": [printable(why, SOURCE_QUOTED_CHARS)]}
