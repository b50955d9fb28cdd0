# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: controller_run
author: diskproof maintainers (@diskproof)
version_added: 0.1.0
short_description: Identity of the running ansible-playbook, for the quiesce lock
description:
  - Returns one dict describing this run and the controller it runs on. The quiesce role looks it
    up once per play and hands it to every host's M(diskproof.fleet.quiesce) call, which records it
    in the host's lock and uses it to judge an existing lock.
  - A lock whose controller is this one (same host, boot id and PID namespace) and whose
    ansible-playbook process is not among the live ones belongs to a run that died; the next run
    takes it over. Linux only; elsewhere the process fields stay empty and locks from other runs
    are judged by their lease alone.
options: {}
"""

EXAMPLES = r"""
- name: Identify this run once per play
  ansible.builtin.set_fact:
    run_identity: "{{ lookup('diskproof.fleet.controller_run') }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description:
    - "One dict with C(run_id) (new unique id from the UTC time and random hex), C(host), C(user), C(boot_id),
      C(pid_ns), C(pid) and C(pid_start) (the ansible-playbook process and its start time in clock
      ticks), C(seen_at) (clock ticks since boot just before C(live) was listed) and C(live)
      (process id to start ticks of every ansible process running now)."
  type: list
  elements: dict
"""

import datetime
import getpass
import os
import socket
import uuid

from ansible.plugins.lookup import LookupBase
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.proc_pid_stat import fields_after_command


def read(path, mode="r"):
    try:
        with open(path, mode) as handle:
            return handle.read()
    except OSError:
        return None


def proc_stat(pid):
    """(ppid, start ticks) of a live process, None when gone, a zombie or unreadable."""
    fields = fields_after_command(read("/proc/%d/stat" % pid) or "")
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19])


def argv_of(pid):
    raw = read("/proc/%d/cmdline" % pid, "rb")
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part] if raw else []


def is_ansible(argv):
    return any(os.path.basename(arg).startswith("ansible") for arg in argv[:3])


def ticks_now():
    uptime = read("/proc/uptime")
    return int(float(uptime.split()[0]) * os.sysconf("SC_CLK_TCK")) if uptime else None


def find_playbook_process():
    """Walk up from this process (the worker running the lookup) to the first ansible process,
    then on to the topmost ancestor with the very same argv (workers are forks of the main
    ansible-playbook process)."""
    pid = os.getpid()
    worker = main = None
    while pid > 1:
        info = proc_stat(pid)
        if info is None:
            return None, None
        if worker is None and is_ansible(argv_of(pid)):
            worker = pid
        elif worker is not None and argv_of(pid) != argv_of(worker):
            break
        if worker is not None:
            main = pid
        pid = info[0]
    info = proc_stat(main) if worker is not None else None
    if info is None:
        return None, None
    return main, info[1]


def live_ansible_processes():
    live = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and is_ansible(argv_of(int(entry))):
            info = proc_stat(int(entry))
            if info is not None:
                live[entry] = info[1]
    return live


def controller_identity():
    """This run's identity; see DOCUMENTATION."""
    identity = {
        "run_id": datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8],
        "host": socket.gethostname(),
        "user": getpass.getuser(),
        "boot_id": (read("/proc/sys/kernel/random/boot_id") or "").strip(),
        "pid_ns": "",
        "pid": None,
        "pid_start": None,
        "seen_at": None,
        "live": {},
    }
    if os.path.isdir("/proc/self"):
        try:
            identity["pid_ns"] = os.readlink("/proc/self/ns/pid")
        except OSError:
            pass
        identity["pid"], identity["pid_start"] = find_playbook_process()
        identity["seen_at"] = ticks_now()   # before listing: anything started later is "too new to judge"
        identity["live"] = live_ansible_processes()
    return identity


class LookupModule(LookupBase):
    """Identity of the running ansible-playbook."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [controller_identity()]
