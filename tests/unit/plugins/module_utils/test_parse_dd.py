"""dd parser: exact figures from real captures (tests/fixtures/dd, each with a .src.md), and ParseError only."""
from __future__ import annotations

import hashlib
import os
import re

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import dd, detect, registry
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import (
    apply_exit_code,
    describe_signal,
    error_result,
    join_output,
    make_record,
    parse_output,
    tool_errors,
)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.dd import RecordCount
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "dd")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def R(full, partial):
    return RecordCount(full, partial)


# (fixture, [(bytes, seconds, bytes/s by hand, dialect, records in, records out, error or None)])
# bytes/s are bytes / seconds computed by hand from the summary line, see each NAME.src.md.
CASES = [
    ("gnu91-write-fdatasync.txt", [(134217728, 2.73932, 48996732.035687685, "gnu", R(128, 0), R(128, 0), None)]),
    ("gnu91-write-oflag-direct.txt", [(134217728, 2.54279, 52783646.30976211, "gnu", R(128, 0), R(128, 0), None)]),
    ("gnu91-read-iflag-direct.txt", [(134217728, 2.52256, 53206951.66814665, "gnu", R(128, 0), R(128, 0), None)]),
    ("gnu91-status-progress.bin", [(335544320, 6.40901, 52355093.84444711, "gnu", R(320, 0), R(320, 0), None)]),
    ("gnu91-enospc.txt", [(6291456, 0.0274641, 229079270.75709742, "gnu", R(7, 0), R(6, 0),
                           "dd: error writing '/tmp/dpcap/tiny/fill.bin': No space left on device")]),
    ("gnu91-einval-odirect-write.txt", [(0, 6.0752e-05, 0.0, "gnu", R(1, 0), R(0, 0),
                                         "dd: error writing '/tmp/dpcap/mnt/einval.bin': Invalid argument")]),
    ("gnu91-einval-odirect-read.txt", [(0, 3.7486e-05, 0.0, "gnu", R(0, 0), R(0, 0),
                                        "dd: error reading '/tmp/dpcap/mnt/direct.bin': Invalid argument")]),
    ("gnu91-three-runs.txt", [
        (33554432, 0.745341, 45018900.07392589, "gnu", R(512, 0), R(512, 0), None),
        (33554432, 0.637122, 52665630.75831631, "gnu", R(512, 0), R(512, 0), None),
        (33554432, 0.636057, 52753812.94443737, "gnu", R(512, 0), R(512, 0), None),
    ]),
    ("gnu91-zero-records.txt", [(0, 2.682e-05, 0.0, "gnu", R(0, 0), R(0, 0), None)]),
    ("gnu91-partial-record.txt", [(2500, 3.0756e-05, 81284952.52958772, "gnu", R(2, 1), R(2, 1), None)]),
    ("gnu91-pipe-partial-read.txt", [(524288, 0.00559162, 93763167.0249409, "gnu", R(0, 8), R(0, 8), None)]),
    ("gnu91-de_DE-write-fdatasync.txt", [(67108864, 1.28096, 52389507.86909817, "gnu", R(64, 0), R(64, 0), None)]),
    ("gnu91-de_DE-enospc.txt", [(6291456, 0.0135955, 462760178.00007355, "gnu", R(7, 0), R(6, 0),
                                 "dd: Fehler beim Schreiben von '/tmp/dpcap/tiny/fill.bin': "
                                 "Auf dem Gerät ist kein Speicherplatz mehr verfügbar")]),
    ("gnu91-failed-open-then-run.txt", [
        (None, None, None, None, None, None, "dd: failed to open '/tmp/dpcap/mnt/does-not-exist': No such file or directory"),
        (16777216, 0.365647, 45883641.87317276, "gnu", R(16, 0), R(16, 0), None),
    ]),
    ("public-bsd-macos-urandom.txt", [(20971520, 1.967966, 10656444.26783796, "bsd", R(20, 0), R(20, 0), None)]),
    ("public-bsd-macos-partial-indented.txt", [
        (1021592274, 480.752682, 2124985.074966259, "bsd", R(974, 1), R(974, 1), None)]),
    ("public-busybox-two-runs.txt", [
        (83886080, 3.084522, 27195811.863231968, "busybox", R(10240, 0), R(10240, 0), None),
        (83886080, 1.426896, 58789203.9784259, "busybox", R(10240, 0), R(10240, 0), None),
    ]),
    ("public-coreutils5-transferred.txt", [
        (409600, 0.005108, 80187940.48551293, "coreutils5", R(100, 0), R(100, 0), None)]),
    ("public-gnu822-eio-nvme.txt", [(0, 32.0633, 0.0, "gnu", R(0, 0), R(0, 0),
                                     "dd: error reading '/dev/nvme0n1': Input/output error")]),
    ("public-gnu826-eio-md0-mail.txt", [
        (263647232, 0.447983, 588520617.9698783, "gnu", R(514936, 0), R(514936, 0),
         "dd: error reading '/dev/md0': Input/output error"),
        (0, 0.000129958, 0.0, "gnu", R(0, 0), R(0, 0), "dd: error reading '/dev/md0': Input/output error"),
        (17179869184, 112.802, 152301104.4485027, "gnu", R(33554432, 0), R(33554432, 0), None),
    ]),
    ("public-gnu-old-glusterfs-session.txt", [
        (1073741824, 9.14845, 117368715.35615322, "gnu", R(1024, 0), R(1024, 0), None),
        (None, None, None, None, None, None,
         "dd: writing `/mnt/glusterfs/vol-comp/1gb.dat': Input/output error; "
         "dd: closing output file `/mnt/glusterfs/vol-comp/1gb.dat': Input/output error"),
        (None, None, None, None, None, None,
         "dd: writing `/mnt/glusterfs/vol-comp/1gb.dat': Input/output error; "
         "dd: closing output file `/mnt/glusterfs/vol-comp/1gb.dat': Input/output error"),
        (1048577, 21.8345, 48023.86132038746, "gnu", R(1, 0), R(0, 0), "dd: writing `/mnt/glusterfs/vol-comp/1gb.dat'"),
    ]),
    ("public-gnu-old-sizes.txt", [(4194304, 1.54395, 2716606.107710742, "gnu", R(1024, 0), R(1024, 0), None)]),
    # Transcripts that show the dd command (issue 17); bytes/s = bytes / seconds of each summary line.
    ("public-gnu-mate-write-read.txt", [
        (1073741824, 48.7581, 22021814.30367467, "gnu", R(1024, 0), R(1024, 0), None),  # 1073741824 / 48.7581
        (1073741824, 2.95827, 362962753.2307734, "gnu", R(1024, 0), R(1024, 0), None),  # 1073741824 / 2.95827
    ]),
    ("public-gnu-de-progress-oflag-direct.txt", [  # decimal comma: 11,1929 s = 11.1929 s
        (5368709120, 11.1929, 479653094.3723253, "gnu", R(5120, 0), R(5120, 0), None),  # 5368709120 / 11.1929
        (5368709120, 10.9524, 490185632.3728132, "gnu", R(5, 0), R(5, 0), None),  # 5368709120 / 10.9524
    ]),
    ("public-bsd-macos-time-transcript.txt", [
        (1024, 0.000063, 16253968.253968254, "bsd", R(1, 0), R(1, 0), None),  # 1024 / 0.000063
        (1048576, 0.000707, 1483134370.5799153, "bsd", R(1, 0), R(1, 0), None),  # 1048576 / 0.000707
    ]),
    ("public-gnu-zsh-time-transcript.txt", [
        (1024, 0.000286261, 3577155.1136899544, "gnu", R(1, 0), R(1, 0), None),  # 1024 / 0.000286261
        (1048576, 0.00084763, 1237068060.3565235, "gnu", R(1, 0), R(1, 0), None),  # 1048576 / 0.00084763
    ]),
    ("public-gnu-time-rootfs-no-prompt.txt", [  # 10485760000 / 35.4951
        (10485760000, 35.4951, 295414296.62122375, "gnu", R(10000, 0), R(10000, 0), None)]),
    ("public-gnu-old-ssd-write-read.txt", [
        (1073741824, 4.82364, 222599908.78257912, "gnu", R(1024, 0), R(1024, 0), None),  # 1073741824 / 4.82364
        (676323328, 3.0114, 224587676.16391048, "gnu", R(165118, 0), R(165118, 0), None),  # 165118 x 4096 / 3.0114
    ]),
    ("gnu91-bash-x-write-read.txt", [
        (67108864, 0.030449, 2203975959.8016353, "gnu", R(64, 0), R(64, 0), None),  # 67108864 / 0.030449
        (67108864, 0.0528798, 1269083165.9726398, "gnu", R(64, 0), R(64, 0), None),  # 67108864 / 0.0528798
    ]),
    ("gnu91-script-prompt-write-copy-pipe.txt", [
        (8388608, 0.0987263, 84968321.5110867, "gnu", R(2048, 0), R(2048, 0), None),  # 8388608 / 0.0987263
        (8388608, 0.00754871, 1111263778.8443322, "gnu", R(128, 0), R(128, 0), None),  # 8388608 / 0.00754871
        (8388608, 0.00702918, 1193397807.4256172, "gnu", R(8, 0), R(8, 0), None),  # 8388608 / 0.00702918
    ]),
    ("gnu91-script-progress-read-memory.txt", [
        (536870912, 0.486794, 1102870848.8600929, "gnu", R(512, 0), R(512, 0), None),  # 536870912 / 0.486794
        (536870912, 4.12334, 130202920.93303002, "gnu", R(32768, 0), R(32768, 0), None),  # 536870912 / 4.12334
        (2147483648, 0.0746566, 28764819828.387577, "gnu", R(2048, 0), R(2048, 0), None),  # 2147483648 / 0.0746566
    ]),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    runs = dd.parse(fixture(name))
    assert len(runs) == len(expected)
    for index, (run, want) in enumerate(zip(runs, expected)):
        nbytes, seconds, rate, dialect, records_in, records_out, error = want
        assert run.index == index
        assert (run.bytes, run.seconds, run.dialect) == (nbytes, seconds, dialect)
        assert (run.records_in, run.records_out, run.error) == (records_in, records_out, error)
        if rate is None:
            assert run.bytes_per_s is None
        else:
            assert run.bytes_per_s == pytest.approx(rate, rel=1e-12)


def test_progress_updates_are_counted_never_taken_as_the_result():
    text = fixture("gnu91-status-progress.bin")
    assert text.count("\r") == 6  # the fixture keeps dd's carriage returns
    (run,) = dd.parse(text)
    assert run.progress_updates == 6
    assert run.bytes == 335544320  # not 314572800 of the last progress line
    assert run.warnings == []


def test_printed_rate_is_kept_only_as_a_cross_check():
    (run,) = dd.parse(fixture("gnu91-write-fdatasync.txt"))
    assert run.printed_rate_bytes_per_s == 49000000.0
    assert run.bytes_per_s != run.printed_rate_bytes_per_s
    (busybox, _second) = dd.parse(fixture("public-busybox-two-runs.txt"))
    assert busybox.printed_rate_bytes_per_s == pytest.approx(25.9 * 2 ** 20)  # MB means MiB in busybox


def test_decimal_comma_locale_gives_the_same_figures_as_C():
    (run,) = dd.parse(fixture("gnu91-de_DE-write-fdatasync.txt"))
    assert run.seconds == 1.28096
    assert run.printed_rate_bytes_per_s == 52400000.0
    assert run.warnings == []


@pytest.mark.parametrize(
    ("name", "warning"),
    [
        ("gnu91-partial-record.txt", "1 partial input record(s) (2+1)"),
        ("gnu91-partial-record.txt", "1 partial output record(s) (2+1)"),
        ("gnu91-pipe-partial-read.txt", "dd: warning: partial read (65536 bytes); suggest iflag=fullblock"),
        ("gnu91-pipe-partial-read.txt", "8 partial input record(s) (0+8)"),
        ("gnu91-zero-records.txt", "dd moved no data (0 bytes)"),
        ("public-bsd-macos-partial-indented.txt", "ignored line 2: 'Password:'"),
    ],
)
def test_warnings(name, warning):
    warnings = [text for run in dd.parse(fixture(name)) for text in run.warnings]
    assert any(text.startswith(warning) for text in warnings), warnings


def test_dd_started_by_path_names_itself_by_that_path():
    text = fixture("gnu91-enospc.txt").replace("dd: error writing", "/usr/bin/dd: error writing")
    (run,) = dd.parse(text)
    assert run.error == "/usr/bin/dd: error writing '/tmp/dpcap/tiny/fill.bin': No space left on device"
    assert run.bytes == 6291456


def test_typescript_with_progress_rebuilt_byte_exact():
    # Stored without CRs (ansible-test refuses them); rebuilt as `script` captured it: the status=progress
    # updates joined by CR, CRLF line ends. Same bytes as the capture (its sha256), same records.
    stored = fixture("gnu91-script-progress-read-memory.txt")
    captured = re.sub(r"\n(?=\d+ bytes \([^)]*\) copied, \d+ s, )", "\r", stored).replace("\n", "\r\n")
    assert hashlib.sha256(captured.encode()).hexdigest() == (
        "41eed2e96d7cb9ed5b86ba582857ee20883f6616a0ebce31ad12c73ab7849e70")
    assert captured.count("\r") - captured.count("\r\n") == 4
    assert [(r.bytes, r.seconds, r.command) for r in dd.parse(captured)] == [
        (r.bytes, r.seconds, r.command) for r in dd.parse(stored)]


@pytest.mark.parametrize("name", ["gnu91-three-runs.txt", "gnu91-script-progress-read-memory.txt",
                                  "gnu91-script-prompt-write-copy-pipe.txt"])
def test_crlf_line_endings_change_nothing(name):
    # The two `script` typescripts were captured with CRLF line endings and are stored with LF.
    text = fixture(name)
    assert [(r.bytes, r.seconds, r.command) for r in dd.parse(text.replace("\n", "\r\n"))] == [
        (r.bytes, r.seconds, r.command) for r in dd.parse(text)
    ]


def test_runs_without_summary_are_refused_not_invented():
    with pytest.raises(ParseError) as caught:
        dd.parse(fixture("gnu91-status-noxfer.txt"))
    assert "summary line" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected_in_message"),
    [
        ("", "dd output: expected dd status output"),
        ("   \n\n", "dd output: expected dd status output"),
        ("hello world\nthis is not dd\n", "offending line 1: 'hello world'"),
        ("5+3 records in\n", "expected dd status output"),
        # a summary line whose units are not in the dialect's table: never guessed
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 XB, 1.0 MiB) copied, 0.1 s, 10.5 MB/s\n",
         "a known si byte unit, got 'XB'"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.1 s, 10.5 QQ/s\n",
         "a rate in bytes per second, got 'QQ/s'"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.1 s, 10.5 KB/s\n",
         "a known si byte unit, got 'KB'"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0MiB) copied, 0.1 s, 10.5 MB/s\n",
         "all with or all without a space"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0MB) copied, 0.1 seconds, 10.5 MB/s\n",
         "a rate written like the sizes (busybox dialect)"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB, 1 x) copied, 0.1 s, 10.5 MB/s\n",
         "sizes in parentheses like '(1.0 MB, 1.0 MiB)'"),
        ("1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, 1,2.3 s, 10.5 MB/s\n",
         "a decimal number, got '1,2.3'"),
        ("1+0 records in\n1+0 records out\n1048576 bytes transferred in 0.1 secs (many bytes/sec)\n",
         "an integer rate in bytes/sec"),
    ],
)
def test_malformed_input_raises_parse_error_naming_the_line(text, expected_in_message):
    with pytest.raises(ParseError) as caught:
        dd.parse(text)
    assert expected_in_message in str(caught.value)
    assert caught.value.tool == "dd"


