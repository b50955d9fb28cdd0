# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""diskproof.fleet.report driven for real: ansible-playbook runs a fleet of local hosts (plus a
failing and an unreachable one) whose tasks return synthetic schema 1 records through the
test module library/emit_records.py; the table, report.json, results.csv and junit.xml are checked
exactly, report.json against docs/report.schema.json and junit.xml against junit.xsd (see junit.xsd.src.md)."""
from __future__ import annotations

import csv
import json
import re
import socket
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible.release import __version__ as ansible_version
from lxml import etree

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate
from ansible_collections.diskproof.fleet.plugins.plugin_utils._aggregate import VERDICTS

SEQ_BLOCK_SIZE = 1048576
RAND_BLOCK_SIZE = 4096


def make_record(test, path, device, *, tool, block_size, seconds, bytes_moved, read_bytes_per_s=None, write_bytes_per_s=None,
                read_iops=None, write_iops=None, error=None):
    """A schema 1 result record, as diskproof.fleet.bench_run returns it."""
    return {
        "schema": 1,
        "test": test,
        "tool": tool,
        "tool_version": "9.1" if tool == "dd" else "3.33",
        "target": {"path": path, "device": device},
        "params": {"block_size": block_size, "size_bytes": 268435456, "direct": tool == "fio", "sync": "fdatasync" if tool == "dd" else None},
        "metrics": {
            "read_bytes_per_s": read_bytes_per_s,
            "write_bytes_per_s": write_bytes_per_s,
            "read_iops": read_iops,
            "write_iops": write_iops,
            "fsyncs_per_s": None,
            "latency_ns": {"read": None, "write": None, "sync": None},
        },
        "bytes": bytes_moved,
        "seconds": seconds,
        "started": "2026-11-22T00:00:00Z",
        "finished": "2026-11-22T00:00:05Z",
        "command": None,
        "exit_code": 1 if error else 0,
        "raw_sha256": "0" * 64,
        "device_io": None,
        "warnings": [],
        "error": error,
    }


def seq_write(path, device, write_bytes_per_s, error=None):
    """dd sequential write, 5 s; bytes follow from the rate."""
    seconds = 5.0
    bytes_moved = int(write_bytes_per_s * seconds) if write_bytes_per_s else 52428800
    return make_record("dd_seq_write", path, device, tool="dd", block_size=SEQ_BLOCK_SIZE, seconds=seconds, bytes_moved=bytes_moved,
                       write_bytes_per_s=write_bytes_per_s, error=error)


def rand_read(path, device, read_iops, error=None):
    """fio 4 KiB random read, 10 s; bytes per second follow from the IOPS."""
    seconds = 10.0
    read_bytes_per_s = float(read_iops * RAND_BLOCK_SIZE) if read_iops else None
    bytes_moved = int(read_iops * RAND_BLOCK_SIZE * seconds) if read_iops else 0
    return make_record("fio_rand_read", path, device, tool="fio", block_size=RAND_BLOCK_SIZE, seconds=seconds, bytes_moved=bytes_moved,
                       read_bytes_per_s=read_bytes_per_s, read_iops=float(read_iops) if read_iops else None, error=error)


def local_host():
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def unreachable_host():
    # Nothing listens on port 1: ssh is refused at once; ConnectTimeout caps it if packets vanish.
    return {
        "ansible_connection": "ssh",
        "ansible_host": "127.0.0.1",
        "ansible_port": 1,
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }


D0, D1 = "/srv/diskproof/d0", "/srv/diskproof/d1"
NO_SPACE = "dd: error writing '/srv/diskproof/d0/diskproof.testfile': No space left on device"
IO_ERROR = "fio: io_u error on file /srv/diskproof/d1/diskproof.testfile: Input/output error"
UNREACHABLE = "Failed to connect to the host via ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused"

# One non-loop task: n03 is 25 % slow, n04's dd fails but still returns its record.
SEQ_WRITE = {
    "n01": [seq_write(D0, "sdb", 200e6)],
    "n02": [seq_write(D0, "sdb", 205e6)],
    "n03": [seq_write(D0, "sdb", 150e6)],
    "n04": [seq_write(D0, "sdb", None, error=NO_SPACE)],
}
SEQ_WRITE_FAIL = {"n04": "dd exited 1"}
# One loop task, an item per target: n02's d1 fails with no record, n03's d1 fails with an error
# record, n03's d0 is 39 % slow.
RAND_READ = {
    "n01": [{"label": "d0", "records": [rand_read(D0, "sdb", 20000)]}, {"label": "d1", "records": [rand_read(D1, "sdc", 19500)]}],
    "n02": [{"label": "d0", "records": [rand_read(D0, "sdb", 21000)]}, {"label": "d1", "records": [], "fail_msg": "fio exited 1 without output"}],
    "n03": [{"label": "d0", "records": [rand_read(D0, "sdb", 12000)]},
            {"label": "d1", "records": [rand_read(D1, "sdc", None, error=IO_ERROR)], "fail_msg": "fio reported an I/O error"}],
}

FLEET_INVENTORY = {"all": {"children": {"fleet": {"hosts": {
    "n01": local_host(), "n02": local_host(), "n03": local_host(), "n04": local_host(), "n05": local_host(), "n06": unreachable_host(),
}}}}}

# The outlier limit the fleet run is judged with: the expected reasons below say "limit -15%".
FLEET_OUTLIER_FRACTION = 0.15
FLEET_PLAYBOOK = [{
    "name": "Emit synthetic diskproof records",
    "hosts": "fleet",
    "gather_facts": False,
    "vars": {"seq_write": SEQ_WRITE, "seq_write_fail": SEQ_WRITE_FAIL, "rand_read": RAND_READ},
    "tasks": [
        {"name": "Preflight", "ansible.builtin.fail": {"msg": "preflight refused: /srv/diskproof/d0 is mounted read-only"},
         "when": "inventory_hostname == 'n05'"},
        {"name": "Sequential write", "ansible.legacy.emit_records": {
            "records": "{{ seq_write[inventory_hostname] | default([]) }}",
            "fail_msg": "{{ seq_write_fail[inventory_hostname] | default(omit) }}"}},
        {"name": "Random read", "ansible.legacy.emit_records": {"records": "{{ item.records }}", "fail_msg": "{{ item.fail_msg | default(omit) }}"},
         "loop": "{{ rand_read[inventory_hostname] | default([]) }}", "loop_control": {"label": "{{ item.label }}"}},
    ],
}]

EXPECTED_TABLE = [
    "diskproof fleet report: 12 results, 6 hosts (MB/s = 10^6 B/s, MiB/s = 2^20 B/s)",
    "host  target             device  test            MB/s  MiB/s   IOPS  verdict       reason",
    "----  -----------------  ------  -------------  -----  -----  -----  ------------  " + "-" * 109,
    "n03   /srv/diskproof/d1  sdc     fio_rand_read      -      -      -  error         "
    "fio: io_u error on file /srv/diskproof/d1/diskproof.testfile: Input/output error",
    "n04   /srv/diskproof/d0  sdb     dd_seq_write       -      -      -  error         "
    "dd: error writing '/srv/diskproof/d0/diskproof.testfile': No space left on device",
    "n02   -                  -       -                  -      -      -  not_measured  failed in task 'Random read': fio exited 1 without output",
    "n05   -                  -       -                  -      -      -  not_measured  "
    "failed in task 'Preflight': preflight refused: /srv/diskproof/d0 is mounted read-only",
    "n06   -                  -       -                  -      -      -  not_measured  "
    "unreachable: Failed to connect to the host via ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused",
    "n03   /srv/diskproof/d0  sdb     fio_rand_read   49.2   46.9  12000  outlier       -39.2% vs median 19750 IOPS (n=4), limit -15%",
    "n03   /srv/diskproof/d0  sdb     dd_seq_write   150.0  143.1      -  outlier       -25.0% vs median 200.0 MB/s (n=3), limit -15%",
    "n01   /srv/diskproof/d1  sdc     fio_rand_read   79.9   76.2  19500  pass          -1.3% vs median 19750 IOPS (n=4)",
    "n01   /srv/diskproof/d0  sdb     dd_seq_write   200.0  190.7      -  pass          +0.0% vs median 200.0 MB/s (n=3)",
    "n01   /srv/diskproof/d0  sdb     fio_rand_read   81.9   78.1  20000  pass          +1.3% vs median 19750 IOPS (n=4)",
    "n02   /srv/diskproof/d0  sdb     dd_seq_write   205.0  195.5      -  pass          +2.5% vs median 200.0 MB/s (n=3)",
    "n02   /srv/diskproof/d0  sdb     fio_rand_read   86.0   82.0  21000  pass          +6.3% vs median 19750 IOPS (n=4)",
    "verdicts: error 2, not_measured 3, outlier 2, pass 5; acceptance FAILED",
    "report: {dir}/report.json (also {dir}/results.csv, {dir}/junit.xml, {dir}/report.md, {dir}/report.html)",
]

# (host, test, target path, verdict), worst first, exactly once each: loop summaries add nothing.
EXPECTED_ENTRIES = [
    ("n03", "fio_rand_read", D1, "error"),
    ("n04", "dd_seq_write", D0, "error"),
    ("n02", None, None, "not_measured"),
    ("n05", None, None, "not_measured"),
    ("n06", None, None, "not_measured"),
    ("n03", "fio_rand_read", D0, "outlier"),
    ("n03", "dd_seq_write", D0, "outlier"),
    ("n01", "fio_rand_read", D1, "pass"),
    ("n01", "dd_seq_write", D0, "pass"),
    ("n01", "fio_rand_read", D0, "pass"),
    ("n02", "dd_seq_write", D0, "pass"),
    ("n02", "fio_rand_read", D0, "pass"),
]

CSV_HEADER = ["host", "target_path", "device", "test", "tool", "verdict", "reason",
              "read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "seconds", "bytes", "error", "serial", "model",
              "likely_causes"]
EXPECTED_CSV_ROWS = [
    ["n03", D1, "sdc", "fio_rand_read", "fio", "error", IO_ERROR, "", "", "", "", "10.0", "0", IO_ERROR],
    ["n04", D0, "sdb", "dd_seq_write", "dd", "error", NO_SPACE, "", "", "", "", "5.0", "52428800", NO_SPACE],
    ["n02", "", "", "", "", "not_measured", "failed in task 'Random read': fio exited 1 without output", "", "", "", "", "", "", ""],
    ["n05", "", "", "", "", "not_measured", "failed in task 'Preflight': preflight refused: /srv/diskproof/d0 is mounted read-only",
     "", "", "", "", "", "", ""],
    ["n06", "", "", "", "", "not_measured", "unreachable: " + UNREACHABLE, "", "", "", "", "", "", ""],
    ["n03", D0, "sdb", "fio_rand_read", "fio", "outlier", "'-39.2% vs median 19750 IOPS (n=4), limit -15%", "49152000.0", "", "12000.0", "", "10.0",
     "491520000", ""],
    ["n03", D0, "sdb", "dd_seq_write", "dd", "outlier", "'-25.0% vs median 200.0 MB/s (n=3), limit -15%", "", "150000000.0", "", "", "5.0", "750000000", ""],
    ["n01", D1, "sdc", "fio_rand_read", "fio", "pass", "'-1.3% vs median 19750 IOPS (n=4)", "79872000.0", "", "19500.0", "", "10.0", "798720000", ""],
    ["n01", D0, "sdb", "dd_seq_write", "dd", "pass", "'+0.0% vs median 200.0 MB/s (n=3)", "", "200000000.0", "", "", "5.0", "1000000000", ""],
    ["n01", D0, "sdb", "fio_rand_read", "fio", "pass", "'+1.3% vs median 19750 IOPS (n=4)", "81920000.0", "", "20000.0", "", "10.0", "819200000", ""],
    ["n02", D0, "sdb", "dd_seq_write", "dd", "pass", "'+2.5% vs median 200.0 MB/s (n=3)", "", "205000000.0", "", "", "5.0", "1025000000", ""],
    ["n02", D0, "sdb", "fio_rand_read", "fio", "pass", "'+6.3% vs median 19750 IOPS (n=4)", "86016000.0", "", "21000.0", "", "10.0", "860160000", ""],
]

# Every verdict is counted (the judge's list: _aggregate.VERDICTS), most of them 0 here.
EXPECTED_COUNTS = dict({verdict: 0 for verdict in VERDICTS}, error=2, not_measured=3, outlier=2)
EXPECTED_COUNTS["pass"] = 5
EXPECTED_HOSTS = {
    "n01": {"status": "ok", "records": 3, "problems": []},
    "n02": {"status": "failed", "records": 2, "problems": [{"task": "Random read", "status": "failed", "message": "fio exited 1 without output"}]},
    "n03": {"status": "failed", "records": 3, "problems": []},
    "n04": {"status": "failed", "records": 1, "problems": []},
    "n05": {"status": "failed", "records": 0,
            "problems": [{"task": "Preflight", "status": "failed", "message": "preflight refused: /srv/diskproof/d0 is mounted read-only"}]},
    "n06": {"status": "unreachable", "records": 0, "problems": [{"task": "Sequential write", "status": "unreachable", "message": UNREACHABLE}]},
}
# No model in the synthetic records: grouped by test and rotational (unknown).
EXPECTED_GROUPS = [
    {"key": ["dd_seq_write", "rotational=null"], "basis": "test_rotational", "metric": "bytes_per_s", "measured": 3, "median": 200e6, "mad": 5e6,
     "min": 150e6, "max": 205e6, "judged": True, "spread": pytest.approx(1.4826 * 5e6 / 200e6), "pooled_cv": None},
    {"key": ["fio_rand_read", "rotational=null"], "basis": "test_rotational", "metric": "iops", "measured": 4, "median": 19750.0, "mad": 750.0,
     "min": 12000.0, "max": 21000.0, "judged": True, "spread": pytest.approx(1.4826 * 750.0 / 19750.0), "pooled_cv": None},
]
UTC_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
WARNING_TEXT = "diskproof.fleet.report disabled after an error in"


def _input_records():
    records = {host: list(host_records) for host, host_records in SEQ_WRITE.items()}
    for host, items in RAND_READ.items():
        for item in items:
            records[host].extend(item["records"])
    return records


def report_block(stdout):
    """The callback's console output: from its title line to its 'report:' line, both included."""
    lines = stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("diskproof fleet report"))
    end = next(index for index in range(start, len(lines)) if lines[index].startswith("report: "))
    return lines[start:end + 1]


