"""playbooks/merge.yml with the real ansible-playbook and the report callback enabled, on the controller only:
the action diskproof.fleet.report reads the record sets and has the report pipeline judge them once, with no
host replayed and no task per host.

Record sets: real report.json files the callback wrote (tests/fixtures/report/*.src.md), split by host here
into several record sets as slices would hold them (derived files, marked so in each test).
Proves: a merge of a run split 3 ways judges byte for byte as the same run merged whole, and as the
run itself for everything the callback judged; failed and unreachable hosts keep their status and original
messages; a host in two record sets stops the merge naming both files.
No lab, no root: nothing is contacted (the hosts of the record sets do not exist here).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "report"
RACK6 = FIXTURES / "lab-rack6-report.json"
PROBLEMS = FIXTURES / "lab-slc-problems-report.json"
MERGE = REPO / "playbooks" / "merge.yml"
BIN = Path(sys.executable).parent


def merge(tmp_path: Path, record_sets: list, name: str = "merged", *extra: str) -> tuple:
    """(exit code, output, report.json path) of merge.yml over record_sets."""
    report_dir = tmp_path / name
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "DISKPROOF_"))}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".ansible" / "collections"),
               ANSIBLE_CALLBACKS_ENABLED="diskproof.fleet.report", DISKPROOF_REPORT_DIR=str(report_dir),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               # Nothing in the user's home: ansible's own files and the local connection's temp dirs here.
               ANSIBLE_HOME=str(tmp_path / ".ansible"), ANSIBLE_REMOTE_TMP=str(tmp_path / ".ansible" / "remote_tmp"))
    argv = [str(BIN / "ansible-playbook"), str(MERGE),
            "-e", json.dumps({"diskproof_record_sets": [str(path) for path in record_sets]})]
    argv += list(extra)
    result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result.returncode, result.stdout + result.stderr, report_dir / "report.json"


def split(tmp_path: Path, source: Path, parts: list) -> list:
    """Derived record sets: source's report.json cut into one file per list of hosts (hosts and results)."""
    report = json.loads(source.read_text())
    paths = []
    for index, hosts in enumerate(parts):
        part = dict(report, hosts={host: report["hosts"][host] for host in hosts},
                    results=[entry for entry in report["results"] if entry["host"] in hosts])
        path = tmp_path / ("slice%d" % (index + 1)) / "report.json"
        path.parent.mkdir()
        path.write_text(json.dumps(part))
        paths.append(path)
    return paths


def judgement_lines(path: Path) -> list:
    """report.json's lines but the run metadata (when, which playbook): the judgement, byte for byte."""
    return [line for line in path.read_bytes().split(b"\n") if not line.startswith(b'"run":')]


def test_a_run_split_three_ways_merges_byte_for_byte_as_the_run_merged_whole(tmp_path):
    hosts = sorted(json.loads(RACK6.read_text())["hosts"])
    slices = split(tmp_path, RACK6, [hosts[0:2], hosts[2:4], hosts[4:6]])
    code, output, whole = merge(tmp_path, [RACK6], "whole")
    assert code == 0 and whole.exists(), output
    code, output, merged = merge(tmp_path, [slices[0], tmp_path / "slice2", str(tmp_path / "slice3" / "*.json")])
    assert code == 0 and merged.exists(), output
    assert judgement_lines(merged) == judgement_lines(whole)
    report = json.loads(merged.read_text())
    assert report["run"]["playbook"] == "merge.yml" and report["run"]["targeted_hosts"] == 6
    # One fleet: the slow host is an outlier against all six, as in the run the record sets came from.
    assert sorted((entry["host"], entry["test"]) for entry in report["results"] if entry["verdict"] == "outlier") == [
        ("rack6-n04", "dd_seq_read"), ("rack6-n04", "dd_seq_write"), ("rack6-n04", "fio_rand_read")]
    assert [group["measured"] for group in report["groups"]] == [6, 6, 6]


