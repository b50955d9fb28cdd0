"""Fresh SSDs lie (issue 19): the plain random-write test on a fresh SSD reports its fresh speed; the
ssd_steady_state profile (precondition 2 x the device, then random write and read until fio's steady-state
criterion holds) reports the steady speed and says it got there; a drive that never settles is `not_steady`.

The lab `ssdss` (tests/integration/ssdss_lab.yml): one host, two raw 64 MiB disks throttled to 50 MiB/s and
600 write IOPS, each with the lab's fresh-SSD watcher (tools/labkit/fob.py): once 40 MiB have reached the
device its write-IOPS throttle drops to 150 for good (d0), or alternates between 600 and 150 every 3 s (d1,
never settles). Both are granted raw_write through the real interlock (diskproof_destructive, their loop
identity in diskproof_destructive_allow), as a user would. Real lab, real fio, real ansible-playbook with the
report callback (report.json and report.html). Root only.

The tests run in file order on one lab: the first needs the disks fresh (it checks the watcher's phase).
Steady-state settings are shrunk for the lab: an 8 s window after a 2 s ramp, a 24 s time limit.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from labhelpers import REPO, lab, needs_root, playbook

HERE = Path(__file__).resolve().parent
SPEC = HERE / "ssdss_lab.yml"
LAB = "ssdss"
HOST = "ssdss-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
VALIDATE = REPO / "playbooks" / "validate.yml"
FOB_STATE = Path("/dev/shm/diskproof-lab-%s/fob" % LAB)
MIB = 1 << 20
DISK_BYTES = 64 * MIB
FRESH_IOPS = 600
STEADY_IOPS = 150
FOB_BYTES = 40 * MIB

# Alone: the steady-state rule holds 2,000 random reads a second to 10 % over an 8 s window, and fio needs CPU for
# that rate. Beside three other labs' tests on this machine's two cores, a clean-clone CI run saw the healthy read
# of d0 swing by 19 % and come out not_steady; the rule is the product's, so the test runs where only its lab does.
pytestmark = [needs_root, pytest.mark.alone]


def phase(index):
    return json.loads((FOB_STATE / ("%s-d%d.json" % (HOST, index))).read_text())["phase"]


@pytest.fixture(scope="module")
def ssdss():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(INVENTORY.read_text())
        disks = inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"]
        devices, allow = [], []
        for disk in disks:
            assert disk["mode"] == "raw" and disk["size_bytes"] == DISK_BYTES and disk["fob_bytes"] == FOB_BYTES, disk
            with open("/sys/block/%s/loop/backing_file" % disk["device"], encoding="utf-8") as handle:
                image = handle.read().strip()
            assert image.startswith("/dev/shm/diskproof-lab-%s/" % LAB), image   # the lab's own image, nothing else
            devices.append("/dev/" + disk["device"])
            allow.append("loop:" + image)
        yield {"devices": devices, "allow": allow}
    finally:
        lab("down", "--name", LAB)


def raw_write(ssdss, devices, **extra):
    values = {"diskproof_targets": [{"device": device, "mode": "raw_write"} for device in devices],
              "diskproof_destructive": True, "diskproof_destructive_allow": ssdss["allow"]}
    values.update(extra)
    return values


def by_test_and_device(report):
    return {(entry["test"], entry["record"]["target"]["path"]): entry
            for entry in report["results"] if entry.get("record")}


def test_plain_random_write_on_a_fresh_ssd_reports_the_fresh_figure(ssdss, tmp_path):
    assert phase(0) == "fresh", "the lab disk must be fresh for this test (run the file from its first test)"
    device = ssdss["devices"][0]
    rc, output, report = playbook(INVENTORY, VALIDATE, tmp_path / "report", raw_write(
        ssdss, [device], benchmark_tests=["fio_rand_write"], benchmark_repeats=1, benchmark_max_repeats=1,
        benchmark_fio_runtime_s=5))
    assert rc == 0, output[-3000:]
    entry = by_test_and_device(report)[("fio_rand_write", device)]
    iops = entry["record"]["metrics"]["write_iops"]
    print("\nfresh %s: fio_rand_write %.1f IOPS (fresh throttle %d, steady %d)"
          % (device, iops, FRESH_IOPS, STEADY_IOPS))
    assert abs(iops - FRESH_IOPS) / FRESH_IOPS < 0.05, iops
    assert "steady_state" not in entry["record"]
    assert phase(0) == "fresh"   # 7 s at 600 IOPS: about 17 MB, short of the 40 MiB cliff


def test_steady_state_profile_reports_the_steady_figure_and_not_steady_for_a_drive_that_never_settles(ssdss, tmp_path):
    d0, d1 = ssdss["devices"]
    report_dir = tmp_path / "report"
    rc, output, report = playbook(INVENTORY, VALIDATE, report_dir, raw_write(
        ssdss, [d0, d1], diskproof_profile="ssd_steady_state", benchmark_ssd_steady_window_s=8,
        benchmark_ssd_steady_ramp_s=2, benchmark_ssd_steady_time_limit_s=24))
    assert rc == 0, output[-3000:]
    # Progress: every part of the preconditioning is a loop item of its own, printed as it finishes.
    for number in range(1, 9):
        assert "ssd_precondition_%dof8 on %s" % (number, d0) in output, output[-3000:]
    entries = by_test_and_device(report)
    parts = [entries[("ssd_precondition_%dof8" % number, d0)]["record"] for number in range(1, 9)]
    assert sum(part["bytes"] for part in parts) == 2 * DISK_BYTES
    assert all(part["device_io"]["write_bytes"] >= part["bytes"] for part in parts)
    assert (phase(0), phase(1)) == ("steady", phase(1)) and phase(1).startswith("unsteady")

    steady = entries[("ssd_steady_rand_write", d0)]
    record = steady["record"]
    state = record["steady_state"]
    print("\nsteady %s: %.1f IOPS (window %s), attained %s, max deviation %.1f %%, slope excursion %.1f %%, "
          "whole job %.1f IOPS" % (d0, record["metrics"]["write_iops"], state["iops"], state["attained"],
                                   state["max_deviation_percent"], state["slope_excursion_percent"], state["job_iops"]))
    assert state["attained"] is True and state["fio_attained"] is True, state
    assert abs(record["metrics"]["write_iops"] - STEADY_IOPS) / STEADY_IOPS < 0.05, record["metrics"]
    assert len(state["iops"]) == 8 and state["window_s"] == 8
    assert state["preconditioned_bytes"] == 2 * DISK_BYTES
    assert record["seconds"] < 24   # fio stopped at steady state, before the time limit
    assert steady["verdict"] == "pass", steady["reasons"]
    read = entries[("ssd_steady_rand_read", d0)]
    assert read["record"]["steady_state"]["attained"] is True and read["verdict"] == "pass", read["reasons"]

    unsteady = entries[("ssd_steady_rand_write", d1)]
    state = unsteady["record"]["steady_state"]
    print("never settles %s: window %s, max deviation %.1f %%" % (d1, state["iops"], state["max_deviation_percent"]))
    assert state["attained"] is False and state["fio_attained"] is False, state
    assert unsteady["verdict"] == "not_steady", unsteady["reasons"]
    assert any("steady state not attained" in finding["reason"] for finding in unsteady["reasons"]), unsteady["reasons"]
    assert unsteady["record"]["seconds"] >= 23   # ran to the time limit
    assert report["summary"]["passed"] is False and report["summary"]["counts"]["not_steady"] == 1

    # report.html: one chart of the window's per-second IOPS per steady-state record.
    html = (report_dir / "report.html").read_text()
    assert html.count('class="chart steady-chart"') == 4, html.count('steady-chart')
    assert "not_steady" in html
    assert os.path.getsize(report_dir / "report.json") > 0
