"""The lab's systemd hosts (SPEC `init: systemd`): a real systemd booted by systemd-nspawn on an
overlay of `/`, reachable like every lab host, with its disks, and nothing left after `down`.

Lab `labsd` (labsd_lab.yml): six hosts, three systemd and three SysV, a filesystem disk each and a
raw disk on one systemd host. Proves, on the real lab tool: `up` boots the systemd hosts and prints
each one's boot time; `status` shows the init; on a systemd host PID 1 is systemd and the system is
`running`, sshd is its ssh.service, it has its own hostname and machine id, its filesystem disk is
mounted from its own loop device and takes direct writes, its raw disk is readable, the memory
cgroup (the cache fence) and /proc/sys/vm/drop_caches are writable, cron and the usual timers are
there; each systemd host has a cgroup tree of its own (stopping cron on one leaves the others');
the inventory says which init each host has; `down` stops every nspawn and container process,
removes the hosts' cgroups, unmounts the overlays, detaches the loops and removes the work dir, and
this machine's own files that the hosts rewrote in their overlays (/etc/hostname,
/etc/machine-id) are untouched.

Boot and up/down times are printed here; the speed target (6 mixed hosts up in <= 30 s) is measured
by benchmarks/lab_boot.py, not asserted. Root only.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from labhelpers import inventory_path, lab, needs_root, on_host, sha256_of

SPEC = Path(__file__).resolve().parent / "labsd_lab.yml"
LAB = "labsd"
WORKDIR = "/dev/shm/diskproof-lab-%s" % LAB
SYSTEMD_HOSTS = ["labsd-n01", "labsd-n03", "labsd-n05"]
SYSV_HOSTS = ["labsd-n02", "labsd-n04", "labsd-n06"]
CGROUP_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd")
# The lab's cpu cgroup (tools/labkit/fleet.py), below this test process's own.
CPU_GROUP = os.path.join("/sys/fs/cgroup/cpu", next(
    line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
    if "cpu" in line.split(":", 2)[1].split(",")).lstrip("/"), "diskproof-lab-%s" % LAB)

pytestmark = needs_root


def run_on(host: str, command: str) -> str:
    result = on_host(LAB, host, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (host, command, result.stdout, result.stderr)
    return result.stdout


def processes_naming(text: str) -> list:
    """PIDs whose command line names text (the lab's work dir): nspawn, and nothing else of ours."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    if text.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_systemd_hosts_boot_serve_their_disks_and_leave_nothing_behind():
    lab("down", "--name", LAB)
    own_files = {path: sha256_of(path) for path in ("/etc/hostname", "/etc/machine-id")}
    try:
        up = lab("up", str(SPEC), timeout=180)
        print(up.stdout)
        for host in SYSTEMD_HOSTS:
            assert re.search(r"%s .*init systemd running, booted in \d+\.\d s" % host, up.stdout), up.stdout
        for host in SYSV_HOSTS:
            assert re.search(r"%s .*init sysv$" % host, up.stdout, re.M), up.stdout

        status = lab("status", "--name", LAB)
        for host in SYSTEMD_HOSTS:
            assert re.search(r"%s .* ok +systemd \(running\)" % host, status.stdout), status.stdout
        for host in SYSV_HOSTS:
            assert re.search(r"%s .* ok +sysv$" % host, status.stdout, re.M), status.stdout

        inventory = yaml.safe_load(inventory_path(LAB).read_text())["all"]["children"]["lab"]["hosts"]
        assert {name: hostvars["diskproof_lab_init"] for name, hostvars in inventory.items()} == dict(
            [(h, "systemd") for h in SYSTEMD_HOSTS] + [(h, "sysv") for h in SYSV_HOSTS])

        machine_ids = set()
        for host in SYSTEMD_HOSTS:
            disk = inventory[host]["diskproof_lab_disks"][0]
            facts = run_on(host, " ; ".join([
                "cat /proc/1/comm", "hostname", "cat /etc/machine-id", "systemctl is-system-running",
                "systemctl is-active ssh.service cron.service",
                "findmnt -n -o SOURCE /srv/diskproof/d0",
                "dd if=/dev/zero of=/srv/diskproof/d0/probe bs=1M count=4 oflag=direct status=none && echo direct-ok",
                "rm -f /srv/diskproof/d0/probe",
                "mkdir /sys/fs/cgroup/memory/labsd-probe && rmdir /sys/fs/cgroup/memory/labsd-probe && echo memcg-ok",
                "echo 1 > /proc/sys/vm/drop_caches && echo drop-ok",
                "systemctl list-timers --all --no-legend --plain | awk '{print $(NF-1)}' | sort | tr '\\n' ' '",
            ])).splitlines()
            print(host, facts)
            assert facts[:4] == ["systemd", host, facts[2], "running"]
            machine_ids.add(facts[2])
            assert facts[4:6] == ["active", "active"]
            assert facts[6] == "/dev/%s" % disk["device"]
            assert facts[7:10] == ["direct-ok", "memcg-ok", "drop-ok"]
            assert {"apt-daily.timer", "e2scrub_all.timer", "man-db.timer"} <= set(facts[10].split())
        assert len(machine_ids) == 3 and not machine_ids & {open("/etc/machine-id").read().strip()}

        # Each systemd host manages a cgroup tree of its own: stopping cron on one leaves the others' cron.
        for hierarchy in CGROUP_ROOTS:
            for host in SYSTEMD_HOSTS:
                assert os.path.isdir("%s/diskproof-lab-%s/%s/payload/system.slice/cron.service" % (hierarchy, LAB, host))
        run_on("labsd-n01", "systemctl stop cron.service")
        assert [run_on(host, "systemctl is-active cron.service || true").strip() for host in SYSTEMD_HOSTS] == [
            "inactive", "active", "active"]
        run_on("labsd-n01", "systemctl start cron.service")

        # Every process of every host, both inits, runs in the lab's one cpu cgroup (docs/lab.md, "Buffered
        # writes": the lab weighs as one task against the kernel's writeback threads).
        procs = set(Path(CPU_GROUP, "cgroup.procs").read_text().split())
        for host in SYSTEMD_HOSTS + SYSV_HOSTS:
            pids = subprocess.run(["ip", "netns", "pids", "dp-%s-%s" % (LAB, host)], capture_output=True, text=True,
                                  check=True).stdout.split()
            assert len(pids) >= (3 if host in SYSTEMD_HOSTS else 1), (host, pids)
            assert set(pids) <= procs, (host, sorted(set(pids) - procs))
        session = run_on("labsd-n04", "cat /proc/self/cgroup")
        assert re.search(r"^\d+:cpu:(/.*)?/diskproof-lab-%s$" % LAB, session, re.M), session

        raw = inventory["labsd-n05"]["diskproof_lab_disks"][1]
        assert raw["mode"] == "raw"
        read = run_on("labsd-n05", "dd if=/dev/%s of=/dev/null bs=4k count=64 iflag=direct 2>&1 | tail -1" % raw["device"])
        assert read.startswith("262144 bytes"), read
        assert processes_naming(WORKDIR), "no nspawn process names the lab's work dir"
    finally:
        down = lab("down", "--name", LAB, check=False)
        print(down.stdout, down.stderr)
    assert down.returncode == 0, down.stderr
    assert not processes_naming(WORKDIR)
    assert not os.path.exists(WORKDIR)
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        assert WORKDIR not in handle.read()
    for host in SYSTEMD_HOSTS:
        assert not os.path.exists("/run/systemd/nspawn/propagate/%s" % host)
    for hierarchy in CGROUP_ROOTS:
        assert not os.path.exists("%s/diskproof-lab-%s" % (hierarchy, LAB))
    assert not os.path.exists(CPU_GROUP)
    assert {path: sha256_of(path) for path in own_files} == own_files
