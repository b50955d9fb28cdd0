"""The report store's baseline under attack, through the role diskproof.fleet.report_store and real ansible-playbook
runs on the controller (a local store, no lab): the first play takes the baseline as playbooks/baseline.yml does,
the last publishes the run's report directory as playbooks/report.yml does.

Report contents: the real report.json of tests/fixtures/report/lab-rack6-report.json (a lab rack run, 18 results),
with summary.passed set true or false (the fixture predates the key). The store key is a throwaway one in a 0600
file named by DISKPROOF_STORE_KEY_FILE, as an AWX credential's injector would name it.

Each test is one of issue 31's attacks on the baseline: a tampered report.json with its SHA256SUMS recomputed, a
failed run pointed at by last-pass (`ln -sfn`, the remedy the docs once gave), an unsigned last-pass (and the
re-sign that makes it the baseline again), a `--limit` run that took over the whole fleet's baseline, and
retention pruning slices before their merge read them. The same attacks on a lab file server over SSH:
tests/integration/test_report_store.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RACK6 = REPO / "tests" / "fixtures" / "report" / "lab-rack6-report.json"
BIN = Path(sys.executable).parent
STORE_PLAY = [
    {"name": "Baseline from the report store", "hosts": "localhost", "connection": "local", "gather_facts": False,
     "tasks": [
         {"name": "Fetch the last passing run's report.json from the store",
          "ansible.builtin.include_role": {"name": "diskproof.fleet.report_store", "tasks_from": "baseline"}},
         {"name": "Record what the baseline entry point set",
          "ansible.builtin.copy": {
              "content": "{{ {'baseline_file': hostvars['localhost']['diskproof_store_baseline_file'] | default(none),"
                         " 'run_id': hostvars['localhost']['diskproof_store_baseline_run_id'] | default(none)}"
                         " | to_json }}",
              "dest": "{{ record_file }}", "mode": "0644"}}]},
    {"name": "Publish this run", "hosts": "localhost", "connection": "local", "gather_facts": False,
     "tasks": [
         {"name": "Publish the report directory to the store",
          "ansible.builtin.include_role": {"name": "diskproof.fleet.report_store", "tasks_from": "publish"},
          "vars": {"diskproof_report_dir": "{{ publish_dir }}"}}]},
]


class Store:
    """A local store in tmp_path, the runs that use it and the key they sign with."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.path = tmp_path / "store"
        self.key_file = tmp_path / "store.key"
        self.key_file.write_text(hashlib.sha256(b"issue 31 test key").hexdigest() + "\n")
        self.key_file.chmod(0o600)
        (tmp_path / "inventory.json").write_text(json.dumps(
            {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                             "ansible_python_interpreter": sys.executable}}}}))
        (tmp_path / "store-run.yml").write_text(json.dumps(STORE_PLAY))
        self.count = 0

    def env(self, key: bool) -> dict:
        env = {name: value for name, value in os.environ.items() if not name.startswith(("ANSIBLE_", "DISKPROOF_"))}
        env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".ansible" / "collections"),
                   ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False",
                   ANSIBLE_HOME=str(self.tmp / ".ansible"), ANSIBLE_REMOTE_TMP=str(self.tmp / ".ansible" / "tmp"),
                   DISKPROOF_REPORT_DIR=str(self.tmp / "callback"))
        if key:
            env["DISKPROOF_STORE_KEY_FILE"] = str(self.key_file)
        return env

    def report_dir(self, passed: bool) -> Path:
        self.count += 1
        where = self.tmp / ("report%d" % self.count)
        where.mkdir()
        report = json.loads(RACK6.read_text())
        report["summary"]["passed"] = passed
        (where / "report.json").write_text(json.dumps(report, indent=1))
        return where

    def run(self, passed: bool, *args: str, key: bool = True, keep: int = 0) -> tuple:
        """(exit code, output, what the baseline play set) of one scheduled run publishing a report that passed or
        not; args go to ansible-playbook (--limit ...)."""
        record = self.tmp / ("record%d.json" % (self.count + 1))
        argv = [str(BIN / "ansible-playbook"), "-i", str(self.tmp / "inventory.json"), str(self.tmp / "store-run.yml"),
                "-e", "diskproof_report_store=%s" % self.path, "-e", "diskproof_report_store_keep=%d" % keep,
                "-e", "diskproof_report_store_baseline_dir=%s" % (self.tmp / "baselines"),
                "-e", "publish_dir=%s" % self.report_dir(passed), "-e", "record_file=%s" % record, *args]
        (self.tmp / "baselines").mkdir(exist_ok=True)
        result = subprocess.run(argv, cwd=self.tmp, env=self.env(key), capture_output=True, text=True, timeout=300,
                                check=False)
        baseline = json.loads(record.read_text()) if record.exists() else None
        return result.returncode, " ".join((result.stdout + result.stderr).split()), baseline

    def pick(self, run_id: str, key: bool = True) -> tuple:
        argv = [str(BIN / "ansible-playbook"), "-i", str(self.tmp / "inventory.json"),
                str(REPO / "playbooks" / "store_pick.yml"), "-e", "diskproof_report_store=%s" % self.path,
                "-e", "diskproof_report_store_pick=%s" % run_id]
        result = subprocess.run(argv, cwd=self.tmp, env=self.env(key), capture_output=True, text=True, timeout=300,
                                check=False)
        return result.returncode, " ".join((result.stdout + result.stderr).split())

    def runs(self) -> list:
        return [run["run_id"] for run in json.loads((self.path / "index.json").read_text())["runs"]]

    def last_pass(self) -> str:
        return os.readlink(self.path / "last-pass")


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path)


