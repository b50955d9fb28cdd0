"""The benchmark plan: catalog, profiles, sizing, alignment, free space, exact argv, refusals."""
from __future__ import annotations

import binascii

import dataclasses

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import (
    CATALOG, PROFILES, PlanError, Settings, TargetFacts, build_plan, plan_lines, select_tests,
)
from ansible_collections.diskproof.fleet.plugins.module_utils._identity import target_identities
from ansible_collections.diskproof.fleet.plugins.module_utils._sizing import (
    SizingError, buffered_test_size, check_direct_block_size, check_free_space, evenly_spaced_offsets, round_up,
)

MIB = 1048576
GIB = 1 << 30


def disk(path="/srv/a", free=100 * GIB, size=200 * GIB, logical=512, physical=4096, device="sdb", **extra):
    return TargetFacts(path=path, free_bytes=free, filesystem_size_bytes=size, device=device, logical_block_size=logical,
                       physical_block_size=physical, **extra)


def settings(**overrides):
    values = dict(run_id="r1", memory_bytes=128 * MIB)
    values.update(overrides)
    return Settings(**values)


# --- sizing -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("memory_bytes", "block_size", "expected"),
    [
        (128 * MIB, MIB, 256 * MIB),
        (MIB + 1, MIB, 3 * MIB),  # 2 MiB + 2 bytes rounds up to whole blocks
        (24 * 1024 * MIB, MIB, 48 * 1024 * MIB),
        (1000, 4096, 4096),
    ],
)
def test_buffered_test_size_is_twice_memory_rounded_up_to_blocks(memory_bytes, block_size, expected):
    assert buffered_test_size(memory_bytes, block_size) == expected


@pytest.mark.parametrize(
    ("memory_bytes", "block_size", "message"),
    [
        (0, MIB, "memory_bytes must be a positive integer number of bytes, got 0"),
        (-5, MIB, "memory_bytes must be a positive integer number of bytes, got -5"),
        ("8G", MIB, "memory_bytes must be a positive integer number of bytes, got '8G'"),
        (True, MIB, "memory_bytes must be a positive integer number of bytes, got True"),
        (MIB, 0, "block_size must be a positive integer number of bytes, got 0"),
    ],
)
def test_buffered_test_size_refuses_bad_input(memory_bytes, block_size, message):
    with pytest.raises(SizingError) as error:
        buffered_test_size(memory_bytes, block_size)
    assert str(error.value) == message


def test_round_up():
    assert [round_up(value, 4) for value in (1, 4, 5, 8)] == [4, 4, 8, 8]


def test_direct_block_size_must_be_a_multiple_of_the_logical_block_size():
    assert check_direct_block_size("random_block_size", 4096, "sdb", 512, 4096) == []
    with pytest.raises(SizingError) as error:
        check_direct_block_size("random_block_size", 6144, "nvme0n1", 4096, 4096)
    assert str(error.value) == (
        "random_block_size 6144 is not a multiple of the logical block size: nvme0n1 has logical block size 4096 and "
        "physical block size 4096, so O_DIRECT would fail with EINVAL; use a multiple of 4096 such as 8192")


def test_direct_block_size_below_the_physical_block_size_is_a_warning():
    warnings = check_direct_block_size("random_block_size", 512, "sda", 512, 4096)
    assert len(warnings) == 1 and "read-modify-write" in warnings[0] and "sda" in warnings[0]


def test_free_space_keeps_five_percent_or_one_gib():
    assert check_free_space("/srv/a", 10 * GIB, 100 * GIB, 1000 * GIB) == 50 * GIB   # 5 % of 1000 GiB
    assert check_free_space("/srv/a", 1 * GIB, 3 * GIB, 4 * GIB) == 1 * GIB         # 1 GiB floor
    with pytest.raises(SizingError) as error:
        check_free_space("/srv/a", 2 * GIB, 3 * GIB - 1, 4 * GIB)
    assert str(error.value).startswith(
        "not enough free space on /srv/a: the tests need 2147483648 B (2.0 GiB) and the filesystem must keep "
        "1073741824 B (1.0 GiB) free")


def test_sweep_offsets_are_aligned_evenly_spaced_and_stay_inside():
    offsets = evenly_spaced_offsets(256 * MIB, 16 * MIB, 16, MIB)
    assert offsets[0] == 0 and offsets[-1] == 240 * MIB and len(offsets) == 16
    assert all(offset % MIB == 0 and offset + 16 * MIB <= 256 * MIB for offset in offsets)
    with pytest.raises(SizingError):
        evenly_spaced_offsets(MIB, 2 * MIB, 4, 4096)
    with pytest.raises(SizingError):
        evenly_spaced_offsets(MIB, 4096, 1, 4096)


# --- catalog and profiles -------------------------------------------------------------------------

def test_every_profile_names_only_catalog_tests_and_full_is_everything():
    for profile in PROFILES.values():
        assert set(profile.tests) <= set(CATALOG)
    # full: every test but the SSD steady-state ones (raw_write devices only, hours on a real drive; their own profile)
    # and the burn-in (hours by its budget; its own profile)
    assert set(PROFILES["full"].tests) == set(CATALOG) - {"ssd_precondition", "ssd_steady_rand_write", "ssd_steady_rand_read",
                                                          "burnin"}


def test_evidence_profile_runs_dd_and_bonnie_before_fio():
    order = select_tests("evidence", [])
    first_fio = min(index for index, test in enumerate(order) if test.startswith("fio"))
    assert {"dd_seq_write", "dd_seq_read", "bonnie", "dd_block_sweep"} <= set(order[:first_fio])


def test_a_test_of_the_test_file_brings_dd_seq_write_first():
    assert select_tests("standard", ["fio_rand_read"]) == ["dd_seq_write", "fio_rand_read"]
    assert select_tests("standard", ["fio_rand_read", "dd_seq_write"]) == ["dd_seq_write", "fio_rand_read"]
    assert select_tests("standard", ["sysbench_fsync"]) == ["sysbench_fsync"]   # has files of its own