def test_non_text_input_is_a_parse_error():
    with pytest.raises(ParseError):
        dd.parse(None)


@pytest.mark.parametrize(
    ("argv", "direction"),
    [
        (["dd", "if=/dev/zero", "of=/srv/d0/diskproof.testfile", "bs=1048576", "count=256", "conv=fdatasync"], "write"),
        (["dd", "if=/srv/d0/diskproof.testfile", "of=/dev/null", "bs=1048576", "iflag=direct"], "read"),
        (["dd", "if=/srv/a", "of=/srv/b"], "copy"),
        (["/usr/bin/dd", "if=/dev/urandom", "of=/dev/sdb"], "write"),
        (["dd", "if=/dev/sdb"], "read"),  # output to stdout
        (["dd", "of=/srv/x"], "write"),  # input from stdin
        (["dd", "if=/dev/zero", "of=/dev/null"], None),
        ([], None),
    ],
)
def test_direction_from_argv(argv, direction):
    assert dd.direction_from_argv(argv) == direction


def test_records_fill_the_metric_of_their_direction_only():
    text = fixture("gnu91-read-iflag-direct.txt")
    tool, (result,) = parse_output(text, "auto", None, ["dd", "if=/tmp/dpcap/mnt/direct.bin", "of=/dev/null"])
    assert tool == "dd"
    assert result["metrics"]["read_bytes_per_s"] == pytest.approx(53206951.66814665, rel=1e-12)
    assert result["metrics"]["write_bytes_per_s"] is None
    assert (result["bytes"], result["seconds"], result["error"]) == (134217728, 2.52256, None)
    _tool, (copy,) = parse_output(fixture("gnu91-partial-record.txt"), "dd", "copy")
    assert copy["metrics"]["read_bytes_per_s"] == copy["metrics"]["write_bytes_per_s"] == pytest.approx(81284952.52958772)


