"""Pure SPEC parsing and validation: YAML text in, a LabSpec or a SpecError listing every problem out.

Nothing here touches the system, so a bad SPEC is refused before anything is created and the
messages can be tested exactly. Every problem names its path in the SPEC, for example
``hosts[2].disks[0].write_iops: must be a positive integer, got -5``.
"""
from __future__ import annotations

import ipaddress
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

import yaml

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB

LAB_NAME_RE = re.compile(r"[a-z0-9]{1,8}")
HOST_NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
SIZE_RE = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")
SIZE_UNITS = {
    "": 1, "b": 1,
    "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
    "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
}

# Hosts get .11 upward; .1 is the bridge, .2-.10 stay free for the controller side if ever needed.
FIRST_HOST_OCTET = 11
LAST_HOST_OCTET = 254
MAX_HOSTS = LAST_HOST_OCTET - FIRST_HOST_OCTET + 1
MAX_DISKS_PER_HOST = 16
# ext4 with a journal needs some room; loop devices want whole 512-byte sectors.
MIN_DISK_BYTES = 16 * MiB
MAX_DISK_BYTES = TiB
SECTOR_BYTES = 512
MAX_IFNAME_LEN = 15  # IFNAMSIZ - 1

MODES = ("filesystem", "raw")
# sysv: sshd in a network + mount namespace, SysV `service` (the default, ~0.1 s a host);
# systemd: a real systemd booted by systemd-nspawn on an overlay of / (~3 s a host).
INITS = ("sysv", "systemd")
DEFAULT_INIT = "sysv"
SPEED_KEYS = ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops")
TOP_KEYS = ("name", "subnet", "buffered_writes", "defaults", "hosts")
# How the lab's hosts' buffered writes (dd conv=fdatasync) share the machine's one page cache and writeback:
# together (the default) lets them meet, which is what this machine does to eight hosts writing at once;
# one_at_a_time makes a host's buffered dd wait until no other host of the lab runs one, as if each host had its
# own kernel, through a stand-in in front of dd (tools/labkit/lab-dd: a host's dd is then a chain of processes,
# which tests of process trees see). docs/lab.md, "Buffered writes"; benchmarks/lab_writes.py measures both.
BUFFERED_WRITES = ("together", "one_at_a_time")
DEFAULT_BUFFERED_WRITES = "together"
DEFAULTS_KEYS = ("memory_bytes", "init", "disks")
HOST_KEYS = ("name", "memory_bytes", "init", "disks")
# A disk that behaves like a fresh SSD: fob_bytes (fresh out of the box) written at its write speeds,
# then its write IOPS throttle drops to steady_write_iops (or, with unsteady_period_s, alternates
# between the two every that many seconds: a disk that never settles). tools/labkit/fob.py watches.
FOB_KEYS = ("fob_bytes", "steady_write_iops", "unsteady_period_s")
# A planted fault, latency spikes: every latency_spike_period_s seconds the disk's read and write IOPS throttles drop to 1
# for latency_spike_ms milliseconds (a fail-slow drive's tail). tools/labkit/spikes.py makes them.
SPIKE_KEYS = ("latency_spike_ms", "latency_spike_period_s")
# Planted faults, wrong data: byte flip_byte_at gets one bit flipped after each write to its block; the region of
# stale_region_bytes (default 64 KiB) at stale_region_at keeps its first data, every later write undone (a write
# that never landed). Offsets into the disk, as bytes or a size like 40MiB. tools/labkit/datafault.py plants them.
DATA_FAULT_KEYS = ("flip_byte_at", "stale_region_at", "stale_region_bytes")
# A planted fault, a stall: once stall_after_bytes have been read or written through the disk, it holds its I/O
# (requests in flight, none completing) for stall_s seconds (default 30), once. tools/labkit/stall.py holds it.
STALL_KEYS = ("stall_after_bytes", "stall_s")
DEFAULT_STALL_S = 30
# sparse: true keeps the image sparse (no memory taken up front); buffered writes to never-written parts of it then
# cost the machine extra CPU (docs/lab.md, "Buffered writes"), so the lab's accuracy holds only for allocated disks.
DISK_KEYS = ("size", "mode", "sparse") + SPEED_KEYS + FOB_KEYS + SPIKE_KEYS + DATA_FAULT_KEYS + STALL_KEYS
PRIVATE_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
# Inside each host, filesystem disk N is mounted here.
DISK_MOUNT_ROOT = "/srv/diskproof"


