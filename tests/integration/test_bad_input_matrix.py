"""Bad-input matrix: every input a user can get wrong is refused before anything is written, with a
message that names the input and says what to fix.

Real lab (tools/lab, lab `badin`, tests/integration/badin_lab.yml), real playbooks/validate.yml over
real SSH. Root only. Two kinds of cases:

- host cases (HOST_CASES): each lab host carries the valid settings of COMMON plus exactly ONE bad
  input in its inventory, and a single validate.yml run covers them all: every host must fail with
  its own message (Ansible names the host on each failure, so each message is attributed). One host,
  the control, has no bad input and must measure: it proves the base settings work (so each refusal
  is due to its one bad input) and that the write checks below do see a write.
- controller cases (CONTROLLER_CASES): the report's rules and baseline files (and the rules
  variable) are settings of the whole run, so each is one short run on one host.

For every case: (1) the playbook fails and the host's failure message holds the expected fragments
(the input's name and what to fix); (2) nothing was written: the written-sector counter of the
host's disk is unchanged (after a syncfs), and so is the sha256 of a bare disk (filled with a fixed
pseudo-random pattern first, so even a write of zeros would show); every host sees every loop device,
so one more test checks that no disk but the control's was written at all; (3) no `diskproof-*` run
directory is left on any lab filesystem; (4) cron, which the quiesce role stops, runs again on the
host (quiesce never ran, or was restored); (5) no cache-fence cgroup is left (none holding no
process: other labs on this machine may be running a fenced test right now) and bench_facts never
produced a record for the host. Paths with shell metacharacters are refused by the plan; the
canary file their commands would create must not exist on any host (nothing ran them in a shell).

Run: .venv/bin/pytest -q -s tests/integration/test_bad_input_matrix.py   (about 70 s on an idle
machine; -s prints each host's case, the task that refused it and its message)
"""
from __future__ import annotations

import copy
import json
import os
import random
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml

from labhelpers import (REPO, cron_status, inventory_path, lab, leftover_fences, needs_root, on_host, playbook,
                        sha256_of, written_sectors)

HERE = Path(__file__).resolve().parent
SPEC = HERE / "badin_lab.yml"
LAB = "badin"
VALIDATE = REPO / "playbooks" / "validate.yml"
MIB = 1 << 20
DISK = "/srv/diskproof/d0"            # each filesystem host's disk, inside the host
CANARY = "/tmp/badin-pwned"           # what the metacharacter paths' commands would create (per-host /tmp)
CONTROL = "control"

pytestmark = needs_root

# Valid settings every case host starts from: the quick profile cut down so that a host that is NOT
# refused finishes in seconds (and the control measures), 1 s idle window, lab disks are 64 MiB.
COMMON = {
    "diskproof_profile": "quick",
    "benchmark_repeats": 1,
    "benchmark_max_repeats": 1,
    "benchmark_fio_runtime_s": 1,
    "benchmark_fio_ramp_s": 0,
    "benchmark_reserve_min_bytes": 4 * MIB,
    "quiesce_idle_window": 1,
}

