#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Does a long, quiet task survive an SSH idle limit, and what do keepalives and async cost?

A module prints nothing until it ends (bench_run returns its records at the end of a test), so during a long
test the task's SSH connection carries no bytes at all unless ssh sends keepalives. A stateful firewall or NAT
that forgets idle connections then cuts it, and the task never returns.

Brings up the lab `qfen` (tests/integration/qfen_lab.yml; subnet 10.231.78.0/24) and, in front of qfen-n03's
sshd, an "idle-limit" TCP relay on 127.0.0.1 that behaves like such a firewall: once no byte has passed in either
direction for --idle-limit seconds, it silently stops forwarding (both sockets stay open, nothing is answered).
The relay records the longest quiet gap it saw (at least the limit when it cut). Then it measures:

1. a --quiet-s second quiet task (ansible.builtin.command sleep) through the relay: without keepalive and without
   an idle limit (how long the connection is quiet), without keepalive under the idle limit, and with
   ansible_ssh_common_args -o ServerAliveInterval=N -o ServerAliveCountMax=3 under the limit: does it return, and
   the longest quiet gap on the wire;
2. the per-task cost, on the direct connection, of a short job (dd of 8 MiB with conv=fdatasync on the lab disk)
   run --tasks times: synchronously, synchronously with the keepalive, and with async (poll 1 and poll 5).

    sudo .venv/bin/python benchmarks/ssh_idle.py                      # idle limit 15 s, quiet task 40 s
    sudo .venv/bin/python benchmarks/ssh_idle.py --idle-limit 20 --quiet-s 60 --tasks 10

Always tears the lab down. Exit code 0 when the measurements ran (whatever they showed), 2 when the lab failed.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
SPEC = REPO / "tests" / "integration" / "qfen_lab.yml"
LAB = "qfen"
HOST = "qfen-n03"
BIN = pathlib.Path(sys.executable).parent


class IdleLimitRelay(threading.Thread):
    """One TCP connection at a time from 127.0.0.1:<port> to the target; blackholes a connection idle too long."""

    def __init__(self, target, idle_limit_s):
        super().__init__(daemon=True)
        self.target, self.idle_limit_s = target, idle_limit_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.longest_gap_s = 0.0
        self.cut = 0
        self.stopping = False

    def run(self):
        self.listener.settimeout(0.5)
        while not self.stopping:
            try:
                client, _address = self.listener.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self.relay, args=(client,), daemon=True).start()

    def relay(self, client):
        upstream = socket.create_connection(self.target)
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        last = time.monotonic()
        while not self.stopping:
            events = selector.select(timeout=0.5)
            now = time.monotonic()
            if not events:
                if now - last > self.idle_limit_s:
                    self.cut += 1   # the firewall forgot the connection: nothing passes any more, nobody is told
                    while not self.stopping:
                        time.sleep(0.5)
                continue
            self.longest_gap_s = max(self.longest_gap_s, now - last)
            last = now
            for key, _mask in events:
                data = key.fileobj.recv(65536)
                if not data:
                    client.close()
                    upstream.close()
                    return
                key.data.sendall(data)


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)


def lab(*args):
    return run([sys.executable, str(REPO / "tools" / "lab"), *args], timeout=180)


def playbook(inventory, tasks, env, timeout):
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False, dir=inventory.parent) as handle:
        yaml.safe_dump([{"hosts": HOST, "gather_facts": False, "tasks": tasks}], handle)
    started = time.monotonic()
    try:
        result = run([str(BIN / "ansible-playbook"), "-i", str(inventory), handle.name], env=env, timeout=timeout)
        returned = result.returncode
        if returned:
            print(result.stdout[-1500:], result.stderr[-1500:], file=sys.stderr)
    except subprocess.TimeoutExpired:
        returned = None
    os.unlink(handle.name)
    return returned, time.monotonic() - started


