"""module_utils/_evidence.py: names, manifest, dmesg filter, clock offset, PCIe link, snapshot and bundle.

Tool outputs are real: the result records come from tests/fixtures/report/lab-rack6-report.json (a
real run on the lab rack), kernel log and NTP client lines are quoted from the public reports named
next to them, and the snapshot test runs the real read-only tools on this machine's disk vda. The
PCIe tests build a fake sysfs tree (sysfs files are plain values); tests that need a tool or vda
skip when it is missing.
"""
from __future__ import annotations

import datetime
import io
import json
import os
import shutil
import subprocess
import tarfile

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _evidence as ev
from ansible_collections.diskproof.fleet.plugins.module_utils._evidence import EvidenceError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.chronyc import parse_chronyc_tracking
from ansible_collections.diskproof.fleet.plugins.modules.evidence import read_file  # the module's own host reads
from test_parse_chronyc import CHRONYC_TRACKING  # chronyc tracking on Ubuntu, as the parser's test quotes it

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures")
RACK6 = os.path.join(FIXTURES, "report", "lab-rack6-report.json")
DD_FIXTURE = os.path.join(FIXTURES, "dd", "gnu91-write-fdatasync.txt")
CREATED = datetime.datetime(2026, 11, 22, 1, 10, 5, tzinfo=datetime.timezone.utc)
HAS_VDA = os.path.isdir("/sys/block/vda")
needs_sha256sum = pytest.mark.skipif(shutil.which("sha256sum") is None, reason="sha256sum not installed")


def rack6_records(host):
    with open(RACK6, encoding="utf-8") as handle:
        report = json.load(handle)
    return [entry["record"] for entry in report["results"] if entry["host"] == host]


# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sda", "nvme0n1", "loop3", "vda", "mmcblk0", "xvdb"])
def test_whole_disk_names_are_accepted(name):
    assert ev.check_disk_name(name) == name


@pytest.mark.parametrize("name", ["", "/dev/sda", "../sda", "sda/..", "host", ".hidden", "sd a", None, 3])
def test_path_like_or_reserved_disk_names_are_refused(name):
    with pytest.raises(EvidenceError, match="whole-disk kernel names"):
        ev.check_disk_name(name)


@pytest.mark.parametrize(
    ("serial", "disk", "expected"),
    [
        ("S4EVNF0M123456", "nvme0n1", "S4EVNF0M123456-20261122T011005Z"),
        ("WD-WCC4E0123456", "sdb", "WD-WCC4E0123456-20261122T011005Z"),
        ("  ZA1 2/B3  ", "sdc", "ZA1_2_B3-20261122T011005Z"),      # spaces and slashes never reach a path
        ("..", "sdd", "_..-20261122T011005Z"),                         # never hidden, never a parent
        (None, "loop3", "loop3-20261122T011005Z"),
        ("", "vda", "vda-20261122T011005Z"),
    ],
)
def test_bundle_stem_is_serial_or_disk_and_utc_time(serial, disk, expected):
    assert ev.bundle_stem(serial, disk, CREATED) == expected


def test_bundle_stem_is_in_utc_whatever_the_zone():
    berlin = CREATED.astimezone(datetime.timezone(datetime.timedelta(hours=1)))
    assert ev.bundle_stem("X1", "sda", berlin) == "X1-20261122T011005Z"


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../b", "a//b", "a/./b", "dir/name with space", "a\nb",
                                  "tab\there", "back\\slash"])
def test_unsafe_member_names_are_refused(name):
    with pytest.raises(EvidenceError, match="unsafe bundle member name"):
        ev.check_member_name(name)


# ---------------------------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------------------------

def test_manifest_is_sha256sum_format_sorted_by_path():
    text = ev.manifest_text([("results.json", b"{}\n"), ("before/sda/lsblk.json", b"x"), ("README.md", b"")])
    assert text.splitlines() == [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  README.md",
        "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  before/sda/lsblk.json",
        "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356  results.json",
    ]
    assert text.endswith("\n")
    assert ev.parse_manifest(text)["results.json"] == ev.sha256_hex(b"{}\n")


