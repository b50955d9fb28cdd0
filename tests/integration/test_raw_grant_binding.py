"""raw_write grants bound to the disk, not to its /dev name: playbooks/validate.yml run twice, as the
stale-facts case of issue 14 happens in practice - `--tags discover` (which grants raw_write and
binds the grant to the disk), then, with the facts from Ansible's jsonfile fact cache,
`--skip-tags discover` (the benchmark on the cached grant). In between the test changes the disk
under the same name, and the raw write job must be refused by the runner (bench_facts), naming what
changed, with the device untouched: the sha256 of its backing image and its written-sector counter
(/sys/block/<dev>/stat) unchanged.

- unchanged disk: the raw write runs (positive case), bound to the host by a host-bound allow-list
  entry (bgrant-n01:loop:<image>); while the job holds the device with O_EXCL, a `mount` of it fails
  with EBUSY, and the same mount after the job fails for another reason (no filesystem) - the
  EBUSY came from the hold.
- re-enumeration: the lab's /dev/loopN detached and attached to another image the test made, at the
  same number.
- a mount made after discover (mkfs + a read-only mount inside the lab host's mount namespace), on a
  loop device the test made.
- a partition table written after discover (sfdisk, then partx -a: this kernel parses no partition
  tables itself), on a loop device the test made.
- a device already held (an O_EXCL open by the test) when the job starts.

Real lab (tools/lab, lab `bgrant`), real ansible-playbook, real dd, losetup, mkfs, sfdisk and mount.
Writes only to the lab's own disk and to images in this test's tmp directory. Root only.
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from labhelpers import BIN, REPO, ansible_env, lab, needs_root, on_host, sha256_of, written_sectors

HERE = Path(__file__).resolve().parent
SPEC = HERE / "bgrant_lab.yml"
LAB = "bgrant"
HOST = "bgrant-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
VALIDATE = REPO / "playbooks" / "validate.yml"
MIB = 1 << 20
DISK_BYTES = 256 * MIB
REFUSED = "raw_write grant of %s no longer holds, nothing was run on it"

pytestmark = needs_root


def backing_file(device):
    try:
        with open("/sys/block/%s/loop/backing_file" % os.path.basename(device), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def random_image(path, size):
    with open(path, "wb") as handle:
        for _chunk in range(size // (4 * MIB)):
            handle.write(os.urandom(4 * MIB))
    return str(path)


def attach(device, image):
    """The image at exactly this loop device (losetup DEVICE IMAGE)."""
    subprocess.run(["losetup", device, image], check=True)
    assert backing_file(device) == image


def detach_if(device, images):
    """Detach the device only when it is backed by one of these images (never anyone else's)."""
    if backing_file(device) in images:
        subprocess.run(["losetup", "-d", device], check=True)


@pytest.fixture(scope="module")
def bgrant():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(INVENTORY.read_text())
        disk = inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"][0]
        assert disk["mode"] == "raw" and disk["size_bytes"] == DISK_BYTES, disk
        device = "/dev/" + disk["device"]
        image = backing_file(device)
        assert image.startswith("/dev/shm/diskproof-lab-%s/" % LAB), image   # the lab's own image, nothing else
        yield {"device": device, "image": image}
    finally:
        lab("down", "--name", LAB)


@pytest.fixture
def own_loop(tmp_path):
    """A 64 MiB loop device on a random image in this test's tmp directory (partition scanning on)."""
    image = random_image(tmp_path / "own.img", 64 * MIB)
    device = subprocess.run(["losetup", "-f", "-P", "--show", image], check=True, capture_output=True,
                            text=True).stdout.strip()
    try:
        yield {"device": device, "image": image}
    finally:
        detach_if(device, (image,))


def run_validate(tmp_path, extra, *options, background=False):
    """validate.yml with a jsonfile fact cache in tmp_path: what --tags discover stores, --skip-tags discover uses."""
    env = ansible_env(DISKPROOF_REPORT_DIR=str(tmp_path / "report"), ANSIBLE_CACHE_PLUGIN="jsonfile",
                      ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), ANSIBLE_CACHE_PLUGIN_TIMEOUT="86400")
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(VALIDATE), "-e", json.dumps(extra), *options]
    if background:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=900)
    return result.returncode, result.stdout + result.stderr


