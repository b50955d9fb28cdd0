# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCIe link of a disk, from sysfs: the PCI function above the disk's device, its upstream port (the PCI function
it sits under: a root port or a switch's downstream port), the current and capable speed and width of both, and
whether the link trained below what both ends can do. The evidence bundle (_evidence.pcie_link) and the disk state
(_disk_state.py) both read it here.

Host code, stdlib only, no Ansible imports. Paths are what the caller gives (already under its root prefix);
``read_text`` is path -> text or None.
"""
from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, Optional

from ._parse.sysfs import link_speed_gts, link_width

PCIE_LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
# A PCI function in sysfs: domain:bus:device.function, e.g. 0000:3d:00.0.
_PCI_FUNCTION = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

ReadText = Callable[[str], Optional[str]]


def is_pci_function(path: str) -> bool:
    return bool(_PCI_FUNCTION.match(posixpath.basename(posixpath.normpath(path))))


def find_pci_function(device_path: str) -> Optional[str]:
    """The sysfs directory of the PCI function at or above a resolved device path, None when there is none."""
    path = posixpath.normpath(device_path)
    while path not in ("/", "", "."):
        if is_pci_function(path):
            return path
        path = posixpath.dirname(path)
    return None


def upstream_port(function_path: str) -> Optional[str]:
    """The PCI function a function sits under (its parent directory, when that is a PCI function); None under a host
    bridge (pci0000:00)."""
    parent = posixpath.dirname(posixpath.normpath(function_path))
    return parent if is_pci_function(parent) else None


def link_texts(function_path: str, read_text: ReadText) -> Dict[str, Optional[str]]:
    """The four link files of a PCI function, stripped; None for each one missing (conventional PCI has none)."""
    texts = {}
    for name in PCIE_LINK_FILES:
        value = read_text(posixpath.join(function_path, name))
        texts[name] = value.strip() if value is not None else None
    return texts


def link_values(texts: Dict[str, Optional[str]]) -> Dict[str, Any]:
    """speed_gts, width, max_speed_gts, max_width of link_texts (None: unknown, link down)."""
    return {"speed_gts": link_speed_gts(texts["current_link_speed"]), "width": link_width(texts["current_link_width"]),
            "max_speed_gts": link_speed_gts(texts["max_link_speed"]), "max_width": link_width(texts["max_link_width"])}


def _lowest(*values: Optional[float]) -> Optional[float]:
    known = [value for value in values if value is not None]
    return min(known) if known else None


def capable(device: Dict[str, Any], port_max_speed_gts: Optional[float] = None,
            port_max_width: Optional[int] = None) -> Dict[str, Any]:
    """What the link can train to: the lower of the device's and its port's maximum, each side unknown ignored."""
    return {"speed_gts": _lowest(device["max_speed_gts"], port_max_speed_gts),
            "width": _lowest(device["max_width"], port_max_width)}


def degraded(device: Dict[str, Any], port_max_speed_gts: Optional[float] = None,
             port_max_width: Optional[int] = None) -> Optional[bool]:
    """True when the link trained below what both ends can do (speed or width below min(device max, port max)): a
    x4 device under a x8-capable port trained x4 is not degraded. None when neither speed nor width can be judged."""
    can = capable(device, port_max_speed_gts, port_max_width)
    slower = device["speed_gts"] < can["speed_gts"] if None not in (device["speed_gts"], can["speed_gts"]) else None
    narrower = device["width"] < can["width"] if None not in (device["width"], can["width"]) else None
    if slower is None and narrower is None:
        return None
    return bool(slower) or bool(narrower)


def _gts(value: Optional[float]) -> str:
    return "?" if value is None else "%g" % value


def _lanes(value: Optional[int]) -> str:
    return "?" if value is None else "%d" % value


def link_text(device: Dict[str, Any], port_max_speed_gts: Optional[float] = None,
              port_max_width: Optional[int] = None) -> str:
    """'PCIe link x2 at 8 GT/s, capable x4 at 16 GT/s' (capable: the lower of both ends' maximum)."""
    can = capable(device, port_max_speed_gts, port_max_width)
    return "PCIe link x%s at %s GT/s, capable x%s at %s GT/s" % (
        _lanes(device["width"]), _gts(device["speed_gts"]), _lanes(can["width"]), _gts(can["speed_gts"]))


def pcie_state(device_path: Optional[str], read_text: ReadText) -> Dict[str, Any]:
    """The PCIe link above a resolved device path: {'link': the disk state's pcie dict or None, 'function': the
    function's sysfs path or None, 'texts': its link_texts, 'reason': why link is None}."""
    answer: Dict[str, Any] = {"link": None, "function": None, "texts": None, "reason": None}
    if device_path is None:
        answer["reason"] = "no device link: a virtual block device (loop, ram, zram, dm, md)"
        return answer
    function = find_pci_function(device_path)
    if function is None:
        answer["reason"] = "no PCI function above %s (a virtual or non-PCI device)" % device_path
        return answer
    answer["function"] = function
    texts = answer["texts"] = link_texts(function, read_text)
    name = posixpath.basename(function)
    if all(value is None for value in texts.values()):
        answer["reason"] = "PCI function %s has no PCIe link (conventional PCI: a VM's virtio disk)" % name
        return answer
    device = link_values(texts)
    port = upstream_port(function)
    port_values = link_values(link_texts(port, read_text)) if port else {"max_speed_gts": None, "max_width": None}
    port_speed, port_width = port_values["max_speed_gts"], port_values["max_width"]
    link = {"function": name}
    link.update(device)
    link.update(port=posixpath.basename(port) if port else None, port_max_speed_gts=port_speed,
                port_max_width=port_width, degraded=degraded(device, port_speed, port_width),
                text=link_text(device, port_speed, port_width))
    answer["link"] = link
    if link["degraded"] is None:
        answer["reason"] = "PCIe link speed and width of %s unknown (device asleep or link down)" % name
    return answer