@needs_sha256sum
def test_manifest_passes_and_catches_tampering_with_real_sha256sum(tmp_path):
    files = {"README.md": b"# evidence\n", "raw/srv_data/dd_seq_write.1.out": open(DD_FIXTURE, "rb").read()}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / ev.MANIFEST_NAME).write_text(ev.manifest_text(files.items()))
    checked = subprocess.run(["sha256sum", "-c", ev.MANIFEST_NAME], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "raw/srv_data/dd_seq_write.1.out: OK" in checked.stdout
    (tmp_path / "README.md").write_bytes(b"# evidence, edited\n")
    tampered = subprocess.run(["sha256sum", "-c", ev.MANIFEST_NAME], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert tampered.returncode == 1 and "README.md: FAILED" in tampered.stdout


@pytest.mark.parametrize("line", ["abc  file", "%s file" % ("0" * 64), "%s  " % ("0" * 64)])
def test_malformed_manifest_lines_are_refused(line):
    with pytest.raises(EvidenceError, match="manifest line 1"):
        ev.parse_manifest(line)


# ---------------------------------------------------------------------------------------------
# disk kind and kernel log
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "vendor", "scsi", "expected"),
    [("nvme0n1", None, False, "nvme"), ("sda", "ATA     \n", True, "ata"), ("sdb", "SEAGATE \n", True, "scsi"),
     ("vda", None, False, "other"), ("loop3", None, False, "other"), ("nvme0c0n1", None, False, "other")],
)
def test_disk_class(name, vendor, scsi, expected):
    assert ev.disk_class(name, vendor, scsi) == expected


# ---------------------------------------------------------------------------------------------
# clock offset
# ---------------------------------------------------------------------------------------------


def test_clock_offset_text_of_a_chronyc_offset():
    offset = parse_chronyc_tracking(CHRONYC_TRACKING)
    text = ev.clock_offset_text(offset, [])
    assert text.startswith("clock offset: -0.000001974 s (this host's clock minus NTP time; chronyc tracking:")


def test_unknown_clock_offset_is_written_down_with_the_reasons():
    text = ev.clock_offset_text(None, ["chronyc tracking: not installed", "timedatectl timesync-status: exit code 1"])
    assert text == "clock offset: unknown (chronyc tracking: not installed; timedatectl timesync-status: exit code 1)\n"


# ---------------------------------------------------------------------------------------------
# PCIe link on a fake sysfs tree
# ---------------------------------------------------------------------------------------------

def fake_function(root, address, current=("8.0 GT/s PCIe", "4"), capable=("8.0 GT/s PCIe", "4")):
    function = root / "devices" / "pci0000:00" / "0000:00:1d.0" / address
    (function / "nvme" / "nvme0").mkdir(parents=True)
    for name, value in zip(ev.PCIE_LINK_FILES, current + capable):
        if value is not None:
            (function / name).write_text(value + "\n")
    return str(function / "nvme" / "nvme0")


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def test_pcie_link_at_full_speed(tmp_path):
    link = ev.pcie_link("nvme0n1", fake_function(tmp_path, "0000:3d:00.0"), read_text)
    assert link["pci_function"] == "0000:3d:00.0"
    assert (link["current_link_speed"], link["current_link_width"]) == ("8.0 GT/s PCIe", "4")
    assert link["downgraded"] is False and link["note"] is None


@pytest.mark.parametrize(
    ("current", "capable"),
    [(("2.5 GT/s PCIe", "4"), ("8.0 GT/s PCIe", "4")), (("16.0 GT/s PCIe", "2"), ("16.0 GT/s PCIe", "4"))],
    ids=["slower", "narrower"],
)
def test_pcie_link_trained_below_capability_is_flagged(tmp_path, current, capable):
    link = ev.pcie_link("nvme0n1", fake_function(tmp_path, "0000:3d:00.0", current, capable), read_text)
    assert link["downgraded"] is True
    assert link["note"].startswith("link trained below its capability: %s x%s of %s x%s" % (current + capable))


def test_pcie_link_unknown_speed_is_not_a_verdict(tmp_path):
    link = ev.pcie_link("nvme0n1", fake_function(tmp_path, "0000:3d:00.0", ("Unknown", "0"), ("8.0 GT/s PCIe", "4")),
                        read_text)
    assert link["downgraded"] is None and "unknown" in link["note"]


def test_conventional_pci_and_virtual_devices_have_no_link(tmp_path):
    function = tmp_path / "devices" / "pci0000:00" / "0000:00:02.0" / "virtio1"
    function.mkdir(parents=True)
    virtio = ev.pcie_link("vda", str(function), read_text)
    assert virtio["pci_function"] == "0000:00:02.0" and virtio["downgraded"] is None
    assert "no PCIe link attributes" in virtio["note"]
    loop = ev.pcie_link("loop3", None, read_text)
    assert loop["pci_function"] is None and "virtual block device" in loop["note"]
    platform = ev.pcie_link("mmcblk0", str(tmp_path / "devices" / "platform" / "fe320000.mmc"), read_text)
    assert platform["pci_function"] is None and "no PCI function" in platform["note"]


