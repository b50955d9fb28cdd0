"""fio_verify through bench_run (issue 33, data integrity): the plan's passes, rendered from the role's template, run
by real fio on a real test file; the faults planted in the file between a pass's write and its read-back (a flipped
bit, a misplaced block, a region put back to the first pass's data, a zeroed block); bench_run reads each bad block
again and tells the kinds apart. Also: fio's pattern layout is what module_utils/_verify.py says it is."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _verify
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import Settings, TargetFacts, build_plan
from ansible_collections.diskproof.fleet.plugins.modules import bench_run

from .module_runner import records, run_main

TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "benchmark", "templates",
                        "fio_job.ini.j2")
MIB = 1 << 20
BLOCK = 4096
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def render(job):
    environment = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    with open(TEMPLATE, encoding="utf-8") as handle:
        return environment.from_string(handle.read()).render(item=job)


def plan_for(tmp_path):
    """The plan's dd_seq_write and both fio_verify passes over an 8 MiB test file in tmp_path."""
    target = TargetFacts(path=str(tmp_path), free_bytes=1 << 40, filesystem_size_bytes=1 << 41, device=None)
    plan = build_plan([target], Settings(run_id="verify-test", memory_bytes=4 * MIB, tests=("fio_verify",)))
    dd, first, second = plan.jobs
    os.makedirs(os.path.dirname(dd["creates"]))
    subprocess.run(dd["argv"], check=True, capture_output=True)
    return first, second


def run_pass(capsys, job, text, **extra):
    return run_main(bench_run, capsys, dict({
        "argv": job["argv"], "job_file": text, "test": job["test"], "target": job["target"], "params": job["params"],
        "repeats": 1, "max_repeats": 1, "settle_s": 0, "device_io": False, "drop_caches": False}, **extra))


def block_at(path, offset):
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(BLOCK)


def put(path, offset, data):
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    with open(path, "rb") as handle:   # what fio reads (O_DIRECT) next comes from the file, not a stale cache
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


@needs_fio
def test_fio_writes_the_pattern_module_utils_verify_expects(tmp_path):
    first, _second = plan_for(tmp_path)
    write_only = render(first).replace("do_verify=1", "do_verify=0")
    job_file = tmp_path / "w.fio"
    job_file.write_text(write_only)
    subprocess.run(first["argv"] + [str(job_file)], check=True, capture_output=True)
    path = first["fio"]["filename"]
    generation = first["params"]["verify_generation"]
    assert generation == (_verify.run_tag("verify-test") << 16 | 1)
    for offset in (0, BLOCK, 5 * MIB, 8 * MIB - BLOCK):
        assert block_at(path, offset) == _verify.expected_block(generation, offset, BLOCK), offset


@needs_fio
def test_a_clean_pass_reads_every_block_back(capsys, tmp_path):
    first, _second = plan_for(tmp_path)
    code, result = run_pass(capsys, first, render(first))
    assert code == 0, result
    (record,) = records(result)
    assert record["error"] is None
    assert record["integrity"] == {"check": "pattern", "verified_bytes": 8 * MIB, "bad_blocks_total": 0,
                                   "bad_blocks": [], "kinds": {}}
    assert record["params"]["verify_pass"] == 1 and record["metrics"]["write_bytes_per_s"] > 0