# (id, host kind, host vars, files to create on the host's disk first, fragments the failure must hold)
# Host kinds: fs (a 64 MiB ext4 disk at DISK), raw (a clean 16 MiB bare disk), raw-partitioned (a dos
# partition table, partitions added), raw-ext4 (an ext4 signature, not mounted). Placeholders in host
# vars: {path} the host's disk directory, {device} its disk's device node, {image} the backing file of
# its disk (loop devices are allow-listed by loop:<backing file>), {other_image} another disk's.
# Files: "dir:NAME" or "file:NAME" below DISK, "mode0777:NAME" makes that directory writable by everyone.
HOST_CASES: List[Tuple[str, str, Dict[str, Any], List[str], List[str]]] = [
    (CONTROL, "fs", {"benchmark_tests": ["dd_seq_write"]}, [], []),
    # block sizes
    ("misaligned-block-size", "fs", {"benchmark_random_block_size": 6000}, [],
     ["random_block_size 6000 is not a multiple of the logical block size", "O_DIRECT would fail with EINVAL; "
      "use a multiple of"]),
    ("zero-block-size", "fs", {"benchmark_sequential_block_size": 0}, [],
     ["sequential_block_size must be a whole number >= 1, got 0"]),
    ("negative-block-size", "fs", {"benchmark_random_block_size": -4096}, [],
     ["random_block_size must be a whole number >= 1, got -4096"]),
    ("non-numeric-block-size", "fs", {"benchmark_sequential_block_size": "1M"}, [],
     ["argument 'benchmark_sequential_block_size' is of type str and we were unable to convert to int"]),
    # sizes and free space
    ("beyond-free-space", "fs", {"diskproof_memory_bytes": 512 * MIB, "diskproof_cache_fence_bytes": 512 * MIB}, [],
     ["not enough free space on the filesystem mounted at /srv/diskproof/d0 (device loop",
      "holding the target /srv/diskproof/d0: the tests need 1073741824 B (1.0 GiB) at once",
      "free space, lower the memory figure with a cache fence (diskproof_cache_fence_bytes), or choose fewer tests"]),
    ("zero-memory", "fs", {"diskproof_memory_bytes": 0}, [], ["memory_bytes must be a whole number >= 1048576, got 0"]),
    ("negative-cache-fence", "fs", {"diskproof_cache_fence_bytes": -1}, [],
     ["cache_fence_bytes must be a whole number >= 16777216, got -1"]),
    ("non-numeric-memory", "fs", {"diskproof_memory_bytes": "16G"}, [],
     ["argument 'diskproof_memory_bytes' is of type str and we were unable to convert to int"]),
    # repeats, runtimes, limits
    ("zero-repeats", "fs", {"benchmark_repeats": 0}, [], ["repeats must be a whole number >= 1, got 0"]),
    ("negative-repeats", "fs", {"benchmark_repeats": -1}, [], ["repeats must be a whole number >= 1, got -1"]),
    ("non-numeric-repeats", "fs", {"benchmark_repeats": "three"}, [],
     ["argument 'benchmark_repeats' is of type str and we were unable to convert to int"]),
    ("max-repeats-below-repeats", "fs", {"benchmark_repeats": 3, "benchmark_max_repeats": 2}, [],
     ["max_repeats (2) must be >= repeats (3)"]),
    ("zero-runtime", "fs", {"benchmark_fio_runtime_s": 0}, [], ["fio_runtime_s must be a whole number >= 1, got 0"]),
    ("negative-ramp", "fs", {"benchmark_fio_ramp_s": -2}, [], ["fio_ramp_s must be a whole number >= 0, got -2"]),
    ("non-numeric-runtime", "fs", {"benchmark_fio_runtime_s": "30s"}, [],
     ["argument 'benchmark_fio_runtime_s' is of type str and we were unable to convert to int"]),
    ("max-cv-out-of-range", "fs", {"benchmark_max_cv": 5}, [], ["max_cv must be a fraction between 0 and 1"]),
    ("reserve-fraction-out-of-range", "fs", {"benchmark_reserve_fraction": 1.5}, [],
     ["reserve_fraction must be between 0 and 1, got 1.5"]),
    # tests and profiles
    ("unknown-test", "fs", {"benchmark_tests": ["dd_seq_write", "dd_seq_wrte"]}, [],
     ["unknown test id(s) 'dd_seq_wrte'; known tests: dd_seq_write,"]),
    ("unknown-profile", "fs", {"diskproof_profile": "fast"}, [],
     ["diskproof_profile must be one of: quick, standard, evidence, full"]),
    ("unknown-write-cache-setting", "fs", {"benchmark_commit_write_cache": "disabled"}, [],
     ["benchmark_commit_write_cache must be one of: unchanged, off"]),
    ("write-test-on-raw-read-device", "raw", {"diskproof_targets": [{"device": "{device}", "mode": "raw_read"}],
                                              "benchmark_tests": ["dd_seq_read", "fio_rand_write"]}, [],
     ["is raw_read: fio_rand_write writes to the device", "diskproof_destructive: true"]),
    # target paths
    ("nonexistent-path", "fs", {"diskproof_targets": [{"path": "{path}/missing"}]}, [],
     ["/srv/diskproof/d0/missing (requested filesystem) not_found: /srv/diskproof/d0/missing: No such file"]),
    ("relative-path", "fs", {"diskproof_targets": [{"path": "srv/diskproof/d0"}]}, [],
     ["targets[0].path srv/diskproof/d0 is a relative path: give the absolute path"]),
    ("path-is-a-file", "fs", {"diskproof_targets": [{"path": "{path}/afile"}]}, ["file:afile"],
     ["not_directory: /srv/diskproof/d0/afile is not a directory"]),
    ("path-with-semicolon", "fs", {"diskproof_targets": [{"path": "{path}/x; touch %s" % CANARY}]},
     ["dir:x; touch %s" % CANARY], ["contains ' ', ';': test commands and fio job files only take paths of letters"]),
    ("path-with-command-substitution", "fs", {"diskproof_targets": [{"path": "{path}/$(touch %s)" % CANARY}]},
     ["dir:$(touch %s)" % CANARY], ["contains ' ', '$', '(', ')'"]),
    ("path-with-backticks", "fs", {"diskproof_targets": [{"path": "{path}/`touch %s`" % CANARY}]},
     ["dir:`touch %s`" % CANARY], ["contains ' ', '`'"]),
    ("path-with-space", "fs", {"diskproof_targets": [{"path": "{path}/my disk"}]}, ["dir:my disk"],
     ["contains ' ': test commands and fio job files only take paths"]),
    ("path-and-device", "fs", {"diskproof_targets": [{"path": "{path}", "device": "{device}"}]}, [],
     ["parameters are mutually exclusive: path|device found in targets"]),
    ("raw-mode-on-a-path", "fs", {"diskproof_targets": [{"path": "{path}", "mode": "raw_write"}]}, [],
     ["mode raw_write does not go with path"]),
    ("unknown-target-key", "fs", {"diskproof_targets": [{"path": "{path}", "size": "1G"}]}, [],
     ["diskproof_targets.size. Supported parameters include: allow_non_disk, device, mode, path"]),
    ("empty-targets", "fs", {"diskproof_targets": []}, [],
     ["diskproof_targets must be a non-empty list such as [{path: /srv/disk1}], got []"]),
    ("same-target-twice", "fs", {"diskproof_targets": [{"path": "{path}"}, {"path": "{path}/"}]}, [],
     ["diskproof_targets lists the same directory more than once: /srv/diskproof/d0"]),
    ("nonexistent-device", "fs", {"diskproof_targets": [{"device": "/dev/badin-missing", "mode": "raw_read"}]}, [],
     ["/dev/badin-missing (requested raw_read) not_found: /dev/badin-missing: No such file or directory"]),
    ("not-a-block-device", "fs", {"diskproof_targets": [{"device": "/dev/null", "mode": "raw_read"}]}, [],
     ["/dev/null (requested raw_read) not_block_device: /dev/null is not a block device"]),
    # the destructive interlock (raw_write)
    ("raw-write-without-interlock", "raw", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                                            "diskproof_destructive_allow": ["loop:{image}"]}, [],
     ["1 refusal(s)", "(requested raw_write) not_destructive: diskproof_destructive is not true"]),
    ("serial-not-allow-listed", "raw", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                                        "diskproof_destructive": True,
                                        "diskproof_destructive_allow": ["loop:{other_image}"]}, [],
     ["1 refusal(s)", "(requested raw_write) not_allow_listed:"]),
    ("partitioned-device", "raw-partitioned", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                                               "diskproof_destructive": True,
                                               "diskproof_destructive_allow": ["loop:{image}"]}, [],
     ["1 refusal(s)", "(requested raw_write) partitioned:", "dos partition table, partitions"]),
    ("signed-device", "raw-ext4", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                                   "diskproof_destructive": True, "diskproof_destructive_allow": ["loop:{image}"]}, [],
     ["1 refusal(s)", "(requested raw_write) signature:", "ext4"]),
    ("mounted-device", "fs", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                              "diskproof_destructive": True, "diskproof_destructive_allow": ["loop:{image}"]}, [],
     ["3 refusal(s)", "(requested raw_write) mounted:", "/srv/diskproof/d0 (loop", "(requested raw_write) busy:",
      "(requested raw_write) signature:"]),
    # production-host safety (issue 14): a path others can swap, targets sharing one filesystem, a state
    # directory others can write, an allow-list entry bound to another host
    ("target-below-a-world-writable-directory", "fs", {"diskproof_targets": [{"path": "{path}/open/t"}]},
     ["dir:open/t", "mode0777:open"],
     ["directory /srv/diskproof/d0/open is group and world-writable without the sticky bit",
      "chmod go-w /srv/diskproof/d0/open"]),
    ("targets-sharing-one-filesystem-too-small", "fs",
     {"diskproof_targets": [{"path": "{path}/a"}, {"path": "{path}/b"}], "diskproof_memory_bytes": 32 * MIB,
      "diskproof_cache_fence_bytes": 32 * MIB},
     ["dir:a", "dir:b"],
     ["not enough free space on the filesystem mounted at /srv/diskproof/d0",
      "holding the targets /srv/diskproof/d0/a, /srv/diskproof/d0/b"]),
    ("state-dir-writable-by-others", "fs", {"quiesce_state_dir": "{path}/state"}, ["dir:state", "mode0777:state"],
     ["the state directory /srv/diskproof/d0/state", "has mode 0777 (group- or world-writable)"]),
    ("allow-list-entry-bound-to-another-host", "raw", {"diskproof_targets": [{"device": "{device}", "mode": "raw_write"}],
                                                       "diskproof_destructive": True,
                                                       "diskproof_destructive_allow": ["badin-elsewhere:loop:{image}"]},
     [], ["1 refusal(s)", "(requested raw_write) not_allow_listed:", "entries HOST:... count only on host badin-"]),
    # other names that reach commands
    ("bonnie-user-with-metacharacters", "fs", {"benchmark_bonnie_user": "nobody;rm -rf /"}, [],
     ["bonnie_user must be a plain user name, got 'nobody;rm -rf /'"]),
    ("run-id-path-traversal", "fs", {"benchmark_run_id": "../../etc"}, [],
     ["run_id must be 1-64 letters, digits, '.', '_' or '-', got '../../etc'"]),
    ("relative-keep-raw-dir", "fs", {"benchmark_keep_raw_dir": "raw-output"}, [],
     ["keep_raw_dir must be an absolute path"]),
]

