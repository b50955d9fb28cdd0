"""SPEC validation of tools/lab: good SPECs build the expected lab, bad ones list every problem, exactly."""
from __future__ import annotations

import os
import textwrap

import pytest

from labkit.fob import phase_at
from labkit.inventory import build_inventory
from labkit.spec import (MAX_IFNAME_LEN, SpecError, format_bytes, load_spec, parse_size, parse_spec_text,
                         validate_spec)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

DISK = {"size": "1GiB", "read_bytes_per_s": 33554432, "write_bytes_per_s": 33554432, "read_iops": 400, "write_iops": 400}


def spec_with(**overrides: object) -> dict:
    """A valid three-host SPEC with top-level keys replaced."""
    spec = {
        "name": "t1",
        "subnet": "10.231.99.0/24",
        "defaults": {"memory_bytes": 134217728, "disks": [dict(DISK)]},
        "hosts": [{"name": "n01"}, {"name": "n02"}, {"name": "n03"}],
    }
    spec.update(overrides)
    return spec


def problems_of(data: object) -> list[str]:
    with pytest.raises(SpecError) as caught:
        validate_spec(data)
    return caught.value.problems


# --- the shipped SPECs ---

def test_rack6_spec() -> None:
    lab = load_spec(os.path.join(REPO_ROOT, "lab", "rack6.yml"))
    assert lab.name == "rack6"
    assert [h.name for h in lab.hosts] == [f"rack6-n0{i}" for i in range(1, 7)]
    assert [h.address for h in lab.hosts] == [f"10.231.6.{i}" for i in range(11, 17)]
    assert lab.bridge_address == "10.231.6.1"
    assert all(h.memory_bytes == 134217728 for h in lab.hosts)
    speeds = [(h.disks[0].write_bytes_per_s, h.disks[0].read_iops) for h in lab.hosts]
    assert sorted(speeds) == [(16777216, 200)] + [(33554432, 400)] * 5
    assert all(len(h.disks) == 1 and h.disks[0].size_bytes == 1 << 30 and h.disks[0].path == "/srv/diskproof/d0" for h in lab.hosts)
    # The demo rack is half systemd, half SysV (issue 15), and the slow disk sits on a systemd host.
    assert [h.init for h in lab.hosts] == ["sysv", "systemd"] * 3
    assert lab.host("rack6-n04").init == "systemd"


def test_molecule_spec_can_run_next_to_rack6() -> None:
    rack6 = load_spec(os.path.join(REPO_ROOT, "lab", "rack6.yml"))
    molci = load_spec(os.path.join(REPO_ROOT, "lab", "molecule.yml"))
    assert molci.name == "molci" and len(molci.hosts) == 3
    assert molci.subnet != rack6.subnet
    assert len({(h.disks[0].write_bytes_per_s, h.disks[0].write_iops) for h in molci.hosts}) == 2  # one slow host
    assert not {h.veth for h in rack6.hosts} & {h.veth for h in molci.hosts}
    assert not {h.netns for h in rack6.hosts} & {h.netns for h in molci.hosts}


# --- good SPECs ---

def test_defaults_are_inherited_and_overridden() -> None:
    lab = validate_spec(spec_with(hosts=[
        {"name": "n01"},
        {"name": "n02", "memory_bytes": "256MiB", "disks": [{"size": "64MiB", "mode": "raw"}, {"size": 33554432}]},
        {"name": "n03", "disks": []},
    ]))
    n01, n02, n03 = lab.hosts
    assert n01.memory_bytes == 134217728 and n01.disks[0].write_iops == 400
    assert n02.memory_bytes == 268435456
    assert [(d.index, d.mode, d.size_bytes, d.path) for d in n02.disks] == [
        (0, "raw", 67108864, None), (1, "filesystem", 33554432, "/srv/diskproof/d1")]
    assert n02.disks[0].speeds == {"read_bytes_per_s": None, "write_bytes_per_s": None, "read_iops": None, "write_iops": None}
    assert n03.disks == ()


def test_default_subnet_is_stable_and_private() -> None:
    first = validate_spec({"name": "abc", "hosts": [{"name": "a", "disks": []}]})
    second = validate_spec({"name": "abc", "hosts": [{"name": "a", "disks": []}]})
    assert first.subnet == second.subnet and first.subnet.startswith("10.231.") and first.subnet.endswith(".0/24")
    assert first.hosts[0].address == first.subnet.replace(".0/24", ".11")


