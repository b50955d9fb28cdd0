"""`diskproof_select: all_data_disks` end to end through the real playbooks/validate.yml: the disks the
discover role selects are the targets the benchmark role runs, with no diskproof_targets at all.

Lab `dsel` (dsel_lab.yml): three hosts, each with d0 (ext4, mounted at /srv/diskproof/d0), d1 (a bare
disk) and d2 (a bare disk excluded with `diskproof_exclude: ["loop:*-d2.img"]`). The test's inventory is
the lab's with `diskproof_targets` removed and the selector set on every host. Loop devices are never
data disks (every lab host sees every loop device of this machine), so each host names its own lab
images with `diskproof_select_loop_files` - the only way a loop device is ever selected.

One validate run, one case per host (host variables):
- dsel-n01, default class (raw_read): d0 is tested on its filesystem (a run directory the role creates
  and removes), d1 raw and read-only (its written-sector counter and bytes unchanged), d2 not at all;
- dsel-n02, `diskproof_select_mode: raw_write` behind the interlock (`diskproof_destructive`, its own d1
  image allow-listed, bound to it): d1 is written raw; d2 still untouched;
- dsel-n03, the same without being allow-listed (the list names n02's image, bound to n02): the host
  stops at discover naming the interlock, before anything runs or is written on it.
Then a selection that leaves nothing: refused with what to do, before the quiesce's lock (validate.yml discovers
inside the quiesce's module call: the plan the quiesce made for the selected disks is the one the benchmark role
runs - its own plan task is skipped on every host that ran).

Real lab (tools/lab), real ansible-playbook with the report callback. Root only.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from labhelpers import REPO, inventory_path, lab, needs_root, on_host, playbook, sha256_of, written_sectors

SPEC = Path(__file__).resolve().parent / "dsel_lab.yml"
LAB = "dsel"
READER, WRITER, REFUSED = "dsel-n01", "dsel-n02", "dsel-n03"
VALIDATE = REPO / "playbooks" / "validate.yml"
MIB = 1 << 20
FS_MOUNT = "/srv/diskproof/d0"
IMAGES = "/dev/shm/diskproof-lab-dsel/images/"

pytestmark = needs_root

# What every host of the test's inventory sets instead of diskproof_targets: the selector, its own lab
# images as the loop devices it may select, and d2 excluded.
SELECT_HOST_VARS = {
    "diskproof_select": "all_data_disks",
    "diskproof_select_loop_files": [IMAGES + "{{ inventory_hostname }}-d*.img"],
    "diskproof_exclude": ["loop:*-d2.img"],
}
# Only n02's bare disk may be written, and only on n02 (a host-bound entry).
WRITER_ALLOWED = ["%s:loop:%s%s-d1.img" % (WRITER, IMAGES, WRITER)]
PER_HOST = {
    READER: {"benchmark_tests": ["dd_seq_read"]},
    WRITER: {"benchmark_tests": ["dd_seq_write_direct"], "diskproof_select_mode": "raw_write",
             "diskproof_destructive": True, "diskproof_destructive_allow": WRITER_ALLOWED},
    REFUSED: {"benchmark_tests": ["dd_seq_write_direct"], "diskproof_select_mode": "raw_write",
              "diskproof_destructive": True, "diskproof_destructive_allow": WRITER_ALLOWED},
}
# One run per test, and a 1 s idle window for the quiesce (the default 5 s proves nothing more here).
SHORT = {"benchmark_repeats": 1, "benchmark_max_repeats": 1, "quiesce_idle_window": 1}


@pytest.fixture(scope="module")
def dsel(tmp_path_factory):
    """The lab up; {"inventory": the lab's inventory with no diskproof_targets at all, each host selecting its
    disks instead, "disks": {host: {d0|d1|d2: {name, device, image}}}}."""
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(inventory_path(LAB).read_text())
        hosts = inventory["all"]["children"]["lab"]["hosts"]
        disks = {}
        for host, host_vars in hosts.items():
            del host_vars["diskproof_targets"]
            host_vars.update(SELECT_HOST_VARS, **PER_HOST[host])
            truth = host_vars["diskproof_lab_disks"]
            assert [disk["mode"] for disk in truth] == ["filesystem", "raw", "raw"], truth
            entry = {}
            for disk in truth:
                name = disk["device"]
                with open("/sys/block/%s/loop/backing_file" % name, encoding="utf-8") as handle:
                    image = handle.read().strip()
                assert image == "%s%s-d%d.img" % (IMAGES, host, disk["index"]), image   # the lab's own image
                entry["d%d" % disk["index"]] = {"name": name, "device": "/dev/" + name, "image": image}
            # A random pattern on the bare disks (a write of zeros would not show in a hash of zeros).
            for key in ("d1", "d2"):
                with open(entry[key]["image"], "r+b") as handle:
                    for _chunk in range(16):
                        handle.write(os.urandom(4 * MIB))
            disks[host] = entry
        selecting = tmp_path_factory.mktemp("dsel") / "inventory.yml"
        selecting.write_text(yaml.safe_dump(inventory))
        yield {"inventory": selecting, "disks": disks}
    finally:
        lab("down", "--name", LAB)


def snapshot(dsel):
    """(host, d1|d2) -> (sha256 of the bare disk's image, its written-sector counter)."""
    return {(host, key): (sha256_of(disk["image"]), written_sectors(disk["device"]))
            for host, entry in dsel["disks"].items() for key, disk in entry.items() if key != "d0"}


@pytest.fixture(scope="module")
def selection_run(dsel, tmp_path_factory):
    """validate.yml once over the three hosts: (exit code, output, {(host, disk): [records]}, before, after)."""
    before = snapshot(dsel)
    rc, output, report = playbook(dsel["inventory"], VALIDATE, tmp_path_factory.mktemp("report"), SHORT)
    records = {}
    for entry in (report or {}).get("results", []):
        record = entry.get("record")
        if record:
            records.setdefault((entry["host"], record["target"]["device"]), []).append(record)
    return rc, output, records, before, snapshot(dsel)


def state_dirs(dsel):
    """Each host's quiesce state directory (the lab inventory's quiesce_state_dir): names, sizes, times."""
    return {host: on_host(LAB, host, "ls -lA --time-style=+%s.%N /srv/diskproof-state 2>&1 || true").stdout
            for host in dsel["disks"]}


def run_directories_left(host):
    return [name for name in on_host(LAB, host, "ls -a %s" % FS_MOUNT).stdout.split() if name.startswith("diskproof-")]


def task_lines(output, task_start):
    """The host lines of one task of the run's output ("TASK [<task_start>..."), sorted."""
    task = re.search(r"TASK \[%s[^\n]*\*+\n((?:\w+: \[[^\n]*\n)+)" % re.escape(task_start), output)
    assert task, output[-4000:]
    return sorted(task.group(1).splitlines())


def test_discovery_is_the_quiesce_calls_and_its_plan_of_the_selected_disks_is_the_one_that_runs(selection_run):
    """validate.yml discovers inside the quiesce's module call (the discover role's own call is a play of its own whose
    hosts are none then: not even a skipped task per host), and the plan the quiesce made with that discovery - the
    selected disks, their identities and raw grants - is exactly what the benchmark role asks for: its own plan task
    is skipped on both hosts that ran."""
    _rc, output, _records, _before, _after = selection_run
    assert re.search(r"PLAY \[Discover the hosts and their disks\] \*+\nskipping: no hosts matched", output), output[-4000:]
    assert "TASK [diskproof.fleet.discover : Discover the host" not in output
    assert task_lines(output, "diskproof.fleet.benchmark : Plan the tests") == [
        "skipping: [%s]" % host for host in (READER, WRITER)]


def test_the_filesystem_disk_and_the_bare_disk_are_tested_raw_read_and_the_excluded_one_not(dsel, selection_run):
    _rc, output, records, before, after = selection_run
    disks = dsel["disks"][READER]
    filesystem = records.get((READER, disks["d0"]["name"]), [])
    assert sorted(record["test"] for record in filesystem) == ["dd_seq_read", "dd_seq_write"], output[-4000:]
    for record in filesystem:
        assert record["error"] is None, record["error"]
        assert record["target"]["path"] == FS_MOUNT and record["target"].get("kind") != "raw", record["target"]
    raw = records.get((READER, disks["d1"]["name"]), [])
    assert [record["test"] for record in raw] == ["dd_seq_read"], raw
    assert raw[0]["error"] is None and raw[0]["target"]["class"] == "raw_read", raw[0]["target"]
    assert raw[0]["target"]["path"] == disks["d1"]["device"] and raw[0]["device_io"]["write_bytes"] == 0
    assert (READER, disks["d2"]["name"]) not in records
    assert run_directories_left(READER) == []
    # raw_read means read only: the bare disks' bytes and written-sector counters did not move.
    assert all(after[(READER, key)] == before[(READER, key)] for key in ("d1", "d2"))


def test_raw_write_behind_the_interlock_writes_the_allowed_bare_disk_and_not_the_excluded_one(dsel, selection_run):
    _rc, output, records, before, after = selection_run
    disks = dsel["disks"][WRITER]
    raw = records.get((WRITER, disks["d1"]["name"]), [])
    assert [record["test"] for record in raw] == ["dd_seq_write_direct"], output[-4000:]
    assert raw[0]["error"] is None and raw[0]["target"]["class"] == "raw_write", raw[0]["target"]
    assert raw[0]["device_io"]["write_bytes"] > 0
    assert after[(WRITER, "d1")][1] > before[(WRITER, "d1")][1]      # the allowed bare disk was written
    filesystem = records.get((WRITER, disks["d0"]["name"]), [])
    assert sorted(record["test"] for record in filesystem) == ["dd_seq_write", "dd_seq_write_direct"], filesystem
    assert (WRITER, disks["d2"]["name"]) not in records
    assert after[(WRITER, "d2")] == before[(WRITER, "d2")]              # the excluded one: not a byte
    assert run_directories_left(WRITER) == []


def test_raw_write_without_the_allow_list_stops_the_host_at_discover_with_nothing_written(dsel, selection_run):
    rc, output, records, before, after = selection_run
    assert rc != 0    # dsel-n03 failed, as it must
    disks = dsel["disks"][REFUSED]
    assert "refusal(s) on %s; nothing was written" % REFUSED in output, output[-4000:]
    assert "%s (requested raw_write) not_allow_listed" % disks["d1"]["device"] in output
    assert disks["d2"]["device"] + " (requested" not in output
    assert not any(host == REFUSED for host, _device in records), sorted(records)
    assert all(after[(REFUSED, key)] == before[(REFUSED, key)] for key in ("d1", "d2"))
    assert run_directories_left(REFUSED) == []


def test_a_selection_that_leaves_no_disk_is_refused_with_what_to_do(dsel, selection_run, tmp_path):
    before, states_before = snapshot(dsel), state_dirs(dsel)
    rc, output, _report = playbook(dsel["inventory"], VALIDATE, tmp_path / "report",
                                   dict(SHORT, diskproof_exclude=["loop:*"]))
    assert rc != 0
    for host in dsel["disks"]:
        assert "no data disk found on %s" % host in output, output[-4000:]
    assert "Set diskproof_targets (directories or devices to test)" in output
    # Refused by the discovery that opens the quiesce's module call, before its lock: no service stopped, no lock.
    for host in dsel["disks"]:
        assert "1 refusal(s) on %s; nothing was written or stopped: " % host in output, output[-4000:]
    assert state_dirs(dsel) == states_before    # no lock taken, no run recorded: the quiesce's files untouched
    assert snapshot(dsel) == before