def _one_line(text):
    # Warnings may be wrapped to the terminal width; ansible-core < 2.19 also breaks lines after a hyphen
    # (a /tmp/pytest-of-root path), which must join without a space.
    return " ".join(re.sub(r"(?<=\S-)\n", "", text).split())


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory, make_playbook_runner):
    workdir = tmp_path_factory.mktemp("fleet")
    report_dir = workdir / "out"
    # The outlier limit the expected reasons quote ("limit -15%"); every other setting is the callback's default.
    env = {"DISKPROOF_REPORT_DIR": str(report_dir), "DISKPROOF_OUTLIER_FRACTION": str(FLEET_OUTLIER_FRACTION)}
    completed = make_playbook_runner(workdir).run(FLEET_INVENTORY, FLEET_PLAYBOOK, env)
    return completed, report_dir


@pytest.fixture(scope="module")
def fleet_report(fleet_run):
    return json.loads((fleet_run[1] / "report.json").read_text())


def test_play_outcome_is_untouched_by_the_callback(fleet_run):
    completed = fleet_run[0]
    # 4: a host was unreachable (ansible-playbook's own code). The callback adds no failure and no warning.
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert WARNING_TEXT not in _one_line(completed.stderr)


def test_console_table(fleet_run):
    completed, report_dir = fleet_run
    assert report_block(completed.stdout) == [line.format(dir=report_dir) for line in EXPECTED_TABLE]


