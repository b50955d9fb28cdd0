"""_run: repeats, sweeps, device-counter check, write-cache commands and parsers, cache fence, workdir removal."""
from __future__ import annotations

import copy
import errno
import os
import statistics
import subprocess
import time

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _fence, _metrics, _run, _tree, _write_cache
from ansible_collections.diskproof.fleet.plugins.module_utils._parse import proc_cgroup, write_cache
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import empty_metrics

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "run")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def record(test="dd_seq_write", write=None, read=None, write_iops=None, read_iops=None, moved=None, device_io=None,
           params=None):
    metrics = empty_metrics()
    metrics.update(write_bytes_per_s=write, read_bytes_per_s=read, write_iops=write_iops, read_iops=read_iops)
    return {"test": test, "metrics": metrics, "bytes": moved, "device_io": device_io, "params": params or {},
            "warnings": [], "error": None}


# ---------------------------------------------------------------------------------------------- fixtures


def test_every_fixture_has_its_source_note():
    names = sorted(os.listdir(FIXTURES))
    outputs = [name for name in names if name.endswith(".txt")]
    assert outputs
    for name in outputs:
        note = name[:-len(".txt")] + ".src.md"
        assert note in names, "%s has no source note" % name
        with open(os.path.join(FIXTURES, note), encoding="utf-8") as handle:
            text = handle.read()
        assert text.startswith("# %s\n" % name)
        assert "- Source: public" in text


# ---------------------------------------------------------------------------------------------- repeats


def test_primary_value_follows_the_report():
    assert _run.primary_value(record(write=2e8)) == 2e8
    # a test the catalog judges on IOPS: IOPS is what the report judges, not bytes/s
    assert _run.primary_value(record(test="fio_rand_read", read=8e7, read_iops=20000.0, params={"judged_on": "iops"})) == 20000.0
    assert _run.primary_value(record()) is None


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([100.0, 100.0], 0.0),
        ([90.0, 100.0, 110.0], statistics.stdev([90.0, 100.0, 110.0]) / 100.0),
        ([100.0], None),
        ([], None),
        ([100.0, None], None),
        ([0.0, 0.0], None),  # mean not positive: no CV (as in the report)
    ],
)
def test_sample_cv(samples, expected):
    assert _run.sample_cv(samples) == (pytest.approx(expected) if expected is not None else None)


def test_sample_cv_is_the_reports_coefficient_of_variation():
    samples = [201.0, 197.5, 203.25, 188.0]
    assert _run.sample_cv(samples) == _metrics.coefficient_of_variation(samples)


@pytest.mark.parametrize(
    ("samples", "max_cv", "expected"),
    [
        ([[100.0, 101.0, 99.0]], 0.05, False),
        ([[100.0, 120.0, 80.0]], 0.05, True),
        ([[100.0, 101.0], [100.0, 150.0]], 0.05, True),   # any record index
        ([[100.0, None]], 0.05, False),                   # CV unknown: more runs would not help
        ([[100.0]], 0.0, False),
        ([[100.0, 100.0]], 0.0, False),                   # exactly max_cv is fine
    ],
)
def test_needs_more_runs(samples, max_cv, expected):
    assert _run.needs_more_runs(samples, max_cv) is expected


@pytest.mark.parametrize(
    ("samples", "index"),
    [
        ([5.0, 1.0, 3.0], 2),         # median 3.0 is run 3
        ([4.0, 1.0, 3.0, 2.0], 3),    # even count: lower middle (2.0), never an average
        ([2.0, 2.0, 2.0], 1),         # ties keep run order: the middle one
        ([7.0], 0),
        ([None, 3.0, 1.0], 2),        # runs without a figure are not ranked: median of [3, 1] is 1 (lower middle)
        ([None, None], 0),
    ],
)
def test_select_median(samples, index):
    assert _run.select_median(samples) == index