def raw_write(device, allow):
    return {"diskproof_targets": [{"device": device, "mode": "raw_write"}], "diskproof_destructive": True,
            "diskproof_destructive_allow": allow, "benchmark_tests": ["dd_seq_write_direct"],
            "benchmark_repeats": 1, "benchmark_max_repeats": 1}


def discover(tmp_path, extra):
    rc, output = run_validate(tmp_path, extra, "--tags", "discover")
    assert rc == 0, output[-3000:]
    assert "Run each test" not in output
    return output


def cached_grant(tmp_path):
    # ansible-core 2.19's jsonfile cache: file <prefix><host>, the facts as a JSON text in __payload__.
    (path,) = (tmp_path / "facts").glob("*" + HOST)
    stored = json.loads(path.read_text())
    facts = json.loads(stored["__payload__"]) if "__payload__" in stored else stored
    (target,) = facts["diskproof_targets_resolved"]
    assert target["class"] == "raw_write" and target["granted"], target
    return target["grant"]


def snapshot(*devices_and_images):
    """What must not change: the sha256 of each image, the written-sector counter of each /dev/loop device."""
    return {path: (sha256_of(path) if not path.startswith("/dev/loop") else written_sectors(path))
            for path in devices_and_images}


def mount_attempt(device, point):
    """`mount -t ext4 -o ro` of the device: the error text (it never succeeds on these devices)."""
    point.mkdir(exist_ok=True)
    result = subprocess.run(["mount", "-t", "ext4", "-o", "ro", device, str(point)], capture_output=True, text=True,
                            check=False)
    if result.returncode == 0:
        subprocess.run(["umount", str(point)], check=False)
        pytest.fail("mount of %s succeeded" % device)
    return result.stderr


