# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the benchmark scripts that bring up a lab share: the lab as a context manager that always goes down and says
so loudly when it cannot, and a playbook run that returns the report the callback wrote.

    with Lab(spec_dict, workdir) as lab:
        report = validate(lab, workdir / "report", {"diskproof_profile": "quick"})
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAB_STATE = pathlib.Path("/run/diskproof-lab")


class LabFailed(Exception):
    """A lab that did not come up or go down, or a playbook that did not produce its report."""


def lab_tool(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools/lab"), *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=timeout)


class Lab:
    """``with Lab(spec, workdir) as lab``: ``tools/lab up`` on entry (a lab of that name left by an earlier run is
    taken down first), ``tools/lab down`` on exit, whatever happened; a down that fails raises LabFailed naming
    what is still up (nothing is left behind silently)."""

    def __init__(self, spec: Dict[str, Any], workdir: pathlib.Path) -> None:
        self.spec = spec
        self.name = spec["name"]
        self.state = LAB_STATE / self.name
        self.spec_file = pathlib.Path(workdir) / ("%s-lab.yml" % self.name)
        self.spec_file.write_text(json.dumps(spec))

    def __enter__(self) -> "Lab":
        self.down()
        result = lab_tool("up", "--state", str(self.state), str(self.spec_file))
        if result.returncode != 0:
            raise LabFailed("tools/lab up %s failed: %s" % (self.name, (result.stdout + result.stderr)[-2000:]))
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()

    def down(self) -> None:
        result = lab_tool("down", "--state", str(self.state))
        if result.returncode != 0:
            raise LabFailed("tools/lab down %s failed, the lab may still be up (run `tools/lab down --name %s` once "
                            "the cause is gone): %s" % (self.name, self.name, (result.stdout + result.stderr)[-2000:]))

    @property
    def inventory(self) -> pathlib.Path:
        return self.state / "inventory.yml"

    def mounts(self) -> List[str]:
        """The mount point, in this machine's namespace, of each host's first filesystem disk."""
        return sorted(str(path) for path in pathlib.Path("/dev/shm/diskproof-lab-%s/hosts" % self.name).glob(
            "*/srv/diskproof/d0"))

    def cut(self, host: str) -> None:
        result = lab_tool("cut", "--state", str(self.state), host)
        if result.returncode != 0:
            raise LabFailed("tools/lab cut %s failed: %s" % (host, result.stdout + result.stderr))


def playbook_env(report_dir: pathlib.Path, **extra: str) -> Dict[str, str]:
    """The environment `make` gives ansible-playbook, with the report written to report_dir."""
    return dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
                ANSIBLE_HOME=str(ROOT / ".ansible"), ANSIBLE_NOCOLOR="1",
                PATH="%s:%s" % (ROOT / ".venv/bin", os.environ.get("PATH", "")), **extra)


def run_playbook(inventory: pathlib.Path, playbook: str, report_dir: pathlib.Path, extra: Dict[str, Any],
                 args: Sequence[str] = (), timeout: float = 1800) -> subprocess.CompletedProcess:
    """ansible-playbook PLAYBOOK (relative to the checkout) with extra as one JSON -e; its output captured."""
    argv = [str(ROOT / ".venv/bin/ansible-playbook"), "-i", str(inventory), playbook, *args]
    if extra:
        argv += ["-e", json.dumps(extra)]
    return subprocess.run(argv, cwd=ROOT, env=playbook_env(report_dir), capture_output=True, text=True, check=False,
                          timeout=timeout)


def report_of(report_dir: pathlib.Path, result: Optional[subprocess.CompletedProcess] = None) -> Dict[str, Any]:
    """The report.json the callback wrote (LabFailed, with the playbook's tail, when there is none)."""
    path = pathlib.Path(report_dir) / "report.json"
    if not path.exists():
        tail = "" if result is None else (result.stdout + result.stderr)[-3000:]
        raise LabFailed("no report.json in %s (playbook exit %s): %s"
                        % (report_dir, None if result is None else result.returncode, tail))
    return json.loads(path.read_text())