def test_unknown_direction_keeps_the_rate_as_a_direction_less_figure():
    _tool, (result,) = parse_output(fixture("gnu91-write-fdatasync.txt"), "dd")
    assert result["metrics"]["write_bytes_per_s"] is None
    assert result["metrics"]["read_bytes_per_s"] is None
    # 134217728 / 2.73932
    assert result["metrics"]["transfer_bytes_per_s"] == pytest.approx(48996732.035687685, rel=1e-12)
    assert result["bytes"] == 134217728
    assert result["warnings"][-1] == (
        "dd direction unknown (read, write or copy): rate 4.8997e+07 B/s kept as metrics.transfer_bytes_per_s only, "
        "which the report does not judge; parse again with direction=read|write|copy")


W, RD, CP, NONE_ = "write", "read", "copy", None

# (fixture, the direction of each run as the text shows it). The command line before a run's output says it:
# if=/dev/zero -> write, of=/dev/null (or no of=, a pipe) -> read, file to file -> copy, /dev/zero to /dev/null -> none.
DIRECTION_CASES = [
    ("public-gnu-mate-write-read.txt", [W, RD]),  # "sync; dd if=/dev/zero of=tempfile", "dd if=tempfile of=/dev/null"
    ("public-gnu-de-progress-oflag-direct.txt", [W, W]),
    ("public-bsd-macos-time-transcript.txt", [W, W]),  # "time dd if=/dev/zero bs=1k of=tstfile"
    ("public-gnu-zsh-time-transcript.txt", [W, W]),  # zsh's time line repeats the command after the run: not reused
    ("public-gnu-time-rootfs-no-prompt.txt", [W]),
    ("public-gnu-old-ssd-write-read.txt", [W, RD]),  # 'sudo sh -c "sync && echo 3 > ..."' is no dd command
    ("gnu91-bash-x-write-read.txt", [W, RD]),  # bash -x trace lines "+ dd ..."
    ("gnu91-script-prompt-write-copy-pipe.txt", [W, CP, RD]),  # "dd if=disk.img bs=1M status=progress | cat"
    ("gnu91-script-progress-read-memory.txt", [W, RD, NONE_]),  # "dd if=/dev/zero of=/dev/null": no disk at all
    ("public-busybox-two-runs.txt", [W, W]),  # "/home # dd if=/dev/zero of=./output bs=8k count=10k; rm ./output"
    ("public-gnu-old-glusterfs-session.txt", [W, W, W, W]),  # "  # dd if=/dev/zero of=/mnt/glusterfs/..."
    ("gnu91-write-fdatasync.txt", [NONE_]),  # dd's own output only
    # quoted-printable mail: both command lines end in a soft line break "=", cut mid-operand: not trusted
    ("public-gnu826-eio-md0-mail.txt", [NONE_, NONE_, NONE_]),
]