def test_report_json_summary(fleet_report):
    summary = fleet_report["summary"]
    assert summary["counts"] == EXPECTED_COUNTS
    assert summary["total"] == len(EXPECTED_ENTRIES)
    failing = [(row["host"], row["test"], row["target_path"], row["verdict"]) for row in summary["failing"]]
    assert failing == [entry for entry in EXPECTED_ENTRIES if entry[3] != "pass"]


def test_report_json_hosts_groups_rules(fleet_report):
    assert fleet_report["report_schema"] == 2
    assert fleet_report["hosts"] == EXPECTED_HOSTS
    assert fleet_report["groups"] == EXPECTED_GROUPS
    rules = dict(fleet_report["rules"])
    assert rules.pop("verdict_precedence") == list(VERDICTS) and VERDICTS[-1] == "pass"
    # The judge's own defaults (plugin_utils/_aggregate.py Settings) but the limit the run set.
    assert rules == dict(_aggregate.Settings()._asdict(), outlier_fraction=FLEET_OUTLIER_FRACTION, min_peers=_aggregate.MIN_PEERS,
                         small_block_max_bytes=_aggregate.SMALL_BLOCK_MAX_BYTES,
                         cache_bypass_min_fraction=_aggregate.CACHE_BYPASS_MIN_FRACTION, acceptance=[], source=None, errors=[])
    assert fleet_report["baseline"] == {"source": None, "started": None, "disks_tests": 0, "hosts_without_baseline": [], "errors": []}