@pytest.mark.parametrize(
    ("profile", "tests", "message"),
    [
        ("standard", ["dd_seq_wrte", "x"], "unknown test id(s) 'dd_seq_wrte', 'x'; known tests: dd_seq_write,"),
        ("fast", [], "unknown profile 'fast'; profiles: quick, standard, evidence, full"),
        ("standard", "dd_seq_write", "tests must be a list of test ids, got the string 'dd_seq_write'"),
    ],
)
def test_unknown_tests_and_profiles_are_refused(profile, tests, message):
    with pytest.raises(PlanError) as error:
        select_tests(profile, tests)
    assert str(error.value).startswith(message)


# --- the plan ---------------------------------------------------------------------------------------

def test_standard_plan_is_sized_from_memory_and_every_job_is_exact():
    plan = build_plan([disk()], settings())
    assert plan.test_file_bytes == 256 * MIB and plan.repeats == 3 and plan.max_repeats == 5
    assert plan.run_dirs == ["/srv/a/diskproof-r1"]
    jobs = {job["test"]: job for job in plan.jobs}
    assert list(jobs) == [test for test in PROFILES["standard"].tests if test != "fio_verify"] + [
        "fio_verify_1of2", "fio_verify_2of2"]
    test_file = "/srv/a/diskproof-r1/diskproof.testfile"
    expected_write = ["dd", "if=/dev/zero", "of=" + test_file, "bs=1048576", "count=256", "conv=fdatasync"]
    assert jobs["dd_seq_write"]["argv"] == expected_write
    assert jobs["dd_seq_write"]["creates"] == test_file
    assert jobs["dd_seq_write_direct"]["argv"][-2:] == ["oflag=direct", "conv=notrunc"]
    assert jobs["dd_seq_write_direct"]["creates"] is None
    assert jobs["dd_seq_read"]["argv"] == ["dd", "if=" + test_file, "of=/dev/null", "bs=1048576", "count=256", "iflag=direct"]
    assert all(job["drop_caches"] for job in plan.jobs)
    rand = jobs["fio_rand_read"]
    # fio's read-only safety check: a read job runs with --readonly (a job-file option does not exist).
    assert rand["argv"] == ["fio", "--output-format=json", "--readonly"]
    assert jobs["fio_rand_write"]["argv"] == jobs["fio_mixed_70_30"]["argv"] == ["fio", "--output-format=json"]
    assert rand["fio"] == {"name": "fio_rand_read", "filename": test_file, "rw": "randread", "bs": 4096, "iodepth": 32,
                           "size": 256 * MIB, "runtime": 30, "ramp_time": 2, "direct": 1, "ioengine": "libaio",
                           "rwmixread": None, "fdatasync": None, "readonly": True, "raw": False,
                           "max_latency": None, "rate_min": None}
    assert jobs["fio_rand_read_qd1"]["fio"]["iodepth"] == 1
    assert jobs["fio_mixed_70_30"]["fio"]["rwmixread"] == 70
    commit = jobs["fio_commit_rate"]["fio"]
    assert (commit["bs"], commit["direct"], commit["fdatasync"], commit["ioengine"]) == (8192, 0, 1, "psync")
    sysbench = jobs["sysbench_rndrd"]
    assert sysbench["workdir"] == sysbench["chdir"] == "/srv/a/diskproof-r1/sysbench_rndrd"
    assert sysbench["setup"][0][-1] == "prepare" and sysbench["cleanup"][0][-1] == "cleanup"
    assert "--file-extra-flags=direct" in sysbench["argv"] and "--file-total-size=268435456" in sysbench["argv"]
    expected_ioping = ["ioping", "-B", "-D", "-c", "30", "-i", "100ms", "-s", "4096", "-S", "268435456", test_file]
    assert jobs["ioping_latency"]["argv"] == expected_ioping
    assert all(job["target"]["path"] == "/srv/a" and job["target"]["test_file"] == test_file for job in plan.jobs)


def test_fio_verify_is_two_write_and_verify_passes_each_of_its_own_generation():
    plan = build_plan([disk()], settings(tests=("fio_verify",)))
    assert [job["test"] for job in plan.jobs] == ["dd_seq_write", "fio_verify_1of2", "fio_verify_2of2"]
    first, second = plan.jobs[1:]
    tag = binascii.crc32(b"r1") & 0xFFFF
    for number, job in enumerate((first, second), 1):
        generation = tag << 16 | number
        # The whole test file once, sequential 4 KiB blocks, O_DIRECT: not timed, so every block is read back.
        assert job["fio"] == {"name": "fio_verify_%dof2" % number, "filename": "/srv/a/diskproof-r1/diskproof.testfile",
                              "rw": "write", "bs": 4096, "iodepth": 16, "size": 256 * MIB, "runtime": None,
                              "ramp_time": None, "direct": 1, "ioengine": "libaio", "rwmixread": None,
                              "fdatasync": None, "readonly": False, "raw": False, "time_based": False,
                              "verify_pattern": "0x%08x%%o" % generation, "max_latency": None, "rate_min": None}
        assert job["params"]["verify_generation"] == generation and job["params"]["verify_pass"] == number
        assert (job["repeats"], job["max_repeats"], job["params"]["judged_on"]) == (1, 1, "bytes_per_s")
        assert job["estimate_s"] == pytest.approx(2 * 256 * MIB / 150e6)


def test_include_verify_adds_fio_verify_to_quick_and_an_explicit_list_wins():
    quick = build_plan([disk()], settings(profile="quick", include_verify=True))
    assert [job["test"] for job in quick.jobs][-2:] == ["fio_verify_1of2", "fio_verify_2of2"]
    assert "fio_verify" in quick.tests
    plain = build_plan([disk()], settings(profile="quick"))
    assert not any(job["test"].startswith("fio_verify") for job in plain.jobs)
    explicit = build_plan([disk()], settings(profile="quick", include_verify=True, tests=("fio_rand_read",)))
    assert [job["test"] for job in explicit.jobs] == ["dd_seq_write", "fio_rand_read"]


