"""Small helpers the integration tests share: the lab tool, commands on a lab host, playbook runs,
device checksums and counters, leftovers. Imported by the test files (pytest puts this folder on
sys.path), never by the collection.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LAB_TOOL = REPO / "tools" / "lab"
LAB_STATE = Path("/run/diskproof-lab")
BIN = Path(sys.executable).parent

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 (the lab uses network namespaces and loop devices)")


def lab(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """tools/lab with these arguments (up SPEC, down --name N, cut, heal, ssh ...). `up` runs in the lab's own
    memory cgroup (lab_cgroup), which a successful `down` removes."""
    argv = [sys.executable, str(LAB_TOOL), *args]
    command, name = args[0], None
    if command == "up":
        name = str(yaml.safe_load(Path(args[-1]).read_text())["name"])
        procs = lab_cgroup(name) / "cgroup.procs"
        procs.parent.mkdir(exist_ok=True)
        argv = ["sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", str(procs), *argv]
    elif command == "down" and "--name" in args:
        name = args[args.index("--name") + 1]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        if command == "up":        # a failed up has rolled back what it made (tools/lab)
            remove_lab_cgroup(name)
        raise
    failed = ""
    if result.returncode:
        failed = "tools/lab %s: exit code %d\n%s%s" % (
            " ".join(args), result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    if name is not None and (result.returncode == 0) == (command == "down"):   # down done, or up failed
        try:
            remove_lab_cgroup(name)
        except AssertionError as error:
            raise AssertionError("%s\n%s" % (failed, error)) from None
    if check and failed:
        raise AssertionError(failed)
    return result


# Every lab runs in a memory cgroup of its own (below this test process's), so its hosts' processes are there:
# a cache fence is made in the benchmark module's own cgroup (plugins/module_utils/_fence.py), hence the fences
# of this lab's hosts, SysV and systemd (whose cgroup namespace is rooted there), are in this lab's cgroup and
# nowhere else. Two labs running side by side (make integration runs test files in parallel) then neither see
# each other's fences nor take a fence a module of another PID namespace made for stale (the module's pid,
# looked up in its own namespace, is not running there).
MEMORY_HIERARCHY = Path("/sys/fs/cgroup/memory")


def lab_cgroup(name: str) -> Path:
    own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
               if "memory" in line.split(":", 2)[1].split(","))
    return MEMORY_HIERARCHY / own.lstrip("/") / ("diskproof-test-lab-%s" % name)


def remove_lab_cgroup(name: str) -> None:
    """rmdir the lab's cgroup and what is below it (fences a killed module left), once its processes are gone
    (`down` killed them; a dying process may hold it a moment)."""
    top = lab_cgroup(name)
    deadline = time.monotonic() + 10
    while top.exists():
        try:
            for directory, _dirs, _files in sorted(os.walk(top), key=lambda entry: -len(entry[0])):
                os.rmdir(directory)
        except FileNotFoundError:
            continue
        except OSError as error:
            if time.monotonic() > deadline:
                raise AssertionError("lab %s: its memory cgroup %s is still in use: %s" % (name, top, error))
            time.sleep(0.2)


def inventory_path(name: str) -> Path:
    return LAB_STATE / name / "inventory.yml"


def lab_disks(name: str, host: str) -> List[Dict[str, Any]]:
    """The host's disks as the lab's inventory describes them (diskproof_lab_disks: device, path, the SPEC keys)."""
    return yaml.safe_load(inventory_path(name).read_text())["all"]["children"]["lab"]["hosts"][host]["diskproof_lab_disks"]


def raw_write_grant(name: str, disk: Mapping[str, Any]) -> Tuple[str, str]:
    """(device node, diskproof_destructive_allow entry) of a lab disk, after checking that the loop device is backed
    by this lab's own image (a test grants raw writes to nothing else)."""
    with open("/sys/block/%s/loop/backing_file" % disk["device"], encoding="utf-8") as handle:
        image = handle.read().strip()
    assert image.startswith("/dev/shm/diskproof-lab-%s/" % name), image
    return "/dev/" + disk["device"], "loop:" + image


def on_host(name: str, host: str, command: str) -> subprocess.CompletedProcess:
    """A shell command on a lab host, over the lab's own ssh (never raises on a non-zero exit)."""
    return lab("ssh", "--name", name, host, "--", command, check=False)


