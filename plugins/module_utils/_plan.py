# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn targets and sizing inputs into the list of jobs the benchmark role runs.

Pure Python (no Ansible imports): the role calls it through the filter
``diskproof.fleet.benchmark_plan`` and pytest calls it directly. Every job carries its exact argv
(never a shell string), the record fields the module copies into its result, and the phase it
belongs to: ``write`` jobs create the test file, ``read`` jobs only read a file written before
them (reads of sparse or never-written files never reach the disk).
"""
from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._sizing import SizingError, buffered_test_size

# Name of the file each filesystem target gets; the module refuses to overwrite an existing one.
TEST_FILE_NAME = "diskproof.testfile"

# Sequential tests use 1 MiB blocks: a multiple of every logical and physical block size in use,
# so O_DIRECT never fails with EINVAL, and large enough that per-request overhead is noise.
SEQUENTIAL_BLOCK_SIZE = 1048576
RANDOM_BLOCK_SIZE = 4096
RANDOM_QUEUE_DEPTH = 32

WRITE_TESTS = ("dd_seq_write",)
READ_TESTS = ("dd_seq_read", "fio_rand_read")
KNOWN_TESTS = WRITE_TESTS + READ_TESTS

Job = Dict[str, Any]


class PlanError(ValueError):
    """Inputs that cannot produce a safe, trustworthy plan; the message says what to fix."""


def _target_directory(index: int, target: object) -> str:
    if not isinstance(target, Mapping):
        raise PlanError("diskproof_targets[%d] must be a mapping such as {path: /srv/disk1}, got %r" % (index, target))
    path = target.get("path")
    if not isinstance(path, str) or not path:
        raise PlanError(
            "diskproof_targets[%d] needs 'path', a directory on the filesystem to test; raw device targets "
            "are not supported by this version (got %r)" % (index, dict(target))
        )
    if not posixpath.isabs(path):
        raise PlanError("diskproof_targets[%d].path must be an absolute path, got %r" % (index, path))
    return posixpath.normpath(path)


def _selected_tests(tests: Sequence[str]) -> List[str]:
    unknown = [test for test in tests if test not in KNOWN_TESTS]
    if unknown:
        raise PlanError("unknown test id(s) %s; known tests: %s" % (", ".join(map(repr, unknown)), ", ".join(KNOWN_TESTS)))
    if not tests:
        raise PlanError("no tests selected; known tests: %s" % ", ".join(KNOWN_TESTS))
    selected = list(dict.fromkeys(tests))
    # Reads need a file written by this run, so any read test brings the write that creates it.
    if any(test in READ_TESTS for test in selected) and "dd_seq_write" not in selected:
        selected.insert(0, "dd_seq_write")
    return selected


def _dd_seq_write(test_file: str, size_bytes: int) -> Job:
    count = size_bytes // SEQUENTIAL_BLOCK_SIZE
    return {
        "test": "dd_seq_write",
        "phase": "write",
        "argv": ["dd", "if=/dev/zero", "of=" + test_file, "bs=%d" % SEQUENTIAL_BLOCK_SIZE, "count=%d" % count, "conv=fdatasync"],
        "creates": test_file,
        "drop_caches": False,
        "params": {"block_size": SEQUENTIAL_BLOCK_SIZE, "size_bytes": size_bytes, "direct": False, "sync": "fdatasync",
                   "iodepth": 1, "numjobs": 1, "runtime_s": None},
    }


def _dd_seq_read(test_file: str, size_bytes: int) -> Job:
    count = size_bytes // SEQUENTIAL_BLOCK_SIZE
    return {
        "test": "dd_seq_read",
        "phase": "read",
        "argv": ["dd", "if=" + test_file, "of=/dev/null", "bs=%d" % SEQUENTIAL_BLOCK_SIZE, "count=%d" % count, "iflag=direct"],
        "creates": None,
        "drop_caches": True,
        "params": {"block_size": SEQUENTIAL_BLOCK_SIZE, "size_bytes": size_bytes, "direct": True, "sync": None,
                   "iodepth": 1, "numjobs": 1, "runtime_s": None},
    }


def _fio_rand_read(test_file: str, size_bytes: int, runtime_s: int) -> Job:
    return {
        "test": "fio_rand_read",
        "phase": "read",
        "argv": [
            "fio", "--name=fio_rand_read", "--filename=" + test_file, "--rw=randread",
            "--bs=%d" % RANDOM_BLOCK_SIZE, "--iodepth=%d" % RANDOM_QUEUE_DEPTH, "--direct=1", "--ioengine=libaio",
            "--size=%d" % size_bytes, "--runtime=%d" % runtime_s, "--time_based=1", "--randrepeat=0",
            # Never let a read test create or lay out a file: it must read what dd wrote.
            "--allow_file_create=0", "--output-format=json",
        ],
        "creates": None,
        "drop_caches": True,
        "params": {"block_size": RANDOM_BLOCK_SIZE, "size_bytes": size_bytes, "direct": True, "sync": None,
                   "iodepth": RANDOM_QUEUE_DEPTH, "numjobs": 1, "runtime_s": runtime_s},
    }


# Disk identity copied into every result record, so the report can group peers by model,
# firmware and capacity and match a baseline by serial.
IDENTITY_FIELDS = ("model", "serial", "wwn", "firmware", "size_bytes", "rotational", "transport")


def target_identities(resolved: Sequence[Mapping[str, Any]], disks: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Directory -> identity of the disk under it, from the discover role's facts.

    A directory on one physical disk gets that disk's identity; one spanning several disks (md,
    LVM) gets only the list of disks, since no single model or serial applies (and no ``device``,
    so bench_facts resolves the md/dm device itself for its I/O counters).
    """
    identities: Dict[str, Dict[str, Any]] = {}
    for entry in resolved or []:
        asked = entry.get("target") or {}
        path = asked.get("path") if isinstance(asked, Mapping) else None
        if not isinstance(path, str) or not path:
            continue
        names = [name for name in entry.get("disks") or [] if isinstance(name, str)]
        identity: Dict[str, Any] = {"device": names[0], "disks": names} if len(names) == 1 else {"disks": names}
        disk = disks.get(names[0]) if len(names) == 1 else None
        for field in IDENTITY_FIELDS:
            identity[field] = disk.get(field) if disk else None
        identities[posixpath.normpath(path)] = identity
    return identities


