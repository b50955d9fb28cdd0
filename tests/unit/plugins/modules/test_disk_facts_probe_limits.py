# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""disk_facts on this machine's own disk (a directory target, read-only discovery) when the commands that read a
disk never answer, as on a failing disk: each is stopped at its time limit and the disk is reported with what could
not be read, instead of the module waiting for ever. The hanging wipefs and smartctl are stand-ins (conftest's
hanging_programs: shell scripts that sleep; no disk here hangs); the limits are lowered from 60 s (and 10 s for
the version question) so the test is quick."""
from __future__ import annotations

import json
import os
import time

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _proc, _version_probe
from ansible_collections.diskproof.fleet.plugins.modules import disk_facts


def discover_a_directory(tmp_path, capsys, monkeypatch, smart):
    """(result, seconds) of disk_facts on a directory of this machine's disk, every limit lowered to 0.5 s."""
    monkeypatch.setattr(_proc, "DISK_PROBE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(_version_probe, "VERSION_TIMEOUT_S", 0.5)   # a stand-in hangs on --version too
    target = tmp_path / "target"
    target.mkdir()
    started = time.monotonic()
    with patch_module_args({"targets": [{"path": str(target)}], "smart": smart}):
        with pytest.raises(SystemExit):
            disk_facts.main()
    return json.loads(capsys.readouterr().out), time.monotonic() - started


@pytest.mark.skipif(os.geteuid() != 0, reason="smartctl and wipefs open the disk: root")
def test_probes_that_never_answer_are_stopped_and_reported(tmp_path, capsys, monkeypatch, hanging_programs):
    hanging = hanging_programs("wipefs", "smartctl")
    result, took = discover_a_directory(tmp_path, capsys, monkeypatch, smart=True)
    (resolved,) = result["ansible_facts"]["diskproof_targets_resolved"]
    if not resolved["disks"]:
        pytest.skip("%s is not on a disk here" % tmp_path)
    disk = result["ansible_facts"]["diskproof_disks"][resolved["disks"][0]]
    wipefs = "%s -n -J %s did not end within 0.5 s (it was stopped)" % (hanging["wipefs"], disk["path"])
    smartctl = "%s -j -x %s did not end within 0.5 s (it was stopped)" % (hanging["smartctl"], disk["path"])
    assert disk["usage"]["probe_errors"] == ["%s: %s" % (disk["name"], wipefs)], disk["usage"]
    assert disk["smart"] == {"available": False, "passed": None, "health": "unavailable", "exit_status": None,
                             "exit_meanings": [], "messages": [smartctl]}
    assert disk["health"] == "unavailable"
    # A directory target needs no signature probe to be granted: the discovery goes on and says what it missed.
    assert (resolved["class"], resolved["granted"]) == ("filesystem", True) and result["refusals"] == []
    assert took < 10, took   # three commands stopped at 0.5 s, not 2 × 60 s + 10 s
    assert result["ansible_facts"]["diskproof_host"]["tools"]["smartctl"] == {"path": hanging["smartctl"],
                                                                              "version": None}
    assert ("%s --version did not answer within 0.5 s (it was stopped): its version is reported as unknown"
            % hanging["smartctl"]) in json.dumps(result["warnings"])


def test_an_lsblk_that_never_answers_fails_the_discovery(tmp_path, capsys, monkeypatch, hanging_programs):
    """Without the device tree there is no discovery: the module stops lsblk at the limit and says what to look for."""
    hanging = hanging_programs("lsblk")["lsblk"]
    result, took = discover_a_directory(tmp_path, capsys, monkeypatch, smart=False)
    assert result["failed"] is True
    assert result["msg"] == ("cannot list the block devices: %s -J -b -O did not end within 0.5 s (it was stopped). "
                             "Stopped at its time limit, it means a disk (or udev) is not answering: find it in the "
                             "kernel log (dmesg) and run again" % hanging)
    assert took < 10, took
