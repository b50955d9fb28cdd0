"""The evidence role on a systemd lab host whose dmesg is refused: the disk's kernel lines come from the journal.

Real lab (tools/lab, lab `evsysd`: one `init: systemd` host booted by systemd-nspawn, /dev/kmsg bound in, one
ext4 loop disk), real ansible-playbook over real ssh, real sha256sum. The play (tests/integration/evsysd_run.yml)
runs discover, the evidence role's before snapshot, a real remount of the lab's own disk (ext4 then logs
"EXT4-fs (loopN): re-mounted <uuid>."), the after snapshot, the pack, the fetch and the cleanup.

How dmesg is refused, for real: this machine has kernel.dmesg_restrict=1, so dmesg needs CAP_SYSLOG. Every
module runs under `setpriv --bounding-set=-syslog --inh-caps=-syslog` (ansible_python_interpreter is a two-line
wrapper written to the lab host's own /root, since Ansible takes no arguments in an interpreter path), the state
of a host where root has no CAP_SYSLOG (a container, a hardened host); journalctl reads the journal's files and
needs no such capability. The lab's journald must hold kernel messages: it reads /dev/kmsg, which needs
CAP_SYSLOG in the container's bounding set (`systemd-nspawn --capability=CAP_SYSLOG`).

The bundle must show: dmesg refused (exit code, stderr), the journal's exact command, none of its raw output
(only the disk's lines; the host's machine id in no file), `host/kernel-log.txt` naming the journal as the
source, the disk's `dmesg.txt` holding the remount line (after) that the before snapshot could not have, and the
clock file stating what `timedatectl show` says (no NTP service in a container: timesync-status is not asked, so
the snapshot does not wait 25 s for it). Root only; about 15 s.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from labhelpers import inventory_path, needs_root, on_host, playbook, running_lab

HERE = Path(__file__).resolve().parent
SPEC = HERE / "evsysd_lab.yml"
PLAY = HERE / "evsysd_run.yml"
LAB = "evsysd"
HOST = "evsysd-n01"
NO_SYSLOG_PYTHON = "/root/diskproof-python3-without-cap-syslog"
NO_SYSLOG_WRAPPER = ("#!/bin/sh\n"
                     "exec /usr/bin/setpriv --bounding-set=-syslog --inh-caps=-syslog /usr/bin/python3 \"$@\"\n")
JOURNAL_ARGS = ["-k", "-b", "-o", "json", "--all", "--no-pager", "--lines=10000"]

pytestmark = needs_root


@pytest.fixture(scope="module")
def evsysd():
    with running_lab(LAB, SPEC, services=()):
        # The lab host's own /root (a per-host directory of the lab): the interpreter without CAP_SYSLOG.
        wrapper = shlex.quote(NO_SYSLOG_PYTHON)
        written = on_host(LAB, HOST, "printf %%s %s > %s && chmod 0755 %s" % (shlex.quote(NO_SYSLOG_WRAPPER), wrapper,
                                                                              wrapper))
        assert written.returncode == 0, written.stdout + written.stderr
        probe = "import subprocess; print(subprocess.run(['dmesg'], capture_output=True).returncode)"
        refused = on_host(LAB, HOST, "%s -c %s" % (wrapper, shlex.quote(probe)))
        assert refused.stdout.strip() == "1", "dmesg is not refused under the wrapper: %r" % refused
        yield


def test_kernel_lines_of_the_disk_come_from_the_journal_when_dmesg_is_refused(evsysd, tmp_path):
    # The lab's inventory, the host's modules run by the wrapper (the controller's own tasks keep their Python).
    lab_inventory = yaml.safe_load(inventory_path(LAB).read_text())
    lab_inventory["all"]["children"]["lab"]["hosts"][HOST]["ansible_python_interpreter"] = NO_SYSLOG_PYTHON
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump(lab_inventory))
    dest = tmp_path / "evidence"
    rc, output, _report = playbook(inventory, PLAY, tmp_path / "report", "evidence_dest=%s" % dest)
    assert rc == 0, output[-4000:]

    (bundle,) = sorted((dest / HOST).glob("loop*.tar.gz"))
    with tarfile.open(bundle) as archive:
        archive.extractall(tmp_path / "out")
    (top,) = list((tmp_path / "out").iterdir())
    checked = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=top, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    manifest = (top / "MANIFEST.sha256").read_text()
    device = bundle.name.split("-")[0]
    uuid = json.loads((top / "after" / device / "lsblk.json").read_text())["blockdevices"][0]["uuid"]
    assert uuid

    for phase in ("before", "after"):
        commands = json.loads((top / phase / "commands.json").read_text())
        source = (top / phase / "host" / "kernel-log.txt").read_text()
        assert not source.startswith("kernel log: none"), (
            "%s: %s -- if the journal holds no kernel message, the lab's systemd hosts need CAP_SYSLOG for their "
            "journald (systemd-nspawn --capability=CAP_SYSLOG) to read /dev/kmsg" % (phase, source))
        # dmesg was refused for real, and written down as such.
        (dmesg,) = [entry for entry in commands["commands"]
                    if entry.get("argv") and entry["argv"][0].endswith("/dmesg")]
        assert dmesg["exit_code"] == 1 and "Operation not permitted" in dmesg["stderr"], dmesg
        # The journal's exact command; only the disk's own lines are kept (issue 31: the whole journal, with its
        # metadata, other devices and the kernel command line, once went into every bundle).
        (journal,) = [entry for entry in commands["commands"]
                      if entry.get("argv") and entry["argv"][0].endswith("/journalctl")]
        assert journal["argv"][1:] == JOURNAL_ARGS and journal["exit_code"] == 0
        assert journal["output"] == ["%s/%s/dmesg.txt" % (phase, device)]
        assert "  %s/%s/dmesg.txt\n" % (phase, device) in manifest and "journalctl-kernel" not in manifest
        assert not (top / phase / "host" / "journalctl-kernel.json").exists()
        machine_id = on_host(LAB, HOST, "cat /etc/machine-id").stdout.strip()
        assert machine_id and not [path for path in top.rglob("*") if path.is_file()
                                   and machine_id.encode() in path.read_bytes()]
        assert source.startswith("kernel log: the journal (`journalctl -k -b -o json --all --no-pager --lines=10000`: ")
        assert "because dmesg: exit code 1: dmesg: read kernel buffer failed: Operation not permitted" in source
        assert commands["kernel_log"]["source"] == "journal"
        lines = (top / phase / device / "dmesg.txt").read_text().splitlines()
        assert lines and all(device in line for line in lines)

        # The clock: no NTP client answers in a container; timedatectl show says so, timesync-status not asked.
        clock = (top / phase / "host" / "clock-offset.txt").read_text()
        assert "NTP synchronized: no (no NTP service active; one is installed); timedatectl show: NTPSynchronized=no " \
               "NTP=no CanNTP=yes TimeUSec=" in clock, clock
        assert "timedatectl timesync-status: not asked" in clock
        assert "  %s/host/timedatectl-show.txt\n" % phase in manifest
        assert not (top / phase / "host" / "timedatectl-timesync-status.txt").exists()
        started, finished = commands["started"], commands["finished"]
        assert started[:11] == finished[:11] and _seconds(finished) - _seconds(started) < 10, (started, finished)

    # The remount between the snapshots: a real kernel message naming the disk, from the journal, after only.
    remounted = "EXT4-fs (%s): re-mounted %s" % (device, uuid)
    assert not any(remounted in line for line in (top / "before" / device / "dmesg.txt").read_text().splitlines())
    assert any(remounted in line for line in (top / "after" / device / "dmesg.txt").read_text().splitlines())

    readme = (top / "README.md").read_text()
    assert "kernel log: the journal (`journalctl -k -b" in readme and "NTP synchronized: no" in readme

    # Nothing left on the host.
    listing = on_host(LAB, HOST, "ls -A /var/tmp").stdout.split()
    assert [name for name in listing if name.startswith("diskproof-")] == []


def _seconds(stamp: str) -> float:
    """Seconds of the day of an evidence UTC stamp (2026-11-25T23:40:01.123Z)."""
    hours, minutes, seconds = stamp[11:-1].split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
