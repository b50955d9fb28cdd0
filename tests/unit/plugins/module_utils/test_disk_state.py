# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_disk_state.py and _pcie.py on real sysfs trees (tests/fixtures/disk_state/, each with its .src.md:
prometheus/procfs's NVMe under a x8 port, this VM's virtio disk and loop device, a degraded link built from the
values nokyan/resources#512 quotes, a constructed libata link), the health counters of real smartctl / nvme-cli
JSON, and bench_run's disk_state option on a replayed tree."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _disk_state, _health, _pcie
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.nvme import nvme_result
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.smartctl import smartctl_result
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

TESTS = pathlib.Path(__file__).parents[3]
sys.path.insert(0, str(TESTS))
from sysfs_tree import materialise  # noqa: E402  (tests/, put on the path above)

FIXTURES = TESTS / "fixtures"
STATE = FIXTURES / "disk_state"
ATA_SMART = FIXTURES / "quiesce" / "smartctl70-ata-selftest-completed.json"
NVME_SMART_FAILED = STATE / "smartctl70-nvme-media-errors.json"
NVME_SMART_LOG = STATE / "nvme-smart-log-dell-exporter.json"
GET_FEATURE = json.loads((STATE / "nvme-get-feature.json").read_text())
HEALTH_KEYS = {key for key, _text in _health.COUNTERS} | set(_health.READINGS) | {"critical_warning", "health"}


def tree(tmp_path, name):
    return str(materialise(STATE / name, tmp_path / "root"))


def smart(path):
    return smartctl_result(0, path.read_text(), "")


def test_every_disk_state_fixture_has_its_source_note():
    names = set(os.listdir(STATE))
    for name in names:
        if not name.endswith(".src.md"):
            assert os.path.splitext(name)[0] + ".src.md" in names, name


# ---------------------------------------------------------------------------------------------
# the real trees
# ---------------------------------------------------------------------------------------------

def test_procfs_nvme_every_field_and_a_port_wider_than_the_device_is_not_degraded(tmp_path):
    state = _disk_state.read_disk_state("nvme0n1", tree(tmp_path, "procfs-nvme0n1.json"), "nvme0n1p1")
    assert {key: state[key] for key in state if key not in ("pcie", "health", "unknown", "partition")} == {
        "disk": "nvme0n1", "model": "CT2000P3SSD8", "firmware": "P9CR30A", "rotational": False, "scheduler": "none",
        "nr_requests": 1023, "queue_depth": None, "read_ahead_kb": 128, "max_sectors_kb": 128,
        "logical_block_size": 512, "physical_block_size": 512, "write_cache": "write back", "sata": None,
        "nvme_power": None}
    assert state["partition"] == {"name": "nvme0n1p1", "start_bytes": 2048 * 512, "alignment_offset": 0, "aligned": True}
    assert state["pcie"] == {"function": "0000:01:00.0", "speed_gts": 8.0, "width": 4, "max_speed_gts": 8.0,
                             "max_width": 4, "port": "0000:00:02.1", "port_max_speed_gts": 8.0, "port_max_width": 8,
                             "degraded": False, "text": "PCIe link x4 at 8 GT/s, capable x4 at 8 GT/s"}
    assert set(state["health"]) == HEALTH_KEYS and state["health"]["health"] == "unavailable"
    assert state["unknown"] == [
        "health: not read",
        "queue_depth: nvme0n1's device nvme0 has none (a SCSI device's; NVMe and virtio queue in nr_requests)",
        "nvme_power: not asked (a replayed sysfs tree has no device to ask)"]


def test_degraded_link_of_the_quoted_values(tmp_path):
    state = _disk_state.read_disk_state("nvme0n1", tree(tmp_path, "degraded-pcie-nokyan512.json"))
    assert state["pcie"] == {"function": "0000:01:00.0", "speed_gts": 16.0, "width": 8, "max_speed_gts": 32.0,
                             "max_width": 16, "port": "0000:00:01.1", "port_max_speed_gts": None,
                             "port_max_width": None, "degraded": True,
                             "text": "PCIe link x8 at 16 GT/s, capable x16 at 32 GT/s"}
    assert state["scheduler"] is None and state["unknown"][0].startswith("queue: scheduler, nr_requests")


