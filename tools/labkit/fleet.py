"""Bring-up, teardown, cut/heal and status of a lab (see docs/lab.md).

Layout of a running lab named NAME:
  state dir (default /run/diskproof-lab/NAME): journal.jsonl, lab.json, inventory.yml, id_ed25519(.pub), logs/
  work dir /dev/shm/diskproof-lab-NAME (bind-mounted on itself, shared): images/, sshd/, hosts/HOST/{srv,tmp,var-tmp,root}
Everything the hosts need after their /run is covered by a tmpfs lives in the work dir, never in
the state dir (which is under /run by default).
"""
from __future__ import annotations

import concurrent.futures
import errno
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from . import DEFAULT_STATE_ROOT
from .inventory import build_inventory, render_inventory
from .journal import JOURNAL_FILE, Journal, read_journal
from . import datafault, fob, nspawn, spikes, stall
from .fob import BLKIO_DIR, THROTTLE_FILES, write_throttle
from .spec import DiskSpec, HostSpec, LabSpec, format_bytes
from .system import (CLEAN_ENV, CommandError, device_for_major_minor, iface_exists, is_alive, is_mountpoint, kill,
                     loop_backing_file, loops_backed_by, major_minor, memory_available_bytes, mounts_under,
                     netns_exists, run, spawn_detached, ssh_clients_connected_to, wait_dead)

WORK_ROOT = "/dev/shm"
# Each disk's dirty page cache is capped at this share of its host's memory_bytes (vm.dirty_ratio's
# default), strictly, through the loop device's own bdi. Without it a 24 GiB machine buffers a
# whole "2 x RAM" test file and only starts writeback at fdatasync, so dd conv=fdatasync reads
# 4-8 % low; with it writeback overlaps the writes as on a host with that much RAM.
DIRTY_PERCENT_OF_MEMORY = 20
# What stays free besides the allocated images: the hosts' processes, their tests' page cache, the controller.
MEMORY_RESERVE_BYTES = 2 * 1024 ** 3
LAB_FILE = "lab.json"
INVENTORY_FILE = "inventory.yml"
KEY_FILE = "id_ed25519"
LOG_DIR = "logs"
STATE_FILES = (JOURNAL_FILE, LAB_FILE, INVENTORY_FILE, KEY_FILE, KEY_FILE + ".pub")
REQUIRED_TOOLS = ("ip", "losetup", "mkfs.ext4", "mount", "umount", "unshare", "hostname", "awk", "sort", "ssh", "ssh-keygen")
SSHD = "/usr/sbin/sshd"
LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81  # linux/loop.h
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
# The buffered writes that warm each throttled filesystem disk at `up` (_warm_writeback): how many, how long each.
WARM_WRITES = 2
WARM_WRITE_S = 3.0
# The lab's dd, bound over /usr/bin/dd in the hosts of a lab with buffered_writes: one_at_a_time.
LAB_DD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lab-dd")

# Runs inside the host's new UTS + mount namespace (itself inside the host's network namespace).
# Constant text: every variable part arrives as a positional parameter, never spliced in.
# Binds first: the tmpfs on /run hides whatever lies below it (the default state dir included).
HOST_SCRIPT = """set -e -f
hostname "$1"
# Root's mounts are private on this machine, so this namespace holds a copy of each. Drop the
# copies of loop-device filesystems that are not this lab's: a host must never keep someone
# else's loop device busy after they unmount it. (Lazy, and only inside this namespace.)
for mp in $(awk -v own="$7/" '$3 ~ /^7:/ && index($5, own) != 1 {print $5}' /proc/self/mountinfo | sort -r); do
  umount -l "$mp" 2>/dev/null || true
done
mount --rbind "$2" /srv
mount --bind "$3" /tmp
mount --bind "$4" /var/tmp
mount --bind "$5" /root
mount -t tmpfs -o mode=0755,size=64m diskproof-run /run
mkdir -p /run/sshd /run/lock
chmod 1777 /run/lock
# buffered_writes: one_at_a_time: the lab's dd (tools/labkit/lab-dd) in front of the real one, which stays
# at /run/diskproof-lab/dd; the lock every host of the lab shares is in the work dir's serial/.
if [ "$8" = one_at_a_time ]; then
  mkdir -p /run/diskproof-lab/serial
  : > /run/diskproof-lab/dd
  mount --bind /usr/bin/dd /run/diskproof-lab/dd
  mount --bind "$7/serial" /run/diskproof-lab/serial
  mount --bind "$7/bin/dd" /usr/bin/dd
fi
# ip netns exec mounted a fresh /sys without the cgroup mounts: give the host the machine's memory
# cgroup hierarchy (the same one, v1 memory or else v2) so the benchmark's cache fence works.
if mount -t tmpfs -o mode=0755,size=1m diskproof-cgroup /sys/fs/cgroup 2>/dev/null; then
  mkdir -p /sys/fs/cgroup/memory
  mount -t cgroup -o memory diskproof-memcg /sys/fs/cgroup/memory 2>/dev/null || {
    rmdir /sys/fs/cgroup/memory; umount /sys/fs/cgroup; mount -t cgroup2 diskproof-cg2 /sys/fs/cgroup 2>/dev/null || true; }
fi
exec /usr/sbin/sshd -D -e -f "$6"
"""

# A systemd host's nspawn starts from a private copy of root's mounts without other labs' loop-device
# filesystems (the same rule as HOST_SCRIPT): its mount namespace must not keep their loops busy.
# And in a cgroup of its own in the hierarchies systemd manages ($2 below each): an nspawn started in
# the root cgroup puts its container at /payload, the same path for every systemd host of every lab,
# so `systemctl stop cron` on one host would kill cron on all of them, and their CPU counters would
# be one.
NSPAWN_SCRIPT = """set -e -f
for mp in $(awk -v own="$1/" '$3 ~ /^7:/ && index($5, own) != 1 {print $5}' /proc/self/mountinfo | sort -r); do
  umount -l "$mp" 2>/dev/null || true
done
for hierarchy in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do
  if [ -d "$hierarchy" ]; then
    mkdir -p "$hierarchy/$2"
    echo $$ > "$hierarchy/$2/cgroup.procs"
  fi
done
shift 2
exec "$@"
"""
# Every process of a lab's hosts runs in one cpu cgroup of the lab's own (cgroup v1 cpu controller, default
# weight), so the whole lab weighs as one task against the kernel's writeback, loop and throttle threads. Without
# it each ssh session a host starts is a scheduling group of its own (the kernel's autogroups) with a whole task's
# weight: Ansible tasks on six hosts while those hosts' disks took buffered writes put the writeback behind dozens of
# sessions and the writes read 16 % low on average (27 % at worst); with one group for the lab, 0.4 % (2.2 % at
# worst) (docs/lab.md, "Buffered writes", item 4). A rack's hosts each have their own CPUs for their own writeback.
CPU_DIR = "/sys/fs/cgroup/cpu"
CPU_GROUP_PREFIX = "diskproof-lab-"
# The cgroup hierarchies a systemd host gets its own cgroup in (cgroup v1 "hybrid": systemd's named
# hierarchy and the unified one); down removes the lab's subtree in each.
SYSTEMD_CGROUP_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd")
# How long a systemd host may take from nspawn to `systemctl is-system-running` answering.
BOOT_TIMEOUT_S = 60.0

SSHD_CONFIG = """# diskproof lab host {host} (written by tools/lab; removed by tools/lab down)
ListenAddress {address}:22
HostKey {host_key}
PidFile {pid_file}
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 100:30:200
MaxSessions 100
ClientAliveInterval 10
ClientAliveCountMax 3
LogLevel INFO
Subsystem sftp {sftp_server}
"""


class LabError(Exception):
    """The lab could not be brought up, torn down or inspected (exit code 1)."""


Printer = Callable[[str], None]


def _say(message: str) -> None:
    print(message, flush=True)


