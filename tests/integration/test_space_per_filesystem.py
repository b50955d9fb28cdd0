"""Several directory targets on ONE filesystem: the plan sums what coexists there, on a real lab host
(lab `bspace`, bspace_lab.yml: one host, one 1 GiB ext4 disk; the test makes the three targets
/srv/diskproof/d0/a, b and c on it, so all three share one st_dev).

1. Refused before quiesce: the memory figure 256 MiB and the tests dd_seq_write, sysbench_rndrd,
   ioping_latency. Each target's 512 MiB test file fits the filesystem alone, but ioping reads the
   test file after sysbench, so the test file and sysbench's 512 MiB of files are there at once:
   1 GiB, more than the filesystem holds. validate.yml refuses the host with a message naming the
   filesystem (mount point, device), its three targets and the figures (needed, free, reserve);
   cron runs at every sample taken on the host during the run (the quiesce never ran: no state
   directory either), and the device's written-sector counter and the target listings are unchanged.
2. Fits because files are removed between targets: the memory figure 192 MiB (384 MiB test files) and
   dd_seq_write, dd_seq_read. The three test files (1152 MiB) do not fit together, but each target's
   test file is removed after its last test: the run completes on all three targets, and the free
   space sampled on the host (every 0.2 s) never drops below the 64 MiB reserve, while it does show
   one test file at a time was written.
3. --check prints the plan with the filesystem's peak and changes nothing (listings, sector counter).

Real lab (tools/lab), real ansible-playbook with the report callback, real dd and sysbench. Root only.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from labhelpers import (REPO, cron_status, inventory_path, needs_root, on_host, playbook, running_lab,
                        written_sectors)

SPEC = Path(__file__).resolve().parent / "bspace_lab.yml"
LAB = "bspace"
HOST = "bspace-n01"
FS = "/srv/diskproof/d0"
TARGETS = ["%s/%s" % (FS, name) for name in ("a", "b", "c")]
STATE_DIR = "/srv/diskproof-state"
MIB = 1 << 20
RESERVE = 64 * MIB                 # the lab inventory's benchmark_reserve_min_bytes (5 % of 1 GiB is less)
SAMPLER = "/var/tmp/bspace-sampler.sh"
SAMPLES = "/var/tmp/bspace-samples.txt"
STOP = "/var/tmp/bspace-stop"

pytestmark = needs_root

# On the host, every 0.2 s until STOP appears (at most 600 s): the free space of the filesystem as root's
# tools see it (f_bavail, what the plan reads) and whether cron runs. Keeps the minimum and the counts.
SAMPLER_TEXT = r'''#!/bin/sh
end=$(($(date +%%s) + 600))
min=-1; samples=0; cron_down=0
while [ ! -e %(stop)s ] && [ "$(date +%%s)" -le "$end" ]; do
  free=$(($(stat -f -c '%%a * %%S' %(fs)s)))
  if [ "$min" -lt 0 ] || [ "$free" -lt "$min" ]; then min=$free; fi
  service cron status >/dev/null 2>&1 || cron_down=$((cron_down + 1))
  samples=$((samples + 1))
  echo "min_free=$min samples=$samples cron_down=$cron_down" > %(out)s.tmp && mv %(out)s.tmp %(out)s
  sleep 0.2
done
''' % {"stop": STOP, "fs": FS, "out": SAMPLES}


def run_on(command: str) -> str:
    result = on_host(LAB, HOST, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (HOST, command, result.stdout, result.stderr)
    return result.stdout


def free_bytes() -> int:
    return int(run_on("echo $(($(stat -f -c '%%a * %%S' %s)))" % FS).strip())


def listings() -> dict:
    """What is in the filesystem and in each target; the sync flushes the listing's own atime update, so the
    device's sector counter afterwards moves only when something really writes."""
    text = run_on("for d in %s %s; do echo \"== $d\"; ls -A \"$d\"; done; sync -f %s" % (FS, " ".join(TARGETS), FS))
    return {block.split("\n", 1)[0]: sorted(block.split("\n", 1)[1].split()) for block in text.split("== ")[1:]}