def test_this_vms_virtio_disk_has_no_link_and_no_identity(tmp_path):
    state = _disk_state.read_disk_state("vda", tree(tmp_path, "vda-sysfs.json"))
    assert (state["rotational"], state["scheduler"], state["nr_requests"], state["read_ahead_kb"],
            state["max_sectors_kb"], state["logical_block_size"], state["physical_block_size"],
            state["write_cache"]) == (True, "mq-deadline", 256, 8192, 4096, 512, 4096, "write back")
    assert (state["model"], state["firmware"], state["queue_depth"], state["pcie"], state["sata"]) == (None,) * 5
    assert "pcie: vda's PCI function 0000:00:02.0 has no PCIe link (conventional PCI: a VM's virtio disk)" \
        in state["unknown"]
    assert "identity: vda's device virtio1 has no model or firmware in sysfs and smartctl gave none" in state["unknown"]


def test_a_loop_device_without_a_device_link_is_unknown_not_an_error(tmp_path):
    state = _disk_state.read_disk_state("loop0", tree(tmp_path, "vda-sysfs.json"))
    assert (state["nr_requests"], state["write_cache"], state["rotational"]) == (128, "write through", False)
    assert state["pcie"] is None and state["model"] is None
    assert state["unknown"][-1].startswith("device: loop0 has no device link (a virtual block device")


def test_partition_of_a_device_number_in_the_tree(tmp_path):
    root = tree(tmp_path, "vda-sysfs.json")
    assert _disk_state.partition_of((254, 0), root) is None          # vda is a whole disk
    assert _disk_state.partition_of((8, 1), root) is None            # no such device
    links = {"links": {"sys/dev/block/259:1": "../../devices/pci0000:00/0000:00:02.1/0000:01:00.0/nvme/nvme0/"
                                              "nvme0n1/nvme0n1p1"}}
    nvme = materialise(STATE / "procfs-nvme0n1.json", tmp_path / "nvme")
    materialise(links, nvme)   # constructed: procfs's ttar has no /sys/dev/block
    assert _disk_state.partition_of((259, 1), str(nvme)) == "nvme0n1p1"


@pytest.mark.parametrize("limit", ["6.0 Gbps\n", "<unknown>\n"])
def test_sata_link_from_libata_with_smartctls_interface_speed(tmp_path, limit):
    document = json.loads((STATE / "sata-3g-of-6g-constructed.json").read_text())
    document["files"]["sys/devices/pci0000:00/0000:00:17.0/ata3/link3/ata_link/link3/hw_sata_spd_limit"] = limit
    root = str(materialise(document, tmp_path / "root"))
    state = _disk_state.read_disk_state("sda", root, read_health=lambda disk: (smart(ATA_SMART), None))
    # hw_sata_spd_limit '<unknown>': the maximum is smartctl's (the real capture's interface_speed.max, 6.0 Gb/s)
    assert state["sata"] == {"speed_gbps": 3.0, "max_gbps": 6.0, "degraded": True,
                             "text": "SATA link 3.0 Gb/s, capable 6.0 Gb/s"}
    assert (state["model"], state["firmware"]) == ("Samsung SSD 860 EVO 500GB", "RVT02B6Q")   # smartctl's
    assert state["health"]["health"] == "passed" and state["health"]["temperature_c"] == 36


def test_smartctl_interface_speed_of_a_real_ata_capture():
    assert smart(ATA_SMART)["interface_speed"] == {"current_gbps": 6.0, "max_gbps": 6.0}
    assert smart(NVME_SMART_FAILED)["interface_speed"] is None