class SpecError(Exception):
    """A SPEC that cannot be used; ``problems`` lists every problem found, in document order."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class DiskSpec:
    index: int
    mode: str
    size_bytes: int
    read_bytes_per_s: int | None = None
    write_bytes_per_s: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None
    fob_bytes: int | None = None
    steady_write_iops: int | None = None
    unsteady_period_s: int | None = None
    latency_spike_ms: int | None = None
    latency_spike_period_s: int | None = None
    flip_byte_at: int | None = None
    stale_region_at: int | None = None
    stale_region_bytes: int | None = None
    stall_after_bytes: int | None = None
    stall_s: int | None = None
    sparse: bool = False

    @property
    def path(self) -> str | None:
        """Where a filesystem disk is mounted inside its host (None for raw disks)."""
        return f"{DISK_MOUNT_ROOT}/d{self.index}" if self.mode == "filesystem" else None

    @property
    def speeds(self) -> dict[str, int | None]:
        return {key: getattr(self, key) for key in SPEED_KEYS}

    @property
    def fob(self) -> dict[str, int | None]:
        """The fresh-SSD keys (all None for an ordinary disk)."""
        return {key: getattr(self, key) for key in FOB_KEYS}

    @property
    def spikes(self) -> dict[str, int | None]:
        """The latency-spike keys (all None for a disk without the fault)."""
        return {key: getattr(self, key) for key in SPIKE_KEYS}

    @property
    def data_faults(self) -> dict[str, int | None]:
        """The wrong-data keys (all None for a disk without those faults)."""
        return {key: getattr(self, key) for key in DATA_FAULT_KEYS}

    @property
    def returns_wrong_data(self) -> bool:
        return self.flip_byte_at is not None or self.stale_region_at is not None

    @property
    def stalls(self) -> bool:
        """The disk holds its I/O once (the stall fault): it is a loop device over a loop device of its image."""
        return self.stall_after_bytes is not None

    @property
    def stall(self) -> dict[str, int | None]:
        """The stall keys, stall_s with its default (all None for a disk without the fault)."""
        if not self.stalls:
            return {key: None for key in STALL_KEYS}
        return {"stall_after_bytes": self.stall_after_bytes, "stall_s": self.stall_s or DEFAULT_STALL_S}


@dataclass(frozen=True)
class HostSpec:
    index: int
    name: str
    address: str
    memory_bytes: int | None
    disks: tuple[DiskSpec, ...]
    netns: str
    veth: str
    init: str = DEFAULT_INIT


@dataclass(frozen=True)
class LabSpec:
    name: str
    subnet: str
    bridge: str
    bridge_address: str
    hosts: tuple[HostSpec, ...]
    buffered_writes: str = DEFAULT_BUFFERED_WRITES

    @property
    def prefixlen(self) -> int:
        return ipaddress.IPv4Network(self.subnet).prefixlen

    def host(self, name: str) -> HostSpec:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/YAML safe); from_dict() reads it back."""
        return {
            "name": self.name,
            "subnet": self.subnet,
            "bridge": self.bridge,
            "bridge_address": self.bridge_address,
            "buffered_writes": self.buffered_writes,
            "hosts": [
                {
                    "index": h.index, "name": h.name, "address": h.address, "memory_bytes": h.memory_bytes,
                    "netns": h.netns, "veth": h.veth, "init": h.init,
                    "disks": [
                        {"index": d.index, "mode": d.mode, "size_bytes": d.size_bytes, "sparse": d.sparse, **d.speeds,
                         **d.fob, **d.spikes, **d.data_faults,
                         **{key: getattr(d, key) for key in STALL_KEYS}}
                        for d in h.disks
                    ],
                }
                for h in self.hosts
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabSpec:
        hosts = tuple(
            HostSpec(
                index=h["index"], name=h["name"], address=h["address"], memory_bytes=h["memory_bytes"],
                netns=h["netns"], veth=h["veth"], init=h.get("init", DEFAULT_INIT),
                disks=tuple(DiskSpec(**d) for d in h["disks"]),
            )
            for h in data["hosts"]
        )
        return cls(name=data["name"], subnet=data["subnet"], bridge=data["bridge"],
                   bridge_address=data["bridge_address"], hosts=hosts,
                   buffered_writes=data.get("buffered_writes", DEFAULT_BUFFERED_WRITES))


# --- names derived from the lab name (all interface names stay within 15 characters) ---

def bridge_name(lab: str) -> str:
    return f"dp{lab}br"


def veth_name(lab: str, host_index: int) -> str:
    # Ends in h<digits>, the bridge in "br": names of different labs can never collide.
    return f"dp{lab}h{host_index}"


def netns_name(lab: str, host: str) -> str:
    return f"dp-{lab}-{host}"


def default_subnet(lab: str) -> str:
    """A stable /24 per lab name, so two labs with different names rarely need a subnet set."""
    return f"10.231.{zlib.crc32(lab.encode()) % 254 + 1}.0/24"


# --- value helpers ---

def describe(value: Any) -> str:
    """How a SPEC value is quoted in messages: scalars as JSON, containers by kind."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None or isinstance(value, (bool, int, float, str)):
        return json.dumps(value)
    return type(value).__name__


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_size(value: Any) -> int:
    """Bytes from an integer or a string like "1GiB", "512 MiB", "2GB" (binary and SI units).

    Raises ValueError for anything else (floats, fractions, unknown units, booleans).
    """
    if is_int(value):
        return value
    if isinstance(value, str):
        match = SIZE_RE.fullmatch(value)
        if match and match.group(2).lower() in SIZE_UNITS:
            return int(match.group(1)) * SIZE_UNITS[match.group(2).lower()]
    raise ValueError(value)


def format_bytes(count: int) -> str:
    """Exact human form: the largest binary unit that divides the count, else plain bytes."""
    for unit, factor in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if count and count % factor == 0:
            return f"{count // factor}{unit}"
    return f"{count}B"


# --- YAML loading ---

class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (plain YAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {describe(key)}", mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_spec_text(text: str) -> LabSpec:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        raise SpecError([f"{where}: {exc.problem}"]) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"(yaml): {exc}"]) from None
    return validate_spec(data)


def load_spec(path: str) -> LabSpec:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror}"]) from None
    return parse_spec_text(text)


# --- validation ---

class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _check_keys(data: dict[Any, Any], allowed: tuple[str, ...], path: str, problems: _Problems) -> None:
    for key in data:
        if key not in allowed:
            problems.add(_join(path, key), f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _positive_int(value: Any, path: str, problems: _Problems) -> int | None:
    if is_int(value) and value > 0:
        return value
    problems.add(path, f"must be a positive integer, got {describe(value)}")
    return None


def _size_or_none(value: Any) -> int | None:
    """parse_size(value), None where it is no size (the caller says what it wanted)."""
    try:
        return parse_size(value)
    except ValueError:
        return None


def _memory(value: Any, path: str, problems: _Problems) -> int | None:
    count = _size_or_none(value)
    if count is not None and count > 0:
        return count
    problems.add(path, f"must be a positive whole number of bytes or a size like 128MiB, got {describe(value)}")
    return None


def _disk_size(value: Any, path: str, problems: _Problems) -> int | None:
    count = _size_or_none(value)
    if count is None:
        problems.add(path, f"must be a whole number of bytes or a size like 1GiB, got {describe(value)}")
    elif count < MIN_DISK_BYTES:
        problems.add(path, f"must be at least {format_bytes(MIN_DISK_BYTES)} ({MIN_DISK_BYTES} bytes), got {describe(value)}")
    elif count > MAX_DISK_BYTES:
        problems.add(path, f"must be at most {format_bytes(MAX_DISK_BYTES)}, got {describe(value)}")
    elif count % SECTOR_BYTES:
        problems.add(path, f"must be a multiple of {SECTOR_BYTES} bytes, got {describe(value)}")
    else:
        return count
    return None


def _disk(data: Any, index: int, path: str, problems: _Problems) -> DiskSpec | None:
    if not isinstance(data, dict):
        problems.add(path, f"must be a mapping, got {describe(data)}")
        return None
    before = len(problems.items)
    _check_keys(data, DISK_KEYS, path, problems)
    size = None
    if "size" not in data:
        problems.add(_join(path, "size"), "required")
    else:
        size = _disk_size(data["size"], _join(path, "size"), problems)
    mode = data.get("mode", "filesystem")
    if mode not in MODES:
        problems.add(_join(path, "mode"), f"must be one of {', '.join(MODES)}, got {describe(mode)}")
    speeds = {key: _positive_int(data[key], _join(path, key), problems) for key in SPEED_KEYS if key in data}
    sparse = data.get("sparse", False)
    if not isinstance(sparse, bool):
        problems.add(_join(path, "sparse"), f"must be true or false, got {describe(sparse)}")
    fob: dict[str, int | None] = {}
    if "fob_bytes" in data:
        fob["fob_bytes"] = _memory(data["fob_bytes"], _join(path, "fob_bytes"), problems)
        if "steady_write_iops" not in data:
            problems.add(_join(path, "steady_write_iops"), "required with fob_bytes (the write IOPS once it is written)")
    for key in ("steady_write_iops", "unsteady_period_s"):
        if key in data:
            if "fob_bytes" not in data:
                problems.add(_join(path, key), "needs fob_bytes (how much the disk takes at its fresh speed)")
            fob[key] = _positive_int(data[key], _join(path, key), problems)
    spikes = {key: _positive_int(data[key], _join(path, key), problems) for key in SPIKE_KEYS if key in data}
    for key, other in zip(SPIKE_KEYS, reversed(SPIKE_KEYS)):
        if key in data and other not in data:
            problems.add(_join(path, other), f"required with {key} (latency spikes: how long each, how often)")
    if spikes.get("latency_spike_ms") and spikes.get("latency_spike_period_s") and \
            spikes["latency_spike_ms"] >= 1000 * spikes["latency_spike_period_s"]:
        problems.add(_join(path, "latency_spike_ms"), f"must be shorter than latency_spike_period_s "
                     f"({spikes['latency_spike_period_s']} s), got {spikes['latency_spike_ms']} ms")
    if spikes and "fob_bytes" in data:
        problems.add(_join(path, "latency_spike_ms"), "cannot be combined with fob_bytes (both set the IOPS throttles)")
    faults = _data_faults(data, path, size, problems)
    stall: dict[str, int] = {}
    if "stall_after_bytes" in data:
        value = data["stall_after_bytes"] if is_int(data["stall_after_bytes"]) else _size_or_none(data["stall_after_bytes"])
        if value is None or value < 0:
            problems.add(_join(path, "stall_after_bytes"), f"must be a whole number of bytes or a size like 8MiB, got "
                         f"{describe(data['stall_after_bytes'])}")
        else:
            stall["stall_after_bytes"] = value
    if "stall_s" in data:
        if "stall_after_bytes" not in data:
            problems.add(_join(path, "stall_s"), "needs stall_after_bytes (when the stall begins)")
        stall["stall_s"] = _positive_int(data["stall_s"], _join(path, "stall_s"), problems)
    if len(problems.items) > before or size is None:
        return None
    return DiskSpec(index=index, mode=mode, size_bytes=size, sparse=sparse is True, **speeds, **fob, **spikes,
                    **faults, **stall)


def _data_faults(data: dict[Any, Any], path: str, size: int | None, problems: _Problems) -> dict[str, int]:
    """flip_byte_at, stale_region_at, stale_region_bytes: offsets inside the disk, the region whole blocks."""
    faults: dict[str, int] = {}
    for key in DATA_FAULT_KEYS:
        if key not in data:
            continue
        value = data[key] if is_int(data[key]) else _size_or_none(data[key])
        if value is None or value < (1 if key == "stale_region_bytes" else 0):
            problems.add(_join(path, key), f"must be a whole number of bytes or a size like 40MiB, got "
                         f"{describe(data[key])}")
            continue
        faults[key] = value
    if "stale_region_bytes" in faults and "stale_region_at" not in data:
        problems.add(_join(path, "stale_region_bytes"), "needs stale_region_at (where the stale region starts)")
    for key in ("stale_region_at", "stale_region_bytes"):
        if faults.get(key, 0) % 4096:
            problems.add(_join(path, key), f"must be a multiple of 4096 (whole blocks), got {faults[key]}")
    end = faults.get("stale_region_at", 0) + faults.get("stale_region_bytes", 64 * 1024) if "stale_region_at" in faults \
        else faults.get("flip_byte_at", -1) + 1
    if size is not None and max(end, faults.get("flip_byte_at", -1) + 1) > size:
        problems.add(_join(path, "flip_byte_at" if "stale_region_at" not in faults else "stale_region_at"),
                     f"must lie inside the disk ({size} bytes)")
    return faults


def _disks(data: Any, path: str, problems: _Problems) -> tuple[DiskSpec, ...] | None:
    if not isinstance(data, list):
        problems.add(path, f"must be a list, got {describe(data)}")
        return None
    if len(data) > MAX_DISKS_PER_HOST:
        problems.add(path, f"at most {MAX_DISKS_PER_HOST} disks per host, got {len(data)}")
        return None
    disks = [_disk(item, i, f"{path}[{i}]", problems) for i, item in enumerate(data)]
    if any(disk is None for disk in disks):
        return None
    return tuple(disk for disk in disks if disk is not None)


def _subnet(value: Any, problems: _Problems) -> str | None:
    shown = describe(value)
    if not isinstance(value, str):
        problems.add("subnet", f"must be a string like 10.231.7.0/24, got {shown}")
        return None
    try:
        network = ipaddress.IPv4Network(value, strict=False)
    except ValueError:
        problems.add("subnet", f"not an IPv4 network like 10.231.7.0/24, got {shown}")
        return None
    if network.prefixlen != 24:
        problems.add("subnet", f"must be a /24, got /{network.prefixlen}")
    elif str(network) != value.strip():
        problems.add("subnet", f"host bits set (did you mean {network}?), got {shown}")
    elif not any(network.subnet_of(private) for private in PRIVATE_NETWORKS):
        problems.add("subnet", f"must be inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, got {shown}")
    else:
        return str(network)
    return None


def validate_spec(data: Any) -> LabSpec:
    """Check a parsed SPEC completely and build the LabSpec; raise SpecError with every problem."""
    problems = _Problems()
    if not isinstance(data, dict):
        raise SpecError([f"(top level): must be a mapping, got {describe(data)}"])
    _check_keys(data, TOP_KEYS, "", problems)

    lab = data.get("name")
    if "name" not in data:
        problems.add("name", "required")
        lab = None
    elif not (isinstance(lab, str) and LAB_NAME_RE.fullmatch(lab)):
        problems.add("name", f"must be 1-8 characters from a-z and 0-9, got {describe(lab)}")
        lab = None

    if "subnet" in data:
        subnet = _subnet(data["subnet"], problems)
    else:
        subnet = default_subnet(lab) if lab else None

    buffered_writes = data.get("buffered_writes", DEFAULT_BUFFERED_WRITES)
    if buffered_writes not in BUFFERED_WRITES:
        problems.add("buffered_writes", f"must be one of {', '.join(BUFFERED_WRITES)}, got {describe(buffered_writes)}")

    defaults = data.get("defaults", {})
    default_memory: int | None = None
    default_disks: tuple[DiskSpec, ...] | None = None
    defaults_ok = True
    if not isinstance(defaults, dict):
        problems.add("defaults", f"must be a mapping, got {describe(defaults)}")
        defaults, defaults_ok = {}, False
    _check_keys(defaults, DEFAULTS_KEYS, "defaults", problems)
    if "memory_bytes" in defaults:
        default_memory = _memory(defaults["memory_bytes"], "defaults.memory_bytes", problems)
        defaults_ok = defaults_ok and default_memory is not None
    if "disks" in defaults:
        default_disks = _disks(defaults["disks"], "defaults.disks", problems)
        defaults_ok = defaults_ok and default_disks is not None
    default_init = DEFAULT_INIT
    if "init" in defaults:
        default_init = _init(defaults["init"], "defaults.init", problems) or DEFAULT_INIT

    hosts_data = data.get("hosts")
    hosts: list[HostSpec | None] = []
    if "hosts" not in data:
        problems.add("hosts", "required")
    elif not isinstance(hosts_data, list) or not hosts_data:
        problems.add("hosts", f"must be a non-empty list, got {describe(hosts_data)}")
    elif len(hosts_data) > MAX_HOSTS:
        problems.add("hosts", f"{len(hosts_data)} hosts do not fit in a /24 subnet "
                              f"(at most {MAX_HOSTS}, addresses .{FIRST_HOST_OCTET} to .{LAST_HOST_OCTET})")
    else:
        first_seen: dict[str, int] = {}
        for index, item in enumerate(hosts_data):
            # A defaults that is not a mapping is reported once; hosts then do not repeat "disks: required".
            disks_defaulted = "disks" in defaults or not isinstance(data.get("defaults", {}), dict)
            hosts.append(_host(item, index, lab, subnet, default_memory, default_disks, disks_defaulted,
                               first_seen, problems, default_init))

    if problems.items or not defaults_ok or lab is None or subnet is None or any(h is None for h in hosts):
        raise SpecError(problems.items or ["(top level): invalid SPEC"])
    network = ipaddress.IPv4Network(subnet)
    return LabSpec(
        name=lab, subnet=subnet, bridge=bridge_name(lab), bridge_address=str(network.network_address + 1),
        hosts=tuple(h for h in hosts if h is not None), buffered_writes=buffered_writes,
    )


def _host(data: Any, index: int, lab: str | None, subnet: str | None, default_memory: int | None,
          default_disks: tuple[DiskSpec, ...] | None, default_disks_given: bool, first_seen: dict[str, int],
          problems: _Problems, default_init: str = DEFAULT_INIT) -> HostSpec | None:
    path = f"hosts[{index}]"
    if not isinstance(data, dict):
        problems.add(path, f"must be a mapping, got {describe(data)}")
        return None
    before = len(problems.items)
    _check_keys(data, HOST_KEYS, path, problems)

    name = data.get("name")
    if "name" not in data:
        problems.add(f"{path}.name", "required")
    elif not (isinstance(name, str) and HOST_NAME_RE.fullmatch(name)):
        problems.add(f"{path}.name", "must be 1-32 characters from a-z, 0-9 and '-', not starting or ending "
                                     f"with '-', got {describe(name)}")
    elif name in first_seen:
        problems.add(f"{path}.name", f"duplicate host name {describe(name)} (first at hosts[{first_seen[name]}])")
    else:
        first_seen[name] = index

    memory = default_memory
    if "memory_bytes" in data:
        memory = _memory(data["memory_bytes"], f"{path}.memory_bytes", problems)

    init = default_init
    if "init" in data:
        init = _init(data["init"], f"{path}.init", problems) or default_init

    disks = default_disks
    if "disks" in data:
        disks = _disks(data["disks"], f"{path}.disks", problems)
    elif not default_disks_given:
        problems.add(f"{path}.disks", "required (or set defaults.disks)")

    if len(problems.items) > before or lab is None or subnet is None or disks is None:
        return None
    address = ipaddress.IPv4Network(subnet).network_address + FIRST_HOST_OCTET + index
    return HostSpec(index=index, name=name, address=str(address), memory_bytes=memory, disks=disks,
                    netns=netns_name(lab, name), veth=veth_name(lab, index), init=init)


def _init(value: Any, path: str, problems: _Problems) -> str | None:
    if value in INITS:
        return value
    problems.add(path, f"must be one of {', '.join(INITS)}, got {describe(value)}")
    return None
