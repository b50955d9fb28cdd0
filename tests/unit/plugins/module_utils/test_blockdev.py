"""_blockdev: path -> whole disk through a fake /sys tree, stat deltas in bytes (512-byte sectors)."""
from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev

# A real /sys/block/<dev>/stat line, read from loop0 on the project lab (2026-11-22, kernel 6.18: 17 fields).
STAT_LINE = (
    "    4897        0  1207226      447     4039      498  2708792     3985        0     1124     4442"
    "        2        0  2097160        0      469        9\n"
)


def make_sys(root, disks):
    """A minimal sysfs: /sys/devices/.../block/<disk>[/<part>] with dev and partition files,
    /sys/block/<disk> links and /sys/dev/block/MAJ:MIN links, like the kernel lays them out."""
    for disk, (number, partitions) in disks.items():
        disk_dir = root / "devices" / "pci0000:00" / "block" / disk
        disk_dir.mkdir(parents=True)
        (disk_dir / "dev").write_text(number + "\n")
        (disk_dir / "stat").write_text(STAT_LINE)
        (root / "block").mkdir(exist_ok=True)
        os.symlink(os.path.relpath(disk_dir, root / "block"), root / "block" / disk)
        (root / "dev" / "block").mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(disk_dir, root / "dev" / "block"), root / "dev" / "block" / number)
        for part, part_number in partitions.items():
            part_dir = disk_dir / part
            part_dir.mkdir()
            (part_dir / "partition").write_text("1\n")
            os.symlink(os.path.relpath(part_dir, root / "dev" / "block"), root / "dev" / "block" / part_number)
    return str(root)


@pytest.fixture
def fake_sys(tmp_path):
    return make_sys(tmp_path / "sys", {"sda": ("8:0", {"sda1": "8:1"}), "nvme0n1": ("259:0", {"nvme0n1p2": "259:2"}),
                                       "loop3": ("7:3", {})})


@pytest.mark.parametrize(
    ("major", "minor", "disk"),
    [(8, 0, "sda"), (8, 1, "sda"), (259, 2, "nvme0n1"), (7, 3, "loop3"), (0, 27, None), (8, 5, None)],
)
def test_whole_disk_for_walks_up_from_partitions(fake_sys, major, minor, disk):
    assert _blockdev.whole_disk_for(major, minor, fake_sys) == disk


def test_whole_disk_name_of_a_file_uses_st_dev(fake_sys, monkeypatch, tmp_path):
    target = tmp_path / "data" / "diskproof.testfile"
    target.parent.mkdir()
    target.write_text("x")
    monkeypatch.setattr(_blockdev, "_stat", _fake_stat({str(target): (0o100644, os.makedev(8, 1), 0)}))
    assert _blockdev.whole_disk_name(str(target), fake_sys) == "sda"


def test_missing_file_is_resolved_through_its_parent_directory(fake_sys, monkeypatch, tmp_path):
    directory = str(tmp_path / "data")
    monkeypatch.setattr(_blockdev, "_stat", _fake_stat({directory: (0o040755, os.makedev(259, 2), 0)}))
    assert _blockdev.device_number(directory + "/not/yet/created") == (259, 2)
    assert _blockdev.whole_disk_name(directory + "/not/yet/created", fake_sys) == "nvme0n1"


def test_block_device_node_uses_st_rdev(fake_sys, monkeypatch):
    monkeypatch.setattr(_blockdev, "_stat", _fake_stat({"/dev/sda1": (0o060660, os.makedev(0, 5), os.makedev(8, 1))}))
    assert _blockdev.whole_disk_name("/dev/sda1", fake_sys) == "sda"


def test_tmpfs_and_overlay_have_no_disk(fake_sys, monkeypatch):
    monkeypatch.setattr(_blockdev, "_stat", _fake_stat({"/dev/shm/x": (0o100644, os.makedev(0, 27), 0)}))
    assert _blockdev.whole_disk_name("/dev/shm/x", fake_sys) is None


def test_nothing_exists_gives_none(monkeypatch):
    monkeypatch.setattr(_blockdev, "_stat", _fake_stat({}))
    assert _blockdev.device_number("/a/b/c") is None


def test_real_root_filesystem_resolves_or_is_unknown():
    # Whatever this machine is, the answer is a /sys/block name or None, never an exception.
    name = _blockdev.whole_disk_name("/")
    assert name is None or os.path.isdir(os.path.join("/sys/block", name))


def test_read_stat_and_delta_in_bytes(fake_sys, tmp_path):
    before = _blockdev.read_stat("sda", fake_sys)
    assert before == {"reads": 4897, "read_sectors": 1207226, "writes": 4039, "write_sectors": 2708792, "in_flight": 0}
    assert _blockdev.read_stat("/dev/sda", fake_sys) == before  # a /dev path works too
    after = {"read_sectors": 1207226 + 8, "write_sectors": 2708792 + 131072}
    # sectors are 512 bytes whatever the logical block size: 131072 sectors = 64 MiB
    assert _blockdev.stat_delta_bytes(before, after) == {"read_bytes": 4096, "write_bytes": 67108864}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, {"read_sectors": 1, "write_sectors": 1}),
        ({"read_sectors": 1, "write_sectors": 1}, None),
        ({"read_sectors": 10, "write_sectors": 1}, {"read_sectors": 5, "write_sectors": 1}),  # device re-created
    ],
)
def test_delta_unknown(before, after):
    assert _blockdev.stat_delta_bytes(before, after) is None