def test_fio_verify_writes_a_raw_device_only_behind_raw_write():
    plan = build_plan([raw(granted="raw_write")], settings(tests=("fio_verify",)))
    assert [(job["test"], job["fio"]["filename"], job["fio"]["size"]) for job in plan.jobs] == [
        ("fio_verify_1of2", "/dev/sdc", 256 * MIB), ("fio_verify_2of2", "/dev/sdc", 256 * MIB)]
    # In a profile a raw_read device skips it, saying why; asked for by name, it refuses the plan (the interlock).
    skipped = build_plan([raw()], settings(profile="standard"))
    assert {"target": "/dev/sdc", "test": "fio_verify", "reason": "needs_raw_write"} in skipped.skipped
    with pytest.raises(PlanError, match="raw_read: fio_verify writes to the device"):
        build_plan([raw()], settings(tests=("fio_verify",)))


def test_a_cache_fence_sizes_buffered_files_and_fences_only_buffered_tests():
    plan = build_plan([disk()], settings(memory_bytes=64 * GIB, cache_fence_bytes=512 * MIB, profile="full"))
    assert plan.cache_basis_bytes == 512 * MIB and plan.test_file_bytes == GIB
    fenced = sorted({job["test"] for job in plan.jobs if job["cache_fence_bytes"]})
    assert fenced == ["bonnie", "dd_block_sweep_100k", "dd_block_sweep_10m", "dd_block_sweep_1m", "dd_block_sweep_4k",
                      "dd_seq_write", "fio_commit_rate", "sysbench_fsync"]
    bonnie = next(job for job in plan.jobs if job["test"] == "bonnie")
    assert bonnie["argv"][bonnie["argv"].index("-s") + 1] == "1024" and bonnie["argv"][bonnie["argv"].index("-r") + 1] == "512"
    assert bonnie["workdir_owner"] == "nobody" and bonnie["argv"][bonnie["argv"].index("-u") + 1] == "nobody"


def test_block_sweep_covers_the_four_block_sizes_with_sync():
    plan = build_plan([disk()], settings(tests=("dd_block_sweep",)))
    sweep = [job for job in plan.jobs if job["test"].startswith("dd_block_sweep")]
    assert [job["params"]["block_size"] for job in sweep] == [4096, 102400, 1048576, 10485760]
    assert all("conv=fdatasync,notrunc" in job["argv"] for job in sweep)


def test_zcav_sweep_reads_evenly_spaced_offsets_of_the_test_file():
    plan = build_plan([disk()], settings(tests=("zcav_sweep",)))
    zcav = plan.jobs[-1]
    assert zcav["argv"] is None and len(zcav["sweep"]) == 16 and zcav["repeats"] == 1
    assert zcav["sweep"][0]["argv"] == ["dd", "if=/srv/a/diskproof-r1/diskproof.testfile", "of=/dev/null", "bs=1048576",
                                        "count=16", "skip=0", "iflag=direct"]
    assert zcav["sweep"][-1]["offset_bytes"] == 240 * MIB


def test_targets_run_one_after_the_other_each_writing_first():
    plan = build_plan([disk("/srv/a"), disk("/srv/b/", device="sdc")], settings(tests=("fio_rand_read",)))
    assert [(job["test"], job["target"]["path"]) for job in plan.jobs] == [
        ("dd_seq_write", "/srv/a"), ("fio_rand_read", "/srv/a"), ("dd_seq_write", "/srv/b"), ("fio_rand_read", "/srv/b")]


def test_profile_defaults_and_overrides():
    quick = build_plan([disk()], settings(profile="quick"))
    assert (quick.repeats, quick.max_repeats, quick.fio_runtime_s) == (2, 3, 10)
    custom = build_plan([disk()], settings(profile="quick", repeats=4, fio_runtime_s=7))
    assert (custom.repeats, custom.max_repeats, custom.fio_runtime_s) == (4, 4, 7)


def test_plan_lines_print_sizes_space_and_estimates():
    plan = build_plan([disk()], settings(profile="quick"))
    lines = plan_lines(plan, 128 * MIB, None)
    count = len(PROFILES["quick"].tests)
    assert lines[0].startswith("profile quick: %d tests, %d jobs, 2 run(s) each (up to 3 when unstable), about "
                               % (count, count))
    assert lines[1] == "test file 256.0 MiB = 2 x memory figure 128.0 MiB, rounded to whole blocks"
    assert lines[2].startswith("/srv/a: needs 256.0 MiB, keeps 10.0 GiB free of 100.0 GiB available")
    assert any(line.startswith("fio_rand_read ") and "~24s" in line for line in lines)


@pytest.mark.parametrize(
    ("targets", "overrides", "message"),
    [
        ([], {}, "diskproof_targets must be a non-empty list"),
        ([disk("srv/a")], {}, "targets[0].path must be an absolute directory path, got 'srv/a'"),
        ([disk("/srv/a;rm -rf /")], {}, "targets[0].path '/srv/a;rm -rf /' contains ' ', ';'"),
        ([disk("/srv/a:b")], {}, "targets[0].path '/srv/a:b' contains ':'"),
        ([disk("/srv/${HOME}")], {}, "targets[0].path '/srv/${HOME}' contains '$', '{', '}'"),
        ([disk("/srv/a"), disk("/srv/a/")], {}, "diskproof_targets lists the same directory more than once: /srv/a"),
        ([disk(logical=4096, physical=4096, device="nvme0n1")], {"random_block_size": 2048},
         "/srv/a: random_block_size 2048 is not a multiple of the logical block size: nvme0n1 has logical block size 4096"),
        ([disk()], {"random_block_size": 0}, "random_block_size must be a whole number >= 1, got 0"),
        ([disk()], {"sequential_block_size": 1000},
         "/srv/a: sequential_block_size 1000 is not a multiple of the logical block size: sdb has logical block size 512 "
         "and physical block size 4096, so O_DIRECT would fail with EINVAL; use a multiple of 4096 such as 4096"),
        ([disk(free=int(1.2 * GIB), size=4 * GIB)], {}, "not enough free space on /srv/a: the tests need"),
        ([disk()], {"memory_bytes": -1}, "memory_bytes must be a whole number >= 1048576, got -1"),
        ([disk()], {"memory_bytes": "8G"}, "memory_bytes must be a whole number >= 1048576, got '8G'"),
        ([disk()], {"fio_runtime_s": 0}, "fio_runtime_s must be a whole number >= 1, got 0"),
        ([disk()], {"repeats": 3, "max_repeats": 2}, "max_repeats (2) must be >= repeats (3)"),
        ([disk()], {"max_cv": 5}, "max_cv must be a fraction between 0 and 1"),
        ([disk()], {"run_id": "../x"}, "run_id must be 1-64 letters, digits"),
        ([disk()], {"bonnie_user": "root; id"}, "bonnie_user must be a plain user name"),
        ([disk()], {"cache_fence_bytes": 4096}, "cache_fence_bytes must be a whole number >= 16777216, got 4096"),
        ([disk()], {"tests": ("nope",)}, "unknown test id(s) 'nope'"),
    ],
)
def test_bad_input_is_refused_with_a_message_that_says_what_to_fix(targets, overrides, message):
    with pytest.raises(PlanError) as error:
        build_plan(targets, settings(**overrides))
    assert str(error.value).startswith(message), str(error.value)