def test_report_json_run_metadata(fleet_report, playbook_runner):
    run = fleet_report["run"]
    galaxy = playbook_runner.repo_root / "galaxy.yml"
    galaxy_version = str(yaml.safe_load(galaxy.read_text())["version"]) if galaxy.exists() else None
    assert UTC_TIMESTAMP.match(run["started"]) and UTC_TIMESTAMP.match(run["finished"])
    assert run["started"] <= run["finished"]
    assert {key: value for key, value in run.items() if key not in ("started", "finished")} == {
        "controller_hostname": socket.gethostname(),
        "ansible_version": ansible_version,
        "collection_version": galaxy_version,
        "playbook": "fleet.yml",
        "inventory_size": 6,
        "targeted_hosts": 6,
    }


def test_report_json_every_record_once_unchanged(fleet_report):
    entries = fleet_report["results"]
    assert [(entry["host"], entry["test"], entry["target_path"], entry["verdict"]) for entry in entries] == EXPECTED_ENTRIES
    received = {}
    for entry in entries:
        if entry["record"] is not None:
            received.setdefault(entry["host"], []).append(entry["record"])
    expected = _input_records()

    # Same records, byte for byte, whatever order the verdicts put them in.
    def canonical(records):
        return sorted(json.dumps(record, sort_keys=True) for record in records)

    assert {host: canonical(records) for host, records in received.items()} == {host: canonical(records) for host, records in expected.items()}


@pytest.mark.parametrize(("host", "test", "path", "primary_metric", "deviation"), [
    ("n03", "dd_seq_write", D0, {"name": "bytes_per_s", "value": 150e6}, -0.25),
    ("n03", "fio_rand_read", D0, {"name": "iops", "value": 12000.0}, (12000 - 19750) / 19750),
    ("n02", "dd_seq_write", D0, {"name": "bytes_per_s", "value": 205e6}, 0.025),
])
def test_report_json_primary_metric_and_deviation(fleet_report, host, test, path, primary_metric, deviation):
    entry = next(entry for entry in fleet_report["results"] if (entry["host"], entry["test"], entry["target_path"]) == (host, test, path))
    assert entry["primary_metric"] == primary_metric
    assert entry["deviation_from_median"] == pytest.approx(deviation)