def dd_writing(device):
    """True while a dd writing to the device runs (any process of the machine)."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    words = handle.read().split(b"\0")
            except OSError:
                continue
            if words and os.path.basename(words[0]) == b"dd" and ("of=%s" % device).encode() in words:
                return True
    return False


def test_unchanged_disk_runs_and_the_write_holds_it_so_a_mount_fails_busy(bgrant, tmp_path):
    device = bgrant["device"]
    extra = raw_write(device, ["%s:loop:%s" % (HOST, bgrant["image"])])   # host-bound entry
    discover(tmp_path, extra)
    grant = cached_grant(tmp_path)
    assert grant["host"] == HOST and grant["disks"][0]["loop"]["backing_file"] == bgrant["image"], grant
    info = os.stat(bgrant["image"])
    assert (grant["disks"][0]["loop"]["st_dev"], grant["disks"][0]["loop"]["st_ino"]) == (info.st_dev, info.st_ino)
    before = written_sectors(device)
    started = time.monotonic()
    job = run_validate(tmp_path, extra, "--skip-tags", "discover", background=True)
    try:
        deadline = time.monotonic() + 300
        while not dd_writing(device):
            assert job.poll() is None and time.monotonic() < deadline, "the raw write never started"
            time.sleep(0.05)
        during = mount_attempt(device, tmp_path / "mnt")
        output, _stderr = job.communicate(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    elapsed = time.monotonic() - started
    print("\nplaybook --skip-tags discover: %.1f s; mount during the write: %s" % (elapsed, during.strip()))
    assert job.returncode == 0, output[-3000:]
    assert "busy" in during, during                 # the job's O_EXCL hold
    after = mount_attempt(device, tmp_path / "mnt")
    assert "busy" not in after and after, after     # no hold now: mount fails on the missing filesystem instead
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (entry,) = report["results"]
    record = entry["record"]
    assert record["error"] is None and record["test"] == "dd_seq_write_direct", record
    assert record["target"]["grant"]["class"] == "raw_write"
    assert record["device_io"]["write_bytes"] >= 64 * MIB and written_sectors(device) > before


def test_re_enumerated_disk_under_the_same_name_is_refused_and_untouched(bgrant, tmp_path):
    device, image = bgrant["device"], bgrant["image"]
    extra = raw_write(device, ["loop:%s" % image])
    discover(tmp_path, extra)
    other = random_image(tmp_path / "other.img", DISK_BYTES)
    subprocess.run(["losetup", "-d", device], check=True)
    try:
        attach(device, other)                       # the same /dev/loopN, another disk
        before = snapshot(image, other, device)
        rc, output = run_validate(tmp_path, extra, "--skip-tags", "discover")
        assert rc != 0
        assert REFUSED % device in output, output[-3000:]
        assert "the loop backing file was %s at discover, now %s" % (image, other) in output
        assert "re-attached since discover" in output and "rerun the discover role" in output
        assert snapshot(image, other, device) == before
    finally:
        detach_if(device, (other,))
        if backing_file(device) is None:
            attach(device, image)                   # the lab's disk back, for the other tests and the lab's teardown


def test_a_mount_made_after_discover_is_refused_and_untouched(bgrant, own_loop, tmp_path):
    device, image = own_loop["device"], own_loop["image"]
    extra = raw_write(device, ["loop:%s" % image])
    discover(tmp_path, extra)
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)
    point = "/srv/bgrant-mnt"
    mounted = on_host(LAB, HOST, "mkdir -p %s && mount -o ro,noload %s %s" % (point, device, point))
    assert mounted.returncode == 0, mounted.stderr
    try:
        before = snapshot(image, device)
        rc, output = run_validate(tmp_path, extra, "--skip-tags", "discover")
        assert rc != 0
        assert REFUSED % device in output, output[-3000:]
        name = os.path.basename(device)
        assert "%s is mounted now: %s (%s)" % (name, point, name) in output
        assert "carries signatures now: ext4" in output and "exclusive open (EBUSY" in output
        assert snapshot(image, device) == before
    finally:
        on_host(LAB, HOST, "umount %s" % point)


def test_a_partition_table_written_after_discover_is_refused_and_untouched(bgrant, own_loop, tmp_path):
    device, image = own_loop["device"], own_loop["image"]
    extra = raw_write(device, ["loop:%s" % image])
    discover(tmp_path, extra)
    subprocess.run(["sfdisk", "-q", device], input="label: dos\n,,L\n", text=True, check=True)
    # This kernel has no partition-table parsers of its own: partx adds the partition (BLKPG), as udev would.
    subprocess.run(["partx", "-a", device], check=True)
    before = snapshot(image, device)
    rc, output = run_validate(tmp_path, extra, "--skip-tags", "discover")
    assert rc != 0
    assert REFUSED % device in output, output[-3000:]
    name = os.path.basename(device)
    assert "%s has partitions now: %sp1" % (name, name) in output
    assert "%s carries signatures now: dos" % name in output
    assert snapshot(image, device) == before


def test_a_device_already_held_is_refused_and_untouched(bgrant, own_loop, tmp_path):
    device, image = own_loop["device"], own_loop["image"]
    extra = raw_write(device, ["loop:%s" % image])
    discover(tmp_path, extra)
    hold = os.open(device, os.O_RDONLY | os.O_EXCL)
    try:
        before = snapshot(image, device)
        rc, output = run_validate(tmp_path, extra, "--skip-tags", "discover")
    finally:
        os.close(hold)
    assert rc != 0
    assert REFUSED % device in output, output[-3000:]
    assert "the kernel refuses an exclusive open (%s" % errno.errorcode[errno.EBUSY] in output
    assert snapshot(image, device) == before
