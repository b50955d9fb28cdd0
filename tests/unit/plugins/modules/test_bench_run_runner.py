"""bench_run as the benchmark role's job runner: repeats, setup/cleanup, chdir, workdir, job_file,
cache fence, write cache, sweep, min_device_fraction, keep_raw, elapsed_s.

Real tools (dd, fio, sysbench, bonnie++) on temporary files wherever the machine allows it. Where
a figure must be known in advance (median selection, extra runs) a stand-in named ``dd`` prints
real captured dd summaries from tests/fixtures/dd; the write-cache tests use a stand-in ``hdparm``
that prints the public hdparm outputs of tests/unit/plugins/module_utils/fixtures/run. The
cache-fence test needs root and cgroup v1 (this project's machines) and skips elsewhere.
"""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import statistics
import subprocess
import time
import tempfile

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev, _fence, _proc, _run, _write_cache
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import Settings, TargetFacts, build_plan
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import records, run_main

HERE = os.path.dirname(os.path.abspath(__file__))
FIO_TEMPLATE = os.path.join(HERE, "..", "..", "..", "..", "roles", "benchmark", "templates", "fio_job.ini.j2")
DD_FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "dd")
RUN_FIXTURES = os.path.join(HERE, "..", "module_utils", "fixtures", "run")
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root")
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="dd not installed")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
needs_sysbench = pytest.mark.skipif(shutil.which("sysbench") is None, reason="sysbench not installed")
needs_bonnie = pytest.mark.skipif(shutil.which("bonnie++") is None, reason="bonnie++ not installed")


def run_module(capsys, **args):
    # These tests run commands on this machine's shared disk, where other tests write at the same time: no wait
    # for an idle disk before each run (settle_s, tested in test_bench_run_settle.py).
    args.setdefault("settle_s", 0)
    return run_main(bench_run, capsys, args)


def task_warnings(result):
    found = []
    for warning in result.get("warnings", []):
        found.append(warning["event"]["msg"] if isinstance(warning, dict) else warning)
    return found


def dd_summaries():
    """Four real dd summaries (3 lines each): 45.0, 52.7, 52.8 and 49.0 MB/s."""
    with open(os.path.join(DD_FIXTURES, "gnu91-three-runs.txt"), encoding="utf-8") as handle:
        lines = handle.read().splitlines(True)
    pieces = ["".join(lines[start:start + 3]) for start in (0, 3, 6)]
    with open(os.path.join(DD_FIXTURES, "gnu91-write-fdatasync.txt"), encoding="utf-8") as handle:
        pieces.append(handle.read())
    return pieces


RATES = [33554432 / 0.745341, 33554432 / 0.637122, 33554432 / 0.636057, 134217728 / 2.73932]


def script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def fake_dd(tmp_path, fail_on=None):
    """A stand-in dd printing the Nth real summary on its Nth call (exit 1 on call fail_on)."""
    folder = tmp_path / "fakebin"
    folder.mkdir(exist_ok=True)
    for number, piece in enumerate(dd_summaries(), 1):
        (folder / ("out.%d" % number)).write_text(piece)
    counter = folder / "count"
    body = ('[ "$1" = --version ] && exit 1  # no version: the module then reports none\n'
            'n=$(cat "%s" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "%s"\n' % (counter, counter)
            + 'echo "$PWD" >> "%s/cwd"\n' % folder)
    if fail_on is not None:
        body += 'if [ $n -eq %d ]; then echo "dd: error writing \'x\': No space left on device" >&2; exit 1; fi\n' % fail_on
    body += 'cat "%s/out.$n" >&2\n' % folder
    return script(folder / "dd", body), counter


def probe(path, body):
    """A stand-in dd: runs body, then prints a real dd summary (no --version: no version)."""
    return script(path, '[ "$1" = --version ] && exit 1\n%scat "%s" >&2\n'
                  % (body, os.path.join(DD_FIXTURES, "gnu91-write-fdatasync.txt")))


def calls(counter):
    return int(counter.read_text()) if counter.exists() else 0


def logger(tmp_path, log, name, text, rc=0, stderr=None):
    """A command appending text to log (and its cwd), printing stderr, exiting rc."""
    body = 'echo "%s $PWD" >> "%s"\n' % (text, log)
    if stderr:
        body += 'echo "%s" >&2\n' % stderr
    body += "exit %d\n" % rc
    return script(tmp_path / name, body)


# ---------------------------------------------------------------------------------------------- repeats


def test_repeats_return_the_real_median_run(capsys, tmp_path, monkeypatch):
    dd, counter = fake_dd(tmp_path)
    dropped = []
    monkeypatch.setattr(_blockdev, "drop_caches", lambda: dropped.append(True))
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=3,
                              max_cv=0.2, drop_caches=True, test="dd_seq_write", params={"block_size": 1048576})
    assert code == 0, result
    assert calls(counter) == 3
    assert len(dropped) == 3  # before every run
    (record,) = records(result)
    assert record["samples"] == pytest.approx(RATES[:3], rel=1e-12)
    assert record["runs"] == 3
    assert record["cv"] == pytest.approx(statistics.stdev(RATES[:3]) / statistics.mean(RATES[:3]))
    # run 2 (52.7 MB/s) is the median of 45.0, 52.7, 52.8: its own figures, untouched
    assert record["metrics"]["write_bytes_per_s"] == pytest.approx(RATES[1], rel=1e-12)
    assert (record["bytes"], record["seconds"]) == (33554432, 0.637122)
    assert record["sample_device_io"] == [None, None, None]
    assert isinstance(result["elapsed_s"], float) and result["elapsed_s"] >= 0


def test_re_runs_until_the_last_runs_agree_and_set_the_earlier_ones_aside(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=3,
                              max_repeats=4, max_cv=0.05)
    assert code == 0, result
    assert calls(counter) == 4  # CV of the first three is 8.9 % > 5 %; runs 2-4 (52.7, 52.8, 49.0) agree: 4.2 %
    (record,) = records(result)
    assert (record["runs"], record["runs_total"], record["length_factor"]) == (3, 4, 1)
    assert record["samples"] == pytest.approx(RATES[1:4], rel=1e-12)
    assert record["earlier_samples"] == [pytest.approx(RATES[0], rel=1e-12)]
    # the median of the kept runs, 52.7 MB/s (run 2)
    assert record["metrics"]["write_bytes_per_s"] == pytest.approx(RATES[1], rel=1e-12)
    assert record["cv"] == pytest.approx(statistics.stdev(RATES[1:4]) / statistics.mean(RATES[1:4]))
    assert record["cv"] <= 0.05
    assert record["warnings"] == ["1 earlier run(s) set aside (%.6g): the figure is from the last runs, which agree "
                                  "within 5.0%% (4 runs in all)" % RATES[0]]