def test_a_tampered_last_pass_with_its_sha256sums_recomputed_is_refused(store):
    """Edited report.json + recomputed SHA256SUMS was accepted: the baseline's write_bytes_per_s became 1.0 and a disk
    that had regressed passed. SHA256SUMS now carries a signature made on the controller with a key the store host
    never sees."""
    code, output, _baseline = store.run(True)
    assert code == 0, output
    first = store.last_pass()
    run_dir = store.path / first
    report = json.loads((run_dir / "report.json").read_text())
    for entry in report["results"]:
        metrics = entry["record"]["metrics"]
        for name in ("write_bytes_per_s", "read_bytes_per_s", "read_iops", "write_iops"):
            if metrics.get(name) is not None:
                metrics[name] = 1.0
    (run_dir / "report.json").write_text(json.dumps(report, indent=1))
    subprocess.run("sha256sum $(sed 's/^[0-9a-f]*  //' SHA256SUMS) > SHA256SUMS.new && mv SHA256SUMS.new SHA256SUMS",
                   shell=True, cwd=run_dir, check=True)
    assert subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=run_dir, check=False).returncode == 0
    code, output, baseline = store.run(True)
    assert code != 0, output
    assert "SHA256SUMS of run %s does not match its signature" % first in output, output
    assert baseline is None


def test_a_failed_run_pointed_at_by_last_pass_is_refused_by_the_baseline(store):
    code, output, _baseline = store.run(True)
    assert code == 0, output
    code, output, _baseline = store.run(False)
    assert code == 0, output
    failed = store.runs()[-1]
    (store.path / "last-pass").unlink()
    (store.path / "last-pass").symlink_to(failed)      # ln -sfn RUN_ID last-pass
    code, output, baseline = store.run(True)
    assert code != 0 and baseline is None, output
    assert "index.json says run %s did not pass" % failed in output, output
    assert "diskproof.fleet.store_pick" in output


def test_an_unsigned_last_pass_is_refused_saying_how_to_re_sign_or_pick_a_run(store):
    """A run published without a key (or by an older diskproof.fleet) is kept but never the baseline; pointed at
    by hand it is refused, naming the way to re-sign it; store_pick re-signs it and the next run takes it."""
    code, output, _baseline = store.run(True, key=False)
    assert code == 0, output
    unsigned = store.runs()[-1]
    if not (store.path / "last-pass").exists():
        (store.path / "last-pass").symlink_to(unsigned)
    code, output, baseline = store.run(True)
    assert code != 0 and baseline is None, output
    assert "run %s (last-pass), has no signature" % unsigned in output, output
    assert ("ansible-playbook diskproof.fleet.store_pick -e diskproof_report_store=%s -e "
            "diskproof_report_store_pick=%s" % (store.path, unsigned)) in output, output
    assert "-e diskproof_baseline_file=" in output

    code, output = store.pick(unsigned)
    assert code == 0, output
    assert store.last_pass() == unsigned
    code, output, baseline = store.run(True)
    assert code == 0, output
    assert baseline["run_id"] == unsigned