RULES_OK = "rules:\n  - match: {test: dd_seq_write}\n    min_write_mb_per_s: 1\n"
# (id, files to write in the run's directory, extra vars, environment, fragments). {dir} is that directory.
CONTROLLER_CASES: List[Tuple[str, Dict[str, str], Dict[str, Any], Dict[str, str], List[str]]] = [
    ("rules-file-bad-yaml", {"rules.yml": "rules:\n  - match: {test: dd_seq_write\n    min_write_mb_per_s: 1\n"},
     {}, {"DISKPROOF_RULES_FILE": "{dir}/rules.yml"},
     ["acceptance rules file {dir}/rules.yml: cannot read {dir}/rules.yml: while parsing a flow mapping",
      "fix the file (docs/report.md, Acceptance rules) or unset rules_file (DISKPROOF_RULES_FILE"]),
    ("rules-file-unknown-metric", {"rules.yml": "rules:\n  - match: {test: dd_seq_write}\n    min_write_gb_per_s: 1\n"},
     {}, {"DISKPROOF_RULES_FILE": "{dir}/rules.yml"},
     ["acceptance rules file {dir}/rules.yml: rules[0].min_write_gb_per_s: unknown key (allowed: datasheet,"]),
    ("rules-file-wrong-type", {"rules.yml": "rules:\n  - match: {test: dd_seq_write}\n    min_write_mb_per_s: fast\n"},
     {}, {"DISKPROOF_RULES_FILE": "{dir}/rules.yml"},
     ["acceptance rules file {dir}/rules.yml: rules[0].min_write_mb_per_s: must be a positive number, got 'fast'"]),
    ("rules-file-missing", {}, {}, {"DISKPROOF_RULES_FILE": "{dir}/no-such-rules.yml"},
     ["acceptance rules file {dir}/no-such-rules.yml: cannot read {dir}/no-such-rules.yml: [Errno 2] No such file"]),
    ("rules-variable-malformed", {}, {"diskproof_acceptance": {"rules": "fast disks only"}}, {},
     ["acceptance rules in diskproof_acceptance: acceptance.rules: must be a list of rules, got str"]),
    ("baseline-file-bad-json", {"rules.yml": RULES_OK, "baseline.json": '{"report_schema": 2, "results": ['},
     {}, {"DISKPROOF_RULES_FILE": "{dir}/rules.yml", "DISKPROOF_BASELINE_FILE": "{dir}/baseline.json"},
     ["baseline: cannot use {dir}/baseline.json: Expecting", "give the report.json of an earlier run"]),
    ("baseline-file-wrong-schema", {"baseline.json": '{"report_schema": 99, "results": []}'},
     {}, {"DISKPROOF_BASELINE_FILE": "{dir}/baseline.json"},
     ["baseline: cannot use {dir}/baseline.json: baseline: report_schema must be one of 1, 2, got 99"]),
    ("baseline-file-missing", {}, {}, {"DISKPROOF_BASELINE_FILE": "{dir}/no-such-baseline.json"},
     ["baseline: cannot use {dir}/no-such-baseline.json: [Errno 2] No such file or directory"]),
]