def test_misaligned_size_is_checked_only_for_tests_that_use_it_directly():
    # 6 KiB random blocks on a 4 KiB-sector disk: refused with fio_rand_read, fine for a buffered dd only.
    target = disk(logical=4096, physical=4096)
    with pytest.raises(PlanError):
        build_plan([target], settings(tests=("fio_rand_read",), random_block_size=6144))
    assert build_plan([target], settings(tests=("dd_seq_write",), random_block_size=6144)).tests == ["dd_seq_write"]


def test_disk_identity_from_discover_facts_reaches_every_job_target():
    resolved = [
        {"target": {"path": "/srv/a/"}, "class": "filesystem", "disks": ["sdb"]},
        {"target": {"path": "/srv/md"}, "class": "filesystem", "disks": ["sdc", "sdd"]},
        {"target": {"device": "/dev/sde"}, "class": "raw_read", "disks": ["sde"]},
    ]
    disks = {"sdb": {"model": "ST4000NM0035", "serial": "ZC1A2B3C", "wwn": "0x5000c500a1b2c3d4", "firmware": "TN05",
                     "size_bytes": 4000787030016, "rotational": True, "transport": "sata", "health": "passed"}}
    identities = target_identities(resolved, disks)
    assert identities == {
        "/srv/a": {"device": "sdb", "disks": ["sdb"], "model": "ST4000NM0035", "serial": "ZC1A2B3C", "wwn": "0x5000c500a1b2c3d4",
                   "firmware": "TN05", "size_bytes": 4000787030016, "rotational": True, "transport": "sata"},
        "/srv/md": {"disks": ["sdc", "sdd"], "model": None, "serial": None, "wwn": None, "firmware": None,
                    "size_bytes": None, "rotational": None, "transport": None},
        # a raw device target, keyed as the target names it
        "/dev/sde": {"device": "sde", "disks": ["sde"], "model": None, "serial": None, "wwn": None, "firmware": None,
                     "size_bytes": None, "rotational": None, "transport": None},
    }
    plan = build_plan([disk("/srv/a", identity=identities["/srv/a"]), disk("/srv/md", device="md0",
                                                                           identity=identities["/srv/md"])],
                      settings(tests=("dd_seq_write",)))
    assert plan.jobs[0]["target"] == dict(identities["/srv/a"], path="/srv/a",
                                          test_file="/srv/a/diskproof-r1/diskproof.testfile")
    assert plan.jobs[1]["target"]["device"] == "md0" and plan.jobs[1]["target"]["disks"] == ["sdc", "sdd"]


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings().run_id = "x"  # type: ignore[misc]


def test_raw_outputs_get_one_directory_per_target():
    plan = build_plan([disk("/srv/a"), disk("/srv/b/c", device="sdc")],
                      settings(tests=("dd_seq_write",), keep_raw_dir="/var/tmp/evidence"))
    assert plan.raw_dirs == ["/var/tmp/evidence/srv_a", "/var/tmp/evidence/srv_b_c"]
    assert [job["keep_raw"] for job in plan.jobs] == plan.raw_dirs
    assert build_plan([disk()], settings(tests=("dd_seq_write",))).jobs[0]["keep_raw"] is None
    with pytest.raises(PlanError, match="keep_raw_dir must be an absolute path"):
        build_plan([disk()], settings(keep_raw_dir="evidence"))


# --- raw block-device targets ------------------------------------------------------------------------

def raw(device="/dev/sdc", size=GIB, granted="raw_read", logical=512, physical=4096, node=None, kname=None, **extra):
    return TargetFacts(path=device, kind="raw", device_path=node or device, device_size_bytes=size, granted_class=granted,
                       device=kname or device.rsplit("/", 1)[-1], logical_block_size=logical, physical_block_size=physical,
                       **extra)


# What the catalog declares each test does to a raw device (CatalogEntry.raw), in catalog order. The declaration is
# checked against the commands the plan makes (test_every_read_test_reads_a_raw_read_device_with_read_only_commands).
# raw_write devices only (never a directory), not in the full profile: tests/unit/.../test_ssd_steady_state.py
SSD_TESTS = ["ssd_precondition", "ssd_steady_rand_write", "ssd_steady_rand_read"]
READ_TESTS = [test for test, entry in CATALOG.items() if entry.raw == "read"]
WRITE_TESTS = [test for test, entry in CATALOG.items() if entry.raw == "write" and test not in SSD_TESTS
               and test != "burnin"]
FILESYSTEM_TESTS = [test for test, entry in CATALOG.items() if entry.raw == ""]


def read_only_command(argv, device):
    """Whether a command only reads the device: dd from it to /dev/null, fio --readonly, ioping without -W."""
    if argv[0] == "dd":
        return "if=" + device in argv and "of=/dev/null" in argv
    if argv[0] == "fio":
        return "--readonly" in argv
    if argv[0] == "ioping":
        return not any(arg.startswith("-W") for arg in argv) and argv[-1] == device
    return False