def workdir_for(lab: str) -> str:
    return os.path.join(WORK_ROOT, f"diskproof-lab-{lab}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _process_start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _selector(state_dir: str) -> str:
    """How to name this lab on the command line."""
    if os.path.dirname(state_dir) == DEFAULT_STATE_ROOT:
        return f"--name {os.path.basename(state_dir)}"
    return f"--state {state_dir}"


def _adoptable(directory: str, state_dir: str) -> bool:
    """True for the tool's own root (when the state dir is under it) and an empty default state dir."""
    if os.path.dirname(state_dir) != DEFAULT_STATE_ROOT:
        return False
    if directory == DEFAULT_STATE_ROOT:
        return True
    return directory == state_dir and os.path.isdir(state_dir) and not os.listdir(state_dir)


def _make_dirs(path: str) -> list[str]:
    """mkdir -p that returns the directories it created, outermost first (teardown removes only those)."""
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for directory in reversed(missing):
        os.mkdir(directory, 0o755)
    return list(reversed(missing))


def ssh_argv(key: str, address: str, command: list[str], connect_timeout: int = 3) -> list[str]:
    """ssh with no user config, no agent, no host key bookkeeping, no multiplexing."""
    return ["ssh", "-F", "/dev/null", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={connect_timeout}", "-o", "ControlMaster=no", "-o", "ControlPath=none",
            "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=2", f"root@{address}", *command]


def ssh_ok(key: str, address: str, connect_timeout: int = 3) -> tuple[bool, str]:
    try:
        result = run(ssh_argv(key, address, ["true"], connect_timeout), check=False, timeout=connect_timeout + 10)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    return result.returncode == 0, result.stderr.strip()


def _warm_writeback(mountpoint: str, write_bytes_per_s: int, size_bytes: int) -> None:
    """WARM_WRITES buffered writes of about WARM_WRITE_S each at the disk's throttle, each removed again. The kernel
    paces a buffered writer by the write bandwidth it has estimated for the device (the bdi's), which starts from a
    default guess on a new loop device (a reused one, as labs had until 2026-12-02, kept what an earlier lab left): its
    fsync-heavy tests (fio_commit_rate) drag it to a fifth of the throttle. A buffered write then reads low until the
    estimate has caught up, several seconds of writing: measured at 32 MiB/s (benchmarks/lab_writes.py, part
    ``estimate``), the first 256 MiB write read 9 % low after the earlier warm-up of one 1.5 s write, within 2 %
    after two of 3 s. A real host's disk has been written since boot."""
    count = max(1, min(int(write_bytes_per_s * WARM_WRITE_S), size_bytes // 4) >> 20)
    path = os.path.join(mountpoint, ".diskproof-lab-warm")
    for _write in range(WARM_WRITES):
        try:
            run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", "conv=fdatasync", "status=none"])
        finally:
            if os.path.exists(path):
                os.unlink(path)
        os.sync()


def _bdi_dir(major_minor_text: str) -> str:
    return f"/sys/class/bdi/{major_minor_text}"


def _loop_still_ours(record: dict) -> bool:
    """A recorded loop device still exists and is backed by the lab's image or by nothing: its sysfs
    settings (dirty limit, readahead) outlive a detach and are ours to restore; someone else's are not."""
    device = device_for_major_minor(record["major_minor"])
    return device is not None and loop_backing_file(device) in (None, record["image"])


def _bdi_ratio_file(major_minor_text: str) -> str:
    # max_ratio_fine (kernel 6.5+) keeps the exact original value; older kernels only have max_ratio.
    fine = os.path.join(_bdi_dir(major_minor_text), "max_ratio_fine")
    return "max_ratio_fine" if os.path.exists(fine) else "max_ratio"


def _read_sysfs(path: str) -> str:
    with open(path, encoding="ascii") as handle:
        return handle.read().strip()


def _write_sysfs(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def dirty_limit_bytes(memory_bytes: int | None) -> int | None:
    return memory_bytes * DIRTY_PERCENT_OF_MEMORY // 100 if memory_bytes else None


def read_throttles() -> dict[str, dict[str, int]]:
    """Current root-cgroup throttles: {"7:3": {"read_bytes_per_s": 33554432, ...}}."""
    current: dict[str, dict[str, int]] = {}
    for key, file_name in THROTTLE_FILES.items():
        try:
            with open(os.path.join(BLKIO_DIR, file_name), encoding="ascii") as handle:
                for line in handle:
                    parts = line.split()
                    if len(parts) == 2:
                        current.setdefault(parts[0], {})[key] = int(parts[1])
        except OSError:
            continue
    return current


def _speeds_text(values: dict[str, int | None]) -> str:
    def rate(value: int | None) -> str:
        return f"{format_bytes(value)}/s" if value else "unthrottled"

    def iops(value: int | None) -> str:
        return f"{value} IOPS" if value else "unthrottled"

    return (f"read {rate(values.get('read_bytes_per_s'))} {iops(values.get('read_iops'))}, "
            f"write {rate(values.get('write_bytes_per_s'))} {iops(values.get('write_iops'))}")


# ---------------------------------------------------------------------------------------------
# up
# ---------------------------------------------------------------------------------------------

def _ipv4_in_use() -> list[tuple[ipaddress.IPv4Network, str]]:
    """Every IPv4 network on an interface or in the main routing table of the root namespace."""
    in_use = []
    addresses = json.loads(run(["ip", "-j", "-4", "addr", "show"]).stdout or "[]")
    for link in addresses:
        for info in link.get("addr_info", []):
            network = ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False)
            in_use.append((network, f"address {info['local']}/{info['prefixlen']} on {link.get('ifname')}"))
    routes = json.loads(run(["ip", "-j", "-4", "route", "show"]).stdout or "[]")
    for route in routes:
        destination = route.get("dst", "")
        if destination and destination != "default":
            network = ipaddress.IPv4Network(destination if "/" in destination else f"{destination}/32", strict=False)
            in_use.append((network, f"route {destination} via {route.get('dev')}"))
    return in_use


def preflight(spec: LabSpec) -> None:
    """Everything that can be checked before anything is created."""
    problems = []
    if os.geteuid() != 0:
        problems.append("must run as root (network namespaces, loop devices, mounts, blkio throttles)")
    for tool in REQUIRED_TOOLS:
        if shutil.which(tool, path=CLEAN_ENV["PATH"]) is None:
            problems.append(f"{tool}: not found in {CLEAN_ENV['PATH']}")
    for path in (SSHD, "/dev/loop-control", *(os.path.join(BLKIO_DIR, name) for name in THROTTLE_FILES.values())):
        if not os.path.exists(path):
            problems.append(f"{path}: missing (need {'openssh-server' if path == SSHD else 'cgroup v1 blkio and loop devices'})")
    if any(host.init == "systemd" for host in spec.hosts):
        problems.extend(f"{path}: missing (systemd hosts need the package systemd-container and systemd)"
                        for path in nspawn.missing_tools())
        with open("/proc/filesystems", encoding="ascii") as handle:
            if "overlay" not in handle.read().split():
                problems.append("this kernel has no overlay filesystem (systemd hosts boot on an overlay of /)")
        if not is_mountpoint(nspawn.CGROUP_MEMORY):
            problems.append(f"{nspawn.CGROUP_MEMORY} is not mounted (systemd hosts get the cgroup v1 memory hierarchy)")
    workdir = workdir_for(spec.name)
    if os.path.lexists(workdir):
        problems.append(f"{workdir} already exists: another lab named {spec.name} is up, or one whose state was lost "
                        "(remove it by hand once nothing uses it)")
    for name in (spec.bridge, *(host.veth for host in spec.hosts)):
        if iface_exists(name):
            problems.append(f"network interface {name} already exists")
    for host in spec.hosts:
        if netns_exists(host.netns):
            problems.append(f"network namespace {host.netns} already exists")
    subnet = ipaddress.IPv4Network(spec.subnet)
    if not problems:
        for network, where in _ipv4_in_use():
            if network.overlaps(subnet):
                problems.append(f"subnet {spec.subnet} overlaps {where}: pick another subnet in the SPEC")
    needed = sum(disk.size_bytes for host in spec.hosts for disk in host.disks)
    stat = os.statvfs(WORK_ROOT)
    available = stat.f_bavail * stat.f_frsize
    if needed > available:
        problems.append(f"the disks need {format_bytes(needed)} on {WORK_ROOT} when full, only {format_bytes(available)} free")
    allocated = sum(disk.size_bytes for host in spec.hosts for disk in host.disks if not disk.sparse)
    memory = memory_available_bytes()
    if memory is not None and allocated + MEMORY_RESERVE_BYTES > memory:
        problems.append(f"the disks' images take {format_bytes(allocated)} of memory up front (tmpfs), and "
                        f"{format_bytes(MEMORY_RESERVE_BYTES)} stay free for the hosts and their page cache: only "
                        f"{format_bytes(memory)} is available. Use smaller disks, fewer hosts, or `sparse: true` on "
                        "disks whose buffered write speed does not matter (docs/lab.md)")
    if problems:
        raise LabError("cannot bring the lab up:\n" + "\n".join(f"  - {problem}" for problem in problems))


def up(spec: LabSpec, state_dir: str, spec_path: str, replace: bool = False, keep_on_failure: bool = False,
       ssh_timeout: float = 30.0, say: Printer = _say) -> None:
    started = time.monotonic()
    if read_journal(state_dir) is not None:
        if not replace:
            raise LabError(f"lab already up (state in {state_dir}): run `tools/lab down {_selector(state_dir)}` first, "
                           "or `tools/lab up --replace ...`")
        say(f"--replace: tearing down the lab recorded in {state_dir} first")
        down(state_dir, say=say)
    if os.path.isdir(state_dir) and os.listdir(state_dir):
        raise LabError(f"state dir {state_dir} is not empty and holds no lab journal: refusing to use it")
    preflight(spec)

    created_dirs = _make_dirs(state_dir)
    # An up killed between mkdir and the journal's creation leaves an empty dir: under the tool's own
    # root, an empty dir is adopted as ours (elsewhere it may be the user's, so it is left alone).
    for directory in (DEFAULT_STATE_ROOT, state_dir):
        if directory not in created_dirs and _adoptable(directory, state_dir):
            created_dirs.insert(0 if directory == DEFAULT_STATE_ROOT else len(created_dirs), directory)
    try:
        journal = Journal(state_dir, new=True)
    except FileExistsError:
        raise LabError(f"another `tools/lab up` just started in {state_dir}") from None
    try:
        journal.record("lab", name=spec.name, spec=spec.to_dict(), spec_path=os.path.abspath(spec_path),
                       state_dir=state_dir, workdir=workdir_for(spec.name), created_dirs=created_dirs,
                       up_pid=os.getpid(), up_pid_start=_process_start_time(os.getpid()), started=_now())
        devices, boot = _build(spec, state_dir, journal, ssh_timeout)
    except BaseException as exc:  # noqa: BLE001 - SIGTERM/Ctrl-C included: roll back, then re-raise
        journal.close()
        if keep_on_failure:
            say(f"up failed; the half-built lab is left as is (--keep-on-failure): tools/lab down {_selector(state_dir)}")
        else:
            say(f"up failed ({type(exc).__name__}); tearing down what was created")
            try:
                down(state_dir, say=say, own_up=True)
            except LabError as teardown_error:
                say(str(teardown_error))
        raise
    journal.close()

    elapsed = time.monotonic() - started
    for line in summary_lines(spec, devices, state_dir, boot):
        say(line)
    say(f"lab {spec.name} up in {elapsed:.1f} s")


def _build(spec: LabSpec, state_dir: str, journal: Journal,
           ssh_timeout: float) -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, Any]]]:
    workdir = workdir_for(spec.name)
    key = os.path.join(state_dir, KEY_FILE)
    os.mkdir(os.path.join(state_dir, LOG_DIR), 0o755)
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"diskproof-lab-{spec.name}", "-f", key])

    # The work dir is a shared mount: a disk unmounted here is unmounted in every host's copy too
    # (the hosts' mount namespaces are slaves), including hosts of other labs started meanwhile.
    journal.record("workdir", path=workdir)
    os.mkdir(workdir, 0o755)
    journal.record("mount", mountpoint=workdir, role="workdir")
    run(["mount", "--bind", workdir, workdir])
    run(["mount", "--make-shared", workdir])
    for sub in ("images", "sshd", "hosts", "bin", "serial"):
        os.mkdir(os.path.join(workdir, sub), 0o755)
    shutil.copyfile(LAB_DD, os.path.join(workdir, "bin", "dd"))
    os.chmod(os.path.join(workdir, "bin", "dd"), 0o755)
    sshd_dir = os.path.join(workdir, "sshd")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"diskproof-lab-{spec.name}-host",
         "-f", os.path.join(sshd_dir, "ssh_host_ed25519_key")])
    shutil.copyfile(key + ".pub", os.path.join(sshd_dir, "authorized_keys"))
    for host in spec.hosts:
        for sub, mode in (("srv", 0o755), ("tmp", 0o1777), ("var-tmp", 0o1777), ("root", 0o700)):
            path = os.path.join(workdir, "hosts", host.name, sub)
            os.makedirs(path)
            os.chmod(path, mode)

    # Disks: sparse images on tmpfs, loop devices found by backing file at teardown (so a kill
    # between losetup and the next record still leaves nothing behind).
    devices: dict[str, list[dict[str, str]]] = {}
    images: dict[tuple[str, int], str] = {}
    for host in spec.hosts:
        devices[host.name] = []
        for disk in host.disks:
            image = os.path.join(workdir, "images", f"{host.name}-d{disk.index}.img")
            images[(host.name, disk.index)] = image
            journal.record("image", path=image)
            with open(image, "xb") as handle:
                handle.truncate(disk.size_bytes)
            journal.record("loop", image=image)
            device = _new_loop_device(image, journal)
            numbers = major_minor(device)
            journal.record("loop_attached", image=image, device=device, major_minor=numbers)
            entry = {"device": device, "major_minor": numbers, "backing": image}
            if disk.stalls:
                # The stall fault: the host's disk is a loop device (direct I/O) over this one, whose I/O the
                # stall process holds (tools/labkit/stall.py says why a throttle on the host's disk would not do).
                lower, backing = entry, f"/dev/{device}"
                journal.record("loop", image=backing)
                device = _new_loop_device(backing, journal, direct_io=True)
                journal.record("loop_attached", image=backing, device=device, major_minor=major_minor(device))
                entry = {"device": device, "major_minor": major_minor(device), "backing": backing,
                         "lower_device": lower["device"], "lower_major_minor": lower["major_minor"]}
            devices[host.name].append(entry)

    # Each image is allocated whole, then mkfs'd (unthrottled, no lazy init left to eat the throttle budget later),
    # while the network comes up.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        disk_jobs = [pool.submit(_prepare_disk, images[(host.name, disk.index)], disk,
                                 devices[host.name][disk.index]["device"])
                     for host in spec.hosts for disk in host.disks]
        _build_network(spec, journal)
        for job in disk_jobs:
            job.result()

    warm: list[tuple[str, int, int]] = []
    for host in spec.hosts:
        for disk in host.disks:
            device = devices[host.name][disk.index]
            if disk.path:
                mountpoint = os.path.join(workdir, "hosts", host.name, disk.path.lstrip("/"))
                os.makedirs(mountpoint)
                journal.record("mount", mountpoint=mountpoint, role="disk", device=device["device"])
                run(["mount", "-t", "ext4", f"/dev/{device['device']}", mountpoint])
                if disk.write_bytes_per_s and not disk.fob_bytes:   # a fresh SSD's watcher counts every write
                    warm.append((mountpoint, disk.write_bytes_per_s, disk.size_bytes))
            throttled = [key_name for key_name in THROTTLE_FILES if getattr(disk, key_name)]
            if disk.fob_bytes and "write_iops" not in throttled:
                throttled.append("write_iops")  # the watcher sets it once the disk is written: down removes it
            if disk.latency_spike_ms:   # the spike process sets both in each spike: down removes them
                throttled.extend(key_name for key_name in ("read_iops", "write_iops") if key_name not in throttled)
            journal.record("throttle", major_minor=device["major_minor"], image=device["backing"], keys=throttled)
            if disk.stalls:     # the stall process holds the lower device with both byte rules: down removes them
                journal.record("throttle", major_minor=device["lower_major_minor"], image=images[(host.name, disk.index)],
                               keys=["read_bytes_per_s", "write_bytes_per_s"])
            for key_name in throttled:
                if getattr(disk, key_name):
                    write_throttle(key_name, device["major_minor"], getattr(disk, key_name))
            _set_read_ahead(device["major_minor"], device["backing"], journal)
            dirty_limit = dirty_limit_bytes(host.memory_bytes)
            if dirty_limit:
                _limit_dirty(device["major_minor"], device["backing"], dirty_limit, journal)

    # The disks warm while the hosts start and boot (the warm-up is seconds of throttled writing, a systemd host's
    # boot about as long): `up` returns once both are done.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(warm))) as pool:
        warming = [pool.submit(_warm_writeback, *disk_warm) for disk_warm in warm]

        for host in spec.hosts:
            for disk in host.disks:
                if disk.fob_bytes:
                    _start_fob_watcher(spec, host, disk, devices[host.name][disk.index], state_dir, journal)
                if disk.latency_spike_ms:
                    _start_spike_process(spec, host, disk, devices[host.name][disk.index], state_dir, journal)
                if disk.returns_wrong_data:
                    _start_data_fault_process(spec, host, disk, images[(host.name, disk.index)], state_dir, journal)
                if disk.stalls:
                    _start_stall_process(spec, host, disk, devices[host.name][disk.index], state_dir, journal)

        spawned: dict[str, float] = {}
        cpu_group = _make_cpu_group(spec.name, journal)
        for host in spec.hosts:
            if host.init == "systemd":
                spawned[host.name] = _start_systemd_host(spec, host, devices[host.name], state_dir, journal, cpu_group)
            else:
                _start_sshd(spec, host, state_dir, journal, cpu_group)
        _wait_for_ssh(spec, key, max(ssh_timeout, BOOT_TIMEOUT_S if spawned else 0), state_dir)
        boot = _wait_for_boot(spec, key, spawned, state_dir)
        for job in warming:
            job.result()

    _write_outputs(spec, devices, state_dir, boot)
    journal.record("up_complete", finished=_now())
    return devices, boot


