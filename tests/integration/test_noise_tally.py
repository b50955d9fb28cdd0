"""Quiet on healthy disks, loud on faulty ones (issue 30): one round of each of benchmarks/noise_tally.py's tallies,
whose many-round figures are in docs/benchmarks.md.

- demo: `make demo`'s flow (tools/demo, lab rack6): exit 0, rack6-n04 flagged on each of its five tests, nothing
  else flagged, every figure within the compare tolerance;
- faults: an 8-host lab (`ntfault`, 10.231.96.0/24) with a host writing 30 % slower, one at half the IOPS, one 8 %
  slower at everything and one cut off mid-run: every fault found, no healthy host or test flagged;
- awx: acceptance.yml under ansible-runner with a signed report store on a healthy 3-host lab (`ntawx`,
  10.231.97.0/24): jobs 1 and 2 green, job 3 red with the disk slowed between them `regressed` through the store's
  baseline.

Real labs, real ansible-playbook / ansible-runner, root only. The expectations are the script's own (one place).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import noise_tally  # noqa: E402  (benchmarks/ is not a package)

# Healthy disks must pass and buffered writes be judged: the rounds run when no other lab does (docs/lab.md,
# "Buffered writes": one machine's cores and page cache are not a rack's).
pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="needs root and iproute2 (labs of network namespaces and loop devices)"),
              pytest.mark.alone]


@pytest.mark.parametrize("part", noise_tally.PARTS)
def test_one_round(part, tmp_path):
    run = noise_tally.RUNNERS[part](tmp_path, 1)
    assert run.ok, run.line
