"""playbooks/evidence.yml on a real lab disk (50 MiB/s, 200 IOPS): one bundle per disk fetched to the
controller, whose MANIFEST.sha256 passes the real sha256sum, whose README names the exact dd and bonnie++
commands, with before/after snapshots, raw outputs and the records of the report, signed with a throwaway
GPG key that gpg --verify accepts; nothing is left on the host. Check mode plans and writes nothing.
The evidence tasks run with become (su: lab hosts have no sudo, and root needs no password for it), as on a
production host: the fetch then goes through slurp, which wrote the controller copy 0644 (issue 31); the bundle
is 0600 in a 0700 directory.

Real lab (tools/lab, lab `evid`), real ansible-playbook with the report callback, real gpg. Root only.
Short settings (3 s fio runs, one run per test, 1 s idle window): about 80 s.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LAB_TOOL = REPO / "tools" / "lab"
HERE = Path(__file__).resolve().parent
SPEC = HERE / "evid_lab.yml"
LAB = "evid"
HOST = "evid-n01"
INVENTORY = Path("/run/diskproof-lab") / LAB / "inventory.yml"
BIN = Path(sys.executable).parent
# diskproof_memory_bytes as `-e key=value` gives it: a string (the lab's inventory says the same 32 MiB).
SHORT = ["benchmark_fio_runtime_s=3", "benchmark_repeats=1", "quiesce_idle_window=1", "diskproof_memory_bytes=33554432"]
EVIDENCE_TESTS = ["dd_seq_write", "dd_seq_write_direct", "dd_block_sweep_4k", "dd_block_sweep_100k", "dd_block_sweep_1m",
                  "dd_block_sweep_10m", "dd_seq_read", "bonnie", "fio_seq_write", "fio_seq_read", "fio_rand_read",
                  "fio_rand_write", "fio_commit_rate", "fio_verify_1of2", "fio_verify_2of2"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("gpg") is None or shutil.which("sha256sum") is None,
    reason="needs root, iproute2 (the lab), gpg and sha256sum")


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LAB_TOOL), *args], capture_output=True, text=True, check=check, timeout=120)


@pytest.fixture(scope="module")
def evid():
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    try:
        inventory = yaml.safe_load(INVENTORY.read_text())
        yield inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"][0]
    finally:
        lab("down", "--name", LAB)


@pytest.fixture(scope="module")
def gpg_key(tmp_path_factory):
    """A throwaway signing key (no passphrase) in its own GNUPGHOME; its agent is stopped afterwards."""
    home = tmp_path_factory.mktemp("gnupg")
    home.chmod(0o700)
    env = dict(os.environ, GNUPGHOME=str(home))
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-generate-key",
                    "diskproof evidence test <evidence-test@diskproof.invalid>", "ed25519", "sign", "1d"],
                   env=env, check=True, capture_output=True, timeout=60)
    listing = subprocess.run(["gpg", "--batch", "--with-colons", "--list-secret-keys"], env=env, check=True,
                             capture_output=True, text=True).stdout
    fingerprint = [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][0]
    try:
        yield home, fingerprint
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False, capture_output=True)


def playbook(tmp_path, *extra, check=False):
    """Run from tmp_path as a shell would start it (PWD set; the project's ansible.cfg named explicitly), so
    the default evidence_dest, ./evidence, must land in tmp_path and not next to the playbook."""
    report_dir = tmp_path / "report"
    env = dict(os.environ, DISKPROOF_REPORT_DIR=str(report_dir), ANSIBLE_NOCOLOR="1", PWD=str(tmp_path),
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    argv = [str(BIN / "ansible-playbook"), "-i", str(INVENTORY), str(REPO / "playbooks" / "evidence.yml")]
    for value in list(extra) + SHORT:
        argv += ["-e", value]
    if check:
        argv.append("--check")
    result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600)
    report = json.loads((report_dir / "report.json").read_text()) if (report_dir / "report.json").exists() else None
    return result.returncode, result.stdout + result.stderr, report


def host_leftovers(disk):
    """Evidence directories in the host's /var/tmp and run directories on its disk."""
    listing = lab("ssh", "--name", LAB, HOST, "--", "ls -A /var/tmp %s" % disk["path"]).stdout.split()
    return [name for name in listing if name.startswith("diskproof-")]


def test_evidence_bundle_per_disk_verifies_and_nothing_is_left_on_the_host(evid, tmp_path, gpg_key):
    home, fingerprint = gpg_key
    dest = tmp_path / "evidence"
    rc, output, report = playbook(tmp_path, "evidence_gpg_key=%s" % fingerprint, "evidence_gpg_homedir=%s" % home,
                                  "evidence_become=true", "ansible_become_method=su")
    assert rc == 0, output[-4000:]

    # One bundle per disk under test in ./evidence/<host>/, named by the disk (loop devices have no
    # serial), and its signature.
    bundles = sorted((dest / HOST).glob("*.tar.gz"))
    assert [bundle.name.split("-")[0] for bundle in bundles] == [evid["device"]], os.listdir(dest / HOST)
    bundle = bundles[0]
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600 and stat.S_IMODE((dest / HOST).stat().st_mode) == 0o700
    signature = Path(str(bundle) + ".asc")
    assert signature.read_text().startswith("-----BEGIN PGP SIGNATURE-----")
    verified = subprocess.run(["gpg", "--batch", "--verify", str(signature), str(bundle)], capture_output=True, text=True,
                              env=dict(os.environ, GNUPGHOME=str(home)), check=False)
    assert verified.returncode == 0 and "Good signature" in verified.stderr, verified.stderr

    # Extracted, every file passes the real sha256sum against the manifest.
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xzf", str(bundle), "-C", str(out)], check=True)
    (top,) = list(out.iterdir())
    assert top.name == bundle.name[:-len(".tar.gz")]
    checked = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=top, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    files = sorted(str(path.relative_to(top)) for path in top.rglob("*") if path.is_file())
    assert len(checked.stdout.splitlines()) == len(files) - 1

    # The records in the bundle are the report's records of this disk.
    entries = [entry for entry in report["results"] if entry["host"] == HOST]
    results = json.loads((top / "results.json").read_text())
    assert [record["test"] for record in results["records"]] == EVIDENCE_TESTS
    assert sorted(results["records"], key=lambda record: record["test"]) == sorted(
        (entry["record"] for entry in entries), key=lambda record: record["test"])
    by_test = {record["test"]: record for record in results["records"]}

    # The README names the exact dd and bonnie++ commands, with the test file path.
    readme = (top / "README.md").read_text()
    test_file = by_test["dd_seq_write"]["target"]["test_file"]
    assert " ".join(by_test["dd_seq_write"]["command"]) in readme
    assert "dd if=/dev/zero of=%s bs=1048576 count=64 conv=fdatasync" % test_file in readme
    assert "dd if=%s of=/dev/null bs=1048576 count=64 iflag=direct" % test_file in readme
    assert " ".join(by_test["bonnie"]["command"]) in readme and "bonnie++ -d " in readme
    assert "## Reproduce the key figures with plain dd and bonnie++" in readme
    # The memory the tests were sized by, also when it came as a string (it once said "unknown").
    assert "| Memory (the figure tests were sized by) | 33,554,432 B (32.0 MiB) |" in readme

    # Snapshots before and after, the host files, raw outputs and fio job files.
    device = evid["device"]
    for phase in ("before", "after"):
        for name in ("smartctl-x.txt", "smartctl-x.json", "lsblk.json", "udevadm-info.txt", "queue.json",
                     "pcie-link.json", "dmesg.txt"):
            assert "%s/%s/%s" % (phase, device, name) in files, (phase, name)
        for name in ("commands.json", "host/uname-a.txt", "host/os-release.txt", "host/date-u.txt",
                     "host/clock-offset.txt", "host/versions/dd.txt", "host/versions/bonnie++.txt"):
            assert "%s/%s" % (phase, name) in files, (phase, name)
    assert json.loads((top / "before" / device / "lsblk.json").read_text())["blockdevices"][0]["name"] == device
    raw = [name for name in files if name.startswith("raw/")]
    for test in EVIDENCE_TESTS:
        assert "raw/srv_diskproof_d0/%s.1.out" % test in raw, test
        assert (("raw/srv_diskproof_d0/%s.fio" % test) in raw) == test.startswith("fio_"), test
    quiesce = json.loads((top / "quiesce.json").read_text())
    assert quiesce["idle"]["reached"] is True

    # Nothing left on the host: no evidence directory, no run directory.
    assert host_leftovers(evid) == []


def test_check_mode_plans_only(evid, tmp_path):
    rc, output, _report = playbook(tmp_path, check=True)
    assert rc == 0, output[-4000:]
    assert "profile evidence: 11 tests, 15 jobs, 1 run(s) each" in output
    assert not (tmp_path / "evidence").exists() and not (REPO / "playbooks" / "evidence").exists()
    assert host_leftovers(evid) == []