@pytest.mark.parametrize(("name", "directions"), DIRECTION_CASES, ids=[case[0] for case in DIRECTION_CASES])
def test_direction_inferred_from_the_command_in_the_text(name, directions):
    runs = dd.parse(fixture(name))
    _tool, results = parse_output(fixture(name), "dd")
    assert [dd.direction_from_argv(run.command or []) for run in runs] == directions
    for run, result, direction in zip(runs, results, directions):
        metrics, rate = result["metrics"], run.bytes_per_s
        assert metrics["transfer_bytes_per_s"] == rate  # always kept, whatever the direction
        assert metrics["read_bytes_per_s"] == (rate if direction in ("read", "copy") else None)
        assert metrics["write_bytes_per_s"] == (rate if direction in ("write", "copy") else None)
        if direction is not None and rate is not None:
            assert "dd direction %s inferred from the command on line %d" % (direction, run.command_line) in (
                result["warnings"][-1])


def test_the_command_belongs_to_the_run_whose_output_follows_it():
    write, read = dd.parse(fixture("public-gnu-mate-write-read.txt"))
    assert (write.command, write.command_line) == (
        ["dd", "if=/dev/zero", "of=tempfile", "bs=1M", "count=1024"], 1)  # "$ sync; dd ...; sync"
    assert (read.command, read.command_line) == (["dd", "if=tempfile", "of=/dev/null", "bs=1M", "count=1024"], 6)
    assert not any("ignored line 1:" in text or "ignored line 6:" in text for text in write.warnings + read.warnings)
    assert "ignored line 7: 'vm.drop_caches = 3'" in read.warnings  # sysctl's echo, pasted between command and output
    first, second = dd.parse(fixture("public-gnu-zsh-time-transcript.txt"))
    assert (first.command_line, second.command_line) == (1, 6)


