#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab bring-up with systemd hosts: how long `tools/lab up` and `down` take for a mixed lab.

Brings up a lab of --hosts hosts (every other one `init: systemd`, booted by systemd-nspawn; the
rest SysV), one 64 MiB throttled ext4 disk each, --rounds times, and prints per round the wall
time of `up`, each systemd host's boot time (spawn to `systemctl is-system-running` answering,
as `tools/lab up` measures it) and the wall time of `down`. Target (issue 15): a 6-host mixed lab
up in <= 30 s. Always tears the lab down.

    sudo .venv/bin/python benchmarks/lab_boot.py                 # 6 hosts, 3 rounds
    sudo .venv/bin/python benchmarks/lab_boot.py --hosts 12 --rounds 2 --target 60

Exit code 0 when every round's `up` is within --target seconds, 1 when one is not, 2 when the lab failed.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAB_TOOL = ROOT / "tools" / "lab"
LAB = "lbboot"
SUBNET = "10.231.74.0/24"
BOOTED = re.compile(r"^\s+(\S+)\s.*init systemd (\S+), booted in ([0-9.]+) s", re.M)


def spec(hosts: int) -> dict:
    return {
        "name": LAB, "subnet": SUBNET,
        "defaults": {"memory_bytes": 33554432, "disks": [{
            "size": "64MiB", "mode": "filesystem", "read_bytes_per_s": 33554432, "write_bytes_per_s": 33554432,
            "read_iops": 400, "write_iops": 400}]},
        "hosts": [{"name": "%s-n%02d" % (LAB, index + 1), **({"init": "systemd"} if index % 2 == 0 else {})}
                  for index in range(hosts)],
    }


def lab(*args: str) -> tuple:
    started = time.monotonic()
    result = subprocess.run([sys.executable, str(LAB_TOOL), *args], capture_output=True, text=True, check=False,
                            timeout=300)
    return result, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", type=float, default=30.0, help="seconds allowed for `up` (30)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lab-boot-") as scratch:
        spec_path = pathlib.Path(scratch) / "spec.yml"
        spec_path.write_text(yaml.safe_dump(spec(options.hosts)))
        lab("down", "--name", LAB)
        ups = []
        print("| round | up (s) | systemd hosts: boot (s) | down (s) |")
        print("|---|---|---|---|")
        for round_number in range(1, options.rounds + 1):
            up, up_seconds = lab("up", str(spec_path))
            if up.returncode != 0:
                print(up.stdout + up.stderr)
                lab("down", "--name", LAB)
                return 2
            boots = BOOTED.findall(up.stdout)
            down, down_seconds = lab("down", "--name", LAB)
            if down.returncode != 0:
                print(down.stdout + down.stderr)
                return 2
            ups.append(up_seconds)
            print("| %d | %.1f | %s | %.1f |" % (round_number, up_seconds,
                                                 ", ".join("%s %s %s" % boot for boot in boots), down_seconds))
    print("\n%d hosts (%d systemd): up median %.1f s, max %.1f s (target <= %.0f s)"
          % (options.hosts, (options.hosts + 1) // 2, statistics.median(ups), max(ups), options.target))
    return 0 if max(ups) <= options.target else 1


if __name__ == "__main__":
    sys.exit(main())