def test_every_read_test_reads_a_raw_read_device_with_read_only_commands():
    assert READ_TESTS and WRITE_TESTS and FILESYSTEM_TESTS
    plan = build_plan([raw(size=GIB)], settings(tests=tuple(READ_TESTS)))
    assert sorted({job["test"] for job in plan.jobs}) == sorted(READ_TESTS)
    for job in plan.jobs:
        commands = [step["argv"] for step in job["sweep"]] if job["sweep"] else [job["argv"]]
        assert job["setup"] == [] and job["cleanup"] == [] and job["creates"] is None, job["test"]
        assert all(read_only_command(argv, "/dev/sdc") for argv in commands), (job["test"], commands)
        assert not job["fio"] or (job["fio"]["readonly"] is True and job["fio"]["filename"] == "/dev/sdc"
                                  and job["fio"]["rw"] in ("read", "randread")), job["test"]


def extent(job):
    """(first byte, end byte) every command of a job may touch on its file or device."""
    ends = []
    commands = [step["argv"] for step in job["sweep"]] if job["sweep"] else [job["argv"]]
    for argv in commands:
        if argv[0] == "dd":
            values = dict(arg.split("=", 1) for arg in argv[1:] if "=" in arg)
            block = int(values["bs"])
            ends.append((int(values.get("skip", values.get("seek", 0))) + int(values["count"])) * block)
        elif argv[0] == "ioping":
            ends.append(int(argv[argv.index("-S") + 1]))
    if job["fio"]:
        ends.append(job["fio"]["size"])
    return max(ends)


def test_raw_read_runs_only_the_read_tests_on_the_device_node_and_creates_nothing():
    plan = build_plan([raw(size=GIB)], settings(profile="full"))
    assert plan.tests == [test for test in CATALOG if test in READ_TESTS]
    assert plan.run_dirs == [] and plan.space == {}
    assert {job["test"] for job in plan.jobs} == set(READ_TESTS)
    for job in plan.jobs:
        assert job["creates"] is None and job["workdir"] is None and job["setup"] == []
        assert job["direction"] == ("read" if job["tool"] != "fio" else None)   # fio says its own direction
        assert job["target"] == {"path": "/dev/sdc", "kind": "raw", "device_path": "/dev/sdc", "device_size_bytes": GIB,
                                 "test_file": None, "class": "raw_read", "device": "sdc"}
        assert extent(job) <= GIB
    skipped = {(entry["test"], entry["reason"]) for entry in plan.skipped}
    assert skipped == {(test, "needs_raw_write") for test in WRITE_TESTS} | {
        (test, "needs_filesystem") for test in FILESYSTEM_TESTS}
    assert plan.raw_targets == {"/dev/sdc": {"device_path": "/dev/sdc", "device": "sdc", "class": "raw_read",
                                             "size_bytes": GIB, "logical_block_size": 512, "physical_block_size": 4096}}
    write_warning, fs_warning = plan.warnings
    assert write_warning.startswith("/dev/sdc (raw_read): skipped %s: they write to the device" % ", ".join(WRITE_TESTS))
    assert "diskproof_destructive" in write_warning and "diskproof_destructive_allow" in write_warning
    assert fs_warning.startswith("/dev/sdc (raw_read): skipped %s: they need a filesystem" % ", ".join(FILESYSTEM_TESTS))


def test_raw_jobs_read_the_device_itself_with_read_only_commands():
    plan = build_plan([raw(size=GIB)], settings(profile="full"))   # 128 MiB memory figure: 256 MiB test size
    jobs = {job["test"]: job for job in plan.jobs}
    assert jobs["dd_seq_read"]["argv"] == ["dd", "if=/dev/sdc", "of=/dev/null", "bs=1048576", "count=256", "iflag=direct"]
    for test in ("fio_rand_read", "fio_rand_read_qd1", "fio_seq_read"):
        job = jobs[test]
        assert job["argv"] == ["fio", "--output-format=json", "--readonly"]
        assert job["fio"]["filename"] == "/dev/sdc" and job["fio"]["raw"] is True and job["fio"]["readonly"] is True
        assert job["fio"]["size"] == 256 * MIB
    assert jobs["ioping_latency"]["argv"] == ["ioping", "-B", "-D", "-c", "30", "-i", "100ms", "-s", "4096",
                                              "-S", str(GIB), "/dev/sdc"]
    assert not any(arg.startswith("of=/dev/sd") for job in plan.jobs for arg in job["argv"] or [])


def test_raw_sizes_stay_inside_a_device_smaller_than_the_test_file():
    # 100 MiB + 4 KiB + 512 B device, 256 MiB test size: every size is the device rounded down to the block size.
    size = 100 * MIB + 4096 + 512
    plan = build_plan([raw(size=size)], settings(profile="full"))
    jobs = {job["test"]: job for job in plan.jobs}
    assert jobs["dd_seq_read"]["argv"][4] == "count=100" and jobs["dd_seq_read"]["params"]["size_bytes"] == 100 * MIB
    assert jobs["fio_seq_read"]["fio"]["size"] == 100 * MIB
    assert jobs["fio_rand_read"]["fio"]["size"] == 100 * MIB + 4096
    assert jobs["ioping_latency"]["argv"][10] == str(100 * MIB + 4096)
    assert all(extent(job) <= size for job in plan.jobs)