def test_runs_that_never_agree_keep_every_sample_even_count_takes_the_lower_middle(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=3,
                              max_repeats=4, max_cv=0.01)
    assert code == 0, result
    # no three runs in a row agree within 1 % (45.0, 52.7, 52.8 and 49.0 MB/s); dd's length is a size: no longer run
    assert calls(counter) == 4
    (record,) = records(result)
    assert (record["runs"], record["runs_total"], record["earlier_samples"]) == (4, 4, [])
    # sorted: 45.0 (run 1), 49.0 (run 4), 52.7 (run 2), 52.8 (run 3): lower middle is run 4
    assert record["metrics"]["write_bytes_per_s"] == pytest.approx(RATES[3], rel=1e-12)
    assert record["bytes"] == 134217728
    assert record["cv"] > 0.01


SYSBENCH_FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "sysbench")


def test_runs_that_never_agree_are_measured_again_twice_as_long_when_their_length_is_a_time(capsys, tmp_path):
    # A stand-in sysbench printing real sysbench 1.0.20 outputs: 299.80 / 186.33 / 299.80 reads/s (never two in a row
    # within 5 %), then, at twice the --time, 300.10 and 299.80 reads/s. It logs each --time it was given.
    outputs = ["sysbench1020-rndrd-async.txt", "public-sysbench10pre-rndrd-16threads.txt", "sysbench1020-rndrd-async.txt",
               "sysbench1020-rndrd-direct-16k.txt", "sysbench1020-rndrd-async.txt"]
    folder = tmp_path / "fakebin"
    folder.mkdir()
    for number, name in enumerate(outputs, 1):
        shutil.copy(os.path.join(SYSBENCH_FIXTURES, name), folder / ("out.%d" % number))
    counter, log = folder / "count", folder / "times"
    sysbench = script(folder / "sysbench", '[ "$1" = --version ] && { echo "sysbench 1.0.20"; exit 0; }\n'
                      'n=$(cat "%s" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "%s"\n'
                      'for arg; do case "$arg" in --time=*) echo "$arg" >> "%s";; esac; done\n'
                      'cat "%s/out.$n"\n' % (counter, counter, log, folder))
    code, result = run_module(capsys, argv=[sysbench, "fileio", "--file-test-mode=rndrd", "--time=10", "run"],
                              device_io=False, repeats=2, max_repeats=3, max_cv=0.05, test="sysbench_rndrd",
                              params={"block_size": 16384})
    assert code == 0, result
    assert log.read_text().split() == ["--time=10"] * 3 + ["--time=20"] * 2
    (record,) = records(result)
    assert (record["runs"], record["runs_total"], record["length_factor"]) == (2, 5, 2)
    assert record["samples"] == [pytest.approx(300.10), pytest.approx(299.80)]
    assert record["earlier_samples"] == [pytest.approx(299.80), pytest.approx(186.33), pytest.approx(299.80)]
    assert record["command"][-2:] == ["--time=20", "run"]
    assert record["cv"] < 0.05
    assert "measured again with runs 2 times as long" in record["warnings"][-1]


@pytest.mark.parametrize(("argv", "job_file", "expected"), [
    # fio: the one runtime of a time-based job file
    (["fio", "--output-format=json"], "[global]\ntime_based=1\nruntime=10\nramp_time=2\n[job]\nrw=randread\n",
     (["fio", "--output-format=json"], "[global]\ntime_based=1\nruntime=20\nramp_time=2\n[job]\nrw=randread\n")),
    (["fio"], "[global]\ntime_based=1\nruntime = 8s\n[job]\n", (["fio"], "[global]\ntime_based=1\nruntime = 16s\n[job]\n")),
    # not time-based (runtime is a limit), a steady-state job (runtime is its time limit), two runtimes: unchanged
    (["fio"], "[global]\nruntime=10\n[job]\n", None),
    (["fio"], "[global]\ntime_based=1\nruntime=1800\nsteadystate=iops:20%\n[job]\n", None),
    (["fio"], "[global]\ntime_based=1\nruntime=10\n[a]\nruntime=5\n", None),
    # sysbench --time
    (["/usr/bin/sysbench", "fileio", "--time=30", "run"], None, (["/usr/bin/sysbench", "fileio", "--time=60", "run"], None)),
    # dd, bonnie++, ioping: sized by the cache rules, not by time
    (["dd", "if=/dev/zero", "of=/x", "bs=1M", "count=256"], None, None),
    (["ioping", "-c", "100", "/x"], None, None),
])
def test_lengthened(argv, job_file, expected):
    assert _run.lengthened(argv, job_file, 2) == expected


def test_lengthened_real_job_file(tmp_path):
    # The job file the benchmark role renders for fio_rand_read: only runtime changes.
    target = TargetFacts(path=str(tmp_path), free_bytes=1 << 30, filesystem_size_bytes=1 << 31, device="sdz")
    settings = Settings(run_id="20261128T000000Z-longer", memory_bytes=1 << 20, tests=("fio_rand_read",),
                        fio_runtime_s=10, reserve_min_bytes=0)
    (job,) = [job for job in build_plan([target], settings).jobs if job["test"] == "fio_rand_read"]
    with open(FIO_TEMPLATE, encoding="utf-8") as handle:
        template = handle.read()
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    text = environment.from_string(template).render(item=job)
    argv, longer = _run.lengthened(job["argv"], text, 2)
    assert argv == job["argv"]
    changed = [(old, new) for old, new in zip(text.splitlines(), longer.splitlines()) if old != new]
    assert changed == [("runtime=10", "runtime=20")]


def test_no_more_runs_once_the_cv_is_low(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path)
    # runs 2 and 3 (52.7, 52.8) agree: start there by using up the first summary
    counter.write_text("1\n")
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=2,
                              max_repeats=5, max_cv=0.05)
    assert code == 0, result
    assert calls(counter) == 3
    assert records(result)[0]["runs"] == 2


def test_a_failing_run_stops_the_repeats_and_fails_as_a_single_run_does(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path, fail_on=2)
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=3)
    assert code == 1
    assert calls(counter) == 2
    assert result["msg"] == ("dd failed (exit code 1): dd: error writing 'x': No space left on device; command: %s of=/dev/null"
                             % dd)
    (record,) = records(result)
    assert record["error"] == "dd: error writing 'x': No space left on device"
    assert record["exit_code"] == 1
    assert record["samples"] == [pytest.approx(RATES[0], rel=1e-12), None]
    assert record["runs"] == 2 and record["cv"] is None


def test_repeats_without_the_option_change_nothing_but_add_the_fields(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False)
    assert code == 0
    assert calls(counter) == 1
    (record,) = records(result)
    assert (record["runs"], record["cv"], record["sample_device_io"]) == (1, None, [None])
    for key in ("setup_commands", "cleanup_commands", "job_file", "cache_fence", "write_cache", "commands", "raw_files"):
        assert key not in record


@needs_dd
def test_repeats_with_creates_check_only_before_the_first_run(capsys, tmp_path):
    out = tmp_path / "diskproof.testfile"
    argv = ["dd", "if=/dev/zero", "of=%s" % out, "bs=65536", "count=4", "conv=fdatasync"]
    code, result = run_module(capsys, argv=argv, creates=str(out), repeats=3, target={"path": str(tmp_path)})
    assert code == 0, result
    assert result["created"] == [str(out)]
    (record,) = records(result)
    assert record["runs"] == 3 and len(record["samples"]) == 3
    assert record["metrics"]["write_bytes_per_s"] == sorted(record["samples"])[1]
    assert len(record["sample_device_io"]) == 3