def test_a_stated_direction_wins_and_a_contradiction_names_both():
    _tool, (write, read) = parse_output(fixture("public-gnu-mate-write-read.txt"), "dd", "read")
    assert write["metrics"]["read_bytes_per_s"] == pytest.approx(22021814.30367467)  # as stated: 1073741824 / 48.7581
    assert write["metrics"]["write_bytes_per_s"] is None
    assert write["warnings"][-1] == (
        "dd direction=read was given, but the command on line 1 of the text (dd if=/dev/zero of=tempfile bs=1M "
        "count=1024) is a write: the rate is filed as read, as given; check which one is right")
    # stated and shown agree: nothing to say about the direction
    assert read["warnings"] == ["ignored line 5: '$ sudo /sbin/sysctl -w vm.drop_caches=3'",
                                "ignored line 7: 'vm.drop_caches = 3'"]
    _tool, (copy,) = parse_output(fixture("public-gnu-time-rootfs-no-prompt.txt"), "dd", "copy")
    copied = pytest.approx(295414296.62122375)  # 10485760000 / 35.4951
    assert copy["metrics"]["read_bytes_per_s"] == copy["metrics"]["write_bytes_per_s"] == copied
    assert "is a write: the rate is filed as copy, as given" in copy["warnings"][-1]