@needs_fio
def test_each_planted_fault_is_found_and_told_apart(capsys, tmp_path):
    first, second = plan_for(tmp_path)
    path = first["fio"]["filename"]
    code, result = run_pass(capsys, first, render(first))
    assert code == 0 and records(result)[0]["integrity"]["bad_blocks_total"] == 0, result
    with open(path, "rb") as handle:
        pass_one = handle.read()
    # Pass 2 writes, then the faults land before its read-back (the lab does the same to a running pass).
    write_only = tmp_path / "w2.fio"
    write_only.write_text(render(second).replace("do_verify=1", "do_verify=0"))
    subprocess.run(second["argv"] + [str(write_only)], check=True, capture_output=True)
    flipped, misplaced, stale, zeroed = MIB + 100, 2 * MIB, 3 * MIB, 6 * MIB
    byte = bytearray(block_at(path, flipped - 100))
    byte[100] ^= 0x10
    put(path, flipped - 100, bytes(byte))
    put(path, misplaced, block_at(path, 7 * MIB))
    put(path, stale, pass_one[stale:stale + 4 * BLOCK])
    put(path, zeroed, bytes(BLOCK))
    verify_only = render(second).replace("do_verify=1", "verify_only=1")
    kept = tmp_path / "raw"
    kept.mkdir()
    code, result = run_pass(capsys, second, verify_only, keep_raw=str(kept))
    assert code == 0, result
    (record,) = records(result)
    integrity = record["integrity"]
    assert record["error"] is None   # the disk's data was wrong, not the tool
    assert integrity["bad_blocks_total"] == 7 and integrity["verified_bytes"] == 8 * MIB
    assert integrity["kinds"] == {"flipped": 1, "misplaced": 1, "stale": 4, "not_written": 1}
    found = {block["offset"]: block for block in integrity["bad_blocks"]}
    assert sorted(found) == [MIB, misplaced, stale, stale + BLOCK, stale + 2 * BLOCK, stale + 3 * BLOCK, zeroed]
    assert all(block["length"] == BLOCK and block["check"] == "pattern" for block in found.values())
    assert found[MIB]["detail"].endswith("read again: 1 bit(s) in 1 byte(s) differ from this pass's block, the first "
                                         "at byte 100")
    assert found[misplaced]["detail"].endswith("read again: holds the block this pass wrote for offset %d" % (7 * MIB))
    assert found[stale]["detail"].endswith("read again: holds pass 1 of this run for this offset: this pass's write "
                                           "never landed")
    assert found[zeroed]["detail"].endswith("read again: holds zeros: no block of this test")
    # fio's own words stay first: what it compared and where.
    assert found[MIB]["detail"].startswith("pattern differs at byte 100 of the block: got 0x")
    # The raw output kept for the evidence bundle holds fio's own verify lines, every one.
    assert sorted(os.path.basename(name) for name in record["raw_files"]) == ["fio_verify_2of2.1.out",
                                                                              "fio_verify_2of2.fio"]
    with open(str(kept / "fio_verify_2of2.1.out"), encoding="utf-8") as handle:
        text = handle.read()
    assert text.count("pattern: verify failed at file %s" % path) == 7 and '"total_err" : 7' in text


def test_classify_tells_another_runs_block_and_foreign_data_apart():
    mine = _verify.generation("run-a", 2)
    other = _verify.generation("run-b", 5)
    assert _verify.classify(_verify.expected_block(other, 8192, BLOCK), 8192, mine) == (
        "stale", "holds generation 0x%08x (another run's verify pass) for this offset: this pass's write never landed"
        % other)
    assert _verify.classify(_verify.expected_block(mine, 8192, BLOCK), 8192, mine)[0] == "flipped"   # unstable read
    text = b"not a pattern at all, " * 200
    kind, detail = _verify.classify(text[:BLOCK], 8192, mine)
    assert (kind, detail) == ("not_written", "holds no block of this test (its first bytes: %s)" % text[:16].hex())


def test_a_block_that_cannot_be_read_again_keeps_fios_finding(tmp_path):
    from ansible_collections.diskproof.fleet.plugins.module_utils._parse.fio_verify import BadBlock

    block = BadBlock("f", 0, BLOCK, "pattern", "unclassified", "pattern differs at byte 3")
    (kept,) = _verify.reclassified([block], str(tmp_path / "gone"), 1)
    assert kept.kind == "unclassified" and kept.detail.startswith("pattern differs at byte 3; not read again: ")
    many = [BadBlock("f", index * BLOCK, BLOCK, "pattern", "unclassified", "x") for index in range(3)]
    done = _verify.reclassified(many, "unused", 1, read=lambda _path, _offset, length: bytes(length), limit=2)
    assert [block.kind for block in done] == ["not_written", "not_written", "unclassified"]


# ---------------------------------------------------------------------------------------------- burn-in