# ---------------------------------------------------------------------------------------------- min_device_fraction


def counters(monkeypatch, deltas):
    """read_stat stand-in: before/after pairs whose write difference is each of deltas (bytes)."""
    values = []
    total = 0
    for delta in deltas:
        values.append({"read_sectors": 0, "write_sectors": total // 512})
        total += delta
        values.append({"read_sectors": 0, "write_sectors": total // 512})
    monkeypatch.setattr(_blockdev, "read_stat", lambda device, sys_root=None: values.pop(0))


def test_min_device_fraction_warns_for_runs_the_counters_do_not_back(capsys, tmp_path, monkeypatch):
    dd, _counter = fake_dd(tmp_path)
    counters(monkeypatch, [33554432, 0, 33554432])
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", repeats=3, max_cv=0.5,
                              target={"path": str(tmp_path), "device": "sdz"})
    assert code == 0, result
    reason = "cache bypass not proven: the device wrote 0 of the 33554432 bytes the tool moved (0.0%, < 95%)"
    assert "run 2: " + reason in task_warnings(result)
    (record,) = records(result)
    # run 2 is the median (52.7 MB/s): its own reason, as the report will see it
    assert record["device_io"] == {"read_bytes": 0, "write_bytes": 0}
    assert record["warnings"] == [reason]
    assert [io["write_bytes"] for io in record["sample_device_io"]] == [33554432, 0, 33554432]


def test_min_device_fraction_lower_and_other_runs_noted(capsys, tmp_path, monkeypatch):
    dd, counter = fake_dd(tmp_path)
    counters(monkeypatch, [29999616, 33554432, 33554432])  # run 1: 89.4 %
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", repeats=3, max_cv=0.5,
                              target={"path": str(tmp_path), "device": "sdz"}, min_device_fraction=0.9)
    assert code == 0
    (record,) = records(result)
    assert record["warnings"] == ["run 1: cache bypass not proven: the device wrote 29999616 of the 33554432 bytes the tool "
                                  "moved (89.4%, < 90%)"]
    counter.write_text("0\n")
    counters(monkeypatch, [29999616])
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", min_device_fraction=0.85,
                              target={"path": str(tmp_path), "device": "sdz"})
    assert records(result)[0]["warnings"] == []
    assert not any("< 85%" in warning for warning in task_warnings(result))


# ---------------------------------------------------------------------------------------------- setup, cleanup, chdir


def test_setup_runs_first_cleanup_last_all_in_chdir(capsys, tmp_path):
    dd, _counter = fake_dd(tmp_path)
    log = tmp_path / "log"
    work = tmp_path / "cwd"
    work.mkdir()
    setup = [[logger(tmp_path, log, "s1", "setup1")], [logger(tmp_path, log, "s2", "setup2"), "ignored-arg"]]
    cleanup = [[logger(tmp_path, log, "c1", "cleanup1")]]
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=2,
                              max_cv=0.5, setup=setup, cleanup=cleanup, chdir=str(work))
    assert code == 0, result
    assert log.read_text().splitlines() == ["setup1 %s" % work, "setup2 %s" % work, "cleanup1 %s" % work]
    assert (tmp_path / "fakebin" / "cwd").read_text().splitlines() == [str(work), str(work)]
    (record,) = records(result)
    assert record["setup_commands"] == setup
    assert record["cleanup_commands"] == cleanup


def test_failing_setup_fails_with_command_exit_code_and_last_line_and_cleanup_still_runs(capsys, tmp_path):
    dd, counter = fake_dd(tmp_path)
    log = tmp_path / "log"
    bad = logger(tmp_path, log, "bad", "setup", rc=3, stderr="FATAL: cannot create test files")
    cleanup = [[logger(tmp_path, log, "c1", "cleanup1")]]
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False,
                              setup=[[bad, "prepare"]], cleanup=cleanup)
    assert code == 1
    assert result["msg"] == "setup command 1 failed (exit code 3): FATAL: cannot create test files; command: %s prepare" % bad
    assert calls(counter) == 0
    assert records(result) == []
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["setup", "cleanup1"]
    assert isinstance(result["elapsed_s"], float)


def test_failing_cleanup_is_a_warning(capsys, tmp_path):
    dd, _counter = fake_dd(tmp_path)
    log = tmp_path / "log"
    bad = logger(tmp_path, log, "bad", "cleanup", rc=2, stderr="rm: cannot remove 'x'")
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, cleanup=[[bad]])
    assert code == 0
    message = "cleanup command 1 failed (exit code 2): rm: cannot remove 'x'; command: %s" % bad
    assert message in task_warnings(result)
    assert records(result)[0]["warnings"] == [message]


def test_cleanup_runs_after_an_unparseable_run(capsys, tmp_path):
    log = tmp_path / "log"
    noise = script(tmp_path / "dd", "echo hello\n")
    cleanup = [[logger(tmp_path, log, "c1", "cleanup1")]]
    workdir = tmp_path / "work"
    code, result = run_module(capsys, argv=[noise], tool="dd", direction="write", device_io=False, cleanup=cleanup,
                              workdir=str(workdir))
    assert code == 1
    assert "dd output" in result["msg"]
    assert log.read_text().startswith("cleanup1")
    assert not workdir.exists()


def test_signal_while_running_still_cleans_up(capsys, tmp_path):
    log = tmp_path / "log"
    killer = script(tmp_path / "dd", "kill -TERM $PPID\nsleep 1\n")
    workdir = tmp_path / "work"
    before = signal.getsignal(signal.SIGTERM)
    code, result = run_module(capsys, argv=[killer], direction="write", device_io=False, workdir=str(workdir),
                              cleanup=[[logger(tmp_path, log, "c1", "cleanup1")]])
    assert code == 1
    assert result["msg"] == "interrupted by signal %d" % signal.SIGTERM
    assert log.read_text().startswith("cleanup1")
    assert not workdir.exists()
    assert signal.getsignal(signal.SIGTERM) == before


def test_chdir_must_exist(capsys, tmp_path):
    code, result = run_module(capsys, argv=["true"], chdir=str(tmp_path / "nope"))
    assert code == 1
    assert result["msg"] == "chdir=%s is not an existing directory: create it first (or make it the workdir)" % (tmp_path / "nope")


# ---------------------------------------------------------------------------------------------- workdir


def test_workdir_created_used_and_removed(capsys, tmp_path):
    workdir = tmp_path / "work"
    stand_in = probe(tmp_path / "dd", 'ls -ld . > "%s/seen"; touch made; mkdir -p sub/deeper; ln -s / sub/root\n' % tmp_path)
    code, result = run_module(capsys, argv=[stand_in], direction="write", device_io=False, workdir=str(workdir),
                              chdir=str(workdir))
    assert code == 0, result
    assert (tmp_path / "seen").read_text().startswith("drwx------")
    assert not workdir.exists()
    assert os.path.isdir("/usr")  # the symlink to / was removed, not followed