def test_failed_and_unreachable_hosts_keep_their_status_and_original_messages(tmp_path):
    original = json.loads(PROBLEMS.read_text())
    slices = split(tmp_path, PROBLEMS, [["slc-n07", "slc-n08", "slc-n11"], ["slc-n10", "slc-n12"]])
    code, output, merged = merge(tmp_path, slices)
    # Nothing is replayed: the merge judges, and fails only on findings when asked to (diskproof_fail_on_findings).
    assert code == 0, output
    assert "FAILED!" not in output and "UNREACHABLE!" not in output
    report = json.loads(merged.read_text())
    for host in ("slc-n11", "slc-n12"):
        judged, before = report["hosts"][host], original["hosts"][host]
        assert judged["status"] == before["status"] and judged["records"] == 0
        assert judged["problems"] == before["problems"]  # task, status and message as in the run
    # Every verdict and reason as in the run, the failed host's included (its original task named).
    verdicts = {(entry["host"], entry["test"]): (entry["verdict"], entry["reason"]) for entry in report["results"]}
    assert verdicts == {(entry["host"], entry["test"]): (entry["verdict"], entry["reason"]) for entry in original["results"]}
    # The merged fleet's table is shown, as a run's is.
    assert "diskproof fleet report: 5 results, 5 hosts" in output


@pytest.mark.parametrize("given_twice", ["a-copy-of-a-slice", "a-slice-and-the-whole-run"])
def test_a_host_in_two_record_sets_stops_the_merge_naming_both_files(tmp_path, given_twice):
    slices = split(tmp_path, PROBLEMS, [["slc-n07", "slc-n08"], ["slc-n10", "slc-n11", "slc-n12"]])
    if given_twice == "a-copy-of-a-slice":
        other = tmp_path / "copy" / "report.json"
        other.parent.mkdir()
        other.write_bytes(slices[0].read_bytes())
        record_sets = [slices[0], slices[1], other]
    else:
        other = PROBLEMS
        record_sets = [slices[0], other]
    code, output, merged = merge(tmp_path, record_sets)
    assert code == 2, output
    flat = " ".join(output.split())
    for host in ("slc-n07", "slc-n08"):
        assert "host %s is in two record sets, %s and %s" % (host, slices[0], other) in flat, output
    assert not merged.exists()


def test_the_record_sets_slices_publish_as_variables_are_merged(tmp_path):
    """The AWX route: each slice hands its report.json on as diskproof_record_set_<job id> (set_stats), and the
    merge node of the workflow receives them all as extra variables."""
    hosts = sorted(json.loads(RACK6.read_text())["hosts"])
    slices = split(tmp_path, RACK6, [hosts[0:3], hosts[3:6]])
    code, output, merged = merge(tmp_path, [], "merged", "-e", "diskproof_record_set_101=%s" % slices[0],
                                 "-e", "diskproof_record_set_102=%s" % slices[1].parent)
    assert code == 0, output
    code, output, whole = merge(tmp_path, [RACK6], "whole")
    assert code == 0, output
    assert judgement_lines(merged) == judgement_lines(whole)


def test_nothing_to_merge_says_what_to_give(tmp_path):
    code, output, merged = merge(tmp_path, [])
    assert code == 2 and not merged.exists(), output
    assert "no record set to merge" in " ".join(output.split())


def test_a_host_targeted_without_a_record_is_not_measured_again(tmp_path):
    """Derived record set: slc-n07 targeted but its record removed (hosts.records 0), as when a host's play ran
    but produced nothing."""
    report = json.loads(PROBLEMS.read_text())
    report["hosts"]["slc-n07"]["records"] = 0
    report["results"] = [entry for entry in report["results"] if entry["host"] != "slc-n07"]
    path = tmp_path / "set" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(report))
    code, output, merged = merge(tmp_path, [path])
    assert merged.exists(), output
    entries = [entry for entry in json.loads(merged.read_text())["results"] if entry["host"] == "slc-n07"]
    assert [(entry["verdict"], entry["reason"]) for entry in entries] == [
        ("not_measured", "no diskproof_results record from this host")]
