# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""smartctl's JSON (smartctl 7.0+ with ``-j``): identity and health of ``smartctl -j -x DEVICE``, and whether a
self-test runs (``smartctl -j -c -l selftest DEVICE``).

"No SMART on this device" is not an error: it is returned as data (available: false, the exit status bits and
smartctl's own messages). Only text that is not smartctl JSON at all raises SourceError.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from .errors import SOURCE_QUOTED_CHARS, ParseError, SourceError, printable
from .nvme import nvme_health
from .values import load_json, number, text_value

SOURCE = "smartctl JSON"

# smartctl exit status bits (smartctl(8), RETURN VALUES).
SMARTCTL_EXIT_BITS = (
    "command line did not parse (smartctl also sets it when it cannot detect the device type)",
    "device open failed, or the device did not return identify/inquiry data",
    "a SMART or other command to the device failed, or a checksum error in a SMART data structure",
    "SMART status check returned DISK FAILING",
    "prefail attributes at or below threshold",
    "usage or prefail attributes were at or below threshold in the past",
    "the device error log contains records of errors",
    "the device self-test log contains records of errors",
)

# ATA attributes summarised from smartctl -x (id -> name in the summary); raw values.
ATA_ATTRIBUTES = {
    5: "reallocated_sectors",
    197: "pending_sectors",
    198: "offline_uncorrectable",
    199: "udma_crc_errors",
}


def format_wwn(wwn: Any) -> Optional[str]:
    """smartctl's {naa, oui, id} as the 0x-prefixed 16-digit form lsblk prints ('0x5002538e40a22954')."""
    if not isinstance(wwn, dict):
        return None
    naa, oui, ident = number(wwn.get("naa")), number(wwn.get("oui")), number(wwn.get("id"))
    if naa is None or oui is None or ident is None:
        return None
    return "0x%01x%06x%09x" % (naa, oui, ident)


def _ata_attributes(data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    table = (data.get("ata_smart_attributes") or {}).get("table")
    if not isinstance(table, list):
        return None
    summary: Dict[str, Any] = {name: None for name in ATA_ATTRIBUTES.values()}
    failing = []
    for attribute in table:
        if not isinstance(attribute, dict):
            continue
        ident = number(attribute.get("id"))
        if ident in ATA_ATTRIBUTES:
            summary[ATA_ATTRIBUTES[ident]] = number((attribute.get("raw") or {}).get("value"))
        if attribute.get("when_failed") == "now":
            failing.append("%s %s" % (ident, attribute.get("name")))
    summary["failing_now"] = failing
    return summary


def _scsi_counters(data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    log = data.get("scsi_error_counter_log")
    if not isinstance(log, dict) and "scsi_grown_defect_list" not in data:
        return None
    log = log if isinstance(log, dict) else {}
    return {
        "grown_defects": number(data.get("scsi_grown_defect_list")),
        "read_uncorrected": number((log.get("read") or {}).get("total_uncorrected_errors")),
        "write_uncorrected": number((log.get("write") or {}).get("total_uncorrected_errors")),
    }


def _gbps(speed: Any) -> Optional[float]:
    """Gb/s of one side of smartctl's interface_speed ({units_per_second: 60, bits_per_unit: 100000000} -> 6.0)."""
    if not isinstance(speed, dict):
        return None
    units, bits = number(speed.get("units_per_second")), number(speed.get("bits_per_unit"))
    if units is not None and bits:
        return units * bits / 1e9
    found = re.match(r"^\s*([0-9]{1,3}(?:\.[0-9]{1,3})?)\s*Gb/s", text_value(speed.get("string")) or "")
    return float(found.group(1)) if found else None


def _interface_speed(data: Dict[str, Any]) -> Optional[Dict[str, Optional[float]]]:
    """The SATA link smartctl read (ATA IDENTIFY): current_gbps, max_gbps; None when it printed none."""
    speed = data.get("interface_speed")
    if not isinstance(speed, dict):
        return None
    return {"current_gbps": _gbps(speed.get("current")), "max_gbps": _gbps(speed.get("max"))}


def parse_smartctl(text: str) -> Dict[str, Any]:
    """Identity and health summary of `smartctl -j -x DEVICE`.

    smartctl exits non-zero and still prints JSON when the device has no SMART (virtio, loop: exit 1,
    "Unable to detect device type") or cannot be opened (exit 2): that is returned as data with
    available false, exit_status, exit_meanings and smartctl's messages. Only text that is not
    smartctl JSON at all raises SourceError.
    """
    data = load_json(text, SOURCE)
    if not isinstance(data, dict) or not isinstance(data.get("smartctl"), dict):
        raise SourceError(SOURCE, 'an object with a "smartctl" section (smartctl 7.0+ with -j)', text.strip()[:200])
    smartctl = data["smartctl"]
    exit_status = number(smartctl.get("exit_status"))
    messages = []
    for message in smartctl.get("messages") or []:
        if isinstance(message, dict) and message.get("string"):
            messages.append("%s: %s" % (message.get("severity", "information"),
                                        printable(str(message["string"]), SOURCE_QUOTED_CHARS)))
    device = data.get("device") if isinstance(data.get("device"), dict) else {}
    nvme_log = data.get("nvme_smart_health_information_log")
    attributes = _ata_attributes(data)
    smart_status = data.get("smart_status") if isinstance(data.get("smart_status"), dict) else {}
    passed = smart_status.get("passed") if isinstance(smart_status.get("passed"), bool) else None
    available = bool(smart_status) or isinstance(nvme_log, dict) or attributes is not None
    temperature = data.get("temperature") if isinstance(data.get("temperature"), dict) else {}
    version = smartctl.get("version")
    write_cache = data.get("write_cache") if isinstance(data.get("write_cache"), dict) else {}
    summary = {
        "available": available,
        "passed": passed,
        "exit_status": exit_status,
        "exit_meanings": [meaning for bit, meaning in enumerate(SMARTCTL_EXIT_BITS)
                          if exit_status is not None and exit_status & (1 << bit)],
        "messages": messages,
        "smartctl_version": ".".join(str(part) for part in version) if isinstance(version, list) else None,
        "device_type": text_value(device.get("type")),
        "protocol": text_value(device.get("protocol")),
        "model": text_value(data.get("model_name")) or text_value(data.get("product")),
        "vendor": text_value(data.get("vendor")),
        "serial": text_value(data.get("serial_number")),
        "wwn": format_wwn(data.get("wwn")),
        "firmware": text_value(data.get("firmware_version")) or text_value(data.get("revision")),
        "capacity_bytes": number((data.get("user_capacity") or {}).get("bytes")),
        "logical_block_size": number(data.get("logical_block_size")),
        "physical_block_size": number(data.get("physical_block_size")),
        "rotation_rate": number(data.get("rotation_rate")),
        "write_cache_enabled": write_cache.get("enabled") if isinstance(write_cache.get("enabled"), bool) else None,
        "temperature_c": number(temperature.get("current")),
        "interface_speed": _interface_speed(data),
        "power_on_hours": number((data.get("power_on_time") or {}).get("hours")),
        "power_cycles": number(data.get("power_cycle_count")),
        "ata": attributes,
        "nvme": nvme_health(nvme_log, number(nvme_log.get("temperature"))) if isinstance(nvme_log, dict) else None,
        "scsi": _scsi_counters(data),
    }
    summary["health"] = smart_health(summary)
    return summary


def smart_health(summary: Dict[str, Any]) -> str:
    """unavailable (no SMART data read), failed (smartctl says failing), passed, or unknown."""
    if not summary.get("available"):
        return "unavailable"
    exit_status = summary.get("exit_status") or 0
    if summary.get("passed") is False or exit_status & (1 << 3):
        return "failed"
    if summary.get("passed") is True:
        return "passed"
    return "unknown"


def smartctl_result(rc: int, stdout: str, stderr: str) -> Dict[str, Any]:
    """A smartctl run as data; unparseable output becomes available false with the parse error."""
    try:
        return parse_smartctl(stdout)
    except ParseError as error:
        detail = stderr.strip().splitlines()[0] if stderr.strip() else None
        return {
            "available": False, "passed": None, "health": "unavailable", "exit_status": rc,
            "exit_meanings": [meaning for bit, meaning in enumerate(SMARTCTL_EXIT_BITS) if rc & (1 << bit)],
            "messages": [str(error)] + ([printable(detail, SOURCE_QUOTED_CHARS)] if detail else []),
        }


def smartctl_unanswered(why: str) -> Dict[str, Any]:
    """The health of a disk smartctl gave no answer for (stopped at its time limit, or not started): unavailable,
    no exit status, the reason as its message."""
    return {"available": False, "passed": None, "health": "unavailable", "exit_status": None, "exit_meanings": [],
            "messages": [printable(why, SOURCE_QUOTED_CHARS)]}


def _get(document: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def smart_selftest(document: Any) -> Dict[str, Any]:
    """Whether smartctl's JSON (-j -c -l selftest, decoded) says a self-test is running.

    ATA: ata_smart_data.self_test.status.value has 0xF in its high nibble while a test runs (the
    low nibble is tenths remaining). NVMe: nvme_self_test_log.current_self_test_operation.value
    is not 0. SCSI (smartctl 7.5+): scsi_self_test_status.in_progress. in_progress is None when
    the output says nothing about self-tests (no SMART, unsupported device)."""
    result: Dict[str, Any] = {"in_progress": None, "remaining_percent": None, "protocol": None, "detail": None}
    ata = _get(document, "ata_smart_data", "self_test", "status")
    if isinstance(ata, dict) and isinstance(ata.get("value"), int):
        value = ata["value"]
        running = (value >> 4) == 0xF
        remaining = ata.get("remaining_percent")
        if running and not isinstance(remaining, int):
            remaining = (value & 0xF) * 10   # the low nibble: tenths still to run
        result.update(protocol="ata", in_progress=running, detail=ata.get("string"),
                      remaining_percent=remaining if running else None)
        return result
    nvme = _get(document, "nvme_self_test_log")
    if isinstance(nvme, dict) and isinstance(_get(nvme, "current_self_test_operation", "value"), int):
        operation = nvme["current_self_test_operation"]
        running = operation["value"] != 0
        completion = nvme.get("current_self_test_completion_percent")
        result.update(protocol="nvme", in_progress=running, detail=operation.get("string"),
                      remaining_percent=(100 - completion) if running and isinstance(completion, int) else None)
        return result
    scsi = _get(document, "scsi_self_test_status")
    if isinstance(scsi, dict) and isinstance(scsi.get("in_progress"), bool):
        remaining = scsi.get("remaining_percent")
        result.update(protocol="scsi", in_progress=scsi["in_progress"], detail=scsi.get("string"),
                      remaining_percent=remaining if isinstance(remaining, int) else None)
        return result
    messages = _get(document, "smartctl", "messages")
    if isinstance(messages, list):
        texts = [item.get("string") for item in messages if isinstance(item, dict) and item.get("string")]
        result["detail"] = "; ".join(texts) or None
    return result