# ---------------------------------------------------------------------------------------------
# records, README
# ---------------------------------------------------------------------------------------------

def test_records_are_picked_by_device_or_disks():
    records = rack6_records("rack6-n04")
    assert len(ev.records_for_disk(records, "loop3")) == 3
    assert ev.records_for_disk(records, "loop30") == [] and ev.records_for_disk(records, "loop") == []
    mirrored = [dict(records[0], target=dict(records[0]["target"], device="md0", disks=["sda", "sdb"]))]
    assert len(ev.records_for_disk(mirrored, "sdb")) == 1


def test_raw_dirs_come_from_the_records_raw_files():
    records = [{"raw_files": ["/ev/raw/srv_d0/dd_seq_write.1.out", "/ev/raw/srv_d0/dd_seq_write.2.out"]},
               {"raw_files": ["/ev/raw/srv_d1/fio_rand_read.fio"]}, {"raw_files": None}, {}]
    assert ev.raw_dirs_of(records) == ["/ev/raw/srv_d0", "/ev/raw/srv_d1"]


def readme_for(records, **changes):
    context = dict(bundle="loop3-20261122T011005Z.tar.gz", disk="loop3", identity=ev.disk_identity("loop3", {}),
                   host_name="rack6-n04", host_facts={"memory_bytes": 134217728}, created=CREATED, records=records,
                   quiesce={}, raw_members={}, members=["README.md"], snapshots={})
    context.update(changes)
    return ev.render_readme(ev.ReadmeContext(**context))


def test_readme_says_how_each_real_figure_was_obtained():
    readme = readme_for(rack6_records("rack6-n04"))
    # The exact commands of the real records, and what reached the disk.
    assert ("`dd if=/dev/zero of=/srv/diskproof/d0/diskproof.testfile bs=1048576 count=256 conv=fdatasync`"
            in readme)
    assert "`dd if=/srv/diskproof/d0/diskproof.testfile of=/dev/null bs=1048576 count=256 iflag=direct`" in readme
    assert "--rw=randread --bs=4096 --iodepth=32 --direct=1" in readme
    assert "| dd_seq_write | dd | write 16.74 MB/s (15.97 MiB/s) | 1 | - |" in readme
    assert "| fio_rand_read | fio | read 0.82 MB/s (0.79 MiB/s); read 201.4 IOPS; read latency p99 208.667 ms |" in readme
    assert ("8,192 B (8.0 KiB) read, 268,578,816 B (256.1 MiB) written = 100.1 % of the 268,435,456 B (256.0 MiB) "
            "the tool reports" in readme)
    assert "block size 1,048,576 B (1.0 MiB), size 268,435,456 B (256.0 MiB)" in readme
    assert "Tool: dd 9.1" in readme and "Tool: fio 3.33" in readme
    assert "Runs: 1 run, not repeated (per-run figures not recorded)" in readme


def test_readme_reproduces_with_plain_dd_and_never_removes_the_target_directory():
    readme = readme_for(rack6_records("rack6-n04"))
    section = readme.split("## Reproduce the key figures with plain dd and bonnie++", 1)[1].split("## ", 1)[0]
    commands = [line for line in section.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
                if not line.startswith("#")]
    assert commands == [
        "dd if=/dev/zero of=/srv/diskproof/d0/diskproof.testfile bs=1048576 count=256 conv=fdatasync",
        "sync; echo 3 > /proc/sys/vm/drop_caches     # empty the page cache before reading",
        "dd if=/srv/diskproof/d0/diskproof.testfile of=/dev/null bs=1048576 count=256 iflag=direct",
        "rm /srv/diskproof/d0/diskproof.testfile",
    ]


