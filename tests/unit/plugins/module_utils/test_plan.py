"""The benchmark plan: sizing, ordering, exact argv and refusals with messages that say what to fix."""
from __future__ import annotations

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._plan import PlanError, build_plan
from ansible_collections.diskproof.fleet.plugins.module_utils._sizing import SizingError, buffered_test_size, round_up

MIB = 1048576


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


def test_plan_orders_writes_before_reads_across_targets():
    jobs = build_plan([{"path": "/srv/a"}, {"path": "/srv/b/"}], 128 * MIB, ["dd_seq_write", "dd_seq_read", "fio_rand_read"], 8)
    assert [(job["phase"], job["test"], job["target"]["path"]) for job in jobs] == [
        ("write", "dd_seq_write", "/srv/a"),
        ("write", "dd_seq_write", "/srv/b"),
        ("read", "dd_seq_read", "/srv/a"),
        ("read", "fio_rand_read", "/srv/a"),
        ("read", "dd_seq_read", "/srv/b"),
        ("read", "fio_rand_read", "/srv/b"),
    ]


def test_plan_argv_is_exact_and_sized_from_memory():
    write, read, rand = build_plan([{"path": "/srv/a"}], 128 * MIB, ["dd_seq_write", "dd_seq_read", "fio_rand_read"], 8)
    assert write["argv"] == ["dd", "if=/dev/zero", "of=/srv/a/diskproof.testfile", "bs=1048576", "count=256", "conv=fdatasync"]
    assert write["creates"] == "/srv/a/diskproof.testfile"
    assert write["drop_caches"] is False
    assert write["params"]["size_bytes"] == 256 * MIB
    assert read["argv"] == ["dd", "if=/srv/a/diskproof.testfile", "of=/dev/null", "bs=1048576", "count=256", "iflag=direct"]
    assert read["drop_caches"] is True and read["creates"] is None
    assert rand["argv"] == [
        "fio", "--name=fio_rand_read", "--filename=/srv/a/diskproof.testfile", "--rw=randread", "--bs=4096", "--iodepth=32",
        "--direct=1", "--ioengine=libaio", "--size=268435456", "--runtime=8", "--time_based=1", "--randrepeat=0",
        "--allow_file_create=0", "--output-format=json",
    ]
    assert rand["tool"] == "fio" and rand["params"]["iodepth"] == 32 and rand["params"]["runtime_s"] == 8


def test_a_read_test_alone_still_writes_its_file_first():
    jobs = build_plan([{"path": "/srv/a"}], MIB, ["fio_rand_read"], 8)
    assert [job["test"] for job in jobs] == ["dd_seq_write", "fio_rand_read"]


@pytest.mark.parametrize(
    ("targets", "tests", "runtime", "message"),
    [
        ([], ["dd_seq_write"], 8, "diskproof_targets must be a non-empty list such as [{path: /srv/disk1}], got []"),
        ("/srv/a", ["dd_seq_write"], 8, "diskproof_targets must be a non-empty list such as [{path: /srv/disk1}], got '/srv/a'"),
        (["/srv/a"], ["dd_seq_write"], 8, "diskproof_targets[0] must be a mapping such as {path: /srv/disk1}, got '/srv/a'"),
        ([{"device": "/dev/sdb"}], ["dd_seq_write"], 8,
         "diskproof_targets[0] needs 'path', a directory on the filesystem to test; raw device targets are not supported "
         "by this version (got {'device': '/dev/sdb'})"),
        ([{"path": "srv/a"}], ["dd_seq_write"], 8, "diskproof_targets[0].path must be an absolute path, got 'srv/a'"),
        ([{"path": "/srv/a"}, {"path": "/srv/a/"}], ["dd_seq_write"], 8, "diskproof_targets lists the same directory more than once: /srv/a"),
        ([{"path": "/srv/a"}], ["dd_seq_wrte", "x"], 8,
         "unknown test id(s) 'dd_seq_wrte', 'x'; known tests: dd_seq_write, dd_seq_read, fio_rand_read"),
        ([{"path": "/srv/a"}], [], 8, "no tests selected; known tests: dd_seq_write, dd_seq_read, fio_rand_read"),
        ([{"path": "/srv/a"}], ["dd_seq_write"], 0, "fio runtime must be a whole number of seconds >= 1, got 0"),
    ],
)
def test_plan_refuses_bad_input_with_a_message_that_says_what_to_fix(targets, tests, runtime, message):
    with pytest.raises(PlanError) as error:
        build_plan(targets, 128 * MIB, tests, runtime)
    assert str(error.value) == message


def test_plan_refuses_a_bad_memory_figure():
    with pytest.raises(PlanError, match="memory_bytes must be a positive integer"):
        build_plan([{"path": "/srv/a"}], 0, ["dd_seq_write"], 8)


def test_disk_identity_from_discover_facts_reaches_every_job_target():
    from ansible_collections.diskproof.fleet.plugins.module_utils._plan import target_identities
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
    }
    jobs = build_plan([{"path": "/srv/a"}, {"path": "/srv/md"}], MIB, ["dd_seq_write"], 8, identities)
    assert jobs[0]["target"] == dict(identities["/srv/a"], path="/srv/a", test_file="/srv/a/diskproof.testfile")
    assert "device" not in jobs[1]["target"] and jobs[1]["target"]["disks"] == ["sdc", "sdd"]
    # Without discover facts the targets stay as they were.
    assert build_plan([{"path": "/srv/a"}], MIB, ["dd_seq_write"], 8)[0]["target"] == {"path": "/srv/a", "test_file": "/srv/a/diskproof.testfile"}