def fill(value: Any, names: Dict[str, str]) -> Any:
    """value with the {placeholders} of every string filled in, at any depth."""
    if isinstance(value, str):
        for key, text in names.items():
            value = value.replace("{%s}" % key, text)
        return value
    if isinstance(value, list):
        return [fill(item, names) for item in value]
    if isinstance(value, dict):
        return {key: fill(item, names) for key, item in value.items()}
    return value


def failures_by_host(output: str) -> Dict[str, List[str]]:
    """Every failure message of the run, per host: `fatal: [HOST]: FAILED! => {...}` (and loop items)."""
    found: Dict[str, List[str]] = {}
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^(?:fatal|failed): \[([^\]]+)\](?: \(item=.*?\))?(?:: FAILED!)? => ", output, re.M):
        try:
            result, _end = decoder.raw_decode(output, match.end())
        except ValueError:
            result = {"msg": output[match.end():match.end() + 2000]}
        message = result.get("msg", result) if isinstance(result, dict) else result
        found.setdefault(match.group(1), []).append(message if isinstance(message, str) else json.dumps(message))
    return found


def in_parallel(function, items):
    with ThreadPoolExecutor(max_workers=16) as pool:
        return dict(zip(items, pool.map(function, items)))


def pattern(size: int) -> bytes:
    """A fixed pseudo-random pattern (the same every run; no filesystem or partition magic in it)."""
    return random.Random(57).randbytes(size)