def test_interface_names_fit_at_the_limits() -> None:
    hosts = [{"name": f"h{i}", "disks": []} for i in range(244)]
    lab = validate_spec({"name": "abcdefgh", "subnet": "192.168.250.0/24", "hosts": hosts})
    assert lab.hosts[-1].address == "192.168.250.254"
    assert max(len(name) for name in [lab.bridge, *(h.veth for h in lab.hosts)]) <= MAX_IFNAME_LEN


@pytest.mark.parametrize(("value", "expected"), [
    (1073741824, 1073741824), ("1GiB", 1 << 30), ("512 MiB", 512 << 20), ("16mib", 16 << 20), ("2GB", 2 * 10 ** 9),
    ("4096", 4096), ("1TiB", 1 << 40), ("3kB", 3000), ("7B", 7),
])
def test_parse_size(value: object, expected: int) -> None:
    assert parse_size(value) == expected


@pytest.mark.parametrize("value", ["1.5GiB", "1G", "GiB", "", "-1GiB", 1.0, True, None, [1]])
def test_parse_size_refuses(value: object) -> None:
    with pytest.raises(ValueError):
        parse_size(value)


@pytest.mark.parametrize(("count", "text"), [(1 << 30, "1GiB"), (33554432, "32MiB"), (1536, "1536B"), (3 << 10, "3KiB"), (0, "0B")])
def test_format_bytes(count: int, text: str) -> None:
    assert format_bytes(count) == text


# --- bad SPECs: every problem, in document order, with its path ---

def test_init_defaults_to_sysv_and_is_inherited_and_overridden() -> None:
    assert {h.init for h in validate_spec(spec_with()).hosts} == {"sysv"}
    lab = validate_spec(spec_with(defaults={"memory_bytes": 134217728, "init": "systemd", "disks": [dict(DISK)]},
                                  hosts=[{"name": "n01"}, {"name": "n02", "init": "sysv"}]))
    assert [h.init for h in lab.hosts] == ["systemd", "sysv"]
    assert type(lab).from_dict(lab.to_dict()) == lab
    # A lab.json written before the key existed reads back as SysV hosts.
    old = lab.to_dict()
    for host in old["hosts"]:
        del host["init"]
    assert {h.init for h in type(lab).from_dict(old).hosts} == {"sysv"}


def test_fresh_ssd_keys() -> None:
    lab = validate_spec(spec_with(hosts=[{"name": "n01", "disks": [
        dict(DISK, mode="raw", fob_bytes="64MiB", steady_write_iops=150),
        dict(DISK, mode="raw", fob_bytes=33554432, steady_write_iops=100, unsteady_period_s=3),
        dict(DISK)]}]))
    fresh, unsteady, plain = lab.hosts[0].disks
    assert fresh.fob == {"fob_bytes": 67108864, "steady_write_iops": 150, "unsteady_period_s": None}
    assert unsteady.fob == {"fob_bytes": 33554432, "steady_write_iops": 100, "unsteady_period_s": 3}
    assert plain.fob == {"fob_bytes": None, "steady_write_iops": None, "unsteady_period_s": None}
    assert type(lab).from_dict(lab.to_dict()) == lab
    devices = {"n01": [{"device": "loop%d" % i, "major_minor": "7:%d" % i} for i in range(3)]}
    truth = build_inventory(lab, devices, "/k")["all"]["children"]["lab"]["hosts"]["n01"]["diskproof_lab_disks"]
    assert truth[0]["fob_bytes"] == 67108864 and truth[0]["steady_write_iops"] == 150 and "unsteady_period_s" not in truth[0]
    assert "fob_bytes" not in truth[2]


def test_latency_spike_keys() -> None:
    lab = validate_spec(spec_with(hosts=[{"name": "n01", "disks": [
        dict(DISK, latency_spike_ms=200, latency_spike_period_s=2), dict(DISK)]}]))
    spiky, plain = lab.hosts[0].disks
    assert spiky.spikes == {"latency_spike_ms": 200, "latency_spike_period_s": 2}
    assert plain.spikes == {"latency_spike_ms": None, "latency_spike_period_s": None}
    assert type(lab).from_dict(lab.to_dict()) == lab
    devices = {"n01": [{"device": "loop%d" % i, "major_minor": "7:%d" % i} for i in range(2)]}
    truth = build_inventory(lab, devices, "/k")["all"]["children"]["lab"]["hosts"]["n01"]["diskproof_lab_disks"]
    assert (truth[0]["latency_spike_ms"], truth[0]["latency_spike_period_s"]) == (200, 2)
    assert "latency_spike_ms" not in truth[1]


