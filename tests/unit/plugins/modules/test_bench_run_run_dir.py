"""bench_run with run_dir (the identity bench_plan returns): the run directory re-verified before every
tool run, work directories made through its descriptor, nothing written or removed through a swap.

Real dd on temporary directories. Where the swap must happen between two runs of one job, a wrapper
named ``dd`` (a stand-in, labelled as such) runs the real dd and then swaps the run directory, as
someone able to write the target could. Root only (the run directory must be root's)."""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _paths
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import run_main

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
              pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")]


def run_module(capsys, **args):
    # These tests run commands on this machine's shared disk, where other tests write at the same time: no wait
    # for an idle disk before each run (settle_s, tested in test_bench_run_settle.py).
    args.setdefault("settle_s", 0)
    return run_main(bench_run, capsys, args)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def layout(tmp_path):
    """target/diskproof-t1 made as bench_plan makes it, and a decoy directory holding one precious file."""
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    fd, info = _paths.make_directory(str(target), "diskproof-t1", 0o755, frozenset({0}))
    os.close(fd)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "diskproof.testfile").write_bytes(os.urandom(4096))
    run_dir = target / "diskproof-t1"
    record = _paths.run_dir_record(str(run_dir), str(run_dir), info)
    return run_dir, record, decoy


def dd_write(run_dir, count=4):
    test_file = run_dir / "diskproof.testfile"
    return ["dd", "if=/dev/zero", "of=%s" % test_file, "bs=65536", "count=%d" % count, "conv=fdatasync"], str(test_file)


def test_a_run_in_the_verified_run_directory_measures_and_its_workdir_goes_through_the_descriptor(capsys, layout):
    run_dir, record, _decoy = layout
    argv, test_file = dd_write(run_dir)
    code, result = run_module(capsys, argv=argv, creates=test_file, direction="write", device_io=False,
                              workdir=str(run_dir / "work"), workdir_owner="nobody", run_dir=record)
    assert code == 0, result
    assert result["created"] == [test_file] and os.path.getsize(test_file) == 4 * 65536
    assert not (run_dir / "work").exists()


def test_a_run_directory_swapped_for_a_symlink_before_the_job_is_refused_and_nothing_is_written(capsys, layout):
    run_dir, record, decoy = layout
    before = sha256(decoy / "diskproof.testfile")
    run_dir.rename(run_dir.with_name("moved"))
    run_dir.symlink_to(decoy)
    (decoy / "diskproof.testfile").rename(decoy / "kept")    # no test file there: only the identity check stops dd
    argv, test_file = dd_write(run_dir)
    code, result = run_module(capsys, argv=argv, creates=test_file, direction="write", device_io=False,
                              run_dir=record)
    assert code == 1
    assert result["msg"].startswith("the run directory %s was swapped after the plan created it: it is now a "
                                    "symlink to %s" % (run_dir, decoy)), result["msg"]
    assert sorted(os.listdir(decoy)) == ["kept"] and sha256(decoy / "kept") == before


def test_a_swap_between_two_runs_stops_the_second_and_the_partial_file_is_not_removed_through_it(
        capsys, layout, tmp_path):
    run_dir, record, decoy = layout
    before = sha256(decoy / "diskproof.testfile")
    # Stand-in: a wrapper named dd runs the real dd, then (once) swaps the run directory for a symlink to the decoy.
    wrapper = tmp_path / "bin" / "dd"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\n%s "$@"\nrc=$?\nif [ ! -e "%s" ]; then touch "%s"; mv "%s" "%s" && ln -s "%s" "%s"; '
                       'fi\nexit $rc\n' % (shutil.which("dd"), tmp_path / "swapped", tmp_path / "swapped", run_dir,
                                           tmp_path / "moved", decoy, run_dir))
    wrapper.chmod(0o755)
    argv, test_file = dd_write(run_dir)
    code, result = run_module(capsys, argv=[str(wrapper)] + argv[1:], creates=test_file, direction="write",
                              device_io=False, repeats=2, max_repeats=2, run_dir=record)
    assert code == 1
    assert "the run directory %s was swapped after the plan created it" % run_dir in result["msg"], result["msg"]
    warnings = " ".join(str(warning) for warning in result.get("warnings", []))
    assert "the partial test file %s was not removed" % test_file in warnings, result
    assert sha256(decoy / "diskproof.testfile") == before and sorted(os.listdir(decoy)) == ["diskproof.testfile"]
    assert os.path.getsize(tmp_path / "moved" / "diskproof.testfile") == 4 * 65536   # the first run's, in ours


def test_a_test_file_planted_in_the_run_directory_is_refused(capsys, layout):
    run_dir, record, decoy = layout
    (run_dir / "diskproof.testfile").symlink_to(decoy / "diskproof.testfile")
    argv, test_file = dd_write(run_dir)
    code, result = run_module(capsys, argv=argv, creates=test_file, direction="write", device_io=False,
                              run_dir=record)
    assert code == 1 and "exists already" in result["msg"], result
    assert os.path.getsize(decoy / "diskproof.testfile") == 4096
