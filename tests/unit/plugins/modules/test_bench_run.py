"""bench_run: argv runs end to end through AnsibleModule (real dd and fio, no mocks of the parsers).

The job-runner options (repeats, setup/cleanup, workdir, cache fence, write cache, sweep, ...) are in
test_bench_run_runner.py, cancels in test_bench_run_cancel.py, run_dir in test_bench_run_run_dir.py.
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import records, run_main

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def fixture_path(*parts):
    return os.path.abspath(os.path.join(FIXTURES, *parts))


def run_module(capsys, **args):
    # These tests run commands on this machine's shared disk, where other tests write at the same time: no wait
    # for an idle disk before each run (settle_s, tested in test_bench_run_settle.py).
    args.setdefault("settle_s", 0)
    return run_main(bench_run, capsys, args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"argv": ["true"], "sweep": [{"offset_bytes": 0, "argv": ["true"]}]},
         "parameters are mutually exclusive: argv|sweep"),
        ({}, "one of the following is required: argv, sweep"),
        ({"argv": []}, "argv must name a command"),
        ({"argv": ["true"], "content": "x"}, "Unsupported parameters for (basic.py) module: content"),
        ({"argv": ["true"], "src": "/x"}, "Unsupported parameters for (basic.py) module: src"),
    ],
)
def test_argument_errors(capsys, args, message):
    code, result = run_module(capsys, **args)
    assert code == 1
    assert message in result["msg"]


@needs_dd
def test_a_run_carries_no_deprecation(capsys):
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=/dev/null", "count=1"], device_io=False)
    assert code == 0, result
    assert not result.get("deprecations")


def test_argv_in_check_mode_does_not_run(capsys, tmp_path):
    out = tmp_path / "never-written"
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=%s" % out, "bs=4096", "count=1"],
                              _ansible_check_mode=True)
    assert code == 0
    assert result["changed"] is False
    assert records(result) == []
    assert result["msg"] == "check mode: dd not run"
    assert not out.exists()


@needs_dd
def test_argv_runs_dd_and_records_the_run(capsys, tmp_path):
    out = tmp_path / "diskproof.testfile"
    argv = ["dd", "if=/dev/zero", "of=%s" % out, "bs=65536", "count=16", "conv=fdatasync"]
    code, result = run_module(capsys, argv=argv, test="dd_seq_write", target={"path": str(tmp_path)}, creates=str(out))
    assert code == 0
    assert result["changed"] is True
    assert result["created"] == [str(out)]
    (record,) = records(result)
    assert record["command"] == argv
    assert record["exit_code"] == 0
    assert ISO_UTC.match(record["started"]) and ISO_UTC.match(record["finished"])
    assert record["bytes"] == 1048576 == out.stat().st_size
    assert record["metrics"]["write_bytes_per_s"] == pytest.approx(1048576 / record["seconds"], rel=1e-12)
    assert record["target"]["device"] == _blockdev.whole_disk_name(str(tmp_path))
    assert re.match(r"^\d+(\.\d+)+$", record["tool_version"])  # from `dd --version`
    if record["target"]["device"] is None:
        assert record["device_io"] is None
        assert "device_io unknown" in record["warnings"][-1]
    else:
        assert set(record["device_io"]) == {"read_bytes", "write_bytes"}


@needs_dd
def test_argv_refuses_to_overwrite_creates(capsys, tmp_path):
    out = tmp_path / "diskproof.testfile"
    out.write_text("keep me")
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=%s" % out, "count=1"], creates=str(out))
    assert code == 1
    assert "exists already" in result["msg"]
    assert out.read_text() == "keep me"


@needs_dd
def test_argv_tool_failure_names_tool_command_exit_code_and_error_line(capsys, tmp_path):
    argv = ["dd", "if=%s" % (tmp_path / "missing"), "of=/dev/null"]
    code, result = run_module(capsys, argv=argv, device_io=False)
    assert code == 1
    assert result["msg"] == (
        "dd failed (exit code 1): dd: failed to open '%s': No such file or directory; command: %s"
        % (tmp_path / "missing", " ".join(argv))
    )
    (record,) = records(result)
    assert (record["exit_code"], record["bytes"], record["device_io"]) == (1, None, None)


@needs_fio
def test_argv_fio_without_json_still_gives_an_error_record(capsys, tmp_path):
    argv = ["fio", "--name=bad-engine", "--directory=%s" % tmp_path, "--size=1M", "--rw=read",
            "--ioengine=nonexistent", "--output-format=json"]
    code, result = run_module(capsys, argv=argv, fail_on_error=False)
    assert code == 0
    (record,) = records(result)
    assert record["tool"] == "fio"
    assert record["exit_code"] == 1
    assert "fio: engine nonexistent not loadable" in record["error"]
    assert record["tool_version"] == fio_version()


def test_drop_caches_failure_is_a_clear_failure(capsys, monkeypatch):
    def refuse():
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_blockdev, "drop_caches", refuse)
    code, result = run_module(capsys, argv=["true"], drop_caches=True)
    assert code == 1
    assert result["msg"].startswith("drop_caches=true but the page cache cannot be dropped")


def test_non_zero_exit_without_tool_error_marks_the_records(capsys, tmp_path):
    script = tmp_path / "dd"
    with open(fixture_path("dd", "gnu91-write-fdatasync.txt"), encoding="utf-8") as handle:
        captured = handle.read()
    # a stand-in that prints a real capture and exits 3 (as if killed after finishing)
    script.write_text("#!/bin/sh\ncat <<'EOF' >&2\n%sEOF\nexit 3\n" % captured)
    script.chmod(0o755)
    code, result = run_module(capsys, argv=[str(script), "of=/dev/null"], direction="write", device_io=False)
    assert code == 1
    (record,) = records(result)
    assert record["error"] == "exit code 3: 134217728 bytes (134 MB, 128 MiB) copied, 2.73932 s, 49.0 MB/s"
    assert record["bytes"] == 134217728
    assert result["msg"].startswith("dd failed (exit code 3): exit code 3: ")


def fio_version():
    import subprocess

    banner = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return banner[4:] if banner.startswith("fio-") else banner