def test_readme_with_repeats_fence_run_directory_and_bonnie():
    # The real dd_seq_write record of rack6-n01 (made before records had runs), with runs, samples, cv,
    # fence, raw files and a run directory set here - not measured - to exercise those README lines,
    # and the bonnie++ argv the benchmark role plans for such a target.
    write = rack6_records("rack6-n01")[-1]
    assert write["test"] == "dd_seq_write"
    run_dir = "/srv/diskproof/d0/diskproof-20261122T010838Z-1a2b3c4d"
    rate = write["metrics"]["write_bytes_per_s"]
    write = dict(write, command=[part.replace("/srv/diskproof/d0/", run_dir + "/") for part in write["command"]],
                 target=dict(write["target"], test_file=run_dir + "/diskproof.testfile"), runs=3,
                 samples=[rate * 0.99, rate, rate * 1.01], cv=0.01,
                 cache_fence={"bytes": 134217728, "version": 1, "peak_bytes": 134217728},
                 raw_files=["/ev/raw/srv_diskproof_d0/dd_seq_write.%d.out" % number for number in (1, 2, 3)])
    bonnie = {"test": "bonnie", "tool": "bonnie", "target": write["target"], "metrics": {}, "params": {},
              "command": ["bonnie++", "-d", run_dir + "/bonnie", "-s", "256", "-r", "128", "-n", "0", "-f", "-u",
                          "nobody", "-q", "-m", "loop0"]}
    raw = {path: "raw/srv_diskproof_d0/" + os.path.basename(path) for path in write["raw_files"]}
    readme = readme_for([write, bonnie], raw_members=raw)
    assert "Runs: 3 runs, the figure of each in run order: " in readme and "coefficient of variation 1.00 %" in readme
    assert "memory cgroup (v1) of 134,217,728 B (128.0 MiB)" in readme
    assert "`raw/srv_diskproof_d0/dd_seq_write.1.out`, `raw/srv_diskproof_d0/dd_seq_write.2.out`" in readme
    assert "mkdir %s\n" % run_dir in readme and "rm -r %s\n" % run_dir in readme
    assert "mkdir %s/bonnie; chown nobody %s/bonnie\n" % (run_dir, run_dir) in readme
    assert "bonnie++ -d %s/bonnie -s 256 -r 128 -n 0 -f -u nobody -q -m loop0\n" % run_dir in readme
    assert "count=256 with bs=1048576" in readme     # 2 x the 128 MiB memory figure, outside the cgroup


def test_readme_without_dd_or_bonnie_records_says_so():
    readme = readme_for([record for record in rack6_records("rack6-n04") if record["tool"] == "fio"])
    assert "No dd or bonnie++ record is part of this bundle" in readme


# ---------------------------------------------------------------------------------------------
# a real snapshot of vda, then a bundle
# ---------------------------------------------------------------------------------------------

def real_host(root):
    def run(argv):
        done = subprocess.run(argv, capture_output=True, env=dict(os.environ, LC_ALL="C", LANG="C"), check=False)
        return done.returncode, done.stdout, done.stderr

    def write(relative, data):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "xb") as handle:
            handle.write(data)

    def device_link(disk):
        link = "/sys/block/%s/device" % disk
        return os.path.realpath(link) if os.path.exists(link) else None

    which_path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return ev.HostIO(run=run, which=lambda name: shutil.which(name, path=which_path), read=read_file, write=write,
                     now=lambda: datetime.datetime.now(datetime.timezone.utc), device_link=device_link,
                     is_scsi=lambda disk: os.path.isdir("/sys/block/%s/device/scsi_disk" % disk))


@pytest.mark.skipif(not HAS_VDA or shutil.which("lsblk") is None, reason="needs the disk vda and lsblk")
def test_snapshot_of_vda_writes_every_output_and_the_commands(tmp_path):
    taken = ev.take_snapshot(real_host(str(tmp_path)), "before", ["vda"])
    assert "before/vda/lsblk.json" in taken["files"] and "before/commands.json" in taken["files"]
    lsblk = json.loads((tmp_path / "before" / "vda" / "lsblk.json").read_text())
    assert lsblk["blockdevices"][0]["name"] == "vda"
    queue = json.loads((tmp_path / "before" / "vda" / "queue.json").read_text())
    with open("/sys/block/vda/queue/logical_block_size", encoding="ascii") as handle:
        assert queue["values"]["logical_block_size"] == handle.read().strip()
    commands = json.loads((tmp_path / "before" / "commands.json").read_text())
    argvs = [entry.get("argv") for entry in commands["commands"]]
    assert [os.path.basename(argv[0]) for argv in argvs if argv and argv[-1] == "/dev/vda"][:3] == [
        "smartctl", "smartctl", "lsblk"]
    for entry in commands["commands"]:
        assert entry["error"] or (entry["started"] <= entry["finished"] and entry["started"].endswith("Z"))
        assert entry.get("exit_code") is not None or entry["error"] or "read" in entry
    # A VM disk has no SMART: smartctl's exit code and output are kept, the snapshot goes on.
    smart = [entry for entry in commands["commands"] if entry.get("argv") and entry["argv"][1:] == ["-x", "/dev/vda"]]
    if smart and smart[0]["exit_code"]:
        assert any(problem.startswith("smartctl -x /dev/vda: exit code") for problem in taken["problems"])
    assert (tmp_path / "before" / "host" / "clock-offset.txt").read_text().startswith("clock offset: ")


