# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk's health, read once: ``smartctl -j -x`` and, for NVMe, ``nvme smart-log -o json``, each stopped after
_proc's probe limit (a failing disk can hold a command for minutes). The discover role's facts and the burn-in's
readings between cycles come from here.

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from . import _proc
from ._parse.nvme import nvme_result, nvme_unanswered
from ._parse.smartctl import smartctl_result, smartctl_unanswered


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
