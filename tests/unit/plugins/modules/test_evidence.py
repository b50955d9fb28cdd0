"""The evidence module through AnsibleModule on this machine's real disk vda (read-only tools: smartctl, lsblk,
udevadm, dmesg) and the real result records of tests/fixtures/report/lab-rack6-report.json: the snapshots, the
bundle (extracted with tar, checked with sha256sum), check mode and the refusals that write nothing."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import evidence

HERE = os.path.dirname(os.path.abspath(__file__))
RACK6 = os.path.join(HERE, "..", "..", "..", "fixtures", "report", "lab-rack6-report.json")

pytestmark = pytest.mark.skipif(not os.path.isdir("/sys/block/vda") or shutil.which("lsblk") is None
                                or shutil.which("sha256sum") is None or shutil.which("tar") is None,
                                reason="needs the disk vda, lsblk, tar and sha256sum")


def run_module(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            evidence.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def vda_records():
    """The real records of rack6-n04, as if measured on vda (only the device name is changed)."""
    with open(RACK6, encoding="utf-8") as handle:
        report = json.load(handle)
    records = [entry["record"] for entry in report["results"] if entry["host"] == "rack6-n04"]
    for record in records:
        record["target"] = dict(record["target"], device="vda")
    return records


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.requires_tools("smartctl", "udevadm")
@pytest.mark.requires_root("the kernel log of vda (dmesg under kernel.dmesg_restrict=1, or the journal)")
def test_snapshot_before_and_after_of_vda(tmp_path, capsys):
    root = str(tmp_path / "ev")
    code, result = run_module(capsys, state="snapshot", phase="before", dir=root, devices=["vda"])
    assert code == 0, result
    assert result["changed"] is True and result["created"] is True
    assert mode(root) == 0o700 and mode(os.path.join(root, "before", "vda", "lsblk.json")) == 0o600
    for name in ("smartctl-x.txt", "smartctl-x.json", "lsblk.json", "udevadm-info.txt", "queue.json", "pcie-link.json",
                 "dmesg.txt"):
        assert "before/vda/" + name in result["files"], name
    for name in ("uname-a.txt", "os-release.txt", "date-u.txt", "clock-offset.txt", "versions/dd.txt"):
        assert "before/host/" + name in result["files"], name
    link = json.loads((tmp_path / "ev" / "before" / "vda" / "pcie-link.json").read_text())
    assert link["device_path"] == os.path.realpath("/sys/block/vda/device")
    assert link["note"]              # a virtio disk: no PCIe link attributes on its PCI function
    commands = json.loads((tmp_path / "ev" / "before" / "commands.json").read_text())
    assert commands["phase"] == "before" and commands["shell"] is False and commands["environment"]["LC_ALL"] == "C"
    lsblk = next(entry for entry in commands["commands"] if entry.get("argv") and entry["argv"][1:2] == ["-J"])
    assert lsblk["argv"][1:] == ["-J", "-b", "-O", "/dev/vda"] and os.path.isabs(lsblk["argv"][0])
    assert lsblk["exit_code"] == 0 and lsblk["output"] == "before/vda/lsblk.json"
    assert result["clock"].startswith("clock offset: ")
    # Where the kernel lines came from (dmesg as root here; the journal or why not otherwise), never silent.
    assert result["kernel_log"].startswith("kernel log: ")
    assert (tmp_path / "ev" / "before" / "host" / "kernel-log.txt").read_text().strip() == result["kernel_log"]

    code, after = run_module(capsys, state="snapshot", phase="after", dir=root, devices=["vda"])
    assert code == 0, after
    assert after["created"] is False and "after/vda/smartctl-x.txt" in after["files"]


@pytest.mark.requires_tools("udevadm")
@pytest.mark.requires_root("the kernel log of vda (dmesg under kernel.dmesg_restrict=1, or the journal)")
def test_a_command_that_never_answers_is_stopped_and_recorded(tmp_path, capsys, monkeypatch, hanging_programs):
    # Stand-in: a smartctl that hangs, as on a failing disk (no disk here hangs); the limit lowered from 120 s so
    # the test is quick.
    hanging = hanging_programs("smartctl")["smartctl"]
    monkeypatch.setattr(evidence, "COMMAND_TIMEOUT_S", 0.5)
    code, result = run_module(capsys, state="snapshot", phase="before", dir=str(tmp_path / "ev"), devices=["vda"])
    assert code == 0, result
    commands = json.loads((tmp_path / "ev" / "before" / "commands.json").read_text())["commands"]
    smartctl = [entry for entry in commands if entry.get("argv") and entry["argv"][0] == hanging]
    assert smartctl, commands
    for entry in smartctl:   # each one stopped and written down; the rest of the snapshot was taken
        assert entry["exit_code"] is None and entry["output"] is None
        assert entry["error"] == "%s did not end within 0.5 s (it was stopped)" % " ".join(entry["argv"])
    assert "before/vda/lsblk.json" in result["files"] and "before/vda/smartctl-x.txt" not in result["files"]


def test_pack_writes_a_bundle_that_verifies(tmp_path, capsys):
    root = str(tmp_path / "ev")
    for phase in ("before", "after"):
        assert run_module(capsys, state="snapshot", phase=phase, dir=root, devices=["vda"])[0] == 0
    records = vda_records()
    disk_facts = {"vda": {"name": "vda", "serial": None, "model": None, "transport": "virtio", "size_bytes": 1 << 30,
                          "health": "unavailable", "usage": {"mount_points": ["/"]}}}
    code, result = run_module(capsys, state="pack", dir=root, results=records, disk_facts=disk_facts, host_name="vm",
                              quiesce={"run_id": "r1", "stopped": ["cron"], "idle": {"reached": True, "waited_s": 5.0}})
    assert code == 0, result
    assert result["changed"] is True
    (bundle,) = result["bundles"]
    assert bundle["disk"] == "vda" and bundle["host"] == "vm" and bundle["name"].startswith("vda-")
    assert os.path.dirname(bundle["path"]) == os.path.join(root, "bundles")
    with open(bundle["path"], "rb") as handle:
        data = handle.read()
    assert hashlib.sha256(data).hexdigest() == bundle["sha256"] and len(data) == bundle["size_bytes"]
    assert mode(bundle["path"]) == 0o600 and not os.path.exists(bundle["path"] + ".partial")

    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", bundle["path"], "-C", str(out)], check=True)
    top = out / bundle["name"][:-len(".tar.gz")]
    checked = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=top, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK") == bundle["files"] - 1
    results = json.loads((top / "results.json").read_text())
    assert results["records"] == records and results["disk"]["transport"] == "virtio"
    assert "usage" not in results["disk"]
    readme = (top / "README.md").read_text()
    assert "dd if=/dev/zero of=/srv/diskproof/d0/diskproof.testfile bs=1048576 count=256 conv=fdatasync" in readme
    assert "stopped" in readme and "cron" in readme
    assert (top / "before" / "vda" / "lsblk.json").is_file() and (top / "after" / "host" / "uname-a.txt").is_file()


def test_check_mode_writes_nothing(tmp_path, capsys):
    root = str(tmp_path / "ev")
    code, result = run_module(capsys, check_mode=True, state="snapshot", phase="before", dir=root, devices=["vda"])
    assert code == 0 and result["changed"] is True and result["created"] is False
    assert "smartctl -x /dev/vda" in result["planned"]
    code, result = run_module(capsys, check_mode=True, state="snapshot", phase="after", dir=root, devices=["vda"])
    assert code == 0, result
    code, result = run_module(capsys, check_mode=True, state="pack", dir=root, devices=["vda"],
                              disk_facts={"vda": {"serial": "S1"}})
    assert code == 0 and result["bundles"] == [] and result["planned"][0]["name"].startswith("S1-")
    assert not os.path.exists(root)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"phase": "before", "devices": ["../sda"]}, "whole-disk kernel names"),
        ({"phase": "before", "devices": ["sdzz"]}, "no such disk: sdzz"),
        ({"phase": "before", "devices": []}, "devices is empty"),
        ({"phase": "after", "devices": ["vda"]}, "holds no before snapshot"),
    ],
    ids=["path", "missing-disk", "no-devices", "after-without-before"],
)
def test_refusals_write_nothing(tmp_path, capsys, args, message):
    root = str(tmp_path / "ev")
    code, result = run_module(capsys, state="snapshot", dir=root, **args)
    assert code == 1 and message in result["msg"] and result["created"] is False
    assert not os.path.exists(root)


def test_an_existing_directory_or_snapshot_is_never_written_over(tmp_path, capsys):
    root = tmp_path / "ev"
    root.mkdir()
    (root / "keep.txt").write_text("someone else's")
    code, result = run_module(capsys, state="snapshot", phase="before", dir=str(root), devices=["vda"])
    assert code == 1 and "already exists" in result["msg"] and result["created"] is False
    assert os.listdir(root) == ["keep.txt"]
    fresh = str(tmp_path / "fresh")
    assert run_module(capsys, state="snapshot", phase="before", dir=fresh, devices=["vda"])[0] == 0
    assert run_module(capsys, state="snapshot", phase="after", dir=fresh, devices=["vda"])[0] == 0
    code, result = run_module(capsys, state="snapshot", phase="after", dir=fresh, devices=["vda"])
    assert code == 1 and "already holds its after snapshot" in result["msg"]
    code, result = run_module(capsys, state="pack", dir=str(tmp_path / "nothing"))
    assert code == 1 and "holds no before snapshot" in result["msg"]