def build_plan(targets: Sequence[object], memory_bytes: int, tests: Sequence[str], fio_runtime_s: int,
               identities: Optional[Mapping[str, Mapping[str, Any]]] = None) -> List[Job]:
    """Every job for every target, writes before the reads that depend on them.

    ``identities`` (from ``target_identities``) adds the disk's identity to each job's target.
    """
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence) or not targets:
        raise PlanError("diskproof_targets must be a non-empty list such as [{path: /srv/disk1}], got %r" % (targets,))
    if isinstance(fio_runtime_s, bool) or not isinstance(fio_runtime_s, int) or fio_runtime_s < 1:
        raise PlanError("fio runtime must be a whole number of seconds >= 1, got %r" % (fio_runtime_s,))
    try:
        size_bytes = buffered_test_size(memory_bytes, SEQUENTIAL_BLOCK_SIZE)
    except SizingError as error:
        raise PlanError(str(error)) from error
    selected = _selected_tests(tests)
    directories = [_target_directory(index, target) for index, target in enumerate(targets)]
    duplicates = sorted({path for path in directories if directories.count(path) > 1})
    if duplicates:
        raise PlanError("diskproof_targets lists the same directory more than once: %s" % ", ".join(duplicates))

    jobs: List[Job] = []
    for phase in ("write", "read"):
        for directory in directories:
            test_file = posixpath.join(directory, TEST_FILE_NAME)
            builders = {
                "dd_seq_write": lambda: _dd_seq_write(test_file, size_bytes),
                "dd_seq_read": lambda: _dd_seq_read(test_file, size_bytes),
                "fio_rand_read": lambda: _fio_rand_read(test_file, size_bytes, fio_runtime_s),
            }
            for test in selected:
                job = builders[test]()
                if job["phase"] == phase:
                    job["tool"] = job["argv"][0]
                    job["target"] = dict((identities or {}).get(directory) or {}, path=directory, test_file=test_file)
                    jobs.append(job)
    return jobs