def test_read_stat_of_unknown_device(fake_sys):
    assert _blockdev.read_stat("sdz", fake_sys) is None
    assert _blockdev.read_stat(None, fake_sys) is None


def test_drop_caches_syncs_then_writes_3(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(_blockdev.os, "sync", lambda: calls.append("sync"))
    target = tmp_path / "drop_caches"
    _blockdev.drop_caches(str(target))
    assert calls == ["sync"]
    assert target.read_text() == "3\n"


def test_drop_caches_fails_loudly(tmp_path):
    with pytest.raises(OSError):
        _blockdev.drop_caches(str(tmp_path / "missing" / "drop_caches"))


def _fake_stat(table):
    """os.stat replacement: path -> (st_mode, st_dev, st_rdev); FileNotFoundError otherwise."""

    class Result:
        def __init__(self, mode, dev, rdev):
            self.st_mode, self.st_dev, self.st_rdev = mode, dev, rdev

    def fake(path):
        if path in table:
            return Result(*table[path])
        raise FileNotFoundError(path)

    return fake


def test_node_rdev_is_the_device_number_of_block_device_nodes_only(tmp_path):
    regular = tmp_path / "file"
    regular.write_bytes(b"x")
    (tmp_path / "link").symlink_to(regular)
    assert _blockdev.node_rdev(str(regular)) is None
    assert _blockdev.node_rdev(str(tmp_path / "link")) is None
    assert _blockdev.node_rdev(str(tmp_path / "missing")) is None
    assert _blockdev.node_rdev("/dev/null") is None   # a character device
    # Any block device node of this machine, only stat'ed (nothing is opened or read).
    nodes = [entry.path for entry in os.scandir("/dev") if stat.S_ISBLK(entry.stat(follow_symlinks=False).st_mode)]
    if not nodes:
        pytest.skip("no block device node under /dev")
    assert _blockdev.node_rdev(nodes[0]) == os.stat(nodes[0]).st_rdev


class _FakeClock:
    """time.monotonic and time.sleep for wait_until_idle: sleeping advances the clock, and each reading of the
    stat file after a sleep is the next line of ``lines`` (the last one repeats)."""

    def __init__(self, stat_file, lines):
        self.now = 0.0
        self.stat_file = stat_file
        self.lines = list(lines)
        stat_file.write_text(self.lines.pop(0))

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now = round(self.now + seconds, 6)  # no float drift: 6 polls of 0.05 s are 0.3 s
        if self.lines:
            self.stat_file.write_text(self.lines.pop(0))


def _stat_line(reads, writes, in_flight):
    return "%d 0 %d 0 %d 0 %d 0 %d 0 0\n" % (reads, reads * 8, writes, writes * 8, in_flight)


@pytest.mark.parametrize(("lines", "idle", "waited_s", "requests"), [
    # Quiet from the start: the quiet spell is counted from the first reading.
    ([_stat_line(10, 20, 0)], True, 0.3, 0),
    # A journal commit lands during the wait: the quiet spell starts again after it.
    # (seen at 0.1 s and 0.15 s; quiet from the next reading, 0.2 s, for 0.3 s)
    ([_stat_line(10, 20, 0), _stat_line(10, 20, 0), _stat_line(10, 23, 1), _stat_line(10, 24, 0)], True, 0.5, 4),
    # Requests in flight count as busy even when no counter moved yet.
    ([_stat_line(10, 20, 2), _stat_line(10, 20, 2), _stat_line(10, 22, 0)], True, 0.45, 2),
], ids=["quiet", "commit-restarts-the-spell", "in-flight-is-busy"])
def test_wait_until_idle(fake_sys, lines, idle, waited_s, requests):
    fake = _FakeClock(_stat_path(fake_sys, "sda"), lines)
    settled = _blockdev.wait_until_idle("sda", 0.3, 5.0, sys_root=fake_sys, clock=fake.clock, sleep=fake.sleep)
    assert (settled.idle, settled.waited_s, settled.requests) == (idle, waited_s, requests)


def test_wait_until_idle_gives_up_at_the_limit(fake_sys):
    # Something writes all the time: measured anyway after the limit, with what it saw.
    busy = [_stat_line(10, 20 + step, 1) for step in range(200)]
    fake = _FakeClock(_stat_path(fake_sys, "sda"), busy)
    settled = _blockdev.wait_until_idle("sda", 0.3, 2.0, sys_root=fake_sys, clock=fake.clock, sleep=fake.sleep)
    assert settled.idle is False and settled.waited_s == pytest.approx(2.0) and settled.requests == 40


def test_wait_until_idle_without_counters(fake_sys):
    assert _blockdev.wait_until_idle("sdz", 0.3, 5.0, sys_root=fake_sys) is None
    assert _blockdev.wait_until_idle(None, 0.3, 5.0, sys_root=fake_sys) is None


def _stat_path(sys_root, disk):
    import pathlib
    return pathlib.Path(os.path.realpath(os.path.join(sys_root, "block", disk))) / "stat"
