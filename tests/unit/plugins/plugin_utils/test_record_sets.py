"""Record sets (plugins/plugin_utils/_record_sets.py): runs' report.json read back, each once and whole, as one
Collection of the records and host outcomes they judged, for the report pipeline to judge as one fleet.

Fixtures are real report.json files the callback wrote (tests/fixtures/report/*.src.md): lab-rack6-report.json
(schema 1, pretty-printed: any JSON layout is read) and lab-slc-problems-report.json (schema 2, the callback's
own layout; a host that failed and one that was unreachable). Bad record sets are derived from them here.
"""
from __future__ import annotations

import hashlib
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


def read(paths):
    return _record_sets.read_record_sets([str(path) for path in paths], VERSION)


@pytest.mark.parametrize("fixture", [RACK6, PROBLEMS], ids=["schema1-pretty", "schema2-callback-layout"])
def test_every_host_and_record_is_read_back_exactly(fixture):
    collection, record_sets = read([fixture])
    report = json.loads(fixture.read_text())
    assert sorted(collection.host_statuses) == sorted(report["hosts"])
    for host, status in report["hosts"].items():
        assert collection.host_statuses[host] == {"status": status["status"], "problems": status["problems"]}
    assert {host: [record for record, _facts in kept] for host, kept in collection.by_host.items()} == records_by_host(fixture)
    assert record_sets == [{"path": str(fixture), "sha256": hashlib.sha256(fixture.read_bytes()).hexdigest()}]


def test_the_problem_hosts_keep_status_and_message():
    statuses = read([PROBLEMS])[0].host_statuses
    assert {host: status["status"] for host, status in statuses.items()} == {
        "slc-n07": "ok", "slc-n08": "ok", "slc-n10": "ok", "slc-n11": "failed", "slc-n12": "unreachable"}
    assert "/dev/loop99: No such file or directory" in statuses["slc-n11"]["problems"][0]["message"]


def test_several_record_sets_are_one_collection(tmp_path):
    report = json.loads(RACK6.read_text())
    parts = []
    for index, hosts in enumerate((["rack6-n01", "rack6-n02"], ["rack6-n03", "rack6-n04", "rack6-n05", "rack6-n06"])):
        path = tmp_path / ("part%d.json" % index)
        path.write_text(json.dumps(dict(report, hosts={host: report["hosts"][host] for host in hosts},
                                        results=[entry for entry in report["results"] if entry["host"] in hosts])))
        parts.append(path)
    collection, record_sets = read(parts)
    whole = read([RACK6])[0]
    assert collection.host_statuses == whole.host_statuses
    assert {host: [record for record, _facts in kept] for host, kept in collection.by_host.items()} == \
        {host: [record for record, _facts in kept] for host, kept in whole.by_host.items()}
    assert [item["path"] for item in record_sets] == [str(path) for path in parts]


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
        read([first, second])
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
    (lambda report: report["results"][0].update(record="text"), r"results\[0\].record is not a mapping"),
    (lambda report: report.pop("hosts"), "no hosts or results"),
])
def test_a_damaged_or_foreign_record_set_is_refused(tmp_path, change, message):
    with pytest.raises(RecordSetError, match=message):
        read([rewritten(tmp_path, PROBLEMS, change)])


def test_every_problem_of_every_file_is_listed_at_once(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [')
    foreign = rewritten(tmp_path, PROBLEMS, lambda report: report.update(report_schema=9))
    listed = tmp_path / "listed.json"
    listed.write_text("[]")
    with pytest.raises(RecordSetError) as caught:
        read([broken, foreign, listed])
    assert "broken.json: not a report.json" in str(caught.value) and "report_schema 9" in str(caught.value)
    assert "listed.json: not a report.json (a list)" in str(caught.value)


def test_a_record_set_over_the_size_cap_is_refused(tmp_path, monkeypatch):
    """Reading holds a whole file and its parsed records in memory (about 8 times its size): a file over the cap is
    refused before it is read, naming its size, the cap and what to do."""
    path = copy_to(tmp_path, RACK6, "big")
    size = os.path.getsize(path)
    monkeypatch.setattr(_record_sets, "RECORD_SET_MAX_BYTES", size - 1, raising=False)
    with pytest.raises(RecordSetError, match=r"is %d bytes, more than the %d a record set may hold" % (size, size - 1)) \
            as caught:
        read([path])
    assert "diskproof_record_sets_max_bytes" in str(caught.value)


def test_the_digest_is_of_the_bytes_read(tmp_path):
    """One read per file: the sha256 a merge publishes is of the text it judged, however the file changes later."""
    path = tmp_path / "slice.json"
    path.write_text(RACK6.read_text().replace('"read_iops": 201.406886', '"read_iops": 901.406886'))
    collection, record_sets = read([path])
    judged = [record for record, _facts in collection.by_host["rack6-n04"] if record["test"] == "fio_rand_read"]
    assert judged[0]["metrics"]["read_iops"] == 901.406886
    assert record_sets[0]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