# ---------------------------------------------------------------------------------------------
# missing sources, and a root that must not be left
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("disk", [None, "", "../etc", "nvme0n1"])
def test_an_empty_root_or_no_disk_is_every_field_unknown(tmp_path, disk):
    state = _disk_state.read_disk_state(disk, str(tmp_path))
    assert all(state[key] is None for key in state if key not in ("disk", "health", "unknown"))
    assert len(state["unknown"]) == 1 and state["unknown"][0].startswith("disk: ")


def test_symlinks_resolve_inside_the_root_never_out_of_it(tmp_path):
    outside = tmp_path / "outside"
    (outside / "queue").mkdir(parents=True)
    (outside / "queue" / "nr_requests").write_text("999\n")
    root = tmp_path / "root"
    inside = root / "sys" / "devices" / "virtual" / "block" / "loop9"
    (inside / "queue").mkdir(parents=True)
    (inside / "queue" / "nr_requests").write_text("64\n")
    (root / "sys" / "block").mkdir(parents=True)
    # relative past the root, and absolute: both mean the tree's own /, as under chroot
    os.symlink("../../../../../../outside", root / "sys" / "block" / "escape")
    os.symlink(str(outside), root / "sys" / "block" / "absolute")
    os.symlink("/sys/devices/virtual/block/loop9", root / "sys" / "block" / "loop9")
    assert _disk_state.read_disk_state("escape", str(root))["nr_requests"] is None
    assert _disk_state.read_disk_state("absolute", str(root))["nr_requests"] is None
    assert _disk_state.read_disk_state("loop9", str(root))["nr_requests"] == 64
    os.symlink("loop", root / "sys" / "block" / "loop")
    assert _disk_state.SysTree(str(root)).resolve("/sys/block/loop") is None     # a link loop: no answer


def test_nvme_power_through_the_runner_and_its_failures():
    answers = {"0x02": (0, GET_FEATURE["blog-ps3-human"], ""),
               "0x0c": (0, "get-feature:0x0c (Autonomous Power State Transition), Current value:0x000001\n", "")}
    asked = []

    def run(argv):
        asked.append(list(argv))
        return answers[argv[4]]

    assert _disk_state.nvme_power("nvme0n1", run, False) == ({"power_state": 3, "apst": True}, None)
    assert asked == [["nvme", "get-feature", "/dev/nvme0n1", "-f", "0x02"],
                     ["nvme", "get-feature", "/dev/nvme0n1", "-f", "0x0c", "-H"]]
    # the second answer quoted from a public document: 0x0c is not in it, so APST is unknown
    answers["0x0c"] = (0, GET_FEATURE["notes-ps4"], "")
    state, why = _disk_state.nvme_power("nvme0n1", run, False)
    assert state == {"power_state": 3, "apst": None} and "0x0c" in why
    missing, why = _disk_state.nvme_power("nvme0n1", lambda argv: (None, "", "nvme is not installed"), False)
    assert missing is None and why == "nvme_power: nvme is not installed"
    assert _disk_state.nvme_power("nvme0n1", run, True)[1].endswith("(a replayed sysfs tree has no device to ask)")


def test_a_reader_never_raises_on_garbage(tmp_path):
    document = json.loads((STATE / "procfs-nvme0n1.json").read_text())
    for key in document["files"]:
        document["files"][key] = "\x00garbage \u0664\n"
    root = str(materialise(document, tmp_path / "root"))
    state = _disk_state.read_disk_state("nvme0n1", root, "nvme0n1p1")
    assert state["nr_requests"] is None and state["pcie"]["degraded"] is None and state["partition"] is None


# ---------------------------------------------------------------------------------------------
# _pcie's rule, and the evidence bundle on the same tree
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("device", "port", "expected"), [
    ((8.0, 4, 8.0, 4), (8.0, 8), False),      # x4 device under a x8 port, trained x4
    ((8.0, 4, 16.0, 4), (8.0, 8), False),     # a Gen4 device in a Gen3 port trains Gen3: what both can do
    ((8.0, 2, 16.0, 4), (16.0, 4), True),     # narrower than both ends
    ((16.0, 8, 32.0, 16), (None, None), True),
    ((None, None, 8.0, 4), (8.0, 4), None),   # link down
])
def test_degraded_only_below_what_both_ends_can_do(device, port, expected):
    values = dict(zip(("speed_gts", "width", "max_speed_gts", "max_width"), device))
    assert _pcie.degraded(values, *port) is expected