class Sampler:
    """The sampler running on the host for the duration of a playbook run."""

    def __enter__(self):
        run_on("cat > %s <<'EOF'\n%sEOF\nrm -f %s %s" % (SAMPLER, SAMPLER_TEXT, SAMPLES, STOP))
        self.pid = int(run_on("nohup setsid sh %s >/dev/null 2>&1 </dev/null & echo $!" % SAMPLER).strip())
        deadline = time.monotonic() + 30
        while "samples=" not in on_host(LAB, HOST, "cat %s 2>/dev/null" % SAMPLES).stdout:
            assert time.monotonic() < deadline, "the sampler did not start"
            time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        on_host(LAB, HOST, "touch %s; sleep 0.5; [ \"$(tr '\\0' ' ' < /proc/%d/cmdline 2>/dev/null)\" = 'sh %s ' ] "
                           "&& kill %d; true" % (STOP, self.pid, SAMPLER, self.pid))
        return False

    def figures(self) -> dict:
        text = run_on("cat %s" % SAMPLES).strip()
        match = re.fullmatch(r"min_free=(\d+) samples=(\d+) cron_down=(\d+)", text)
        assert match, text
        return {"min_free": int(match.group(1)), "samples": int(match.group(2)), "cron_down": int(match.group(3))}


@pytest.fixture(scope="module")
def bspace():
    with running_lab(LAB, SPEC):
        inventory = yaml.safe_load(inventory_path(LAB).read_text())
        device = inventory["all"]["children"]["lab"]["hosts"][HOST]["diskproof_lab_disks"][0]["device"]
        run_on("mkdir -p %s" % " ".join(TARGETS))
        try:
            yield device
        finally:
            on_host(LAB, HOST, "rm -f %s %s %s %s.tmp" % (SAMPLER, SAMPLES, STOP, SAMPLES))


def validate(tmp_path: Path, memory: int, tests: list, check: bool = False) -> tuple:
    return playbook(inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path / "report",
                    {"diskproof_targets": [{"path": path} for path in TARGETS], "diskproof_memory_bytes": memory,
                     "diskproof_cache_fence_bytes": memory, "benchmark_tests": tests, "benchmark_repeats": 1,
                     "benchmark_fio_runtime_s": 3, "quiesce_idle_window": 1}, check=check, timeout=600)


def test_targets_that_fit_alone_but_not_together_are_refused_before_quiesce(bspace, tmp_path):
    assert cron_status(LAB, HOST) == 0
    assert on_host(LAB, HOST, "test -e %s" % STATE_DIR).returncode != 0   # no run has quiesced this host yet
    before = listings()
    sectors_before = written_sectors(bspace)
    free = free_bytes()
    assert 512 * MIB + RESERVE < free < 1024 * MIB + RESERVE    # one test file fits, test file + sysbench do not
    with Sampler() as sampler:
        returncode, output, _report = validate(tmp_path, 256 * MIB, ["dd_seq_write", "sysbench_rndrd",
                                                                     "ioping_latency"])
    figures = sampler.figures()

    assert returncode == 2, output
    assert re.search(r"%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1 " % HOST, output), output
    # Refused by the plan's check at the start of the quiesce call, before its lock: cron ran at every sample, no
    # lock or state was ever made, nothing written.
    assert figures["samples"] >= 5 and figures["cron_down"] == 0, figures
    assert cron_status(LAB, HOST) == 0
    assert on_host(LAB, HOST, "test -e %s" % STATE_DIR).returncode != 0
    fatal = output.index("fatal: [%s]" % HOST)
    refused_in = re.findall(r"TASK \[([^\]]+)\]", output[:fatal])[-1]
    assert refused_in == \
        "diskproof.fleet.quiesce : Lock the host, stop background jobs, drop caches and wait for an idle window", output
    assert listings() == before
    assert written_sectors(bspace) == sectors_before
    message = re.search(r"benchmark plan refused, nothing was written: (not enough free space on the filesystem "
                        r"mounted at %s \(device %s, [0-9]+:[0-9]+\)[^\"]*)" % (FS, bspace), output)
    assert message, output
    message = message.group(1)
    # The three targets, the figures: 512 MiB test file + 512 MiB of sysbench files, the reserve, the free space.
    assert "holding the targets %s" % ", ".join(TARGETS) in message, message
    assert "need 1073741824 B (1.0 GiB)" in message and "keep 67108864 B (64.0 MiB) free" in message, message
    available = int(re.search(r"only (\d+) B .* is available", message).group(1))
    assert abs(available - free) < 4 * MIB, (available, free)
    assert "at once (while sysbench_rndrd runs on %s)" % TARGETS[0] in message, message