def test_the_command_bench_facts_ran_wins_over_a_command_in_the_text():
    argv = ["dd", "if=/srv/d0/f", "of=/dev/null", "bs=1M"]
    _tool, (result,) = parse_output(fixture("public-gnu-time-rootfs-no-prompt.txt"), "dd", None, argv)
    assert result["metrics"]["read_bytes_per_s"] == pytest.approx(295414296.62122375)
    assert result["metrics"]["write_bytes_per_s"] is None
    assert "dd if=/srv/d0/f of=/dev/null bs=1M" in result["warnings"][-1]
    assert "is a write: the rate is filed as read" in result["warnings"][-1]


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("$ sync; dd if=/dev/zero of=tempfile bs=1M count=1024; sync", ["dd", "if=/dev/zero", "of=tempfile", "bs=1M",
                                                                        "count=1024"]),
        ("+ dd if=a of=b", ["dd", "if=a", "of=b"]),
        ('$ sudo sh -c "sync && dd if=/dev/zero of=\'/mnt/x y\' bs=1M"',
         ["dd", "if=/dev/zero", "of=/mnt/x y", "bs=1M"]),
        ("root@host:~# /bin/dd of=/dev/sdb bs=1M < image.raw", ["/bin/dd", "of=/dev/sdb", "bs=1M", "if=image.raw"]),
        ("$ dd if=/dev/sda bs=1M count=100 >/dev/null", ["dd", "if=/dev/sda", "bs=1M", "count=100", "of=/dev/null"]),
        ("$ dd if=/dev/zero bs=1M count=1 2>&1 | tee log", ["dd", "if=/dev/zero", "bs=1M", "count=1"]),
        ("$ dd if=/dev/sdb 2>&1 of=/dev/null bs=1M", ["dd", "if=/dev/sdb", "of=/dev/null", "bs=1M"]),
        ("dd if=/dev/zero of=test bs=64k count=16k conv=fdatasync 2>> dd_io.log",
         ["dd", "if=/dev/zero", "of=test", "bs=64k", "count=16k", "conv=fdatasync"]),
        ("$ dd if=a of=b; dd if=b of=/dev/null", ["dd", "if=a", "of=b"]),  # the first; commands_from_line: both
        ("dd: error reading '/dev/sda': Input/output error", None),
        ("Try 'dd --help' for more information.", None),
        ("we used dd to test the disk", None),
        ("$ dd --version", None),
        ("  % sudo dd if=3D/dev/sdb1 skip=3D3112437760 of=3D/dev/null",
         ["dd", "if=/dev/sdb1", "skip=3112437760", "of=/dev/null"]),  # quoted-printable
        ("  % sudo dd if=3D/dev/sdb1 count=3D33554432 of=3D/dev/n=", None),  # cut by a soft line break
        ("$ dd if=/dev/zero \\", None),  # continued on the next line: incomplete
        ("$ echo dd if=x", ["dd", "if=x"]),  # echoed text reads like a command: only the next run's output uses it
    ],
)
def test_command_from_line(line, argv):
    assert dd.command_from_line(line) == argv