def test_workdir_refuses_an_existing_directory(capsys, tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "precious").write_text("x")
    code, result = run_module(capsys, argv=["true"], workdir=str(tmp_path / "work"))
    assert code == 1
    assert "not created by this run" in result["msg"]
    assert (tmp_path / "work" / "precious").exists()


def test_workdir_needs_its_parent(capsys, tmp_path):
    code, result = run_module(capsys, argv=["true"], workdir=str(tmp_path / "a" / "b"))
    assert code == 1
    assert result["msg"] == ("workdir=%s: its parent %s is not an existing directory; create the parent first"
                             % (tmp_path / "a" / "b", tmp_path / "a"))


def test_workdir_owner_must_exist(capsys, tmp_path):
    code, result = run_module(capsys, argv=["true"], workdir=str(tmp_path / "w"), workdir_owner="no-such-user-diskproof")
    assert code == 1
    assert result["msg"] == "workdir_owner=no-such-user-diskproof is not a user on this host"


def scratch_parent_on_disk():
    """Where a test needing a real disk (not tmpfs) makes its scratch directory: the temp dir when it is on a
    block device, else /var/tmp (`make test` writes nothing outside the checkout and /tmp where it can)."""
    temp = tempfile.gettempdir()
    return temp if _blockdev.whole_disk_name(temp) is not None else "/var/tmp"


@needs_root
@needs_bonnie
def test_bonnie_as_nobody_in_a_workdir_given_to_nobody(capsys):
    base = tempfile.mkdtemp(prefix="diskproof-bonnie-", dir=scratch_parent_on_disk())
    os.chmod(base, 0o755)
    workdir = os.path.join(base, "bonnie")
    try:
        argv = ["bonnie++", "-q", "-d", workdir, "-u", "nobody", "-s", "32", "-r", "16", "-n", "0", "-f", "-b",
                "-m", "unit"]
        code, result = run_module(capsys, argv=argv, workdir=workdir, workdir_owner="nobody", test="bonnie",
                                  target={"path": base})
        assert code == 0, result
        (record,) = records(result)
        assert record["tool"] == "bonnie" and record["error"] is None
        assert record["job"]["name"] == "unit"
        assert not os.path.exists(workdir)
    finally:
        shutil.rmtree(base)


@needs_root
def test_workdir_owner_is_set(capsys, tmp_path):
    workdir = tmp_path / "w"
    stand_in = probe(tmp_path / "dd", 'stat -c %%U . > "%s/owner"\n' % tmp_path)
    code, result = run_module(capsys, argv=[stand_in], direction="write", device_io=False, workdir=str(workdir),
                              workdir_owner="nobody", chdir=str(workdir))
    assert code == 0, result
    assert (tmp_path / "owner").read_text().strip() == pwd.getpwnam("nobody").pw_name


@needs_sysbench
def test_sysbench_prepare_run_cleanup_in_a_workdir(capsys, tmp_path):
    workdir = tmp_path / "sysbench"
    files = ["--file-num=2", "--file-total-size=8M"]
    code, result = run_module(
        capsys, argv=["sysbench", "fileio"] + files + ["--file-test-mode=seqrd", "--time=1", "run"],
        setup=[["sysbench", "fileio"] + files + ["prepare"]], cleanup=[["sysbench", "fileio"] + files + ["cleanup"]],
        workdir=str(workdir), chdir=str(workdir), test="sysbench_seq_read", device_io=False)
    assert code == 0, result
    (record,) = records(result)
    assert record["tool"] == "sysbench" and record["error"] is None
    assert record["metrics"]["read_iops"] > 0
    assert not workdir.exists()


# ---------------------------------------------------------------------------------------------- job_file


FIO_JOB = """[global]
ioengine=psync
size=1m
[fio_seq_write]
rw=write
bs=64k
filename={path}
"""


@needs_fio
def test_job_file_is_checked_run_and_removed(capsys, tmp_path, monkeypatch):
    # Without a state directory the job file goes to the temporary directory: a private one here, so that what
    # other tests (another xdist worker, another test run) create in /tmp meanwhile is never taken for a leftover.
    temp = tmp_path / "temp"
    target = tmp_path / "target"
    temp.mkdir()
    target.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    job = FIO_JOB.format(path=target / "fio.dat")
    code, result = run_module(capsys, argv=["fio", "--output-format=json"], job_file=job, test="fio_seq_write",
                              device_io=False, repeats=2, max_cv=1.0)
    assert code == 0, result
    (record,) = records(result)
    assert record["job_file"] == job
    assert record["command"][:2] == ["fio", "--output-format=json"]
    path = record["command"][2]
    assert re.match(r"^%s/diskproof-[^/]+\.fio$" % re.escape(str(temp)), path)   # the temp dir, not the target's
    assert not os.path.exists(path)
    assert record["job"]["name"] == "fio_seq_write"
    assert record["bytes"] == 1048576
    assert record["runs"] == 2
    assert os.listdir(temp) == []                 # removed, and nothing else left there


@needs_fio
def test_job_file_fio_rejects_fails_with_fios_message(capsys, tmp_path):
    log = tmp_path / "log"
    code, result = run_module(capsys, argv=["fio", "--output-format=json"], job_file="[job]\nrw=read\nbogus=3\n",
                              cleanup=[[logger(tmp_path, log, "c1", "cleanup1")]])
    assert code == 1
    assert result["msg"].startswith("job_file rejected by fio --parse-only (exit code 1): ")
    assert "Bad option <bogus=3>" in result["msg"]
    assert result["msg"].endswith("; fix the job file")
    assert log.read_text().startswith("cleanup1")  # cleanup runs after any failure inside the job


def test_job_file_needs_argv(capsys):
    code, result = run_module(capsys, sweep=[{"offset_bytes": 0, "argv": ["dd", "if=/dev/zero", "of=/dev/null"]}],
                              job_file="[job]\n")
    assert code == 1
    assert "missing parameter(s) required by 'job_file': argv" in result["msg"]


# ---------------------------------------------------------------------------------------------- cache fence


def cgroup_v1_root():
    return IS_ROOT and _fence.cgroup_version() == 1


