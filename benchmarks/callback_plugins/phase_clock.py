# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the wall time of a playbook run goes, for benchmarks/overhead.py (not part of the collection).

Writes JSON to $PHASE_CLOCK_FILE: the monotonic time the playbook started and ended, and per task
its name, when it started, when its last host result arrived, how many host results it got, and, with
$PHASE_CLOCK_CPUACCT naming a cpuacct cgroup, the lab hosts' CPU-seconds so far when it started; with
$PHASE_CLOCK_CONTROLLER_CPUACCT, the same for the cgroup ansible-playbook runs in (overhead.py's). A cgroup's
counter grows as its processes run, so each task's CPU lands on that task; os.times() would count a worker's
CPU only once it is reaped.
"""
from __future__ import annotations

DOCUMENTATION = """
name: phase_clock
type: aggregate
short_description: wall time per task, for benchmarks/overhead.py
description:
  - Records when each task starts and when its last host result arrives; writes JSON to $PHASE_CLOCK_FILE.
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "phase_clock"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.started = time.monotonic()
        self.tasks = []

    def v2_playbook_on_start(self, playbook):
        self.started = time.monotonic()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.tasks.append({"name": task.get_name(), "start": time.monotonic(), "last_result": None, "results": 0,
                           "lab_cpu": cgroup_cpu("PHASE_CLOCK_CPUACCT"),
                           "controller_cpu": cgroup_cpu("PHASE_CLOCK_CONTROLLER_CPUACCT")})

    def _result(self, *_args, **_kwargs):
        if self.tasks:
            self.tasks[-1]["last_result"] = time.monotonic()
            self.tasks[-1]["results"] += 1

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _result

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("PHASE_CLOCK_FILE")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"started": self.started, "stats": time.monotonic(), "tasks": self.tasks,
                           "lab_cpu": cgroup_cpu("PHASE_CLOCK_CPUACCT"),
                           "controller_cpu": cgroup_cpu("PHASE_CLOCK_CONTROLLER_CPUACCT")}, handle)


def cgroup_cpu(variable):
    """CPU-seconds so far of the cpuacct cgroup the environment variable names, or None without it."""
    path = os.environ.get(variable)
    if not path:
        return None
    with open(os.path.join(path, "cpuacct.usage"), encoding="utf-8") as handle:
        return int(handle.read()) / 1e9
