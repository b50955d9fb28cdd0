"""Waves: with more hosts than forks each test task runs on at most `forks` hosts at once, so the fleet's run time
is the number of waves times the slowest host's plan (plugins/plugin_utils/_fleet.py and the fleet_waves lookup)."""
from __future__ import annotations

import pytest

from ansible import context
from ansible.module_utils.common.collections import ImmutableDict

from ansible_collections.diskproof.fleet.plugins.plugin_utils._fleet import (
    fleet_lines, fleet_waves, keepalive_lines, plan_listing, play_forks,
)


@pytest.mark.parametrize(("hosts", "forks", "batch", "waves"), [
    (12, 5, 0, 3),      # AWX's default forks: 5 + 5 + 2
    (5, 5, 0, 1),
    (4, 50, 0, 1),
    (12, 5, 4, 3),      # serial: 4 -> three batches of 4, one wave each
    (10, 3, 5, 4),      # serial 5 with forks 3: two batches of two waves
    (50, 50, 0, 1),
    (5000, 100, 0, 50),
])
def test_waves_count_batches_and_forks(hosts, forks, batch, waves):
    assert fleet_waves(hosts, forks, batch)["waves"] == waves


def test_the_lines_say_hosts_forks_waves_and_the_fleet_duration():
    lines = fleet_lines(hosts=12, forks=5, batch=12, slowest_host_s=300)
    assert lines == [
        "fleet: 12 hosts in the play, forks 5: each task runs on at most 5 hosts at once, so the benchmark runs in "
        "3 waves (5 + 5 + 2 hosts); about 15 min for the fleet (3 waves x 5 min, the slowest host's plan)",
        "fleet: forks 12 (ansible-playbook -f 12; in AWX/AAP the job template's Forks) would run it in one wave, "
        "about 5 min; docs/fleet-sizing.md sizes forks and slices",
    ]


def test_one_wave_needs_no_advice():
    assert fleet_lines(hosts=3, forks=50, batch=3, slowest_host_s=90) == [
        "fleet: 3 hosts in the play, forks 50: all run at once, one wave; about 2 min for the fleet "
        "(the slowest host's plan)"]


def test_forks_come_from_the_command_line_else_the_configuration(monkeypatch):
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(forks=7))
    assert play_forks() == 7
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict())
    from ansible import constants
    assert play_forks() == constants.DEFAULT_FORKS


@pytest.mark.parametrize(("longest_s", "connection", "args", "advised"), [
    (600, "ssh", ["-o StrictHostKeyChecking=no", ""], True),
    (600, "ansible.builtin.ssh", ["-o ServerAliveInterval=30 -o ServerAliveCountMax=4"], False),
    (600, "local", [], False),
    (60, "ssh", [], False),
])
def test_a_long_test_on_ssh_without_keepalive_gets_the_advice(longest_s, connection, args, advised):
    lines = keepalive_lines(longest_s, connection, args)
    assert bool(lines) == advised
    if advised:
        assert "about 10 min without a byte on its SSH connection" in lines[0]
        assert "ansible_ssh_common_args: -o ServerAliveInterval=30 -o ServerAliveCountMax=4" in lines[0]


def test_every_hosts_plan_is_listed_in_batch_order_with_its_host_on_each_line():
    # The benchmark role prints the batch's plans in one run_once task (roles/benchmark/tasks/main.yml).
    listing = plan_listing({"rack1-n02": ["profile quick: 1 tests, 1 jobs", "fio_rand_read  fio  bs 4.0 KiB"],
                            "rack1-n01": ["profile quick: 2 tests, 2 jobs"], "rack1-n03": []})
    assert listing == ["rack1-n02: profile quick: 1 tests, 1 jobs", "rack1-n02: fio_rand_read  fio  bs 4.0 KiB",
                       "rack1-n01: profile quick: 2 tests, 2 jobs"]
    assert plan_listing({}) == []
