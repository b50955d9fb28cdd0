"""benchmarks/controller_scale.py at its smallest size, for real: a one-host lab records validate.yml's module
answers, then two simulated hosts answered from that recording are judged exactly as the real host was (the
replay still fits the playbooks), and nothing of the lab or the script's cgroups is left behind. The figures are the
benchmark's business (docs/benchmarks.md). Real lab, root only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 (the lab uses network namespaces and loop devices)")


def test_two_simulated_hosts_are_judged_as_the_recorded_one_and_nothing_is_left(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "controller_scale.py"), "--hosts", "2",
                             "--out", str(tmp_path / "out"), "--json", str(tmp_path / "figures.json")],
                            cwd=REPO, capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads((tmp_path / "figures.json").read_text())
    [row] = figures["rows"]
    assert row["hosts"] == 2 and row["code"] == 0 and row["wrong"] == []
    assert row["expected"] == ["fio_rand_read pass"]
    assert row["cpu"] > 0
    report = json.loads((tmp_path / "out" / "report-2" / "report.json").read_text())
    assert sorted({entry["host"] for entry in report["results"]}) == ["sim-00001", "sim-00002"]
    assert all(entry["verdict"] == "pass" and entry["record"] for entry in report["results"])
    assert not Path("/run/diskproof-lab/csc").exists()
    assert "dp-csc-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not list(Path("/sys/fs/cgroup/cpuacct").glob("diskproof-controller-scale-*"))