def burnin_plan(tmp_path, hours):
    """The burnin profile's dd_seq_write and its cycles over an 8 MiB test file in tmp_path (3 cycles: the
    budget at an expected speed of 2 x 8 MiB x 3 / budget)."""
    target = TargetFacts(path=str(tmp_path / "disk"), free_bytes=1 << 40, filesystem_size_bytes=1 << 41, device=None)
    os.makedirs(target.path)
    expected = 2 * 8 * MIB * 3 / (hours * 3600)
    plan = build_plan([target], Settings(run_id="burnin-test", memory_bytes=4 * MIB, profile="burnin",
                                         burnin_hours=hours, expected_bytes_per_s=expected))
    dd, *cycles = plan.jobs
    os.makedirs(os.path.dirname(dd["creates"]))
    subprocess.run(dd["argv"], check=True, capture_output=True)
    return cycles


@needs_fio
def test_burn_in_cycles_run_within_their_budget_and_clean_up(capsys, tmp_path):
    cycles = burnin_plan(tmp_path, hours=4.0 / 3600)     # a budget of 4 s
    assert [job["test"] for job in cycles] == ["burnin_1of3", "burnin_2of3", "burnin_3of3"]
    state_dir = tmp_path / "state"
    started = time.monotonic()
    code, result = run_pass(capsys, cycles[0], render(cycles[0]), state_dir=str(state_dir))
    assert code == 0, result
    (record,) = records(result)
    # the cycle is a verified pass over the whole test file, its health read around it (this machine: no SMART)
    assert record["integrity"]["bad_blocks_total"] == 0 and record["integrity"]["verified_bytes"] == 8 * MIB
    assert record["health"]["grew"] == [] and record["health"]["after"]["health"] == "unavailable"
    assert record["burnin"]["cycle"] == 1 and record["burnin"]["progress"].startswith(
        "burn-in cycle 1 of up to 3: ")
    assert [name for name in os.listdir(state_dir) if name.startswith("burnin-")]
    time.sleep(max(0.0, 4.5 - (time.monotonic() - started)))
    code, result = run_pass(capsys, cycles[1], render(cycles[1]), state_dir=str(state_dir))
    assert code == 0 and result.get("skipped") is True, result
    assert result["msg"].startswith("burn-in budget of 4 s spent (") and result["msg"].endswith(
        "since it began) after 1 of 3 cycles")
    warnings = [warning["event"]["msg"] if isinstance(warning, dict) else warning for warning in result["warnings"]]
    assert records(result) == [] and warnings == [result["msg"]]   # said once, as a warning
    # the last planned cycle, skipped too (silently), removes the burn-in's state
    code, result = run_pass(capsys, cycles[2], render(cycles[2]), state_dir=str(state_dir))
    # (in-process runs keep ansible's global warning list: the earlier cycle's one warning, not a second)
    assert code == 0 and result.get("skipped") is True and len(result.get("warnings") or []) <= 1, result
    assert [name for name in os.listdir(state_dir) if name.startswith("burnin-")] == []


@needs_fio
def test_a_burn_in_cycle_needs_a_state_dir(capsys, tmp_path):
    (first, *_rest) = burnin_plan(tmp_path, hours=1.0)
    code, result = run_pass(capsys, first, render(first))
    assert code == 1 and "a burn-in cycle (params.burnin_cycle) needs state_dir" in result["msg"]


def test_a_cancelled_burn_in_cycle_leaves_no_state(capsys, tmp_path):
    # Cycle 1 of 3 (not the last: only a cancel removes its state then), its tool a stand-in that sends the module
    # the SIGTERM a cancel sends, as test_bench_run_runner.py's cancel test does.
    killer = tmp_path / "fio"
    killer.write_text("#!/bin/sh\nkill -TERM $PPID\nsleep 1\n")
    killer.chmod(0o755)
    state_dir = tmp_path / "state"
    params = {"burnin_run": "cancel-test", "burnin_target": str(tmp_path), "burnin_cycle": 1, "burnin_cycles": 3,
              "burnin_budget_s": 3600.0}
    code, result = run_main(bench_run, capsys, {
        "argv": [str(killer)], "test": "burnin_1of3", "target": {"path": str(tmp_path)}, "params": params,
        "settle_s": 0, "device_io": False, "state_dir": str(state_dir)})
    assert code == 1 and result["msg"] == "interrupted by signal %d" % signal.SIGTERM, result
    assert os.path.isdir(state_dir) and [name for name in os.listdir(state_dir) if name.startswith("burnin-")] == []
