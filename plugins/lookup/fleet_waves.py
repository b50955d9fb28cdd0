# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_waves
author: diskproof maintainers (@diskproof)
version_added: 0.1.0
short_description: How a play of more hosts than forks runs the benchmark in waves, and how long the fleet takes
description:
  - Ansible runs each task on at most C(forks) hosts at once (AWX/AAP's default is 5). The benchmark's test loop
    is one task, so a play of more hosts than forks benchmarks them in waves, one after the other; with C(serial)
    batches, each batch in its own waves. The fleet takes about waves x the slowest host's plan.
  - Returns the lines the benchmark role prints with the plan - hosts in the play, forks, waves, the fleet's
    duration and, when there are several waves, the forks that would run it in one (docs/fleet-sizing.md) - then,
    given O(plan_lines), every host's plan.
  - The forks are this run's - the command line's C(-f) (AWX passes the job template's Forks that way), else
    the configuration's (C(forks) in ansible.cfg, C(ANSIBLE_FORKS)), else 5.
  - Runs on the controller only; reads nothing from the hosts.
options:
  hosts:
    description: Hosts in the play (usually C(ansible_play_hosts_all | length)).
    type: int
    required: true
  batch:
    description: Hosts per C(serial) batch (usually C(ansible_play_batch | length)); V(0) - all in one batch.
    type: int
    default: 0
  plans:
    description:
      - Each host's plan (the M(diskproof.fleet.bench_plan) result's C(plan)); the slowest C(estimate_s) sets the
        length of a wave. A host without one (it failed before) counts as 0.
      - When one job (one module call, all its runs) is estimated at 2 min or more and the host's SSH connection
        has no C(ServerAliveInterval) (C(ansible_ssh_common_args), C(ansible_ssh_extra_args), C(ansible_ssh_args)
        or the ssh_args setting), a line advises one - such a connection carries no byte while the test runs.
    type: list
    elements: dict
    required: true
  plan_lines:
    description:
      - Each host's plan lines (the M(diskproof.fleet.bench_plan) result's C(lines)) by host name, printed after the
        fleet's lines with the host named on each - the whole batch's plans in one task. Empty - none printed.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Show every host's plan and how the fleet runs (hosts, forks, waves, duration)
  ansible.builtin.debug:
    msg: >-
      {{ query('diskproof.fleet.fleet_waves', hosts=ansible_play_hosts_all | length,
               batch=ansible_play_batch | length,
               plans=plans | map(attribute='plan', default={}) | list,
               plan_lines=dict(ansible_play_batch | zip(plans | map(attribute='lines', default=[])))) }}
  vars:
    plans: "{{ ansible_play_batch | map('extract', hostvars) | map(attribute='my_plan', default={}) | list }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description:
    - The lines, e.g. C(fleet - 12 hosts in the play, forks 5 - ... 3 waves (5 + 5 + 2 hosts); about 15 min), and the
      keepalive advice when it applies.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.diskproof.fleet.plugins.plugin_utils._fleet import fleet_lines, keepalive_lines, plan_listing, play_forks


def _configured_ssh_args():
    """The ssh connection's ssh_args setting (ansible.cfg [ssh_connection], ANSIBLE_SSH_ARGS); '' when unknown."""
    from ansible import constants
    from ansible.plugins.loader import connection_loader

    try:
        connection_loader.get("ansible.builtin.ssh", class_only=True)   # loads the setting's definition
        return constants.config.get_config_value("ssh_args", plugin_type="connection", plugin_name="ssh") or ""
    except Exception:   # advice only: an unreadable setting must not fail the run
        return ""


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        plans = [plan for plan in self.get_option("plans") or [] if isinstance(plan, dict)]
        estimates = [float(plan.get("estimate_s") or 0) for plan in plans]
        longest_job_s = max((float(job.get("estimate_s") or 0) for plan in plans for job in plan.get("jobs") or []),
                            default=0.0)
        ssh_args = [str(variables.get(name) or "") for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args")]
        ssh_args.append(str(variables.get("ansible_ssh_args") or _configured_ssh_args()))
        try:
            lines = fleet_lines(hosts=self.get_option("hosts"), forks=play_forks(), batch=self.get_option("batch"),
                                slowest_host_s=max(estimates, default=0.0))
        except ValueError as error:
            raise AnsibleError("diskproof.fleet.fleet_waves: %s" % error) from error
        return (lines + keepalive_lines(longest_job_s, str(variables.get("ansible_connection") or "ssh"), ssh_args)
                + plan_listing(self.get_option("plan_lines") or {}))