def test_the_zcav_sweep_spans_the_whole_raw_device():
    # The test size is only 32 MiB (16 MiB memory figure), the device 1 GiB + 512 B: the sweep still covers all of it.
    plan = build_plan([raw(size=GIB + 512)], settings(memory_bytes=16 * MIB, tests=("zcav_sweep",)))
    (zcav,) = plan.jobs
    offsets = [step["offset_bytes"] for step in zcav["sweep"]]
    chunk = zcav["params"]["chunk_bytes"]
    assert chunk == 64 * MIB and len(offsets) == 16 and zcav["params"]["span_bytes"] == GIB
    assert offsets[0] == 0 and offsets[-1] + chunk == GIB
    assert all(offset % MIB == 0 for offset in offsets)
    assert zcav["sweep"][-1]["argv"] == ["dd", "if=/dev/sdc", "of=/dev/null", "bs=1048576", "count=64",
                                         "skip=%d" % (offsets[-1] // MIB), "iflag=direct"]
    assert extent(zcav) <= GIB + 512


def test_raw_reads_need_no_prior_write():
    plan = build_plan([raw()], settings(tests=("fio_rand_read", "dd_seq_read")))
    assert plan.tests == ["fio_rand_read", "dd_seq_read"] and [job["test"] for job in plan.jobs] == plan.tests
    assert plan.skipped == [] and plan.warnings == []   # dd_seq_write was never asked for: nothing to say


def test_a_filesystem_target_still_writes_its_test_file_first_next_to_a_raw_one():
    plan = build_plan([disk(), raw()], settings(tests=("fio_rand_read",)))
    assert [(job["test"], job["target"]["path"]) for job in plan.jobs] == [
        ("dd_seq_write", "/srv/a"), ("fio_rand_read", "/srv/a"), ("fio_rand_read", "/dev/sdc")]
    assert plan.run_dirs == ["/srv/a/diskproof-r1"] and list(plan.space) == ["/srv/a"]


def test_an_explicit_write_test_on_a_raw_read_target_is_refused_naming_the_interlock():
    with pytest.raises(PlanError) as error:
        build_plan([disk(), raw()], settings(tests=("dd_seq_read", "fio_rand_write", "fio_commit_rate")))
    message = str(error.value)
    assert message.startswith("targets[1] (/dev/sdc) is raw_read: fio_rand_write, fio_commit_rate write to the device, "
                              "and writing a bare device needs class raw_write")
    assert "diskproof_destructive: true" in message and "diskproof_destructive_allow" in message
    assert "docs/discover.md" in message


def test_filesystem_tests_asked_explicitly_are_skipped_on_a_raw_target_only():
    plan = build_plan([disk(), raw()], settings(tests=("bonnie", "dd_seq_read")))
    assert [(job["test"], job["target"]["path"]) for job in plan.jobs] == [
        ("dd_seq_write", "/srv/a"), ("bonnie", "/srv/a"), ("dd_seq_read", "/srv/a"), ("dd_seq_read", "/dev/sdc")]
    assert plan.skipped == [{"target": "/dev/sdc", "test": "bonnie", "reason": "needs_filesystem"}]
    with pytest.raises(PlanError, match=r"^none of the tests bonnie, sysbench_fsync can run on these targets: "
                                        r"/dev/sdc \(raw_read\): skipped bonnie, sysbench_fsync: they need a filesystem"):
        build_plan([raw()], settings(tests=("bonnie", "sysbench_fsync")))


def test_a_profile_on_raw_read_skips_with_reasons_instead_of_failing():
    plan = build_plan([raw()], settings(profile="quick"))
    quick = PROFILES["quick"].tests
    assert plan.tests == [test for test in quick if test in READ_TESTS] and "dd_seq_write" in quick
    skipped = [(test, "needs_filesystem" if test in FILESYSTEM_TESTS else "needs_raw_write")
               for test in quick if test not in READ_TESTS]
    assert [(entry["test"], entry["reason"]) for entry in plan.skipped] == skipped
    lines = plan_lines(plan, 128 * MIB, None)
    assert lines[2] == ("/dev/sdc: raw device /dev/sdc (raw_read), 1.0 GiB, logical block 512 B: tests run on the device "
                        "node, each within min(test file, device), the ZCAV sweep over the whole device; nothing is "
                        "created")
    assert lines[-2].startswith("warning: /dev/sdc (raw_read): skipped %s: they write" % ", ".join(
        test for test, reason in skipped if reason == "needs_raw_write"))
    assert lines[-1].startswith("warning: /dev/sdc (raw_read): skipped %s: they need a filesystem" % ", ".join(
        test for test, reason in skipped if reason == "needs_filesystem"))


def test_raw_write_also_runs_the_write_tests_within_the_device():
    size = 200 * MIB
    plan = build_plan([raw(size=size, granted="raw_write")], settings(profile="full"))
    assert plan.tests == [test for test in CATALOG if test in READ_TESTS + WRITE_TESTS]
    jobs = {job["test"]: job for job in plan.jobs}
    assert jobs["dd_seq_write_direct"]["argv"] == ["dd", "if=/dev/zero", "of=/dev/sdc", "bs=1048576", "count=200",
                                                   "oflag=direct", "conv=notrunc"]
    assert jobs["dd_seq_write_direct"]["creates"] is None and jobs["dd_seq_write_direct"]["direction"] == "write"
    commit = jobs["fio_commit_rate"]["fio"]
    assert (commit["filename"], commit["direct"], commit["ioengine"], commit["fdatasync"]) == ("/dev/sdc", 0, "psync", 1)
    assert commit["size"] == size and jobs["fio_commit_rate"]["cache_fence_bytes"] is None
    for test in ("fio_seq_write", "fio_rand_write", "fio_rand_write_qd1", "fio_mixed_70_30", "fio_commit_rate"):
        assert jobs[test]["argv"] == ["fio", "--output-format=json"] and jobs[test]["fio"]["readonly"] is False
    assert all(extent(job) <= size for job in plan.jobs)
    assert all(job["target"]["class"] == "raw_write" for job in plan.jobs)
    assert {entry["test"] for entry in plan.skipped} == set(FILESYSTEM_TESTS)


@pytest.mark.parametrize(
    ("targets", "overrides", "message"),
    [
        ([raw(granted=None)], {}, "targets[0] (/dev/sdc): the device has no granted class (got None): run the discover "
                                  "role first; it grants raw_read/raw_write"),
        ([raw(granted="filesystem")], {}, "targets[0] (/dev/sdc): the device has no granted class"),
        ([raw("sdc")], {}, "targets[0].device must be the absolute path of a block device such as /dev/sdb, got 'sdc'"),
        ([raw("/dev/disk/by-path/pci-0000:00:1f.2-ata-1")], {},
         "targets[0].device '/dev/disk/by-path/pci-0000:00:1f.2-ata-1' (node '/dev/disk/by-path/pci-0000:00:1f.2-ata-1') "
         "contains ':'"),
        ([raw(size=0)], {}, "targets[0] (/dev/sdc): device_size_bytes must be a whole number >= 512, got 0"),
        ([raw(), raw("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", node="/dev/sdc")], {},
         "diskproof_targets lists the same device more than once: /dev/sdc"),
        ([disk(device="sdc"), raw(granted="raw_write")], {},
         "targets[1] (/dev/sdc) is raw_write but the directory target /srv/a is on the same disk sdc"),
        ([raw(logical=4096, physical=4096)], {"random_block_size": 2048},
         "/dev/sdc: random_block_size 2048 is not a multiple of the logical block size: sdc has logical block size 4096"),
        ([raw(size=512 * 1024)], {"tests": ("dd_seq_read",)},
         "dd_seq_read on /dev/sdc: the device (524288 bytes) is smaller than one 1048576-byte block"),
        ([TargetFacts(path="/dev/sdc", kind="block")], {}, "targets[0]: kind must be filesystem or raw, got 'block'"),
    ],
)
def test_bad_raw_targets_are_refused(targets, overrides, message):
    with pytest.raises(PlanError) as error:
        build_plan(targets, settings(**overrides))
    assert str(error.value).startswith(message), str(error.value)


def test_a_raw_read_device_under_a_mounted_filesystem_target_may_still_be_read():
    plan = build_plan([disk(device="sdc"), raw()], settings(tests=("dd_seq_read",)))
    assert [job["target"]["path"] for job in plan.jobs] == ["/srv/a", "/srv/a", "/dev/sdc"]


def test_a_by_id_target_runs_on_its_node_and_keeps_its_name():
    target = raw("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", node="/dev/sdc", kname="sdc",
                 identity={"device": "sdc", "disks": ["sdc"], "serial": "ZC1"})
    plan = build_plan([target], settings(tests=("dd_seq_read",), keep_raw_dir="/var/tmp/evidence"))
    (job,) = plan.jobs
    assert job["argv"][1] == "if=/dev/sdc"
    assert job["target"]["path"] == "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4" and job["target"]["serial"] == "ZC1"
    assert job["keep_raw"] == "/var/tmp/evidence/dev_sdc" and plan.raw_dirs == ["/var/tmp/evidence/dev_sdc"]


# --- space per filesystem: targets sharing one st_dev are summed at the fullest moment of the run ---------------

def on_fs(path, free=GIB + 256 * MIB, size=4 * GIB, fs="8:17", **extra):
    """A directory target on the filesystem ``fs`` (st_dev major:minor) mounted at /srv, device sdb1."""
    return disk(path, free=free, size=size, filesystem_id=fs, mount_point="/srv", filesystem_device="sdb1", **extra)


THREE = ["/srv/a", "/srv/b", "/srv/c"]


def test_each_test_file_is_removed_after_the_last_test_that_reads_it():
    plan = build_plan([on_fs(path) for path in THREE], settings(tests=("dd_seq_write", "fio_rand_read")))
    removals = [(job["test"], job["target"]["path"], job["cleanup"]) for job in plan.jobs if job["cleanup"]]
    assert removals == [("fio_rand_read", path, [["rm", "-f", "--", path + "/diskproof-r1/diskproof.testfile"]])
                        for path in THREE]
    # sysbench keeps its own cleanup first; the test file goes after the last test that uses it (fio_verify's last
    # pass here).
    standard = build_plan([on_fs("/srv/a", free=2 * GIB)], settings())
    cleanups = {job["test"]: job["cleanup"] for job in standard.jobs if job["cleanup"]}
    assert list(cleanups) == ["sysbench_rndrd", "fio_verify_2of2"]
    assert cleanups["sysbench_rndrd"][0][-1] == "cleanup"
    assert cleanups["fio_verify_2of2"] == [["rm", "-f", "--", "/srv/a/diskproof-r1/diskproof.testfile"]]
    # A test file that only dd_seq_write uses is removed by that job.
    (only,) = build_plan([on_fs("/srv/a")], settings(tests=("dd_seq_write",))).jobs
    assert only["cleanup"] == [["rm", "-f", "--", "/srv/a/diskproof-r1/diskproof.testfile"]]


def test_three_targets_on_one_filesystem_fit_one_test_file_at_a_time():
    # 256 MiB test files, 1 GiB reserve (the minimum: 5 % of 4 GiB is less): room for exactly one at a time.
    plan = build_plan([on_fs(path) for path in THREE], settings(tests=("dd_seq_write", "dd_seq_read")))
    assert plan.filesystems == {"8:17": {
        "mount_point": "/srv", "device": "sdb1", "targets": THREE, "peak_bytes": 256 * MIB,
        "peak_job": {"test": "dd_seq_write", "target": "/srv/a"}, "free_bytes": GIB + 256 * MIB,
        "size_bytes": 4 * GIB, "reserve_bytes": GIB}}
    assert [plan.space[path]["filesystem"] for path in THREE] == ["8:17"] * 3
    assert all(plan.space[path]["needed_bytes"] == 256 * MIB for path in THREE)
    lines = plan_lines(plan, 128 * MIB, None)
    assert "filesystem /srv (device sdb1, 8:17): targets /srv/a, /srv/b, /srv/c: at most 256.0 MiB at once, keeps " \
           "1.0 GiB free of 1.2 GiB available" in lines


def test_one_byte_short_of_the_peak_is_refused_naming_the_filesystem_its_targets_and_the_figures():
    with pytest.raises(PlanError) as error:
        build_plan([on_fs(path, free=GIB + 256 * MIB - 1) for path in THREE],
                   settings(tests=("dd_seq_write", "dd_seq_read")))
    assert str(error.value).startswith(
        "not enough free space on the filesystem mounted at /srv (device sdb1, 8:17) holding the targets /srv/a, "
        "/srv/b, /srv/c: the tests need 268435456 B (256.0 MiB) at once (while dd_seq_write runs on /srv/a) and the "
        "filesystem must keep 1073741824 B (1.0 GiB) free (max(5% of 4294967296 B (4.0 GiB), 1073741824 B (1.0 GiB))), "
        "but only 1342177279 B (1.2 GiB) is available;"), str(error.value)


def test_the_peak_sums_the_test_file_with_extra_files_written_while_it_is_kept():
    # Standard profile: ioping reads the test file after sysbench, so the 256 MiB test file and sysbench's
    # 256 MiB of files are there at once; each target alone fits 1 GiB + 512 MiB free, so do all three.
    targets = [on_fs(path, free=GIB + 512 * MIB) for path in THREE]
    plan = build_plan(targets, settings())
    assert plan.filesystems["8:17"]["peak_bytes"] == 512 * MIB
    assert plan.filesystems["8:17"]["peak_job"] == {"test": "sysbench_rndrd", "target": "/srv/a"}
    with pytest.raises(PlanError) as error:
        build_plan([dataclasses.replace(target, free_bytes=GIB + 511 * MIB) for target in targets], settings())
    assert "need 536870912 B (512.0 MiB) at once (while sysbench_rndrd runs on /srv/a)" in str(error.value)
    # sysbench after the last read of the test file: the test file is gone by then, so the peak is one of them.
    later = build_plan(targets, settings(tests=("dd_seq_write", "dd_seq_read", "sysbench_rndrd")))
    assert later.filesystems["8:17"]["peak_bytes"] == 256 * MIB


def test_filesystems_are_grouped_by_st_dev_and_checked_apart():
    # /srv/a and /srv/c share 8:17; /data/b is its own filesystem with just enough room for itself.
    targets = [on_fs("/srv/a"), disk("/data/b", free=GIB + 256 * MIB, size=4 * GIB, device="sdc", filesystem_id="8:33",
                                     mount_point="/data", filesystem_device="sdc1"), on_fs("/srv/c")]
    plan = build_plan(targets, settings(tests=("dd_seq_write",)))
    assert {fs: figures["targets"] for fs, figures in plan.filesystems.items()} == {
        "8:17": ["/srv/a", "/srv/c"], "8:33": ["/data/b"]}
    assert [plan.space[path]["filesystem"] for path in ("/srv/a", "/data/b", "/srv/c")] == ["8:17", "8:33", "8:17"]
    # The least free space any target of a filesystem saw is the one checked (it was read target by target).
    with pytest.raises(PlanError) as error:
        build_plan([on_fs("/srv/a"), on_fs("/srv/c", free=GIB)], settings(tests=("dd_seq_write",)))
    assert "holding the targets /srv/a, /srv/c" in str(error.value) and "only 1073741824 B" in str(error.value)
    # Without a filesystem id (a caller that did not stat it) each target is its own filesystem, as before.
    targets = [disk("/srv/a", free=GIB + 256 * MIB, size=4 * GIB), disk("/srv/b", free=GIB + 256 * MIB, size=4 * GIB)]
    plan = build_plan(targets, settings(tests=("dd_seq_write",)))
    assert sorted(figures["targets"] for figures in plan.filesystems.values()) == [["/srv/a"], ["/srv/b"]]


@pytest.mark.parametrize("name", ["fio_max_read_latency_ms", "fio_max_write_latency_ms", "fio_min_read_mb_per_s",
                                  "fio_min_write_mb_per_s"])
@pytest.mark.parametrize("value", [-1, True, "5", 1e9])
def test_fail_fast_limits_must_be_numbers_of_at_least_zero(name, value):
    with pytest.raises(PlanError, match="%s must be a number >= 0 \\(0: off\\)" % name):
        build_plan([disk()], settings(**{name: value}))


def raw_write_disk(size=64 * MIB):
    return TargetFacts(path="/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", kind="raw", device_path="/dev/sdc", device="sdc",
                       device_size_bytes=size, granted_class="raw_write")


def test_burnin_cycles_fill_the_budget_at_the_expected_speed_over_the_whole_device():
    # 64 MiB device, 32 MiB/s expected: 4 s a cycle (write and read back); 36 s of budget: 9 cycles.
    plan = build_plan([raw_write_disk()], settings(profile="burnin", memory_bytes=16 * MIB, burnin_hours=0.01,
                                                   expected_bytes_per_s=32 * MIB))
    cycles = [job for job in plan.jobs if job["test"].startswith("burnin_")]
    assert [job["test"] for job in cycles] == ["burnin_%dof9" % number for number in range(1, 10)]
    first = cycles[0]
    # all of the device, not the 2 x memory the other tests use
    assert first["fio"]["size"] == 64 * MIB and first["params"]["size_bytes"] == 64 * MIB
    assert first["fio"]["bs"] == MIB and first["fio"]["rw"] == "write" and first["fio"]["time_based"] is False
    assert first["estimate_s"] == 4.0 and first["repeats"] == 1
    generations = [job["params"]["verify_generation"] for job in cycles]
    assert len(set(generations)) == 9   # each cycle its own: the previous cycle's data reads as stale
    assert {job["params"]["burnin_budget_s"] for job in cycles} == {36.0}
    assert [job["params"]["burnin_cycle"] for job in cycles] == list(range(1, 10))
    assert {job["params"]["burnin_target"] for job in cycles} == {"/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"}


def test_burnin_cycles_are_bounded():
    plan = build_plan([raw_write_disk()], settings(profile="burnin", burnin_hours=720, expected_bytes_per_s=32 * MIB))
    assert sum(job["test"].startswith("burnin_") for job in plan.jobs) == 1000
    plan = build_plan([raw_write_disk()], settings(profile="burnin", burnin_hours=1e-6, expected_bytes_per_s=MIB))
    assert [job["test"] for job in plan.jobs if job["test"].startswith("burnin_")] == ["burnin_1of1"]


def test_full_profile_leaves_the_burn_in_out():
    assert "burnin" not in PROFILES["full"].tests and PROFILES["burnin"].tests == ("dd_seq_write", "burnin")


@pytest.mark.parametrize("hours", [0, -1, 721, True, "4"])
def test_burnin_hours_must_be_a_positive_number_of_hours(hours):
    with pytest.raises(PlanError, match="burnin_hours must be a number of hours above 0 and at most 720"):
        build_plan([disk()], settings(profile="burnin", burnin_hours=hours))