def snapshot_tree(root, disk="vda"):
    """A before and an after snapshot of vda by the real tools (what the module writes)."""
    host = real_host(str(root))
    ev.take_snapshot(host, "before", [disk])
    ev.take_snapshot(host, "after", [disk])


@pytest.mark.skipif(not HAS_VDA, reason="needs the disk vda")
@needs_sha256sum
def test_bundle_is_deterministic_safe_and_verifies_with_sha256sum(tmp_path):
    evidence = tmp_path / "ev"
    snapshot_tree(evidence)
    raw = evidence / "raw" / "srv_diskproof_d0"
    raw.mkdir(parents=True)
    shutil.copy(DD_FIXTURE, raw / "dd_seq_write.1.out")
    (raw / "odd name.out").write_bytes(b"")
    os.symlink("/etc/passwd", raw / "link.out")          # never followed into a bundle
    records = rack6_records("rack6-n04")
    given = ev.BundleInput(evidence_dir=str(evidence), disk="vda", identity=ev.disk_identity("vda", {"serial": None}),
                           records=records, quiesce={"run_id": "r1", "stopped": ["cron"]}, raw_dirs=[str(raw)],
                           created=CREATED, host_name="vm")
    stem, members = ev.build_bundle(given)
    assert stem == "vda-20261122T011005Z"
    names = [member.name for member in members]
    assert names == sorted(names)
    assert {"README.md", "MANIFEST.sha256", "results.json", "quiesce.json", "before/commands.json",
            "after/commands.json", "before/vda/lsblk.json", "after/host/uname-a.txt",
            "raw/srv_diskproof_d0/dd_seq_write.1.out", "raw/srv_diskproof_d0/odd_name.out"} <= set(names)
    assert not any("link.out" in name for name in names)
    data = ev.tar_bytes(stem, members, CREATED)
    assert data == ev.tar_bytes(stem, ev.build_bundle(given)[1], CREATED)        # same inputs, same bytes
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        infos = archive.getmembers()
        assert all(info.name == stem or info.name.startswith(stem + "/") for info in infos)
        assert {(info.uid, info.gid, info.uname) for info in infos} == {(0, 0, "root")}
        assert {info.mtime for info in infos} == {int(CREATED.timestamp())}
        archive.extractall(tmp_path / "out")
    bundle = tmp_path / "out" / stem
    checked = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=bundle, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    manifest = ev.parse_manifest((bundle / "MANIFEST.sha256").read_text())
    assert set(manifest) == set(names) - {"MANIFEST.sha256"}
    results = json.loads((bundle / "results.json").read_text())
    assert results["records"] == records and results["host"] == "vm"
    assert json.loads((bundle / "quiesce.json").read_text())["stopped"] == ["cron"]


@pytest.mark.skipif(not HAS_VDA, reason="needs the disk vda")
def test_bundle_keeps_only_its_disk_in_commands_and_needs_both_snapshots(tmp_path):
    snapshot_tree(tmp_path)
    document = json.loads((tmp_path / "before" / "commands.json").read_text())
    other = dict(document["commands"][-1], disk="sdz", output="before/sdz/lsblk.json")
    document["commands"].append(other)
    filtered = json.loads(ev._filtered_commands(json.dumps(document).encode(), "vda"))
    assert all(entry["disk"] in (None, "vda") for entry in filtered["commands"])
    assert filtered["devices"] == ["vda"]
    shutil.rmtree(tmp_path / "after")
    given = ev.BundleInput(evidence_dir=str(tmp_path), disk="vda", identity=ev.disk_identity("vda", {}), records=[],
                           quiesce={}, raw_dirs=[], created=CREATED, host_name="vm")
    with pytest.raises(EvidenceError, match="no after snapshot of vda"):
        ev.build_bundle(given)


def test_snapshot_refuses_bad_inputs():
    host = ev.HostIO(run=None, which=None, read=None, write=None, now=None, device_link=None, is_scsi=None)
    with pytest.raises(EvidenceError, match="phase must be one of before, after"):
        ev.take_snapshot(host, "during", ["vda"])
    with pytest.raises(EvidenceError, match="devices is empty"):
        ev.take_snapshot(host, "before", [])
    with pytest.raises(EvidenceError, match="names a disk twice"):
        ev.take_snapshot(host, "before", ["vda", "vda"])