@pytest.mark.skipif(not cgroup_v1_root(), reason="needs root and cgroup v1")
@needs_dd
def test_cache_fence_bounds_the_page_cache_for_real(capsys):
    base = tempfile.mkdtemp(prefix="diskproof-fence-", dir=scratch_parent_on_disk())
    try:
        if _blockdev.whole_disk_name(base) is None:
            pytest.skip("/var/tmp is not on a block device")
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            own_before = handle.read()
        out = os.path.join(base, "F")
        argv = ["dd", "if=/dev/zero", "of=%s" % out, "bs=1M", "count=512"]  # buffered, no sync
        fence = 64 * 1024 * 1024
        code, result = run_module(capsys, argv=argv, target={"path": base}, cache_fence_bytes=fence, drop_caches=True)
        assert code == 0, result
        (fenced,) = records(result)
        info = fenced["cache_fence"]
        assert info["bytes"] == fence and info["version"] == 1
        assert re.search(r"/diskproof-%d-[0-9a-f]{8}$" % os.getpid(), info["cgroup"])
        assert 0 < info["peak_bytes"] <= fence
        assert not os.path.exists(info["cgroup"])
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            assert handle.read() == own_before   # back in its own cgroup
        # the cache could not hold the file: most of it reached the disk while dd ran
        assert fenced["device_io"]["write_bytes"] >= 512 * 1024 * 1024 - 2 * fence
        # unfenced the page cache took it all: the disk saw (almost) nothing of it during the run. Up to three tries:
        # a test in another xdist worker that drops caches calls sync(), which flushes this run's dirty pages too.
        unfenced = []
        while len(unfenced) < 3 and (not unfenced or unfenced[-1] >= fenced["device_io"]["write_bytes"] / 2):
            os.unlink(out)
            code, result = run_module(capsys, argv=argv, target={"path": base}, drop_caches=True)
            (free,) = records(result)
            assert "cache_fence" not in free
            unfenced.append(free["device_io"]["write_bytes"])
        assert unfenced[-1] < fenced["device_io"]["write_bytes"] / 2, (unfenced, fenced["device_io"])
    finally:
        shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isfile("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
                    reason="needs root and the cgroup v1 memory controller")
