"""The filesystem under test runs out of space in the middle of validate.yml (ENOSPC), on a real lab
host (lab `fnospc`, fnospc_lab.yml: two hosts, a 256 MiB ext4 disk each, 64 MiB test files).

The plan refuses a filesystem that is plainly too small before anything is written (the bad-input
matrix covers that), so here the space goes *after* the plan: a filler started on fnospc-n01 before
the run waits for the run directory bench_plan creates right after its free-space check, then
fallocates all the free space but 16 MiB. dd_seq_write then really gets ENOSPC from the kernel.
Proves: the playbook fails that host only, with a message naming ENOSPC and what to do; report.json
has the error (and the read that followed is an error, not a figure measured on a short file); the
run directory and the partial test file are gone; the user files on that filesystem are unchanged;
cron (stopped by the quiesce) runs again; no cache-fence cgroup is left; fnospc-n02 passes.

Real lab (tools/lab), real ansible-playbook with the report callback. Root only.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from labhelpers import (REPO, cron_status, inventory_path, leftover_fences, needs_root, on_host, playbook,
                        running_lab)

SPEC = Path(__file__).resolve().parent / "fnospc_lab.yml"
LAB = "fnospc"
FULL, SPARE = "fnospc-n01", "fnospc-n02"
TARGET = "/srv/diskproof/d0"
TEST_FILE_BYTES = 64 << 20          # 2 x the lab's 32 MiB memory figure
LEFT_FREE = 16 << 20                # what the filler leaves: dd fails after about that much
FILLER_LOG = "/var/tmp/fnospc-filler.log"
USER_FILES = ["userdata/a.bin", "userdata/b.bin", "userdata/deeper/c.bin"]

pytestmark = needs_root

# Waits (up to 180 s) for this run's directory, then takes all the free space (root's reserve included:
# dd runs as root) but LEFT_FREE with one fallocate'd file, and logs the numbers.
FILLER = r'''#!/bin/sh
d=%(target)s
end=$(($(date +%%s) + 180))
until ls -d "$d"/diskproof-*/ >/dev/null 2>&1; do
  if [ "$(date +%%s)" -gt "$end" ]; then echo "timeout" > %(log)s; exit 1; fi
  sleep 0.05
done
free=$(($(stat -f -c '%%f * %%S' "$d")))
fallocate -l $((free - %(left)d)) "$d/ballast"
rc=$?
echo "free_before=$free rc=$rc free_after=$(($(stat -f -c '%%f * %%S' "$d")))" > %(log)s
''' % {"target": TARGET, "log": FILLER_LOG, "left": LEFT_FREE}


def run_on(host: str, command: str) -> str:
    result = on_host(LAB, host, command)
    assert result.returncode == 0, "%s: %s\n%s%s" % (host, command, result.stdout, result.stderr)
    return result.stdout


def user_sums() -> dict:
    lines = run_on(FULL, "cd %s && sha256sum %s" % (TARGET, " ".join(USER_FILES))).splitlines()
    return {name: digest for digest, name in (line.split() for line in lines)}


@pytest.fixture(scope="module")
def fnospc():
    with running_lab(LAB, SPEC):
        yield


def test_enospc_mid_write_fails_that_host_cleanly_and_loses_nothing(fnospc, tmp_path):
    for host in (FULL, SPARE):
        assert run_on(host, "ls -A %s" % TARGET).split() == ["lost+found"]
        assert cron_status(LAB, host) == 0
    run_on(FULL, "mkdir -p %s/userdata/deeper && cd %s && for f in %s; do head -c 1048576 /dev/urandom > $f; done"
           % (TARGET, TARGET, " ".join(USER_FILES)))
    sums_before = user_sums()
    filler_pid = int(run_on(FULL, "cat > /var/tmp/fnospc-filler.sh <<'EOF'\n%sEOF\nrm -f %s; "
                                  "nohup setsid sh /var/tmp/fnospc-filler.sh >/dev/null 2>&1 </dev/null & echo $!"
                            % (FILLER, FILLER_LOG)))
    try:
        returncode, output, report = playbook(
            inventory_path(LAB), REPO / "playbooks" / "validate.yml", tmp_path / "report",
            {"benchmark_tests": ["dd_seq_write", "dd_seq_read"], "benchmark_repeats": 1}, timeout=300)
        filled = run_on(FULL, "cat %s" % FILLER_LOG).strip()
    finally:
        # Still waiting (the run failed early)? Killed by its PID, only while that PID is still our filler.
        on_host(LAB, FULL, "[ \"$(tr '\\0' ' ' < /proc/%d/cmdline 2>/dev/null)\" = 'sh /var/tmp/fnospc-filler.sh ' ] "
                           "&& kill %d; rm -f %s/ballast /var/tmp/fnospc-filler.sh" % (filler_pid, filler_pid, TARGET))

    # The plan accepted both hosts (room for 64 MiB plus the 64 MiB reserve); the space went afterwards.
    assert len(re.findall(r"%s: needs 64\.0 MiB, keeps 64\.0 MiB free of" % TARGET, output)) == 2, output
    match = re.fullmatch(r"free_before=(\d+) rc=0 free_after=(\d+)", filled)
    assert match, filled
    assert int(match.group(1)) > 2 * TEST_FILE_BYTES and int(match.group(2)) < TEST_FILE_BYTES

    # That host failed, with the kernel's ENOSPC and what to do; the other one finished.
    assert returncode == 2, output
    assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=1 " % FULL, output), output
    assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0 " % SPARE, output), output
    test_file = re.search(r"dd: error writing '(%s/diskproof-[^/']+/diskproof\.testfile)': No space left on device"
                          % TARGET, output)
    assert test_file, output
    test_file = test_file.group(1)
    assert ("out of space (ENOSPC) on the filesystem of %s during the test; the partial test file %s was removed; "
            % (TARGET, test_file)) in output, output
    assert "free space on it, or test a smaller file (diskproof_cache_fence_bytes), and run again" in output

    # report.json: the write is an error saying ENOSPC; the read after it an error too (no test file), never a
    # figure measured on the short file; the other host passes both.
    assert report is not None, output
    results = {(entry["host"], entry["test"]): entry for entry in report["results"]}
    write = results[(FULL, "dd_seq_write")]
    assert write["verdict"] == "error" and "No space left on device" in write["reason"], write
    assert 0 < write["record"]["bytes"] < TEST_FILE_BYTES
    assert "the run failed: its partial test file %s was removed" % test_file in write["record"]["warnings"]
    read = results[(FULL, "dd_seq_read")]
    assert read["verdict"] == "error" and "No such file or directory" in read["reason"], read
    assert [results[(SPARE, test)]["verdict"] for test in ("dd_seq_write", "dd_seq_read")] == ["pass", "pass"]

    # Nothing of the run is left, nothing else was lost, the hosts are as before.
    assert sorted(run_on(FULL, "ls -A %s" % TARGET).split()) == ["lost+found", "userdata"]
    assert sorted(run_on(SPARE, "ls -A %s" % TARGET).split()) == ["lost+found"]
    assert user_sums() == sums_before
    for host in (FULL, SPARE):
        assert cron_status(LAB, host) == 0
        # No lock and no state left; the run ids used so far stay on record (a reused run id is refused).
        assert set(run_on(host, "ls -A /srv/diskproof-state").split()) <= {".quiesce.mutex", "quiesce-runs.json"}
    assert leftover_fences(LAB) == []
