"""module_utils/_store.py: the durable report store on real temporary directories.

Report contents are the real report.json of tests/fixtures/report/lab-rack6-report.json (a run on the lab
rack: 15 pass, 3 outlier). A passing run is that report with summary.passed set true, a failing one with it
false (the fixture predates the key). Checksums are verified with the real sha256sum when it is installed;
the concurrency test publishes from two real processes at once.
"""
from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _store as store
from ansible_collections.diskproof.fleet.plugins.module_utils._store import StoreError

HERE = os.path.dirname(os.path.abspath(__file__))
RACK6 = os.path.join(HERE, "..", "..", "..", "fixtures", "report", "lab-rack6-report.json")
FILES = {"results.csv": "host,test\nrack6-n01,dd_seq_write\n", "junit.xml": "<testsuites/>\n",
         "report.md": "# report\n", "report.html": "<html></html>\n"}


def rack6(passed: bool) -> dict:
    with open(RACK6, encoding="utf-8") as handle:
        report = json.load(handle)
    report["summary"]["passed"] = passed
    return report


def incoming(root: str, run_id: str, passed: bool, extra: dict | None = None) -> str:
    """What the role's copy leaves: the run's files in <store>/.incoming/<run id>.tmp."""
    path = store.prepare_incoming(root, run_id)
    with open(os.path.join(path, "report.json"), "w", encoding="utf-8") as handle:
        json.dump(rack6(passed), handle)
    for name, text in dict(FILES, **(extra or {})).items():
        os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
        with open(os.path.join(path, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return path


def publish(root: str, run_id: str, passed: bool, **kwargs) -> dict:
    incoming(root, run_id, passed)
    return store.publish(root, run_id, **kwargs)


def index(root: str) -> list:
    with open(os.path.join(root, "index.json"), encoding="utf-8") as handle:
        return json.load(handle)["runs"]


# ---------------------------------------------------------------------------------------------
# run ids


@pytest.mark.parametrize("run_id", ["20261126T030000Z-awx4711", "20261126T030000Z-3f2a9c1b", "r1", "a.b_c-d"])
def test_good_run_ids(run_id):
    assert store.check_run_id(run_id) == run_id


@pytest.mark.parametrize("run_id, says", [
    ("", "empty"), ("latest", "reserved"), ("last-pass", "reserved"), ("index.json", "reserved"),
    (".hidden", "letters"), ("../x", "letters"), ("a/b", "letters"), ("x" * 129, "128"),
])
def test_bad_run_ids_are_refused(run_id, says):
    with pytest.raises(StoreError, match=says):
        store.check_run_id(run_id)


def test_new_run_id_uses_the_awx_job_id_else_a_random_suffix():
    import datetime
    when = datetime.datetime(2026, 11, 26, 3, 0, 5, tzinfo=datetime.timezone.utc)
    assert store.new_run_id(when, "4711") == "20261126T030005Z-awx4711"
    first, second = store.new_run_id(when, ""), store.new_run_id(when, None)
    assert first.startswith("20261126T030005Z-") and len(first) == len("20261126T030005Z-") + 8
    assert first != second


# ---------------------------------------------------------------------------------------------
# the store directory


def test_missing_store_is_created_below_an_existing_parent(tmp_path):
    root = str(tmp_path / "store")
    assert store.check_store(root) == root and os.path.isdir(root)


@pytest.mark.parametrize("make, says", [
    (lambda p: open(p, "w").close(), "is not a directory"),
    (lambda p: None, "does not exist"),
])
def test_store_that_cannot_be_used_is_refused_saying_what_to_do(tmp_path, make, says):
    root = str(tmp_path / "store")
    if says == "does not exist":
        root = str(tmp_path / "no" / "such" / "store")
    else:
        make(root)
    with pytest.raises(StoreError, match=says) as caught:
        store.check_store(root)
    assert "diskproof_report_store" in str(caught.value)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_store_the_user_cannot_write_is_refused():
    """As user nobody (setpriv), a root-owned 0755 store is not writable: refused, naming the problem and the fix.
    (pytest's tmp_path is private to root, so the store is a scratch directory of its own under /tmp.)"""
    scratch = tempfile.mkdtemp(prefix="diskproof-store-test-")
    try:
        os.chmod(scratch, 0o755)
        root = os.path.join(scratch, "store")
        os.mkdir(root, 0o755)
        code = ("import sys; sys.path.insert(0, %r)\n"
                "from ansible_collections.diskproof.fleet.plugins.module_utils import _store\n"
                "try:\n    _store.check_store(%r)\nexcept _store.StoreError as error:\n    print(error)\n"
                % (_collections_dir(), root))
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                                 code], capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(scratch)
    assert "is not writable" in result.stdout, result.stdout + result.stderr
    assert "diskproof_report_store" in result.stdout


def _collections_dir() -> str:
    path = os.path.abspath(store.__file__)
    return path[:path.index("/ansible_collections/")]


# ---------------------------------------------------------------------------------------------
# publish


def test_two_runs_pass_then_fail(tmp_path):
    root = str(tmp_path / "store")
    first = publish(root, "20261126T030000Z-awx1", True)
    second = publish(root, "20261126T040000Z-awx2", False)

    for result, run_id in ((first, "20261126T030000Z-awx1"), (second, "20261126T040000Z-awx2")):
        run_dir = os.path.join(root, run_id)
        assert result["run_dir"] == run_dir
        assert sorted(os.listdir(run_dir)) == sorted(["SHA256SUMS", "report.json", *FILES])
        if shutil.which("sha256sum"):
            checked = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=run_dir, capture_output=True,
                                     text=True, check=False)
            assert checked.returncode == 0, checked.stdout + checked.stderr
            assert checked.stdout.count(": OK") == 5
    assert os.readlink(os.path.join(root, "latest")) == "20261126T040000Z-awx2"
    assert os.readlink(os.path.join(root, "last-pass")) == "20261126T030000Z-awx1"
    assert first["last_pass"] == "20261126T030000Z-awx1" and second["last_pass"] == "20261126T030000Z-awx1"
    assert os.listdir(os.path.join(root, ".incoming")) == []

    runs = index(root)
    assert [run["run_id"] for run in runs] == ["20261126T030000Z-awx1", "20261126T040000Z-awx2"]
    assert [run["passed"] for run in runs] == [True, False]
    assert runs[0]["counts"] == {"error": 0, "not_measured": 0, "outlier": 3, "pass": 15}
    assert runs[0]["playbook"] == "validate.yml" and runs[0]["time"] == "2026-11-22T01:09:32Z"
    assert runs[0]["hosts"] == ["rack6-n0%d" % n for n in range(1, 7)]
    assert runs[1]["path"] == os.path.join(root, "20261126T040000Z-awx2")
    with open(os.path.join(root, "index.csv"), encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["run_id"] for row in rows] == ["20261126T030000Z-awx1", "20261126T040000Z-awx2"]
    assert rows[0]["passed"] == "true" and rows[1]["passed"] == "false" and rows[0]["outlier"] == "3"

    found = store.query(root)
    assert found["last_pass"]["run_id"] == "20261126T030000Z-awx1"
    assert found["last_pass"]["report_json"] == os.path.join(root, "20261126T030000Z-awx1", "report.json")
    assert found["latest"] == "20261126T040000Z-awx2"


