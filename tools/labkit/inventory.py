"""Pure: the Ansible inventory of a running lab (group `lab`), built from its SPEC and the loop
devices it got. `diskproof_targets` is what the roles benchmark; `diskproof_lab_disks` is the truth
(device and throttles) tests compare results against."""
from __future__ import annotations

from typing import Any

import yaml

from .spec import LabSpec

SSH_COMMON_ARGS = ("-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 "
                   "-o ServerAliveInterval=2 -o ServerAliveCountMax=2")


def build_inventory(spec: LabSpec, devices: dict[str, list[dict[str, str]]], key_path: str) -> dict[str, Any]:
    """devices[host][disk index] = {"device": "loop7", "major_minor": "7:7"}."""
    hosts: dict[str, Any] = {}
    for host in spec.hosts:
        targets: list[dict[str, str]] = []
        truth: list[dict[str, Any]] = []
        for disk in host.disks:
            device = devices[host.name][disk.index]
            targets.append({"path": disk.path} if disk.path else {"device": f"/dev/{device['device']}"})
            truth.append({
                "index": disk.index,
                "mode": disk.mode,
                "device": device["device"],
                "major_minor": device["major_minor"],
                "size_bytes": disk.size_bytes,
                **disk.speeds,
                **({key: value for key, value in disk.fob.items() if value} if disk.fob_bytes else {}),
                **({key: value for key, value in disk.spikes.items() if value} if disk.latency_spike_ms else {}),
                **{key: value for key, value in disk.data_faults.items() if value is not None},
                **({**disk.stall, "lower_device": device.get("lower_device")} if disk.stalls else {}),
                "path": disk.path,
            })
        host_vars: dict[str, Any] = {"ansible_host": host.address, "diskproof_lab_init": host.init}
        if host.init != "systemd":
            # A SysV lab host's load average is this whole machine's: no idle gate on it. A systemd host
            # has a cgroup of its own, whose CPU time the quiesce module reads instead (docs/quiesce.md).
            host_vars["quiesce_idle_max_load_per_cpu"] = 0
        if host.memory_bytes is not None:
            host_vars["diskproof_memory_bytes"] = host.memory_bytes
            # The lab's memory figure is a declaration (the lab shares this machine's RAM): the cache
            # fence makes it true for buffered tests, so 2 x the figure defeats the page cache.
            host_vars["diskproof_cache_fence_bytes"] = host.memory_bytes
        host_vars["diskproof_targets"] = targets
        host_vars["diskproof_lab_disks"] = truth
        hosts[host.name] = host_vars
    return {
        "all": {
            "children": {
                "lab": {
                    "vars": {
                        "ansible_user": "root",
                        "ansible_ssh_private_key_file": key_path,
                        "ansible_python_interpreter": "/usr/bin/python3",
                        "ansible_ssh_common_args": SSH_COMMON_ARGS,
                        # Ansible puts its own -o ConnectTimeout=<timeout, default 10> BEFORE the common
                        # args and ssh keeps the first value: without this the 5 s above is ignored.
                        "ansible_ssh_timeout": 5,
                        # Lab hosts are logged into as root and have no sudo.
                        "diskproof_become": False,
                        # Lab hosts share this machine's /var/lib; /srv is their own.
                        "quiesce_state_dir": "/srv/diskproof-state",
                        # Lab disks are small (1 GiB): keep 64 MiB free instead of the 1 GiB default.
                        "benchmark_reserve_min_bytes": 67108864,
                    },
                    "hosts": hosts,
                },
            },
        },
    }


def render_inventory(inventory: dict[str, Any], header: str) -> str:
    body = yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False, width=160)
    comments = "".join(f"# {line}\n" for line in header.splitlines())
    return f"---\n{comments}{body}"
