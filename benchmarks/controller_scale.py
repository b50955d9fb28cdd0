#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's CPU per host as the fleet grows, without the hosts: playbooks/validate.yml on up to thousands of
simulated hosts whose every module call is answered from a real run.

First a one-host lab runs validate.yml for real (the scenario of benchmarks/overhead.py: one fio job, or the quick
profile's three fio tests of two runs) with the callback replay_record, which keeps what each module answered. Then,
for each fleet size, validate.yml runs against that many simulated hosts (connection plugin diskproof_replay: the
payload of each module call is built and sent as to a real host, and answered with the recorded result, the host name
and run id made this host's and this run's). Everything the controller does per host is real - workers, templating,
argument checks, the module payloads, results, the report callback's records, the judgement and the report files -
and nothing of a host is counted. Prints per fleet size the wall time, the controller's CPU-seconds (ansible-playbook
and everything it started, in a cpuacct cgroup of its own) and their share per host, and checks that the report
judged every simulated host's results as the real host's.

    sudo .venv/bin/python benchmarks/controller_scale.py                         # one-job at 10, 30, 100, 300 hosts
    sudo .venv/bin/python benchmarks/controller_scale.py --hosts 10,100,1000 --scenario quick --markdown
    sudo .venv/bin/python benchmarks/controller_scale.py --hosts 10,30,100 --rounds 3     # medians of 3 runs each

Exit code 0 when every run judged every host as recorded, 2 when the lab, the recording or a run failed.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from labrun import ROOT, Lab, LabFailed, playbook_env, report_of  # noqa: E402  (after the path is set)
from overhead import SCENARIOS  # noqa: E402  (what validate.yml runs: overhead.py's scenarios, the same settings)

BIN = ROOT / ".venv" / "bin"
CPUACCT = pathlib.Path("/sys/fs/cgroup/cpuacct")
MIB = 1 << 20
RECORDED_HOST = "csc-n01"


def lab_spec() -> Dict[str, Any]:
    return {"name": "csc", "subnet": "10.231.88.0/24",
            "defaults": {"memory_bytes": 32 * MIB,
                         "disks": [{"size": "256MiB", "mode": "raw", "read_bytes_per_s": 50 * MIB,
                                    "write_bytes_per_s": 50 * MIB, "read_iops": 200, "write_iops": 200}]},
            "hosts": [{"name": RECORDED_HOST}]}


def settings(scenario: Dict[str, Any]) -> Dict[str, Any]:
    return {"diskproof_profile": "quick", "benchmark_tests": scenario["tests"], "benchmark_repeats": scenario["repeats"],
            "benchmark_max_repeats": scenario["repeats"], "benchmark_fio_runtime_s": 10}


def lab_host_vars(inventory: pathlib.Path, mode: str) -> Dict[str, Any]:
    """The recorded host's inventory variables, its disk a target of this mode (raw_write behind the interlock)."""
    host_vars = yaml.safe_load(inventory.read_text())["all"]["children"]["lab"]
    merged = dict(host_vars.get("vars") or {}, **host_vars["hosts"][RECORDED_HOST])
    merged["diskproof_targets"] = [dict(target, mode=mode) for target in merged["diskproof_targets"]]
    if mode == "raw_write":
        merged["diskproof_destructive"] = True
        merged["diskproof_destructive_allow"] = [
            "loop:" + subprocess.run(["losetup", "--noheadings", "--output", "BACK-FILE", target["device"]],
                                     capture_output=True, text=True, check=True).stdout.strip()
            for target in merged["diskproof_targets"]]
    return merged


def record(workdir: pathlib.Path, scenario: Dict[str, Any]) -> Dict[str, Any]:
    """One real run on a one-host lab with replay_record: (recording path, the recorded host's variables, its report)."""
    recording = workdir / "recording.json"
    with Lab(lab_spec(), workdir) as lab:
        host_vars = lab_host_vars(lab.inventory, scenario["mode"])
        inventory = workdir / "recorded-inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {RECORDED_HOST: host_vars}}}))
        env = playbook_env(workdir / "report-recorded", REPLAY_RECORD_FILE=str(recording),
                           ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "benchmarks" / "callback_plugins"),
                           ANSIBLE_CALLBACKS_ENABLED="diskproof.fleet.report,replay_record")
        result = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), "playbooks/validate.yml",
                                 "-e", json.dumps(settings(scenario))], cwd=ROOT, env=env, capture_output=True,
                                text=True, check=False, timeout=1800)
        report = report_of(workdir / "report-recorded", result)
        if result.returncode != 0 or not recording.exists():
            raise LabFailed("the recorded run failed (exit %d): %s" % (result.returncode, result.stdout[-3000:]))
    return {"recording": recording, "host_vars": host_vars, "report": report}


def simulated_inventory(path: pathlib.Path, count: int, host_vars: Dict[str, Any]) -> List[str]:
    """count hosts with the recorded host's variables, each answered by diskproof_replay."""
    simulated = {key: value for key, value in host_vars.items() if not key.startswith(("ansible_ssh", "ansible_host"))}
    names = ["sim-%05d" % number for number in range(1, count + 1)]
    hosts = {name: dict(simulated, ansible_host=name) for name in names}
    path.write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "diskproof_replay"}, "hosts": hosts}}))
    return names


