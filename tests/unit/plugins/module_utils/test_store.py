"""module_utils/_store.py: the durable report store on real temporary directories.

Report contents are the real report.json of tests/fixtures/report/lab-rack6-report.json (a run on the lab
rack: 15 pass, 3 outlier). A passing run is that report with summary.passed set true, a failing one with it
false (the fixture predates the key). Runs are signed as the controller signs them (plugin_utils/_baseline_trust.py,
a throwaway key) unless a test says otherwise. Checksums are verified with the real sha256sum when it is installed;
the concurrency test publishes from two real processes at once.
"""
from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _store as store
from ansible_collections.diskproof.fleet.plugins.module_utils._store import StoreError
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _baseline_trust

HERE = os.path.dirname(os.path.abspath(__file__))
RACK6 = os.path.join(HERE, "..", "..", "..", "fixtures", "report", "lab-rack6-report.json")
FILES = {"results.csv": "host,test\nrack6-n01,dd_seq_write\n", "junit.xml": "<testsuites/>\n",
         "report.md": "# report\n", "report.html": "<html></html>\n"}
KEY = b"a throwaway store key of issue 31's tests, 32+ characters"


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


def sealed_publish(root: str, run_id: str, signed: bool = True, scope: str = "full", **kwargs) -> dict:
    """store.publish of an upload as the role hands it over: the sums (and signature) the controller made."""
    sealed = _baseline_trust.seal(KEY if signed else None, store.incoming_path(root, run_id), run_id, scope)
    return store.publish(root, run_id, scope=scope, sums=sealed["sums"], signature=sealed["signature"], **kwargs)


def publish(root: str, run_id: str, passed: bool, signed: bool = True, scope: str = "full", **kwargs) -> dict:
    incoming(root, run_id, passed)
    return sealed_publish(root, run_id, signed, scope, **kwargs)


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
    """As user nobody (setpriv), a root-owned 0755 store is refused, naming the owner and the fix. The collection's
    module_utils are copied into a scratch directory nobody can read (the checkout may be under root's 0700 home,
    which nobody cannot enter, and so may the venv: the interpreter is the venv's real one), and the store is a
    scratch directory of its own under /tmp (pytest's tmp_path is private to root)."""
    python = os.path.realpath(sys.executable)
    reachable = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", "pass"],
                               capture_output=True, check=False, cwd="/")
    if reachable.returncode != 0:
        pytest.skip("user nobody cannot run this Python (%s): %s" % (python, reachable.stderr.decode()[:200]))
    scratch = tempfile.mkdtemp(prefix="diskproof-store-test-")
    try:
        os.chmod(scratch, 0o755)
        module_utils = os.path.join(scratch, "ansible_collections", "diskproof", "fleet", "plugins", "module_utils")
        shutil.copytree(os.path.dirname(os.path.abspath(store.__file__)), module_utils,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for directory, _dirs, _files in os.walk(scratch):
            os.chmod(directory, 0o755)
        root = os.path.join(scratch, "store")
        os.mkdir(root, 0o755)
        code = ("import sys; sys.path.insert(0, %r)\n"
                "from ansible_collections.diskproof.fleet.plugins.module_utils import _store\n"
                "try:\n    _store.check_store(%r)\nexcept _store.StoreError as error:\n    print(error)\n"
                % (scratch, root))
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-I", "-c",
                                 code], capture_output=True, text=True, check=False, cwd="/")
    finally:
        shutil.rmtree(scratch)
    assert "is owned by uid 0 (root)" in result.stdout, result.stdout + result.stderr
    assert "not by uid 65534" in result.stdout and "diskproof_report_store" in result.stdout


def _chown_to_nobody(path: str) -> None:
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize("make, says", [
    (lambda root: os.chmod(root, 0o775), "has mode 0775 (group- or world-writable)"),
    (lambda root: os.chmod(root, 0o757), "has mode 0757 (group- or world-writable)"),
    pytest.param(_chown_to_nobody, "is owned by uid 65534",
                 marks=pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the store to another user")),
], ids=["group-writable", "world-writable", "owned-by-another-user"])
def test_a_store_others_can_write_is_refused_before_anything_is_made(tmp_path, make, says):
    """The store is checked as the quiesce state directory is: anyone else who can write it could plant an index
    entry or a link that a root publish would follow."""
    root = str(tmp_path / "store")
    os.mkdir(root, 0o755)
    make(root)
    for call in (lambda: store.prepare_incoming(root, "r1"), lambda: store.query(root)):
        with pytest.raises(StoreError, match=re.escape(says)) as caught:
            call()
        assert "diskproof_report_store %s" % root in str(caught.value)
    assert os.listdir(root) == []


def test_a_store_that_is_a_symbolic_link_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "store").symlink_to(real)
    with pytest.raises(StoreError, match="is a symbolic link"):
        store.prepare_incoming(str(tmp_path / "store"), "r1")
    assert os.listdir(real) == []