def _prepare_disk(image: str, disk: DiskSpec, device: str) -> None:
    """Allocate the image's memory now (unless the SPEC says sparse) and make the filesystem.

    A sparse image on tmpfs gets its pages when a block is first written: the loop device's worker then
    allocates, zeroes and charges a page for every 4 KiB, which costs several times the CPU of writing an
    allocated block (measured: 1970 vs 500 CPU jiffies for the same 8-host rounds), and on this machine's two
    shared cores that starved the throttled disks: buffered dd on 8 hosts at once read up to 7 % low, every round
    that reached fresh blocks. mkfs runs with nodiscard: its discard would punch the allocated pages out again.
    """
    if not disk.sparse:
        descriptor = os.open(image, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.posix_fallocate(descriptor, 0, disk.size_bytes)
        finally:
            os.close(descriptor)
    if disk.mode == "filesystem":
        run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
             f"/dev/{device}"])


def _new_loop_device(image: str, journal: Journal, direct_io: bool = False) -> str:
    """Attach image to a loop device made for it (LOOP_CTL_ADD, numbered above every loop device there is), journaled
    so that `down` removes it again; return its name. direct_io: the loop reads and writes its backing with O_DIRECT
    (a loop device over a loop device: its requests stay in flight while the lower one holds them).

    Never an existing one, even a free one that looks pristine: a loop device's request queue and bdi outlive a
    detach, and with them kernel state that no sysfs file shows and nothing resets: the writeback's estimate of the
    device's bandwidth and its share of the machine's recent writeback. Measured (benchmarks/lab_writes.py, part
    product, 8 hosts taking turns, 2026-12-02): on the reused loop0-loop7 the hosts on loop0-loop4 (the ones
    earlier labs wrote most) read down to -21 % on some repeats, the ones on loop5-loop7 within 1.5 % in two runs
    out of two; on loop devices made for the lab all 40 repeats within 1.4 %."""
    existing = [int(name[4:]) for name in os.listdir("/sys/block") if name.startswith("loop") and name[4:].isdigit()]
    number = max(existing, default=-1) + 1
    with open("/dev/loop-control", "rb") as control:
        for candidate in range(number, number + 64):
            try:
                fcntl.ioctl(control.fileno(), LOOP_CTL_ADD, candidate)
            except FileExistsError:   # another lab's, made a moment ago
                continue
            device = f"loop{candidate}"
            journal.record("loop_created", device=device, major_minor=major_minor(device))
            if run(["losetup", *(["--direct-io=on"] if direct_io else []), f"/dev/{device}", image],
                   check=False).returncode == 0:
                return device
            # taken meanwhile by someone's `losetup --find`: it is theirs now, down leaves it alone
    raise LabError(f"no new loop device could be attached to {image}")