class Lab:
    """The badin lab, who plays which case, and what its disks looked like before the run."""

    def __init__(self) -> None:
        state = json.loads((inventory_path(LAB).parent / "lab.json").read_text())
        self.workdir = Path(state["workdir"])
        self.inventory = yaml.safe_load(inventory_path(LAB).read_text())
        self.hosts = self.inventory["all"]["children"]["lab"]["hosts"]
        self.devices = {host: "/dev/" + disks[0]["device"] for host, disks in state["devices"].items()}
        spares = {"fs": [host for host in self.hosts if host.startswith("badin-f")],
                  "raw": [host for host in self.hosts if host.startswith("badin-r")]}
        self.case_host: Dict[str, str] = {}
        for case_id, kind, *_rest in HOST_CASES:
            pool = spares["raw" if kind.startswith("raw") else "fs"]
            assert pool, "badin_lab.yml has too few %s hosts for HOST_CASES" % kind
            self.case_host[case_id] = pool.pop(0)
        self.raw = {host for host in self.hosts if not self.hosts[host]["diskproof_lab_disks"][0]["path"]}
        self.filesystems = {host: self.workdir / "hosts" / host / DISK.lstrip("/") for host in self.hosts
                            if host not in self.raw}
        self.partitioned: List[str] = []
        self.before: Dict[str, Tuple[int, str]] = {}

    def image(self, host: str) -> str:
        with open("/sys/block/%s/loop/backing_file" % os.path.basename(self.devices[host]), encoding="utf-8") as handle:
            image = handle.read().strip()
        assert image.startswith(str(self.workdir) + "/"), image   # the lab's own image, nothing else
        return image

    def prepare_raw(self, host: str, kind: str) -> None:
        """Fill the bare disk with the pattern (through its image), then partition it or sign it."""
        device, image = self.devices[host], self.image(host)
        size = os.path.getsize(image)
        with open(image, "r+b") as handle:
            handle.write(pattern(size))
            handle.flush()
            os.fsync(handle.fileno())
        subprocess.run(["blockdev", "--flushbufs", device], check=True)
        if kind == "raw-partitioned":
            subprocess.run(["sfdisk", "-q", device], input="label: dos\n,8M,83\n,,83\n", text=True, check=True,
                           capture_output=True)
            self.partitioned.append(device)
            # Kernels without the msdos parser (this VM) never add the partitions themselves.
            subprocess.run(["partx", "-a", device], capture_output=True, check=False)
            assert os.path.exists("/sys/block/%s/%sp1" % ((os.path.basename(device),) * 2)), device
        elif kind == "raw-ext4":
            subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device],
                           check=True, capture_output=True)

    def sync(self) -> None:
        """Flush the lab filesystems (only those: other labs may be writing), after listing every
        directory once so no later read of a directory is an atime update still to be written."""
        for root in self.filesystems.values():
            for _directory, _dirs, _files in os.walk(root):
                pass
        subprocess.run(["sync", "-f"] + [str(root) for root in self.filesystems.values()], check=True)

    def disk_state(self) -> Dict[str, Tuple[int, str]]:
        """host -> (written sectors of its disk, sha256 of the disk when it is a bare one)."""
        self.sync()
        return {host: (written_sectors(device), sha256_of(device) if host in self.raw else "")
                for host, device in self.devices.items()}

    def run_dirs(self) -> List[str]:
        """Every diskproof-* entry on any lab filesystem."""
        found = []
        for root in self.filesystems.values():
            for directory, dirs, files in os.walk(root):
                found.extend(os.path.join(directory, name) for name in dirs + files if name.startswith("diskproof-"))
        return found

    def canaries(self) -> List[str]:
        return [host for host in self.hosts if (self.workdir / "hosts" / host / CANARY[len("/tmp/"):]).exists()]

    def write_inventory(self, path: Path, hosts: Dict[str, Dict[str, Any]]) -> Path:
        inventory = copy.deepcopy(self.inventory)
        group = inventory["all"]["children"]["lab"]
        group["vars"].update(COMMON)
        group["hosts"] = {host: dict(self.hosts[host], **values) for host, values in hosts.items()}
        path.write_text(yaml.safe_dump(inventory, sort_keys=False))
        return path

    def teardown(self) -> None:
        for device in self.partitioned:
            subprocess.run(["partx", "-d", device], capture_output=True, check=False)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """The lab up, every host case's host prepared, ONE validate.yml run over all of them."""
    started = time.monotonic()
    timings: Dict[str, float] = {}
    lab("down", "--name", LAB)
    lab("up", str(SPEC))
    timings["lab up"] = time.monotonic() - started
    badin = None
    try:
        badin = Lab()
        work = tmp_path_factory.mktemp("badin")
        raw_hosts = sorted(badin.raw)
        host_vars: Dict[str, Dict[str, Any]] = {}
        for case_id, kind, values, files, _fragments in HOST_CASES:
            host = badin.case_host[case_id]
            if kind.startswith("raw"):
                badin.prepare_raw(host, kind)
            other = [name for name in raw_hosts if name != host][0]
            names = {"path": DISK, "device": badin.devices[host], "image": badin.image(host),
                     "other_image": badin.image(other)}
            host_vars[host] = fill(values, names)
            for entry in files:
                kind_of, name = entry.split(":", 1)
                target = badin.filesystems[host] / name
                if kind_of == "dir":
                    target.mkdir(parents=True)
                elif kind_of == "mode0777":
                    target.chmod(0o777)
                else:
                    target.write_text("not a directory\n")
        # cron runs on every host, as on a real one: the quiesce role stops it and must restore it. cron writes
        # its pidfile after it has forked away from `service cron start`, and `service cron status` says 3 (not
        # running) until then: asked at once, with every host starting cron on two busy cores, one host answered
        # 3 (a standalone run on 2026-11-26). Asked until it answers 0, as the quiesce module's own settle does.
        start = ("service cron start >/dev/null 2>&1; for try in $(seq 50); do service cron status >/dev/null 2>&1 "
                 "&& break; sleep 0.2; done; service cron status >/dev/null 2>&1; echo $?")
        crons = in_parallel(lambda host: on_host(LAB, host, start), list(host_vars))
        not_running = {host: (result.returncode, result.stdout, result.stderr[-500:]) for host, result in crons.items()
                       if result.stdout.strip() != "0"}
        assert not_running == {}
        inventory = badin.write_inventory(work / "inventory.yml", host_vars)
        control = badin.case_host[CONTROL]
        badin.control_inventory = badin.write_inventory(work / "control.yml", {control: host_vars[control]})
        badin.before = badin.disk_state()
        timings["prepared"] = time.monotonic() - started
        rc, output, report = playbook(inventory, VALIDATE, work / "report")
        timings["validate.yml on %d hosts" % len(host_vars)] = time.monotonic() - started
        badin.result = {"rc": rc, "output": output, "report": report, "failures": failures_by_host(output),
                        "after": badin.disk_state(), "run_dirs": badin.run_dirs(), "fences": leftover_fences(LAB),
                        "canaries": badin.canaries(),
                        "cron": in_parallel(lambda host: cron_status(LAB, host), list(host_vars))}
        timings["checked"] = time.monotonic() - started
        print("\nbadin matrix: %s" % ", ".join("%s at %.1f s" % item for item in timings.items()))
        for case_id, *_rest in HOST_CASES:   # shown with pytest -s: what each host was told, and where
            host = badin.case_host[case_id]
            problems = ((report or {}).get("hosts", {}).get(host) or {}).get("problems") or [{}]
            message = " | ".join(badin.result["failures"].get(host, ["(none)"])).replace("\n", " ")
            print("  %-31s %s [%s] %s" % (case_id, host, problems[0].get("task", "-"), message))
        yield badin
    finally:
        if badin is not None:
            badin.teardown()
        lab("down", "--name", LAB)