def test_select_repeats_returns_the_real_median_run_with_its_samples():
    runs = []
    for number, rate in enumerate((3e8, 1e8, 2e8), 1):
        one = record(write=rate, moved=1000, device_io={"read_bytes": 0, "write_bytes": 1000 + number})
        one["started"] = "run %d" % number
        runs.append([one])
    notes = [[None], ["cache bypass not proven: run 2"], [None]]
    (chosen,) = _run.select_repeats(runs, notes)
    assert chosen is runs[2][0]                      # the real run 3 record, figures untouched
    assert chosen["started"] == "run 3"
    assert chosen["metrics"]["write_bytes_per_s"] == 2e8
    assert chosen["samples"] == [3e8, 1e8, 2e8]
    assert chosen["cv"] == pytest.approx(statistics.stdev([3e8, 1e8, 2e8]) / 2e8)
    assert chosen["runs"] == 3
    assert chosen["sample_device_io"] == [{"read_bytes": 0, "write_bytes": 1001}, {"read_bytes": 0, "write_bytes": 1002},
                                          {"read_bytes": 0, "write_bytes": 1003}]
    assert chosen["warnings"] == ["run 2: cache bypass not proven: run 2"]


def test_select_repeats_per_record_index():
    # two fio jobs per run: each index gets its own median run
    runs = [[record(test="fio_rand_read", read_iops=iops_a), record(test="fio_rand_read", read_iops=iops_b)]
            for iops_a, iops_b in ((10.0, 300.0), (30.0, 100.0), (20.0, 200.0))]
    first, second = _run.select_repeats(runs)
    assert first is runs[2][0] and first["samples"] == [10.0, 30.0, 20.0]
    assert second is runs[2][1] and second["samples"] == [300.0, 100.0, 200.0]
    runs[1][1]["metrics"]["read_iops"] = 250.0
    first, second = _run.select_repeats(copy.deepcopy(runs))
    assert second["metrics"]["read_iops"] == 250.0  # run 2 is now the median of index 1


def test_select_repeats_of_nothing():
    assert _run.select_repeats([]) == []


# ---------------------------------------------------------------------------------------------- device counters


BYPASS_CASES = [
    record(write=1e8, moved=1000, device_io={"read_bytes": 0, "write_bytes": 949}),
    record(write=1e8, moved=1000, device_io={"read_bytes": 0, "write_bytes": 950}),
    record(write=1e8, moved=1000, device_io={"read_bytes": 5000, "write_bytes": 0}),
    record(read=1e8, moved=1000, device_io={"read_bytes": 10, "write_bytes": 5000}),
    record(read=1e8, moved=1000, device_io={"read_bytes": 1000, "write_bytes": 0}),
    record(read=1e8, write=1e8, moved=1000, device_io={"read_bytes": 500, "write_bytes": 400}),
    record(read=1e8, write=1e8, moved=1000, device_io={"read_bytes": 500, "write_bytes": 500}),
    record(write=1e8, moved=1000, device_io=None),
    record(write=1e8, moved=None, device_io={"read_bytes": 0, "write_bytes": 0}),
    record(moved=1000, device_io={"read_bytes": 0, "write_bytes": 0}),
    record(test="fio_rand_write", write_iops=100.0, moved=4096, device_io={"read_bytes": 0, "write_bytes": 0}),
]


@pytest.mark.parametrize("case", BYPASS_CASES)
def test_bypass_reason_at_the_default_fraction_is_the_reports_cache_bypass(case):
    assert _run.bypass_reason(case) == _metrics.cache_bypass(case)[0]
    assert _run.bypass_reason(case, 0.95) == _metrics.cache_bypass(case)[0]


def test_bypass_reason_with_a_lower_fraction():
    case = record(write=1e8, moved=1000, device_io={"read_bytes": 0, "write_bytes": 900})
    assert _run.bypass_reason(case) is not None
    assert _run.bypass_reason(case, 0.9) is None
    assert _run.bypass_reason(case, 0.91) == ("cache bypass not proven: the device wrote 900 of the 1000 bytes the tool "
                                              "moved (90.0%, < 91%)")


# ---------------------------------------------------------------------------------------------- sweeps


