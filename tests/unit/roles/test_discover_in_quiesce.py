"""Discovery inside the quiesce call hands the benchmark role the plan it asks for: the request the playbook gives
the quiesce is made before any discovery fact exists; the quiesce module completes it with its discovery
(_discovery.plan_request_with: the selected targets, disk identities and raw grants) and hands it back as
plan_request; the benchmark role then makes its own request from the published facts (its defaults and
vars/main.yml, rendered here with ansible-core's Templar) and takes the quiesce's plan only when the two are equal.
So they must be equal for every kind of target - else every host would plan again, one module call more."""
from __future__ import annotations

import pathlib

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.diskproof.fleet.plugins.module_utils._discovery import plan_request_with

try:
    from ansible.template import trust_as_template
except ImportError:   # ansible-core < 2.19 templates every string
    def trust_as_template(value):
        return value

REPO = pathlib.Path(__file__).resolve().parents[3]


def _trusted(value):
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return trust_as_template(value) if isinstance(value, str) else value


def benchmark_request(inventory_targets, facts):
    """The benchmark role's __benchmark_plan_request for these inventory targets and published facts."""
    variables = {}
    for relative in ("roles/benchmark/defaults/main.yml", "roles/benchmark/vars/main.yml"):
        variables.update(_trusted(yaml.safe_load((REPO / relative).read_text())))
    variables.update(diskproof_targets=inventory_targets, ansible_facts=facts, diskproof_profile="quick",
                     benchmark_tests=["fio_rand_read"])
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template("{{ __benchmark_plan_request }}"))


GRANT = {"class": "raw_read", "host": "lab-1",
         "disks": [{"name": "loop7", "serial": None, "wwn": None, "loop_backing_file": "/srv/lab/d7.img",
                    "size_bytes": 268435456}]}
DIRECTORY = {"target": {"path": "/srv/d0"}, "kind": "path", "source": "inventory", "requested": "filesystem",
             "class": "filesystem", "granted": True, "device": "loop5", "device_path": "/dev/loop5",
             "disks": ["loop5"], "refusals": [], "grant": None, "filesystem": "ext4", "mount_point": "/srv/d0",
             "not_a_disk": False}
SELECTED_RAW = {"target": {"device": "/dev/loop7", "mode": "raw_read"}, "kind": "device", "source": "select",
                "requested": "raw_read", "class": "raw_read", "granted": True, "device": "loop7",
                "device_path": "/dev/loop7", "disks": ["loop7"], "refusals": [], "grant": GRANT, "filesystem": None,
                "mount_point": None, "not_a_disk": False}
IDENTITIES = {"/srv/d0": {"disks": [{"name": "loop5", "serial": None}]},
              "/dev/loop7": {"disks": [{"name": "loop7", "serial": None}]}}


@pytest.mark.parametrize("resolved, selected", [
    ([DIRECTORY], []),
    ([DIRECTORY, SELECTED_RAW], [{"device": "/dev/loop7", "mode": "raw_read"}]),
], ids=["inventory-directory", "directory-and-selected-raw-disk"])
def test_the_quiesce_completes_the_request_to_the_one_the_benchmark_role_makes_from_the_facts(resolved, selected):
    inventory = [{"path": "/srv/d0"}]
    facts = {"diskproof_targets_resolved": resolved, "diskproof_selected_targets": selected,
             "diskproof_target_identities": IDENTITIES}
    before = benchmark_request(inventory, {})       # the playbook's request: no discovery fact yet
    assert before["identities"] == {} and before["classes"] == {} and before["targets"] == inventory
    completed = plan_request_with(before, facts)    # what the quiesce module plans with and hands back
    assert completed == benchmark_request(inventory, facts)
    assert completed["targets"] == inventory + selected
    assert completed["classes"] == ({"/dev/loop7": GRANT} if selected else {})


def test_facts_an_earlier_discovery_left_do_not_add_a_selected_target_twice():
    inventory = [{"path": "/srv/d0"}]
    selected = [{"device": "/dev/loop7", "mode": "raw_read"}]
    facts = {"diskproof_targets_resolved": [DIRECTORY, SELECTED_RAW], "diskproof_selected_targets": selected,
             "diskproof_target_identities": IDENTITIES}
    before = benchmark_request(inventory, facts)    # a play before this one discovered the same disks
    completed = plan_request_with(before, facts)
    assert completed["targets"] == inventory + selected
    assert completed == benchmark_request(inventory, facts)
