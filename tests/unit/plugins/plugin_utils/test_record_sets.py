"""Record sets (plugins/plugin_utils/_record_sets.py): a run's report.json read back as the records and host
outcomes it judged, indexed by host, each host's records read again by byte range, and the task result that
makes the report callback see the host as in its own run.

Fixtures are real report.json files the callback wrote (tests/fixtures/report/*.src.md): lab-rack6-report.json
(schema 1, pretty-printed: any JSON layout is read) and lab-slc-problems-report.json (schema 2, the callback's
own layout; a host that failed and one that was unreachable). Bad record sets are derived from them here.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _record_sets
from ansible_collections.diskproof.fleet.plugins.plugin_utils._record_sets import RecordSetError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "report"
RACK6 = FIXTURES / "lab-rack6-report.json"
PROBLEMS = FIXTURES / "lab-slc-problems-report.json"
VERSION = "0.1.0"


def records_by_host(path: Path) -> dict:
    report = json.loads(path.read_text())
    found: dict = {}
    for entry in report["results"]:
        if entry["record"] is not None:
            found.setdefault(entry["host"], []).append(entry["record"])
    return found


def copy_to(tmp_path: Path, source: Path, name: str) -> str:
    target = tmp_path / name / "report.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    return str(target)


def rewritten(tmp_path: Path, source: Path, change) -> str:
    report = json.loads(source.read_text())
    change(report)
    target = tmp_path / "changed.json"
    target.write_text(json.dumps(report))
    return str(target)


@pytest.mark.parametrize("fixture", [RACK6, PROBLEMS], ids=["schema1-pretty", "schema2-callback-layout"])
def test_every_host_is_indexed_and_its_records_read_back_exactly(fixture):
    entries = _record_sets.index_record_sets([str(fixture)], VERSION)
    expected = records_by_host(fixture)
    report = json.loads(fixture.read_text())
    assert [entry["host"] for entry in entries] == sorted(report["hosts"])
    for entry in entries:
        assert entry["spans"] is not None  # ASCII: the host's byte ranges, not the whole file, are read again
        assert entry["status"] == report["hosts"][entry["host"]]["status"]
        assert entry["problems"] == report["hosts"][entry["host"]]["problems"]
        assert _record_sets.host_records(entry) == expected.get(entry["host"], [])


def test_the_problem_hosts_keep_status_and_message():
    entries = {entry["host"]: entry for entry in _record_sets.index_record_sets([str(PROBLEMS)], VERSION)}
    assert {host: entry["status"] for host, entry in entries.items()} == {
        "slc-n07": "ok", "slc-n08": "ok", "slc-n10": "ok", "slc-n11": "failed", "slc-n12": "unreachable"}
    assert entries["slc-n11"]["records"] == 0 and entries["slc-n12"]["records"] == 0
    assert "/dev/loop99: No such file or directory" in entries["slc-n11"]["problems"][0]["message"]


def test_directories_globs_and_the_same_file_twice(tmp_path):
    one = copy_to(tmp_path, RACK6, "slice1")
    assert _record_sets.record_set_files([str(tmp_path / "slice1"), str(tmp_path / "*" / "report.json"), one]) == [
        os.path.realpath(one)]


@pytest.mark.parametrize(("specs", "message"), [
    ([], "no record set to merge"),
    ("a/report.json", "must be a list"),
    (["{tmp}/nothing-*.json"], "the pattern matches nothing"),
    (["{tmp}/missing.json"], "missing.json: no such file"),
    (["{tmp}"], "the directory holds no report.json"),
])
def test_record_sets_that_are_not_there_are_named(tmp_path, specs, message):
    if isinstance(specs, list):
        specs = [spec.format(tmp=tmp_path) for spec in specs]
    with pytest.raises(RecordSetError, match=message):
        _record_sets.record_set_files(specs)


def test_a_host_in_two_record_sets_is_refused_naming_both_files(tmp_path):
    first, second = copy_to(tmp_path, RACK6, "site-a"), copy_to(tmp_path, RACK6, "site-b")
    with pytest.raises(RecordSetError) as caught:
        _record_sets.index_record_sets([first, second], VERSION)
    assert "host rack6-n01 is in two record sets, %s and %s" % (first, second) in str(caught.value)
    assert str(caught.value).count("is in two record sets") == 6


@pytest.mark.parametrize(("change", "message"), [
    (lambda report: report.update(report_schema=3), "report_schema 3; this collection merges report schemas 1, 2"),
    (lambda report: report["run"].update(collection_version="1.2.0"),
     "written by diskproof.fleet 1.2.0, this is 0.1.0: .* run the merge with diskproof.fleet 1.x"),
    (lambda report: report["run"].update(collection_version=None), "cannot tell which diskproof.fleet wrote it"),
    (lambda report: report["hosts"]["slc-n07"].update(records=2), "hosts.slc-n07.records says 2, results hold 1"),
    (lambda report: report["hosts"]["slc-n07"].update(status="fine"), "hosts.slc-n07.status is 'fine'"),
    (lambda report: report["hosts"]["slc-n11"].update(problems="bad"), "hosts.slc-n11.problems is not a list"),
    (lambda report: report["hosts"].pop("slc-n07"), "names host 'slc-n07', which is not in its hosts section"),
    (lambda report: report.pop("hosts"), "no hosts or results"),
])
def test_a_damaged_or_foreign_record_set_is_refused(tmp_path, change, message):
    with pytest.raises(RecordSetError, match=message):
        _record_sets.index_record_sets([rewritten(tmp_path, PROBLEMS, change)], VERSION)


def test_every_problem_of_every_file_is_listed_at_once(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [')
    foreign = rewritten(tmp_path, PROBLEMS, lambda report: report.update(report_schema=9))
    with pytest.raises(RecordSetError) as caught:
        _record_sets.index_record_sets([str(broken), foreign], VERSION)
    assert "broken.json: not a report.json" in str(caught.value) and "report_schema 9" in str(caught.value)


def test_a_file_changed_after_the_index_is_not_replayed(tmp_path):
    path = copy_to(tmp_path, PROBLEMS, "slice")
    entry = next(entry for entry in _record_sets.index_record_sets([path], VERSION) if entry["host"] == "slc-n07")
    with open(path, "a", encoding="ascii") as stream:
        stream.write(" ")
    with pytest.raises(RecordSetError, match="changed after the merge indexed it"):
        _record_sets.host_records(entry)


def test_a_same_length_edit_with_its_modification_time_put_back_is_not_replayed(tmp_path):
    """Size and mtime alone let a same-length edit through once os.utime put the time back: read_iops 201.4 became
    901.4 unnoticed. The change time (which utime itself moves) and the inode are checked too."""
    path = copy_to(tmp_path, RACK6, "slice")
    entry = next(entry for entry in _record_sets.index_record_sets([path], VERSION) if entry["host"] == "rack6-n04")
    before = os.stat(path)
    text = Path(path).read_text()
    assert text.count('"read_iops": 201.406886') == 1
    Path(path).write_text(text.replace('"read_iops": 201.406886', '"read_iops": 901.406886'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(RecordSetError, match="changed after the merge indexed it"):
        _record_sets.host_records(entry)


def test_a_record_set_replaced_by_another_file_is_not_replayed(tmp_path):
    """The same bytes, size and mtime in a new file renamed over the indexed one: another inode, refused."""
    path = copy_to(tmp_path, RACK6, "slice")
    entry = next(entry for entry in _record_sets.index_record_sets([path], VERSION) if entry["host"] == "rack6-n01")
    before = os.stat(path)
    shutil.copy2(path, path + ".new")
    os.utime(path + ".new", ns=(before.st_atime_ns, before.st_mtime_ns))
    os.rename(path + ".new", path)
    with pytest.raises(RecordSetError, match="changed after the merge indexed it"):
        _record_sets.host_records(entry)


def test_a_record_set_over_the_size_cap_is_refused(tmp_path, monkeypatch):
    """Indexing holds a whole file and its parsed entries in memory (17 MB: +139 MB peak): a file over the cap is
    refused before it is read, naming its size, the cap and what to do."""
    path = copy_to(tmp_path, RACK6, "big")
    size = os.path.getsize(path)
    monkeypatch.setattr(_record_sets, "RECORD_SET_MAX_BYTES", size - 1, raising=False)
    with pytest.raises(RecordSetError, match=r"is %d bytes, more than the %d a record set may hold" % (size, size - 1)) \
            as caught:
        _record_sets.index_record_sets([path], VERSION)
    assert "diskproof_record_sets_max_bytes" in str(caught.value)


def test_a_span_that_is_not_the_hosts_is_refused(tmp_path):
    entries = {entry["host"]: entry for entry in _record_sets.index_record_sets([str(PROBLEMS)], VERSION)}
    forged = dict(entries["slc-n07"], spans=entries["slc-n08"]["spans"])
    with pytest.raises(RecordSetError, match="is not one of slc-n07's"):
        _record_sets.host_records(forged)


def test_a_non_ascii_file_is_read_whole(tmp_path):
    path = rewritten(tmp_path, PROBLEMS, lambda report: report["run"].update(controller_hostname="contrôleur"))
    Path(path).write_text(json.dumps(json.loads(Path(path).read_text()), ensure_ascii=False), encoding="utf-8")
    entry = next(entry for entry in _record_sets.index_record_sets([path], VERSION) if entry["host"] == "slc-n08")
    assert entry["spans"] is None
    assert _record_sets.host_records(entry) == records_by_host(PROBLEMS)["slc-n08"]


def test_an_entry_must_be_the_hosts_own():
    entry = _record_sets.index_record_sets([str(PROBLEMS)], VERSION)[0]
    with pytest.raises(RecordSetError, match="is host slc-n07's entry, not slc-n08's"):
        _record_sets.check_host_entry(entry, "slc-n08")
    with pytest.raises(RecordSetError, match="passed unchanged"):
        _record_sets.check_host_entry({"host": "slc-n07"}, "slc-n07")


def replayed(host: str) -> dict:
    entry = next(entry for entry in _record_sets.index_record_sets([str(PROBLEMS)], VERSION) if entry["host"] == host)
    return _record_sets.replay_result(entry, _record_sets.host_records(entry))


def test_an_ok_host_returns_its_records_as_bench_facts_did():
    result = replayed("slc-n07")
    assert result["ansible_facts"] == {"diskproof_results": records_by_host(PROBLEMS)["slc-n07"]}
    assert not result.get("failed") and not result.get("unreachable") and result["changed"] is False


def test_a_failed_host_fails_again_with_its_message():
    result = replayed("slc-n11")
    assert result["failed"] is True and "ansible_facts" not in result
    assert result["msg"] == json.loads(PROBLEMS.read_text())["hosts"]["slc-n11"]["problems"][0]["message"]


def test_an_unreachable_host_is_unreachable_again_with_its_message():
    result = replayed("slc-n12")
    assert result["unreachable"] is True and not result.get("failed")
    assert result["msg"].startswith('Data could not be sent to remote host "10.231.80.22"')


def test_failed_with_records_and_several_problems():
    records = [{"schema": 1, "test": "dd_seq_read", "error": "dd failed"}]
    entry = {"host": "h", "source": "s.json", "status": "failed", "problems": [], "records": 1,
             "collection_version": VERSION}
    result = _record_sets.replay_result(entry, records)
    assert result["failed"] is True and result["ansible_facts"]["diskproof_results"] == records
    assert "warnings" not in result
    problems = [{"task": "t1", "status": "failed", "message": "m1"},
                {"task": "t2", "status": "unreachable", "message": "m2"}]
    result = _record_sets.replay_result(dict(entry, status="unreachable", problems=problems, records=0), [])
    assert result["unreachable"] is True and result["msg"] == "m2"
    assert "warnings" not in result and result["diskproof_replay"]["problems"] == problems