def test_results_csv_rows(fleet_run):
    with open(fleet_run[1] / "results.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == CSV_HEADER
    # serial, model and likely causes: the synthetic records carry no serial, model or disk state. A reason is text:
    # one that begins with a sign is written with a leading ' (a spreadsheet would run it as a formula;
    # docs/report-files.md).
    assert rows[1:] == [row + ["", "", ""] for row in EXPECTED_CSV_ROWS]


def test_report_files_written_atomically_and_readable(fleet_run):
    names = sorted(path.name for path in fleet_run[1].iterdir())
    # No temp file left behind, both files shareable.
    assert names == ["junit.xml", "report.html", "report.json", "report.md", "results.csv"]
    assert all((fleet_run[1] / name).stat().st_mode & 0o777 == 0o644 for name in names)


@pytest.mark.parametrize("how", ["env", "ini"])
def test_options_from_env_and_ini(playbook_runner, how):
    if how == "env":
        report_dir = playbook_runner.workdir / "env-report"
        completed = playbook_runner.run(FLEET_INVENTORY, FLEET_PLAYBOOK, {"DISKPROOF_REPORT_DIR": str(report_dir), "DISKPROOF_OUTLIER_FRACTION": "0.3"})
    else:
        # A relative report_dir in ansible.cfg is relative to the file's directory.
        report_dir = playbook_runner.workdir / "ini-report"
        config = "[defaults]\n\n[diskproof_report]\nreport_dir = ini-report\noutlier_fraction = 0.3\n"
        completed = playbook_runner.run(FLEET_INVENTORY, FLEET_PLAYBOOK, config_text=config)
    report = json.loads((report_dir / "report.json").read_text())
    reasons = {(entry["host"], entry["test"], entry["target_path"]): (entry["verdict"], entry["reason"]) for entry in report["results"]}
    # 25 % below the median is within a 30 % limit, but 6.7 x the noise of a tight group (MAD 5 MB/s: spread 3.7 %);
    # 39 % below breaks the 30 % limit.
    assert reasons[("n03", "dd_seq_write", D0)] == (
        "outlier", "-25.0% vs median 200.0 MB/s (n=3); no repeats, group spread 3.7%: 6.7 x the noise (limit 3.5 x)")
    assert reasons[("n03", "fio_rand_read", D0)] == ("outlier", "-39.2% vs median 19750 IOPS (n=4), limit -30%")
    assert report["rules"]["outlier_fraction"] == 0.3
    assert report["summary"]["counts"] == EXPECTED_COUNTS
    assert report_block(completed.stdout)[-1] == (
        "report: {0}/report.json (also {0}/results.csv, {0}/junit.xml, {0}/report.md, {0}/report.html)".format(report_dir))


OK_INVENTORY = {"all": {"hosts": {"n01": local_host()}}}
OK_PLAYBOOK = [{"name": "One record", "hosts": "all", "gather_facts": False, "tasks": [
    {"name": "Sequential write", "ansible.legacy.emit_records": {"records": [seq_write(D0, "sdb", 200e6)]}},
]}]


@pytest.mark.parametrize(("problem", "extra_env", "handler"), [
    ("report_dir is a regular file", {"DISKPROOF_REPORT_DIR": "{workdir}/not-a-dir"}, "v2_playbook_on_stats"),
    ("outlier_fraction out of range", {"DISKPROOF_OUTLIER_FRACTION": "1.5"}, "set_options"),
])
def test_callback_problem_warns_disables_and_never_fails_the_play(playbook_runner, problem, extra_env, handler):
    (playbook_runner.workdir / "not-a-dir").write_text("a file where the report directory should be\n")
    env = {key: value.format(workdir=playbook_runner.workdir) for key, value in extra_env.items()}
    completed = playbook_runner.run(OK_INVENTORY, OK_PLAYBOOK, env)
    assert completed.returncode == 0, problem + ": " + completed.stdout + completed.stderr
    assert "%s %s:" % (WARNING_TEXT, handler) in _one_line(completed.stderr), problem
    assert not [line for line in completed.stdout.splitlines() if line.startswith("report: ")]


def test_run_without_records_or_problems_writes_nothing(playbook_runner):
    playbook = [{"name": "No benchmark", "hosts": "all", "gather_facts": False, "tasks": [{"name": "Ping", "ansible.builtin.ping": {}}]}]
    report_dir = playbook_runner.workdir / "report"
    completed = playbook_runner.run(OK_INVENTORY, playbook, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "diskproof fleet report: no diskproof_results in this run, nothing written" in completed.stdout.splitlines()
    assert not report_dir.exists()


def test_ansible_doc_renders(playbook_runner):
    completed = playbook_runner.ansible_doc("-t", "callback", "diskproof.fleet.report")
    assert completed.returncode == 0, completed.stderr
    text = _one_line(completed.stdout)
    expected_phrases = ("report_dir", "DISKPROOF_REPORT_DIR", "[diskproof_report]", "outlier_fraction", "DISKPROOF_OUTLIER_FRACTION",
                        "default: ./diskproof-report", "rules_file", "DISKPROOF_RULES_FILE", "baseline_file", "DISKPROOF_BASELINE_FILE",
                        "peer_group", "DISKPROOF_PEER_GROUP", "max_cv", "DISKPROOF_MAX_CV", "regression_fraction", "DISKPROOF_REGRESSION_FRACTION")
    for expected in expected_phrases:
        assert expected in text, expected


# ---------------------------------------------------------------------------------------------
# report.json against the shipped schema, junit.xml against the JUnit XSD
# ---------------------------------------------------------------------------------------------

SCHEMA_PATH = Path(__file__).resolve().parents[4] / "docs" / "report.schema.json"
JUNIT_XSD = Path(__file__).resolve().parent / "junit.xsd"


def test_report_json_validates_against_the_shipped_schema(fleet_report):
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(fleet_report)


def test_markdown_and_html_are_what_the_pipeline_makes_of_report_json(fleet_run):
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _render
    report = json.loads((fleet_run[1] / "report.json").read_text())
    assert (fleet_run[1] / "report.md").read_text() == _render.render_markdown(*judged_again(report))
    assert (fleet_run[1] / "report.html").read_text() == _render.render_html(*judged_again(report))


def test_junit_xml_validates_against_the_junit_xsd(fleet_run):
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    document = etree.parse(str(fleet_run[1] / "junit.xml"))
    schema.assertValid(document)


def test_junit_xml_suites_cases_failures(fleet_run):
    root = etree.parse(str(fleet_run[1] / "junit.xml")).getroot()
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert sorted(suites) == ["n01", "n02", "n03", "n04", "n05", "n06"]
    counts = {name: (suite.get("tests"), suite.get("failures"), suite.get("errors")) for name, suite in suites.items()}
    assert counts == {"n01": ("3", "0", "0"), "n02": ("3", "0", "1"), "n03": ("3", "2", "1"), "n04": ("1", "0", "1"),
                      "n05": ("1", "0", "1"), "n06": ("1", "0", "1")}
    n03 = {case.get("name"): case for case in suites["n03"].findall("testcase")}
    assert sorted(n03) == ["dd_seq_write /srv/diskproof/d0", "fio_rand_read /srv/diskproof/d0", "fio_rand_read /srv/diskproof/d1"]
    failure = n03["dd_seq_write /srv/diskproof/d0"].find("failure")
    assert (failure.get("type"), failure.get("message")) == ("outlier", "-25.0% vs median 200.0 MB/s (n=3), limit -15%")
    assert n03["fio_rand_read /srv/diskproof/d1"].find("error").get("type") == "error"
    unreachable = suites["n06"].find("testcase")
    assert unreachable.get("name") == "host problem"
    assert unreachable.find("error").get("message") == "unreachable: " + UNREACHABLE


# ---------------------------------------------------------------------------------------------
# rules, baseline, colour
# ---------------------------------------------------------------------------------------------

def identified(rate, serial):
    record = seq_write(D0, "sda", rate)
    record["target"].update(model="ST4000NM0035", firmware="TN04", size_bytes=4000787030016, serial=serial, wwn=None, rotational=True,
                            transport="sata")
    return record


RULES_YAML = """\
rules:
  - name: archive HDDs
    match: {test: dd_seq_write, model: "ST4000*"}
    min_write_mb_per_s: 150
"""
RULED_INVENTORY = {"all": {"hosts": {"n01": local_host(), "n02": local_host(), "n03": local_host(), "n04": local_host()}}}
RULED_RECORDS = {"n01": [identified(200e6, "ZC1")], "n02": [identified(205e6, "ZC2")], "n03": [identified(195e6, "ZC3")],
                 "n04": [identified(140e6, "ZC4")]}


def ruled_playbook(play_vars=None):
    return [{"name": "Identified disks", "hosts": "n0*", "gather_facts": False, "vars": dict({"records": RULED_RECORDS}, **(play_vars or {})),
             "tasks": [{"name": "Sequential write", "ansible.legacy.emit_records": {"records": "{{ records[inventory_hostname] }}"}}]}]


def _verdicts(report):
    return {entry["host"]: (entry["verdict"], entry["reason"]) for entry in report["results"]}


def test_rules_file_and_baseline(playbook_runner):
    rules_file = playbook_runner.workdir / "acceptance.yml"
    rules_file.write_text(RULES_YAML)
    baseline_file = playbook_runner.workdir / "baseline.json"
    baseline_file.write_text(json.dumps({"report_schema": 1, "run": {"started": "2026-10-01T00:00:00Z"},
                                         "results": [{"record": identified(230e6, "ZC3")}, {"record": identified(150e6, "ZC4")}]}))
    report_dir = playbook_runner.workdir / "out"
    completed = playbook_runner.run(RULED_INVENTORY, ruled_playbook(), {
        "DISKPROOF_REPORT_DIR": str(report_dir), "DISKPROOF_RULES_FILE": str(rules_file), "DISKPROOF_BASELINE_FILE": str(baseline_file)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert _verdicts(report) == {
        "n01": ("pass", "+1.3% vs median 197.5 MB/s (n=4)"),
        "n02": ("pass", "+3.8% vs median 197.5 MB/s (n=4)"),
        "n03": ("regressed", "-15.2% vs baseline 230.0 MB/s (serial ZC3), limit -10%"),
        "n04": ("slow", "rule 1 'archive HDDs': write 140.0 MB/s < minimum 150.0 MB/s"),
    }
    n04 = next(entry for entry in report["results"] if entry["host"] == "n04")
    assert [finding["verdict"] for finding in n04["reasons"]] == ["slow", "outlier"]
    assert report["rules"]["source"] == str(rules_file)
    assert report["baseline"]["source"] == str(baseline_file) and report["baseline"]["disks_tests"] == 2
    assert report["summary"]["passed"] is False
    assert report["groups"][0]["key"] == ["dd_seq_write", "model=ST4000NM0035", "firmware=TN04", "size_bytes=4000787030016"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(report)
    etree.XMLSchema(etree.parse(str(JUNIT_XSD))).assertValid(etree.parse(str(report_dir / "junit.xml")))


@pytest.mark.parametrize("handed_over", [True, False], ids=["checked-by-the-action", "never-handed-over"])
def test_rules_from_the_play_variable_count_once_the_action_hands_them_over(playbook_runner, handed_over):
    """Without a report play, the play's report variables reach the callback through the action
    diskproof.fleet.report (validate.yml's first task); a playbook that never calls it is judged with the
    callback's own options."""
    report_dir = playbook_runner.workdir / "out"
    playbook = ruled_playbook({"diskproof_acceptance": yaml.safe_load(RULES_YAML)})
    if handed_over:
        playbook[0]["tasks"].insert(0, {"name": "Check the report's inputs", "diskproof.fleet.report": {}, "run_once": True})
    completed = playbook_runner.run(RULED_INVENTORY, playbook, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert report["rules"]["source"] == ("variable diskproof_acceptance" if handed_over else None)
    assert _verdicts(report)["n04"][0] == ("slow" if handed_over else "outlier")


def test_malformed_rules_warn_are_reported_and_fail_the_summary_not_the_play(playbook_runner):
    rules_file = playbook_runner.workdir / "acceptance.yml"
    rules_file.write_text("rules:\n  - match: {modle: ST4000*}\n    min_write_mb_per_s: 150\n")
    report_dir = playbook_runner.workdir / "out"
    completed = playbook_runner.run(RULED_INVENTORY, ruled_playbook(), {"DISKPROOF_REPORT_DIR": str(report_dir), "DISKPROOF_RULES_FILE": str(rules_file)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    error = "rules[0].match.modle: unknown key (allowed: class, firmware, host, model, rotational, serial, test, transport, wwn)"
    assert "acceptance rules from %s not used: %s" % (rules_file, error) in _one_line(completed.stderr)
    assert WARNING_TEXT not in _one_line(completed.stderr)
    report = json.loads((report_dir / "report.json").read_text())
    assert report["rules"]["errors"] == [error]
    assert report["rules"]["acceptance"] == []
    # Judged without rules: n04 is only an outlier.
    assert _verdicts(report)["n04"][0] == "outlier"
    assert report["summary"]["input_errors"] == ["rules: " + error]


def test_unreadable_baseline_warns(playbook_runner):
    report_dir = playbook_runner.workdir / "out"
    missing = playbook_runner.workdir / "missing.json"
    completed = playbook_runner.run(RULED_INVENTORY, ruled_playbook(), {"DISKPROOF_REPORT_DIR": str(report_dir), "DISKPROOF_BASELINE_FILE": str(missing)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "baseline not used: cannot use %s" % missing in _one_line(completed.stderr)
    report = json.loads((report_dir / "report.json").read_text())
    assert len(report["baseline"]["errors"]) == 1 and report["summary"]["passed"] is False


@pytest.mark.parametrize(("extra_env", "coloured"), [
    ({"ANSIBLE_NOCOLOR": "0"}, False),  # captured output is not a terminal
    ({"ANSIBLE_NOCOLOR": "0", "ANSIBLE_FORCE_COLOR": "1"}, True),
])
def test_table_colour_only_on_a_terminal(playbook_runner, extra_env, coloured):
    completed = playbook_runner.run(RULED_INVENTORY, ruled_playbook(), dict(extra_env, DISKPROOF_REPORT_DIR=str(playbook_runner.workdir / "out")))
    lines = completed.stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if "diskproof fleet report" in line)
    table = lines[start:start + 9]
    assert any("\x1b[" in line for line in table) is coloured


# ---------------------------------------------------------------------------------------------
# the filters in a playbook
# ---------------------------------------------------------------------------------------------

def test_fleet_report_and_report_summary_filters(playbook_runner):
    playbook = ruled_playbook() + [{"name": "Judge on the controller", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Report", "ansible.builtin.set_fact": {"fleet": (
            "{{ dict(groups['all'] | zip(groups['all'] | map('extract', hostvars) | map(attribute='diskproof_results', default=[])))"
            " | diskproof.fleet.fleet_report(rules=acceptance) }}")}},
        {"name": "Summary", "ansible.builtin.copy": {"content": "{{ fleet | diskproof.fleet.report_summary | to_json }}",
                                                     "dest": str(playbook_runner.workdir / "summary.json")}},
        {"name": "Bad rules fail loudly", "ansible.builtin.debug": {"msg": "{{ {} | diskproof.fleet.fleet_report(rules={'rules': [{}]}) }}"},
         "register": "bad", "ignore_errors": True},
        {"name": "Keep the error", "ansible.builtin.copy": {"content": "{{ bad.msg }}", "dest": str(playbook_runner.workdir / "bad.txt")}},
    ], "vars": {"acceptance": yaml.safe_load(RULES_YAML)}}]
    inventory = {"all": {"hosts": dict(RULED_INVENTORY["all"]["hosts"], localhost=local_host())}}
    completed = playbook_runner.run(inventory, playbook, {"DISKPROOF_REPORT_DIR": str(playbook_runner.workdir / "out")})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    summary = json.loads((playbook_runner.workdir / "summary.json").read_text())
    assert summary["passed"] is False
    # localhost is in groups['all'] and produced nothing: not_measured, never dropped.
    assert summary["failing_hosts"] == ["localhost", "n04"]
    assert summary["counts"]["slow"] == 1 and summary["counts"]["not_measured"] == 1
    assert "bad rules: rules[0]: states no limit" in (playbook_runner.workdir / "bad.txt").read_text()


def test_a_final_judging_play_on_the_controller_leaves_no_trace_in_the_report(playbook_runner):
    """The AWX pattern: records in one play, then a localhost play that only judges, publishes and
    fails the job. Its host (and its deliberate failure) must not become a not_measured disk."""
    inventory = {"all": {"hosts": {"n01": local_host(), "n02": local_host()}}}
    playbook = [dict(OK_PLAYBOOK[0], hosts="n01"), {"name": "Judge on the controller", "hosts": "n02", "gather_facts": False, "tasks": [
        {"name": "Publish", "ansible.builtin.set_stats": {"data": {"judged": True}}},
        {"name": "Fail the job on purpose", "ansible.builtin.fail": {"msg": "acceptance failed"}},
    ]}]
    report_dir = playbook_runner.workdir / "report"
    completed = playbook_runner.run(inventory, playbook, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 2, completed.stdout + completed.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert sorted(report["hosts"]) == ["n01"]
    assert [(entry["host"], entry["verdict"]) for entry in report["results"]] == [("n01", "pass")]


def test_a_host_failing_in_a_measuring_play_before_any_record_is_not_measured(playbook_runner):
    inventory = {"all": {"hosts": {"n01": local_host(), "n02": local_host()}}}
    playbook = [{"name": "Measure", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Preflight", "ansible.builtin.fail": {"msg": "refused"}, "when": "inventory_hostname == 'n02'"},
        {"name": "Sequential write", "ansible.legacy.emit_records": {"records": [seq_write(D0, "sdb", 200e6)]}},
    ]}]
    report_dir = playbook_runner.workdir / "report"
    completed = playbook_runner.run(inventory, playbook, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 2, completed.stdout + completed.stderr
    report = json.loads((report_dir / "report.json").read_text())
    verdicts = {entry["host"]: (entry["verdict"], entry["reason"]) for entry in report["results"]}
    assert sorted(verdicts) == ["n01", "n02"]
    assert verdicts["n01"][0] == "pass"
    assert verdicts["n02"] == ("not_measured", "failed in task 'Preflight': refused")


# ---------------------------------------------------------------------------------------------
# fleet scale: more than 200 results
# ---------------------------------------------------------------------------------------------

FLEET_TARGETS = 70
SCALE_INVENTORY = {"all": {"children": {"fleet": {"hosts": {"n01": local_host(), "n02": local_host(), "n03": local_host()}}}}}


def _scale_records(host):
    # n03's first ten disks run at half speed: 10 outliers among 210 results.
    return [seq_write("/srv/diskproof/d%03d" % index, "sd%03d" % index, (100e6 if host == "n03" and index < 10 else 200e6) + index * 1000.0)
            for index in range(FLEET_TARGETS)]


SCALE_PLAYBOOK = [{
    "name": "Emit many records", "hosts": "fleet", "gather_facts": False,
    "vars": {"records": {host: _scale_records(host) for host in ("n01", "n02", "n03")}},
    "tasks": [{"name": "Sequential write", "ansible.legacy.emit_records": {"records": "{{ records[inventory_hostname] }}"}}],
}]


@pytest.fixture(scope="module")
def scale_run(tmp_path_factory, make_playbook_runner):
    workdir = tmp_path_factory.mktemp("scale")
    report_dir = workdir / "out"
    completed = make_playbook_runner(workdir).run(SCALE_INVENTORY, SCALE_PLAYBOOK, {"DISKPROOF_REPORT_DIR": str(report_dir)})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed, report_dir


def test_fleet_scale_console_lists_only_what_is_not_pass(scale_run):
    completed, report_dir = scale_run
    block = report_block(completed.stdout)
    assert block[0] == "diskproof fleet report: 210 results, 3 hosts (MB/s = 10^6 B/s, MiB/s = 2^20 B/s)"
    rows = block[3:-3]
    assert len(rows) == 10 and all(row.startswith("n03 ") and " outlier " in row for row in rows)
    assert block[-3:] == [
        "200 pass results not listed (more than 200 results); report.json and results.csv hold all 210",
        "verdicts: outlier 10, pass 200; acceptance FAILED",
        "report: {0}/report.json (also {0}/results.csv, {0}/junit.xml, {0}/report.md, {0}/report.html)".format(report_dir),
    ]


def test_fleet_scale_files_hold_every_result(scale_run):
    report_dir = scale_run[1]
    text = (report_dir / "report.json").read_text()
    report = json.loads(text)
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()), format_checker=jsonschema.FormatChecker()).validate(report)
    assert report["summary"]["counts"]["pass"] == 200 and len(report["results"]) == 210
    # One top-level key per line, one entry per line (differences: a key of its own since the likely causes).
    lines = text.splitlines()
    assert lines[5] == '"results":[' and len(lines) == 9 + 210 + 1
    assert all(json.loads(line.rstrip(","))["host"] for line in lines[6:216])
    received = sorted(json.dumps(entry["record"], sort_keys=True) for entry in report["results"])
    assert received == sorted(json.dumps(record, sort_keys=True) for host in ("n01", "n02", "n03") for record in _scale_records(host))
    with open(report_dir / "results.csv", newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == CSV_HEADER and len(rows) == 211
    assert [row[0] for row in rows[1:]] == [entry["host"] for entry in report["results"]]
    junit_document = etree.parse(str(report_dir / "junit.xml"))
    etree.XMLSchema(etree.parse(str(JUNIT_XSD))).assertValid(junit_document)
    assert [suite.get("tests") for suite in junit_document.getroot().findall("testsuite")] == ["70", "70", "70"]
    names = sorted(path.name for path in report_dir.iterdir())
    assert names == ["junit.xml", "report.html", "report.json", "report.md", "results.csv"]


def test_fleet_scale_pages_are_what_the_pipeline_makes_of_report_json(scale_run):
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _render
    report_dir = scale_run[1]
    report = json.loads((report_dir / "report.json").read_text())
    markdown = (report_dir / "report.md").read_text()
    assert markdown == _render.render_markdown(*judged_again(report))
    assert (report_dir / "report.html").read_text() == _render.render_html(*judged_again(report))
    assert ("More than 200 results: the 200 pass results are counted per test and peer group, not listed one by one; "
            "report.json and results.csv hold all 210 results.") in markdown
    assert "n01" not in markdown and markdown.count("| outlier | n03 |") == 10


def judged_again(report):
    """report.json's records and host outcomes judged again (its own settings and run): what the pipeline makes of
    report.json as a record set."""
    from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report
    collection = _report.collection_of(report)
    rules = report["rules"]
    settings = _aggregate.make_settings(**{field: rules[field] for field in _aggregate.Settings._fields})
    return _aggregate.judge_report(collection.by_host, collection.host_statuses, report["run"], settings=settings)