def test_subdirectories_are_kept_and_checksummed(tmp_path):
    root = str(tmp_path / "store")
    incoming(root, "r1", True, extra={"evidence/n01/sda-20261126.tar.gz": "bundle"})
    store.publish(root, "r1")
    with open(os.path.join(root, "r1", "SHA256SUMS"), encoding="utf-8") as handle:
        assert "  evidence/n01/sda-20261126.tar.gz\n" in handle.read()


def test_query_of_an_empty_store_finds_nothing(tmp_path):
    root = str(tmp_path / "store")
    assert store.query(root) == {"last_pass": None, "latest": None, "runs": 0}     # not made yet
    os.mkdir(root)
    assert store.query(root) == {"last_pass": None, "latest": None, "runs": 0}
    assert os.listdir(root) == []


@pytest.mark.parametrize("where, says", [("file", "is not a directory; point"),
                                         ("no/parent/store", "neither does its parent")])
def test_query_of_a_store_that_cannot_be_refuses(tmp_path, where, says):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match=says):
        store.query(str(tmp_path / where))


def test_query_refuses_a_baseline_whose_checksum_does_not_match(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    with open(os.path.join(root, "r1", "report.json"), "a", encoding="utf-8") as handle:
        handle.write(" ")
    with pytest.raises(StoreError, match="does not match its SHA256SUMS"):
        store.query(root)


def test_existing_run_dir_is_never_overwritten(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    before = open(os.path.join(root, "r1", "SHA256SUMS"), encoding="utf-8").read()
    with pytest.raises(StoreError, match="already holds a run r1"):
        store.prepare_incoming(root, "r1")
    # Even an empty directory of that name (which rename would replace) is kept.
    os.mkdir(os.path.join(root, "r2"))
    incoming_dir = os.path.join(root, ".incoming", "r2.tmp")
    os.makedirs(incoming_dir)
    with open(os.path.join(incoming_dir, "report.json"), "w", encoding="utf-8") as handle:
        json.dump(rack6(True), handle)
    with pytest.raises(StoreError, match="already holds a run r2"):
        store.publish(root, "r2")
    assert os.listdir(os.path.join(root, "r2")) == []
    assert open(os.path.join(root, "r1", "SHA256SUMS"), encoding="utf-8").read() == before
    assert [run["run_id"] for run in index(root)] == ["r1"]


def test_incoming_twice_for_one_run_id_is_refused(tmp_path):
    root = str(tmp_path / "store")
    store.prepare_incoming(root, "r1")
    with pytest.raises(StoreError, match="is being published"):
        store.prepare_incoming(root, "r1")


def test_publish_without_report_json_fails_and_keeps_the_store(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    store.prepare_incoming(root, "r2")
    with pytest.raises(StoreError, match="no report.json"):
        store.publish(root, "r2")
    assert not os.path.exists(os.path.join(root, "r2"))
    assert os.readlink(os.path.join(root, "latest")) == "r1"
    assert [run["run_id"] for run in index(root)] == ["r1"]


def test_publish_of_a_report_that_is_not_json_fails_and_keeps_the_store(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    path = store.prepare_incoming(root, "r2")
    with open(os.path.join(path, "report.json"), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    with pytest.raises(StoreError, match="report.json .* is not a diskproof report"):
        store.publish(root, "r2")
    assert os.readlink(os.path.join(root, "latest")) == "r1" and not os.path.exists(os.path.join(root, "r2"))


def test_a_pointer_that_is_a_real_directory_is_refused_before_anything_moves(tmp_path):
    root = str(tmp_path / "store")
    os.makedirs(os.path.join(root, "latest"))
    incoming(root, "r1", True)
    with pytest.raises(StoreError, match="latest is not a symbolic link"):
        store.publish(root, "r1")
    assert not os.path.exists(os.path.join(root, "r1"))
    assert os.path.isdir(os.path.join(root, ".incoming", "r1.tmp"))


def test_failing_runs_never_move_last_pass(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", False)
    assert not os.path.lexists(os.path.join(root, "last-pass"))
    assert store.query(root)["last_pass"] is None
    assert store.query(root)["latest"] == "r1"


def test_corrupt_index_is_rebuilt_from_the_run_dirs(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    with open(os.path.join(root, "index.json"), "w", encoding="utf-8") as handle:
        handle.write("{")
    result = publish(root, "r2", False)
    assert [run["run_id"] for run in index(root)] == ["r1", "r2"]
    assert any("rebuilt" in warning for warning in result["warnings"])


def test_leftovers_of_killed_publishes_are_swept_but_not_live_uploads(tmp_path):
    root = str(tmp_path / "store")
    dead = store.prepare_incoming(root, "dead")
    live = store.prepare_incoming(root, "live")
    os.makedirs(os.path.join(root, ".incoming", "r0.pruned-1a2b3c4d"))
    week_ago = os.stat(dead).st_mtime - store.STALE_UPLOAD_S - 60
    os.utime(dead, (week_ago, week_ago))
    result = publish(root, "r1", True)
    assert sorted(os.listdir(os.path.join(root, ".incoming"))) == [os.path.basename(live)]
    assert len(result["warnings"]) == 2


# ---------------------------------------------------------------------------------------------
# retention


def test_keep_prunes_the_oldest_but_never_a_pointer_target(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)                    # last-pass: kept although oldest
    publish(root, "r2", False)
    publish(root, "r3", False)
    result = publish(root, "r4", False, keep=2)
    assert result["pruned"] == ["r2", "r3"]
    assert sorted(name for name in os.listdir(root) if name.startswith("r")) == ["r1", "r4"]
    assert [run["run_id"] for run in index(root)] == ["r1", "r4"]
    assert os.readlink(os.path.join(root, "last-pass")) == "r1"
    assert os.readlink(os.path.join(root, "latest")) == "r4"


def test_keep_zero_keeps_everything_and_foreign_dirs_are_never_pruned(tmp_path):
    root = str(tmp_path / "store")
    os.makedirs(os.path.join(root, "notes"))
    for run_id in ("r1", "r2", "r3"):
        publish(root, run_id, False)
    assert len(index(root)) == 3
    result = publish(root, "r4", False, keep=1)
    assert result["pruned"] == ["r1", "r2", "r3"]
    assert os.path.isdir(os.path.join(root, "notes"))


# ---------------------------------------------------------------------------------------------
# concurrency: sliced jobs publish at the same time


def _publish_many(root: str, prefix: str, count: int, queue) -> None:
    try:
        for number in range(count):
            publish(root, "%s%02d" % (prefix, number), number % 2 == 0)
        queue.put(None)
    except BaseException as error:  # reported to the parent, which fails the test
        queue.put(repr(error))


def test_two_processes_publishing_at_once_lose_no_run(tmp_path):
    root = str(tmp_path / "store")
    os.mkdir(root)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_publish_many, args=(root, prefix, 15, queue)) for prefix in ("a", "b")]
    for worker in workers:
        worker.start()
    errors = [queue.get(timeout=120) for _worker in workers]
    for worker in workers:
        worker.join(30)
    assert errors == [None, None]
    runs = index(root)
    assert sorted(run["run_id"] for run in runs) == sorted("%s%02d" % (p, n) for p in "ab" for n in range(15))
    assert len(runs) == 30
    with open(os.path.join(root, "index.csv"), encoding="utf-8", newline="") as handle:
        assert len(list(csv.reader(io.StringIO(handle.read())))) == 31
    latest = os.readlink(os.path.join(root, "latest"))
    assert latest == runs[-1]["run_id"]
    assert not [name for name in os.listdir(root) if name.startswith(".") and name not in (".incoming", ".lock")]


# ---------------------------------------------------------------------------------------------
# a publish cut short by a signal (a real forked process signals itself right after its run directory moved
# into the store: the moment a cancel would leave a run the index does not name)


def _publish_signalled_after_the_move(root: str, run_id: str, signum: int, disposition) -> None:
    # The disposition the signal has when the publish starts is the one it keeps afterwards: set here, not
    # inherited (under nohup SIGHUP arrives ignored, and an ignored signal must stay ignored).
    if signum != signal.SIGKILL:
        signal.signal(signum, disposition)
    real_rename = os.rename

    def rename_then_signal(source, target, *args, **kwargs):
        real_rename(source, target, *args, **kwargs)
        if target == os.path.join(root, run_id):
            os.kill(os.getpid(), signum)

    os.rename = rename_then_signal   # in the forked child only
    incoming(root, run_id, True)
    store.publish(root, run_id)
    os._exit(0)   # pylint: disable=protected-access


def publish_signalled(root: str, run_id: str, signum: int, disposition=None) -> int:
    """Exit code of a forked process that publishes run_id and signals itself right after the move; the signal's
    disposition in that process is the default action (Python's KeyboardInterrupt for SIGINT) unless given."""
    if disposition is None:
        disposition = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
    process = multiprocessing.get_context("fork").Process(target=_publish_signalled_after_the_move,
                                                          args=(root, run_id, signum, disposition))
    process.start()
    process.join(60)
    return process.exitcode


@pytest.mark.parametrize(("signum", "exit_code"), [
    (signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP),
    (signal.SIGINT, 1),   # Python's own handler: KeyboardInterrupt, raised when the signal is let through
], ids=["TERM", "HUP", "INT"])
def test_a_cancel_signal_during_publish_waits_until_the_index_and_pointers_name_the_run(tmp_path, signum, exit_code):
    root = str(tmp_path / "store")
    os.mkdir(root)
    publish(root, "r1", True)
    # The signal still ends the process, but only once the publish is whole.
    assert publish_signalled(root, "r2", signum) == exit_code
    assert [run["run_id"] for run in index(root)] == ["r1", "r2"]
    assert os.readlink(os.path.join(root, "latest")) == "r2" and os.readlink(os.path.join(root, "last-pass")) == "r2"
    assert os.listdir(os.path.join(root, ".incoming")) == []


def test_a_cancel_signal_the_process_ignores_stays_ignored_after_the_publish(tmp_path):
    """As under nohup: the held SIGHUP is not turned into a default action; the publish is whole and the process goes on."""
    root = str(tmp_path / "store")
    os.mkdir(root)
    publish(root, "r1", True)
    assert publish_signalled(root, "r2", signal.SIGHUP, signal.SIG_IGN) == 0
    assert [run["run_id"] for run in index(root)] == ["r1", "r2"]
    assert os.readlink(os.path.join(root, "latest")) == "r2"


def test_a_run_a_sigkill_left_out_of_the_index_is_indexed_again_by_the_next_publish(tmp_path):
    root = str(tmp_path / "store")
    os.mkdir(root)
    publish(root, "r1", True)
    assert publish_signalled(root, "r2", signal.SIGKILL) == -signal.SIGKILL   # SIGKILL cannot wait
    assert [run["run_id"] for run in index(root)] == ["r1"] and os.path.isdir(os.path.join(root, "r2"))
    result = publish(root, "r3", False)
    assert result["warnings"] == ["run r2 was in the store but not in its index (a publish was killed before it "
                                  "wrote the index): indexed again"]
    assert [run["run_id"] for run in index(root)] == ["r1", "r2", "r3"]
    assert os.readlink(os.path.join(root, "latest")) == "r3" and os.readlink(os.path.join(root, "last-pass")) == "r1"