def _remove_loop_device(record: dict, problems: list[str]) -> None:
    """Remove a loop device `up` made (LOOP_CTL_REMOVE), once nothing is attached to it; one that is attached to
    another file now belongs to whoever attached it."""
    device = record["device"]
    if not os.path.exists(f"/sys/block/{device}") or major_minor(device) != record["major_minor"]:
        return
    if loop_backing_file(device) is not None:
        return
    failure: list[OSError] = []

    def removed() -> bool:
        try:
            with open("/dev/loop-control", "rb") as control:
                fcntl.ioctl(control.fileno(), LOOP_CTL_REMOVE, int(device[4:]))
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno == errno.EBUSY:   # the detach's last reference goes a moment after losetup returns
                return False
            failure.append(exc)
        return True

    if not _retry(removed, 5.0):
        problems.append(f"cannot remove the lab's loop device /dev/{device}: still busy")
    elif failure:
        problems.append(f"cannot remove the lab's loop device /dev/{device}: {failure[0]}")


# Buffered sequential reads go to the disk as readahead requests (128 KiB by default): at 200 IOPS
# that caps them at 25 MiB/s, which no real disk of 50 MiB/s does. 1 MiB readahead lets the bytes
# throttle, not the IOPS one, bound them, as direct 1 MiB reads are.
LAB_READ_AHEAD_KB = 1024


def _set_read_ahead(numbers: str, image: str, journal: Journal) -> None:
    """Raise the loop device's readahead (its bdi outlives the loop: teardown restores it)."""
    path = os.path.join(_bdi_dir(numbers), "read_ahead_kb")
    journal.record("read_ahead", major_minor=numbers, image=image, read_ahead_kb=_read_sysfs(path))
    _write_sysfs(path, str(LAB_READ_AHEAD_KB))


def _limit_dirty(numbers: str, image: str, limit: int, journal: Journal) -> None:
    """Cap the loop device's dirty page cache (its bdi outlives the loop: teardown restores it)."""
    bdi = _bdi_dir(numbers)
    ratio_file = _bdi_ratio_file(numbers)
    journal.record("bdi", major_minor=numbers, image=image, ratio_file=ratio_file,
                   ratio=_read_sysfs(os.path.join(bdi, ratio_file)),
                   strict_limit=_read_sysfs(os.path.join(bdi, "strict_limit")))
    _write_sysfs(os.path.join(bdi, "max_bytes"), str(limit))
    _write_sysfs(os.path.join(bdi, "strict_limit"), "1")


def _build_network(spec: LabSpec, journal: Journal) -> None:
    journal.record("bridge", name=spec.bridge)
    run(["ip", "link", "add", spec.bridge, "type", "bridge"])
    run(["ip", "addr", "add", f"{spec.bridge_address}/{spec.prefixlen}", "dev", spec.bridge])
    run(["ip", "link", "set", spec.bridge, "up"])
    for host in spec.hosts:
        journal.record("netns", name=host.netns)
        run(["ip", "netns", "add", host.netns])
        journal.record("veth", name=host.veth)
        run(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns])
        run(["ip", "link", "set", host.veth, "master", spec.bridge, "up"])
        run(["ip", "-n", host.netns, "addr", "add", f"{host.address}/{spec.prefixlen}", "dev", "eth0"])
        run(["ip", "-n", host.netns, "link", "set", "lo", "up"])
        run(["ip", "-n", host.netns, "link", "set", "eth0", "up"])


def _start_sshd(spec: LabSpec, host: HostSpec, state_dir: str, journal: Journal, cpu_group: str | None) -> None:
    workdir = workdir_for(spec.name)
    sshd_dir = os.path.join(workdir, "sshd")
    config = os.path.join(sshd_dir, f"{host.name}.conf")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write(SSHD_CONFIG.format(host=host.name, address=host.address, pid_file="/run/sshd.pid",
                                        host_key=os.path.join(sshd_dir, "ssh_host_ed25519_key"),
                                        authorized_keys=os.path.join(sshd_dir, "authorized_keys"),
                                        sftp_server=SFTP_SERVER))
    host_dir = os.path.join(workdir, "hosts", host.name)
    argv = ["ip", "netns", "exec", host.netns, "unshare", "--uts", "--mount", "--propagation", "slave",
            "sh", "-c", HOST_SCRIPT, f"diskproof-{host.name}", host.name,
            os.path.join(host_dir, "srv"), os.path.join(host_dir, "tmp"), os.path.join(host_dir, "var-tmp"),
            os.path.join(host_dir, "root"), config, workdir, spec.buffered_writes]
    journal.record("sshd", host=host.name, netns=host.netns)
    pid = spawn_detached(argv, os.path.join(state_dir, LOG_DIR, f"{host.name}.sshd.log"), cgroup_procs=cpu_group)
    journal.record("sshd_pid", host=host.name, pid=pid)


