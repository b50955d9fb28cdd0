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
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB_TOOL = REPO / "tools" / "lab"
LAB_STATE = Path("/run/diskproof-lab")
BIN = Path(sys.executable).parent

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 (the lab uses network namespaces and loop devices)")


def lab(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    """tools/lab with these arguments (up SPEC, down --name N, cut, heal, ssh ...)."""
    return subprocess.run([sys.executable, str(LAB_TOOL), *args], capture_output=True, text=True, check=check,
                          timeout=timeout)


def inventory_path(name: str) -> Path:
    return LAB_STATE / name / "inventory.yml"


def on_host(name: str, host: str, command: str) -> subprocess.CompletedProcess:
    """A shell command on a lab host, over the lab's own ssh (never raises on a non-zero exit)."""
    return lab("ssh", "--name", name, host, "--", command, check=False)


def cron_status(name: str, host: str) -> int:
    """Exit code of `service cron status` on the host (0 running, 3 not running)."""
    result = on_host(name, host, "service cron status >/dev/null 2>&1; echo $?")
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip())


def ansible_env(**extra: str) -> Dict[str, str]:
    """Environment for ansible commands: the venv's bin first, no colours."""
    return dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1", **extra)


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
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def written_sectors(device: str) -> int:
    """Sectors the block device has written since it was created (/sys/block/<dev>/stat field 7)."""
    with open("/sys/block/%s/stat" % os.path.basename(device), encoding="ascii") as handle:
        return int(handle.read().split()[6])


def leftover_fences() -> List[str]:
    """Memory cgroups a cache fence left behind (there must be none after a run)."""
    found: List[str] = []
    for root, dirs, _files in os.walk("/sys/fs/cgroup/memory"):
        found.extend(os.path.join(root, name) for name in dirs if name.startswith("diskproof-"))
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
