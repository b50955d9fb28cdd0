"""Directory targets that are not disks - a tmpfs and an overlay - on a real lab host (lab `bnondisk`,
bnondisk_lab.yml: bnondisk-n01 gets them, bnondisk-n02..n04 a normal 256 MiB ext4 lab disk each).

The test mounts both inside bnondisk-n01's own mount namespace (lab hosts run under `unshare --mount
--propagation slave`, so a mount made over the lab's ssh stays on that host): a 192 MiB tmpfs, and an
overlay whose lower, upper and work directories are on the host's own lab disk (the way a container's
root sits on a disk). Both are unmounted in the fixture's finally.

Proves, with real ansible-playbook validate.yml runs and the report callback:
1. by default bnondisk-n01 is refused by discover, before the quiesce, naming `tmpfs` and `overlay`, their
   mount points and what to do; nothing ran there (cron kept running under the same PID, no run directory,
   no record), and the three disks pass as before;
2. with `allow_non_disk: true` on those targets both run; their records carry `target.not_a_disk: true`
   and `target.filesystem`; in report.json (peer_group `test`, where everything of one test used to share
   a group) each sits in its own group keyed by filesystem type, with a note, and the disks' group holds
   exactly the three disks;
3. with discover skipped (`--skip-tags discover`) the plan refuses the tmpfs target with the same words.

Real lab (tools/lab), real ansible-playbook with the report callback. Root only.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from labhelpers import (BIN, REPO, ansible_env, cron_status, inventory_path, lab, needs_root, on_host,
                        start_service_everywhere)

SPEC = Path(__file__).resolve().parent / "bnondisk_lab.yml"
LAB = "bnondisk"
ODD = "bnondisk-n01"
DISK_HOSTS = ("bnondisk-n02", "bnondisk-n03", "bnondisk-n04")
DISK_TARGET = "/srv/diskproof/d0"
BASE = "/srv/nondisk"
TMPFS = BASE + "/tmpfs"
OVERLAY = BASE + "/overlay"
# All three layers on the lab disk: an overlay over one filesystem keeps that filesystem's inode numbers
# (layers on different filesystems without xino give directories numbers that change when the kernel
# drops its caches, which the run directory's identity check would take for a swapped directory).
LOWER, UPPER, WORK = DISK_TARGET + "/ovl-lower", DISK_TARGET + "/ovl-upper", DISK_TARGET + "/ovl-work"
TESTS = ["dd_seq_write", "dd_seq_read"]

pytestmark = needs_root

MOUNT = ("set -e; mkdir -p %(tmpfs)s %(overlay)s %(lower)s %(upper)s %(work)s; "
         "mount -t tmpfs -o size=192m,mode=0755 diskproof-test-nondisk %(tmpfs)s; "
         "mount -t overlay overlay -o lowerdir=%(lower)s,upperdir=%(upper)s,workdir=%(work)s %(overlay)s"
         % {"tmpfs": TMPFS, "overlay": OVERLAY, "lower": LOWER, "upper": UPPER, "work": WORK})
UNMOUNT = ("umount %s; umount %s; rm -rf %s %s %s %s" % (OVERLAY, TMPFS, BASE, LOWER, UPPER, WORK))


def run_on(host: str, command: str) -> str:
    result = on_host(LAB, host, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (host, command, result.stdout, result.stderr)
    return result.stdout


def validate(inventory: Path, report_dir: Path, *args: str, timeout: float = 600):
    """validate.yml with the report callback, peer_group test; (exit code, output, report.json or None)."""
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), str(REPO / "playbooks" / "validate.yml"),
            "-e", json.dumps({"benchmark_tests": TESTS, "benchmark_repeats": 1}), *args]
    result = subprocess.run(argv, cwd=REPO, env=ansible_env(DISKPROOF_REPORT_DIR=str(report_dir),
                                                            DISKPROOF_PEER_GROUP="test"),
                            capture_output=True, text=True, check=False, timeout=timeout)
    report_file = report_dir / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    return result.returncode, result.stdout + result.stderr, report


def inventory_with(tmp_path: Path, name: str, allow: bool) -> Path:
    """The lab's inventory with bnondisk-n01's targets replaced by the tmpfs and the overlay."""
    inventory = yaml.safe_load(inventory_path(LAB).read_text())
    targets = [{"path": TMPFS}, {"path": OVERLAY}]
    if allow:
        targets = [dict(target, allow_non_disk=True) for target in targets]
    inventory["all"]["children"]["lab"]["hosts"][ODD]["diskproof_targets"] = targets
    path = tmp_path / name
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def cron_pid(host: str) -> str:
    return run_on(host, "cat /run/crond.pid").strip()


def lab_down() -> None:
    """tools/lab down, tried again a few seconds later: after an overlay on a lab disk was unmounted, the
    kernel can still hold that disk's loop device for a moment after the host's namespace is gone."""
    for attempt in range(4):
        result = lab("down", "--name", LAB, check=False)
        if result.returncode == 0:
            return
        time.sleep(2 + attempt)
    raise AssertionError("tools/lab down --name %s failed: %s%s" % (LAB, result.stdout, result.stderr))


@pytest.fixture(scope="module")
def nondisk_lab():
    lab_down()
    lab("up", str(SPEC))
    try:
        start_service_everywhere(LAB)
        run_on(ODD, MOUNT)
        try:
            yield
        finally:
            # Before the lab goes down: the overlay holds the lab disk's filesystem (and so its loop device).
            unmounted = on_host(LAB, ODD, UNMOUNT + "; ! grep -q ' %s/' /proc/self/mountinfo" % BASE)
            assert unmounted.returncode == 0, unmounted.stdout + unmounted.stderr
    finally:
        lab_down()


def test_non_disk_targets_are_refused_by_default_then_reported_apart_when_allowed(nondisk_lab, tmp_path):
    mounts = run_on(ODD, "for d in %s %s; do findmnt -rn -o TARGET,FSTYPE -M $d; done" % (TMPFS, OVERLAY)).split("\n")
    assert mounts[:2] == ["%s tmpfs" % TMPFS, "%s overlay" % OVERLAY], mounts
    pid_before = cron_pid(ODD)

    # 1. Default: refused by discover, before the quiesce; the disks are unaffected.
    returncode, output, report = validate(inventory_with(tmp_path, "default.yml", allow=False), tmp_path / "r1")
    assert returncode == 2, output
    assert re.search(r"%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1 " % ODD, output), output
    for host in DISK_HOSTS:
        assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0 " % host, output), output
    assert "%s (requested filesystem) not_a_disk: %s is on tmpfs (mounted at %s, source diskproof-test-nondisk): " \
           "a memory filesystem, not a disk" % (TMPFS, TMPFS, TMPFS) in output, output
    assert "%s (requested filesystem) not_a_disk: %s is on overlay (mounted at %s, source overlay): a union " \
           "filesystem, not a disk" % (OVERLAY, OVERLAY, OVERLAY) in output, output
    assert "or set allow_non_disk: true on this target (or diskproof_allow_non_disk: true)" in output
    assert run_on(ODD, "ls -A /srv/diskproof-state 2>/dev/null || echo absent").split() == ["absent"]  # no quiesce
    assert cron_pid(ODD) == pid_before and cron_status(LAB, ODD) == 0       # never stopped, never restarted
    assert run_on(ODD, "ls -A %s; ls -A %s" % (TMPFS, OVERLAY)).split() == []
    assert report is not None, output
    odd = [entry for entry in report["results"] if entry["host"] == ODD]
    assert [(entry["verdict"], entry["record"]) for entry in odd] == [("not_measured", None)], odd
    assert "not_a_disk" in odd[0]["reason"] and "tmpfs" in odd[0]["reason"], odd
    # The three disks are measured and judged against one another: identical healthy lab disks. Their direct-I/O
    # figures pass; their buffered writes are judged but not held to pass here: this file runs beside other labs,
    # and a busy machine slows every lab disk's writeback (docs/lab.md, "Buffered writes"; a CI run saw one read
    # -6.7 % with the others within 0.2 %). The files marked alone hold healthy buffered writes to pass.
    disks = [entry for entry in report["results"] if entry["host"] in DISK_HOSTS]
    assert len(disks) == 6 and all(entry["record"] and entry["record"]["error"] is None
                                   and entry["deviation_from_median"] is not None for entry in disks), disks
    assert [(entry["host"], entry["test"], entry["verdict"], entry["reason"]) for entry in disks
            if entry["verdict"] != "pass" and entry["record"]["params"]["direct"]] == []

    # 2. Allowed: both run, marked, each in its own group, never in the disks' group.
    returncode, output, report = validate(inventory_with(tmp_path, "allowed.yml", allow=True), tmp_path / "r2")
    assert returncode == 0, output
    assert "%s is on tmpfs (mounted at %s, memory): measured because allow_non_disk is true" % (TMPFS, TMPFS) in output
    assert report is not None, output
    results = {(entry["host"], entry["target_path"], entry["test"]): entry for entry in report["results"]}
    groups = {(tuple(group["key"]), group["metric"]): group for group in report["groups"]}
    for path, fstype in ((TMPFS, "tmpfs"), (OVERLAY, "overlay")):
        for test in TESTS:
            entry = results[(ODD, path, test)]
            assert entry["record"]["target"]["not_a_disk"] is True, entry
            assert entry["record"]["target"]["filesystem"] == fstype, entry
            assert entry["record"]["error"] is None, entry
            assert entry["group"] == [test, "not_a_disk=" + fstype], entry
            assert ("not a disk (%s): compared only with other %s targets" % (fstype, fstype)) in entry["notes"][-1]
            assert groups[((test, "not_a_disk=" + fstype), "bytes_per_s")]["basis"] == "not_a_disk"
            assert groups[((test, "not_a_disk=" + fstype), "bytes_per_s")]["measured"] == 1
    for test in TESTS:
        for host in DISK_HOSTS:
            entry = results[(host, DISK_TARGET, test)]
            assert entry["group"] == [test] and entry["verdict"] in ("pass", "outlier"), entry
            assert "not_a_disk" not in entry["record"]["target"], entry
        # The disks' group is the three disks: the tmpfs (GB/s) is not in its median.
        assert groups[((test,), "bytes_per_s")]["measured"] == 3, groups
    assert re.search(r"%s\s+%s\s+tmpfs \(not a disk\)\s+dd_seq_write" % (ODD, re.escape(TMPFS)), output), output
    assert run_on(ODD, "ls -A %s" % TMPFS).split() == []
    assert cron_status(LAB, ODD) == 0

    # 3. Discover skipped: the plan refuses the tmpfs itself (second line of defence), same words.
    returncode, output, _report = validate(inventory_with(tmp_path, "skip.yml", allow=False), tmp_path / "r3",
                                           "--skip-tags", "discover", "-e", "diskproof_hosts=%s" % ODD)
    assert returncode == 2, output
    assert "benchmark plan refused, nothing was written: targets[0]: %s is on tmpfs (mounted at %s, source " \
           "diskproof-test-nondisk): a memory filesystem, not a disk" % (TMPFS, TMPFS) in output, output
    assert run_on(ODD, "ls -A %s; ls -A %s" % (TMPFS, OVERLAY)).split() == []
    assert cron_status(LAB, ODD) == 0