def _week_old(path) -> None:
    stamp = os.stat(path).st_mtime - store.STALE_UPLOAD_S - 3600
    os.utime(path, (stamp, stamp))


def test_a_symlinked_incoming_is_refused_and_what_it_points_to_is_untouched(tmp_path):
    """A planted .incoming link would put the upload outside the store; refused, nothing made there."""
    root = tmp_path / "store"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x.tmp").mkdir(parents=True)
    (root / ".incoming").symlink_to(elsewhere)
    with pytest.raises(StoreError, match=r"\.incoming is a symbolic link"):
        store.prepare_incoming(str(root), "r1")
    assert os.listdir(elsewhere) == ["x.tmp"]


def test_a_publish_through_an_incoming_swapped_for_a_link_is_refused_and_nothing_there_is_swept(tmp_path):
    """.incoming swapped for a link after the upload: the publish neither moves the run in through it nor removes
    the week-old *.tmp directories where it points."""
    root = str(tmp_path / "store")
    incoming(root, "r1", True)
    elsewhere = tmp_path / "elsewhere"
    os.rename(os.path.join(root, ".incoming"), elsewhere)
    os.symlink(elsewhere, os.path.join(root, ".incoming"))
    (elsewhere / "precious.tmp").mkdir()
    (elsewhere / "precious.tmp" / "data").write_text("keep")
    _week_old(elsewhere / "precious.tmp")
    with pytest.raises(StoreError, match=r"\.incoming is a symbolic link"):
        store.publish(root, "r1")
    assert (elsewhere / "precious.tmp" / "data").read_text() == "keep"
    assert sorted(os.listdir(elsewhere)) == ["precious.tmp", "r1.tmp"]
    assert not os.path.lexists(os.path.join(root, "r1"))


@pytest.mark.parametrize("forged", ["absolute", "relative"])
def test_a_forged_index_entry_naming_a_directory_outside_the_store_is_never_removed(tmp_path, forged):
    """Retention once joined any run_id of index.json to the store path and removed what it named."""
    root = str(tmp_path / "store")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data").write_text("precious")
    publish(root, "r1", False)
    publish(root, "r2", False)
    runs = index(root)
    run_id = str(victim) if forged == "absolute" else os.path.join("..", "victim")
    runs.insert(0, dict(runs[0], run_id=run_id, published="2000-01-01T00:00:00Z"))
    with open(os.path.join(root, "index.json"), "w", encoding="utf-8") as handle:
        json.dump({"schema": 1, "runs": runs}, handle)
    result = publish(root, "r3", False, keep=2)
    assert (victim / "data").read_text() == "precious"
    assert run_id not in result["pruned"]
    assert any("index.json" in warning and "rebuilt" in warning for warning in result["warnings"]), result["warnings"]
    assert run_id not in [run["run_id"] for run in index(root)]


def test_retention_removes_only_real_directories_directly_in_the_store(tmp_path):
    """A run of the index whose directory was swapped for a link to elsewhere: the link may go, never what it names."""
    root = str(tmp_path / "store")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data").write_text("precious")
    publish(root, "r1", False)
    publish(root, "r2", False)
    shutil.rmtree(os.path.join(root, "r1"))
    os.symlink(elsewhere, os.path.join(root, "r1"))
    result = publish(root, "r3", False, keep=1)
    assert (elsewhere / "data").read_text() == "precious"
    assert any("r1" in warning for warning in result["warnings"]), result["warnings"]


def _point_last_pass_by_hand(root: str, run_id: str) -> None:
    """What `ln -sfn RUN_ID last-pass` does, the remedy docs/report-store.md once gave."""
    os.symlink(run_id, os.path.join(root, ".last-pass.by-hand"))
    os.rename(os.path.join(root, ".last-pass.by-hand"), os.path.join(root, "last-pass"))


