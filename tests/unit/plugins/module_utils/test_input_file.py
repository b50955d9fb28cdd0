"""_input_file.read_regular_file: the fstat of the opened file decides, not the path's earlier stat.

The module tests (test_bench_facts.py) cover what a user sees; these cover the races the checks
exist for, by making os.stat / os.fstat report what a swapped or growing file would show.
"""
from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _input_file
from ansible_collections.diskproof.fleet.plugins.module_utils._input_file import InputFileError, read_regular_file


def test_a_fifo_swapped_in_after_the_stat_is_refused_without_blocking(tmp_path, monkeypatch):
    """The path was a regular file when stat()ed, a FIFO (no writer) when opened: O_NONBLOCK keeps the
    open from waiting for a writer, fstat on the descriptor refuses it."""
    regular = tmp_path / "regular.log"
    regular.write_bytes(b"x")
    fifo = tmp_path / "swapped.fifo"
    os.mkfifo(fifo)
    real_stat = os.stat
    monkeypatch.setattr(_input_file.os, "stat",
                        lambda path: real_stat(regular) if path == str(fifo) else real_stat(path))
    with pytest.raises(InputFileError, match="is a FIFO \\(named pipe\\), not a regular file"):
        read_regular_file(str(fifo))


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    """fstat said 10 bytes; the file holds 100: at most limit + 1 bytes are read, and refused."""
    path = tmp_path / "growing.log"
    path.write_bytes(b"y" * 100)
    real_fstat = os.fstat

    def small_fstat(descriptor):
        found = real_fstat(descriptor)
        return os.stat_result((found.st_mode, found.st_ino, found.st_dev, found.st_nlink, found.st_uid,
                               found.st_gid, 10, found.st_atime, found.st_mtime, found.st_ctime))

    monkeypatch.setattr(_input_file.os, "fstat", small_fstat)
    reads = []
    real_read = os.read
    monkeypatch.setattr(_input_file.os, "read",
                        lambda descriptor, size: reads.append(size) or real_read(descriptor, size))
    with pytest.raises(InputFileError, match="grew while it was read, more than src_max_bytes=50"):
        read_regular_file(str(path), max_bytes=50)
    assert sum(reads) <= 51


def test_a_regular_file_at_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "exact.log"
    path.write_bytes(b"z" * 50)
    assert read_regular_file(str(path), max_bytes=50) == b"z" * 50


@pytest.mark.parametrize(("mode", "kind"), [
    (stat.S_IFDIR, "a directory"), (stat.S_IFIFO, "a FIFO (named pipe)"), (stat.S_IFCHR, "a character device"),
    (stat.S_IFBLK, "a block device"), (stat.S_IFSOCK, "a socket"),
])
def test_kind_of(mode, kind):
    assert _input_file.kind_of(mode | 0o600) == kind


def test_a_missing_file_says_it_cannot_be_read(tmp_path):
    with pytest.raises(InputFileError, match="cannot read src=.*missing.log: \\[Errno 2\\] No such file or directory"):
        read_regular_file(str(tmp_path / "missing.log"))