def test_sparse_disks_are_named_and_default_to_allocated() -> None:
    lab = validate_spec(spec_with(hosts=[{"name": "n01", "disks": [dict(DISK), dict(DISK, sparse=True)]}]))
    allocated, sparse = lab.hosts[0].disks
    assert (allocated.sparse, sparse.sparse) == (False, True)
    assert type(lab).from_dict(lab.to_dict()) == lab
    with pytest.raises(SpecError) as caught:
        validate_spec(spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, sparse="yes")]}]))
    assert caught.value.problems == ['hosts[0].disks[0].sparse: must be true or false, got "yes"']


def test_buffered_writes_default_to_together() -> None:
    lab = validate_spec(spec_with())
    assert lab.buffered_writes == "together"
    turns = validate_spec(spec_with(buffered_writes="one_at_a_time"))
    assert turns.buffered_writes == "one_at_a_time"
    assert type(turns).from_dict(turns.to_dict()) == turns
    # a lab.json written before the key existed reads back as the default
    old = lab.to_dict()
    del old["buffered_writes"]
    assert type(lab).from_dict(old) == lab
    with pytest.raises(SpecError) as caught:
        validate_spec(spec_with(buffered_writes="serial"))
    assert caught.value.problems == ['buffered_writes: must be one of together, one_at_a_time, got "serial"']


@pytest.mark.parametrize(("written", "settled_at", "now", "period", "phase"), [
    (0, None, 10.0, 0, "fresh"),
    (99, None, 10.0, 0, "fresh"),            # one byte short of fob_bytes=100
    (100, 5.0, 10.0, 0, "steady"),
    (100, 5.0, 500.0, 0, "steady"),          # settles for good without a period
    (100, 5.0, 6.9, 2, "unsteady-steady"),   # first period after settling: steady
    (100, 5.0, 7.0, 2, "unsteady-fresh"),    # second: fresh again
    (100, 5.0, 9.5, 2, "unsteady-steady"),
])
def test_fresh_ssd_phase(written: int, settled_at: object, now: float, period: int, phase: str) -> None:
    assert phase_at(written, 100, settled_at, now, period) == phase