def case_params(cases):
    return [pytest.param(case, id=case[0]) for case in cases]


@pytest.mark.parametrize("case", case_params([case for case in HOST_CASES if case[0] != CONTROL]))
def test_bad_input_is_refused_before_any_write(matrix, case):
    case_id, _kind, _values, _files, fragments = case
    host = matrix.case_host[case_id]
    result = matrix.result
    assert result["rc"] != 0
    messages = "\n".join(result["failures"].get(host, []))
    assert messages, "%s (%s) did not fail:\n%s" % (host, case_id, result["output"][-3000:])
    for fragment in fragments:
        assert fragment in messages, (host, fragment, messages)
    # Nothing written on its disk (written sectors; sha256 of a bare one), nothing left, cron back.
    assert result["after"][host] == matrix.before[host]
    assert [path for path in result["run_dirs"] if path.startswith(str(matrix.workdir / "hosts" / host) + "/")] == []
    assert result["cron"][host] == 0, "cron not running on %s after the refusal" % host
    assert result["fences"] == []
    assert result["canaries"] == []
    # bench_facts (the only task that makes fences and records) never ran for this host.
    report = result["report"]
    if report is not None:
        assert report["hosts"].get(host, {}).get("records", 0) == 0, report["hosts"].get(host)


def test_no_lab_disk_but_the_controls_was_written_and_nothing_ran_a_path(matrix):
    """Every host sees every loop device: no case may have written to another host's disk either."""
    result = matrix.result
    control = matrix.case_host[CONTROL]
    changed = {host: (matrix.before[host], result["after"][host]) for host in matrix.before
               if host != control and result["after"][host] != matrix.before[host]}
    assert changed == {}
    assert result["run_dirs"] == [] and result["fences"] == [] and result["canaries"] == []


