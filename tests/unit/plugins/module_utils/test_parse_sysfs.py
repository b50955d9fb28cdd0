"""Values of /sys files: the active I/O scheduler, PCIe link speed and width, a SCSI unit serial, a loop
backing file."""
from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.sysfs import (
    flag, link_speed_gts, link_width, loop_backing_file, parse_scheduler, sata_link_gbps, signed_number, text_attribute,
    vpd_unit_serial, whole_number, write_cache_mode,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("none [mq-deadline] kyber bfq \n", "mq-deadline"), ("[none] mq-deadline\n", "none"), ("none\n", "none"),
    ("", None), (None, None),
])
def test_scheduler(text, expected):
    assert parse_scheduler(text) == expected


# The texts the kernel prints (drivers/pci/pci-sysfs.c, PCIE_SPEED2STR); this VM's virtio disk has no PCIe link.
@pytest.mark.parametrize(("text", "gts"), [
    ("8.0 GT/s PCIe\n", 8.0), ("2.5 GT/s\n", 2.5), ("16.0 GT/s PCIe", 16.0), ("Unknown\n", None), (None, None),
])
def test_pcie_link_speed(text, gts):
    assert link_speed_gts(text) == gts


@pytest.mark.parametrize(("text", "lanes"), [("4\n", 4), ("16", 16), ("0\n", None), ("x4", None), (None, None)])
def test_pcie_link_width(text, lanes):
    assert link_width(text) == lanes


def test_vpd_unit_serial_skips_the_header_and_padding():
    # HAND-BUILT in the layout of SPC-4 7.8.15 (no SCSI disk on this VM to capture): 4 header bytes, the serial
    assert vpd_unit_serial(b"\x00\x80\x00\x14   WD-WCC4N1234567\x00") == "WD-WCC4N1234567"
    assert vpd_unit_serial(b"\x00\x80\x00\x00") is None


def test_loop_backing_file_of_a_removed_file():
    assert loop_backing_file("/dev/shm/d0.img") == ("/dev/shm/d0.img", False)
    assert loop_backing_file("/dev/shm/d0.img (deleted)") == ("/dev/shm/d0.img", True)


# Real values: this VM's /sys/block/vda (tests/fixtures/disk_state/vda-queue.src.md).
VDA = json.loads((pathlib.Path(__file__).parents[3] / "fixtures" / "disk_state" / "vda-queue.json").read_text())["files"]


@pytest.mark.parametrize(("name", "value"), [
    ("queue/nr_requests", 256), ("queue/read_ahead_kb", 8192), ("queue/max_sectors_kb", 4096),
    ("queue/logical_block_size", 512), ("queue/physical_block_size", 4096), ("queue/rotational", 1),
])
def test_whole_numbers_of_a_real_queue(name, value):
    assert whole_number(VDA["sys/block/vda/" + name]) == value


def test_a_real_scheduler_line_with_its_trailing_space():
    assert parse_scheduler(VDA["sys/block/vda/queue/scheduler"]) == "mq-deadline"


@pytest.mark.parametrize(("text", "value"), [
    (VDA["sys/block/vda/alignment_offset"], 0), ("-1\n", -1), ("3584\n", 3584), ("", None), (None, None), ("x", None),
    ("1" * 21, None),
])
def test_alignment_offset(text, value):
    # The kernel prints -1 when it cannot align the device (block/genhd.c, queue_limit_alignment_offset).
    assert signed_number(text) == value


@pytest.mark.parametrize("text", ["", None, "-1", "4k", "1" * 21, "\u0664"])
def test_whole_number_refuses_anything_else(text):
    assert whole_number(text) is None


# Real texts: this VM's vda and loop0 (tests/fixtures/disk_state/vda-sysfs.src.md), procfs's NVMe
# (procfs-nvme0n1.src.md); libata's spelling from drivers/ata/libata-transport.c (sata-3g-of-6g-constructed.src.md).
TREES = {name: json.loads((pathlib.Path(__file__).parents[3] / "fixtures" / "disk_state" / name).read_text())["files"]
         for name in ("vda-sysfs.json", "procfs-nvme0n1.json")}
VDA_DIR = "sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda/"
NVME0 = "sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0/nvme/nvme0/"


@pytest.mark.parametrize(("text", "value"), [
    (TREES["vda-sysfs.json"][VDA_DIR + "queue/rotational"], True), (TREES["procfs-nvme0n1.json"][NVME0 + "nvme0n1/queue/rotational"], False),
    ("2\n", None), ("", None), (None, None),
])
def test_flag(text, value):
    assert flag(text) is value


@pytest.mark.parametrize(("text", "value"), [
    (TREES["vda-sysfs.json"][VDA_DIR + "queue/write_cache"], "write back"),
    (TREES["vda-sysfs.json"]["sys/devices/virtual/block/loop0/queue/write_cache"], "write through"),
    ("write  back", "write back"), ("write around", None), (None, None),
])
def test_write_cache_mode(text, value):
    assert write_cache_mode(text) == value


@pytest.mark.parametrize(("text", "value"), [
    ("3.0 Gbps\n", 3.0), ("1.5 Gbps", 1.5), ("6.0 Gb/s", 6.0), ("<unknown>\n", None), ("", None), (None, None),
    ("9" * 50 + " Gbps", None),
])
def test_sata_link_gbps(text, value):
    assert sata_link_gbps(text) == value


@pytest.mark.parametrize(("text", "value"), [
    (TREES["procfs-nvme0n1.json"][NVME0 + "model"], "CT2000P3SSD8"), (TREES["procfs-nvme0n1.json"][NVME0 + "firmware_rev"], "P9CR30A"),
    ("   \n", None), (None, None),
])
def test_text_attribute(text, value):
    assert text_attribute(text) == value
