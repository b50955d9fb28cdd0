"""playbooks/acceptance.yml as AWX runs it: green with a set_stats summary on a healthy lab (the report's own
thresholds, none widened for the lab), red when a lab disk is slowed below the rules, with the slowed disk named
`slow` and `regressed` against the previous good run, which the report store signed and kept as its last-pass.

Real lab (tools/lab, lab `accj`), real ansible-playbook. Root only. The summary is read the way
AWX gets it: set_stats (shown here with ANSIBLE_SHOW_CUSTOM_STATS), not parsed from task output.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labhelpers import lab

REPO = Path(__file__).resolve().parents[2]
SPEC = Path(__file__).resolve().parent / "accj_lab.yml"
LAB = "accj"
SLOWED = "accj-n02"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
BIN = Path(sys.executable).parent
READ_BPS = "/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device"
RULES = "rules:\n  - name: lab disks\n    match: {test: 'dd_seq_read'}\n    min_read_mb_per_s: 40\n"

# With the report's own thresholds the healthy hosts' buffered writes are judged as a rack's would be: the file runs
# when no other lab does (docs/lab.md, "Buffered writes": one machine's cores are not a rack's).
pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or not os.path.exists(READ_BPS),
                                 reason="needs root, iproute2 and cgroup v1 blkio (the lab's throttles)"),
              pytest.mark.alone]


@pytest.fixture(scope="module")
def accj():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        yield yaml.safe_load(INVENTORY.read_text())["all"]["children"]["lab"]["hosts"]
    finally:
        lab("down", "--name", LAB)   # also removes the slowed throttle: the lab journaled that key


def store_key(tmp_path):
    """A throwaway store key in a 0600 file, as a controller keeps it (docs/report-store.md, The store key): only a
    signed run becomes the store's last-pass, the next run's baseline."""
    path = tmp_path / "store.key"
    if not path.exists():
        path.write_text(os.urandom(32).hex() + "\n", encoding="ascii")
        path.chmod(0o600)
    return path


def acceptance(tmp_path, name, *extra):
    report_dir = tmp_path / name
    env = dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_NOCOLOR="1", ANSIBLE_SHOW_CUSTOM_STATS="1",
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")), DISKPROOF_STORE_KEY_FILE=str(store_key(tmp_path)))
    # The report's own thresholds (outlier, noise, regression): no tolerance widened for the lab.
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), "playbooks/acceptance.yml",
            "-e", "benchmark_fio_runtime_s=3", "-e", json.dumps({"diskproof_rules_yaml": RULES})]
    for value in extra:
        argv += ["-e", value]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=600)
    output = result.stdout + result.stderr
    stats_line = next((line for line in output.splitlines() if line.strip().startswith("RUN:")), None)
    assert stats_line is not None, output[-3000:]
    stats = json.loads(stats_line.split("RUN:", 1)[1])
    assert_one_judgement(result.returncode, stats["diskproof"], report_dir / "report.json", output)
    return result.returncode, stats["diskproof"], report_dir / "report.json", output


def assert_one_judgement(rc, summary, report_json, output):
    """report.json, the set_stats summary and the job's status are one judgement (the callback's)."""
    report = json.loads(report_json.read_text())
    published = {key: report["summary"][key] for key in ("passed", "counts", "total", "failing", "failing_hosts", "input_errors")}
    assert summary == published, (summary, published)
    assert (rc == 0) is report["summary"]["passed"], output[-3000:]


def test_green_then_red_when_a_disk_is_slowed(accj, tmp_path):
    """Two scheduled runs with a report store and nothing else: the second is judged against the
    first through the store (its last-pass report.json) and is `regressed` as well as `slow`."""
    store = tmp_path / "store"
    rc, summary, good_report, output = acceptance(tmp_path, "good", "diskproof_report_store=%s" % store)
    assert rc == 0, output[-3000:]
    assert summary["passed"] is True and summary["failing"] == []
    assert summary["counts"]["pass"] == summary["total"] == 15   # 3 hosts x 5 quick tests
    assert "all 15 results pass" in output
    first_run = (store / "latest").resolve()
    assert (store / "last-pass").resolve() == first_run and (first_run / "report.json").read_bytes() == good_report.read_bytes()

    # Slow one disk's reads to 16 MiB/s (16.8 MB/s) at the lab's root blkio throttle.
    disk = accj[SLOWED]["diskproof_lab_disks"][0]
    with open(READ_BPS, "w", encoding="ascii") as handle:
        handle.write("%s %d" % (disk["major_minor"], 16 * 1048576))

    rc, summary, slowed_report, output = acceptance(tmp_path, "slowed", "diskproof_report_store=%s" % store)
    assert rc != 0
    assert summary["passed"] is False
    failing = {(row["host"], row["test"], row["verdict"]) for row in summary["failing"]}
    assert (SLOWED, "dd_seq_read", "slow") in failing, summary["failing"]
    assert {row["host"] for row in summary["failing"]} == {SLOWED}
    assert "Fail the run when a result fails" in output and "failing result(s)" in output
    reasons = " ".join(row["reason"] for row in summary["failing"] if row["test"] == "dd_seq_read")
    assert "read 1" in reasons and "< minimum 40.0 MB/s" in reasons

    # The baseline came from the store: the first run's report.json, the slowed read regressed
    # against its own figure (loop devices have no serial: matched by host and target path).
    report = json.loads(slowed_report.read_text())
    assert report["baseline"]["source"].endswith("report.json") and report["baseline"]["disks_tests"] == 15
    slowed_read = next(entry for entry in report["results"] if entry["host"] == SLOWED and entry["test"] == "dd_seq_read")
    regressed = [finding["reason"] for finding in slowed_read["reasons"] if finding["verdict"] == "regressed"]
    assert len(regressed) == 1 and "(host and target %s:" % SLOWED in regressed[0], slowed_read["reasons"]

    # The store after two scheduled runs: both kept, latest the failing one, last-pass the first.
    second_run = (store / "latest").resolve()
    assert second_run != first_run and (store / "last-pass").resolve() == first_run
    index = json.loads((store / "index.json").read_text())
    assert [(run["run_id"], run["passed"]) for run in index["runs"]] == [(first_run.name, True), (second_run.name, False)]
    # The baseline's temporary copy on the controller is gone with the run.
    assert not Path(report["baseline"]["source"]).parent.exists()
    for run_dir in (first_run, second_run):
        checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=run_dir, capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and checked.stdout.count(": OK") == 5, checked.stdout + checked.stderr
        assert (run_dir / "SHA256SUMS.hmac").is_file()    # signed on the controller with the store key