def test_a_failed_run_pointed_at_by_last_pass_is_refused(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    publish(root, "r2", False)
    _point_last_pass_by_hand(root, "r2")
    with pytest.raises(StoreError, match="index.json says run r2 did not pass") as caught:
        store.query(root)
    assert "diskproof.fleet.store_pick" in str(caught.value)


def test_a_last_pass_that_the_index_does_not_name_is_refused(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    publish(root, "r2", True)
    runs = [run for run in index(root) if run["run_id"] != "r2"]
    with open(os.path.join(root, "index.json"), "w", encoding="utf-8") as handle:
        json.dump({"schema": 1, "runs": runs}, handle)
    _point_last_pass_by_hand(root, "r2")
    with pytest.raises(StoreError, match="last-pass points to run r2, which is not in .*index.json"):
        store.query(root)


def test_index_csv_header_and_cells_go_through_the_one_neutraliser():
    """A report's summary.counts keys become index.csv's header: '=HYPERLINK(...)' came through as a formula."""
    from ansible_collections.diskproof.fleet.plugins.module_utils import _csv_cells
    runs = [{"run_id": "r1", "time": "2026-11-26T02:41:55Z", "published": "2026-11-26T02:41:57Z",
             "playbook": "-1+cmd|' /C calc'!A0", "passed": False, "total": 2,
             "counts": {'=HYPERLINK("http://evil.invalid","x")': 1, "@SUM(1+1)": 1, "pass": 0},
             "hosts": ["h1"], "path": "'/srv/store/r1"}]
    header, row = list(csv.reader(io.StringIO(store.index_csv(runs))))
    assert '\'=HYPERLINK("http://evil.invalid","x")' in header and "'@SUM(1+1)" in header
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in header + row), (header, row)
    assert row[header.index("playbook")] == _csv_cells.neutralised(runs[0]["playbook"])
    assert row[header.index("path")] == "''/srv/store/r1"      # the one rule quotes a leading quote too


# ---------------------------------------------------------------------------------------------
# publish


def test_two_runs_pass_then_fail(tmp_path):
    root = str(tmp_path / "store")
    first = publish(root, "20261126T030000Z-awx1", True)
    second = publish(root, "20261126T040000Z-awx2", False)

    for result, run_id in ((first, "20261126T030000Z-awx1"), (second, "20261126T040000Z-awx2")):
        run_dir = os.path.join(root, run_id)
        assert result["run_dir"] == run_dir
        assert sorted(os.listdir(run_dir)) == sorted(["SHA256SUMS", "SHA256SUMS.hmac", "report.json", *FILES])
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
    assert store.query(root) == {"last_pass": None, "latest": None, "runs": 0, "warnings": []}     # not made yet
    os.mkdir(root)
    assert store.query(root) == {"last_pass": None, "latest": None, "runs": 0, "warnings": []}
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
# what may become the baseline: signed, passed, the whole fleet


@pytest.mark.parametrize("signed, scope, passed, moves", [
    (True, "full", True, True), (True, "merge", True, True), (True, "partial", True, False),
    (False, "full", True, False), (True, "full", False, False),
], ids=["signed-full", "signed-merge", "partial", "unsigned", "failed"])
def test_only_a_signed_passing_full_run_or_merge_moves_last_pass(tmp_path, signed, scope, passed, moves):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    result = publish(root, "r2", passed, signed=signed, scope=scope)
    assert result["entry"]["scope"] == scope and result["entry"]["signed"] is signed
    assert os.readlink(os.path.join(root, "last-pass")) == ("r2" if moves else "r1")
    assert os.readlink(os.path.join(root, "latest")) == "r2"
    assert os.path.exists(os.path.join(root, "r2", "SHA256SUMS.hmac")) is signed


def test_files_changed_after_the_controller_checksummed_them_are_refused(tmp_path):
    root = str(tmp_path / "store")
    upload = incoming(root, "r1", True)
    sealed = _baseline_trust.seal(KEY, upload, "r1", "full")
    with open(os.path.join(upload, "results.csv"), "a", encoding="utf-8") as handle:
        handle.write("rack6-n02,dd_seq_write\n")
    with pytest.raises(StoreError, match="not the ones the controller checksummed"):
        store.publish(root, "r1", sums=sealed["sums"], signature=sealed["signature"])
    assert not os.path.lexists(os.path.join(root, "r1"))


@pytest.mark.parametrize("field, value", [("run_id", "r9"), ("scope", "partial"), ("passed", False)])
def test_a_signature_about_another_run_scope_or_verdict_is_refused(tmp_path, field, value):
    root = str(tmp_path / "store")
    upload = incoming(root, "r1", True)
    sealed = _baseline_trust.seal(KEY, upload, "r1", "full")
    arguments = {"run_id": "r1", "scope": "full", "passed": True, "sums": sealed["sums"], field: value}
    forged = _baseline_trust.sign(KEY, **arguments)
    with pytest.raises(StoreError, match="the signature names %s" % field):
        store.publish(root, "r1", sums=sealed["sums"], signature=forged)


def test_retention_keeps_partial_runs_until_a_merge_names_them(tmp_path):
    """keep=2 and three slices: none is pruned before the merge; once the merge names their report.json digests, the
    oldest beyond keep go (the merge itself and latest stay)."""
    root = str(tmp_path / "store")
    for run_id in ("s1", "s2", "s3"):
        assert publish(root, run_id, True, scope="partial", keep=2)["pruned"] == []
    digests = [run["report_sha256"] for run in index(root)]
    result = publish(root, "m1", True, scope="merge", keep=2, merged=digests)
    assert result["pruned"] == ["s1", "s2"]
    assert [run["run_id"] for run in index(root)] == ["s3", "m1"]
    assert os.readlink(os.path.join(root, "last-pass")) == "m1"


def test_a_partial_run_no_merge_named_is_kept_a_week_then_pruned_as_any_run(tmp_path):
    root = str(tmp_path / "store")
    start = 1795000000.0
    publish(root, "s1", True, scope="partial", keep=1, now=start)
    assert publish(root, "r2", False, keep=1, now=start + 3600)["pruned"] == []
    assert publish(root, "r3", False, keep=1, now=start + store.PENDING_MERGE_S + 3600)["pruned"] == ["s1", "r2"]


def test_query_names_the_hosts_an_earlier_passing_run_measured_and_the_baseline_did_not(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True)
    upload = incoming(root, "r2", True)
    report = rack6(True)
    report["hosts"] = {host: status for host, status in report["hosts"].items() if host != "rack6-n06"}
    report["results"] = [entry for entry in report["results"] if entry["host"] != "rack6-n06"]
    with open(os.path.join(upload, "report.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    sealed_publish(root, "r2")
    found = store.query(root)["last_pass"]
    assert found["run_id"] == "r2" and found["hosts_missing"] == {"rack6-n06": "r1"}
    assert found["signature"].startswith("diskproof-store-signature: 1\nrun_id: r2\n")
    assert found["sums"] == open(os.path.join(root, "r2", "SHA256SUMS"), encoding="utf-8").read()


def test_pick_signs_a_run_and_points_last_pass_at_it(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True, signed=False)
    assert not os.path.lexists(os.path.join(root, "last-pass"))
    found = store.query(root, "r1")["last_pass"]
    signature = _baseline_trust.sign(KEY, "r1", "full", True, found["sums"])
    result = store.pick(root, "r1", signature)
    assert result["previous"] is None and os.readlink(os.path.join(root, "last-pass")) == "r1"
    assert index(root)[0]["signed"] is True
    assert store.query(root)["last_pass"]["signature"] == signature


def test_pick_refuses_a_run_whose_files_changed_a_failed_or_a_partial_run(tmp_path):
    root = str(tmp_path / "store")
    publish(root, "r1", True, signed=False)
    publish(root, "r2", False, signed=False)
    publish(root, "r3", True, scope="partial")
    with open(os.path.join(root, "r1", "report.md"), "a", encoding="utf-8") as handle:
        handle.write("edited\n")
    with pytest.raises(StoreError, match="files of run r1 do not match its SHA256SUMS"):
        store.query(root, "r1")
    with pytest.raises(StoreError, match="index.json says run r2 did not pass"):
        store.query(root, "r2")
    with pytest.raises(StoreError, match="index.json says run r3 is a partial run"):
        store.query(root, "r3")


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
        if target == run_id:             # the run directory moved into the store (renamed between descriptors)
            os.kill(os.getpid(), signum)

    os.rename = rename_then_signal   # in the forked child only
    incoming(root, run_id, True)
    sealed_publish(root, run_id)
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