def test_the_evidence_bundle_reads_the_same_link_with_its_port(tmp_path):
    from ansible_collections.diskproof.fleet.plugins.module_utils import _evidence
    root = tree(tmp_path, "procfs-nvme0n1.json")
    reader = _disk_state.SysTree(root)
    device = reader.resolve("/sys/block/nvme0n1/device")
    link = _evidence.pcie_link("nvme0n1", device, reader.read)
    assert (link["pci_function"], link["downgraded"], link["note"]) == ("0000:01:00.0", False, None)
    assert (link["upstream_port"], link["upstream_max_link_width"]) == ("0000:00:02.1", "8")


# ---------------------------------------------------------------------------------------------
# health counters of real JSON
# ---------------------------------------------------------------------------------------------

def test_health_of_a_real_smartctl_nvme_capture_with_media_errors():
    counters = _health.health_counters(smart(NVME_SMART_FAILED), None)
    assert {key: counters[key] for key in ("media_errors", "error_log_entries", "critical_warning", "temperature_c",
                                           "percentage_used", "available_spare", "available_spare_threshold",
                                           "warning_temp_time", "critical_comp_time", "thermal_throttle_events",
                                           "health")} == {
        "media_errors": 7, "error_log_entries": 62, "critical_warning": 0, "temperature_c": 35, "percentage_used": 3,
        "available_spare": 99, "available_spare_threshold": 10, "warning_temp_time": 0, "critical_comp_time": 0,
        "thermal_throttle_events": None, "health": "passed"}
    baseline = dict(counters, media_errors=0, error_log_entries=62)
    assert _health.new_problems(baseline, counters) == ["media errors 0 -> 7"]


def test_health_of_a_real_nvme_smart_log_with_thermal_counters():
    log = nvme_result(0, NVME_SMART_LOG.read_text(), "")
    assert (log["thm_temp1_trans_count"], log["thm_temp2_trans_count"], log["thermal_throttle_events"]) == (0, 0, 0)
    counters = _health.health_counters(None, log)
    assert {key: counters[key] for key in ("temperature_c", "percentage_used", "available_spare",
                                           "available_spare_threshold", "error_log_entries", "thermal_throttle_events",
                                           "critical_warning", "health")} == {
        "temperature_c": 28, "percentage_used": 15, "available_spare": 100, "available_spare_threshold": 5,
        "error_log_entries": 17, "thermal_throttle_events": 0, "critical_warning": 0, "health": "unavailable"}


def test_thermal_throttle_events_add_both_counters():
    log = json.loads(NVME_SMART_LOG.read_text())
    log.update(thm_temp1_trans_count=3, thm_temp2_trans_count=1)
    assert nvme_result(0, json.dumps(log), "")["thermal_throttle_events"] == 4


# ---------------------------------------------------------------------------------------------
# bench_run's disk_state option
# ---------------------------------------------------------------------------------------------

DD = ["dd", "if=/dev/zero", "of=/dev/null", "bs=4096", "count=1"]


def run_bench(capsys, args):
    with patch_module_args(dict(args, settle_s=0)):
        with pytest.raises(SystemExit) as caught:
            bench_run.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