# Where each kind of disk process (journal kind) writes its state, under the lab's work dir.
DISK_STATE_FOLDERS = {"fob_watcher": "fob", "spike_process": "spikes", "data_fault_process": "datafaults",
                      "stall_process": "stalls"}


def disk_state_file(workdir: str, kind: str, host_name: str, disk_index: int) -> str:
    """The state file of one disk's process of this kind (fob.py, spikes.py, datafault.py, stall.py)."""
    return os.path.join(workdir, DISK_STATE_FOLDERS[kind], f"{host_name}-d{disk_index}.json")


def _start_disk_process(what: str, kind: str, script: str, spec: LabSpec, arguments: list[str], host: HostSpec,
                        disk: DiskSpec, state_dir: str, journal: Journal) -> None:
    """A process of its own for one disk (fob.py, spikes.py, datafault.py, stall.py), journaled as `kind` with its pid
    and start time (down stops it by both); started once it has written its state file."""
    state_file = disk_state_file(workdir_for(spec.name), kind, host.name, disk.index)
    os.makedirs(os.path.dirname(state_file), exist_ok=True)
    log = os.path.join(state_dir, LOG_DIR, f"{host.name}-d{disk.index}.{os.path.basename(script)[:-3]}.log")
    journal.record(kind, host=host.name, disk=disk.index)
    pid = spawn_detached([sys.executable, script, state_file, *arguments], log)
    journal.record(kind + "_pid", host=host.name, disk=disk.index, pid=pid, start=_process_start_time(pid))
    if not _retry(lambda: os.path.exists(state_file), 5.0):
        raise LabError(f"the {what} of {host.name} d{disk.index} did not start: {' '.join(_tail(log, 5))}")


def _start_fob_watcher(spec: LabSpec, host: HostSpec, disk: DiskSpec, device: dict[str, str], state_dir: str,
                       journal: Journal) -> None:
    """The fresh-SSD watcher of one disk (tools/labkit/fob.py)."""
    _start_disk_process("fresh-SSD watcher", "fob_watcher", fob.__file__, spec,
                        [device["device"], device["major_minor"], str(disk.fob_bytes), str(disk.write_iops or 0),
                         str(disk.steady_write_iops), str(disk.unsteady_period_s or 0)], host, disk, state_dir, journal)


def _start_spike_process(spec: LabSpec, host: HostSpec, disk: DiskSpec, device: dict[str, str], state_dir: str,
                         journal: Journal) -> None:
    """The latency-spike process of one disk (tools/labkit/spikes.py, a planted fault)."""
    _start_disk_process("latency-spike process", "spike_process", spikes.__file__, spec,
                        [device["major_minor"], str(disk.latency_spike_ms), str(disk.latency_spike_period_s),
                         str(disk.read_iops or 0), str(disk.write_iops or 0)], host, disk, state_dir, journal)


def _start_data_fault_process(spec: LabSpec, host: HostSpec, disk: DiskSpec, image: str, state_dir: str,
                              journal: Journal) -> None:
    """The wrong-data process of one disk (tools/labkit/datafault.py, planted faults on its backing image)."""
    def given(value: int | None) -> str:
        return str(-1 if value is None else value)
    _start_disk_process("wrong-data process", "data_fault_process", datafault.__file__, spec,
                        [image, given(disk.flip_byte_at), given(disk.stale_region_at),
                         given(disk.stale_region_bytes)], host, disk, state_dir, journal)


def _start_stall_process(spec: LabSpec, host: HostSpec, disk: DiskSpec, device: dict[str, str], state_dir: str,
                         journal: Journal) -> None:
    """The stall process of one disk (tools/labkit/stall.py, a planted fault)."""
    _start_disk_process("stall process", "stall_process", stall.__file__, spec,
                        [device["device"], device["lower_major_minor"], str(disk.stall["stall_after_bytes"]),
                         str(disk.stall["stall_s"])], host, disk, state_dir, journal)


def _start_systemd_host(spec: LabSpec, host: HostSpec, devices: list[dict[str, str]], state_dir: str,
                        journal: Journal, cpu_group: str | None) -> float:
    """Mount the host's overlay of /, make it the host's (name, machine id, sshd, masks) and boot it
    with systemd-nspawn in the host's network namespace. Returns the monotonic time of the spawn."""
    workdir = workdir_for(spec.name)
    host_dir = os.path.join(workdir, "hosts", host.name)
    dirs = nspawn.overlay_dirs(host_dir)
    for path in dirs.values():
        os.mkdir(path, 0o755)
    journal.record("mount", mountpoint=dirs["root"], role="overlay")
    run(nspawn.overlay_mount_argv(host, dirs))
    sshd_dir = os.path.join(workdir, "sshd")
    config = SSHD_CONFIG.format(host=host.name, address=host.address, pid_file="/run/sshd.pid",
                                host_key=f"/etc/ssh/{nspawn.HOST_KEY_NAME}",
                                authorized_keys=f"/etc/ssh/{nspawn.AUTHORIZED_KEYS_NAME}", sftp_server=SFTP_SERVER)
    nspawn.prepare_root(dirs["root"], host, config, os.path.join(sshd_dir, "ssh_host_ed25519_key"),
                        os.path.join(sshd_dir, "authorized_keys"))
    # nspawn creates its runtime dirs on first use; down removes those this lab saw appear.
    journal.record("nspawn_runtime", created=[path for path in nspawn.NSPAWN_RUNTIME_DIRS if not os.path.isdir(path)])
    cgroup = lab_cgroup(spec.name) + "/" + host.name
    journal.record("nspawn_cgroup", lab_path=lab_cgroup(spec.name), path=cgroup)
    argv = ["unshare", "--mount", "--propagation", "slave", "sh", "-c", NSPAWN_SCRIPT, f"diskproof-{host.name}",
            workdir, cgroup, *nspawn.nspawn_argv(host, dirs["root"], host_dir, [device["device"] for device in devices],
                                                 workdir if spec.buffered_writes == "one_at_a_time" else None)]
    journal.record("nspawn", host=host.name, netns=host.netns)
    spawned = time.monotonic()
    pid = spawn_detached(argv, os.path.join(state_dir, LOG_DIR, f"{host.name}.nspawn.log"), nspawn.nspawn_env(CLEAN_ENV),
                         cgroup_procs=cpu_group)
    journal.record("nspawn_pid", host=host.name, pid=pid, start=_process_start_time(pid))
    return spawned


def _make_cpu_group(lab: str, journal: Journal) -> str | None:
    """The lab's cpu cgroup, below this process's own (CPU_GROUP_PREFIX); the path of its cgroup.procs, or None
    on a machine without a cgroup v1 cpu hierarchy (the lab then runs without it: docs/lab.md)."""
    if not os.path.isfile(os.path.join(CPU_DIR, "cpu.shares")):
        return None
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        own = next((line.rstrip("\n").split(":", 2)[2] for line in handle
                    if "cpu" in line.split(":", 2)[1].split(",")), "/")
    path = os.path.join(CPU_DIR, own.lstrip("/"), CPU_GROUP_PREFIX + lab)
    journal.record("cpu_cgroup", path=path)
    if os.path.isdir(path) and not _remove_cgroup_tree(path):
        raise LabError(f"the cpu cgroup {path} of an earlier lab {lab} still has processes: "
                       f"run `tools/lab down --name {lab}` or end them first")
    os.mkdir(path)
    return os.path.join(path, "cgroup.procs")


def lab_cgroup(lab: str) -> str:
    """The lab's cgroup below each of SYSTEMD_CGROUP_ROOTS (its systemd hosts each have one inside)."""
    return f"diskproof-lab-{lab}"


def _remove_cgroup_tree(path: str) -> bool:
    """rmdir a cgroup and everything below it, deepest first (a cgroup dir holds only kernel files);
    True when it is gone. A cgroup that still has processes stays."""
    if not os.path.isdir(path):
        return True
    for directory, _subdirs, _files in os.walk(path, topdown=False):
        try:
            os.rmdir(directory)
        except OSError:
            pass
    return not os.path.isdir(path)