def test_sweep_result_assembles_one_record():
    steps = [
        _run.SweepStep(0, 268435456, 2.0),
        _run.SweepStep(1000000716800, 268435456, 4.0, warnings=("dd: something",)),
    ]
    result = _run.sweep_result(steps, tool_version="9.1")
    assert result["tool"] == "dd" and result["tool_version"] == "9.1"
    assert result["metrics"]["zcav"] == [
        {"offset_bytes": 0, "read_bytes_per_s": 134217728.0},
        {"offset_bytes": 1000000716800, "read_bytes_per_s": 67108864.0},
    ]
    assert result["metrics"]["read_bytes_per_s"] == 536870912 / 6.0
    assert result["metrics"]["write_bytes_per_s"] is None
    assert (result["bytes"], result["seconds"], result["error"]) == (536870912, 6.0, None)
    assert result["warnings"] == ["step 2 (offset 1000000716800): dd: something"]
    assert list(result["job"]) == ["name", "index", "groupid", "client"]


def test_sweep_result_stops_at_a_failed_step():
    steps = [_run.SweepStep(0, 1000, 1.0), _run.SweepStep(4096, None, None, error="dd: error reading '/dev/sdb': Input/output error"),
             _run.SweepStep(8192, 1000, 1.0)]
    result = _run.sweep_result(steps)
    assert result["error"] == "step 2 (offset 4096): dd: error reading '/dev/sdb': Input/output error"
    assert result["metrics"]["zcav"] == [{"offset_bytes": 0, "read_bytes_per_s": 1000.0}]
    assert result["bytes"] == 1000


def test_sweep_result_first_step_failed():
    result = _run.sweep_result([_run.SweepStep(0, None, None)])
    assert result["error"] == "step 1 (offset 0): dd printed no byte count and time"
    assert (result["bytes"], result["seconds"], result["metrics"]["read_bytes_per_s"]) == (None, None, None)


# ---------------------------------------------------------------------------------------------- write cache


def fake_sys(tmp_path, name, vendor=None, device=True, link=None):
    block = tmp_path / "block" / name
    block.mkdir(parents=True)
    if device:
        (block / "device").mkdir()
        if vendor is not None:
            (block / "device" / "vendor").write_text(vendor)
    return str(tmp_path)


@pytest.mark.parametrize(
    ("name", "vendor", "device", "transport"),
    [
        ("sda", "ATA     \n", True, "ata"),
        ("sdb", "SEAGATE \n", True, "scsi"),
        ("sdc", "QEMU    \n", True, "scsi"),
        ("nvme0n1", None, True, "nvme"),
        ("nvme12n3", None, True, "nvme"),
    ],
)
def test_write_cache_transport(tmp_path, name, vendor, device, transport):
    assert _write_cache.write_cache_transport(name, fake_sys(tmp_path, name, vendor, device))[0] == transport


@pytest.mark.parametrize(
    ("name", "device", "words"),
    [
        ("loop3", False, "loop device"),
        ("vda", True, "virtio/Xen"),
        ("xvdb", True, "virtio/Xen"),
        ("md0", False, "md RAID"),
        ("dm-2", False, "device-mapper"),
        ("zram0", False, "RAM disk"),
        ("mmcblk0", True, "MMC"),
        ("sdx", False, "no /sys/block/sdx/device"),
        ("hda", True, "neither an sd"),
    ],
)
def test_write_cache_transport_without_control(tmp_path, name, device, words):
    transport, why = _write_cache.write_cache_transport("/dev/" + name, fake_sys(tmp_path, name, None, device))
    assert transport is None
    assert words in why


def test_write_cache_transport_unknown_disk(tmp_path):
    assert _write_cache.write_cache_transport("sdq", str(tmp_path)) == (None, "/sys/block/sdq does not exist (not a whole disk)")