def verdicts(report: Dict[str, Any]) -> Dict[str, List[str]]:
    """host -> its results' verdicts, by test."""
    found: Dict[str, List[str]] = {}
    for entry in report.get("results", []):
        found.setdefault(entry["host"], []).append("%s %s" % (entry["test"], entry["verdict"]))
    return {host: sorted(items) for host, items in found.items()}


def simulate(workdir: pathlib.Path, count: int, recorded: Dict[str, Any], scenario: Dict[str, Any]) -> Dict[str, Any]:
    inventory = workdir / ("simulated-%d.yml" % count)
    names = simulated_inventory(inventory, count, recorded["host_vars"])
    report_dir = workdir / ("report-%d" % count)
    env = playbook_env(report_dir, DISKPROOF_REPLAY_RECORDING=str(recorded["recording"]),
                       ANSIBLE_CONNECTION_PLUGINS=str(ROOT / "benchmarks" / "connection_plugins"))
    group = CPUACCT / ("diskproof-controller-scale-%d-%d" % (os.getpid(), count))
    group.mkdir()
    try:
        started = time.monotonic()
        with open(workdir / ("simulated-%d.log" % count), "w", encoding="utf-8") as log:
            result = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), "playbooks/validate.yml",
                                     "-e", json.dumps(settings(scenario))], cwd=ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False, timeout=7200,
                                    preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        wall = time.monotonic() - started
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
    finally:
        for pid in (group / "cgroup.procs").read_text().split():   # none expected: no ssh, no ControlPersist
            os.kill(int(pid), 15)
        for _attempt in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    report = report_of(report_dir)
    expected = verdicts(recorded["report"])[RECORDED_HOST]
    judged = verdicts(report)
    wrong = [name for name in names if judged.get(name) != expected]
    return {"hosts": count, "code": result.returncode, "wall": wall, "cpu": cpu, "cpu_per_host": cpu / count,
            "wrong": wrong, "expected": expected}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="10,30,100,300", help="comma-separated fleet sizes (default 10,30,100,300)")
    parser.add_argument("--scenario", default="one-job", choices=sorted(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=1, help="runs of each fleet size; the median is shown (default 1)")
    parser.add_argument("--out", help="work directory (default: a new one under /tmp, kept)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("needs root (the recorded run's lab uses network namespaces, loop devices and cgroups)")
    counts = sorted(int(value) for value in args.hosts.split(","))
    workdir = pathlib.Path(args.out or tempfile.mkdtemp(prefix="diskproof-controller-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    scenario = SCENARIOS[args.scenario]
    try:
        print("recording %s on a one-host lab (%s)" % (args.scenario, workdir), flush=True)
        recorded = record(workdir, scenario)
        rows = []
        for count in counts:
            runs = []
            for number in range(1, args.rounds + 1):
                run = simulate(workdir, count, recorded, scenario)
                runs.append(run)
                print("  %d simulated hosts, round %d: %.1f s, controller %.1f CPU-s (%.3f per host), exit %d, %d of "
                      "them judged otherwise than the recorded host" % (count, number, run["wall"], run["cpu"],
                                                                        run["cpu_per_host"], run["code"],
                                                                        len(run["wrong"])), flush=True)
            row = sorted(runs, key=lambda run: run["cpu"])[len(runs) // 2]
            row = dict(row, rounds=[run["cpu_per_host"] for run in runs],
                       code=max(run["code"] for run in runs), wrong=sorted({host for run in runs for host in run["wrong"]}))
            rows.append(row)
    except LabFailed as error:
        print("FAILED: %s" % error)
        return 2
    header = ["hosts", "wall s", "controller CPU-s", "CPU-s per host (median)", "each round", "judged as recorded"]
    body = [[str(row["hosts"]), "%.1f" % row["wall"], "%.1f" % row["cpu"], "%.3f" % row["cpu_per_host"],
             " / ".join("%.3f" % value for value in row["rounds"]),
             "%d of %d" % (row["hosts"] - len(row["wrong"]), row["hosts"])] for row in rows]
    if args.markdown:
        print("\n| " + " | ".join(header) + " |\n|" + "---:|" * len(header))
        print("\n".join("| " + " | ".join(cells) + " |" for cells in body))
    else:
        widths = [max(len(cell) for cell in column) for column in zip(header, *body)]
        print("\n" + "\n".join("  ".join(cell.rjust(width) for cell, width in zip(cells, widths))
                               for cells in [header] + body))
    per_host = [row["cpu_per_host"] for row in rows]
    if len(per_host) > 1:
        print("CPU-s per host, largest fleet / smallest: %.2f (median %.3f)"
              % (per_host[-1] / per_host[0], statistics.median(per_host)))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"scenario": args.scenario, "recorded": recorded["report"]["run"]
                                                       if "run" in recorded["report"] else {}, "rows": rows}, indent=1))
    failed = [row for row in rows if row["code"] != 0 or row["wrong"]]
    for row in failed:
        print("FAILED: %d simulated hosts: exit %d; judged otherwise: %s"
              % (row["hosts"], row["code"], ", ".join(row["wrong"][:5]) or "none"))
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
