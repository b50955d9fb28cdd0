"""The report_store module through AnsibleModule on real temporary directories: incoming -> published -> query
-> picked with the real report.json of tests/fixtures/report/lab-rack6-report.json (summary.passed set, as the
current callback writes it), signed as the controller signs it (a throwaway key), check mode, and the refusals
that leave the store as it was."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import report_store
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _baseline_trust

HERE = os.path.dirname(os.path.abspath(__file__))
RACK6 = os.path.join(HERE, "..", "..", "..", "fixtures", "report", "lab-rack6-report.json")
KEY = b"a throwaway store key of issue 31's tests, 32+ characters"


def run_module(capsys, check_mode=False, **args):
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            report_store.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def upload(capsys, root, run_id, passed):
    code, result = run_module(capsys, path=root, state="incoming", run_id=run_id)
    assert code == 0, result
    with open(RACK6, encoding="utf-8") as handle:
        report = json.load(handle)
    report["summary"]["passed"] = passed
    with open(os.path.join(result["incoming"], "report.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    return result


def test_incoming_published_query(tmp_path, capsys):
    root = str(tmp_path / "store")
    code, result = run_module(capsys, path=root, state="query")
    assert code == 0 and result["report_json"] is None and not os.path.exists(root)
    sealed = _baseline_trust.seal(KEY, upload(capsys, root, "r1", True)["incoming"], "r1", "full")
    code, result = run_module(capsys, path=root, state="published", run_id="r1", keep=5, sums=sealed["sums"],
                              signature=sealed["signature"])
    assert code == 0, result
    assert result["changed"] is True and result["run_dir"] == os.path.join(root, "r1")
    assert result["latest"] == result["last_pass"] == "r1" and result["pruned"] == []
    assert result["entry"]["passed"] is True and result["entry"]["counts"]["outlier"] == 3
    assert result["msg"] == "published run r1 (passed, full, signed); latest and last-pass point to it"
    sealed = _baseline_trust.seal(KEY, upload(capsys, root, "r2", False)["incoming"], "r2", "full")
    code, result = run_module(capsys, path=root, state="published", run_id="r2", sums=sealed["sums"],
                              signature=sealed["signature"])
    assert code == 0 and result["last_pass"] == "r1"
    assert result["msg"].endswith("latest points to it; last-pass stays on r1 (it did not pass)")
    upload(capsys, root, "r3", True)
    code, result = run_module(capsys, path=root, state="published", run_id="r3", scope="partial")
    assert result["msg"] == ("published run r3 (passed, partial, unsigned); latest points to it; last-pass stays on "
                             "r1 (it is unsigned)")

    code, result = run_module(capsys, path=root, state="query")
    assert code == 0 and result["changed"] is False
    assert result["report_json"] == os.path.join(root, "r1", "report.json")
    assert result["last_pass"] == "r1" and result["latest"] == "r3" and result["runs"] == 3
    assert len(result["sha256"]) == 64 and result["signature"].startswith("diskproof-store-signature: 1\nrun_id: r1\n")
    assert result["entry"]["scope"] == "full" and "%s  report.json\n" % result["sha256"] in result["sums"]

    # r2 did not pass: no run can make it the baseline; a signed pick of r1 again is accepted.
    code, result = run_module(capsys, path=root, state="query", run_id="r2")
    assert code == 1 and "index.json says run r2 did not pass" in result["msg"]
    code, found = run_module(capsys, path=root, state="query", run_id="r1")
    assert code == 0 and found["last_pass"] == "r1"
    signature = _baseline_trust.sign(KEY, "r1", "full", True, found["sums"])
    code, result = run_module(capsys, path=root, state="picked", run_id="r1", signature=signature)
    assert code == 0 and result["msg"].startswith("run r1 signed and made the baseline"), result


def test_query_of_an_empty_store(tmp_path, capsys):
    root = tmp_path / "store"
    root.mkdir()
    code, result = run_module(capsys, path=str(root), state="query", _ansible_check_mode=True)
    assert code == 0 and result["report_json"] is None and result["last_pass"] is None
    assert result["msg"] == "no run in the store is a baseline yet"


def test_check_mode_changes_nothing(tmp_path, capsys):
    root = str(tmp_path / "store")
    code, result = run_module(capsys, check_mode=True, path=root, state="incoming", run_id="r1")
    assert code == 0 and result["changed"] is True and not os.path.exists(root)
    upload(capsys, root, "r1", True)
    code, result = run_module(capsys, check_mode=True, path=root, state="published", run_id="r1")
    assert code == 0 and result["changed"] is True
    assert sorted(os.listdir(root)) == [".incoming"]


def test_a_file_where_the_store_should_be_is_refused(tmp_path, capsys):
    root = tmp_path / "store"
    root.write_text("not a store")
    code, result = run_module(capsys, path=str(root), state="incoming", run_id="r1")
    assert code == 1 and result["failed"] is True
    assert result["msg"] == ("diskproof_report_store %s is not a directory; point diskproof_report_store at a "
                             "directory (or remove what is there)" % root)
    assert root.read_text() == "not a store"


@pytest.mark.parametrize("args, says", [
    (dict(state="published"), "state is published but all of the following are missing: run_id"),
    (dict(state="incoming", run_id="latest"), "is reserved"),
    (dict(state="published", run_id="r1", keep=-1), "keep must be 0"),
    (dict(state="published", run_id="r9"), "is not there: copy the run's files into it first"),
])
def test_refusals(tmp_path, capsys, args, says):
    root = tmp_path / "store"
    root.mkdir()
    code, result = run_module(capsys, path=str(root), **args)
    assert code == 1 and says in result["msg"], result
    assert os.listdir(root) in ([], [".incoming"])
    shutil.rmtree(root)