def test_bench_run_puts_the_disk_state_before_and_after_on_every_record(capsys, tmp_path):
    root = tree(tmp_path, "procfs-nvme0n1.json")
    code, result = run_bench(capsys, {"argv": DD, "device_io": False, "disk_state": True,
                                      "sys_root": root, "fail_on_error": False,
                                      "target": {"path": str(tmp_path), "device": "nvme0n1"}})
    assert code == 0, result["msg"]
    records = result["ansible_facts"]["diskproof_results"]
    assert records
    for record in records:
        assert set(record["disk_state"]) == {"before", "after"}
        # the replayed tree does not change during the run: after holds no change, state_after is before again
        assert record["disk_state"]["after"] == {}
        for reading in (record["disk_state"]["before"], _disk_state.state_after(record["disk_state"])):
            assert reading["pcie"]["text"] == "PCIe link x4 at 8 GT/s, capable x4 at 8 GT/s"
            assert reading["nr_requests"] == 1023 and reading["health"]["health"] == "unavailable"
            assert "nvme_power: not asked (a replayed sysfs tree has no device to ask)" in reading["unknown"]


def test_after_holds_only_what_changed_and_state_after_puts_it_back():
    before = {"disk": "sda", "scheduler": "mq-deadline", "write_cache": "write back", "unknown": ["pcie: none"],
              "health": {"reallocated_sectors": 0, "temperature_c": 36, "health": "passed"}}
    after = {"disk": "sda", "scheduler": "mq-deadline", "write_cache": "write through", "unknown": ["pcie: none"],
             "health": {"reallocated_sectors": 8, "temperature_c": 36, "health": "passed"}}
    changed = _disk_state.changes(before, after)
    assert changed == {"write_cache": "write through", "health": {"reallocated_sectors": 8}}
    assert _disk_state.state_after({"before": before, "after": changed}) == after
    assert _disk_state.changes(before, before) == {}
    # no reading before (its reader failed): after is the whole reading; no reading after: nothing to rebuild
    assert _disk_state.changes(None, after) == after
    assert _disk_state.state_after({"before": None, "after": after}) == after
    assert _disk_state.state_after({"before": before, "after": None}) == {}


@pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
def test_bench_run_without_disk_state_reads_nothing(capsys, tmp_path):
    code, result = run_bench(capsys, {"argv": DD, "device_io": False, "fail_on_error": False})
    assert all("disk_state" not in record for record in result["ansible_facts"]["diskproof_results"])


@pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
def test_a_failed_run_and_a_failing_reader_keep_their_records(capsys, tmp_path, monkeypatch):
    root = tree(tmp_path, "vda-sysfs.json")
    code, result = run_bench(capsys, {"argv": ["dd", "if=/nonexistent/diskproof", "of=/dev/null"], "device_io": False,
                                      "disk_state": True, "sys_root": root, "fail_on_error": False,
                                      "target": {"path": str(tmp_path), "device": "vda"}})
    (record,) = result["ansible_facts"]["diskproof_results"]
    assert record["error"] and record["disk_state"]["after"] == {}
    assert _disk_state.state_after(record["disk_state"])["scheduler"] == "mq-deadline"

    def broken(*_args, **_kwargs):
        raise KeyError("a reader's bug")

    monkeypatch.setattr(_disk_state, "read_disk_state", broken)
    code, result = run_bench(capsys, {"argv": DD, "device_io": False, "disk_state": True, "sys_root": root,
                                      "target": {"path": str(tmp_path), "device": "vda"}})
    assert code == 0
    (record,) = result["ansible_facts"]["diskproof_results"]
    assert record["disk_state"]["before"]["unknown"] == ["disk state: not read (KeyError: \"a reader's bug\")"]


def test_this_vms_virtio_disk_with_its_real_smartctl_answer_has_no_health_and_says_why(tmp_path):
    """tests/fixtures/discover/vda.smartctl-x.json: smartctl 7.3 -x -j on this VM's /dev/vda (exit code 1)."""
    text = (FIXTURES / "discover" / "vda.smartctl-x.json").read_text()
    state = _disk_state.read_disk_state("vda", tree(tmp_path, "vda-sysfs.json"),
                                        read_health=lambda disk: (smartctl_result(1, text, ""), None))
    assert state["health"]["health"] == "unavailable"
    assert all(value is None for key, value in state["health"].items() if key != "health")
    assert "health: no SMART or NVMe health data (error: /dev/vda: Unable to detect device type)" in state["unknown"]