def test_write_cache_commands():
    assert _write_cache.write_cache_commands("ata", "sdb") == (
        "hdparm", ["hdparm", "-W", "/dev/sdb"], ["hdparm", "-W0", "/dev/sdb"], ["hdparm", "-W1", "/dev/sdb"])
    assert _write_cache.write_cache_commands("scsi", "/dev/sdc") == (
        "sdparm", ["sdparm", "--get=WCE", "/dev/sdc"], ["sdparm", "--clear=WCE", "/dev/sdc"], ["sdparm", "--set=WCE", "/dev/sdc"])
    commands = _write_cache.write_cache_commands("nvme", "nvme0n1")
    assert commands.get == ["nvme", "get-feature", "/dev/nvme0n1", "-f", "6"]
    # never -v: newer nvme-cli reads it as --verbose and sets 0 (nvme-cli issue 2465)
    assert commands.off == ["nvme", "set-feature", "/dev/nvme0n1", "-f", "6", "--value=0"]
    assert commands.on == ["nvme", "set-feature", "/dev/nvme0n1", "-f", "6", "--value=1"]
    with pytest.raises(ValueError):
        _write_cache.write_cache_commands("usb", "sdz")


@pytest.mark.parametrize(
    ("transport", "name", "enabled", "changeable"),
    [
        ("ata", "hdparm-W-on-ceph.txt", True, None),
        ("ata", "hdparm-W0-ceph.txt", False, None),
        ("ata", "hdparm-W-off-ceph.txt", False, None),
        ("scsi", "sdparm-get-WCE-1-ceph.txt", True, True),
        ("scsi", "sdparm-get-WCE-0-ceph.txt", False, True),
        ("scsi", "sdparm-get-WCE-0-scsi_debug-lkml.txt", False, True),
        ("nvme", "nvme-get-feature-6-on-nvme-cli2465.txt", True, None),
        ("nvme", "nvme-get-feature-6-off-nvme-cli2465.txt", False, None),
    ],
)
def test_parse_write_cache_public_outputs(transport, name, enabled, changeable):
    assert write_cache.parse_write_cache(transport, fixture(name)) == (enabled, changeable)


@pytest.mark.parametrize(
    ("transport", "name", "message"),
    [
        ("ata", "hdparm-W-not-supported-bugzilla207817.txt", "hdparm says write-caching is not supported"),
        ("scsi", "sdparm-clear-WCE-ceph.txt", "expected a 'WCE <value>' line from sdparm --get=WCE, last line "
                                              "'/dev/sda: ATA       TOSHIBA MG07ACA1  0101'"),
        ("nvme", "nvme-set-feature-6-nvme-cli2465.txt", "expected 'get-feature:0x06 (Volatile Write Cache)"),
        ("ata", "sdparm-get-WCE-1-ceph.txt", "expected a 'write-caching = N (on|off)' line from hdparm -W"),
    ],
)
def test_parse_write_cache_refuses_what_is_no_reading(transport, name, message):
    with pytest.raises(ParseError) as caught:
        write_cache.parse_write_cache(transport, fixture(name))
    assert message in str(caught.value)


def test_parse_write_cache_empty_output():
    with pytest.raises(ParseError, match=r"last line \(no output\)"):
        write_cache.parse_hdparm_write_cache("")


# ---------------------------------------------------------------------------------------------- cache fence


PROC_V1 = """12:pids:/user.slice/user-0.slice/session-3.scope
4:memory:/process_api/4051b4d7
3:cpu,cpuacct:/
1:name=systemd:/user.slice
0::/
"""


def test_parse_proc_cgroup():
    found = proc_cgroup.parse_proc_cgroup(PROC_V1)
    assert found["memory"] == "/process_api/4051b4d7"
    assert found["cpu"] == found["cpuacct"] == "/"
    assert found[""] == "/"
    assert found["name=systemd"] == "/user.slice"
    assert proc_cgroup.parse_proc_cgroup("0::/system.slice/ssh.service\n") == {"": "/system.slice/ssh.service"}
    assert proc_cgroup.parse_proc_cgroup("garbage\n\n") == {}


def test_memory_controller_enabled():
    assert _fence.memory_controller_enabled("cpuset cpu io memory hugetlb pids rdma misc\n")
    assert not _fence.memory_controller_enabled("cpu io pids\n")
    assert not _fence.memory_controller_enabled("")


