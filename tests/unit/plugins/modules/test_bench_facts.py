"""bench_facts: parse-only and argv runs end to end through AnsibleModule (no mocks of the parsers)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev
from ansible_collections.diskproof.fleet.plugins.modules import bench_facts

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
RECORD_KEYS = [
    "schema", "test", "tool", "tool_version", "target", "params", "job", "metrics", "bytes", "seconds", "started",
    "finished", "command", "exit_code", "raw_sha256", "device_io", "warnings", "error",
]
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def fixture_path(*parts):
    return os.path.abspath(os.path.join(FIXTURES, *parts))


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            bench_facts.main()
    result = json.loads(capsys.readouterr().out)
    return caught.value.code, result


def records(result):
    return result["ansible_facts"]["diskproof_results"]


def test_parse_only_dd_src_gives_a_schema_1_record(capsys):
    path = fixture_path("dd", "gnu91-write-fdatasync.txt")
    code, result = run_module(capsys, src=path, direction="write", test="dd_seq_write",
                              target={"path": "/nonexistent/diskproof", "device": "sdb"}, params={"block_size": 1048576})
    assert code == 0
    assert result["changed"] is False
    assert result["created"] == []
    (record,) = records(result)
    assert list(record) == RECORD_KEYS
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    assert record == {
        "schema": 1,
        "test": "dd_seq_write",
        "tool": "dd",
        "tool_version": None,
        "target": {"path": "/nonexistent/diskproof", "device": "sdb"},  # a given device is kept
        "params": {"block_size": 1048576},
        "job": {"name": None, "index": 0, "groupid": None, "client": None},
        "metrics": {
            "read_bytes_per_s": None,
            "write_bytes_per_s": pytest.approx(134217728 / 2.73932, rel=1e-12),
            "read_iops": None,
            "write_iops": None,
            "fsyncs_per_s": None,
            "latency_ns": {"read": None, "write": None},
            "transfer_bytes_per_s": pytest.approx(134217728 / 2.73932, rel=1e-12),  # dd: kept whatever the direction
        },
        "bytes": 134217728,
        "seconds": 2.73932,
        "started": None,
        "finished": None,
        "command": None,
        "exit_code": None,
        "raw_sha256": digest,
        "device_io": None,
        "warnings": [],
        "error": None,
    }


def test_parse_only_fio_content_one_record_per_job(capsys):
    with open(fixture_path("fio", "fio333-numjobs2.json"), encoding="utf-8") as handle:
        content = handle.read()
    code, result = run_module(capsys, content=content, test="fio_rand_read")
    assert code == 0
    first, second = records(result)
    assert (first["tool"], first["tool_version"], first["test"]) == ("fio", "3.33", "fio_rand_read")
    assert [first["job"]["index"], second["job"]["index"]] == [0, 1]
    assert first["metrics"]["read_iops"] == 101.949025
    # clat_ns of the two jobs in the fixture: mean, min, percentiles 50/95/99/99.9, max, stddev
    assert first["metrics"]["latency_ns"] == {"write": None, "read": {
        "mean": 78456872.210784, "min": 18348, "p50": 100139008, "p95": 100139008, "p99": 101187584,
        "p99_9": 101187584, "max": 101598610, "stdev": 41171602.852405}}
    assert second["metrics"]["latency_ns"] == {"write": None, "read": {
        "mean": 78453840.031863, "min": 18358, "p50": 100139008, "p95": 100139008, "p99": 101187584,
        "p99_9": 101187584, "max": 101426295, "stdev": 41167164.646918}}
    assert list(first["metrics"]["latency_ns"]["read"]) == ["mean", "min", "p50", "p95", "p99", "p99_9", "max", "stdev"]
    assert first["raw_sha256"] == hashlib.sha256(content.encode("utf-8")).hexdigest()
    assert first["target"] == {"device": None}


def test_parse_only_works_in_check_mode(capsys):
    code, result = run_module(capsys, src=fixture_path("dd", "gnu91-three-runs.txt"), direction="write",
                              _ansible_check_mode=True)
    assert code == 0
    assert [record["seconds"] for record in records(result)] == [0.745341, 0.637122, 0.636057]


def test_parse_error_fails_naming_tool_expectation_and_line(capsys):
    code, result = run_module(capsys, content="fio: engine libaio not loadable\n", tool="fio")
    assert code == 1
    assert result["msg"] == (
        "fio output: expected fio JSON output (--output-format=json), found none (nor fio normal or terse output); "
        "offending line 1: 'fio: engine libaio not loadable'; parsed from content="
    )


def test_auto_cannot_tell_fails(capsys):
    code, result = run_module(capsys, content="hello\n")
    assert code == 1
    assert "expected dd or fio output" in result["msg"]


def test_tool_error_fails_but_returns_the_records(capsys):
    code, result = run_module(capsys, src=fixture_path("dd", "gnu91-enospc.txt"), direction="write")
    assert code == 1
    assert result["msg"].startswith(
        "dd reported an error: dd: error writing '/tmp/dpcap/tiny/fill.bin': No space left on device; parsed from src="
    )
    (record,) = records(result)
    assert (record["bytes"], record["seconds"]) == (6291456, 0.0274641)


def test_fail_on_error_false_keeps_the_failure_in_the_record_only(capsys):
    code, result = run_module(capsys, src=fixture_path("fio", "fio333-error-misaligned-merged.txt"), fail_on_error=False)
    assert code == 0
    (record,) = records(result)
    assert record["error"] == "fio: pid=7882, err=22/file:io_u.c:1876, func=io_u error, error=Invalid argument"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"content": "x", "src": "/x"}, "parameters are mutually exclusive: content|src|argv|sweep"),
        ({}, "one of the following is required: content, src, argv, sweep"),
        ({"content": "x", "drop_caches": True}, "drop_caches is True but any of the following are missing: argv, sweep"),
        ({"content": "x", "device_io": True}, "device_io is True but any of the following are missing: argv, sweep"),
        ({"src": "/x", "creates": "/y"}, "missing parameter(s) required by 'creates': argv"),
        ({"argv": []}, "argv must name a command"),
        ({"src": "/nonexistent/diskproof.log"}, "cannot read src=/nonexistent/diskproof.log"),
    ],
)
def test_argument_errors(capsys, args, message):
    code, result = run_module(capsys, **args)
    assert code == 1
    assert message in result["msg"]


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


# src= is read only when it is a regular file (a symlink to one is fine) of at most src_max_bytes: a
# device, FIFO or directory is refused before it is read (a FIFO would block the module forever, a
# block device be read whole into memory), and so is a file larger than the limit.
def _not_regular_files(tmp_path):
    fifo = tmp_path / "output.fifo"
    os.mkfifo(fifo)
    block = tmp_path / "loop250"  # a node for an unbound loop device of this test's own: never opened
    os.mknod(block, 0o600 | stat.S_IFBLK, os.makedev(7, 250))
    link = tmp_path / "link-to-fifo"
    link.symlink_to(fifo)
    return [
        (str(fifo), "is a FIFO (named pipe)"),
        (str(block), "is a block device"),
        ("/dev/null", "is a character device"),
        (str(tmp_path), "is a directory"),
        (str(link), "is a FIFO (named pipe)"),
    ]


def test_src_that_is_not_a_regular_file_is_refused_before_it_is_read(capsys, tmp_path):
    for path, kind in _not_regular_files(tmp_path):
        code, result = run_module(capsys, src=path)
        assert code == 1, path
        assert result["msg"] == (
            "src=%s %s, not a regular file: bench_facts parses tool output saved to a regular file; save the "
            "output to a file (for example with the tool's own output option) and pass its path" % (path, kind))
        assert "diskproof_results" not in result.get("ansible_facts", {})


def test_src_larger_than_src_max_bytes_is_refused(capsys, tmp_path):
    path = fixture_path("dd", "gnu91-write-fdatasync.txt")
    size = os.path.getsize(path)
    code, result = run_module(capsys, src=path, direction="write", src_max_bytes=size)
    assert code == 0
    assert records(result)[0]["bytes"] == 134217728
    code, result = run_module(capsys, src=path, direction="write", src_max_bytes=size - 1)
    assert code == 1
    assert result["msg"] == (
        "src=%s is %d bytes, more than src_max_bytes=%d: pass a file that holds only the tool's output, "
        "or raise src_max_bytes" % (path, size, size - 1))


def test_src_default_limit_is_64_mib(capsys, tmp_path):
    big = tmp_path / "big.log"
    with open(big, "wb") as handle:  # sparse: nothing of it is written to disk
        handle.truncate(64 * 1024 * 1024 + 1)
    code, result = run_module(capsys, src=str(big))
    assert code == 1
    assert result["msg"].startswith("src=%s is 67108865 bytes, more than src_max_bytes=67108864: " % big)


def test_src_symlink_to_a_regular_file_is_read(capsys, tmp_path):
    link = tmp_path / "dd.log"
    link.symlink_to(fixture_path("dd", "gnu91-write-fdatasync.txt"))
    code, result = run_module(capsys, src=str(link), direction="write")
    assert code == 0
    assert records(result)[0]["bytes"] == 134217728


def test_src_max_bytes_must_be_positive(capsys):
    code, result = run_module(capsys, src=fixture_path("dd", "gnu91-write-fdatasync.txt"), src_max_bytes=0)
    assert code == 1
    assert result["msg"] == "src_max_bytes must be 1 or more, got 0"
