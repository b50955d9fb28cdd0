"""A host cut off the network in the middle of validate.yml: it is UNREACHABLE within seconds,
the other hosts finish and are judged, and the report lists the cut host as `not_measured`.

Real lab (tools/lab, lab `rcut`), real ansible-playbook with the report callback. Root only.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB_TOOL = REPO / "tools" / "lab"
SPEC = Path(__file__).resolve().parent / "rcut_lab.yml"
LAB = "rcut"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
CUT_HOST = "rcut-n02"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 (the lab uses network namespaces and loop devices)")


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LAB_TOOL), *args], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture
def rcut_lab():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        yield
    finally:
        lab("heal", "--name", LAB, CUT_HOST, check=False)
        lab("down", "--name", LAB)


def test_cut_host_is_not_measured_and_the_rest_are_judged(rcut_lab, tmp_path):
    report_dir = tmp_path / "report"
    env = dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    log_path = tmp_path / "validate.log"
    started = time.monotonic()
    with open(log_path, "w") as log:
        playbook = subprocess.Popen(
            [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), "playbooks/validate.yml", "-e", "benchmark_fio_runtime_s=5",
             "-e", '{"benchmark_tests": ["dd_seq_write", "dd_seq_read", "fio_rand_read"], "benchmark_repeats": 1}'],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        # Cut the host once its dd write is under way: its test file exists.
        deadline = time.monotonic() + 90
        while True:
            probe = lab("ssh", "--name", LAB, CUT_HOST, "--", "test -e /srv/diskproof/d0/diskproof-*/diskproof.testfile", check=False)
            if probe.returncode == 0:
                break
            assert playbook.poll() is None, "the play ended before the write started:\n" + log_path.read_text()
            assert time.monotonic() < deadline, "the write never started:\n" + log_path.read_text()
            time.sleep(0.5)
        cut_at = time.monotonic()
        lab("cut", "--name", LAB, CUT_HOST)
        returncode = playbook.wait(timeout=180)
    finally:
        if playbook.poll() is None:
            playbook.kill()
    finished = time.monotonic()
    output = log_path.read_text()

    assert returncode == 4, output  # ansible-playbook's code for an unreachable host
    assert "UNREACHABLE" in output and CUT_HOST in output
    report = json.loads((report_dir / "report.json").read_text())
    by_host: dict[str, list] = {}
    for entry in report["results"]:
        by_host.setdefault(entry["host"], []).append(entry)
    assert sorted(by_host) == ["rcut-n01", "rcut-n02", "rcut-n03"]
    assert [entry["verdict"] for entry in by_host[CUT_HOST]] == ["not_measured"] * len(by_host[CUT_HOST])
    assert any("unreachable" in entry["reason"] for entry in by_host[CUT_HOST])
    for host in ("rcut-n01", "rcut-n03"):
        assert sorted(entry["test"] for entry in by_host[host]) == ["dd_seq_read", "dd_seq_write", "fio_rand_read"]
        assert all(entry["verdict"] == "pass" for entry in by_host[host]), by_host[host]
    print("\ncut after %.1f s of the play; play ended %.1f s after the cut (%.1f s in all)"
          % (cut_at - started, finished - cut_at, finished - started))
