"""The benchmark role on a real lab disk (50 MiB/s, 200 IOPS): check mode that only plans, a
quick-profile run that is repeated, fenced, proven by the device counters and cleaned up, and the
naive buffered tests it guards against, for contrast. Refusals of bad input (misaligned block size,
no space, unknown test or profile, bad repeats, ...) are in test_bad_input_matrix.py.

Real lab (tools/lab, lab `bcat`), real ansible-playbook with the report callback. Root only.
benchmarks/accuracy.py holds the 3 % accuracy figures (longer runs); these tests check behaviour
and coarse figures (within 10 %).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from labhelpers import BIN, REPO, lab, leftover_fences, needs_root

HERE = Path(__file__).resolve().parent
SPEC = HERE / "bcat_lab.yml"
LAB = "bcat"
HOST = "bcat-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
MIB = 1 << 20
TRUTH = {"dd_seq_write": ("write_bytes_per_s", 50 * MIB), "dd_seq_read": ("read_bytes_per_s", 50 * MIB),
         "fio_rand_read": ("read_iops", 200), "fio_rand_write": ("write_iops", 200)}

# The contrast run reads back through the page cache that every lab shares, and a cache drop or sync of another
# lab's run would empty it meanwhile: the file runs alone (tests/integration/conftest.py).
pytestmark = [needs_root, pytest.mark.alone]


@pytest.fixture(scope="module")
def bcat():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(INVENTORY.read_text())
        yield inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"][0]
    finally:
        lab("down", "--name", LAB)


def playbook(playbook_path, tmp_path, *extra, check=False):
    report_dir = tmp_path / "report"
    env = dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_NOCOLOR="1",
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(playbook_path)]
    for value in extra:
        argv += ["-e", value if isinstance(value, str) else json.dumps(value)]
    if check:
        argv.append("--check")
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=900)
    report = json.loads((report_dir / "report.json").read_text()) if (report_dir / "report.json").exists() else None
    return result.returncode, result.stdout + result.stderr, report


def disk_state(disk):
    """What is on the disk's filesystem and how many sectors the device has written so far.

    The sync first flushes whatever is pending (an atime update of the listing itself), so the
    sector count only moves when something really wrote.
    """
    listing = lab("ssh", "--name", LAB, HOST, "--", "ls -A %s; sync -f %s" % (disk["path"], disk["path"])).stdout.split()
    with open("/sys/block/%s/stat" % disk["device"], encoding="ascii") as handle:
        written_sectors = int(handle.read().split()[6])
    return listing, written_sectors


def test_check_mode_prints_the_plan_and_changes_nothing(bcat, tmp_path):
    before = disk_state(bcat)
    rc, output, _report = playbook(REPO / "playbooks" / "validate.yml", tmp_path, check=True)
    assert rc == 0, output[-3000:]
    assert "profile standard: 14 tests, 15 jobs, 3 run(s) each (up to 5 when unstable)" in output
    assert "test file 64.0 MiB = 2 x cache fence 32.0 MiB, rounded to whole blocks" in output
    assert "/srv/diskproof/d0: needs 128.0 MiB, keeps 64.0 MiB free of" in output
    assert "fio_mixed_70_30" in output and "sysbench_rndrd" in output
    assert "Run each test" in output and "skipping" in output
    assert disk_state(bcat) == before


def test_quick_profile_is_repeated_fenced_proven_and_cleaned_up(bcat, tmp_path):
    before = disk_state(bcat)
    rc, output, report = playbook(REPO / "playbooks" / "validate.yml", tmp_path, "diskproof_profile=quick",
                                  "benchmark_fio_runtime_s=4")
    assert rc == 0, output[-3000:]
    records = {entry["test"]: entry["record"] for entry in report["results"]}
    assert sorted(records) == ["dd_seq_read", "dd_seq_write", "fio_commit_rate", "fio_rand_read", "fio_rand_write"]
    for test, record in records.items():
        assert record["error"] is None, (test, record["error"])
        assert record["runs"] >= 2 and len(record["samples"]) == record["runs"] and record["cv"] is not None, test
        # The record is one real run: its figure is one of the samples (the median one).
        assert record["samples"].count(None) == 0
    for test, (metric, truth) in TRUTH.items():
        measured = records[test]["metrics"][metric]
        assert abs(measured - truth) / truth < 0.10, (test, measured, truth)
    write = records["dd_seq_write"]
    assert write["device_io"]["write_bytes"] >= 0.95 * write["bytes"]
    assert write["cache_fence"]["bytes"] == 32 * MIB and write["cache_fence"]["peak_bytes"] <= 32 * MIB
    assert records["dd_seq_read"]["device_io"]["read_bytes"] >= 0.95 * records["dd_seq_read"]["bytes"]
    assert "allow_file_create=0" in records["fio_rand_read"]["job_file"]
    assert records["fio_commit_rate"]["metrics"]["fsyncs_per_s"] > 0
    # A healthy lab disk passes every test, buffered writes included (the lab allocates its images and the runner
    # waits for an idle disk before each run: docs/lab.md, "Buffered writes").
    verdicts = {entry["test"]: entry["verdict"] for entry in report["results"]}
    assert set(verdicts.values()) == {"pass"}, [(entry["test"], entry["verdict"], entry["reason"], entry["notes"])
                                                for entry in report["results"]]
    # The plan came first, and everything the run created is gone.
    assert output.index("test file 64.0 MiB") < output.index("Run each test")
    listing, _sectors = disk_state(bcat)
    assert listing == before[0]
    assert leftover_fences(LAB) == []


def test_naive_buffered_tests_are_inflated_and_the_fence_is_not(bcat, tmp_path):
    rc, output, report = playbook(REPO / "benchmarks" / "contrast.yml", tmp_path)
    assert rc == 0, output[-3000:]
    by_test = {entry["test"]: entry for entry in report["results"]}
    # The lab caps each disk's dirty cache at 20 % of its 32 MiB memory figure, as such a host
    # would, so the naive write's rate is only a little high (or low, on a loaded machine); the
    # device counters expose it either way: they saw less than the tool claims.
    naive = by_test["naive_dd_write_no_sync"]
    assert naive["record"]["device_io"]["write_bytes"] < 0.95 * naive["record"]["bytes"]
    assert naive["verdict"] == "invalid"
    unfenced = by_test["dd_buffered_reread_unfenced"]
    assert unfenced["record"]["metrics"]["read_bytes_per_s"] > 3 * 50 * MIB and unfenced["verdict"] == "invalid"
    fenced = by_test["dd_buffered_reread_fenced"]
    rate = fenced["record"]["metrics"]["read_bytes_per_s"]
    assert abs(rate - 50 * MIB) / (50 * MIB) < 0.10, rate
    assert fenced["record"]["device_io"]["read_bytes"] >= 0.95 * fenced["record"]["bytes"]
    assert leftover_fences(LAB) == []