def test_targets_that_fit_only_because_files_are_removed_in_between_run_to_completion(bspace, tmp_path):
    before = listings()
    free = free_bytes()
    test_file = 384 * MIB
    assert test_file + RESERVE < free < 3 * test_file    # one at a time fits, all three together would not
    with Sampler() as sampler:
        returncode, output, report = validate(tmp_path, 192 * MIB, ["dd_seq_write", "dd_seq_read"])
    figures = sampler.figures()

    assert returncode == 0, output[-4000:]
    # The plan shows the filesystem's peak: one test file at a time.
    assert re.search(r"filesystem %s \(device %s, [0-9]+:[0-9]+\): targets %s: at most 384\.0 MiB at once, keeps "
                     r"64\.0 MiB free of [0-9.]+ MiB available" % (FS, bspace, ", ".join(TARGETS)), output), output
    assert report is not None
    verdicts = {(entry["record"]["target"]["path"], entry["test"]): entry["verdict"] for entry in report["results"]}
    assert sorted(verdicts) == sorted((target, test) for target in TARGETS for test in ("dd_seq_write", "dd_seq_read"))
    assert "error" not in verdicts.values(), verdicts
    # One test file was on the filesystem at a time, and the reserve always stayed free.
    assert figures["samples"] >= 20, figures
    assert figures["min_free"] < free - test_file // 2, (figures, free)
    assert figures["min_free"] >= RESERVE, (figures, free)
    # What the run really had on the filesystem at its fullest is the plan's peak (plus a little ext4 metadata).
    assert free - figures["min_free"] <= test_file + 4 * MIB, (figures, free)
    assert listings() == before
    assert cron_status(LAB, HOST) == 0
    print("\nfree before %d B, least free during the run %d B (%d samples), reserve %d B"
          % (free, figures["min_free"], figures["samples"], RESERVE))


def test_check_mode_prints_the_filesystem_peak_and_changes_nothing(bspace, tmp_path):
    before = listings()
    sectors_before = written_sectors(bspace)
    returncode, output, _report = validate(tmp_path, 192 * MIB, ["dd_seq_write", "dd_seq_read"], check=True)
    assert returncode == 0, output[-4000:]
    # Planned once, inside the quiesce call (check mode: the checked plan); the benchmark role takes that plan.
    assert re.search(r"TASK \[diskproof\.fleet\.benchmark : Take the plan the quiesce made[^\n]*\n+ok: \[%s\]" % HOST,
                     output), output
    assert re.search(r"filesystem %s \(device %s, [0-9]+:[0-9]+\): targets %s: at most 384\.0 MiB at once"
                     % (FS, bspace, ", ".join(TARGETS)), output), output
    assert "Run each test" in output and "skipping" in output
    assert listings() == before
    assert written_sectors(bspace) == sectors_before
    assert cron_status(LAB, HOST) == 0