def inventory_for(base, path, port=None, keepalive_s=None):
    data = yaml.safe_load(base.read_text())
    host_vars = data["all"]["children"]["lab"]["hosts"][HOST]
    group_vars = data["all"]["children"]["lab"]["vars"]
    # The lab's own keepalive (ServerAliveInterval=2, for its cut-host tests) would hide the effect: off here.
    args = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5"
    if keepalive_s:
        args += " -o ServerAliveInterval=%d -o ServerAliveCountMax=3" % keepalive_s
    group_vars["ansible_ssh_common_args"] = args
    if port:
        host_vars.update(ansible_host="127.0.0.1", ansible_port=port)
    data["all"]["children"]["lab"]["hosts"] = {HOST: host_vars}
    path.write_text(yaml.safe_dump(data))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--idle-limit", type=float, default=15.0)
    parser.add_argument("--quiet-s", type=int, default=40)
    parser.add_argument("--keepalive-s", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=10)
    options = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="qfen-ssh-idle-", dir="/tmp"))
    # The project's connection settings (pipelining, ControlPersist), without the report callback.
    config = work / "ansible.cfg"
    config.write_text("[defaults]\ninterpreter_python = auto_silent\nretry_files_enabled = False\n"
                      "[ssh_connection]\npipelining = True\nssh_args = -o ControlMaster=auto -o ControlPersist=60s\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_NOCOLOR="1")
    lab("down", "--name", LAB)
    if lab("up", str(SPEC)).returncode != 0:
        return 2
    results = {"idle_limit_s": options.idle_limit, "quiet_task_s": options.quiet_s}
    try:
        base = pathlib.Path("/run/diskproof-lab") / LAB / "inventory.yml"
        address = yaml.safe_load(base.read_text())["all"]["children"]["lab"]["hosts"][HOST]["ansible_host"]
        quiet = [{"name": "a quiet task", "ansible.builtin.command": {"argv": ["sleep", str(options.quiet_s)]},
                  "changed_when": False}]
        keepalive_label = "ServerAliveInterval=%d" % options.keepalive_s
        for label, keepalive, limit in (("no keepalive, no idle limit", None, float("inf")),
                                        ("no keepalive", None, options.idle_limit),
                                        (keepalive_label, options.keepalive_s, options.idle_limit)):
            relay = IdleLimitRelay((address, 22), limit)
            relay.start()
            inventory = inventory_for(base, work / "relay.yml", relay.port, keepalive)
            control = str(work / ("cp-quiet-%d" % len(results)))   # a fresh ssh master per variant
            returned, wall = playbook(inventory, quiet, dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=control),
                                      timeout=options.quiet_s + 60)
            relay.stopping = True
            if relay.cut:   # the gap that made the relay cut is the one that counts
                relay.longest_gap_s = max(relay.longest_gap_s, options.idle_limit)
            results["quiet: " + label] = {"returned": returned, "wall_s": round(wall, 1),
                                          "longest_quiet_gap_s": round(relay.longest_gap_s, 1),
                                          "cut_by_idle_limit": relay.cut}
            print(label, results["quiet: " + label], flush=True)

        short = {"ansible.builtin.command": {"argv": ["dd", "if=/dev/zero", "of=/srv/diskproof/d0/qfen-short",
                                                      "bs=1M", "count=8", "conv=fdatasync"]}, "changed_when": False}
        variants = {"sync": ({}, None), "sync + ServerAliveInterval=%d" % options.keepalive_s: ({}, options.keepalive_s),
                    "async poll 1": ({"async": 120, "poll": 1}, None), "async poll 5": ({"async": 120, "poll": 5}, None)}
        baseline_tasks = [{"ansible.builtin.command": {"argv": ["true"]}, "changed_when": False}]
        for label, (extra, keepalive) in variants.items():
            inventory = inventory_for(base, work / "direct.yml", None, keepalive)
            cp = dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=str(work / ("cp-" + label.replace(" ", "_"))))
            _rc, empty = playbook(inventory, baseline_tasks, cp, 120)   # connection set up, one trivial task
            tasks = baseline_tasks + [dict(short, name="short job %d" % index, **extra) for index in range(options.tasks)]
            returned, wall = playbook(inventory, tasks, cp, 600)
            results["short: " + label] = {"returned": returned, "per_task_s": round((wall - empty) / options.tasks, 2)}
            print(label, results["short: " + label], flush=True)
        on = run([sys.executable, str(REPO / "tools" / "lab"), "ssh", "--name", LAB, HOST, "--", "rm",
                  "-f", "/srv/diskproof/d0/qfen-short"])
        assert on.returncode == 0, on.stderr
    finally:
        lab("down", "--name", LAB)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