def _wait_for_boot(spec: LabSpec, key: str, spawned: dict[str, float], state_dir: str) -> dict[str, dict[str, Any]]:
    """Wait for each systemd host to finish booting; its state and seconds from spawn to booted."""
    def wait_one(host: HostSpec) -> dict[str, Any]:
        command = ["systemctl", "is-system-running", "--wait"]
        try:
            result = run(ssh_argv(key, host.address, command, connect_timeout=5), check=False, timeout=BOOT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"state": "timeout", "seconds": None, "failed": []}
        seconds = round(time.monotonic() - spawned[host.name], 1)
        state = result.stdout.strip() or result.stderr.strip()
        failed: list[str] = []
        if state != "running":
            listing = run(ssh_argv(key, host.address, ["systemctl", "--failed", "--plain", "--no-legend"]),
                          check=False, timeout=30)
            failed = [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]
        return {"state": state, "seconds": seconds, "failed": failed}

    hosts = [host for host in spec.hosts if host.name in spawned]
    if not hosts:
        return {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, len(hosts))) as pool:
        boot = dict(zip((h.name for h in hosts), pool.map(wait_one, hosts)))
    stuck = {name: info for name, info in boot.items() if info["state"] not in ("running", "degraded")}
    if stuck:
        lines = []
        for name, info in stuck.items():
            lines.append(f"  - {name}: systemd {info['state']}")
            lines.extend(f"      nspawn: {line}" for line in _tail(os.path.join(state_dir, LOG_DIR, name + ".nspawn.log"), 5))
        raise LabError("systemd host(s) did not finish booting:\n" + "\n".join(lines))
    return boot


def _wait_for_ssh(spec: LabSpec, key: str, timeout: float, state_dir: str) -> None:
    deadline = time.monotonic() + timeout

    def wait_one(host: HostSpec) -> str | None:
        error = "never accepted a TCP connection"
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((host.address, 22), timeout=1):
                    pass
            except OSError as exc:
                error = f"TCP connect: {exc}"
                time.sleep(0.05)
                continue
            ok, error = ssh_ok(key, host.address)
            if ok:
                return None
            time.sleep(0.2)
        return error

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, len(spec.hosts))) as pool:
        errors = dict(zip((h.name for h in spec.hosts), pool.map(wait_one, spec.hosts)))
    failed = {name: error for name, error in errors.items() if error is not None}
    if failed:
        # Quote the sshd logs: a rollback removes them with the state dir.
        lines = []
        for name, error in failed.items():
            lines.append(f"  - {name}: {error}")
            logs = (name + ".sshd.log", name + ".nspawn.log")
            lines.extend(f"      {log.split('.')[1]}: {line}" for log in logs
                         for line in _tail(os.path.join(state_dir, LOG_DIR, log), 5))
        raise LabError(f"sshd not reachable after {timeout:.0f} s on {len(failed)} host(s):\n" + "\n".join(lines))


def _tail(path: str, count: int) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()[-count:]
    except OSError:
        return []


def _write_outputs(spec: LabSpec, devices: dict[str, list[dict[str, str]]], state_dir: str,
                   boot: dict[str, dict[str, Any]]) -> None:
    key = os.path.join(state_dir, KEY_FILE)
    inventory_path = os.path.join(state_dir, INVENTORY_FILE)
    header = (f"diskproof lab {spec.name}: written by tools/lab up at {_now()}, removed by tools/lab down.\n"
              f"Hosts share this machine's kernel; diskproof_lab_disks is the truth (device, throttles).")
    text = render_inventory(build_inventory(spec, devices, key), header)
    with open(inventory_path, "w", encoding="utf-8") as handle:
        handle.write(text)
    lab = {"spec": spec.to_dict(), "devices": devices, "state_dir": state_dir, "workdir": workdir_for(spec.name),
           "key": key, "inventory": inventory_path, "boot": boot}
    with open(os.path.join(state_dir, LAB_FILE), "w", encoding="utf-8") as handle:
        json.dump(lab, handle, indent=2)
        handle.write("\n")


def init_text(host: HostSpec, boot: dict[str, dict[str, Any]]) -> str:
    """'sysv', or 'systemd running, booted in 3.1 s' (with the failed units when degraded)."""
    if host.init != "systemd":
        return host.init
    info = boot.get(host.name) or {}
    text = f"systemd {info.get('state', 'unknown')}"
    if info.get("seconds") is not None:
        text += f", booted in {info['seconds']:.1f} s"
    if info.get("failed"):
        text += f" (failed: {', '.join(info['failed'])})"
    return text


def summary_lines(spec: LabSpec, devices: dict[str, list[dict[str, str]]], state_dir: str,
                  boot: dict[str, dict[str, Any]]) -> list[str]:
    systemd_hosts = sum(host.init == "systemd" for host in spec.hosts)
    lines = [f"lab {spec.name}: {len(spec.hosts)} hosts on {spec.subnet} (bridge {spec.bridge} {spec.bridge_address}), "
             f"{systemd_hosts} systemd, {len(spec.hosts) - systemd_hosts} sysv"]
    width = max(len(host.name) for host in spec.hosts)
    for host in spec.hosts:
        dirty = dirty_limit_bytes(host.memory_bytes)
        memory = (f"memory {format_bytes(host.memory_bytes)} (dirty limit per disk {dirty / 2 ** 20:.1f}MiB)"
                  if host.memory_bytes and dirty else "memory -")
        lines.append(f"  {host.name:<{width}}  {host.address:<15} {memory}; init {init_text(host, boot)}")
        for disk in host.disks:
            device = devices[host.name][disk.index]
            where = disk.path or f"/dev/{device['device']}"
            fresh = (f"; fresh SSD: {format_bytes(disk.fob_bytes)} at these speeds, then {disk.steady_write_iops} write IOPS"
                     + (f" alternating every {disk.unsteady_period_s} s" if disk.unsteady_period_s else "")
                     if disk.fob_bytes else "")
            fresh += _spike_text(disk) + (_data_fault_text(disk, {}) if disk.returns_wrong_data else "")
            fresh += _stall_text(disk, device, None) if disk.stalls else ""
            lines.append(f"  {'':<{width}}    d{disk.index} {device['device']} ({device['major_minor']}) {format_bytes(disk.size_bytes)} "
                         f"{disk.mode} {where}: {_speeds_text(disk.speeds)}{fresh}")
    lines.append(f"inventory: {os.path.join(state_dir, INVENTORY_FILE)}")
    lines.append(f"ssh:       tools/lab ssh {spec.hosts[0].name}   (key {os.path.join(state_dir, KEY_FILE)})")
    return lines


# ---------------------------------------------------------------------------------------------
# down
# ---------------------------------------------------------------------------------------------

def _netns_pids(names: list[str]) -> list[int]:
    """PIDs living in any of these network namespaces (what `ip netns pids` does, in one /proc pass)."""
    wanted = set()
    for name in names:
        try:
            info = os.stat(f"/run/netns/{name}")
        except OSError:
            continue
        wanted.add((info.st_dev, info.st_ino))
    if not wanted:
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            info = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in wanted:
            pids.append(int(entry))
    return pids