def test_no_store_key_publishes_unsigned_runs_that_never_become_the_baseline(store):
    code, output, _baseline = store.run(True, key=False)
    assert code == 0, output
    assert "published without a signature" in output and "DISKPROOF_STORE_KEY_FILE" in output, output
    assert not (store.path / "last-pass").exists()
    assert not (store.path / store.runs()[-1] / "SHA256SUMS.hmac").exists()


def test_a_limit_run_is_a_partial_run_and_never_the_fleet_baseline(store):
    """A slice or a --limit run once became last-pass: the next run had one slice's hosts as its baseline and every
    other disk passed with "no baseline for this disk and test"."""
    code, output, _baseline = store.run(True)
    assert code == 0, output
    full = store.last_pass()
    code, output, _baseline = store.run(True, "--limit", "localhost")
    assert code == 0, output
    partial = store.runs()[-1]
    assert partial != full and store.last_pass() == full
    entry = json.loads((store.path / "index.json").read_text())["runs"][-1]
    assert entry["scope"] == "partial" and entry["passed"] is True
    code, output, baseline = store.run(True)
    assert code == 0, output
    assert baseline["run_id"] == full


def test_retention_keeps_the_slices_a_merge_has_not_read_yet(store):
    """keep smaller than the number of slices pruned a slice before the merge read it."""
    for _slice in range(3):
        code, output, _baseline = store.run(True, "--limit", "localhost", keep=2)
        assert code == 0, output
    assert len(store.runs()) == 3
    assert len([name for name in os.listdir(store.path) if name[0].isdigit()]) == 3


def test_a_merge_of_partial_runs_becomes_the_baseline_and_lets_retention_remove_them(store):
    """Derived record sets: the rack6 report without its slow host (rack6-n04), cut in two slices, each published as a
    --limit run; playbooks/merge.yml over the slices' report.json in the store publishes a merge, which becomes
    last-pass and names the slices it read, so keep=1 removes them then (and not before)."""
    report = json.loads(RACK6.read_text())
    hosts = sorted(host for host in report["hosts"] if host != "rack6-n04")
    for part in (hosts[:3], hosts[3:]):
        where = store.tmp / ("slice-%s" % part[0])
        where.mkdir()
        (where / "report.json").write_text(json.dumps(dict(
            report, hosts={host: report["hosts"][host] for host in part},
            results=[entry for entry in report["results"] if entry["host"] in part],
            summary=dict(report["summary"], passed=True))))
        argv = [str(BIN / "ansible-playbook"), "-i", str(store.tmp / "inventory.json"),
                str(store.tmp / "store-run.yml"), "--limit", "localhost", "-e", "diskproof_report_store=%s" % store.path,
                "-e", "diskproof_report_store_keep=1", "-e", "publish_dir=%s" % where,
                "-e", "record_file=%s" % (store.tmp / "record.json")]
        done = subprocess.run(argv, cwd=store.tmp, env=store.env(True), capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    slices = store.runs()
    assert len(slices) == 2 and not (store.path / "last-pass").exists()
    env = dict(store.env(True), DISKPROOF_REPORT_DIR=str(store.tmp / "merged"))
    argv = [str(BIN / "ansible-playbook"), str(REPO / "playbooks" / "merge.yml"),
            "-e", json.dumps({"diskproof_record_sets": [str(store.path / run_id) for run_id in slices],
                              "diskproof_report_store": str(store.path), "diskproof_report_store_keep": 1})]
    done = subprocess.run(argv, cwd=store.tmp, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    merged = json.loads((store.tmp / "merged" / "report.json").read_text())
    assert merged["summary"]["passed"] is True and len(merged["hosts"]) == 5
    entry = json.loads((store.path / "index.json").read_text())["runs"]
    assert [run["scope"] for run in entry] == ["merge"] and store.last_pass() == entry[0]["run_id"]
    assert len(entry[0]["merged"]) == 2
    assert sorted(name for name in os.listdir(store.path) if name[0].isdigit()) == [entry[0]["run_id"]]
