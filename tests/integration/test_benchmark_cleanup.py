"""A benchmark script that brings up a lab leaves nothing behind (issue 35: benchmarks/overhead.py once exited 0 with
its 10-host lab and 10 daemonized fio servers still up). Runs overhead.py at its smallest size (one host, one job,
one round, the quiesced floor) and checks that the lab's state, namespaces, loop devices, fio servers and cgroups
are gone. Real lab, root only."""
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


def fio_servers():
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"fio" and b"--server" in argv:
                found.append(int(entry.name))
    return found


def test_overhead_at_its_smallest_size_leaves_nothing(tmp_path):
    servers_before = set(fio_servers())
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "overhead.py"), "--hosts", "1", "--scenarios",
                             "one-job", "--rounds", "1", "--floor", "floorq", "--out", str(tmp_path / "out"),
                             "--json", str(tmp_path / "figures.json")],
                            cwd=REPO, capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert [len(figures[0]["scenarios"]["one-job"][key]) for key in ("validate", "fio", "floorq")] == [1, 1, 1]
    assert not Path("/run/diskproof-lab/ovh").exists()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert "dp-ovh-" not in namespaces
    loops = subprocess.run(["losetup", "--list", "--noheadings", "--output", "BACK-FILE"], capture_output=True,
                           text=True, check=True).stdout
    assert "diskproof-lab-ovh" not in loops
    assert set(fio_servers()) <= servers_before
    assert not list(Path("/sys/fs/cgroup/cpuacct").glob("diskproof-overhead-*"))
