# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: how many hosts run at once, and what that makes of the fleet's run time.

Ansible runs each task on at most ``forks`` hosts at once (AWX/AAP's default is 5). The benchmark's test loop is
one task per host, so a play of more hosts than forks benchmarks them in waves, one after the other; with
``serial`` batches, each batch in its own waves. The fleet takes about waves x the slowest host's plan.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Sequence


def play_forks() -> int:
    """The forks of this run: the command line's -f (AWX passes the job template's Forks that way), else the
    configuration's DEFAULT_FORKS (ansible.cfg forks, ANSIBLE_FORKS; 5 when unset)."""
    from ansible import constants, context   # controller only: imported here so the math above stays importable

    forks = context.CLIARGS.get("forks") if context.CLIARGS else None
    return int(forks or constants.DEFAULT_FORKS)


def fleet_waves(hosts: int, forks: int, batch: int = 0) -> Dict[str, Any]:
    """waves (all batches), wave_sizes (hosts per wave, in order) for ``hosts`` hosts run ``batch`` at a time
    (serial; 0 or >= hosts: all in one batch) with ``forks`` hosts at once."""
    if hosts < 1 or forks < 1:
        raise ValueError("hosts and forks must be >= 1, got %r and %r" % (hosts, forks))
    batch = hosts if batch < 1 or batch > hosts else batch
    sizes: List[int] = []
    left = hosts
    while left > 0:
        in_batch = min(batch, left)
        left -= in_batch
        sizes += [forks] * (in_batch // forks) + ([in_batch % forks] if in_batch % forks else [])
    return {"waves": len(sizes), "wave_sizes": sizes, "batches": math.ceil(hosts / batch)}


# A test longer than this sends no byte on its SSH connection for that long (a module answers only when it ends):
# firewalls and NAT gateways commonly forget idle connections after 4-5 min. docs/fleet-sizing.md, SSH idle limits.
KEEPALIVE_ADVICE_AFTER_S = 120


def keepalive_lines(longest_job_s: float, connection: str, ssh_args: Sequence[str]) -> List[str]:
    """Advice when the longest test would leave an SSH connection without keepalives idle for minutes."""
    if connection.rsplit(".", 1)[-1] not in ("ssh", "paramiko_ssh") or longest_job_s < KEEPALIVE_ADVICE_AFTER_S:
        return []
    if any("serveraliveinterval" in (args or "").lower() for args in ssh_args):
        return []
    return ["fleet: the longest test runs about %s without a byte on its SSH connection, which has no keepalive: a "
            "firewall or NAT that forgets idle connections sooner cuts it and the task never returns; set "
            "ansible_ssh_common_args: -o ServerAliveInterval=30 -o ServerAliveCountMax=4 (docs/fleet-sizing.md)"
            % _minutes(longest_job_s)]


def _minutes(seconds: float) -> str:
    return "%d min" % max(1, math.ceil(seconds / 60))


def fleet_lines(hosts: int, forks: int, batch: int, slowest_host_s: float) -> List[str]:
    """What the plan printed at the start says about the fleet: hosts, forks, waves, duration, and the forks for one
    wave when there are several."""
    waves = fleet_waves(hosts, forks, batch)
    count = waves["waves"]
    if count == 1:
        return ["fleet: %d host%s in the play, forks %d: all run at once, one wave; about %s for the fleet "
                "(the slowest host's plan)" % (hosts, "" if hosts == 1 else "s", forks, _minutes(slowest_host_s))]
    sizes = waves["wave_sizes"]
    shown = " + ".join(map(str, sizes)) if len(sizes) <= 6 else "%s + ... + %d" % (" + ".join(map(str, sizes[:3])),
                                                                                   sizes[-1])
    batches = (", in %d batches of up to %d (serial)" % (waves["batches"], batch)) if waves["batches"] > 1 else ""
    lines = ["fleet: %d hosts in the play%s, forks %d: each task runs on at most %d host%s at once, so the benchmark "
             "runs in %d waves (%s hosts); about %s for the fleet (%d waves x %s, the slowest host's plan)"
             % (hosts, batches, forks, forks, "" if forks == 1 else "s", count, shown,
                _minutes(count * slowest_host_s), count, _minutes(slowest_host_s))]
    one_wave = min(hosts, batch) if 0 < batch < hosts else hosts
    if forks < one_wave:
        lines.append("fleet: forks %d (ansible-playbook -f %d; in AWX/AAP the job template's Forks) would run it in "
                     "%s, about %s; docs/fleet-sizing.md sizes forks and slices"
                     % (one_wave, one_wave, "one wave" if waves["batches"] == 1 else "one wave per batch",
                        _minutes(waves["batches"] * slowest_host_s)))
    return lines


def plan_listing(plan_lines: Mapping[str, Sequence[str]]) -> List[str]:
    """Each host's plan lines, the host named on each: what the benchmark role prints for a batch in one task (a task
    per host would cost every host a worker process on the controller)."""
    return ["%s: %s" % (host, line) for host, lines in plan_lines.items() for line in lines or []]