def test_the_control_host_is_measured_and_the_checks_see_its_writes(matrix):
    """The same settings without a bad input pass, and the write checks above are not blind."""
    host = matrix.case_host[CONTROL]
    result = matrix.result
    assert host not in result["failures"], result["failures"].get(host)
    records = [entry for entry in result["report"]["results"] if entry["host"] == host]
    assert [entry["test"] for entry in records] == ["dd_seq_write"], records
    assert records[0]["record"]["error"] is None
    assert result["after"][host][0] > matrix.before[host][0]   # the device counter saw the test file written
    assert result["cron"][host] == 0


@pytest.mark.parametrize("case", case_params(CONTROLLER_CASES))
def test_bad_report_input_is_refused_before_any_host_is_touched(matrix, case, tmp_path, monkeypatch):
    """Rules and baseline are the report's, read on the controller: checked before the first host task."""
    case_id, files, extra, env, fragments = case
    names = {"dir": str(tmp_path)}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for key, value in env.items():
        monkeypatch.setenv(key, fill(value, names))
    # The control's settings are valid: without the early check this run would measure its disk.
    host = matrix.case_host[CONTROL]
    before = matrix.disk_state()
    rc, output, _report = playbook(matrix.control_inventory, VALIDATE, tmp_path / "report", *([extra] if extra else []))
    assert rc != 0, output[-3000:]
    messages = "\n".join(failures_by_host(output).get(host, []))
    for fragment in fill(fragments, names):
        assert fragment in messages, (fragment, messages or output[-3000:])
    assert "TASK [diskproof.fleet.discover" not in output   # refused before the first host task
    assert matrix.disk_state() == before
    assert matrix.run_dirs() == []
    assert cron_status(LAB, host) == 0
    assert leftover_fences(LAB) == []
