"""The raw-write refusal matrix, end to end: real loop devices, the real role, real ansible-playbook.

As root, builds its own loop devices on sparse files in /dev/shm (never touching any other device):

    clean     never written, allow-listed      -> the positive control (raw_write granted) and the
                                                  "diskproof_destructive unset" case
    unlisted  never written, NOT allow-listed  -> not_allow_listed
    ext4      mkfs.ext4, not mounted           -> signature
    part      dos partition table (sfdisk), two partitions added with partx -a, no filesystem
                                               -> partitioned
    mounted   mkfs.ext4, mounted read-only     -> mounted + busy (the kernel refuses O_EXCL) + signature

and runs playbooks/discover.yml against localhost (connection local): all five devices at once with
the interlock off (every reason of every device listed, not just the first), in check mode, the
positive control, and a stale /dev path in the allow-list. Every refused run must fail the host in the
role's assert - the task after the one read-only discovery call, so before anything could be written -
naming exactly the expected reasons; afterwards the sha256 of every device and its written-sectors
counter (/sys/block/<dev>/stat) are unchanged. Each reason alone is refused end to end through
playbooks/validate.yml on a lab in test_bad_input_matrix.py.

Loop devices have no serial or WWN: they are allow-listed by "loop:<backing file>" (docs/discover.md).

Run: sudo .venv/bin/pytest -q tests/integration/test_discover_refusals.py   (about 10 s; skipped unless root)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(REPO, "playbooks", "discover.yml")
IMAGE_BYTES = 32 * 1024 * 1024
TOOLS = ("losetup", "mkfs.ext4", "sfdisk", "partx", "mount", "umount", "wipefs", "blkid", "lsblk")
REFUSAL_LINE = re.compile(r"^(?P<target>\S+) \(requested (?P<mode>\w+)\) (?P<code>\w+): ")

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (creates loop devices)"),
    pytest.mark.skipif(any(shutil.which(tool) is None for tool in TOOLS),
                       reason="needs %s" % ", ".join(TOOLS)),
]


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, LC_ALL="C"), **kwargs)


def quiet(argv):
    """Run argv, never raising: teardown must go on and report."""
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)


def ansible_playbook():
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return beside if os.path.exists(beside) else shutil.which("ansible-playbook")


def sha256_of(device):
    digest = hashlib.sha256()
    with open(device, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def written_sectors(device):
    with open("/sys/block/%s/stat" % os.path.basename(device)) as handle:
        return int(handle.read().split()[6])


class Lab(object):
    """The loop devices this test created, and only those."""

    def __init__(self, work):
        self.work = work
        self.devices = {}   # name -> /dev/loopN
        self.images = {}    # name -> image path
        self.mounted = None

    def attach(self, name, partscan=False):
        image = os.path.join(self.work, "%s.img" % name)
        with open(image, "wb") as handle:
            handle.truncate(IMAGE_BYTES)
        argv = ["losetup", "--find", "--show"] + (["--partscan"] if partscan else []) + [image]
        device = run(argv).stdout.strip()
        self.devices[name] = device
        self.images[name] = image
        return device

    def ours(self, device):
        """True while device is still the loop device of one of our images."""
        try:
            with open("/sys/block/%s/loop/backing_file" % os.path.basename(device)) as handle:
                return handle.read().strip() in self.images.values()
        except OSError:
            return False

    def teardown(self):
        problems = []
        if self.mounted:
            result = quiet(["umount", self.mounted])
            if result.returncode != 0:
                problems.append("umount %s: %s" % (self.mounted, result.stderr.strip()))
        for name, device in self.devices.items():
            if not self.ours(device):
                problems.append("%s (%s) is no longer ours: not detached" % (device, name))
                continue
            if name == "part":
                quiet(["partx", "-d", device])
            result = quiet(["losetup", "-d", device])
            if result.returncode != 0:
                problems.append("losetup -d %s: %s" % (device, result.stderr.strip()))
        shutil.rmtree(self.work, ignore_errors=True)
        return problems


@pytest.fixture(scope="module")
def lab():
    work = "/dev/shm/dp-discover-it-%d" % os.getpid()
    os.makedirs(work)
    lab = Lab(work)
    started = time.monotonic()
    try:
        lab.attach("clean")
        lab.attach("unlisted")
        ext4 = lab.attach("ext4")
        run(["mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", ext4])
        part = lab.attach("part", partscan=True)
        run(["sfdisk", "-q", part], input="label: dos\n,16M,83\n,,83\n")
        # Kernels built without the MSDOS partition parser (this VM) never add the partitions
        # themselves; partx -a asks for them explicitly (it fails when they are there already).
        quiet(["partx", "-a", part])
        assert os.path.exists("/sys/block/%s/%sp1" % (os.path.basename(part), os.path.basename(part)))
        mounted = lab.attach("mounted")
        run(["mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", mounted])
        mount_point = os.path.join(work, "mnt")
        os.makedirs(mount_point)
        run(["mount", "-o", "ro", mounted, mount_point])   # read-only: the kernel itself writes nothing
        lab.mounted = mount_point
        os.sync()
        lab.baseline = {name: (sha256_of(device), written_sectors(device)) for name, device in lab.devices.items()}
        lab.collections = os.path.join(work, "collections")
        os.makedirs(os.path.join(lab.collections, "ansible_collections", "diskproof"))
        os.symlink(REPO, os.path.join(lab.collections, "ansible_collections", "diskproof", "fleet"))
        with open(os.path.join(work, "ansible.cfg"), "w") as handle:
            handle.write("[defaults]\ncollections_path = %s\ninject_facts_as_vars = False\n"
                         "interpreter_python = auto_silent\nretry_files_enabled = False\nnocolor = True\n"
                         % lab.collections)
        lab.setup_seconds = time.monotonic() - started
        yield lab
        # The evidence, shown with pytest -s: every device's sha256 and written sectors before and after.
        print("\nsetup %.2f s; devices before -> after all cases:" % lab.setup_seconds)
        for name, device in lab.devices.items():
            (before, sectors_before), now = lab.baseline[name], (sha256_of(device), written_sectors(device))
            print("  %-8s %-11s sha256 %s -> %s %s; written sectors %d -> %d" % (
                name, device, before, now[0], "unchanged" if now[0] == before else "CHANGED",
                sectors_before, now[1]))
    finally:
        problems = lab.teardown()
        assert problems == [], problems


def allow(lab, *names):
    return ["loop:%s" % lab.images[name] for name in names]


def discover(lab, targets, destructive=None, allow_list=None, check=False):
    """Run playbooks/discover.yml on localhost; (rc, refusal lines of the failed assert or None, stdout)."""
    extra = {"diskproof_targets": targets, "diskproof_become": False, "diskproof_hosts": "localhost",
             "ansible_python_interpreter": sys.executable}
    if destructive is not None:
        extra["diskproof_destructive"] = destructive
    if allow_list is not None:
        extra["diskproof_destructive_allow"] = allow_list
    argv = [ansible_playbook(), "-i", "localhost,", "-c", "local", PLAYBOOK, "-e", json.dumps(extra)]
    if check:
        argv.append("--check")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(lab.work, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCAL_TEMP=os.path.join(lab.work, "tmp"),
               ANSIBLE_REMOTE_TEMP=os.path.join(lab.work, "tmp"))
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=lab.work,
                            check=False)
    failure = None
    for line in result.stdout.splitlines():
        if line.startswith("fatal: [localhost]: FAILED! => "):
            failure = json.loads(line.split(" => ", 1)[1])
    return result.returncode, failure, result.stdout


def refusals_of(lab, failure):
    """{(target name, code)} from the assert's message; the header line says nothing was written."""
    names = {device: name for name, device in lab.devices.items()}
    lines = failure["msg"]
    assert failure.get("assertion") == "__discover_refusals | length == 0", failure
    assert lines[0].endswith("; nothing was written:"), lines[0]
    found = set()
    for line in lines[1:]:
        match = REFUSAL_LINE.match(line)
        assert match, line
        found.add((names.get(match.group("target"), match.group("target")), match.group("code")))
    return found


