"""The preflight before the quiesce (the plan's check that starts the quiesce call, before its lock), end to end
(lab `qfen`, qfen_lab.yml: five SysV hosts, a 256 MiB ext4 disk each, 32 MiB memory figure and cache fence),
through playbooks/validate.yml with -f 2:

- qfen-n01 lacks fio: a non-executable empty file is bind-mounted over /usr/bin/fio inside that lab host's own
  mount namespace only (a stand-in for "fio not installed"; this machine's fio is untouched, checked before and
  after). It is refused in that check naming the package to install, and nothing was quiesced: cron keeps
  its pid and the quiesce state directory was never created.
- qfen-n02 has no memory cgroup (the lab's memory hierarchy is unmounted in its namespace) while the plan fences
  its buffered tests: refused in that check saying to enable it or set diskproof_cache_fence_bytes: 0, and
  nothing was quiesced.
- qfen-n03 to qfen-n05 are complete and run; with forks 2 the plan printed at the start says the three hosts run
  in two waves (2 + 1), with the fleet duration and the forks for one wave.

Real lab (tools/lab), real ansible-playbook with the report callback. Root only. About 40 s.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from labhelpers import BIN, REPO, ansible_env, inventory_path, on_host, needs_root, running_lab

SPEC = Path(__file__).resolve().parent / "qfen_lab.yml"
LAB = "qfen"
NO_FIO, NO_CGROUP, GOOD = "qfen-n01", "qfen-n02", ("qfen-n03", "qfen-n04", "qfen-n05")
STATE_DIR = "/srv/diskproof-state"   # the lab inventory's quiesce_state_dir
STAND_IN = "/var/tmp/qfen-not-fio"   # per-host /var/tmp: the empty, non-executable file hiding fio

pytestmark = needs_root


def run_on(host: str, command: str) -> str:
    result = on_host(LAB, host, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (host, command, result.stdout, result.stderr)
    return result.stdout.strip()


def cron_pid(host: str) -> str:
    return run_on(host, "pgrep -x cron -n --ns $$ || true")


def this_machines_fio_works() -> bool:
    return os.access("/usr/bin/fio", os.X_OK) and subprocess.run(
        ["/usr/bin/fio", "--version"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def qfen():
    assert this_machines_fio_works()
    with running_lab(LAB, SPEC):
        run_on(NO_FIO, "install -m 0644 /dev/null %s && mount --bind %s /usr/bin/fio && test ! -x /usr/bin/fio"
               % (STAND_IN, STAND_IN))
        run_on(NO_CGROUP, "umount /sys/fs/cgroup/memory && test ! -e /sys/fs/cgroup/memory/memory.limit_in_bytes")
        try:
            assert this_machines_fio_works(), "the bind mount leaked out of the lab host's namespace"
            yield
        finally:
            on_host(LAB, NO_FIO, "umount /usr/bin/fio; rm -f %s" % STAND_IN)
    assert this_machines_fio_works()


def test_hosts_missing_a_tool_or_the_fence_are_refused_before_the_quiesce(qfen, tmp_path):
    pids = {host: cron_pid(host) for host in (NO_FIO, NO_CGROUP) + GOOD}
    assert all(pids.values()), pids
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory_path(LAB)), "-f", "2",
            str(REPO / "playbooks" / "validate.yml"),
            "-e", '{"benchmark_tests": ["dd_seq_write", "fio_rand_read"], "benchmark_fio_runtime_s": 1, '
                  '"benchmark_fio_ramp_s": 0, "benchmark_repeats": 1, "benchmark_max_repeats": 1}']
    result = subprocess.run(argv, cwd=REPO, env=ansible_env(DISKPROOF_REPORT_DIR=str(tmp_path)),
                            capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output

    refusals = {host: re.search(r"fatal: \[%s\]: FAILED! => .*" % host, output) for host in (NO_FIO, NO_CGROUP)}
    assert all(refusals.values()), output
    # Failed in the plan's check at the start of the quiesce call, before its lock (the next assertions: nothing
    # stopped, no state): inside the quiesce task, before the task after it.
    quiesce_task = output.index("TASK [diskproof.fleet.quiesce : Lock the host")
    next_task = output.index("TASK [", quiesce_task + 1)
    assert all(quiesce_task < match.start() < next_task for match in refusals.values()), output
    no_fio = refusals[NO_FIO].group(0)
    assert "fio is not installed (not found in PATH or the sbin directories): install the package fio " \
           "(Debian/Ubuntu: apt-get install fio; RHEL and derivatives: dnf install fio)" in no_fio, no_fio
    no_cgroup = refusals[NO_CGROUP].group(0)
    assert "needs a memory cgroup, but no memory cgroup controller" in no_cgroup, no_cgroup
    assert "enable the memory cgroup controller on this host, or set diskproof_cache_fence_bytes: 0" in no_cgroup

    # Refused before the quiesce: cron never stopped (same pid), no lock or state written.
    for host in (NO_FIO, NO_CGROUP):
        assert cron_pid(host) == pids[host], host
        assert run_on(host, "ls -A %s 2>/dev/null | wc -l" % STATE_DIR) == "0", host
    # The complete hosts ran, in two waves (2 + 1), and the plan said so at the start.
    for host in GOOD:
        assert re.search(r"%s\s*: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % host, output), output
    assert "fleet: 3 hosts in the play, forks 2: each task runs on at most 2 hosts at once, so the benchmark " \
           "runs in 2 waves (2 + 1 hosts)" in output, output
    assert "forks 3 (ansible-playbook -f 3; in AWX/AAP the job template's Forks) would run it in one wave" in output