BAD_SPECS = [
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, fob_bytes="1.5GiB", steady_write_iops=0),
                                                   dict(DISK, fob_bytes="64MiB"),
                                                   dict(DISK, steady_write_iops=10, unsteady_period_s=2)]}]),
        ['hosts[0].disks[0].fob_bytes: must be a positive whole number of bytes or a size like 128MiB, got "1.5GiB"',
         "hosts[0].disks[0].steady_write_iops: must be a positive integer, got 0",
         "hosts[0].disks[1].steady_write_iops: required with fob_bytes (the write IOPS once it is written)",
         "hosts[0].disks[2].steady_write_iops: needs fob_bytes (how much the disk takes at its fresh speed)",
         "hosts[0].disks[2].unsteady_period_s: needs fob_bytes (how much the disk takes at its fresh speed)"],
        id="fresh-ssd"),
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, latency_spike_ms=200),
                                                   dict(DISK, latency_spike_ms=2000, latency_spike_period_s=2),
                                                   dict(DISK, latency_spike_ms=0, latency_spike_period_s=2),
                                                   dict(DISK, fob_bytes="64MiB", steady_write_iops=100,
                                                        latency_spike_ms=200, latency_spike_period_s=2)]}]),
        ["hosts[0].disks[0].latency_spike_period_s: required with latency_spike_ms (latency spikes: how long each, how often)",
         "hosts[0].disks[1].latency_spike_ms: must be shorter than latency_spike_period_s (2 s), got 2000 ms",
         "hosts[0].disks[2].latency_spike_ms: must be a positive integer, got 0",
         "hosts[0].disks[3].latency_spike_ms: cannot be combined with fob_bytes (both set the IOPS throttles)"],
        id="latency-spikes"),
    pytest.param(
        spec_with(defaults={"init": "upstart", "disks": [dict(DISK)]},
                  hosts=[{"name": "n01", "init": "Systemd"}, {"name": "n02", "init": ["systemd"]}, {"name": "n03"}]),
        ['defaults.init: must be one of sysv, systemd, got "upstart"',
         'hosts[0].init: must be one of sysv, systemd, got "Systemd"',
         "hosts[1].init: must be one of sysv, systemd, got a list"],
        id="init"),
    pytest.param(
        spec_with(hosts=[{"name": "n01"}, {"name": "n02"}, {"name": "n03", "disks": [dict(DISK, write_iops=-5)]}]),
        ["hosts[2].disks[0].write_iops: must be a positive integer, got -5"],
        id="negative-iops"),
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, read_bytes_per_s=0, write_bytes_per_s=1.5, read_iops="400",
                                                        write_iops=True)]}]),
        ["hosts[0].disks[0].read_bytes_per_s: must be a positive integer, got 0",
         "hosts[0].disks[0].write_bytes_per_s: must be a positive integer, got 1.5",
         'hosts[0].disks[0].read_iops: must be a positive integer, got "400"',
         "hosts[0].disks[0].write_iops: must be a positive integer, got true"],
        id="speeds"),
    pytest.param(
        spec_with(color="red", defaults={"memory_bytes": 1, "disk": {}},
                  hosts=[{"name": "n01", "cpus": 2, "disks": [dict(DISK, speed=1)]}]),
        ["color: unknown key (allowed: buffered_writes, defaults, hosts, name, subnet)",
         "defaults.disk: unknown key (allowed: disks, init, memory_bytes)",
         "hosts[0].cpus: unknown key (allowed: disks, init, memory_bytes, name)",
         "hosts[0].disks[0].speed: unknown key (allowed: flip_byte_at, fob_bytes, latency_spike_ms, "
         "latency_spike_period_s, mode, read_bytes_per_s, read_iops, size, sparse, stale_region_at, stale_region_bytes, "
         "stall_after_bytes, stall_s, steady_write_iops, unsteady_period_s, write_bytes_per_s, write_iops)"],
        id="unknown-keys-at-every-level"),
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, stall_s=5), dict(DISK, stall_after_bytes="8M"),
                                                   dict(DISK, stall_after_bytes="8MiB", stall_s=0)]}]),
        ["hosts[0].disks[0].stall_s: needs stall_after_bytes (when the stall begins)",
         'hosts[0].disks[1].stall_after_bytes: must be a whole number of bytes or a size like 8MiB, got "8M"',
         "hosts[0].disks[2].stall_s: must be a positive integer, got 0"],
        id="unknown-keys-at-every-level"),
    pytest.param(
        spec_with(hosts=[{"name": "n01"}, {"name": "n02"}, {"name": "n01"}, {"name": "n02"}]),
        ['hosts[2].name: duplicate host name "n01" (first at hosts[0])',
         'hosts[3].name: duplicate host name "n02" (first at hosts[1])'],
        id="duplicate-hosts"),
    pytest.param(spec_with(name="Rack6"), ['name: must be 1-8 characters from a-z and 0-9, got "Rack6"'], id="name-case"),
    pytest.param(spec_with(name="rack-six"), ['name: must be 1-8 characters from a-z and 0-9, got "rack-six"'], id="name-dash"),
    pytest.param(spec_with(name="abcdefghi"), ['name: must be 1-8 characters from a-z and 0-9, got "abcdefghi"'], id="name-long"),
    pytest.param(spec_with(name=6), ["name: must be 1-8 characters from a-z and 0-9, got 6"], id="name-int"),
    pytest.param({k: v for k, v in spec_with().items() if k != "name"}, ["name: required"], id="name-missing"),
    pytest.param(
        spec_with(hosts=[{"name": "-n1"}, {"name": "n_2"}, {"name": "N3"}, {"name": "n" * 33}, {"name": None}, {}]),
        [f"hosts[{i}].name: must be 1-32 characters from a-z, 0-9 and '-', not starting or ending with '-', got {shown}"
         for i, shown in enumerate(['"-n1"', '"n_2"', '"N3"', '"' + "n" * 33 + '"', "null"])]
        + ["hosts[5].name: required"],
        id="host-names"),
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [
            {"size": "1.5GiB"}, {"size": "1G"}, {"size": 1000}, {"size": 16777217},
            {"size": "2TiB"}, {"size": True}, {"size": -1}, {"mode": "raw"}]}]),
        ['hosts[0].disks[0].size: must be a whole number of bytes or a size like 1GiB, got "1.5GiB"',
         'hosts[0].disks[1].size: must be a whole number of bytes or a size like 1GiB, got "1G"',
         "hosts[0].disks[2].size: must be at least 16MiB (16777216 bytes), got 1000",
         "hosts[0].disks[3].size: must be a multiple of 512 bytes, got 16777217",
         'hosts[0].disks[4].size: must be at most 1TiB, got "2TiB"',
         "hosts[0].disks[5].size: must be a whole number of bytes or a size like 1GiB, got true",
         "hosts[0].disks[6].size: must be at least 16MiB (16777216 bytes), got -1",
         "hosts[0].disks[7].size: required"],
        id="sizes"),
    pytest.param(
        spec_with(hosts=[{"name": "n01", "disks": [dict(DISK, mode="ext4")]}]),
        ['hosts[0].disks[0].mode: must be one of filesystem, raw, got "ext4"'],
        id="mode"),
    pytest.param(spec_with(subnet="8.8.8.0/24"),
                 ['subnet: must be inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, got "8.8.8.0/24"'], id="subnet-public"),
    pytest.param(spec_with(subnet="10.1.0.0/16"), ["subnet: must be a /24, got /16"], id="subnet-16"),
    pytest.param(spec_with(subnet="10.1.2.0"), ["subnet: must be a /24, got /32"], id="subnet-no-prefix"),
    pytest.param(spec_with(subnet="10.1.2.5/24"), ['subnet: host bits set (did you mean 10.1.2.0/24?), got "10.1.2.5/24"'], id="subnet-host-bits"),
    pytest.param(spec_with(subnet="banana"), ['subnet: not an IPv4 network like 10.231.7.0/24, got "banana"'], id="subnet-garbage"),
    pytest.param(spec_with(subnet=10), ["subnet: must be a string like 10.231.7.0/24, got 10"], id="subnet-int"),
    pytest.param(spec_with(hosts=[{"name": f"h{i}"} for i in range(245)]),
                 ["hosts: 245 hosts do not fit in a /24 subnet (at most 244, addresses .11 to .254)"], id="too-many-hosts"),
    pytest.param({k: v for k, v in spec_with().items() if k != "hosts"}, ["hosts: required"], id="hosts-missing"),
    pytest.param(spec_with(hosts=[]), ["hosts: must be a non-empty list, got a list"], id="hosts-empty"),
    pytest.param(spec_with(hosts={"n01": {}}), ["hosts: must be a non-empty list, got a mapping"], id="hosts-mapping"),
    pytest.param(spec_with(hosts=["n01", {"name": "n02"}]), ['hosts[0]: must be a mapping, got "n01"'], id="host-not-mapping"),
    pytest.param(
        spec_with(defaults={}, hosts=[{"name": "n01"}, {"name": "n02", "disks": {"size": "1GiB"}},
                                      {"name": "n03", "disks": [dict(DISK)] * 17}, {"name": "n04", "disks": ["1GiB"]}]),
        ["hosts[0].disks: required (or set defaults.disks)",
         "hosts[1].disks: must be a list, got a mapping",
         "hosts[2].disks: at most 16 disks per host, got 17",
         'hosts[3].disks[0]: must be a mapping, got "1GiB"'],
        id="disks-shape"),
    pytest.param(
        spec_with(defaults={"memory_bytes": 0}, hosts=[{"name": "n01", "memory_bytes": "lots", "disks": []}]),
        ["defaults.memory_bytes: must be a positive whole number of bytes or a size like 128MiB, got 0",
         'hosts[0].memory_bytes: must be a positive whole number of bytes or a size like 128MiB, got "lots"'],
        id="memory"),
    pytest.param(
        spec_with(defaults={"disks": [{"size": "1GiB", "read_iops": -1}]}),
        ["defaults.disks[0].read_iops: must be a positive integer, got -1"],
        id="bad-defaults-reported-once"),
    pytest.param(spec_with(defaults=[1]), ["defaults: must be a mapping, got a list"], id="defaults-not-mapping"),
    pytest.param(
        spec_with(name="X", subnet="1.2.3.0/24", extra=1,
                  hosts=[{"name": "n01", "disks": [{"size": 1, "write_iops": -5}]}, {"name": "n01", "disks": []}]),
        ["extra: unknown key (allowed: buffered_writes, defaults, hosts, name, subnet)",
         'name: must be 1-8 characters from a-z and 0-9, got "X"',
         'subnet: must be inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, got "1.2.3.0/24"',
         "hosts[0].disks[0].size: must be at least 16MiB (16777216 bytes), got 1",
         "hosts[0].disks[0].write_iops: must be a positive integer, got -5",
         'hosts[1].name: duplicate host name "n01" (first at hosts[0])'],
        id="all-at-once"),
]