def test_a_line_chaining_two_dd_commands_gives_them_to_the_next_two_runs():
    line = "$ dd if=/dev/zero of=img bs=1M count=1; dd if=img of=/dev/null bs=1M"
    assert dd.commands_from_line(line) == [["dd", "if=/dev/zero", "of=img", "bs=1M", "count=1"],
                                           ["dd", "if=img", "of=/dev/null", "bs=1M"]]
    output = "1+0 records in\n1+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.5 s, 2.1 MB/s\n"
    first, second = dd.parse(line + "\n" + output + output)
    assert [dd.direction_from_argv(run.command) for run in (first, second)] == ["write", "read"]
    assert first.command_line == second.command_line == 1


@pytest.mark.parametrize(
    ("argv", "direction"),
    [
        (["dd", "bs=1M", "count=100", "oflag=direct"], "write"),  # stdin to stdout: the flags say it
        (["dd", "bs=1M", "iflag=direct"], "read"),
        (["dd", "conv=fdatasync"], "write"),
        (["dd", "iflag=direct", "oflag=direct"], "copy"),
        (["dd", "if=/dev/zero", "of=/dev/null", "oflag=direct"], None),  # a memory test: no flag makes it a disk one
        (["dd", "if=/dev/stdin", "of=/dev/stdout"], None),
        (["dd", "if=/dev/sda", "of=/dev/stdout"], "read"),
        (["dd", "bs=1M"], None),
    ],
)
def test_direction_from_argv_flags_decide_only_when_operands_do_not(argv, direction):
    assert dd.direction_from_argv(argv) == direction


# tool=auto and the record helpers shared by dd and fio

FIO_FIXTURES = os.path.join(FIXTURES, "..", "fio")


def _all_fixtures():
    for directory, tool in ((FIXTURES, "dd"), (FIO_FIXTURES, "fio")):
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".src.md"):
                yield directory, name, tool


@pytest.mark.parametrize(("directory", "name", "tool"), list(_all_fixtures()), ids=lambda value: str(value)[-40:])
def test_detect_tool_recognises_every_fixture(directory, name, tool):
    with open(os.path.join(directory, name), encoding="utf-8", newline="") as handle:
        assert detect.detect_tool(handle.read()) == tool


@pytest.mark.parametrize("text", ["", "hello\n", "12 apples\n"])
def test_detect_tool_refuses_unknown_output(text):
    with pytest.raises(ParseError) as caught:
        detect.detect_tool(text)
    # Every tool of the registry, by how a message names its output (a new parser joins the list).
    expected = str(caught.value).split("expected ", 1)[1].split(" output", 1)[0]
    assert expected.startswith("dd, fio, sysbench fileio, bonnie++") and " or " in expected
    assert re.split(", | or ", expected) == [parser.description for parser in registry.PARSERS]


@pytest.mark.parametrize(
    ("argv", "tool"),
    [(["dd", "if=/dev/zero"], "dd"), (["/usr/bin/fio", "--name=x"], "fio"), (["sudo", "dd"], None), ([], None), (None, None)],
)
def test_tool_from_argv(argv, tool):
    assert detect.tool_from_argv(argv) == tool