def host_init(name: str, host: str) -> str:
    """sysv or systemd: how the lab booted this host (its inventory's diskproof_lab_init)."""
    hosts = yaml.safe_load(inventory_path(name).read_text())["all"]["children"]["lab"]["hosts"]
    return hosts[host].get("diskproof_lab_init", "sysv")


# How the quiesce module names cron on each init (its stopped/started lists, the state file).
CRON_UNIT = {"sysv": "cron", "systemd": "cron.service"}
# Each init's own tool; both exit 0 when cron runs and 3 when it does not.
CRON_STATUS = {"sysv": "service cron status >/dev/null 2>&1; echo $?",
               "systemd": "systemctl is-active --quiet cron.service; echo $?"}


def cron_status(name: str, host: str) -> int:
    """Exit code of the host's own status tool for cron (0 running, 3 not running): `service cron status` on a
    SysV host (its own pidfile), `systemctl is-active cron.service` on a systemd host."""
    result = on_host(name, host, CRON_STATUS[host_init(name, host)])
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip())


# A systemd host's cron and every timer unit it knows (unit files and loaded units; templates have no state):
# three lines, the units, their `systemctl is-active` and their `systemctl is-enabled` (one systemctl call each).
SYSTEMD_UNIT_STATES = r"""set -u
timers=$( { systemctl list-unit-files --type=timer --no-legend --plain;
            systemctl list-units --type=timer --all --no-legend --plain; } |
          awk '$1 !~ /@\.timer$/ {print $1}' | sort -u)
units="cron.service $timers"
echo $units
systemctl is-active $units | tr '\n' ' '; echo
systemctl is-enabled $units | tr '\n' ' '; echo
"""


def unit_states(name: str, host: str) -> Dict[str, Tuple[str, str]]:
    """What the quiesce stops and must give back, read with the host's own init tool, keyed by the names the
    quiesce module uses: on a systemd host cron.service and every timer -> (systemctl is-active, systemctl
    is-enabled); on a SysV host cron -> (active or inactive by `service cron status`, "-": the quiesce never
    touches SysV runlevel links)."""
    init = host_init(name, host)
    if init == "sysv":
        return {"cron": ("active" if cron_status(name, host) == 0 else "inactive", "-")}
    result = on_host(name, host, SYSTEMD_UNIT_STATES)
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout + result.stderr
    units, active, enabled = (line.split() for line in lines)
    assert len(units) == len(active) == len(enabled), result.stdout + result.stderr
    assert "cron.service" in units and any(unit.endswith(".timer") for unit in units), result.stdout
    return {unit: (state, enabled_state) for unit, state, enabled_state in zip(units, active, enabled)}


def host_proc(name: str, host: str) -> str:
    """The /proc that shows this host's processes under the PIDs the host itself uses (what `ps` or
    /proc/*/fd read over ssh name): /proc on a SysV host (it shares this machine's PID namespace), the
    container's own /proc, reached through its PID 1's root, on a systemd host (a PID namespace of its own)."""
    if host_init(name, host) != "systemd":
        return "/proc"
    lab_file = json.loads((LAB_STATE / name / "lab.json").read_text())
    netns = next(entry["netns"] for entry in lab_file["spec"]["hosts"] if entry["name"] == host)
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=True)
    for pid in listed.stdout.split():
        with contextlib.suppress(OSError):
            status = Path("/proc", pid, "status").read_text()
            namespaced = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
            if len(namespaced) > 1 and namespaced[-1] == "1":
                return "/proc/%s/root/proc" % pid
    raise AssertionError("no PID 1 of systemd host %s among the processes of its namespace %s" % (host, netns))


def ansible_env(**extra: str) -> Dict[str, str]:
    """Environment for ansible commands: the venv's bin first, no colours."""
    return dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1", **extra)


def checkout_collection_env(report_dir: Path) -> Dict[str, str]:
    """ansible_env() for runs that must use this checkout as diskproof.fleet (the link `make collection` makes,
    created here when missing), the project's ansible.cfg, and the report callback writing to report_dir."""
    collection = REPO / ".ansible" / "collections" / "ansible_collections" / "diskproof" / "fleet"
    if not collection.exists():
        collection.parent.mkdir(parents=True, exist_ok=True)
        collection.symlink_to(Path("..", "..", "..", ".."))
    return ansible_env(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
                       ANSIBLE_COLLECTIONS_PATH=str(REPO / ".ansible" / "collections"),
                       DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_FORCE_COLOR="0")


