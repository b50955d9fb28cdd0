"""bonnie++ parser: exact figures from real CSV lines and text tables (tests/fixtures/bonnie, each with a .src.md)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import bonnie, detect
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "bonnie")
FAST = "+++++"  # too fast to measure: no figure, a warning
MIB = 2 ** 20
GIB = 2 ** 30


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8", newline="") as handle:
        return handle.read()


def k(value):
    """bonnie++ K/sec (CSV, 1.x text, 1.98 text 'k' suffix): K = 1024 bytes."""
    return value * 1024


def m(value):
    """1.98+ text table 'm' suffix: MiB/s."""
    return value * MIB


def lat(text):
    """bonnie++ latency as printed ('8510us', '101ms') in ns."""
    if text is None:
        return None
    for unit, factor in (("us", 1e3), ("ms", 1e6), ("s", 1e9)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * factor
    raise AssertionError(text)


def run(name, layout, version, size, io, latencies=(None,) * 6, error=None):
    """io = (putc, put_block, rewrite, getc, get_block, seeks) in bytes/s (seeks/s), None not run, FAST +++++."""
    return dict(name=name, layout=layout, version=version, size=size, io=io, latencies=latencies, error=error)


NOT_RUN = (None,) * 6

CASES = [
    ("bonnie200a-n0-text-csv.txt", [
        run("lab-loop3", "1.98", "2.00a", 128 * MIB, (k(1589), k(19287), k(20295), k(2470), k(21766), 317.3),
            ("8510us", "4080us", "89082us", "10887us", "101ms", "105ms"))]),
    ("bonnie200a-q-n1-stdout-stderr.txt", [
        run("lab-loop3", "1.98", "2.00a", 128 * MIB, (k(1468), k(20331), k(20574), k(1685), k(21508), 316.2),
            ("34040us", "925us", "248us", "31633us", "99987us", "119ms"))]),
    ("bonnie200a-x2-q-csv-header.txt", [
        run("lab-loop3", "1.98", "2.00a", 64 * MIB, (k(1664), k(20485), k(20458), k(2988), FAST, 3135.0),
            ("5518us", "77us", "63us", "3684us", "54us", "4050us")),
        run("lab-loop3", "1.98", "2.00a", 64 * MIB, (k(1726), k(20480), k(20456), k(2955), FAST, 3134.0),
            ("5002us", "58us", "46us", "2966us", "46us", "4049us")),
    ]),
    ("bonnie200a-f-b-n2.txt", [
        run("lab-loop3", "1.98", "2.00a", 128 * MIB, (None, k(20830), k(20480), None, k(161663), 1510.0),
            (None, "964us", "112us", None, "100ms", "102ms"))]),
    ("bonnie200a-files-only.txt", [run("lab-loop3", "1.98", "2.00a", None, NOT_RUN)]),
    ("bonnie200a-tmpfs-too-fast.txt", [
        run("tmpfs", "1.98", "2.00a", 512 * MIB, (k(2240), FAST, FAST, k(2962), FAST, FAST),
            ("4595us", "870us", "418us", "4034us", "403us", "5908us"))]),
    ("bonnie200a-tmpfs-4g-gib-suffix.txt", [
        run("tmpfs-4g", "1.98", "2.00a", 4 * GIB, (None, k(448828), k(2517563), None, FAST, 11190.0),
            (None, "20268us", "8037us", None, "2299us", "12042us"))]),
    ("bonnie200a-error-size-vs-ram.txt", [
        run(None, None, "2.00a", None, NOT_RUN, error="File size should be double RAM for good results, RAM is 64M.")]),
    ("bonnie200a-error-no-dir.txt", [
        run(None, None, "2.00a", None, NOT_RUN, error='Can\'t change to directory "/tmp/dpx/nonexistent".')]),
    # bon_csv2txt: names cut to fit, rates rounded with k/m suffixes, "+++++" printed as "0k" (CPU "+++")
    ("bonnie200a-bon-csv2txt.txt", [
        run("lab-loo", "text", "2.00a", 64 * MIB, (k(1664), m(20.0), m(20.0), k(2988), FAST, 3135.0),
            ("5518us", "77us", "63us", "3684us", "54us", "4050us")),
        run("lab-loo", "text", "2.00a", 64 * MIB, (k(1726), m(20.0), m(20.0), k(2955), FAST, 3134.0),
            ("5002us", "58us", "46us", "2966us", "46us", "4049us")),
        run("lab-lo", "text", "2.00a", 128 * MIB, (k(1589), m(18.8), m(19.8), k(2470), m(21.3), 317.3),
            ("8510us", "4080us", "89082us", "10887us", "101ms", "105ms")),
        run("lab-lo", "text", "2.00a", 128 * MIB, (None, m(20.3), m(20.0), None, m(158), 1510.0),
            (None, "964us", "112us", None, "100ms", "102ms")),
    ]),
    ("public-bonnie103-stan-text-csv.txt", [
        run("stan", "1.03", "1.03", 4 * GIB, (k(16092), k(9563), k(6068), k(11202), k(49497), 180.6))]),
    ("public-bonnie103-nfs-f-n0-text-only.txt", [
        run("meghan", "text", "1.03", 512 * MIB, (None, k(118985), k(5173), None, k(294404), FAST))]),
    ("public-bonnie103-xfs-mail-wrapped-csv.txt", [
        run("test", "1.03", "1.03", 4 * GIB, (k(50317), k(232444), k(109507), k(52287), k(329821), 1169.4))]),
    ("public-bonnie196-romano-text-csv.txt", [
        run("romano", "1.96", "1.96", 252 * GIB, (k(136), k(590366), k(212487), k(294), k(386851), 161.6),
            ("89204us", "13696us", "1411ms", "57731us", "468ms", "235ms"))]),
    ("public-bonnie196-ako-bold-text-csv.txt", [
        run("ako", "1.96", "1.96", 4018 * MIB, (None, k(56561), k(32386), None, k(88826), 110.1),
            (None, "5549ms", "228ms", None, "43102us", "430ms"))]),
    ("public-bonnie196-servername01-f-text-csv.txt", [
        run("servername01", "1.96", "1.96", 160 * GIB, (None, k(39912), k(29398), None, k(79075), 207.2),
            (None, "12226ms", "61883ms", None, "349ms", "3643ms"))]),
    ("public-bonnie196-niobe-text-only.txt", [
        run("niobe", "text", "1.96", 15808 * MIB, (k(1231), k(260462), k(127881), FAST, k(307127), 6199.0),
            ("10080us", "101ms", "871ms", "4213us", "14837us", "5930us"))]),
    ("public-bonnie197-inez-two-rows-text-only.txt", [
        run("inez(old)", "text", "1.97", 2 * GIB, (None, k(35513), k(16987), None, k(46172), 157.3),
            (None, "2113ms", "1488ms", None, "68443us", "1952ms")),
        run("inez(new)", "text", "1.97", 2 * GIB, (None, k(87089), k(41527), None, k(102046), 4145.0),
            (None, "836ms", "229ms", None, "7650us", "8976us")),
    ]),
    ("public-bonnie197-nas02-overflow-text-only.txt", [
        run("nas02.local", "text", "1.97", 261368 * MIB, (k(139), k(775132), k(589190), k(383), k(1638929), 12930.0),
            ("60266us", "7030us", "7059us", "21553us", "3844us", "5710us"))]),
    ("public-bonnie197-ceph-admin-text-csv.txt", [
        run("ceph-admin", "1.96", "1.97", 8196 * MIB, (k(446), k(113486), k(43190), k(2063), k(85495), 1292.0),
            ("21900us", "735ms", "2056ms", "5119us", "41625us", "208ms"))]),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_figures(name, expected):
    runs = bonnie.parse(fixture(name))
    assert len(runs) == len(expected)
    for index, (found, want) in enumerate(zip(runs, expected)):
        assert found.index == index
        assert (found.name, found.layout, found.version, found.file_size, found.error) == (
            want["name"], want["layout"], want["version"], want["size"], want["error"])
        for test, value, latency in zip(bonnie.IO_TESTS, want["io"], want["latencies"]):
            if value == FAST:
                assert found.rates[test] is None and test in found.too_fast, test
            elif value is None:
                assert found.rates.get(test) is None and test not in found.too_fast, test
            else:
                assert found.rates[test] == pytest.approx(value, rel=1e-12), test
            assert found.latency_ns.get(test) == (None if latency is None else pytest.approx(lat(latency))), test


def test_file_creation_figures_from_the_csv():
    (found,) = bonnie.parse(fixture("bonnie200a-f-b-n2.txt"))
    assert found.num_files == 2
    assert [found.rates[test] for test in bonnie.FILE_TESTS] == [41.0, None, 37.0, 41.0, None, 38.0]
    assert found.too_fast == ["seq_stat", "ran_stat"]
    assert found.latency_ns["seq_create"] == 12761e6
    (stan,) = bonnie.parse(fixture("public-bonnie103-stan-text-csv.txt"))
    assert [stan.rates[test] for test in bonnie.FILE_TESTS] == [294.0, None, 311.0, 382.0, None, 117.0]
    assert stan.num_files == 16


def test_too_fast_is_a_warning_never_a_number():
    (found,) = bonnie.parse(fixture("bonnie200a-tmpfs-too-fast.txt"))
    assert found.warnings == [
        "bonnie++ '+++++' (too fast to measure, no figure): sequential output block, rewrite, sequential input block, "
        "random seeks, sequential create, sequential stat, sequential delete, random create, random stat, random delete"
    ]
    _tool, (result,) = parse_output(fixture("bonnie200a-tmpfs-too-fast.txt"))
    assert (result["metrics"]["read_bytes_per_s"], result["metrics"]["write_bytes_per_s"]) == (None, None)
    assert result["metrics"]["read_iops"] is None


def test_bon_csv2txt_zero_k_with_plus_cpu_is_too_fast():
    runs = bonnie.parse(fixture("bonnie200a-bon-csv2txt.txt"))
    assert runs[0].warnings[0] == ("bonnie++ text table: sequential input block '0k' with CPU '+++' is a too-fast "
                                   "test printed as a number")
    assert runs[0].warnings[-2].startswith("Expected 1.98, got format_version from format_version,bonnie_version,")


def test_csv_is_preferred_and_the_text_table_cross_checked():
    (found,) = bonnie.parse(fixture("bonnie200a-f-b-n2.txt"))
    assert found.source == "csv"
    assert not [text for text in found.warnings if "text table" in text]  # 20.3m, 158m agree with the CSV
    text = fixture("bonnie200a-n0-text-csv.txt").replace(" 18.8m ", " 28.8m ")
    (found,) = bonnie.parse(text)
    assert found.rates["put_block"] == k(19287)
    assert "bonnie++ text table says sequential output block 3.0199e+07, the CSV line 1.97499e+07: CSV used" in (
        found.warnings)


def test_unreadable_text_next_to_a_csv_line_is_only_skipped():
    (found,) = bonnie.parse(fixture("public-bonnie196-ako-bold-text-csv.txt"))  # "**88826**" in the table
    assert found.source == "csv"
    assert found.warnings == ["bonnie++ text table line 4 not read (a row of the bonnie++ text table (12 figures "
                              "under '/sec %CP')): CSV used"]
    (wrapped,) = bonnie.parse(fixture("public-bonnie103-xfs-mail-wrapped-csv.txt"))
    assert wrapped.source == "csv"


def test_csv_1_98_columns_are_shifted_by_the_seek_fields():
    line = fixture("bonnie200a-n0-text-csv.txt").splitlines()[-1]
    fields = line.split(",")
    assert (len(fields), fields[7], fields[8], fields[11]) == (50, "8192", "5", "19287")
    (found,) = bonnie.parse(line)
    assert found.rates["put_block"] == k(19287)  # field 11 in 1.98, field 9 in 1.96


def test_record_maps_block_output_input_and_seeks():
    tool, (result,) = parse_output(fixture("public-bonnie196-romano-text-csv.txt"))
    assert tool == "bonnie"
    record = make_record(result)
    assert record["tool_version"] == "1.96"
    assert record["job"] == {"name": "romano", "index": 0, "groupid": None, "client": None}
    assert record["metrics"] == {
        "read_bytes_per_s": 386851 * 1024.0,
        "write_bytes_per_s": 590366 * 1024.0,
        "read_iops": 161.6,
        "write_iops": None,
        "fsyncs_per_s": None,
        "latency_ns": {
            "read": {"mean": None, "min": None, "p50": None, "p95": None, "p99": None, "p99_9": None, "p99_99": None, "max": 468e6,
                     "stdev": None},
            "write": {"mean": None, "min": None, "p50": None, "p95": None, "p99": None, "p99_9": None, "p99_99": None,
                      "max": 13696e3, "stdev": None},
            "sync": None,
        },
    }
    for direction in ("read", "write"):
        assert list(record["metrics"]["latency_ns"][direction]) == ["mean", "min", "p50", "p95", "p99", "p99_9", "p99_99", "max", "stdev"]
    assert (record["bytes"], record["seconds"], record["error"]) == (None, None, None)


def test_record_of_an_error_output():
    _tool, (result,) = parse_output(fixture("bonnie200a-error-no-dir.txt"))
    assert result["error"] == 'Can\'t change to directory "/tmp/dpx/nonexistent".'
    assert result["tool_version"] == "2.00a"
    assert result["metrics"]["write_bytes_per_s"] is None


def test_detect_tool_recognises_every_bonnie_fixture():
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".src.md"):
            assert detect.detect_tool(fixture(name)) == "bonnie", name


def test_tool_from_argv_names_bonnie():
    assert detect.tool_from_argv(["/usr/sbin/bonnie++", "-d", "/srv"]) == "bonnie"
    assert detect.tool_from_argv(["bon_csv2txt"]) == "bonnie"


def test_every_fixture_has_a_source_note():
    names = set(os.listdir(FIXTURES))
    for name in names:
        if not name.endswith(".src.md"):
            assert os.path.splitext(name)[0] + ".src.md" in names, name


@pytest.mark.parametrize(
    ("text", "expected_in_message"),
    [
        ("", "bonnie output: expected a bonnie++ CSV line or its 'Sequential Output' text table"),
        ("Using uid:0, gid:0.\nWriting a byte at a time...done\n", "offending line 1: 'Using uid:0, gid:0.'"),
        # a CSV line with a field that is not a bonnie++ figure: named, never guessed
        ("1.96,1.96,h,1,1,4G,,1,2,3x,4,5,6,7,8,9,10,1.1,1,16,,,,,1,1,1,1,1,1,1,1,1,1,1,1,,,,,,,,,,,,\n",
         "an unsigned decimal number, got '3x'"),
        ("1.96,1.96,h,1,1,4G,,1,2,3,4,5,6,7,8,9,10,1.1,1,16,,,,,1,1,1,1,1,1,1,1,1,1,1,1,5parsec,,,,,,,,,,,\n",
         "a latency like '8510us', '101ms' or '12s', got '5parsec'"),
        ("1.96,1.96,h,1,1,4Q,,1,2,3,4,5,6,7,8,9,10,1.1,1,16,,,,,1,1,1,1,1,1,1,1,1,1,1,1,,,,,,,,,,,,\n",
         "a file size like '4G' or '7423M', got '4Q'"),
        ("h,4G,1,2,3,4,5,6,7,8,9,10,1.1,1,16,1,1,1,1,1,1,1,1,1,1,1,1,1\n",  # 28 fields: no bonnie++ layout
         "text table; offending line 1: 'h,4G,1,2,3,4,5,6,7,8,9,10,1.1,1,16,1,1,1,1,1,1,1,1,1,1,1,1,1'"),
        ("1.96,1.96,h,1,1,4G,,1,2,3,4,5,6,7,8,9,10,1.1,1,16,,,,,1,1,1,1,1,1,1,1,1,1,1,1,,,,,,,,,,,,,\n",  # 49 fields
         "text table; offending line 1: '1.96,1.96,h,1,1,4G,"),
        ("x.96,x.96,h,1,1,4G,,1,2,3,4,5,6,7,8,9,10,1.1,1,16,,,,,1,1,1,1,1,1,1,1,1,1,1,1,,,,,,,,,,,,\n",
         "a bonnie++ CSV line of 27 (1.03), 48 (1.96/1.97) or 50 (1.98) fields, got 48"),
        # a text table only, with a rate bonnie++ 1.98 would never print without its unit
        ("Version 2.00a       ------Sequential Output------ --Sequential Input- --Random-\n"
         "                    -Per Chr- --Block-- -Rewrite- -Per Chr- --Block-- --Seeks--\n"
         "Name:Size etc        /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP\n"
         "lab-loop3      128M  1589  90 18.8m   5 19.8m   0 2470k  86 21.3m   0 317.3   2\n",
         "a rate with its k, m or g suffix (bonnie++ 1.98+ text), got '1589'"),
        ("Version  1.96       ------Sequential Output------ --Sequential Input- --Random-\n"
         "Machine        Size K/sec %CP K/sec %CP K/sec %CP K/sec %CP K/sec %CP  /sec %CP\n"
         "host           300M   497  99 20283  10 17431  12  2582  99 1+2+3 +++ +++++ +++\n",
         "offending line 3"),
    ],
)
def test_malformed_input_raises_parse_error_naming_the_line(text, expected_in_message):
    with pytest.raises(ParseError) as caught:
        bonnie.parse(text)
    assert expected_in_message in str(caught.value)
    assert caught.value.tool == "bonnie"
