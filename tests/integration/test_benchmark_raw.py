"""Raw block-device targets end to end: playbooks/validate.yml (discover first, which grants raw_read)
on a lab disk that carries no filesystem (1 GiB at 50 MiB/s and 200 IOPS), read tests run on the
device node itself, and nothing is ever written to it.

- check mode with the standard profile: the plan names the raw device, runs its read tests and
  skips the others with the reason (writes need raw_write, the rest a filesystem); nothing runs.
- dd_seq_read, zcav_sweep and fio_rand_read: figures within 10 % of the throttle, the ZCAV sweep
  covers the device from offset 0 to its end in 16 reads of 64 MiB (braw_lab.yml says why that
  long: the lab's throttle credits the idle time between two dd runs), the device counters saw the reads and no write, and
  the device's sha256 is unchanged.
- a write test asked for on that raw_read device: the plan refuses it, naming the interlock,
  before any test ran.

The lab disk is filled with a random pattern through its backing image first (a zero-filled device
would not show a write of zeros in its hash); its written-sector counter must not move at all.
Real lab (tools/lab, lab `braw`), real ansible-playbook with the report callback. Root only.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from labhelpers import BIN, REPO, lab, needs_root, sha256_of, written_sectors

HERE = Path(__file__).resolve().parent
SPEC = HERE / "braw_lab.yml"
LAB = "braw"
HOST = "braw-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
VALIDATE = REPO / "playbooks" / "validate.yml"
MIB = 1 << 20
DISK_BYTES = 1024 * MIB
RATE = 50 * MIB
IOPS = 200

pytestmark = needs_root


@pytest.fixture(scope="module")
def braw():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(INVENTORY.read_text())
        disk = inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"][0]
        assert disk["mode"] == "raw" and disk["size_bytes"] == DISK_BYTES, disk
        device = "/dev/" + disk["device"]
        with open("/sys/block/%s/loop/backing_file" % disk["device"], encoding="utf-8") as handle:
            image = handle.read().strip()
        assert image.startswith("/dev/shm/diskproof-lab-%s/" % LAB), image   # the lab's own image, nothing else
        # A random pattern, written through the image (the lab's throttle is on the device), then the
        # device's own buffer cache dropped so everything reads the pattern.
        with open(image, "r+b") as handle:
            for _chunk in range(DISK_BYTES // (4 * MIB)):
                handle.write(os.urandom(4 * MIB))
            handle.flush()
            os.fsync(handle.fileno())
        subprocess.run(["blockdev", "--flushbufs", device], check=True)
        yield {"device": device, "image": image, "sha256": sha256_of(image), "written": written_sectors(device)}
    finally:
        lab("down", "--name", LAB)


def validate(tmp_path, extra, check=False):
    report_dir = tmp_path / "report"
    env = dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_NOCOLOR="1",
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(VALIDATE), "-e", json.dumps(extra)]
    if check:
        argv.append("--check")
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=900)
    report = json.loads((report_dir / "report.json").read_text()) if (report_dir / "report.json").exists() else None
    return result.returncode, result.stdout + result.stderr, report


def raw_read(braw, **extra):
    values = {"diskproof_targets": [{"device": braw["device"], "mode": "raw_read"}]}
    values.update(extra)
    return values


def assert_untouched(braw):
    assert written_sectors(braw["device"]) == braw["written"]
    assert sha256_of(braw["image"]) == braw["sha256"]


def test_check_mode_plans_the_read_tests_on_the_device_and_says_why_the_others_are_skipped(braw, tmp_path):
    rc, output, _report = validate(tmp_path, raw_read(braw), check=True)
    assert rc == 0, output[-3000:]
    device = braw["device"]
    assert "profile standard: 5 tests, 5 jobs" in output
    assert ("%s: raw device %s (raw_read), 1.0 GiB, logical block 512 B: tests run on the device node" % (device, device)
            in output)
    assert ("%s (raw_read): skipped dd_seq_write_direct, fio_seq_write, fio_rand_write, fio_rand_write_qd1, "
            "fio_mixed_70_30, fio_commit_rate, fio_verify: they write to the device" % device) in output
    assert "%s (raw_read): skipped dd_seq_write, sysbench_rndrd: they need a filesystem" % device in output
    assert_untouched(braw)


def test_read_tests_measure_the_throttle_over_the_whole_device_and_never_write(braw, tmp_path):
    rc, output, report = validate(tmp_path, raw_read(braw, benchmark_tests=["dd_seq_read", "zcav_sweep", "fio_rand_read"],
                                                     benchmark_repeats=1, benchmark_max_repeats=1,
                                                     benchmark_fio_runtime_s=5))
    assert rc == 0, output[-3000:]
    records = {entry["test"]: entry["record"] for entry in report["results"]}
    assert sorted(records) == ["dd_seq_read", "fio_rand_read", "zcav_sweep"]
    for test, record in records.items():
        assert record["error"] is None, (test, record["error"])
        target = record["target"]
        assert (target["path"], target["device_path"], target["kind"], target["class"]) == (
            braw["device"], braw["device"], "raw", "raw_read"), target
        assert target["test_file"] is None and target["device"] == os.path.basename(braw["device"])
        # What reached the device: the reads, and not one byte written.
        assert record["device_io"]["write_bytes"] == 0, (test, record["device_io"])
        assert record["device_io"]["read_bytes"] >= 0.95 * record["bytes"], (test, record["device_io"])
    figures = {
        "dd_seq_read": (records["dd_seq_read"]["metrics"]["read_bytes_per_s"], RATE),
        "zcav_sweep": (records["zcav_sweep"]["metrics"]["read_bytes_per_s"], RATE),
        "fio_rand_read": (records["fio_rand_read"]["metrics"]["read_iops"], IOPS),
    }
    print("\nmeasured on %s: %s" % (braw["device"], ", ".join(
        "%s %.1f (%+.1f %%)" % (test, measured, 100.0 * (measured - truth) / truth)
        for test, (measured, truth) in figures.items())))
    for test, (measured, truth) in figures.items():
        assert abs(measured - truth) / truth < 0.10, (test, measured, truth)
    dd = records["dd_seq_read"]
    assert dd["command"] == ["dd", "if=" + braw["device"], "of=/dev/null", "bs=1048576", "count=64", "iflag=direct"]
    # The ZCAV sweep covers the device from its first byte to its last, in evenly spaced points.
    zcav = records["zcav_sweep"]
    chunk = zcav["params"]["chunk_bytes"]
    offsets = [point["offset_bytes"] for point in zcav["metrics"]["zcav"]]
    assert len(offsets) == 16 and offsets[0] == 0 and offsets[-1] + chunk == DISK_BYTES, (offsets, chunk)
    assert all(point["read_bytes_per_s"] > 0 for point in zcav["metrics"]["zcav"])
    assert zcav["bytes"] == 16 * chunk == DISK_BYTES
    fio = records["fio_rand_read"]
    assert "--readonly" in fio["command"] and "filename=%s\n" % braw["device"] in fio["job_file"]
    assert "size=%d\n" % (64 * MIB) in fio["job_file"]
    assert {entry["verdict"] for entry in report["results"]} == {"pass"}
    # The device itself, read back through the block layer: the same bytes as before the run.
    assert sha256_of(braw["device"]) == braw["sha256"]
    assert_untouched(braw)


def test_a_write_test_on_the_raw_read_device_is_refused_before_anything_runs(braw, tmp_path):
    rc, output, report = validate(tmp_path, raw_read(braw, benchmark_tests=["dd_seq_read", "fio_rand_write"]))
    assert rc != 0
    assert ("benchmark plan refused, nothing was written: targets[0] (%s) is raw_read: fio_rand_write writes to the "
            "device, and writing a bare device needs class raw_write" % braw["device"]) in output, output[-3000:]
    assert "diskproof_destructive: true" in output and "diskproof_destructive_allow" in output
    assert "Run each test" not in output   # the host stopped at the plan
    assert report is None or not any(entry.get("record") for entry in report["results"])
    assert_untouched(braw)
