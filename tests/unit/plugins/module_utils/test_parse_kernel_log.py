"""The kernel log: dmesg lines naming a disk (lines quoted from public reports and captured on this project's VM),
and journalctl -k -o json (a real capture of a systemd 252 host, tests/fixtures/evidence/, with its .src.md) read
as dmesg lines."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.kernel_log import (
    dmesg_lines, journal_kernel_text,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "evidence")


def fixture(name: str) -> bytes:
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


# dmesg lines quoted from public reports (the syslog prefix "May 21 18:07:14 host kernel: " dropped):
# https://github.com/Joshua-Riek/ubuntu-rockchip/issues/155 (NVMe) and
# https://github.com/DIGImend/digimend-kernel-drivers/issues/136 (SATA disks sdc, sdd).
NVME_LOG = """\
[    8.010115] nvme nvme0: pci function 0004:41:00.0
[    8.010201] nvme 0004:41:00.0: enabling device (0000 -> 0002)
[    8.020289] nvme nvme0: missing or invalid SUBNQN field.
[    8.025137] nvme nvme0: 8/0/0 default/read/poll queues
[    8.029488]  nvme0n1: p1 p2
[   40.991192] nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS read failed (134)
[   43.992405] blk_update_request: I/O error, dev nvme0n1, sector 500118016 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0
[   44.013048] nvme 0004:41:00.0: can't change power state from D3cold to D0 (config space inaccessible)
[   44.064491] nvme nvme0: Removing after probe failure status: -19
[   44.076587] Buffer I/O error on dev nvme0n1, logical block 62514752, async page read
"""

SATA_LOG = """\
[    2.527322] sd 4:0:0:0: [sdc] Write cache: enabled, read cache: enabled, doesn't support DPO or FUA
[    2.527621]  sdc: sdc1 sdc2
[    2.528446] sd 4:0:0:0: [sdc] supports TCG Opal
[    2.528448] sd 4:0:0:0: [sdc] Attached SCSI disk
[    2.895842] clocksource: Switched to clocksource tsc
[    2.999449] ata6: SATA link up 3.0 Gbps (SStatus 123 SControl 300)
[    3.098175] sd 5:0:0:0: [sdd] 2930277168 512-byte logical blocks: (1.50 TB/1.36 TiB)
[    3.098192] sd 5:0:0:0: [sdd] Write cache: enabled, read cache: enabled, doesn't support DPO or FUA
[    3.117132]  sdd: sdd1 sdd2 sdd3 sdd4
[    3.117386] sd 5:0:0:0: [sdd] Attached SCSI disk
[    5.759123] EXT4-fs (sdb2): mounted filesystem with ordered data mode. Opts: (null)
"""

# Captured from this project's VM (dmesg, 2026-11-22): loop1 and loop10 both exist there.
LOOP_LOG = """\
[ 3774.174131] EXT4-fs (loop1): mounted filesystem 348540a9-b3b6-43e3-8f63-bea75512253e r/w with ordered data mode. Quota mode: none.
[ 3774.176315] EXT4-fs (loop2): mounted filesystem dd55e4e1-af78-4480-99f6-de63c1792af3 r/w with ordered data mode. Quota mode: none.
[ 4032.935783] operation not supported error, dev loop1, sector 262016 op 0x9:(WRITE_ZEROES) flags 0x20000800 phys_seg 0 prio class 2
[ 4111.603529] loop1: detected capacity change from 0 to 2097152
"""


def test_dmesg_keeps_the_nvme_namespace_its_partitions_and_its_controller():
    lines = dmesg_lines(NVME_LOG, "nvme0n1")
    assert len(lines) == 8
    assert not any("enabling device" in line or "D3cold" in line for line in lines)   # name only the PCI address


def test_dmesg_keeps_a_sata_disk_and_its_partitions_only():
    lines = dmesg_lines(SATA_LOG, "sdc")
    assert [line.split("] ", 1)[1] for line in lines] == [
        "sd 4:0:0:0: [sdc] Write cache: enabled, read cache: enabled, doesn't support DPO or FUA",
        " sdc: sdc1 sdc2", "sd 4:0:0:0: [sdc] supports TCG Opal", "sd 4:0:0:0: [sdc] Attached SCSI disk"]
    assert len(dmesg_lines(SATA_LOG, "sdd")) == 4
    assert dmesg_lines(SATA_LOG, "sdb") == ["[    5.759123] EXT4-fs (sdb2): mounted filesystem with ordered data mode. "
                                            "Opts: (null)"]
    assert dmesg_lines(SATA_LOG, "sdcc") == [] and dmesg_lines(SATA_LOG, "sdd1") == ["[    3.117132]  sdd: sdd1 sdd2 sdd3 sdd4"]


def test_dmesg_does_not_mix_loop1_with_loop10_or_loop2():
    assert len(dmesg_lines(LOOP_LOG, "loop1")) == 3
    assert dmesg_lines(LOOP_LOG, "loop10") == []
    assert len(dmesg_lines(LOOP_LOG, "loop2")) == 1


def test_journal_kernel_messages_become_dmesg_lines_with_the_kernels_own_time():
    text, count = journal_kernel_text(fixture("nspawn-journalctl-kernel.json").decode("utf-8"))
    assert count == 80 and len(text.splitlines()) == 80
    assert text.splitlines()[0] == "[12269.410034] dprack6br: port 1(dprack6h0) entered blocking state"
    # One rule for both sources: the dmesg filter picks the disk's lines out of the journal's.
    assert dmesg_lines(text, "loop0") == [
        "[12310.827640] EXT4-fs (loop0): mounted filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4 r/w with ordered data "
        "mode. Quota mode: none.",
        "[12310.829852] EXT4-fs (loop0): unmounting filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4."]
    assert len(dmesg_lines(text, "loop3")) == 2 and len(dmesg_lines(text, "loop1")) == 1
    assert dmesg_lines(text, "loop10") == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # journalctl -o json writes a field that is not valid UTF-8 as an array of byte values (its documented
        # JSON format); constructed here, no such kernel message was at hand to capture.
        ('{"MESSAGE":[108,111,111,112,48,58,32,255],"_SOURCE_MONOTONIC_TIMESTAMP":"5000001"}',
         "[    5.000001] loop0: \ufffd"),
        # No kernel timestamp: journald's own reception time is the next best.
        ('{"MESSAGE":"sd 0:0:0:0: [sda] Attached SCSI disk","__MONOTONIC_TIMESTAMP":"2527322"}',
         "[    2.527322] sd 0:0:0:0: [sda] Attached SCSI disk"),
        # A message over journalctl's field size limit is null without --all; with it, never.
        ('{"MESSAGE":null,"_SOURCE_MONOTONIC_TIMESTAMP":"1"}', "[    0.000001] "),
        # Two lines in one message: each a line, each with the time, so the per-line filter sees both.
        ('{"MESSAGE":"nvme nvme0: I/O 12 QID 3 timeout\\nnvme0n1: aborting","_SOURCE_MONOTONIC_TIMESTAMP":"40991192"}',
         "[   40.991192] nvme nvme0: I/O 12 QID 3 timeout\n[   40.991192] nvme0n1: aborting"),
    ],
    ids=["bytes", "no-kernel-time", "null", "two-lines"],
)
def test_journal_field_forms(line, expected):
    text, count = journal_kernel_text(line + "\n")
    assert count == 1 and text.rstrip("\n") == expected


def test_journal_lines_that_are_not_json_are_not_messages():
    text, count = journal_kernel_text("-- No entries --\n\n")
    assert (text, count) == ("", 0)


def test_the_kernel_command_line_is_never_one_of_the_disks_lines():
    """The boot command line names the root disk and may carry secrets (derived lines: the x86 'Command line:' and
    the generic 'Kernel command line:' as dmesg prints them, with an iSCSI CHAP password added)."""
    log = ("[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sdc1 iscsi_password=ChapSecret123 ro\n"
           "[    0.054321] Kernel command line: BOOT_IMAGE=/vmlinuz root=/dev/sdc1 iscsi_password=ChapSecret123 ro\n"
           + SATA_LOG)
    lines = dmesg_lines(log, "sdc")
    assert not [line for line in lines if "ChapSecret123" in line]
    assert lines == dmesg_lines(SATA_LOG, "sdc") and lines