def test_a_fenced_job_removes_the_fence_a_killed_module_left(capsys):
    """A module SIGKILLed inside its fence leaves an empty cgroup named after its pid (the kernel keeps it):
    a real one is made here for a pid that has ended, dated back past STALE_AFTER_S, and the next fenced job
    removes it and says so."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    home = _fence.plan_fence(os.getpid(), "probe").home
    left = os.path.join(home, _fence.fence_name(dead.pid, "0badf00d"))
    os.mkdir(left)
    # made long enough ago to be stale (a younger one may be another PID namespace's, about to be entered)
    made = time.time() - _fence.STALE_AFTER_S - 60
    os.utime(left, (made, made))
    try:
        argv = ["dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "count=1"]
        code, result = run_module(capsys, argv=argv, direction="read", cache_fence_bytes=1 << 26)
        assert code == 0, result.get("msg")
        assert not os.path.exists(left)
        assert any("removed 1 cache fence cgroup(s) left by a module that was killed: %s" % left in warning
                   for warning in records(result)[0]["warnings"]), records(result)[0]["warnings"]
    finally:
        if os.path.isdir(left):
            os.rmdir(left)


def test_cache_fence_needs_a_memory_cgroup(capsys, monkeypatch):
    def none(pid, token, cgroup_root=None, proc_cgroup=None):
        raise _fence.FenceError("no memory cgroup controller: neither ...")

    monkeypatch.setattr(_fence, "plan_fence", none)
    code, result = run_module(capsys, argv=["true"], cache_fence_bytes=1 << 26)
    assert code == 1
    assert result["msg"] == "cache_fence_bytes needs a memory cgroup: no memory cgroup controller: neither ..."


# ---------------------------------------------------------------------------------------------- write cache


def fake_hdparm(tmp_path, refuse=False, fail_restore=False):
    """A stand-in hdparm keeping its setting in a file and printing the public hdparm outputs."""
    folder = tmp_path / "hdbin"
    folder.mkdir()
    state = folder / "state"
    state.write_text("1\n")
    log = folder / "log"
    on = os.path.join(RUN_FIXTURES, "hdparm-W-on-ceph.txt")
    off = os.path.join(RUN_FIXTURES, "hdparm-W-off-ceph.txt")
    set_off = os.path.join(RUN_FIXTURES, "hdparm-W0-ceph.txt")
    body = 'echo "$*" >> "%s"\n' % log
    body += 'case "$1" in\n'
    body += '  -W) if [ "$(cat "%s")" = 1 ]; then cat "%s"; else cat "%s"; fi ;;\n' % (state, on, off)
    body += '  -W0) %s ;;\n' % ('cat "%s"' % on if refuse else 'echo 0 > "%s"; cat "%s"' % (state, set_off))
    body += '  -W1) %s ;;\n' % ('echo "HDIO_DRIVE_CMD(setcache) failed: Input/output error" >&2; exit 5' if fail_restore
                                else 'echo 1 > "%s"; cat "%s"' % (state, on))
    body += "esac\n"
    script(folder / "hdparm", body)
    return folder, state, log


@pytest.fixture
def sata_disk(monkeypatch):
    monkeypatch.setattr(_write_cache, "write_cache_transport", lambda device, sys_root=None: ("ata", "SCSI disk with vendor ATA"))


def test_write_cache_off_during_the_run_and_restored(capsys, tmp_path, monkeypatch, sata_disk):
    folder, state, log = fake_hdparm(tmp_path)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    record = tmp_path / "state" / "write-cache.json"
    stand_in = probe(tmp_path / "dd", 'echo "measured cache=$(cat "%s")" >> "%s"\ncat "%s" >> "%s"\n'
                     % (state, log, record, tmp_path / "record-during"))
    code, result = run_module(capsys, argv=[stand_in], direction="write", device_io=False, write_cache="off", state_dir=str(tmp_path / "state"),
                              target={"path": str(tmp_path), "device": "sdz"})
    assert code == 0, result
    assert log.read_text().splitlines() == ["-W /dev/sdz", "-W0 /dev/sdz", "-W /dev/sdz", "measured cache=0",
                                            "-W1 /dev/sdz", "-W /dev/sdz"]
    assert state.read_text() == "1\n"
    assert records(result)[0]["write_cache"] == {"before": True, "during": False, "restored": True, "method": "hdparm"}
    # the original was on disk while the cache was off, and is gone once the restore read back right
    assert json.loads((tmp_path / "record-during").read_text())["devices"]["sdz"]["enabled"] is True
    assert json.loads(record.read_text())["devices"] == {}
    assert oct((tmp_path / "state").stat().st_mode & 0o7777) == "0o700"


def test_write_cache_already_off_is_left_off(capsys, tmp_path, monkeypatch, sata_disk):
    folder, state, log = fake_hdparm(tmp_path)
    state.write_text("0\n")
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    dd, _counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd], direction="write", device_io=False, write_cache="off", state_dir=str(tmp_path / "state"),
                              target={"device": "sdz"})
    assert code == 0, result
    # read before, read back (still off), verified at the end: never switched on
    assert log.read_text().splitlines() == ["-W /dev/sdz", "-W /dev/sdz", "-W /dev/sdz"]
    assert state.read_text() == "0\n"
    assert records(result)[0]["write_cache"] == {"before": False, "during": False, "restored": True, "method": "hdparm"}


def test_write_cache_restored_after_a_failing_setup(capsys, tmp_path, monkeypatch, sata_disk):
    folder, state, log = fake_hdparm(tmp_path)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    bad = logger(tmp_path, tmp_path / "slog", "bad", "setup", rc=1, stderr="boom")
    code, result = run_module(capsys, argv=["true"], setup=[[bad]], write_cache="off", state_dir=str(tmp_path / "state"), target={"device": "sdz"})
    assert code == 1
    assert result["msg"].startswith("setup command 1 failed (exit code 1): boom")
    assert state.read_text() == "1\n"
    assert log.read_text().splitlines()[-2:] == ["-W1 /dev/sdz", "-W /dev/sdz"]


def commit_rate_job(target):
    """The fio_commit_rate job the benchmark role would run on target, with the write cache off, and its job file
    rendered from the role's own template (Ansible's template lookup settings: trim_blocks)."""
    settings = Settings(run_id="20261125T000000Z-enospc", memory_bytes=1 << 20, tests=("fio_commit_rate",),
                        fio_runtime_s=2, fio_ramp_s=0, repeats=1, commit_write_cache="off", reserve_min_bytes=0)
    (job,) = [job for job in build_plan([target], settings).jobs if job["test"] == "fio_commit_rate"]
    with open(FIO_TEMPLATE, encoding="utf-8") as handle:
        template = handle.read()
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return job, environment.from_string(template).render(item=job)


@needs_fio
@pytest.mark.parametrize("case", ["test-file-missing", "enospc"])
def test_write_cache_restored_after_the_commit_rate_fio_job_fails(capsys, tmp_path, monkeypatch, sata_disk, case):
    """The commit-rate job fails for real: real fio, the job file the role renders, write_cache=off.

    There is no SATA disk on the machines this runs on (loop and virtio disks have no write-cache control and
    there is no scsi_debug), so hdparm is the stand-in of fake_hdparm: it keeps the setting in a file and prints
    the public outputs of real hdparm runs. Everything else is real. "test-file-missing": the test file dd_seq_write
    should have written is not there (that test failed and its partial file was removed): fio, allow_file_create=0,
    refuses to create it. "enospc": the job on a raw_write "device" that is /dev/full, every write fails ENOSPC.
    """
    folder, state, log = fake_hdparm(tmp_path)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    if case == "test-file-missing":
        target = TargetFacts(path=str(tmp_path), free_bytes=1 << 30, filesystem_size_bytes=1 << 31, device="sdz")
        expected_error = "fio: file creation disallowed by allow_file_create=0"
    else:
        target = TargetFacts(path="/dev/full", kind="raw", device_path="/dev/full", device="sdz",
                             device_size_bytes=1 << 20, granted_class="raw_write")
        expected_error = "No space left on device"
    job, job_file = commit_rate_job(target)
    assert job["write_cache"] == "off" and "fdatasync=1" in job_file and "allow_file_create=0" in job_file
    code, result = run_module(capsys, argv=job["argv"], job_file=job_file, test=job["test"], target=job["target"],
                              params=job["params"], write_cache=job["write_cache"], state_dir=str(tmp_path / "state"), repeats=job["repeats"],
                              max_repeats=job["max_repeats"], device_io=False)
    assert code == 1, result
    assert result["msg"].startswith("fio failed (exit code 1): ") and expected_error in result["msg"], result["msg"]
    assert state.read_text() == "1\n"                       # the stand-in's write cache is on again
    assert log.read_text().splitlines() == ["-W /dev/sdz", "-W0 /dev/sdz", "-W /dev/sdz", "-W1 /dev/sdz", "-W /dev/sdz"]
    (record,) = records(result)
    assert expected_error in record["error"] and record["exit_code"] == 1
    assert record["write_cache"] == {"before": True, "during": False, "restored": True, "method": "hdparm"}
    assert record["params"]["write_cache"] == "off" and record["samples"] == [None]
    assert not os.path.exists(record["command"][-1])           # the job file is gone too


def test_write_cache_a_disk_that_refuses_fails_before_measuring(capsys, tmp_path, monkeypatch, sata_disk):
    folder, _state, _log = fake_hdparm(tmp_path, refuse=True)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd], direction="write", write_cache="off", state_dir=str(tmp_path / "state"), target={"device": "sdz"})
    assert code == 1
    assert result["msg"].startswith("write_cache=off: hdparm still reports the write cache of sdz on after hdparm -W0 /dev/sdz")
    assert calls(counter) == 0


def test_write_cache_not_restored_fails_with_the_command_to_run(capsys, tmp_path, monkeypatch, sata_disk):
    folder, _state, _log = fake_hdparm(tmp_path, fail_restore=True)
    monkeypatch.setenv("PATH", "%s:%s" % (folder, os.environ["PATH"]))
    dd, _counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd], direction="write", device_io=False, write_cache="off", state_dir=str(tmp_path / "state"),
                              target={"device": "sdz"})
    assert code == 1
    assert result["msg"] == ("write cache of sdz not restored: hdparm -W1 /dev/sdz failed (exit code 5): HDIO_DRIVE_CMD(setcache) "
                             "failed: Input/output error; restore it by hand: hdparm -W1 /dev/sdz")
    assert records(result)[0]["write_cache"]["restored"] is False


@pytest.mark.parametrize("device", ["loop0", "vda"])
def test_write_cache_on_a_device_without_control_fails_before_anything(capsys, tmp_path, device):
    if not os.path.isdir("/sys/block/%s" % device):
        pytest.skip("no /sys/block/%s here" % device)
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd], direction="write", write_cache="off", state_dir=str(tmp_path / "state"), target={"device": device})
    assert code == 1
    assert result["msg"].startswith("write_cache=off: %s has no volatile write cache control (%s is " % (device, device))
    assert calls(counter) == 0


def test_write_cache_missing_tool_fails_before_anything(capsys, tmp_path, monkeypatch, sata_disk):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(bench_run.AnsibleModule, "get_bin_path",
                        lambda self, arg, required=False, **_options: None if arg == "hdparm" else shutil.which(arg))
    dd, counter = fake_dd(tmp_path)
    code, result = run_module(capsys, argv=[dd], direction="write", write_cache="off", state_dir=str(tmp_path / "state"), target={"device": "sdz"})
    assert code == 1
    assert result["msg"] == ("write_cache=off: sdz (SCSI disk with vendor ATA) needs hdparm, which is not installed; "
                             "install it (package hdparm)")
    assert calls(counter) == 0


def test_write_cache_needs_the_device(capsys, tmp_path):
    code, result = run_module(capsys, argv=["true"], write_cache="off", state_dir=str(tmp_path / "state"), target={"device": None})
    assert code == 1
    assert result["msg"].startswith("write_cache=off needs the whole disk in target.device")


# ---------------------------------------------------------------------------------------------- out of space


@needs_dd
def test_enospc_on_a_directory_target_says_what_it_means_and_what_to_do(capsys, tmp_path):
    """A real ENOSPC: /dev/full answers every write with it."""
    argv = ["dd", "if=/dev/zero", "of=/dev/full", "bs=65536", "count=4"]
    code, result = run_module(capsys, argv=argv, test="dd_seq_write", target={"path": str(tmp_path)}, device_io=False)
    assert code == 1
    (record,) = records(result)
    assert record["error"] == "dd: error writing '/dev/full': No space left on device"
    assert result["msg"].startswith("dd failed (exit code 1): dd: error writing '/dev/full': No space left on device; "
                                    "command: %s; out of space (ENOSPC) on the filesystem of %s during the test; "
                                    % (" ".join(argv), tmp_path)), result["msg"]
    assert re.search(r"; [0-9.]+ [KMG]iB of [0-9.]+ [KMG]iB free now\. The plan checks the free space before anything "
                     r"is written, so something else wrote to this filesystem since .*: free space on it, or test a "
                     r"smaller file \(diskproof_cache_fence_bytes\), and run again$", result["msg"]), result["msg"]
    assert "partial test file" not in result["msg"]           # no creates: nothing of ours to remove


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 1 MiB tmpfs of this test's own, unmounted at the end: a filesystem that really fills up."""
    mountpoint = tmp_path / "fs"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "diskproof-unit-enospc",
                              str(mountpoint)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % mounted.stderr.strip())
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