def _retry(action: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if action():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def down(state_dir: str, say: Printer = _say, own_up: bool = False) -> bool:
    """Tear down what the journal in state_dir records. False when there was nothing to tear down."""
    started = time.monotonic()
    records = read_journal(state_dir)
    if records is None:
        if _adoptable(state_dir, state_dir):
            # An up killed before it could open its journal created nothing else.
            _remove_state(state_dir, [DEFAULT_STATE_ROOT, state_dir])
            say(f"no lab is up at {state_dir} (removed the empty state dir of an interrupted up)")
        else:
            say(f"no lab is up at {state_dir} (no journal): nothing to do")
        return False
    lab = next((r for r in records if r["kind"] == "lab"), None)
    if lab is None:
        # Killed before the first record: only the state dir and an empty journal exist.
        own_root = os.path.dirname(state_dir) == DEFAULT_STATE_ROOT
        _remove_state(state_dir, [DEFAULT_STATE_ROOT, state_dir] if own_root else [])
        say(f"lab at {state_dir} had created nothing yet; removed its state")
        return True
    up_pid = lab.get("up_pid")
    if not own_up and up_pid and is_alive(up_pid) and _process_start_time(up_pid) == lab.get("up_pid_start"):
        raise LabError(f"`tools/lab up` of lab {lab['name']} is still running (PID {up_pid}): wait for it or kill it first")

    def of(kind: str) -> list[dict[str, Any]]:
        return [r for r in records if r["kind"] == kind]

    problems: list[str] = []
    name = lab["name"]
    addresses = {host["address"] for host in lab["spec"]["hosts"]}

    # 1. ssh clients (ControlPersist masters) still connected to the lab: by socket, by PID.
    clients = ssh_clients_connected_to(addresses)
    kill(clients, signal.SIGTERM)
    kill(wait_dead(clients, 2.0), signal.SIGKILL)

    # 1b. systemd hosts: nspawn turns SIGTERM into a clean shutdown of the container (~1.5 s); the
    # namespace sweep below kills whatever is left. nspawn itself lives outside the host's netns.
    nspawns = [r["pid"] for r in of("nspawn_pid")
               if is_alive(r["pid"]) and _process_start_time(r["pid"]) == r.get("start")]
    kill(nspawns, signal.SIGTERM)
    wait_dead(nspawns, 10.0)

    # 2. every process of every host namespace; zombies count as dead.
    namespaces = [r["name"] for r in of("netns")]
    killed = 0
    for _attempt in range(5):
        pids = [pid for pid in _netns_pids(namespaces) if is_alive(pid)]
        if not pids:
            break
        killed += len(pids)
        kill(pids, signal.SIGKILL)
        wait_dead(pids, 10.0)
    else:
        problems.append(f"processes still alive in the lab namespaces: {_netns_pids(namespaces)}")
    stuck = [pid for pid in nspawns if is_alive(pid)]
    kill(stuck, signal.SIGKILL)
    if wait_dead(stuck, 10.0):
        problems.append(f"systemd-nspawn processes still alive: {stuck}")

    # 2a. the systemd hosts' cgroups (the container's systemd leaves its unit cgroups when killed).
    for record in of("nspawn_cgroup"):
        for hierarchy in SYSTEMD_CGROUP_ROOTS:
            path = os.path.join(hierarchy, record["path"])
            if not _retry(lambda p=path: _remove_cgroup_tree(p), 5.0):
                problems.append(f"cannot remove cgroup {path} (processes left in it?)")
    for lab_path in {r["lab_path"] for r in of("nspawn_cgroup")}:
        for hierarchy in SYSTEMD_CGROUP_ROOTS:
            try:
                os.rmdir(os.path.join(hierarchy, lab_path))
            except OSError:
                pass  # gone, or not empty: reported above

    # 2a'. the lab's cpu cgroup, empty once its hosts' processes are gone.
    for record in of("cpu_cgroup"):
        if not _retry(lambda p=record["path"]: _remove_cgroup_tree(p), 5.0):
            problems.append(f"cannot remove cgroup {record['path']} (processes left in it?)")

    # 2b. fresh-SSD watchers and latency-spike processes, before the throttles they change are removed.
    watchers = [r["pid"] for r in of("fob_watcher_pid") + of("spike_process_pid") + of("data_fault_process_pid")
                + of("stall_process_pid") if is_alive(r["pid"]) and _process_start_time(r["pid"]) == r.get("start")]
    kill(watchers, signal.SIGTERM)
    kill(wait_dead(watchers, 5.0), signal.SIGKILL)
    if wait_dead(watchers, 5.0):
        problems.append(f"fresh-SSD watcher, latency-spike, wrong-data or stall processes still alive: {watchers}")

    # 3. throttles: only for a device that is still the loop of our own image.
    current = read_throttles()
    for record in of("throttle"):
        numbers = record["major_minor"]
        if numbers not in current:
            continue
        device = device_for_major_minor(numbers)
        if device is None or loop_backing_file(device) != record["image"]:
            say(f"  throttle {numbers}: device no longer backed by {record['image']}, left alone")
            continue
        for key_name in record.get("keys", list(THROTTLE_FILES)):
            if key_name not in current[numbers]:
                continue
            try:
                write_throttle(key_name, numbers, 0)
            except OSError as exc:
                problems.append(f"cannot remove {key_name} throttle of {numbers}: {exc}")

    # 3b. dirty limits on the loops' bdis: they outlive a detach, so restore them unless the device
    # now belongs to someone else's file.
    for record in of("bdi"):
        if not _loop_still_ours(record):
            continue
        bdi = _bdi_dir(record["major_minor"])
        try:
            _write_sysfs(os.path.join(bdi, "strict_limit"), record["strict_limit"])
            _write_sysfs(os.path.join(bdi, record["ratio_file"]), record["ratio"])
        except OSError as exc:
            problems.append(f"cannot restore the dirty limit of {record['major_minor']}: {exc}")

    for record in of("read_ahead"):
        if not _loop_still_ours(record):
            continue
        try:
            _write_sysfs(os.path.join(_bdi_dir(record["major_minor"]), "read_ahead_kb"), record["read_ahead_kb"])
        except OSError as exc:
            problems.append(f"cannot restore the readahead of {record['major_minor']}: {exc}")

    # 4. systemd hosts' overlays, then disk mounts (before the loops they hold), newest first.
    for record in reversed([r for r in of("mount") if r.get("role") in ("overlay", "disk")]):
        _unmount(record["mountpoint"], problems)

    # 5. loops: only those whose backing file is the image we recorded; newest first (a stalling disk's loop
    # device is backed by the loop device of its image).
    for record in reversed(of("loop")):
        for device in loops_backed_by(record["image"]):
            run(["losetup", "--detach", f"/dev/{device}"], check=False)
            if not _retry(lambda d=device, i=record["image"]: loop_backing_file(d) != i, 5.0):
                problems.append(f"/dev/{device} still attached to {record['image']} (busy elsewhere?)")
    for record in of("loop_created"):
        _remove_loop_device(record, problems)

    # 6. the work dir's own bind mount (after the loops: they hold files on it).
    for record in reversed([r for r in of("mount") if r.get("role") == "workdir"]):
        _unmount(record["mountpoint"], problems)

    # 7. network: root-side veths (their peers go with them), namespaces, the bridge.
    for record in of("veth"):
        if iface_exists(record["name"]):
            _try(["ip", "link", "del", record["name"]], problems)
    for record in of("netns"):
        if netns_exists(record["name"]):
            _try(["ip", "netns", "del", record["name"]], problems)
    for record in of("bridge"):
        if iface_exists(record["name"]):
            _try(["ip", "link", "del", record["name"]], problems)

    # 8. images, host dirs, sshd files: the work dir, once nothing is mounted in it.
    for record in of("workdir"):
        path = record["path"]
        if os.path.lexists(path):
            still_mounted = mounts_under(path)
            if still_mounted:
                problems.append(f"not removing {path}: still mounted: {', '.join(still_mounted)}")
            else:
                shutil.rmtree(path, ignore_errors=True)
                if os.path.lexists(path):
                    problems.append(f"could not remove {path}")

    # 9. nspawn's runtime dirs under /run/systemd, if this lab saw them appear and nobody uses them now.
    for path in sorted({p for r in of("nspawn_runtime") for p in r["created"]}, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass  # gone already, or in use by another lab's systemd host

    if problems:
        raise LabError(f"down of lab {name} incomplete; the journal is kept, fix and run down again:\n"
                       + "\n".join(f"  - {problem}" for problem in problems))
    _remove_state(state_dir, lab.get("created_dirs", []))
    elapsed = time.monotonic() - started
    say(f"lab {name} down in {elapsed:.1f} s ({len(namespaces)} hosts, {len(of('loop'))} disks, "
        f"{killed} processes and {len(clients)} ssh clients stopped)")
    return True


def _try(argv: list[str], problems: list[str]) -> None:
    try:
        run(argv)
    except CommandError as exc:
        problems.append(str(exc))


def _unmount(mountpoint: str, problems: list[str]) -> None:
    if not is_mountpoint(mountpoint):
        return
    errors: list[str] = []

    def attempt() -> bool:
        result = run(["umount", mountpoint], check=False)
        if result.returncode != 0:
            errors.append(result.stderr.strip())
        return not is_mountpoint(mountpoint)

    if not _retry(attempt, 5.0):
        problems.append(f"cannot unmount {mountpoint}: {errors[-1] if errors else 'still mounted'}")


def _remove_state(state_dir: str, created_dirs: list[str]) -> None:
    for file_name in STATE_FILES:
        try:
            os.unlink(os.path.join(state_dir, file_name))
        except FileNotFoundError:
            pass
    shutil.rmtree(os.path.join(state_dir, LOG_DIR), ignore_errors=True)
    for directory in reversed(created_dirs):
        try:
            os.rmdir(directory)
        except OSError:
            break  # not empty: someone else's files, or a sibling lab under the same root


# ---------------------------------------------------------------------------------------------
# cut / heal / status / ssh
# ---------------------------------------------------------------------------------------------

def load_lab(state_dir: str) -> dict[str, Any]:
    path = os.path.join(state_dir, LAB_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        if read_journal(state_dir) is not None:
            raise LabError(f"the lab at {state_dir} is not completely up (up still running or interrupted): "
                           f"run `tools/lab down {_selector(state_dir)}`") from None
        raise LabError(f"no lab is up at {state_dir}") from None


def _host_of(lab: dict[str, Any], host_name: str) -> HostSpec:
    spec = LabSpec.from_dict(lab["spec"])
    try:
        return spec.host(host_name)
    except KeyError:
        names = ", ".join(h.name for h in spec.hosts)
        raise LabError(f"lab {spec.name} has no host {host_name!r} (hosts: {names})") from None


def set_link(state_dir: str, host_name: str, up_: bool, say: Printer = _say) -> None:
    lab = load_lab(state_dir)
    host = _host_of(lab, host_name)
    run(["ip", "-n", host.netns, "link", "set", "dev", "eth0", "up" if up_ else "down"])
    if up_:
        say(f"{host.name} ({host.address}): eth0 up, reachable again")
    else:
        say(f"{host.name} ({host.address}): eth0 down, unreachable until `tools/lab heal {host.name}`")


def _link_state(netns: str) -> str:
    if not netns_exists(netns):
        return "no-netns"
    result = run(["ip", "-n", netns, "-j", "link", "show", "dev", "eth0"], check=False)
    try:
        flags = json.loads(result.stdout)[0]["flags"]
    except (ValueError, IndexError, KeyError):
        return "missing"
    return "up" if "UP" in flags else "down"


def _dirty_text(numbers: str) -> str:
    try:
        strict = _read_sysfs(os.path.join(_bdi_dir(numbers), "strict_limit")) == "1"
        limit = int(_read_sysfs(os.path.join(_bdi_dir(numbers), "max_bytes")))
    except (OSError, ValueError):
        return "dirty limit unknown"
    return f"dirty limit {limit} B ({'strict' if strict else 'not strict'})"


def status(state_dir: str, say: Printer = _say) -> bool:
    """Print the lab; True when every host is reachable over ssh with its throttles in place."""
    lab = load_lab(state_dir)
    spec = LabSpec.from_dict(lab["spec"])
    key = lab["key"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(32, len(spec.hosts))) as pool:
        reachable = list(pool.map(lambda h: ssh_ok(key, h.address, connect_timeout=2)[0], spec.hosts))
    throttles = read_throttles()
    all_ok = True
    say(f"lab {spec.name}: {len(spec.hosts)} hosts on {spec.subnet}, bridge {spec.bridge} "
        f"({'up' if iface_exists(spec.bridge) else 'MISSING'})")
    say(f"state {state_dir}  inventory {lab['inventory']}")
    width = max(len(h.name) for h in spec.hosts)
    say(f"  {'HOST':<{width}}  {'ADDRESS':<15} {'LINK':<8} {'SSH':<12} INIT")
    for host, ok in zip(spec.hosts, reachable):
        link = _link_state(host.netns)
        all_ok = all_ok and ok
        init = host.init
        if host.init == "systemd" and ok:
            state = run(ssh_argv(key, host.address, ["systemctl", "is-system-running"], connect_timeout=2),
                        check=False, timeout=15).stdout.strip()
            init = f"systemd ({state or 'unknown'})"
            all_ok = all_ok and state in ("running", "degraded")
        say(f"  {host.name:<{width}}  {host.address:<15} {link:<8} {'ok' if ok else 'UNREACHABLE':<12} {init}")
        for disk in host.disks:
            device = lab["devices"][host.name][disk.index]
            attached = loop_backing_file(device["device"]) is not None
            wanted = {k: v for k, v in disk.speeds.items() if v}
            fob_text = ""
            if disk.fob_bytes:
                phase = _disk_process_state(disk_state_file(lab["workdir"], "fob_watcher", host.name, disk.index))
                if phase.get("write_iops"):
                    wanted["write_iops"] = phase["write_iops"]
                fob_text = (f"; fresh SSD: {phase.get('phase', 'WATCHER NOT RUNNING')}, "
                            f"{format_bytes(phase.get('written_bytes', 0))} of {format_bytes(disk.fob_bytes)} "
                            f"fresh bytes written when it last changed, then {disk.steady_write_iops} write IOPS"
                            + (f" alternating every {disk.unsteady_period_s} s" if disk.unsteady_period_s else ""))
                all_ok = all_ok and bool(phase)
            actual = throttles.get(device["major_minor"], {})
            if disk.latency_spike_ms:
                spiked = _disk_process_state(disk_state_file(lab["workdir"], "spike_process", host.name, disk.index))
                fob_text += (_spike_text(disk) + f", {spiked.get('spikes', 0)} so far" if spiked
                             else "; latency spikes: PROCESS NOT RUNNING")
                all_ok = all_ok and bool(spiked)
                if actual == dict(wanted, read_iops=spikes.SPIKE_IOPS, write_iops=spikes.SPIKE_IOPS):
                    actual = wanted   # caught during a spike: the spike's own throttle
            if disk.returns_wrong_data:
                faulted = _disk_process_state(disk_state_file(lab["workdir"], "data_fault_process", host.name, disk.index))
                fob_text += _data_fault_text(disk, faulted) if faulted else "; wrong data: PROCESS NOT RUNNING"
                all_ok = all_ok and bool(faulted)
            if disk.stalls:
                held = _disk_process_state(disk_state_file(lab["workdir"], "stall_process", host.name, disk.index))
                fob_text += _stall_text(disk, device, held) if held else "; stall: PROCESS NOT RUNNING"
                all_ok = all_ok and bool(held)
            throttle = "throttle ok" if actual == wanted else f"THROTTLE MISMATCH (now {_speeds_text(actual)})"
            all_ok = all_ok and attached and actual == wanted
            say(f"  {'':<{width}}    d{disk.index} {device['device']} ({device['major_minor']}"
                f"{'' if attached else ', DETACHED'}) {format_bytes(disk.size_bytes)} {disk.mode} "
                f"{disk.path or '/dev/' + device['device']}: {_speeds_text(disk.speeds)}; {throttle}; "
                f"{_dirty_text(device['major_minor'])}{fob_text}")
    return all_ok


def _spike_text(disk: DiskSpec) -> str:
    if not disk.latency_spike_ms:
        return ""
    return (f"; latency spikes (a planted fault): IOPS {spikes.SPIKE_IOPS} for {disk.latency_spike_ms} ms every "
            f"{disk.latency_spike_period_s} s")


def _data_fault_text(disk: DiskSpec, state: dict[str, Any]) -> str:
    parts = []
    if disk.flip_byte_at is not None:
        parts.append(f"a bit of byte {disk.flip_byte_at} flipped after each write to its block"
                     + (f", {state.get('flips') or 0} so far" if state else ""))
    if disk.stale_region_at is not None:
        length = disk.stale_region_bytes or datafault.DEFAULT_STALE_BYTES
        parts.append(f"{format_bytes(length)} at {disk.stale_region_at} keep their first data, later writes undone"
                     + (f", {state.get('put_backs') or 0} so far" if state else ""))
    return "; wrong data (a planted fault): " + "; ".join(parts)


def _stall_text(disk: DiskSpec, device: dict[str, str], state: dict[str, Any] | None) -> str:
    text = (f"; stall (a planted fault): I/O held for {disk.stall['stall_s']} s once "
            f"{format_bytes(disk.stall['stall_after_bytes'] or 0)} went through (a loop over "
            f"{device.get('lower_device', '?')})")
    if state:
        text += (", holding now" if state.get("in_stall") else ", released" if state.get("released_at")
                 else ", not yet begun")
    return text


def _disk_process_state(path: str) -> dict[str, Any]:
    """What a disk's process (fob.py, spikes.py) last wrote to its state file; {} when it never did."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def ssh_exec(state_dir: str, host_name: str, command: list[str]) -> None:
    """Replace this process with ssh into the host (interactive when no command is given)."""
    lab = load_lab(state_dir)
    host = _host_of(lab, host_name)
    argv = ssh_argv(lab["key"], host.address, command, connect_timeout=5)
    if not command:
        argv.insert(1, "-t")
    env = dict(CLEAN_ENV, TERM=os.environ.get("TERM", "dumb"))
    os.execvpe("ssh", argv, env)
