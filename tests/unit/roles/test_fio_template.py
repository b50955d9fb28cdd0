"""roles/benchmark/templates/fio_job.ini.j2 renders a job file real fio accepts, for every fio test of the catalog,
on a test file and on a raw block device (raw_read: the read tests, run with fio --readonly; raw_write: all)."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import join_output, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import CATALOG, Settings, TargetFacts, build_plan

TEMPLATE = pathlib.Path(__file__).resolve().parents[3] / "roles" / "benchmark" / "templates" / "fio_job.ini.j2"
SETTINGS = Settings(run_id="20261122T000000Z-abcd", memory_bytes=1 << 30, profile="full")
FIO_JOBS = [job for job in build_plan(
    [TargetFacts(path="/srv/disk-1", free_bytes=1 << 40, filesystem_size_bytes=1 << 41, device="sdb")], SETTINGS,
).jobs if job["fio"]]
RAW_JOBS = [job for granted in ("raw_read", "raw_write") for job in build_plan(
    [TargetFacts(path="/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", kind="raw", device_path="/dev/sdc", device="sdc",
                 device_size_bytes=(1 << 30) + 4096, granted_class=granted)], SETTINGS,
).jobs if job["fio"]]
# The fio tests the catalog declares read-only on a raw device (CatalogEntry.raw).
READ_ONLY = tuple(test for test, entry in CATALOG.items() if entry.tool == "fio" and entry.raw == "read")


def render(job):
    # Ansible's template lookup uses these Jinja2 settings (trim_blocks on).
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.from_string(TEMPLATE.read_text()).render(item=job)


def parse_only(job, text, tmp_path):
    """fio --parse-only with the job's own flags (--readonly for read-only jobs)."""
    job_file = tmp_path / (job["test"] + ".fio")
    job_file.write_text(text)
    flags = [arg for arg in job["argv"][1:] if arg == "--readonly"]
    return subprocess.run(["fio", "--parse-only", *flags, str(job_file)], capture_output=True, text=True, check=False)


def settings_of(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(";"))


def test_the_catalog_has_the_fio_tests():
    # Every fio test of the full profile (the SSD steady-state tests: test_ssd_steady_state.py).
    # (fio_verify runs as its two passes)
    assert sorted(job["test"] for job in FIO_JOBS) == sorted(
        [test for test, entry in CATALOG.items() if entry.tool == "fio" and not entry.raw_only
         and test not in ("fio_verify", "burnin")] + ["fio_verify_1of2", "fio_verify_2of2"])
    assert "fio_rand_read" in READ_ONLY and "fio_rand_write" not in READ_ONLY
    assert sorted(job["test"] for job in RAW_JOBS if job["target"]["class"] == "raw_read") == sorted(READ_ONLY)
    assert sorted(job["test"] for job in RAW_JOBS if job["target"]["class"] == "raw_write") == sorted(
        job["test"] for job in FIO_JOBS)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
@pytest.mark.parametrize("job", FIO_JOBS + RAW_JOBS,
                         ids=[job["test"] for job in FIO_JOBS] + ["%s-%s" % (job["target"]["class"], job["test"])
                                                                  for job in RAW_JOBS])