def test_fence_layout_v1_is_a_child_of_the_own_memory_cgroup():
    layout = _fence.fence_layout(1, proc_cgroup.parse_proc_cgroup(PROC_V1), "diskproof-42-00ff", "/sys/fs/cgroup")
    assert layout == (1, "/sys/fs/cgroup/memory/process_api/4051b4d7/diskproof-42-00ff",
                      "/sys/fs/cgroup/memory/process_api/4051b4d7", "memory.limit_in_bytes", "memory.max_usage_in_bytes")
    root = _fence.fence_layout(1, {"memory": "/"}, "diskproof-42-00ff", "/sys/fs/cgroup")
    assert (root.path, root.home) == ("/sys/fs/cgroup/memory/diskproof-42-00ff", "/sys/fs/cgroup/memory")


def test_fence_layout_v2_is_a_child_of_the_root():
    layout = _fence.fence_layout(2, {"": "/user.slice/user-0.slice/session-3.scope"}, "diskproof-42-00ff")
    assert layout == (2, "/sys/fs/cgroup/diskproof-42-00ff", "/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope",
                      "memory.max", "memory.peak")


def test_fence_layout_needs_the_entry():
    with pytest.raises(_fence.FenceError, match="no memory controller entry"):
        _fence.fence_layout(1, {"": "/"}, "x")
    with pytest.raises(_fence.FenceError, match="no unified"):
        _fence.fence_layout(2, {"memory": "/"}, "x")
    with pytest.raises(_fence.FenceError, match="unknown cgroup version"):
        _fence.fence_layout(3, {}, "x")


def test_fence_name():
    assert _fence.fence_name(4242, "1a2b3c4d") == "diskproof-4242-1a2b3c4d"


