"""The burnin profile through the real playbook (lab `lburnin`, lburnin_lab.yml): issue 33's burn-in.

One host: d0 and d1 raw 64 MiB disks granted raw_write through the real interlock, d2 a 128 MiB filesystem disk;
all 32 MiB/s. d1 gets a bit of byte 40 MiB + 100 flipped after each write to its block (SPEC `flip_byte_at`, a lab
feature). d2's health grows under load: a STAND-IN smartctl, bind-mounted on /usr/local/sbin inside the lab host's
mount namespace only, prints for d2 a real smartctl 7.0 capture (tests/fixtures/burnin/smartctl70-ata-attributes.json)
whose reallocated-sector count is 0 until 96 MiB more than at its first reading were written to d2, then 8; for
any other disk it runs the real smartctl (loop devices: no SMART). validate.yml runs profile burnin with a budget
of 8 s per target and an expected speed of 64 MiB/s, so the plan lists 4 cycles of ~2 s (the disks do 32 MiB/s:
~4 s each). Proves: the budget ends each target's burn-in (the later cycles are skipped, saying so); d0's cycles
pass, each with its progress; d1 is `corrupt` in every cycle that ran; d2 is `unhealthy` after its first cycle with
`health: reallocated sectors 0 -> 8 since the burn-in began (cycle 1 of 4): the burn-in stopped` and its later
cycles are skipped `burn-in stopped after cycle 1: ...`; no burn-in state is left on the host. Root only.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import labhelpers
from labhelpers import REPO, inventory_path, lab, lab_disks, needs_root, on_host, playbook, raw_write_grant

SPEC = Path(__file__).resolve().parent / "lburnin_lab.yml"
LAB = "lburnin"
HOST = "lburnin-n01"
MIB = 1 << 20
CAPTURE = REPO / "tests" / "fixtures" / "burnin" / "smartctl70-ata-attributes.json"
STANDIN = "/srv/standin-bin"
BUDGET_S = 8
CYCLES = 4

pytestmark = needs_root


def must(command):
    result = on_host(LAB, HOST, command)
    assert result.returncode == 0, (command, result.stdout, result.stderr)
    return result.stdout


def install_smartctl_stand_in(device):
    """STAND-IN smartctl (labhelpers.install_smartctl_stand_in): the real capture for `device`, its reallocated
    sectors raised to 8 once 96 MiB more were written to it than at the stand-in's first reading."""
    healthy = json.loads(CAPTURE.read_text())
    grown = json.loads(CAPTURE.read_text())
    for attribute in grown["ata_smart_attributes"]["table"]:
        if attribute["id"] == 5:
            attribute["raw"] = {"value": 8, "string": "8"}
    labhelpers.install_smartctl_stand_in(LAB, HOST, device, healthy, grown, 96 * MIB, "tests/integration/test_burnin.py",
                                         STANDIN)


def test_burn_in_cycles_within_the_budget_stop_at_grown_errors_and_find_flipped_bits(tmp_path):
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        disks = lab_disks(LAB, HOST)
        raw, allow = (list(column) for column in zip(*(raw_write_grant(LAB, disk) for disk in disks[:2])))
        filesystem = disks[2]["path"]
        install_smartctl_stand_in("/dev/" + disks[2]["device"])
        started = time.monotonic()
        returncode, output, report = playbook(inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path, {
            "diskproof_targets": [{"device": device, "mode": "raw_write"} for device in raw] + [{"path": filesystem}],
            "diskproof_destructive": True, "diskproof_destructive_allow": allow, "diskproof_profile": "burnin",
            "diskproof_burnin_hours": BUDGET_S / 3600, "benchmark_expected_mb_per_s": 2 * 64 * MIB * CYCLES / BUDGET_S / 1e6,
            "benchmark_reserve_min_bytes": 4 * MIB, "quiesce_idle_window": 1}, timeout=900)
        took = time.monotonic() - started
        assert report is not None, output[-3000:]
        entries = {}
        for entry in report["results"]:
            if entry.get("record"):
                entries.setdefault(entry["record"]["target"]["path"], {})[entry["test"]] = entry
        for path, tests in sorted(entries.items()):
            for test, entry in sorted(tests.items()):
                print("%s %s: %s %s | %s" % (path, test, entry["verdict"], entry["reason"], "; ".join(entry["notes"])))
        skipped = re.findall(r"skipping: \[%s\] => \(item=(burnin_\d+of\d+) on (\S+) .*" % HOST, output)
        print("skipped cycles: %s; validate.yml %.0f s" % (skipped, took))
        assert all(path in entries for path in raw + [filesystem]), output[-3000:]
        ran = {path: sorted(test for test in tests if test.startswith("burnin_")) for path, tests in entries.items()}
        # The plan: CYCLES cycles per target; the budget cuts each target's burn-in (the disks are half as fast).
        assert "burnin_1of%d" % CYCLES in ran[raw[0]] and len(ran[raw[0]]) < CYCLES, ran
        for test, entry in entries[raw[0]].items():
            if test.startswith("burnin_"):
                assert entry["verdict"] == "pass", entry
                number = test[len("burnin_"):].split("of")[0]
                assert any(note.startswith("burn-in cycle %s of up to %d: " % (number, CYCLES)) for note in entry["notes"])
                assert "64 MiB read back as written (fio verify=pattern)" in entry["notes"], entry
        # d1: the flipped bit in every cycle that ran.
        for test in ran[raw[1]]:
            flipped = entries[raw[1]][test]
            assert flipped["verdict"] == "corrupt", flipped
            assert "1 with changed data (flipped bits); the first at offset %d" % (40 * MIB) in flipped["reason"]
        # d2: the first cycle's reading after it shows the grown counter; the burn-in stops there.
        assert ran[filesystem] == ["burnin_1of%d" % CYCLES], ran
        grew = entries[filesystem]["burnin_1of%d" % CYCLES]
        assert grew["verdict"] == "unhealthy", grew
        assert grew["reason"] == ("health: reallocated sectors 0 -> 8 since the burn-in began (cycle 1 of %d): the "
                                  "burn-in stopped" % CYCLES), grew["reason"]
        assert grew["record"]["health"]["grew"] == ["reallocated sectors 0 -> 8"]
        stopped = [test for test, path in skipped if path == filesystem]
        assert stopped == ["burnin_%dof%d" % (number, CYCLES) for number in range(2, CYCLES + 1)], skipped
        assert "burn-in stopped after cycle 1: reallocated sectors 0 -> 8" in output
        assert re.search(r"burn-in budget of 8 s spent \(\d+ s since it began\) after \d of %d cycles" % CYCLES, output)
        assert returncode in (0, 2) and report["summary"]["passed"] is False
        # Nothing of the burn-in left on the host.
        assert must("ls /srv/diskproof-state /var/lib/diskproof 2>/dev/null | grep -c '^burnin-' || true").strip() == "0"
    finally:
        lab("down", "--name", LAB)
    assert not Path("/dev/shm/diskproof-lab-%s" % LAB).exists()