@pytest.mark.parametrize(("data", "expected"), BAD_SPECS)
def test_bad_spec_lists_every_problem(data: object, expected: list[str]) -> None:
    assert problems_of(data) == expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("", ["(top level): must be a mapping, got null"], id="empty"),
    pytest.param("- name: a\n", ["(top level): must be a mapping, got a list"], id="list"),
    pytest.param("name: a\nname: b\nhosts: []\n", ['line 2, column 1: duplicate key "name"'], id="duplicate-key"),
    pytest.param("name: [a\n", ["line 2, column 1: expected ',' or ']', but got '<stream end>'"], id="syntax"),
])
def test_bad_yaml(text: str, expected: list[str]) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec_text(text)
    assert caught.value.problems == expected


def test_unreadable_spec_file(tmp_path: object) -> None:
    missing = os.path.join(str(tmp_path), "nope.yml")
    with pytest.raises(SpecError) as caught:
        load_spec(missing)
    assert caught.value.problems == [f"{missing}: cannot read: No such file or directory"]


def test_yaml_text_round_trip() -> None:
    text = textwrap.dedent("""\
        name: yml
        hosts:
          - name: a
            disks:
              - {size: 32MiB, mode: raw, write_iops: 10}
        """)
    lab = parse_spec_text(text)
    assert lab.hosts[0].disks[0].write_iops == 10
    assert type(lab).from_dict(lab.to_dict()) == lab