@needs_root
@needs_dd
def test_enospc_mid_write_removes_the_partial_test_file_and_nothing_else(capsys, tiny_filesystem):
    user_file = tiny_filesystem / "user-data.bin"
    user_file.write_bytes(os.urandom(256 * 1024))
    user_sum = hashlib.sha256(user_file.read_bytes()).hexdigest()
    run_dir = tiny_filesystem / "diskproof-run"
    run_dir.mkdir()
    test_file = run_dir / "diskproof.testfile"
    argv = ["dd", "if=/dev/zero", "of=%s" % test_file, "bs=65536", "count=32", "conv=fdatasync"]   # 2 MiB into 1 MiB
    code, result = run_module(capsys, argv=argv, test="dd_seq_write", creates=str(test_file), device_io=False,
                              target={"path": str(tiny_filesystem)})
    assert code == 1
    (record,) = records(result)
    assert record["error"] == "dd: error writing '%s': No space left on device" % test_file
    assert 0 < record["bytes"] < 1 << 20                       # what dd wrote before the filesystem was full
    assert not test_file.exists() and result["created"] == []
    assert record["warnings"] == ["the run failed: its partial test file %s was removed" % test_file]
    assert ("out of space (ENOSPC) on the filesystem of %s during the test; the partial test file %s was removed; "
            % (tiny_filesystem, test_file)) in result["msg"], result["msg"]
    assert sorted(os.listdir(tiny_filesystem)) == ["diskproof-run", "user-data.bin"]
    assert hashlib.sha256(user_file.read_bytes()).hexdigest() == user_sum
    # the space is back: only the user file (and the run directory) still take room
    assert os.statvfs(tiny_filesystem).f_bavail * os.statvfs(tiny_filesystem).f_frsize >= (1 << 20) - 300 * 1024
    # a later read of the test file fails instead of measuring the short file
    code, result = run_module(capsys, argv=["dd", "if=%s" % test_file, "of=/dev/null", "bs=65536", "count=32"],
                              test="dd_seq_read", target={"path": str(tiny_filesystem)}, device_io=False)
    assert code == 1
    assert records(result)[0]["error"] == "dd: failed to open '%s': No such file or directory" % test_file


@needs_dd
def test_a_failed_run_that_created_nothing_removes_nothing(capsys, tmp_path):
    test_file = tmp_path / "diskproof.testfile"
    code, result = run_module(capsys, argv=["dd", "if=/nonexistent", "of=%s" % test_file], creates=str(test_file),
                              device_io=False, target={"path": str(tmp_path)})
    assert code == 1
    assert result["msg"].startswith("dd failed (exit code 1): dd: failed to open '/nonexistent'")
    assert "removed" not in result["msg"] and records(result)[0]["warnings"] == []


# ---------------------------------------------------------------------------------------------- sweep


@needs_dd
def test_sweep_gives_one_record_with_a_point_per_offset(capsys, tmp_path):
    image = tmp_path / "img"
    image.write_bytes(os.urandom(4 * 1048576))
    keep = tmp_path / "keep"
    keep.mkdir()
    steps = [{"offset_bytes": block * 1048576,
              "argv": ["dd", "if=%s" % image, "of=/dev/null", "bs=1048576", "skip=%d" % block, "count=1"]}
             for block in range(4)]
    code, result = run_module(capsys, sweep=steps, test="dd_zcav", target={"path": str(tmp_path)}, keep_raw=str(keep),
                              params={"block_size": 1048576})
    assert code == 0, result
    (record,) = records(result)
    assert record["tool"] == "dd" and record["test"] == "dd_zcav" and record["error"] is None
    points = record["metrics"]["zcav"]
    assert [point["offset_bytes"] for point in points] == [0, 1048576, 2097152, 3145728]
    assert all(point["read_bytes_per_s"] > 0 for point in points)
    assert record["bytes"] == 4 * 1048576
    assert record["metrics"]["read_bytes_per_s"] == pytest.approx(record["bytes"] / record["seconds"], rel=1e-12)
    assert record["command"] == steps[0]["argv"]
    assert record["commands"] == [step["argv"] for step in steps]
    assert record["exit_code"] == 0
    assert "samples" not in record
    raws = [os.path.join(str(keep), "dd_zcav.%d.out" % number) for number in range(1, 5)]
    assert record["raw_files"] == raws
    joined = b"".join(open(path, "rb").read() for path in raws)
    assert record["raw_sha256"] == hashlib.sha256(joined).hexdigest()


@needs_dd
def test_sweep_stops_at_a_failing_step(capsys, tmp_path):
    image = tmp_path / "img"
    image.write_bytes(b"\0" * 1048576)
    steps = [{"offset_bytes": 0, "argv": ["dd", "if=%s" % image, "of=/dev/null", "bs=65536", "count=1"]},
             {"offset_bytes": 65536, "argv": ["dd", "if=%s" % (tmp_path / "missing"), "of=/dev/null", "bs=65536"]},
             {"offset_bytes": 131072, "argv": ["dd", "if=%s" % image, "of=/dev/null", "bs=65536", "count=1"]}]
    code, result = run_module(capsys, sweep=steps, device_io=False, fail_on_error=False)
    assert code == 0
    (record,) = records(result)
    assert record["error"] == "step 2 (offset 65536): dd: failed to open '%s': No such file or directory" % (tmp_path / "missing")
    assert [point["offset_bytes"] for point in record["metrics"]["zcav"]] == [0]
    assert record["exit_code"] == 1
    code, result = run_module(capsys, sweep=steps, device_io=False)
    assert code == 1
    assert result["msg"].startswith("dd failed (exit code 1): step 2 (offset 65536): dd: failed to open")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"repeats": 2}, "repeats and max_repeats do not apply to a sweep"),
        ({"max_repeats": 3}, "repeats and max_repeats do not apply to a sweep"),
        ({"argv": ["dd"]}, "parameters are mutually exclusive: argv|sweep"),
        ({"tool": "fio"}, "a sweep runs dd reads: tool must be auto or dd, got fio"),
        ({"sweep": []}, "sweep must list at least one step"),
        ({"sweep": [{"offset_bytes": 0}]}, "missing required arguments: argv found in sweep"),
    ],
)
def test_sweep_argument_errors(capsys, args, message):
    base = {"sweep": [{"offset_bytes": 0, "argv": ["dd", "if=/dev/zero", "of=/dev/null", "count=1"]}]}
    base.update(args)
    code, result = run_module(capsys, **base)
    assert code == 1
    assert message in result["msg"]


