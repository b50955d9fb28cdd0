"""System helpers: commands with a clean environment (argv lists only, never a shell string built
from variables), processes, mounts and loop devices read straight from /proc and /sys."""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Iterable

# Lab hosts share the kernel and this tool runs as root: give every child a fixed, minimal,
# non-interactive environment (no agent, no locale surprises, no prompts).
CLEAN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", "LANG": "C", "HOME": "/root", "TERM": "dumb"}


class CommandError(Exception):
    def __init__(self, argv: list[str], returncode: int, output: str) -> None:
        super().__init__(f"{' '.join(argv)} failed (exit {returncode}): {output.strip() or 'no output'}")
        self.argv = argv
        self.returncode = returncode
        self.output = output


def run(argv: list[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, env=CLEAN_ENV, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise CommandError(argv, result.returncode, result.stderr or result.stdout)
    return result


def memory_available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable of /proc/meminfo in bytes, None when it cannot be read."""
    try:
        with open(meminfo, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def spawn_detached(argv: list[str], log_path: str, env: dict[str, str] | None = None,
                   cgroup_procs: str | None = None) -> int:
    """Start a long-lived process in its own session (it must outlive this tool); return its PID. With
    cgroup_procs (a cgroup's cgroup.procs file), the child joins that cgroup before it execs, so everything it
    ever starts is in it from the first instruction on."""
    def join_cgroup() -> None:
        if cgroup_procs:
            with open(cgroup_procs, "w", encoding="ascii") as procs:
                procs.write(str(os.getpid()))

    with open(log_path, "ab") as log:
        process = subprocess.Popen(argv, env=env or CLEAN_ENV, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, close_fds=True,
                                   preexec_fn=join_cgroup if cgroup_procs else None)  # pylint: disable=subprocess-popen-preexec-fn
    return process.pid


# --- processes ---

def process_state(pid: int) -> str | None:
    """The state letter from /proc/PID/stat (R, S, D, Z, ...) or None when the PID is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            data = handle.read()
    except OSError:
        return None
    return data.rpartition(")")[2].split()[0]


def is_alive(pid: int) -> bool:
    # PID 1 here reaps slowly (~2 s): a zombie has released its namespaces, mounts and files.
    return process_state(pid) not in (None, "Z", "X")


def kill(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_dead(pids: Iterable[int], timeout: float) -> list[int]:
    """Wait until every PID is gone or a zombie; return those still alive at the deadline."""
    remaining = list(pids)
    deadline = time.monotonic() + timeout
    while True:
        remaining = [pid for pid in remaining if is_alive(pid)]
        if not remaining or time.monotonic() >= deadline:
            return remaining
        time.sleep(0.02)


def _tcp_inodes_to(pid: int, addresses: set[str], port: int) -> set[str]:
    """Inodes of the TCP sockets, as seen in PID's network namespace, connected to address:port."""
    inodes = set()
    try:
        with open(f"/proc/{pid}/net/tcp", encoding="ascii") as handle:
            next(handle)
            for line in handle:
                fields = line.split()
                remote_ip, remote_port = fields[2].split(":")
                ip = socket.inet_ntoa(struct.pack("<I", int(remote_ip, 16)))
                if ip in addresses and int(remote_port, 16) == port:
                    inodes.add(fields[9])
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return inodes


def ssh_clients_connected_to(addresses: set[str], port: int = 22) -> list[int]:
    """PIDs of ssh client processes (ControlPersist masters included) with a TCP connection to one of
    the addresses. Found by socket ownership, so nothing else named ssh is ever touched."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            if os.path.basename(os.readlink(f"/proc/{pid}/exe")) != "ssh":
                continue
        except OSError:
            continue
        inodes = _tcp_inodes_to(pid, addresses, port)
        if not inodes:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                found.append(pid)
                break
    return found


# --- mounts ---

def _unescape_mount_path(path: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(path):
        octal = path[i + 1:i + 4]
        if path[i] == "\\" and len(octal) == 3 and octal.isdigit():
            out.append(chr(int(octal, 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def mountpoints() -> list[str]:
    """Mount points of this tool's mount namespace (the root one), in mount order."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        return [_unescape_mount_path(line.split()[4]) for line in handle if line.strip()]


def is_mountpoint(path: str) -> bool:
    return os.path.normpath(path) in mountpoints()


def mounts_under(path: str) -> list[str]:
    base = os.path.normpath(path)
    return [mp for mp in mountpoints() if mp == base or mp.startswith(base + "/")]


# --- loop devices and block devices ---

def loop_backing_file(device: str) -> str | None:
    """Backing file of /dev/<device> (a loop device) as the kernel recorded it, without " (deleted)"."""
    try:
        with open(f"/sys/block/{device}/loop/backing_file", encoding="utf-8", errors="surrogateescape") as handle:
            name = handle.read().rstrip("\n")
    except OSError:
        return None
    return name.removesuffix(" (deleted)")


def loops_backed_by(image: str) -> list[str]:
    """Loop devices (kernel names) whose backing file is exactly this image."""
    found = []
    try:
        entries = os.listdir("/sys/block")
    except OSError:
        return found
    for device in entries:
        if device.startswith("loop") and loop_backing_file(device) == image:
            found.append(device)
    return sorted(found, key=lambda name: int(name[4:]) if name[4:].isdigit() else 0)


def major_minor(device: str) -> str:
    with open(f"/sys/block/{device}/dev", encoding="ascii") as handle:
        return handle.read().strip()


def device_for_major_minor(major_minor_text: str) -> str | None:
    try:
        return os.path.basename(os.readlink(f"/sys/dev/block/{major_minor_text}"))
    except OSError:
        return None


def iface_exists(name: str) -> bool:
    return os.path.exists(f"/sys/class/net/{name}")


def netns_exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{name}")