# --- the inventory a lab writes (pure part) ---

def test_inventory_shape() -> None:
    lab = validate_spec(spec_with(hosts=[{"name": "n01", "disks": [dict(DISK), dict(DISK, size="64MiB", mode="raw")]}]))
    devices = {"n01": [{"device": "loop7", "major_minor": "7:7"}, {"device": "loop8", "major_minor": "7:8"}]}
    inventory = build_inventory(lab, devices, "/run/diskproof-lab/t1/id_ed25519")
    group = inventory["all"]["children"]["lab"]
    assert group["vars"]["ansible_user"] == "root"
    assert group["vars"]["ansible_ssh_private_key_file"] == "/run/diskproof-lab/t1/id_ed25519"
    assert "ServerAliveInterval=2" in group["vars"]["ansible_ssh_common_args"]
    host = group["hosts"]["n01"]
    assert host["ansible_host"] == "10.231.99.11"
    assert host["diskproof_lab_init"] == "sysv"
    assert host["quiesce_idle_max_load_per_cpu"] == 0  # a SysV host's load average is the machine's
    lab = validate_spec(spec_with(defaults={"init": "systemd", "disks": []}, hosts=[{"name": "n01"}]))
    systemd_host = build_inventory(lab, {"n01": []}, "/k")["all"]["children"]["lab"]["hosts"]["n01"]
    assert systemd_host["diskproof_lab_init"] == "systemd" and "quiesce_idle_max_load_per_cpu" not in systemd_host
    assert host["diskproof_memory_bytes"] == 134217728
    assert host["diskproof_targets"] == [{"path": "/srv/diskproof/d0"}, {"device": "/dev/loop8"}]
    assert host["diskproof_lab_disks"][1] == {
        "index": 1, "mode": "raw", "device": "loop8", "major_minor": "7:8", "size_bytes": 67108864,
        "read_bytes_per_s": 33554432, "write_bytes_per_s": 33554432, "read_iops": 400, "write_iops": 400, "path": None}