def playbook(inventory: Path, playbook_path: Path, report_dir: Path, *extra: Any, check: bool = False,
             timeout: float = 900) -> Tuple[int, str, Optional[Dict[str, Any]]]:
    """ansible-playbook with the report callback writing to report_dir; each extra is one -e value
    (a string as given, anything else as JSON). Returns (exit code, output, report.json or None)."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook_path)]
    for value in extra:
        argv += ["-e", value if isinstance(value, str) else json.dumps(value)]
    if check:
        argv.append("--check")
    result = subprocess.run(argv, cwd=REPO, env=ansible_env(DISKPROOF_REPORT_DIR=str(report_dir)),
                            capture_output=True, text=True, check=False, timeout=timeout)
    report_file = report_dir / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    return result.returncode, result.stdout + result.stderr, report


def start_service_everywhere(name: str, service: str = "cron") -> None:
    """Start a service on every host of the lab (with ansible, as a user would), so that the quiesce has
    something to stop and the restore something to start."""
    started = subprocess.run([str(BIN / "ansible"), "-i", str(inventory_path(name)), "lab",
                              "-m", "ansible.builtin.service", "-a", "name=%s state=started" % service],
                             cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    assert started.returncode == 0, started.stdout + started.stderr


@contextlib.contextmanager
def running_lab(name: str, spec: Path, services: Tuple[str, ...] = ("cron",)) -> Iterator[None]:
    """The lab of this spec up (anything left by an earlier run of the same name torn down first), these
    services started on every host; torn down at the end whatever happened."""
    lab("down", "--name", name)
    lab("up", str(spec))
    try:
        for service in services:
            start_service_everywhere(name, service)
        yield
    finally:
        lab("down", "--name", name)


def sha256_of(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def written_sectors(device: str) -> int:
    """Sectors the block device has written since it was created (/sys/block/<dev>/stat field 7)."""
    with open("/sys/block/%s/stat" % os.path.basename(device), encoding="ascii") as handle:
        return int(handle.read().split()[6])


def leftover_fences(name: str) -> List[str]:
    """Memory cgroups a cache fence of lab NAME's hosts left behind (there must be none after a run); other labs'
    fences are in their own cgroups (lab_cgroup)."""
    found: List[str] = []
    for root, dirs, _files in os.walk(lab_cgroup(name)):
        found.extend(os.path.join(root, directory) for directory in dirs if directory.startswith("diskproof-"))
    return found


def wait_for(what: str, predicate: Callable[[], Any], timeout: float, interval: float = 0.5) -> Any:
    """predicate()'s first true value, or AssertionError naming what never happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def install_smartctl_stand_in(name: str, host: str, device: str, healthy: Mapping[str, Any],
                              grown: Mapping[str, Any], after_bytes: int, by: str,
                              directory: str = "/srv/standin-bin") -> None:
    """A labelled STAND-IN smartctl on the host's PATH, bind-mounted on /usr/local/sbin in its mount namespace only
    (no lab disk has SMART): for `device` it prints `healthy` (smartctl -j output) until `after_bytes` more than at
    its first call were written to that disk (/sys/block/<disk>/stat), then `grown`; for any other disk it runs the
    real /usr/sbin/smartctl. `by` names the test that installs it (in the script's first lines)."""
    def must(command: str) -> str:
        result = on_host(name, host, command)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        return result.stdout

    for file_name, document in (("healthy.json", healthy), ("grown.json", grown)):
        must("mkdir -p %s && cat > %s/%s <<'EOF'\n%s\nEOF" % (directory, directory, file_name, json.dumps(document)))
    script = ("#!/bin/sh\n# STAND-IN for smartctl (%s)\n"
              "for last; do :; done\n"
              'if [ "$last" != "%s" ]; then exec /usr/sbin/smartctl "$@"; fi\n'
              "written=$(awk '{print $7}' /sys/block/%s/stat)\n"
              '[ -f %s/first ] || echo "$written" > %s/first\n'
              'echo "$written" >> %s/log\n'
              'if [ $(( (written - $(cat %s/first)) * 512 )) -ge %d ]; then cat %s/grown.json; '
              "else cat %s/healthy.json; fi\n"
              % (by, device, os.path.basename(device), directory, directory, directory, directory, after_bytes,
                 directory, directory))
    must("cat > %s/smartctl <<'EOF'\n%sEOF\nchmod 0755 %s/smartctl && mount --bind %s /usr/local/sbin"
         % (directory, script, directory, directory))
    assert must("command -v smartctl").strip() == "/usr/local/sbin/smartctl"
