"""module_utils/_evidence.py on systemd hosts: the kernel log from the journal when dmesg is refused, the clock
from ``timedatectl show`` when no NTP client reports an offset.

Two kinds of test:

- REPLAY tests: a stand-in HostIO answers each argv with an output captured for real (tests/fixtures/evidence/,
  each with a .src.md: a systemd 252 host booted by systemd-nspawn like the lab's, and chronyc outputs published
  on powersj.io). The stand-in fails the test on any command it has no capture for, so a test also proves which
  commands were NOT run (``timedatectl timesync-status`` when ``NTP=no``: it waits 25 s for nothing).
- REAL tests on this machine (kernel.dmesg_restrict=1, no systemd, no journal): the real dmesg and journalctl,
  once as root and once with CAP_SYSLOG dropped by ``setpriv`` (dmesg refused for real).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _evidence as ev
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.chronyc import parse_chronyc_tracking

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "evidence")
JOURNAL_ARGV = ["journalctl", "-k", "-b", "-o", "json", "--all", "--no-pager", "--lines=10000"]
START = datetime.datetime(2026, 11, 25, 23, 40, 0, tzinfo=datetime.timezone.utc)


def fixture(name: str) -> bytes:
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


DMESG_REFUSED = (1, b"", fixture("nspawn-dmesg-restricted.stderr.txt"))
JOURNAL_KERNEL = (0, fixture("nspawn-journalctl-kernel.json"), b"")
JOURNAL_EMPTY = (0, b"", b"")          # what the lab's systemd host answered: its journald cannot read /dev/kmsg
TIMEDATECTL_SHOW = (0, fixture("nspawn-timedatectl-show.txt"), b"")
TIMESYNC_TIMEOUT = (1, b"", fixture("nspawn-timedatectl-timesync-status.stderr.txt"))
# timedatectl timesync-status of a host whose timesyncd runs, quoted from
# https://gist.github.com/virnik0/958455467ed96b294a23bd4c702cf0a1 (as in test_evidence.py).
TIMESYNC_STATUS = (0, b"Server: 10.43.16.1 (10.43.16.1)\nPoll interval: 1min 4s (min: 32s; max 34min 8s)\n"
                      b"Leap: normal\nVersion: 4\nStratum: 2\nReference: C37190C9\nPrecision: 4us (-18)\n"
                      b"Root distance: 33.637ms (max: 5s)\nOffset: +4.523ms\nDelay: 221us\nJitter: 0\n"
                      b"Packet count: 1\nFrequency: +39,437ppm\n", b"")


class ReplayHost:
    """A stand-in for a host's tools: each argv (tool name, not path) answered by a real captured output.
    A tool not in ``answers`` is 'not installed'; an argv of an installed tool without a capture fails the test."""

    def __init__(self, root, answers):
        self.root = root
        self.answers = {tuple(argv): result for argv, result in answers}
        self.tools = {argv[0] for argv, _result in answers} | {"uname", "date"}
        self.ran = []

    def run(self, argv):
        key = (os.path.basename(argv[0]),) + tuple(argv[1:])
        self.ran.append(list(key))
        if key[0] in ("uname", "date"):
            return 0, b"Linux evsysd-n01\n", b""
        assert key in self.answers, "the snapshot ran %r, which it must not on this host" % (key,)
        return self.answers[key]

    def which(self, name):
        return "/usr/bin/" + name if name in self.tools else None

    def write(self, relative, data):
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "xb") as handle:
            handle.write(data)

    def host_io(self, sys_block):
        clock = iter(START + datetime.timedelta(milliseconds=step) for step in range(10000))
        return ev.HostIO(run=self.run, which=self.which, read=lambda path: None, write=self.write,
                         now=lambda: next(clock), device_link=lambda disk: None, is_scsi=lambda disk: False,
                         sys_block=sys_block)


def snapshot(tmp_path, answers, disk="loop0"):
    (tmp_path / "sys" / disk).mkdir(parents=True)
    host = ReplayHost(str(tmp_path / "ev"), answers)
    taken = ev.take_snapshot(host.host_io(str(tmp_path / "sys")), "before", [disk])
    commands = json.loads((tmp_path / "ev" / "before" / "commands.json").read_text())
    return host, taken, commands


def entry_of(commands, tool, *args):
    found = [entry for entry in commands["commands"] if entry.get("argv")
             and [os.path.basename(entry["argv"][0])] + entry["argv"][1:len(args) + 1] == [tool, *args]]
    assert len(found) == 1, [entry.get("argv") for entry in commands["commands"]]
    return found[0]


# ---------------------------------------------------------------------------------------------
# the kernel log from the journal (its JSON read as dmesg lines: test_parse_kernel_log.py)
# ---------------------------------------------------------------------------------------------


def test_kernel_lines_come_from_the_journal_when_dmesg_is_refused(tmp_path):
    host, taken, commands = snapshot(tmp_path, [(["dmesg"], DMESG_REFUSED), (JOURNAL_ARGV, JOURNAL_KERNEL)])
    before = tmp_path / "ev" / "before"
    # The disk's kernel lines, from the journal, as dmesg would print them.
    assert (before / "loop0" / "dmesg.txt").read_text().splitlines() == [
        "[12310.827640] EXT4-fs (loop0): mounted filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4 r/w with ordered data "
        "mode. Quota mode: none.",
        "[12310.829852] EXT4-fs (loop0): unmounting filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4."]
    # Its exact command is written down; its raw output (the whole journal) is not kept.
    assert not (before / "host" / "journalctl-kernel.json").exists()
    journal = entry_of(commands, "journalctl")
    assert journal["argv"] == ["/usr/bin/journalctl"] + JOURNAL_ARGV[1:] and journal["exit_code"] == 0
    assert journal["output"] == ["before/loop0/dmesg.txt"]
    dmesg = entry_of(commands, "dmesg")
    assert dmesg["exit_code"] == 1 and "Operation not permitted" in dmesg["stderr"] and dmesg["output"] is None
    # Which source, and why: in the host file, in commands.json and in what the module returns.
    source = (before / "host" / "kernel-log.txt").read_text()
    assert source.startswith("kernel log: the journal (`journalctl -k -b -o json --all --no-pager --lines=10000`: 80 "
                             "kernel messages of this boot), because dmesg: exit code 1: dmesg: read kernel buffer "
                             "failed: Operation not permitted")
    assert commands["kernel_log"] == {"source": "journal", "text": source.strip()}
    assert taken["kernel_log"] == source.strip()
    assert "before/host/kernel-log.txt" in taken["files"]


def _journal_line(usec: int, message: str) -> bytes:
    """One journalctl -o json message, with the metadata fields journald adds (as in the real capture)."""
    return (json.dumps({"MESSAGE": message, "_SOURCE_MONOTONIC_TIMESTAMP": str(usec), "_TRANSPORT": "kernel",
                        "_MACHINE_ID": "3d1219c7c4c5404aaa1f6d2a48adfda4", "_HOSTNAME": "evsysdhand",
                        "_BOOT_ID": "1d4b2e9e911342fc98548bc7d7a4eacd", "PRIORITY": "6",
                        "__CURSOR": "s=65a5fb8557084dbe897ea65f9d725756;i=900"}) + "\n").encode()


# Derived from the real capture: three messages a host's kernel log may hold that no disk's bundle should carry.
SECRET_LINES = [
    (1000000, "Kernel command line: BOOT_IMAGE=/vmlinuz root=/dev/loop0 ip=ibft iscsi_initiator=iqn.2026-11.invalid "
              "iscsi_password=ChapSecret123 ro"),
    (2000000, "[UFW BLOCK] IN=eth0 OUT= SRC=203.0.113.7 DST=198.51.100.9 PROTO=TCP SPT=51234 DPT=22"),
    (3000000, "EXT4-fs (loop1): mounted filesystem 11111111-2222-3333-4444-555555555555 r/w"),
]


def test_only_the_disks_kernel_lines_from_the_journal_go_into_the_snapshot(tmp_path):
    """When dmesg is refused, the whole journal (10,000 messages, _MACHINE_ID, other devices, the kernel command
    line with an iSCSI CHAP password, firewall lines with addresses) once went into every disk's bundle; the dmesg
    path kept only the lines naming the disk. Now both keep only those lines, without journal metadata."""
    journal = JOURNAL_KERNEL[1] + b"".join(_journal_line(usec, message) for usec, message in SECRET_LINES)
    _host, taken, commands = snapshot(tmp_path, [(["dmesg"], DMESG_REFUSED), (JOURNAL_ARGV, (0, journal, b""))])
    before = tmp_path / "ev" / "before"
    written = {str(path.relative_to(before)): path.read_bytes() for path in before.rglob("*") if path.is_file()}
    for secret in (b"3d1219c7c4c5404aaa1f6d2a48adfda4", b"evsysdhand", b"ChapSecret123", b"Kernel command line",
                   b"203.0.113.7", b"loop1", b"dprack6br", b"__CURSOR"):
        assert not [name for name, data in written.items() if secret in data], secret
    assert "host/journalctl-kernel.json" not in written
    assert (before / "loop0" / "dmesg.txt").read_text().splitlines() == [
        "[12310.827640] EXT4-fs (loop0): mounted filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4 r/w with ordered data "
        "mode. Quota mode: none.",
        "[12310.829852] EXT4-fs (loop0): unmounting filesystem f373a2bc-b54d-4893-bef1-ad78b75b41d4."]
    journal_entry = entry_of(commands, "journalctl")
    assert journal_entry["output"] == ["before/loop0/dmesg.txt"]
    assert "83 kernel messages" in taken["kernel_log"]


def test_no_kernel_log_is_never_silent(tmp_path):
    # The lab's systemd host as booted by systemd-nspawn's defaults: dmesg refused and a journal with no
    # kernel message (its journald cannot read /dev/kmsg either).
    _host, taken, commands = snapshot(tmp_path, [(["dmesg"], DMESG_REFUSED), (JOURNAL_ARGV, JOURNAL_EMPTY)])
    before = tmp_path / "ev" / "before"
    assert not (before / "loop0" / "dmesg.txt").exists()
    source = (before / "host" / "kernel-log.txt").read_text()
    assert source.startswith("kernel log: none (dmesg: exit code 1: dmesg: read kernel buffer failed: Operation not "
                             "permitted; journalctl -k -b -o json --all --no-pager --lines=10000: no kernel message of "
                             "this boot in the journal")
    assert "CAP_SYSLOG" in source
    assert commands["kernel_log"]["source"] is None
    assert any(problem.startswith("journalctl -k -b") and "no kernel message" in problem
               for problem in taken["problems"])
    assert entry_of(commands, "journalctl")["exit_code"] == 0     # the empty answer is written down


def test_journal_not_installed_is_written_down(tmp_path):
    _host, _taken, commands = snapshot(tmp_path, [(["dmesg"], DMESG_REFUSED)])
    source = (tmp_path / "ev" / "before" / "host" / "kernel-log.txt").read_text()
    assert "journalctl -k -b -o json --all --no-pager --lines=10000: journalctl is not installed" in source
    assert commands["kernel_log"]["source"] is None


def test_bundle_commands_keep_this_disks_lines_only():
    document = {"devices": ["loop0", "loop1"], "commands": [
        {"argv": JOURNAL_ARGV, "disk": None, "output": ["before/loop0/dmesg.txt", "before/loop1/dmesg.txt"]}]}
    filtered = json.loads(ev._filtered_commands(json.dumps(document).encode(), "loop1"))
    assert filtered["commands"][0]["output"] == ["before/loop1/dmesg.txt"]


# ---------------------------------------------------------------------------------------------
# the clock
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("synced", "ntp", "can_ntp", "says"),
    [
        (False, False, True, "NTP synchronized: no (no NTP service active; one is installed)"),
        (False, False, False, "NTP synchronized: no (no NTP service installed)"),
        (True, True, True, "NTP synchronized: yes (by an NTP service systemd manages: systemd-timesyncd or one "
                           "named in ntp-units.d)"),
        (True, False, True, "NTP synchronized: yes (by an NTP client systemd does not manage: chronyd, ntpd or "
                            "another)"),
        (False, True, True, "NTP synchronized: no (an NTP service is active but has not synchronized the clock)"),
    ],
)
def test_ntp_sync_text_names_what_synchronizes_the_clock(synced, ntp, can_ntp, says):
    show = {"ntp_synchronized": synced, "ntp": ntp, "can_ntp": can_ntp, "time": "T", "timezone": "Z",
            "local_rtc": False}
    text = ev.ntp_sync_text(show)
    assert text.startswith(says + "; timedatectl show: NTPSynchronized=%s NTP=%s CanNTP=%s TimeUSec=T" % (
        "yes" if synced else "no", "yes" if ntp else "no", "yes" if can_ntp else "no"))


def test_clock_on_a_systemd_host_without_an_ntp_service(tmp_path):
    # chrony not installed; timedatectl show says NTP=no: timesync-status is not asked (the stand-in fails the
    # test if it is: it would wait 25 s for a timesyncd that cannot start).
    host, taken, commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")),
                                                (["timedatectl", "show"], TIMEDATECTL_SHOW)])
    assert ["timedatectl", "timesync-status"] not in host.ran
    text = (tmp_path / "ev" / "before" / "host" / "clock-offset.txt").read_text()
    assert text.splitlines() == [
        "clock offset: unknown (chronyc tracking: chronyc is not installed (not found in PATH or the sbin "
        "directories); timedatectl timesync-status: not asked: timedatectl show says NTP=no (no NTP service is "
        "active, so systemd-timesyncd cannot answer))",
        "NTP synchronized: no (no NTP service active; one is installed); timedatectl show: NTPSynchronized=no NTP=no "
        "CanNTP=yes TimeUSec=Wed 2026-11-25 23:33:09 UTC"]
    assert (tmp_path / "ev" / "before" / "host" / "timedatectl-show.txt").read_bytes() == TIMEDATECTL_SHOW[1]
    assert entry_of(commands, "timedatectl", "show")["exit_code"] == 0
    assert commands["clock"]["ntp"]["ntp_synchronized"] is False
    assert taken["clock"] == text.strip()


def test_unsynchronised_chrony_is_no_offset_of_zero(tmp_path):
    unsynced = (0, fixture("chronyc-tracking-unsynchronised.txt"), b"")
    assert parse_chronyc_tracking(unsynced[1].decode()) is None
    host, _taken, _commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")), (["chronyc", "tracking"], unsynced),
                                                  (["timedatectl", "show"], TIMEDATECTL_SHOW)])
    text = (tmp_path / "ev" / "before" / "host" / "clock-offset.txt").read_text()
    assert text.startswith("clock offset: unknown (chronyc tracking: not synchronised (Leap status     : Not "
                           "synchronised), so its System time line is no measured offset;")
    assert ["timedatectl", "show"] in host.ran


def test_synchronised_chrony_comes_first_and_alone(tmp_path):
    synced = (0, fixture("chronyc-tracking-synchronised.txt"), b"")
    host, taken, commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")), (["chronyc", "tracking"], synced)])
    assert taken["clock"] == ("clock offset: -0.000669840 s (this host's clock minus NTP time; chronyc tracking: "
                              "System time     : 0.000669840 seconds slow of NTP time)")
    assert not [argv for argv in host.ran if argv[0] == "timedatectl"]


def test_timesync_status_is_asked_when_an_ntp_service_is_active(tmp_path):
    text = TIMEDATECTL_SHOW[1].replace(b"NTP=no", b"NTP=yes").replace(b"NTPSynchronized=no", b"NTPSynchronized=yes")
    active = (0, text, b"")
    host, taken, _commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")), (["timedatectl", "show"], active),
                                                 (["timedatectl", "timesync-status"], TIMESYNC_STATUS)])
    assert ["timedatectl", "timesync-status"] in host.ran
    lines = taken["clock"].splitlines()
    assert lines[0].startswith("clock offset: +0.004523000 s (NTP offset of the last exchange")
    assert lines[1].startswith("NTP synchronized: yes (by an NTP service systemd manages")


def test_timesync_status_that_times_out_gives_no_offset(tmp_path):
    # NTP=yes, yet timesyncd cannot be reached: the lab's systemd host's real answer after 25 s.
    text = TIMEDATECTL_SHOW[1].replace(b"NTP=no", b"NTP=yes")
    host, taken, commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")), (["timedatectl", "show"], (0, text, b"")),
                                                (["timedatectl", "timesync-status"], TIMESYNC_TIMEOUT)])
    assert ["timedatectl", "timesync-status"] in host.ran
    first = taken["clock"].splitlines()[0]
    assert first.startswith("clock offset: unknown (")
    assert "timedatectl timesync-status: exit code 1: Failed to query server: Connection timed out" in first
    assert entry_of(commands, "timedatectl", "timesync-status")["exit_code"] == 1


def test_timesync_status_is_still_asked_when_timedatectl_show_cannot_say(tmp_path):
    # No systemd as PID 1 (this machine, a SysV lab host): show fails, so NTP= is unknown; timesync-status fails
    # as fast there, and its answer is written down as before.
    no_bus = (1, b"", b"System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                      b"Failed to connect to bus: Host is down\n")
    host, taken, _commands = snapshot(tmp_path, [(["dmesg"], (0, b"", b"")), (["timedatectl", "show"], no_bus),
                                                 (["timedatectl", "timesync-status"], no_bus)])
    assert ["timedatectl", "timesync-status"] in host.ran
    assert taken["clock"] == (
        "clock offset: unknown (chronyc tracking: chronyc is not installed (not found in PATH or the sbin "
        "directories); "
        "timedatectl show: exit code 1: System has not been booted with systemd as init system (PID 1). Can't "
        "operate.; timedatectl timesync-status: exit code 1: System has not been booted with systemd as init system "
        "(PID 1). Can't operate.)")


def test_check_mode_plan_names_the_fallbacks():
    lines = ev.planned_commands(["loop0"])
    assert "dmesg (else journalctl -k -b -o json --all --no-pager --lines=10000)" in lines
    assert ("chronyc tracking (else timedatectl show, then timedatectl timesync-status unless NTP=no)" in lines)


# ---------------------------------------------------------------------------------------------
# the real tools on this machine: dmesg_restrict=1, no journal
# ---------------------------------------------------------------------------------------------

def dmesg_restricted() -> bool:
    try:
        with open("/proc/sys/kernel/dmesg_restrict", encoding="ascii") as handle:
            return handle.read().strip() == "1"
    except OSError:
        return False


needs_restricted_root = pytest.mark.skipif(
    os.geteuid() != 0 or not dmesg_restricted() or shutil.which("setpriv") is None or shutil.which("dmesg") is None
    or shutil.which("journalctl") is None,
    reason="needs root, kernel.dmesg_restrict=1, setpriv, dmesg and journalctl")


def real_host(root, drop_syslog):
    """The real tools; with drop_syslog, each runs under setpriv without CAP_SYSLOG (dmesg refused for real)."""
    prefix = ["setpriv", "--bounding-set=-syslog", "--inh-caps=-syslog"] if drop_syslog else []

    def run(argv):
        done = subprocess.run(prefix + argv, capture_output=True, env=dict(os.environ, LC_ALL="C", LANG="C"),
                              check=False, timeout=60)
        return done.returncode, done.stdout, done.stderr

    def write(relative, data):
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "xb") as handle:
            handle.write(data)

    which_path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return ev.HostIO(run=run, which=lambda name: shutil.which(name, path=which_path), read=lambda path: None,
                     write=write, now=lambda: datetime.datetime.now(datetime.timezone.utc),
                     device_link=lambda disk: None, is_scsi=lambda disk: False, sys_block="/sys/block")


@needs_restricted_root
@pytest.mark.skipif(not os.path.isdir("/sys/block/vda"), reason="needs the disk vda")
def test_real_dmesg_refused_without_cap_syslog_and_no_journal_here(tmp_path):
    ev.take_snapshot(real_host(str(tmp_path), drop_syslog=True), "before", ["vda"])
    source = (tmp_path / "before" / "host" / "kernel-log.txt").read_text()
    assert source.startswith("kernel log: none (dmesg: exit code 1: dmesg: read kernel buffer failed: Operation not "
                             "permitted; journalctl -k -b")
    assert not (tmp_path / "before" / "vda" / "dmesg.txt").exists()


@needs_restricted_root
@pytest.mark.skipif(not os.path.isdir("/sys/block/vda"), reason="needs the disk vda")
def test_real_dmesg_as_root_comes_first(tmp_path):
    ev.take_snapshot(real_host(str(tmp_path), drop_syslog=False), "before", ["vda"])
    source = (tmp_path / "before" / "host" / "kernel-log.txt").read_text()
    assert source.startswith("kernel log: `dmesg` (exit code 0, ")
    assert (tmp_path / "before" / "vda" / "dmesg.txt").exists()
    assert not (tmp_path / "before" / "host" / "journalctl-kernel.json").exists()


def test_every_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in names:
        if not name.endswith(".src.md"):
            assert os.path.splitext(name)[0] + ".src.md" in names, name