def test_rendered_job_file_passes_fio_parse_only(job, tmp_path):
    text = render(job)
    result = parse_only(job, text, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = settings_of(text)
    fio = job["fio"]
    assert lines["filename"] == fio["filename"] and lines["rw"] == fio["rw"] and int(lines["bs"]) == fio["bs"]
    assert int(lines["iodepth"]) == fio["iodepth"] and int(lines["size"]) == fio["size"]
    assert lines["allow_file_create"] == "0"
    # fio_verify writes and reads back every block once: not timed.
    assert lines.get("time_based") == (None if job["test"].startswith("fio_verify_") else "1")
    assert (lines.get("verify"), lines.get("verify_pattern")) == (
        ("pattern", fio["verify_pattern"]) if job["test"].startswith("fio_verify_") else (None, None))
    assert ("fdatasync" in lines) == bool(fio["fdatasync"]) and ("rwmixread" in lines) == (fio["rwmixread"] is not None)
    assert "readonly" not in lines   # fio has no such job option: the flag is on the command line
    assert ("--readonly" in job["argv"]) == (job["test"] in READ_ONLY)
    assert ("Reproduce with: fio --output-format=json --readonly <this file>" in text) == (job["test"] in READ_ONLY)
    if job["target"].get("kind") == "raw":
        assert lines["filename"] == "/dev/sdc" and int(lines["size"]) <= (1 << 30) + 4096
        assert "; The block device itself (%s), never a file" % job["target"]["class"] in text
    else:
        assert "written by dd_seq_write of this run" in text


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_parse_only_does_reject_a_broken_job_file(tmp_path):
    # The check above can fail: fio refuses an option it does not know, such as readonly=1 in a job file.
    job = FIO_JOBS[0]
    assert parse_only(job, render(job).replace("rw=", "rw_typo="), tmp_path).returncode != 0
    assert parse_only(job, render(job).replace("allow_file_create=0", "allow_file_create=0\nreadonly=1"),
                      tmp_path).returncode != 0


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_readonly_refuses_a_read_only_job_turned_into_a_write(tmp_path):
    job = next(job for job in RAW_JOBS if job["test"] == "fio_rand_read")
    result = parse_only(job, render(job).replace("rw=randread", "rw=randwrite"), tmp_path)
    assert result.returncode != 0 and "read-only mode" in result.stderr


@pytest.fixture
def loop_device(tmp_path):
    """A loop device of our own over a 16 MiB sparse file with a pattern; detached by name afterwards."""
    if os.geteuid() != 0 or shutil.which("losetup") is None:
        pytest.skip("needs root and losetup")
    image = tmp_path / "raw.img"
    with open(image, "wb") as handle:
        handle.truncate(16 << 20)
        handle.seek(8 << 20)
        handle.write(os.urandom(1 << 20))
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        yield device
    finally:
        with open("/sys/block/%s/loop/backing_file" % os.path.basename(device), encoding="utf-8") as handle:
            assert handle.read().strip() == str(image)
        subprocess.run(["losetup", "-d", device], check=True)


def sectors(device):
    with open("/sys/block/%s/stat" % os.path.basename(device), encoding="ascii") as handle:
        fields = handle.read().split()
    return int(fields[2]), int(fields[6])


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_a_raw_read_job_really_runs_read_only_on_a_loop_device(loop_device, tmp_path):
    (job,) = build_plan(
        [TargetFacts(path=loop_device, kind="raw", device_path=loop_device, device=os.path.basename(loop_device),
                     device_size_bytes=16 << 20, granted_class="raw_read")],
        Settings(run_id="t", memory_bytes=64 << 20, tests=("fio_rand_read",), fio_runtime_s=1, fio_ramp_s=0),
    ).jobs
    assert job["fio"]["size"] == 16 << 20
    job_file = tmp_path / "job.fio"
    job_file.write_text(render(job))
    before = sectors(loop_device)
    result = subprocess.run(job["argv"] + [str(job_file)], capture_output=True, text=True, check=False)
    after = sectors(loop_device)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["jobs"][0]["read"]["io_bytes"] > 0 and report["jobs"][0]["write"]["io_bytes"] == 0
    assert after[0] > before[0] and after[1] == before[1]   # read from the device, not one sector written


FAIL_FAST = Settings(run_id="20261122T000000Z-abcd", memory_bytes=1 << 30, profile="full", fio_max_write_latency_ms=50,
                     fio_min_read_mb_per_s=4.5)
FAIL_FAST_JOBS = [job for job in build_plan(
    [TargetFacts(path="/srv/disk-1", free_bytes=1 << 40, filesystem_size_bytes=1 << 41, device="sdb")], FAIL_FAST,
).jobs if job["fio"]]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
@pytest.mark.parametrize("job", FAIL_FAST_JOBS, ids=[job["test"] for job in FAIL_FAST_JOBS])
def test_fail_fast_limits_reach_every_fio_job(job, tmp_path):
    text = render(job)
    assert parse_only(job, text, tmp_path).returncode == 0
    lines = settings_of(text)
    # microseconds and bytes/s, read,write; 0: that direction off
    assert (lines["max_latency"], lines["rate_min"], lines["rate_cycle"]) == ("0,50000", "4500000,0", "1000")
    assert job["params"]["max_latency_ms"] == {"read": 0.0, "write": 50}
    assert job["params"]["rate_min_mb_per_s"] == {"read": 4.5, "write": 0.0}
    # without limits: no lines, nothing in params
    assert "max_latency" not in settings_of(render(FIO_JOBS[0])) and "max_latency_ms" not in FIO_JOBS[0]["params"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_a_rendered_max_latency_really_ends_the_job(loop_device, tmp_path):
    # A read limit of 1 microsecond: no read of a loop device is that fast, so fio must end the job at once.
    (job,) = build_plan(
        [TargetFacts(path=loop_device, kind="raw", device_path=loop_device, device=os.path.basename(loop_device),
                     device_size_bytes=16 << 20, granted_class="raw_read")],
        Settings(run_id="t", memory_bytes=64 << 20, tests=("fio_rand_read",), fio_runtime_s=5, fio_ramp_s=0,
                 fio_max_read_latency_ms=0.001),
    ).jobs
    job_file = tmp_path / "job.fio"
    job_file.write_text(render(job))
    run = subprocess.run(job["argv"] + [str(job_file)], capture_output=True, check=False, timeout=60)
    _tool, (result,) = parse_output(join_output(run.stdout, run.stderr).decode())
    assert run.returncode != 0
    assert result["error"].startswith("fail-fast: a read took "), result["error"]
    assert ", over max_latency 0.001 ms (" in result["error"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_burn_in_cycles_render_a_verify_job_over_the_whole_device(tmp_path):
    device_size = (1 << 30) + 4096
    jobs = build_plan([TargetFacts(path="/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", kind="raw", device_path="/dev/sdc",
                                   device="sdc", device_size_bytes=device_size, granted_class="raw_write")],
                      Settings(run_id="20261122T000000Z-abcd", memory_bytes=1 << 20, profile="burnin",
                               burnin_hours=0.5)).jobs
    assert jobs and all(job["test"].startswith("burnin_") for job in jobs)   # dd_seq_write needs a filesystem
    for job in (jobs[0], jobs[-1]):
        text = render(job)
        assert parse_only(job, text, tmp_path).returncode == 0
        lines = settings_of(text)
        assert (lines["verify"], lines["do_verify"], lines["continue_on_error"]) == ("pattern", "1", "verify")
        assert lines["verify_pattern"] == job["fio"]["verify_pattern"] and "time_based" not in lines
        assert int(lines["size"]) == (1 << 30) and int(lines["bs"]) == 1 << 20     # whole 1 MiB blocks of it