def fake_cgroup_root(tmp_path, version, subtree="memory pids\n"):
    root = tmp_path / "cgroup"
    root.mkdir()
    if version == 2:
        (root / "cgroup.controllers").write_text("cpu io memory pids\n")
        (root / "cgroup.subtree_control").write_text(subtree)
    elif version == 1:
        (root / "memory").mkdir()
        (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    return root


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_version(tmp_path, version):
    assert _fence.cgroup_version(str(fake_cgroup_root(tmp_path, version))) == version


def test_cgroup_version_none(tmp_path):
    assert _fence.cgroup_version(str(fake_cgroup_root(tmp_path, None))) is None


def test_plan_fence_v2_needs_memory_in_subtree_control(tmp_path):
    root = fake_cgroup_root(tmp_path, 2, subtree="cpu pids\n")
    proc = tmp_path / "cgroup.proc"
    proc.write_text("0::/\n")
    with pytest.raises(_fence.FenceError) as caught:
        _fence.plan_fence(42, "ab", str(root), str(proc))
    assert "memory controller is not enabled" in str(caught.value)
    assert "echo +memory > %s/cgroup.subtree_control" % root in str(caught.value)
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    assert _fence.plan_fence(42, "ab", str(root), str(proc)).path == str(root / "diskproof-42-ab")


def test_plan_fence_without_memory_controller(tmp_path):
    with pytest.raises(_fence.FenceError, match="no memory cgroup controller"):
        _fence.plan_fence(42, "ab", str(fake_cgroup_root(tmp_path, None)), "/proc/self/cgroup")


def test_cache_fence_files_v2(tmp_path):
    """The file writes of a fence, against a plain directory standing in for /sys/fs/cgroup."""
    root = fake_cgroup_root(tmp_path, 2)
    proc = tmp_path / "cgroup.proc"
    proc.write_text("0::/\n")
    (root / "cgroup.procs").write_text("")
    layout = _fence.plan_fence(4242, "ab", str(root), str(proc))
    slept = []
    fence = _fence.CacheFence(layout, 67108864, 4242, sleep=slept.append)
    fence.create()
    fence.enter()
    assert (root / "diskproof-4242-ab" / "memory.max").read_text() == "67108864\n"
    assert (root / "diskproof-4242-ab" / "cgroup.procs").read_text() == "4242\n"
    assert fence.leave() == []
    assert (root / "cgroup.procs").read_text() == "4242\n"
    assert fence.leave() == []  # once only
    (root / "diskproof-4242-ab" / "memory.peak").write_text("1234\n")
    problems = fence.remove(attempts=3, pause=0.5)
    # a plain directory holding files cannot be removed: reported, retried only while busy
    assert fence.peak_bytes == 1234
    assert len(problems) == 1 and "not removed" in problems[0] and "rmdir" in problems[0]
    assert fence.describe() == {"bytes": 67108864, "version": 2, "cgroup": str(root / "diskproof-4242-ab"), "peak_bytes": 1234}
    for name in ("memory.max", "cgroup.procs", "memory.peak"):
        (root / "diskproof-4242-ab" / name).unlink()
    assert fence.remove() == []
    assert not (root / "diskproof-4242-ab").exists()
    assert fence.remove() == []


def test_cache_fence_remove_retries_while_busy(monkeypatch, tmp_path):
    layout = _fence.FenceLayout(1, str(tmp_path / "fence"), str(tmp_path), "memory.limit_in_bytes", "memory.max_usage_in_bytes")
    fence = _fence.CacheFence(layout, 1, 1, sleep=lambda _seconds: None)
    fence.created = True
    calls = []

    def busy_twice(path):
        calls.append(path)
        if len(calls) < 3:
            raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(_fence.os, "rmdir", busy_twice)
    assert fence.remove() == []
    assert len(calls) == 3
    assert fence.peak_bytes is None


def test_stale_fences_are_those_whose_module_pid_is_gone(tmp_path):
    for name in ("diskproof-100-aa", "diskproof-200-bb", "diskproof-x-cc", "other-100-aa", "diskproof-300"):
        (tmp_path / name).mkdir()
    (tmp_path / "diskproof-400-dd").write_text("a file, not a cgroup")
    later = time.time() + _fence.STALE_AFTER_S + 1
    stale = _fence.stale_fences(str(tmp_path), alive=lambda pid: pid == 200, now=later)
    assert stale == [str(tmp_path / "diskproof-100-aa")]
    assert _fence.stale_fences(str(tmp_path / "missing"), alive=lambda pid: False) == []


def test_a_young_fence_or_one_with_a_process_inside_is_never_stale(tmp_path):
    """Another pid namespace's module (a container, a lab host on this kernel) has a pid this one cannot see: its
    fence is empty for a moment after mkdir (younger than STALE_AFTER_S) and holds the module afterwards."""
    (tmp_path / "diskproof-100-aa").mkdir()
    busy = tmp_path / "diskproof-101-bb"
    busy.mkdir()
    (busy / "cgroup.procs").write_text("4242\n")

    def gone(_pid):
        return False

    assert _fence.stale_fences(str(tmp_path), alive=gone) == []
    later = time.time() + _fence.STALE_AFTER_S + 1
    assert _fence.stale_fences(str(tmp_path), alive=gone, now=later) == [str(tmp_path / "diskproof-100-aa")]
    assert _fence.remove_stale_fences(str(tmp_path), alive=gone) == ([], [])
    assert (tmp_path / "diskproof-100-aa").is_dir()


def _dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isfile("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
                    reason="needs root and the cgroup v1 memory controller")
def test_remove_stale_fences_removes_a_real_dead_modules_cgroup_and_keeps_a_live_one():
    """Real memory cgroups beside this process's own (where bench_run puts its fence): the one named after a
    pid that has ended goes once it is old enough, the one named after this live process stays, one holding a
    process stays without a complaint (it is some other namespace's live fence). They are made in a cgroup of this
    test's own below that (named so no sweep takes it), so a fenced job of a test running beside it sweeps none of
    them and this sweep none of its."""
    layout = _fence.plan_fence(os.getpid(), "probe")
    home = os.path.join(layout.home, "diskproof-test-%d" % os.getpid())
    os.mkdir(home)
    dead = os.path.join(home, _fence.fence_name(_dead_pid(), "dead"))
    live = os.path.join(home, _fence.fence_name(os.getpid(), "live"))
    sleeper = subprocess.Popen(["sleep", "30"])
    busy = os.path.join(home, _fence.fence_name(_dead_pid(), "busy"))
    try:
        for path in (dead, live, busy):
            os.mkdir(path)
        with open(os.path.join(busy, "cgroup.procs"), "w") as handle:
            handle.write("%d\n" % sleeper.pid)
        young, _problems = _fence.remove_stale_fences(home, _fence.pid_alive)
        assert young == [] and os.path.isdir(dead)
        removed, problems = _fence.remove_stale_fences(home, _fence.pid_alive, min_age_s=0)
        assert removed == [dead]
        assert not os.path.exists(dead) and os.path.isdir(live) and os.path.isdir(busy)
        assert problems == []
    finally:
        sleeper.kill()
        sleeper.wait()
        for path in (dead, live, busy, home):
            for _attempt in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


# ---------------------------------------------------------------------------------------------- workdir


def test_remove_tree_removes_everything_inside_but_follows_no_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    work = tmp_path / "work"
    work.mkdir()
    expected = _tree.identity(str(work))
    (work / "a" / "b").mkdir(parents=True)
    (work / "a" / "b" / "f").write_text("x")
    (work / "file").write_text("y")
    os.symlink(str(outside), str(work / "link-to-outside"))
    os.symlink(str(outside / "keep.txt"), str(work / "a" / "link-to-file"))
    assert _tree.remove_tree(str(work), expected) == []
    assert not work.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_remove_tree_refuses_a_replaced_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    expected = _tree.identity(str(work))
    work.rmdir()
    target = tmp_path / "precious"
    target.mkdir()
    (target / "data").write_text("data")
    os.symlink(str(target), str(work))
    problems = _tree.remove_tree(str(work), expected)
    assert problems == ["%s is not the directory this run created (replaced while running): not removed" % work]
    assert (target / "data").exists()


def test_remove_tree_of_nothing(tmp_path):
    assert _tree.remove_tree(str(tmp_path / "gone"), (0, 0)) == []


# ---------------------------------------------------------------------------------------------- evidence


def test_evidence_names():
    assert _run.evidence_name("fio_rand_read", "run", 2) == "fio_rand_read.2.out"
    assert _run.evidence_name("fio_rand_read", "fio") == "fio_rand_read.fio"
    assert _run.evidence_name("sysbench rand/read", "setup", 1) == "sysbench_rand_read.setup.1.out"
    assert _run.evidence_name("../x", "cleanup", 3) == "_.._x.cleanup.3.out"
    with pytest.raises(ValueError):
        _run.evidence_name("t", "other")


def test_existing_evidence(tmp_path):
    for name in ("dd_seq.1.out", "dd_seq.fio", "dd_seq.setup.2.out", "dd_seq_write.1.out", "other.txt"):
        (tmp_path / name).write_text("")
    assert _run.existing_evidence(str(tmp_path), "dd_seq") == [
        str(tmp_path / "dd_seq.1.out"), str(tmp_path / "dd_seq.fio"), str(tmp_path / "dd_seq.setup.2.out")]
    assert _run.existing_evidence(str(tmp_path), "fio") == []
    assert _run.existing_evidence(str(tmp_path / "missing"), "dd_seq") == []


def test_last_line():
    assert _run.last_line("a\n\n  b  \n\n") == "b"
    assert _run.last_line("") == "(no output)"


@pytest.mark.parametrize(("error_number", "advice"), [
    (errno.EACCES, "run with become: true"),
    (errno.EPERM, "run with become: true"),
    (errno.EROFS, "mounted read-only here (a container?)"),
    (errno.ENODEV, "the kernel refused a new memory cgroup"),   # seen once on a loaded lab: become is no help
    (errno.ENOSPC, "the kernel refused a new memory cgroup"),
    (None, "check that the memory cgroup controller is mounted and writable"),
])
def test_fence_setup_advice_follows_the_errno(error_number, advice):
    text = _fence.fence_setup_advice(error_number)
    assert advice in text
    assert ("become" in text) == (error_number in (errno.EACCES, errno.EPERM))