def test_make_record_follows_the_schema_order():
    _tool, (result,) = parse_output(fixture("gnu91-write-fdatasync.txt"), "dd", "write")
    record = make_record(result, test="dd_seq_write", target={"path": "/srv/d0", "device": "sdb"},
                         params={"block_size": 1048576}, started="2026-11-22T00:00:00Z",
                         finished="2026-11-22T00:00:03Z", command=["dd"], exit_code=0, raw_sha256="0" * 64,
                         device_io={"read_bytes": 0, "write_bytes": 134221824}, tool_version="9.1")
    assert list(record) == [
        "schema", "test", "tool", "tool_version", "target", "params", "job", "metrics", "bytes", "seconds", "started",
        "finished", "command", "exit_code", "raw_sha256", "device_io", "warnings", "error", "integrity",
    ]
    assert (record["schema"], record["tool_version"], record["exit_code"]) == (1, "9.1", 0)
    assert make_record(result)["test"] == "dd"  # the test id defaults to the tool name


def test_run_helpers():
    assert join_output(b"{}", b"fio: warning\n") == b"{}\nfio: warning\n"
    assert join_output(b"", b"1+0 records in\n") == b"1+0 records in\n"
    error = ParseError("fio", "fio JSON output", "fio: engine libaio not loadable", 1)
    failed = error_result("fio", error)
    assert failed["error"] == "fio: engine libaio not loadable"
    assert failed["metrics"]["read_bytes_per_s"] is None
    records = [{"error": None}, {"error": None}]
    apply_exit_code(records, 3, "line one\nlast words\n\n")
    assert records == [{"error": "exit code 3: last words"}] * 2
    assert tool_errors(records, 3) == ["exit code 3: last words"]
    assert tool_errors([{"error": None}], 2) == ["exit code 2"]
    assert tool_errors([{"error": None}], 0) == []
    # A tool killed by a signal (subprocess reports -N) says so before whatever else went wrong.
    killed = [{"error": None}, {"error": "expected dd status output"}]
    apply_exit_code(killed, -9, "")
    assert killed == [{"error": "killed by signal 9 (SIGKILL)"},
                      {"error": "killed by signal 9 (SIGKILL); expected dd status output"}]
    assert describe_signal(-15) == "killed by signal 15 (SIGTERM)" and describe_signal(-200).endswith("(unknown signal)")


@pytest.mark.parametrize("summary", [
    # Found by the fuzz test: a byte count too large for a float crashed with OverflowError.
    "9" * 400 + " bytes (53 MB, 51 MiB) copied, 1 s, 52.3 MB/s",
    "9223372036854775808 bytes (9.2 EB, 8.0 EiB) copied, 1 s, 9.2 EB/s",
    "9223372036854775808 bytes transferred in 1.000000 secs (9223372036854775808 bytes/sec)",
])
def test_a_byte_count_dd_cannot_print_is_a_parse_error(summary):
    with pytest.raises(ParseError) as caught:
        dd.parse("1+0 records in\n1+0 records out\n" + summary + "\n")
    assert "a byte count dd can print (at most 2^63 - 1)" in str(caught.value)


def test_report_shows_a_direction_less_rate_and_judges_it_once_the_direction_is_given():
    """The report names the kept figure and the fix instead of "no figure"; the same text parsed with
    direction=write is judged on that rate."""
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report

    text = fixture("gnu91-write-fdatasync.txt")
    target = {"path": "/srv/d0", "device": "sdb"}
    _tool, (unknown,) = parse_output(text, "dd")
    _tool, (stated,) = parse_output(text, "dd", "write")
    records = {"h1": [make_record(unknown, test="dd_seq_write", target=target)],
               "h2": [make_record(stated, test="dd_seq_write", target=target)]}
    ok = {"status": "ok", "problems": []}
    entries = _report.build_report(records, {"h1": ok, "h2": ok}, {}, 0.15)["results"]
    found = {entry["host"]: (entry["verdict"], entry["reason"]) for entry in entries}
    assert found["h1"] == ("not_measured", "dd rate 49.0 MB/s of unknown direction (metrics.transfer_bytes_per_s) "
                                           "is not judged: parse again with direction=read, write or copy")
    assert found["h2"][0] == "pass"  # 134217728 / 2.73932 = 48996732.0 B/s written, the group's only figure
