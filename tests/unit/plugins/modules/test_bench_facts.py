"""bench_facts: parse-only end to end through AnsibleModule (no mocks of the parsers): read-only, nothing
run or written; it takes no job option (bench_run runs jobs)."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile

import pytest

from ansible_collections.diskproof.fleet.plugins.modules import bench_facts

from .module_runner import records, run_main

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
RECORD_KEYS = [
    "schema", "test", "tool", "tool_version", "target", "params", "job", "metrics", "bytes", "seconds", "started",
    "finished", "command", "exit_code", "raw_sha256", "device_io", "warnings", "error", "integrity",
]
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def fixture_path(*parts):
    return os.path.abspath(os.path.join(FIXTURES, *parts))


def run_module(capsys, **args):
    return run_main(bench_facts, capsys, args)


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
            "latency_ns": {"read": None, "write": None, "sync": None},
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
        "integrity": None,
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
    # clat_ns of the two jobs in the fixture: mean, min, percentiles 50/95/99/99.9/99.99, max, stddev
    assert first["metrics"]["latency_ns"] == {"write": None, "read": {
        "mean": 78456872.210784, "min": 18348, "p50": 100139008, "p95": 100139008, "p99": 101187584,
        "p99_9": 101187584, "p99_99": 101187584, "max": 101598610, "stdev": 41171602.852405}, "sync": None}
    assert second["metrics"]["latency_ns"] == {"write": None, "read": {
        "mean": 78453840.031863, "min": 18358, "p50": 100139008, "p95": 100139008, "p99": 101187584,
        "p99_9": 101187584, "p99_99": 101187584, "max": 101426295, "stdev": 41167164.646918}, "sync": None}
    assert list(first["metrics"]["latency_ns"]["read"]) == ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]
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
    assert "expected dd, fio, sysbench fileio, bonnie++" in result["msg"]    # ... every tool of the registry


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
        ({"content": "x", "src": "/x"}, "parameters are mutually exclusive: content|src"),
        ({}, "one of the following is required: content, src"),
        ({"src": "/nonexistent/diskproof.log"}, "cannot read src=/nonexistent/diskproof.log"),
    ],
)
def test_argument_errors(capsys, args, message):
    code, result = run_module(capsys, **args)
    assert code == 1
    assert message in result["msg"]


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


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: mknod of a block device node (CAP_MKNOD)")
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


@pytest.mark.parametrize("option", [{"argv": ["dd"]}, {"sweep": []}, {"repeats": 2}, {"setup": [["true"]]},
                                    {"job_file": "[job]\n"}, {"drop_caches": True}, {"write_cache": "off"}])
def test_job_options_are_bench_run_s(capsys, option):
    """bench_facts parses; running a job is bench_run's, whose options it does not take."""
    code, result = run_module(capsys, content="x", **option)
    assert code == 1
    assert "Unsupported parameters for (" in result["msg"] and sorted(option)[0] in result["msg"]


def test_elapsed_s_when_parsing_only(capsys):
    code, result = run_module(capsys, content="1+0 records in\n1+0 records out\n512 bytes copied, 0.5 s, 1.0 kB/s\n",
                              tool="dd", direction="write")
    assert code == 0
    assert isinstance(result["elapsed_s"], float)


# ---------------------------------------------------------------------------------------------- read-only


def tree(root):
    """Every path under root with its type, size, mode and mtime: what a write would change."""
    found = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            found[path] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mode, info.st_mtime_ns)
    return found


def test_parsing_runs_nothing_and_writes_nothing(capsys, tmp_path, monkeypatch):
    src = tmp_path / "dd.log"
    with open(fixture_path("dd", "gnu91-write-fdatasync.txt"), "rb") as handle:
        src.write_bytes(handle.read())
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))   # a temporary file would show in the tree
    started = []

    def no_process(*args, **kwargs):
        started.append(args)
        raise AssertionError("bench_facts started a process while parsing: %r" % (args,))

    monkeypatch.setattr(subprocess, "Popen", no_process)
    before = tree(tmp_path)
    code, result = run_module(capsys, src=str(src), direction="write", test="dd_seq_write",
                              target={"path": str(tmp_path)})
    assert code == 0, result
    code, again = run_module(capsys, content=src.read_text(), direction="write", test="dd_seq_write",
                             target={"path": str(tmp_path)}, _ansible_check_mode=True)
    assert code == 0, again
    assert tree(tmp_path) == before
    assert started == []
    assert (result["changed"], result["created"], again["changed"]) == (False, [], False)
    assert records(result)[0]["bytes"] == records(again)[0]["bytes"] == 134217728
    assert not result.get("deprecations")