def assert_untouched(lab):
    now = {name: (sha256_of(device), written_sectors(device)) for name, device in lab.devices.items()}
    assert now == lab.baseline


def raw_write(lab, *names):
    return [{"device": lab.devices[name], "mode": "raw_write"} for name in names]


# Each reason alone (mounted, partitioned, signature, not allow-listed, not destructive) is refused
# end to end through playbooks/validate.yml in test_bad_input_matrix.py; here all of them at once.
EVERY_REASON = {
    ("clean", "not_destructive"), ("clean", "not_allow_listed"),
    ("unlisted", "not_destructive"), ("unlisted", "not_allow_listed"),
    ("ext4", "not_destructive"), ("ext4", "not_allow_listed"), ("ext4", "signature"),
    ("part", "not_destructive"), ("part", "not_allow_listed"), ("part", "partitioned"),
    ("mounted", "not_destructive"), ("mounted", "not_allow_listed"), ("mounted", "mounted"),
    ("mounted", "busy"), ("mounted", "signature")}


def test_refused_before_any_write_with_every_reason_at_once(lab):
    rc, failure, output = discover(lab, raw_write(lab, "clean", "unlisted", "ext4", "part", "mounted"), None, [])
    assert rc == 2, output
    assert failure is not None, output
    assert refusals_of(lab, failure) == EVERY_REASON
    assert "Show what was discovered" not in output   # the host stopped at the assert
    print("\n" + "\n".join("  " + line for line in failure["msg"]))   # shown with pytest -s
    assert_untouched(lab)


def test_check_mode_refuses_the_same(lab):
    rc, failure, output = discover(lab, raw_write(lab, "mounted", "part"), True, allow(lab, "mounted", "part"),
                                   check=True)
    assert rc == 2, output
    assert refusals_of(lab, failure) == {("mounted", "mounted"), ("mounted", "busy"), ("mounted", "signature"),
                                         ("part", "partitioned")}
    assert_untouched(lab)


def test_clean_allow_listed_disk_is_granted_raw_write(lab):
    """The positive control: the interlock is not just always refusing."""
    rc, failure, output = discover(lab, raw_write(lab, "clean") + [{"device": lab.devices["ext4"]},
                                                                   {"path": lab.mounted}],
                                   True, allow(lab, "clean"))
    assert rc == 0 and failure is None, output
    # the playbook's per-host summary: "targets": {TARGET: "CLASS on DISKS"}
    for target, summary in ((lab.devices["clean"], "raw_write on %s" % os.path.basename(lab.devices["clean"])),
                            (lab.devices["ext4"], "raw_read on %s" % os.path.basename(lab.devices["ext4"])),
                            (lab.mounted, "filesystem on %s" % os.path.basename(lab.devices["mounted"]))):
        assert '"%s": "%s"' % (target, summary) in output, output
    assert_untouched(lab)


def test_a_stale_path_entry_never_allows_a_loop_device(lab):
    """/dev paths and kernel names are not identities: listing them allows nothing."""
    device = lab.devices["clean"]
    rc, failure, output = discover(lab, raw_write(lab, "clean"), True, [device, os.path.basename(device)])
    assert rc == 2, output
    assert refusals_of(lab, failure) == {("clean", "not_allow_listed")}
    assert_untouched(lab)
