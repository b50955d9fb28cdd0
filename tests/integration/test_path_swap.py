"""Paths root writes through that nobody else can swap, on a real lab host (lab `bpath`, bpath_lab.yml:
one host, a 256 MiB ext4 disk at /srv/diskproof/d0, 64 MiB test files), with the real validate.yml.

1. A target whose parent directory is world-writable (0777, made by the test) is refused by the plan,
   naming the directory, its owner and mode and what to do - before anything is written (the target
   stays empty) and with the host's services restored.
2. The run directory swapped between plan and run: a watcher started on the host before the run waits
   for the run directory bench_plan creates (its note written), renames it away and puts a symlink to a
   decoy directory (made by the test, holding one file) in its place - what anyone able to write the
   target could do. bench_facts must refuse the job naming the swap; the decoy's file is unchanged
   (sha256) and nothing was added to the decoy; the symlink is gone after the run, the renamed directory
   is the watcher's (the test removes it).

Root only. Real lab (tools/lab), real ansible-playbook with the report callback.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from labhelpers import REPO, cron_status, inventory_path, needs_root, on_host, playbook, running_lab

SPEC = Path(__file__).resolve().parent / "bpath_lab.yml"
LAB = "bpath"
HOST = "bpath-n01"
DISK = "/srv/diskproof/d0"
DECOY = DISK + "/decoy"
WATCHER = "/var/tmp/bpath-watcher.sh"
WATCHER_LOG = "/var/tmp/bpath-watcher.log"

pytestmark = needs_root

# Waits (up to 180 s) for this run's directory with its note, then swaps it for a symlink to the decoy.
SWAPPER = r'''#!/bin/sh
d=%(disk)s
end=$(($(date +%%s) + 180))
until ls "$d"/diskproof-*/.diskproof-run >/dev/null 2>&1; do
  if [ "$(date +%%s)" -gt "$end" ]; then echo "timeout" > %(log)s; exit 1; fi
  sleep 0.02
done
run_dir=$(dirname "$(ls -d "$d"/diskproof-*/.diskproof-run | head -n 1)")
mv "$run_dir" "$d/swapped-$(basename "$run_dir")" && ln -s %(decoy)s "$run_dir"
echo "swapped $run_dir rc=$?" > %(log)s
''' % {"disk": DISK, "log": WATCHER_LOG, "decoy": DECOY}


def run_on(command: str) -> str:
    result = on_host(LAB, HOST, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (HOST, command, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def bpath():
    with running_lab(LAB, SPEC):
        yield


def test_a_target_below_a_world_writable_directory_is_refused_before_anything_is_written(bpath, tmp_path):
    run_on("mkdir -p %s/open/disk && chmod 0777 %s/open && chmod 0755 %s/open/disk" % (DISK, DISK, DISK))
    try:
        returncode, output, _report = playbook(
            inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path / "report",
            {"diskproof_targets": [{"path": DISK + "/open/disk"}], "benchmark_tests": ["dd_seq_write"],
             "benchmark_repeats": 1}, timeout=300)
        left = run_on("ls -A %s/open/disk" % DISK).split()
    finally:
        run_on("rm -rf %s/open" % DISK)
    assert returncode == 2, output
    assert ("targets[0].path %s/open/disk refused, nothing was written: directory %s/open is group and "
            "world-writable without the sticky bit (owner uid 0 (root), mode 0777)" % (DISK, DISK)) in output, output
    assert "chmod go-w %s/open (or chmod +t for a shared scratch directory like /tmp)" % DISK in output
    assert left == []
    assert cron_status(LAB, HOST) == 0


def test_a_run_directory_swapped_for_a_symlink_after_the_plan_is_refused_and_nothing_is_written(bpath, tmp_path):
    assert run_on("ls -A %s" % DISK).split() == ["lost+found"]
    run_on("mkdir -m 0755 %s && head -c 1048576 /dev/urandom > %s/precious.db" % (DECOY, DECOY))
    decoy_before = run_on("sha256sum %s/precious.db" % DECOY).split()[0]
    watcher_pid = int(run_on("cat > %s <<'EOF'\n%sEOF\nrm -f %s; nohup setsid sh %s >/dev/null 2>&1 </dev/null & "
                             "echo $!" % (WATCHER, SWAPPER, WATCHER_LOG, WATCHER)))
    try:
        returncode, output, report = playbook(
            inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path / "report",
            {"benchmark_tests": ["dd_seq_write"], "benchmark_repeats": 1}, timeout=300)
        swapped = run_on("cat %s" % WATCHER_LOG).strip()
        decoy_after = run_on("ls -A %s; sha256sum %s/precious.db" % (DECOY, DECOY)).split()
        left = sorted(run_on("ls -A %s" % DISK).split())
    finally:
        # Still waiting (the run failed early)? Killed by its PID, only while that PID is still our watcher.
        on_host(LAB, HOST, "[ \"$(tr '\\0' ' ' < /proc/%d/cmdline 2>/dev/null)\" = 'sh %s ' ] && kill %d; "
                           "rm -rf %s %s/swapped-diskproof-* %s %s"
                % (watcher_pid, WATCHER, watcher_pid, DECOY, DISK, WATCHER, WATCHER_LOG))

    match = re.fullmatch(r"swapped (%s/diskproof-\S+) rc=0" % DISK, swapped)
    assert match, swapped
    run_dir = match.group(1)
    # Nothing went through the symlink: the decoy holds exactly its one file, unchanged.
    assert decoy_after == ["precious.db", decoy_before, DECOY + "/precious.db"], (decoy_after, output)
    # The job was refused, naming the swap; the host failed.
    assert returncode == 2, output
    assert ("the run directory %s was swapped after the plan created it: it is now a symlink to %s"
            % (run_dir, DECOY)) in output, output
    assert report is not None, output
    assert not any(entry["verdict"] == "pass" for entry in report["results"]), report["results"]
    # The role's cleanup removed the symlink (never what it pointed to); only the watcher's renamed directory
    # (with the plan's note) is left, and the test removed it.
    assert left == ["decoy", "lost+found", "swapped-" + run_dir.rsplit("/", 1)[1]], left
    assert cron_status(LAB, HOST) == 0


def test_a_target_reached_through_a_root_owned_symlink_runs_with_its_work_directories(bpath, tmp_path):
    """The other side of the rule: a symlink owned by root in a root-only directory is resolved once and
    accepted; the run directory's identity reaches bench_facts, which creates the sysbench and bonnie++
    work directories (bonnie++'s given to nobody) through the verified descriptor; every test measures."""
    link = "/srv/bpath-link"
    run_on("ln -s %s %s" % (DISK, link))
    try:
        returncode, output, report = playbook(
            inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path / "report",
            {"diskproof_targets": [{"path": link}], "benchmark_repeats": 1, "benchmark_fio_runtime_s": 3,
             "benchmark_tests": ["dd_seq_write", "sysbench_rndrd", "bonnie", "dd_seq_read"]}, timeout=600)
        left = sorted(run_on("ls -A %s" % DISK).split())
    finally:
        run_on("rm -f %s" % link)
    assert returncode == 0, output
    assert report is not None, output
    verdicts = {entry["test"]: entry["verdict"] for entry in report["results"]}
    assert set(verdicts) == {"dd_seq_write", "sysbench_rndrd", "bonnie", "dd_seq_read"}, verdicts
    assert "error" not in verdicts.values() and "not_measured" not in verdicts.values(), verdicts
    assert left == ["lost+found"], left
    assert cron_status(LAB, HOST) == 0