# ---------------------------------------------------------------------------------------------- keep_raw


def test_keep_raw_writes_the_evidence_exactly(capsys, tmp_path):
    dd, _counter = fake_dd(tmp_path)
    keep = tmp_path / "evidence"
    keep.mkdir()
    log = tmp_path / "log"
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, repeats=2,
                              max_cv=0.5, keep_raw=str(keep), test="dd seq/write",
                              setup=[[logger(tmp_path, log, "s1", "setup1", stderr="prepared")]],
                              cleanup=[[logger(tmp_path, log, "c1", "cleanup1")]])
    assert code == 0, result
    (record,) = records(result)
    names = ["dd_seq_write.setup.1.out", "dd_seq_write.1.out", "dd_seq_write.2.out", "dd_seq_write.cleanup.1.out"]
    assert record["raw_files"] == [str(keep / name) for name in names]
    assert (keep / "dd_seq_write.1.out").read_text() == dd_summaries()[0]
    chosen = keep / ("dd_seq_write.%d.out" % (record["samples"].index(record["metrics"]["write_bytes_per_s"]) + 1))
    assert hashlib.sha256(chosen.read_bytes()).hexdigest() == record["raw_sha256"]
    assert (keep / "dd_seq_write.setup.1.out").read_text() == "prepared\n"
    assert (keep / "dd_seq_write.cleanup.1.out").read_text() == ""
    # evidence is never overwritten: the same test again is refused before running
    code, result = run_module(capsys, argv=[dd, "of=/dev/null"], direction="write", device_io=False, keep_raw=str(keep),
                              test="dd seq/write")
    assert code == 1
    assert "already holds output of test dd seq/write" in result["msg"]


@needs_fio
def test_keep_raw_keeps_the_job_file(capsys, tmp_path):
    keep = tmp_path / "evidence"
    keep.mkdir()
    job = FIO_JOB.format(path=tmp_path / "fio.dat")
    code, result = run_module(capsys, argv=["fio", "--output-format=json"], job_file=job, test="fio_seq_write",
                              device_io=False, keep_raw=str(keep))
    assert code == 0, result
    assert (keep / "fio_seq_write.fio").read_text() == job
    assert records(result)[0]["raw_files"] == [str(keep / "fio_seq_write.fio"), str(keep / "fio_seq_write.1.out")]


def test_keep_raw_must_exist(capsys, tmp_path):
    code, result = run_module(capsys, argv=["true"], keep_raw=str(tmp_path / "nope"))
    assert code == 1
    assert result["msg"] == "keep_raw=%s is not an existing directory: create it first" % (tmp_path / "nope")


# ---------------------------------------------------------------------------------------------- options, check mode


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"argv": ["true"], "write_cache": "off"}, "write_cache is off but all of the following are missing: state_dir"),
        ({"argv": ["true"], "lock_run_id": "run-1"}, "missing parameter(s) required by 'lock_run_id': state_dir"),
        ({"argv": ["true"], "repeats": 0}, "repeats must be at least 1, got 0"),
        ({"argv": ["true"], "repeats": 3, "max_repeats": 2}, "max_repeats (2) must be at least repeats (3)"),
        ({"argv": ["true"], "max_cv": -0.1}, "max_cv must be 0 or more"),
        ({"argv": ["true"], "min_device_fraction": 1.5}, "min_device_fraction must be above 0 and at most 1"),
        ({"argv": ["true"], "cache_fence_bytes": 0}, "cache_fence_bytes must be a positive number of bytes"),
        ({"argv": ["true"], "setup": ["true"]}, "setup command 1 must be a list of arguments (strings), got 'true'"),
        ({"argv": ["true"], "cleanup": [[]]}, "cleanup command 1 is an empty command"),
        ({"argv": ["true"], "setup": [["/nonexistent/diskproof-tool"]]},
         "setup command 1: /nonexistent/diskproof-tool not found in PATH (or not executable)"),
        ({"argv": ["true"], "workdir_owner": "nobody"}, "missing parameter(s) required by 'workdir_owner': workdir"),
        ({"argv": ["true"], "write_cache": "on"}, "value of write_cache must be one of: unchanged, off"),
    ],
)
def test_option_errors(capsys, args, message):
    code, result = run_module(capsys, **args)
    assert code == 1
    assert message in result["msg"]


def test_check_mode_runs_and_creates_nothing(capsys, tmp_path):
    log = tmp_path / "log"
    workdir = tmp_path / "work"
    code, result = run_module(capsys, argv=["dd", "if=/dev/zero", "of=%s" % (tmp_path / "f"), "count=1"],
                              setup=[[logger(tmp_path, log, "s1", "setup1")]], workdir=str(workdir),
                              keep_raw=str(tmp_path), repeats=3, _ansible_check_mode=True)
    assert code == 0
    assert result["changed"] is False and records(result) == []
    assert not log.exists() and not workdir.exists() and not (tmp_path / "f").exists()
    assert isinstance(result["elapsed_s"], float)
    code, result = run_module(capsys, sweep=[{"offset_bytes": 0, "argv": ["dd", "if=/dev/zero", "of=/dev/null", "count=1"]}],
                              _ansible_check_mode=True)
    assert (code, result["msg"]) == (0, "check mode: dd not run")


# ---------------------------------------------------------------------------------------------- output bound


def test_a_tool_flooding_its_output_is_bounded_and_the_record_says_so(capsys, tmp_path, monkeypatch):
    # A stand-in fio printing a real fio 3.33 JSON report on stdout and 4 MiB of lines on stderr (as fio does for a
    # disk that fails its verify everywhere), under a bound of 1 MiB a stream: the report is read, stderr is cut
    # in its middle, and the record and the task warn.
    monkeypatch.setattr(_proc, "OUTPUT_LIMIT_BYTES", 1 << 20)
    report = os.path.join(HERE, "..", "..", "..", "fixtures", "fio", "fio333-seqwrite-1m.json")
    fio = script(tmp_path / "fio", '[ "$1" = --version ] && exit 1\ncat "%s"\n'
                 'yes "verify: bad magic header 0, wanted acca at file x offset 0, length 4096" | head -c 4194304 >&2\n'
                 % report)
    code, result = run_module(capsys, argv=[fio, "--output-format=json"], device_io=False, test="fio_seq_write",
                              params={"block_size": 1048576})
    assert code == 0, result.get("msg")
    (record,) = records(result)
    assert record["metrics"]["write_bytes_per_s"] > 0
    warning = [text for text in record["warnings"] if "printed more than 1 MiB on a stream" in text]
    assert warning and re.search(r": \d+ bytes in its middle were not kept \(the raw output says where\)$",
                                 warning[0]), record["warnings"]
    assert any("printed more than 1 MiB" in text for text in task_warnings(result))
