"""roles/benchmark/templates/fio_job.ini.j2 renders a job file real fio accepts, for every fio test of the catalog."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import Settings, TargetFacts, build_plan

TEMPLATE = pathlib.Path(__file__).resolve().parents[3] / "roles" / "benchmark" / "templates" / "fio_job.ini.j2"
FIO_JOBS = [job for job in build_plan(
    [TargetFacts(path="/srv/disk-1", free_bytes=1 << 40, filesystem_size_bytes=1 << 41, device="sdb")],
    Settings(run_id="20261122T000000Z-abcd", memory_bytes=1 << 30, profile="full"),
).jobs if job["fio"]]


def render(job):
    # Ansible's template lookup uses these Jinja2 settings (trim_blocks on).
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.from_string(TEMPLATE.read_text()).render(item=job)


def test_the_catalog_has_the_fio_tests():
    assert sorted(job["test"] for job in FIO_JOBS) == [
        "fio_commit_rate", "fio_mixed_70_30", "fio_rand_read", "fio_rand_read_qd1", "fio_rand_write",
        "fio_rand_write_qd1", "fio_seq_read", "fio_seq_write"]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
@pytest.mark.parametrize("job", FIO_JOBS, ids=[job["test"] for job in FIO_JOBS])
def test_rendered_job_file_passes_fio_parse_only(job, tmp_path):
    text = render(job)
    job_file = tmp_path / (job["test"] + ".fio")
    job_file.write_text(text)
    result = subprocess.run(["fio", "--parse-only", str(job_file)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(";"))
    fio = job["fio"]
    assert lines["filename"] == fio["filename"] and lines["rw"] == fio["rw"] and int(lines["bs"]) == fio["bs"]
    assert int(lines["iodepth"]) == fio["iodepth"] and int(lines["size"]) == fio["size"]
    assert lines["allow_file_create"] == "0" and lines["time_based"] == "1"
    assert ("fdatasync" in lines) == bool(fio["fdatasync"]) and ("rwmixread" in lines) == (fio["rwmixread"] is not None)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_parse_only_does_reject_a_broken_job_file(tmp_path):
    # The check above can fail: fio refuses an option it does not know.
    job_file = tmp_path / "broken.fio"
    job_file.write_text(render(FIO_JOBS[0]).replace("rw=", "rw_typo="))
    result = subprocess.run(["fio", "--parse-only", str(job_file)], capture_output=True, text=True, check=False)
    assert result.returncode != 0
