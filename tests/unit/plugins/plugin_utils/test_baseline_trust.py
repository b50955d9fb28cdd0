"""plugins/plugin_utils/_baseline_trust.py: the store key, the signature of a run's SHA256SUMS, the checks of a
baseline before it is used, and the hosts a baseline lacks. On real files: a real local store
(module_utils/_store.py) and the real report.json of tests/fixtures/report/lab-rack6-report.json; keys are
throwaway ones."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _store as store
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _baseline_trust as trust
from ansible_collections.diskproof.fleet.plugins.plugin_utils._baseline_trust import TrustError

RACK6 = Path(__file__).resolve().parents[3] / "fixtures" / "report" / "lab-rack6-report.json"
KEY = "0f" * 32
OTHER_KEY = "a1" * 32


def key_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "store.key"
    path.write_text(text + "\n")
    path.chmod(mode)
    return str(path)


# ---------------------------------------------------------------------------------------------
# the key


def test_the_key_comes_from_the_first_source_set(tmp_path):
    path = key_file(tmp_path, KEY)
    assert trust.store_key({}, {}) is None
    assert trust.store_key({}, {"DISKPROOF_STORE_KEY_FILE": path}) == (KEY.encode(), "environment DISKPROOF_STORE_KEY_FILE")
    assert trust.store_key({}, {"DISKPROOF_STORE_KEY": OTHER_KEY, "DISKPROOF_STORE_KEY_FILE": path})[0] == \
        OTHER_KEY.encode()
    assert trust.store_key({"diskproof_store_key_file": path}, {"DISKPROOF_STORE_KEY": OTHER_KEY})[1] == \
        "variable diskproof_store_key_file"
    assert trust.store_key({"diskproof_store_key": OTHER_KEY, "diskproof_store_key_file": path}, {})[0] == \
        OTHER_KEY.encode()


@pytest.mark.parametrize("text, mode, says", [
    (KEY, 0o644, "has mode 0644: others may read it; chmod 600"),
    ("short", 0o600, "fewer than 32"),
], ids=["readable-by-others", "too-short"])
def test_a_key_file_others_can_read_or_a_short_key_is_refused(tmp_path, text, mode, says):
    with pytest.raises(TrustError, match=says):
        trust.store_key({"diskproof_store_key_file": key_file(tmp_path, text, mode)}, {})


def test_the_key_id_names_the_key_without_revealing_it():
    assert trust.key_id(KEY.encode()) != trust.key_id(OTHER_KEY.encode())
    assert len(trust.key_id(KEY.encode())) == 16 and KEY[:16] not in trust.key_id(KEY.encode())


# ---------------------------------------------------------------------------------------------
# a store with one signed run, its query, and the checks


@pytest.fixture
def baseline(tmp_path):
    """(store root, what the store's query returned, a controller copy of the baseline's report.json)."""
    root = str(tmp_path / "store")
    upload = store.prepare_incoming(root, "r1")
    report = json.loads(RACK6.read_text())
    report["summary"]["passed"] = True
    Path(upload, "report.json").write_text(json.dumps(report))
    sealed = trust.seal(KEY.encode(), upload, "r1", "full")
    store.publish(root, "r1", sums=sealed["sums"], signature=sealed["signature"])
    found = dict(store.query(root)["last_pass"])
    copy = tmp_path / "copy" / "r1-report.json"
    copy.parent.mkdir()
    shutil.copyfile(found["report_json"], copy)
    return root, found, str(copy)


def test_a_good_baseline_is_verified_and_its_copy_says_which_run_it_is(baseline):
    root, found, copy = baseline
    carried = trust.verify_baseline((KEY.encode(), "test"), found, copy, root, "localhost")
    assert carried == {"run_id": "r1", "scope": "full", "key_id": trust.key_id(KEY.encode()), "hosts_missing": {}}
    written = json.loads(Path(copy).read_text())
    assert written["store_baseline"] == carried and written["summary"]["passed"] is True


@pytest.mark.parametrize("attack, says", [
    ("resummed", "the SHA256SUMS of run r1 does not match its signature"),
    ("other-key", "does not verify with this controller's store key"),
    ("edited-statement", "does not verify with this controller's store key"),
    ("unsigned", "run r1 (last-pass), has no signature"),
    ("copy-changed", "does not match its SHA256SUMS"),
    ("no-key", "no store key is configured on this controller"),
])
def test_a_baseline_that_cannot_be_trusted_is_refused_saying_how_to_re_sign_or_pick(baseline, attack, says):
    root, found, copy = baseline
    key = (KEY.encode(), "test")
    if attack == "resummed":
        found["sums"] = found["sums"].replace(found["sha256"], "0" * 64)
    elif attack == "other-key":
        key = (OTHER_KEY.encode(), "test")
    elif attack == "edited-statement":
        found["signature"] = found["signature"].replace("scope: full", "scope: merge")
    elif attack == "unsigned":
        found["signature"] = None
    elif attack == "copy-changed":
        Path(copy).write_text(Path(copy).read_text().replace('"passed": true', '"passed": true '))
    else:
        key = None
    before = Path(copy).read_bytes()
    with pytest.raises(TrustError, match=re.escape(says)) as caught:
        trust.verify_baseline(key, found, copy, root, "localhost")
    assert "-e diskproof_baseline_file=PATH" in str(caught.value)
    assert Path(copy).read_bytes() == before


def test_a_run_signed_as_partial_or_failed_is_no_baseline(baseline, tmp_path):
    root, found, copy = baseline
    for scope, passed in (("partial", True), ("full", False)):
        found["signature"] = trust.sign(KEY.encode(), "r1", scope, passed, found["sums"])
        with pytest.raises(TrustError, match="a baseline must have passed and judged the whole fleet"):
            trust.verify_baseline((KEY.encode(), "test"), found, copy, root, "localhost")


def test_the_re_sign_command_names_the_store_host(baseline):
    root, found, copy = baseline
    found["signature"] = None
    with pytest.raises(TrustError) as caught:
        trust.verify_baseline((KEY.encode(), "test"), found, copy, root, "fileserver1")
    assert ("ansible-playbook diskproof.fleet.store_pick -e diskproof_report_store=%s -e diskproof_report_store_pick=r1 "
            "-e diskproof_report_store_host=fileserver1" % root) in str(caught.value)


def test_seal_refuses_a_report_directory_that_holds_the_stores_own_files(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"summary": {"passed": True}}))
    (tmp_path / "SHA256SUMS").write_text("")
    with pytest.raises(TrustError, match="the store writes that file itself"):
        trust.seal(KEY.encode(), str(tmp_path), "r1", "full")


def test_seal_follows_a_symbolic_link_as_the_copy_does(tmp_path):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    (report_dir / "report.json").write_text(json.dumps({"summary": {"passed": False}}))
    (tmp_path / "elsewhere.csv").write_text("a,b\n")
    os.symlink(tmp_path / "elsewhere.csv", report_dir / "results.csv")
    sealed = trust.seal(None, str(report_dir), "r1", "partial")
    assert sealed["signature"] is None and sealed["passed"] is False
    assert "  results.csv\n" in sealed["sums"]


# ---------------------------------------------------------------------------------------------
# the judge: hosts the baseline lacks


def test_lost_baseline_hosts_names_the_run_that_measured_the_host():
    baseline = {"store_baseline": {"run_id": "r5", "hosts_missing": {"n07": "r3"}}}
    reasons = trust.lost_baseline_hosts(baseline)
    assert list(reasons) == ["n07"]
    assert reasons["n07"].startswith("no baseline for this disk and test: the report store's passing run r3 measured "
                                     "this host, the baseline run r5 did not")
    assert trust.lost_baseline_hosts({"results": []}) == {} and trust.lost_baseline_hosts(None) == {}
