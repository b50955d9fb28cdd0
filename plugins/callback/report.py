# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback diskproof.fleet.report: collect diskproof_results, judge them, write the report."""
from __future__ import annotations

DOCUMENTATION = r"""
name: report
type: aggregate
short_description: Judge diskproof results across the fleet; write report.json, results.csv, junit.xml, report.md and report.html
version_added: 0.1.0
description:
  - Collects every record of C(ansible_facts.diskproof_results) returned by
    M(diskproof.fleet.bench_facts) as tasks finish (loop items included, and failed tasks that
    still return records), and remembers failed and unreachable hosts and every host a play targeted.
  - At the end of the playbook it judges each record against its peers (same test, disk model,
    firmware and capacity; same test and rotational when the model is unknown; see O(peer_group)),
    against acceptance rules and against a baseline report, and prints a table of host, target,
    test, MB/s (SI, 10^6 B/s), MiB/s (2^20 B/s), IOPS, verdict and reason, worst first, then the
    counts by verdict. Rows are coloured only when the output is a terminal (Ansible's colour settings).
  - "Verdicts, worst first (the precedence when several apply; every finding is kept in the
    report): C(error) (the record carries an error); C(not_measured) (host unreachable, a task
    failed without producing a record, or the host produced no record); C(invalid) (the device
    counters saw less than 95% of the bytes the tool moved: the cache was measured); C(not_steady) (a
    steady-state test, ssd_steady_*, did not reach steady state within its time limit); C(slow) (an
    acceptance rule fails); C(regressed) (more than O(regression_fraction) below the baseline for
    the same serial or WWN and test); C(outlier) (more than O(outlier_fraction) below the group
    median, or a robust z-score below -3.5 while at least 5% below it; judged when at least 3
    measured); C(unstable) (repeat samples vary more than O(max_cv)); C(pass)."
  - The primary metric is IOPS for random-access or small-block (64 KiB or less) tests that report
    IOPS, otherwise bytes per second (read plus write).
  - "Acceptance rules come from O(rules_file) when set, otherwise from the variable
    C(diskproof_acceptance) of a play (play vars or extra vars, read untemplated at play start).
    Malformed rules or an unreadable baseline do not stop the report: a warning names every bad
    key, the fleet is judged without them, report.json lists the errors and C(summary.passed) is false.
    The playbooks validate.yml and acceptance.yml check them first with the lookup
    diskproof.fleet.report_inputs (the same reader and settings) and stop before any host is touched."
  - Writes C(report.json) (run metadata, rules, baseline, hosts, peer groups, every record with
    its verdict and reasons, summary), C(results.csv) (one row per record or host problem) and
    C(junit.xml) (a testsuite per host, a testcase per disk and test), C(report.md) and a
    self-contained C(report.html) (tables and a chart per test) into O(report_dir), each
    atomically. Nothing is written when the run produced no record and no host problem.
    The format of every file is described in the collection's docs/report.md.
  - With more than 200 results (a fleet), the table, C(report.md) and C(report.html) list only the
    results that are not C(pass) one by one and count the passes per test and peer group, saying
    how many they left out; C(report.json), C(results.csv) and C(junit.xml) always hold every
    result. Records are kept in a temporary file, not in memory, until the report is written.
  - A problem inside this callback is reported as a warning and disables the callback; it never
    fails the play.
  - "Every option has a C(diskproof_*) variable, named with the option below, which wins when a play
    sets it (extra vars, play vars, inventory; the last play that sets it counts; thresholds are
    percentages there, e.g. C(diskproof_outlier_percent=15)); the environment and C(ansible.cfg)
    decide when no variable is set. The lookup diskproof.fleet.report_inputs resolves them the same way."
  - "The report play: when a play with the variable C(diskproof_report_play=true) starts (the last
    play of validate.yml, acceptance.yml and merge.yml, playbooks/report.yml), the fleet is judged and
    the files written right then, and the judgement is handed to that play as the variable
    C(diskproof_report) (C(written), C(report_dir), C(files), C(summary) as the filter
    diskproof.fleet.report_summary gives it), so its set_stats, the report store and the job's
    status come from the judgement report.json holds. Nothing is judged again at the end of the
    playbook unless more results arrived after that play started."
requirements:
  - enable in configuration, for example C(callbacks_enabled = diskproof.fleet.report) in the
    C([defaults]) section of C(ansible.cfg).
options:
  report_dir:
    description:
      - Directory that receives C(report.json), C(results.csv), C(junit.xml), C(report.md) and C(report.html);
        created when missing.
      - A relative path is relative to the current directory, or to the directory of the
        configuration file when set there.
      - Variable C(diskproof_report_dir).
    type: path
    default: ./diskproof-report
    env:
      - name: DISKPROOF_REPORT_DIR
    ini:
      - section: diskproof_report
        key: report_dir
  outlier_fraction:
    description:
      - A record whose primary metric is more than this fraction below its group median is an
        C(outlier). Between 0 and 1, exclusive.
      - Variable C(diskproof_outlier_percent) (a percentage, e.g. 15).
    type: float
    default: 0.15
    env:
      - name: DISKPROOF_OUTLIER_FRACTION
    ini:
      - section: diskproof_report
        key: outlier_fraction
  peer_group:
    description:
      - How records are grouped for the median. V(identity) compares a disk with disks of the same
        model, firmware and capacity running the same test (test and rotational when the model is
        unknown, as for VMs and loop devices); V(test) compares every record of a test.
      - Variable C(diskproof_peer_group).
    type: str
    choices: [identity, test]
    default: identity
    env:
      - name: DISKPROOF_PEER_GROUP
    ini:
      - section: diskproof_report
        key: peer_group
  max_cv:
    description:
      - A record whose repeat C(samples) have a coefficient of variation (sample standard deviation
        over mean) above this is C(unstable). Between 0 and 1, exclusive.
      - Variable C(diskproof_max_cv_percent) (a percentage, e.g. 5).
    type: float
    default: 0.05
    env:
      - name: DISKPROOF_MAX_CV
    ini:
      - section: diskproof_report
        key: max_cv
  regression_fraction:
    description:
      - A record more than this fraction below the baseline value for the same disk (serial, else
        WWN) and test is C(regressed). Between 0 and 1, exclusive. Needs O(baseline_file).
      - Variable C(diskproof_regression_percent) (a percentage, e.g. 10).
    type: float
    default: 0.10
    env:
      - name: DISKPROOF_REGRESSION_FRACTION
    ini:
      - section: diskproof_report
        key: regression_fraction
  robust_z_min_deviation:
    description:
      - A robust z-score below -3.5 makes a record an C(outlier) only when it is also at least this
        fraction below its group median (so a very tight group does not flag a 1% difference).
        From 0 to 1, 1 excluded.
      - Variable C(diskproof_outlier_z_min_percent) (a percentage, e.g. 5).
    type: float
    default: 0.05
    env:
      - name: DISKPROOF_ROBUST_Z_MIN_DEVIATION
    ini:
      - section: diskproof_report
        key: robust_z_min_deviation
  unstable_fails:
    description:
      - Whether an C(unstable) result (repeats vary more than O(max_cv)) fails the run
        (C(summary.passed) false, a junit failure, acceptance.yml's job red). A figure that moved
        by more than O(max_cv) between repeats cannot be trusted to pass, so it fails by default;
        set false where a site accepts noisy disks and only wants them listed.
      - Variable C(diskproof_unstable_fails).
    type: bool
    default: true
    env:
      - name: DISKPROOF_UNSTABLE_FAILS
    ini:
      - section: diskproof_report
        key: unstable_fails
  rules_file:
    description:
      - YAML file of acceptance rules (C(rules:) list; see docs/report.md). When set it is used
        instead of the play variable C(diskproof_acceptance); inline rules in the variable
        C(diskproof_rules_yaml) (a survey textarea) win over both.
      - Variable C(diskproof_rules_file).
    type: path
    env:
      - name: DISKPROOF_RULES_FILE
    ini:
      - section: diskproof_report
        key: rules_file
  baseline_file:
    description:
      - A previous C(report.json) to judge regressions against.
      - Variable C(diskproof_baseline_file). When neither is set and the report store
        (C(diskproof_report_store)) holds a passing run, its C(last-pass/report.json) is the baseline.
    type: path
    env:
      - name: DISKPROOF_BASELINE_FILE
    ini:
      - section: diskproof_report
        key: baseline_file
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = diskproof.fleet.report
#
# [diskproof_report]
# report_dir = ./diskproof-report
# outlier_fraction = 0.15
# rules_file = acceptance.yml
# baseline_file = ./last-month/report.json
#
# or for one run:
#   ANSIBLE_CALLBACKS_ENABLED=diskproof.fleet.report DISKPROOF_REPORT_DIR=/tmp/rack6 \
#     ansible-playbook -i lab/inventory.yml playbooks/validate.yml
"""

import array
import csv
import datetime
import functools
import io
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping

import yaml
from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version
from ansible.template import Templar
from ansible.utils.unsafe_proxy import wrap_var
from ansible_collections.diskproof.fleet.plugins.module_utils import _csv_cells, _metrics
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _junit, _render
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report_inputs, _settings

REPORT_JSON = "report.json"
RESULTS_CSV = "results.csv"
JUNIT_XML = "junit.xml"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
# A play with this variable true is the report play (playbooks/report.yml): the fleet is judged
# when it starts and the judgement is handed to it as the variable REPORT_VARIABLE.
REPORT_PLAY_MARKER = "diskproof_report_play"
REPORT_VARIABLE = "diskproof_report"
# ansible-runner (AWX's engine) names the job's artifacts directory here; a copy of the report
# files goes to <it>/diskproof-report, where ansible-runner users and AWX's artifact tooling look.
RUNNER_ARTIFACTS_ENV = "AWX_ISOLATED_DATA_DIR"
ARTIFACTS_SUBDIR = "diskproof-report"
# Every variable the report reads: the settings, the rules, the store's baseline.
REPORT_VARIABLES = tuple(setting.variable for setting in _settings.SETTINGS) + (
    _settings.RULES_YAML_VARIABLE, _settings.ACCEPTANCE_VARIABLE, _settings.STORE_BASELINE_VARIABLE)
COLLECTION_PREFIX = "diskproof.fleet."
CSV_COLUMNS = (
    "host", "target_path", "device", "test", "tool", "verdict", "reason",
    "read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "seconds", "bytes", "error",
    "serial", "model",
)
# Console colour per verdict; Display drops it when stdout is not a terminal or colour is off.
VERDICT_COLORS = {
    _aggregate.VERDICT_PASS: None,
    _aggregate.VERDICT_UNSTABLE: C.COLOR_WARN,
}
TABLE_COLUMNS = ("host", "target", "device", "test", "MB/s", "MiB/s", "IOPS", "verdict", "reason")
NUMERIC_COLUMNS = frozenset(("MB/s", "MiB/s", "IOPS"))
TABLE_REASON_MAX = 110
MIB = 2 ** 20
TASK_FAILED_PREFIX = "Task failed: "
WRITE_BUFFER = 2 ** 20


def _record_json(record: Mapping) -> bytes:
    """The JSON of a record as report.json holds it: compact, ASCII, the record's own key order
    (bench_facts writes them in schema order). A value JSON cannot carry (none in a bench_facts
    record) is written as its str()."""
    return json.dumps(record, separators=(",", ":"), default=str).encode("ascii")


_plain = _report_inputs.plain


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _guarded(handler):
    """Run an event handler; on any error warn once and disable the callback, never fail the play."""
    @functools.wraps(handler)
    def wrapper(self, *args, **kwargs):
        if self.disabled:
            return None
        try:
            return handler(self, *args, **kwargs)
        except Exception as exc:  # the one top-level guard: a report bug must not break a benchmark run
            self.disabled = True
            self._display.warning("%s disabled after an error in %s: %s: %s" % (self.CALLBACK_NAME, handler.__name__, type(exc).__name__, exc))
            return None
    return wrapper


# ---------------------------------------------------------------------------------------------
# task results
# ---------------------------------------------------------------------------------------------

def _records_in(result) -> list:
    """The diskproof_results records of one task or item result (the result's own dicts: read, never keep)."""
    facts = result._result.get("ansible_facts")
    if facts is None or not isinstance(facts, Mapping):
        return []
    records = facts.get("diskproof_results")
    if not isinstance(records, list):
        return []
    return [record for record in records if isinstance(record, Mapping)]


def _is_loop_summary(result) -> bool:
    """True for the final result of a looped task: its items were already reported one by one."""
    if not isinstance(result._result.get("results"), list):
        return False
    task = result._task
    return getattr(task, "loop", None) is not None or bool(getattr(task, "loop_with", None))


def _message_of(result) -> str:
    outcome = result._result
    if outcome.get("unreachable") and _is_loop_summary(result):
        # A host cut off inside a loop: the loop's "All items completed" hides why. Its last unreachable item says:
        # a fresh connection attempt (the item cut mid-run often has only "Data could not be sent ...: ").
        outcome = next((item for item in reversed(outcome["results"])
                        if isinstance(item, Mapping) and item.get("unreachable")), outcome)
    message = str(outcome.get("msg") or outcome.get("stderr") or "").strip()
    # ansible-core 2.19 prefixes unreachable messages with this; the status already says it.
    return message[len(TASK_FAILED_PREFIX):] if message.startswith(TASK_FAILED_PREFIX) else message


class RecordSpool:
    """Every record received, kept apart from the task results and out of memory.

    ``add`` encodes the record once (its report.json text: that copy is what isolates it from
    other callbacks, which get the same result objects) into an anonymous temp file and takes
    its ``_aggregate.record_facts``, the few values judging needs. ``json(ref)`` reads a text
    back for report.json; ``record(ref)`` parses one for the entries the pages list in full.
    """

    def __init__(self) -> None:
        self._file = None
        self._offsets = array.array("Q", [0])  # record i is offsets[i]:offsets[i + 1]

    def add(self, record: Mapping) -> tuple:
        """(ref, facts) of a record."""
        text = _record_json(record)
        facts = _aggregate.record_facts(record)
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="diskproof-report-", suffix=".spool")
        self._file.write(text)
        offsets = self._offsets
        offsets.append(offsets[-1] + len(text))
        return len(offsets) - 2, facts

    def json(self, ref: int) -> bytes:
        """The record's JSON text (UTF-8; ASCII in fact)."""
        self._file.flush()
        start = self._offsets[ref]
        return os.pread(self._file.fileno(), self._offsets[ref + 1] - start, start)

    def record(self, ref: int) -> dict:
        return json.loads(self.json(ref))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# ---------------------------------------------------------------------------------------------
# presentation
# ---------------------------------------------------------------------------------------------

def _format_number(value, unit_divisor: float, digits: int) -> str:
    if value is None:
        return "-"
    return "%.*f" % (digits, value / unit_divisor)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _table_row(entry: Mapping) -> tuple[str, ...]:
    record = entry.get("record") or {}
    bytes_per_s = _metrics.bytes_per_s_of(record)
    iops = _metrics.iops_of(record)
    target = record.get("target") if isinstance(record.get("target"), Mapping) else {}
    not_a_disk = _aggregate.not_a_disk_filesystem(target)
    return (
        entry["host"],
        entry.get("target_path") or "-",
        # A target measured with allow_non_disk says so where a disk would be named.
        "%s (not a disk)" % not_a_disk if not_a_disk is not None else entry.get("device") or "-",
        entry.get("test") or "-",
        _format_number(bytes_per_s, 1e6, 1),
        _format_number(bytes_per_s, MIB, 1),
        _format_number(iops, 1, 0),
        entry["verdict"],
        _short(entry.get("reason") or "", TABLE_REASON_MAX),
    )


def _align(cells, widths) -> str:
    parts = []
    for column, cell, width in zip(TABLE_COLUMNS, cells, widths):
        parts.append(cell.rjust(width) if column in NUMERIC_COLUMNS else cell.ljust(width))
    return "  ".join(parts).rstrip()


def verdict_color(verdict: str) -> str | None:
    """Ansible colour name of a verdict's row: none for pass, warning for unstable, error otherwise."""
    return VERDICT_COLORS.get(verdict, C.COLOR_ERROR)


def table_lines(report: Mapping, listing: _render.Listing | None = None) -> list[tuple[str, str | None]]:
    """Console (line, colour): title, header, one row per listed entry (already worst first), the
    pass results left out at fleet scale, verdict counts."""
    listing = listing if listing is not None else _render.listing_of(report)
    rows = [_table_row(entry) for entry in listing.entries]
    widths = [max([len(column)] + [len(row[index]) for row in rows]) for index, column in enumerate(TABLE_COLUMNS)]
    summary = report["summary"]
    lines = [
        ("diskproof fleet report: %d results, %d hosts (MB/s = 10^6 B/s, MiB/s = 2^20 B/s)" % (summary["total"], len(report["hosts"])), None),
        (_align(TABLE_COLUMNS, widths), None),
        (_align(["-" * width for width in widths], widths), None),
    ]
    lines.extend((_align(row, widths), verdict_color(entry["verdict"])) for row, entry in zip(rows, listing.entries))
    if listing.summarised:
        lines.append(("{0:,} pass results not listed (more than {1:,} results); report.json and results.csv hold all {2:,}".format(
            listing.passes_not_listed, _render.LISTING_LIMIT, listing.total), None))
    lines.append(("verdicts: " + ", ".join("%s %d" % (verdict, count) for verdict, count in summary["counts"].items() if count)
                  + "; acceptance %s" % ("passed" if summary["passed"] else "FAILED"), None if summary["passed"] else C.COLOR_ERROR))
    return lines


def _csv_row(entry: _aggregate.Entry, target: tuple, reason: str) -> list:
    """A results.csv row of an entry, formula-like text neutralised (_csv_cells); ``target`` and
    ``reason`` are its _aggregate.entry_target and entry_reason."""
    facts = entry.facts
    if facts is None:
        row = [entry.host, None, None, None, None, entry.verdict, reason, None, None, None, None, None, None, None, None, None]
    else:
        path, device, serial, test = target
        figures = facts.figures
        row = [entry.host, path, device, test, facts.tool, entry.verdict, reason,
               figures.read_bytes_per_s, figures.write_bytes_per_s, figures.read_iops, figures.write_iops,
               facts.seconds, facts.bytes, facts.error, serial, facts.target.model]
    return [_csv_cells.neutralised(value) for value in row]


class CsvLines:
    """results.csv lines of entries: ``line(entry, reason)`` is what csv.writer writes of the
    entry's ``_csv_row`` (None an empty field, a float its repr), ending in "\n". The writer's own
    line terminator is "\r\n": csv quotes a field that holds a character of it, so a CR inside a
    field is quoted too (bare, spreadsheets and csv.reader start a new row there, and a formula
    could begin)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def line(self, entry: _aggregate.Entry, reason: str) -> str:
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._writer.writerow(_csv_row(entry, _aggregate.entry_target(entry), reason))
        return buffer.getvalue()[:-2] + "\n"


def _junit_fields(entry: _aggregate.Entry) -> tuple:
    """The junit.xml testcase fields of an entry (_junit.CaseFields)."""
    facts = entry.facts
    reason = _aggregate.entry_reason(entry)
    if facts is None:
        return None, None, 0.0, entry.verdict, reason, entry.findings, entry.notes
    seconds = _junit.seconds_of(facts.seconds)
    return facts.test, facts.target.path, seconds, entry.verdict, reason, entry.findings, entry.notes


def _is_measuring_task(task) -> bool:
    """A task of this collection (its modules, or any task of its roles): its play measures disks."""
    action = str(getattr(task, "resolved_action", None) or getattr(task, "action", "") or "")
    role = getattr(task, "_role", None)
    role_name = str(role.get_name()) if role is not None else ""
    return action.startswith(COLLECTION_PREFIX) or role_name.startswith(COLLECTION_PREFIX)


class AtomicFile:
    """A file written under a temp name in its directory, then fsync'd and renamed into place by
    ``commit``: readers never see half a report. ``discard`` (or an exception in a ``with``
    block) removes the temp file and leaves any previous file as it was."""

    def __init__(self, path: str, binary: bool = False) -> None:
        self.path = path
        directory, name = os.path.split(path)
        handle, self._temp_path = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=directory)
        # Large buffers: report.json of a fleet is hundreds of MB written line by line.
        self.stream = (os.fdopen(handle, "wb", buffering=WRITE_BUFFER) if binary
                       else os.fdopen(handle, "w", buffering=WRITE_BUFFER, encoding="utf-8", newline=""))

    def commit(self) -> None:
        self.stream.flush()
        os.fsync(self.stream.fileno())
        self.stream.close()
        # mkstemp creates 0600; a report is meant to be shared.
        os.chmod(self._temp_path, 0o644)
        os.replace(self._temp_path, self.path)

    def discard(self) -> None:
        self.stream.close()
        if os.path.exists(self._temp_path):
            os.unlink(self._temp_path)

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, kind, _value, _traceback) -> None:
        if kind is None and not self.stream.closed:
            self.commit()
        elif os.path.exists(self._temp_path):
            self.discard()


def collection_version() -> str | None:
    """Version from MANIFEST.json (installed collection) or galaxy.yml (source tree), else None."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        return _version_from_manifest(os.path.join(root, "MANIFEST.json")) or _version_from_galaxy(os.path.join(root, "galaxy.yml"))
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        # A broken metadata file costs the report one field, not the whole report.
        return None


def _version_from_manifest(path: str) -> str | None:
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as stream:
        version = json.load(stream).get("collection_info", {}).get("version")
    return None if version is None else str(version)


def _version_from_galaxy(path: str) -> str | None:
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as stream:
        version = (yaml.safe_load(stream) or {}).get("version")
    return None if version is None else str(version)


# ---------------------------------------------------------------------------------------------
# the callback
def copy_to_runner_artifacts(paths: list, artifacts_dir: str | None) -> str | None:
    """Copy the report files into <artifacts_dir>/diskproof-report (ansible-runner's job artifacts);
    the directory, or None when not under ansible-runner or the files are written there already."""
    if not artifacts_dir or not os.path.isdir(artifacts_dir):
        return None
    target = os.path.join(os.path.abspath(artifacts_dir), ARTIFACTS_SUBDIR)
    if os.path.dirname(os.path.abspath(paths[0])) == target:
        return None
    os.makedirs(target, exist_ok=True)
    for path in paths:
        shutil.copy2(path, os.path.join(target, os.path.basename(path)))
    return target


# ---------------------------------------------------------------------------------------------

class CallbackModule(CallbackBase):
    """Collects diskproof_results records and host outcomes; judges and writes them at the end."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "diskproof.fleet.report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, options=None):
        self._variables: dict = {}  # the report's variables as the plays set them (templated); the last play wins
        self._deprecations_shown: set = set()
        self._reported: tuple | None = None  # (records, problems) when the report play judged them
        self._play: dict | None = None  # the running play: its hosts, whether it measures, deferred outcomes
        self._spool = RecordSpool()
        self._records_by_host: dict[str, list[tuple]] = {}  # host -> [(spool ref, record facts)]
        self._host_statuses: dict[str, dict] = {}
        self._inventory_size = None
        self._playbook = None
        self._started = _utc_now()
        super().__init__(display=display, options=options)

    @_guarded
    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        # Bad option values (env, ini) stop the callback here, with the option named.
        _settings.judge_settings(_settings.resolve({}, self.get_option)[0])

    # -- bookkeeping -----------------------------------------------------------------------

    def _host_status(self, host: str) -> dict:
        status = self._host_statuses.get(host)
        if status is None:
            status = self._host_statuses[host] = {"status": _aggregate.HOST_OK, "problems": []}
        return status

    def _mark_host(self, host: str, status: str) -> None:
        # unreachable outranks failed outranks ok: a host keeps its worst outcome.
        ranks = (_aggregate.HOST_OK, _aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE)
        current = self._host_status(host)
        if ranks.index(status) > ranks.index(current["status"]):
            current["status"] = status

    def _add_records(self, result) -> bool:
        records = _records_in(result)
        if records:
            host = result._host.get_name()
            self._host_status(host)
            kept = self._records_by_host.get(host)
            if kept is None:
                kept = self._records_by_host[host] = []
            for record in records:
                kept.append(self._spool.add(record))
            if self._play is not None:
                self._play["measuring"] = True
        return bool(records)

    def _defer(self, host: str, status: str, problem: dict | None = None) -> None:
        """A host outcome, kept until the play ends: it counts only if the play measured disks."""
        if self._play is None:
            self._apply(host, status, problem)
        else:
            self._play["outcomes"].append((host, status, problem))

    def _apply(self, host: str, status: str, problem: dict | None) -> None:
        self._mark_host(host, status)
        if problem is not None:
            self._host_status(host)["problems"].append(problem)

    def _add_problem(self, result, status: str) -> None:
        problem = {"task": result._task.get_name(), "status": status, "message": _message_of(result)}
        self._defer(result._host.get_name(), status, problem)

    def _failed(self, result) -> None:
        # A failure that still returned records is judged through those records (verdict error).
        if self._add_records(result):
            self._mark_host(result._host.get_name(), _aggregate.HOST_FAILED)
        else:
            self._add_problem(result, _aggregate.HOST_FAILED)

    def _replayed(self, result) -> bool:
        """A host of a merged record set (action diskproof.fleet.replay_records, playbooks/merge.yml):
        its records and every outcome its own run saw, with their original tasks and messages."""
        replay = result._result.get("diskproof_replay")
        if not isinstance(replay, Mapping):
            return False
        host = result._host.get_name()
        self._add_records(result)
        self._host_status(host)
        if self._play is not None:
            self._play["measuring"] = True
        for problem in replay.get("problems") or []:
            if isinstance(problem, Mapping):
                self._defer(host, str(problem.get("status")), _plain(problem))
        if replay.get("status") in (_aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE):
            self._defer(host, replay["status"])
        return True

    def _end_play(self) -> None:
        """Every host of a play that measured disks appears in the report, even if it never
        answered; plays that only judge or publish (a final localhost play) leave no trace."""
        play, self._play = self._play, None
        if play is None or not play["measuring"] or play.get("report_play"):
            return
        for host in play["hosts"]:
            self._host_status(host)
        for host, status, problem in play["outcomes"]:
            self._apply(host, status, problem)

    # -- events ----------------------------------------------------------------------------

    @_guarded
    def v2_playbook_on_start(self, playbook):
        self._started = _utc_now()
        self._playbook = os.path.basename(playbook._file_name)

    @_guarded
    def v2_playbook_on_play_start(self, play):
        self._end_play()
        inventory = play.get_variable_manager()._inventory
        self._play = {"hosts": [host.get_name() for host in inventory.get_hosts(play.hosts)], "measuring": False, "outcomes": []}
        self._inventory_size = len(inventory.get_hosts("all", ignore_limits=True, ignore_restrictions=True))
        variable_manager = play.get_variable_manager()
        report_play = self._read_variables(play, variable_manager, inventory)
        if report_play:
            # Judged now; what this play's own tasks do (a failing assert, the report store's
            # tasks, which are this collection's) is not a disk's result.
            self._play["report_play"] = True
            play.vars[REPORT_VARIABLE] = wrap_var(self._judge_for_report_play())

    @staticmethod
    def _deprecated_names(play, variable_manager, inventory) -> list:
        """A warning per old variable name the user set: in extra vars, play vars, the inventory's
        host and group variables, or the vars plugins' (group_vars/, host_vars/) of the play's first
        host. Not the role defaults, which still define the old names (``get_vars`` without a play)."""
        sources = [variable_manager.extra_vars, play.vars or {}]
        sources.extend(group.vars for group in inventory.groups.values())
        hosts = inventory.get_hosts(play.hosts)
        sources.extend(host.vars for host in hosts)
        if hosts:
            sources.append(variable_manager.get_vars(host=hosts[0]))
        return [warning for variables in sources for warning in _settings.deprecated_in(variables)]

    def _read_variables(self, play, variable_manager, inventory) -> bool:
        """Remember the report's variables this play sets (extra vars, play vars; for the report
        play also localhost's, where the report store's baseline is); True for the report play."""
        play_vars = variable_manager.get_vars(play=play)
        report_play = bool(play_vars.get(REPORT_PLAY_MARKER))
        if report_play:
            # The report play's variables as its first host sees them (inventory group vars
            # included), and the report store's baseline, a fact of localhost.
            hosts = inventory.get_hosts(play.hosts)
            if hosts:
                play_vars = variable_manager.get_vars(play=play, host=hosts[0])
            localhost_vars = variable_manager.get_vars(play=play, host=inventory.get_host("localhost"))
            if _settings.STORE_BASELINE_VARIABLE in localhost_vars:
                play_vars[_settings.STORE_BASELINE_VARIABLE] = localhost_vars[_settings.STORE_BASELINE_VARIABLE]
        for warning in self._deprecated_names(play, variable_manager, inventory):
            if warning not in self._deprecations_shown:
                self._deprecations_shown.add(warning)
                self._display.deprecated(warning, version=_settings.DEPRECATED_IN_VERSION, collection_name="diskproof.fleet")
        present = {name: play_vars[name] for name in REPORT_VARIABLES if name in play_vars}
        if present:
            templar = Templar(loader=variable_manager._loader, variables=play_vars)
            self._variables.update((name, _plain(templar.template(value))) for name, value in present.items())
        return report_play

    @_guarded
    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._play is not None and not self._play.get("report_play") and _is_measuring_task(task):
            self._play["measuring"] = True

    @_guarded
    def v2_runner_on_ok(self, result):
        if not _is_loop_summary(result) and not self._replayed(result):
            self._add_records(result)

    @_guarded
    def v2_runner_item_on_ok(self, result):
        self._add_records(result)

    @_guarded
    def v2_runner_on_failed(self, result, ignore_errors=False):
        if _is_loop_summary(result):
            self._defer(result._host.get_name(), _aggregate.HOST_FAILED)
        elif not self._replayed(result):
            self._failed(result)

    @_guarded
    def v2_runner_item_on_failed(self, result):
        # An item that could not connect is no failure of its own: the loop then ends with the host unreachable,
        # reported once with that item's connection error (_message_of).
        if not result._result.get("unreachable"):
            self._failed(result)

    @_guarded
    def v2_runner_on_unreachable(self, result):
        if not self._replayed(result):
            self._add_problem(result, _aggregate.HOST_UNREACHABLE)

    @_guarded
    def v2_playbook_on_stats(self, stats):
        self._end_play()
        try:
            if self._reported is not None and self._reported == self._collected():
                return  # the report play judged every record there is
            if not self._has_results():
                self._display.display("diskproof fleet report: no diskproof_results in this run, nothing written")
                return
            self._report()
        finally:
            self._spool.close()

    def _collected(self) -> tuple:
        """(records, host problems) received so far: what a report judged."""
        return (sum(len(kept) for kept in self._records_by_host.values()),
                sum(len(status["problems"]) for status in self._host_statuses.values()))

    def _has_results(self) -> bool:
        return bool(self._records_by_host) or any(status["problems"] for status in self._host_statuses.values())

    def _judge_for_report_play(self) -> dict:
        """Judge and write now, for the report play: what it publishes and fails on is this judgement."""
        self._reported = self._collected()
        report_dir = os.path.abspath(self._report_dir())
        if not self._has_results():
            self._display.display("diskproof fleet report: no diskproof_results in this run, nothing written")
            summary = _aggregate.summarize_entries([], ["no result: no host produced a diskproof_results record"])
            return {"written": False, "report_dir": report_dir, "files": [], "summary": _aggregate.stats_summary(summary)}
        report, paths = self._report()
        return {"written": True, "report_dir": report_dir, "files": [os.path.basename(path) for path in paths],
                "summary": _aggregate.stats_summary(report["summary"])}

    def _report(self) -> tuple:
        """Judge, write every file, show the table; (report without results, paths)."""
        report, entries = self._judge()
        paths, view, listing = self._write(report, entries)
        self._show(table_lines(view, listing))
        self._display.display("report: %s (also %s)" % (paths[0], ", ".join(paths[1:])))
        copied_to = copy_to_runner_artifacts(paths, os.environ.get(RUNNER_ARTIFACTS_ENV))
        if copied_to:
            self._display.display("report: copied to the job's artifacts, %s" % copied_to)
        return report, paths

    # -- judgement -------------------------------------------------------------------------

    def _resolved_settings(self) -> tuple:
        """({option: value}, {option: source}, errors): every setting, from the plays' variables
        or this callback's options (_settings.resolve); a bad variable is named and not used."""
        try:
            values, sources = _settings.resolve(self._variables, self.get_option)
            _settings.judge_settings(values)
            return values, sources, []
        except ValueError as error:
            values, sources = _settings.resolve({}, self.get_option)
            return values, sources, ["settings: %s; judged with the callback's own settings" % error]

    def _report_dir(self) -> str:
        return self._resolved_settings()[0]["report_dir"]

    def _acceptance(self, values: dict) -> tuple:
        """(raw acceptance, source, errors): inline rules, else the rules file, else diskproof_acceptance."""
        inline = _settings.inline_rules(self._variables)
        if inline is not None:
            try:
                return yaml.safe_load(inline), "variable " + _settings.RULES_YAML_VARIABLE, []
            except yaml.YAMLError as error:
                return None, "variable " + _settings.RULES_YAML_VARIABLE, ["not YAML: %s" % error]
        if values["rules_file"]:
            acceptance, errors = _report_inputs.read_rules_file(values["rules_file"])
            return acceptance, values["rules_file"], errors
        if self._variables.get(_settings.ACCEPTANCE_VARIABLE) is not None:
            return self._variables[_settings.ACCEPTANCE_VARIABLE], "variable " + _settings.ACCEPTANCE_VARIABLE, []
        return None, None, []

    @staticmethod
    def _baseline(values: dict) -> tuple:
        """(baseline report, errors) from the baseline file; (None, []) when not set."""
        if not values["baseline_file"]:
            return None, []
        return _report_inputs.read_baseline_file(values["baseline_file"])

    def _judge(self) -> tuple:
        """(report without its results, entries worst first): see _aggregate.judge_report."""
        values, _sources, settings_errors = self._resolved_settings()
        for error in settings_errors:
            self._display.warning("%s: %s" % (self.CALLBACK_NAME, error))
        acceptance, rules_source, rules_errors = self._acceptance(values)
        if not rules_errors:
            rules_errors = _report_inputs.rules_errors(acceptance)
        if rules_errors:
            acceptance = None
            self._display.warning("%s: acceptance rules from %s not used: %s" % (self.CALLBACK_NAME, rules_source, "; ".join(rules_errors)))
        baseline, baseline_errors = self._baseline(values)
        if baseline_errors:
            self._display.warning("%s: baseline not used: %s" % (self.CALLBACK_NAME, "; ".join(baseline_errors)))
        return _aggregate.judge_report(
            self._records_by_host, self._host_statuses, self._run_metadata(), settings=_settings.judge_settings(values),
            acceptance=acceptance, rules_source=rules_source, rules_errors=rules_errors,
            baseline=baseline, baseline_source=values["baseline_file"] or None, baseline_errors=baseline_errors,
            input_errors=settings_errors,
        )

    def _entry_dict(self, entry: _aggregate.Entry) -> dict:
        fields = _aggregate.entry_fields(entry)
        fields["record"] = self._spool.record(entry.record) if entry.facts is not None else None
        return fields

    # -- output ----------------------------------------------------------------------------

    def _show(self, lines: list) -> None:
        """The console table; consecutive lines of one colour in one display call (Display colours each line)."""
        batch: list[str] = []
        color = None
        for line, line_color in lines:
            if batch and line_color != color:
                self._display.display("\n".join(batch), color=color)
                batch = []
            batch.append(line)
            color = line_color
        if batch:
            self._display.display("\n".join(batch), color=color)

    def _run_metadata(self) -> dict:
        return {
            "started": self._started,
            "finished": _utc_now(),
            "controller_hostname": socket.gethostname(),
            "ansible_version": ansible_version,
            "collection_version": collection_version(),
            "playbook": self._playbook,
            "inventory_size": self._inventory_size,
            "targeted_hosts": len(self._host_statuses),
        }

    def _write(self, report: dict, entries: list) -> tuple:
        """Every report file, each written atomically, report.json first; (paths, the report as the
        pages see it, their listing). One pass over the entries writes report.json and results.csv
        a line per entry (never a dict per entry; each record's spooled JSON copied as it is),
        hands each entry to the junit.xml writer (which spells a host's testcases when it writes
        that host's testsuite), and picks what the console, report.md and report.html list
        (_render.ListingBuilder): every entry of a small report; at fleet scale the entries that
        are not pass, the passes counted per test and peer group."""
        report_dir = os.path.abspath(self._report_dir())
        os.makedirs(report_dir, exist_ok=True)
        paths = [os.path.join(report_dir, name) for name in (REPORT_JSON, RESULTS_CSV, JUNIT_XML, REPORT_MD, REPORT_HTML)]
        json_path, csv_path, junit_path, md_path, html_path = paths
        junit = _junit.JunitWriter(report, _junit_fields)
        builder = _render.ListingBuilder(len(entries))
        csv_line = CsvLines().line
        with AtomicFile(json_path, binary=True) as json_file, AtomicFile(csv_path) as csv_file:
            head, tail = _aggregate.report_json_frame(report)
            json_file.stream.write(head.encode("ascii"))
            csv_file.stream.write(",".join(CSV_COLUMNS) + "\n")
            for index, entry in enumerate(entries):
                facts = entry.facts
                before, after = _aggregate.entry_json_parts(entry)
                record_json = b"null" if facts is None else self._spool.json(entry.record)
                json_file.stream.write(b"".join((b"\n" if index == 0 else b",\n", before.encode("ascii"), record_json,
                                                 after.encode("ascii"))))
                csv_file.stream.write(csv_line(entry, _aggregate.entry_reason(entry)))
                # junit.xml is written host by host: its testcases are spelled then (_junit_fields).
                junit.add(entry.host, entry)
                if facts is None:
                    builder.add(entry, entry.verdict, None, entry.group, None, None)
                else:
                    builder.add(entry, entry.verdict, facts.test, entry.group, facts.metric_name, entry.record)
            json_file.stream.write(tail.encode("ascii"))
            json_file.commit()
        with AtomicFile(junit_path) as junit_file:
            junit.write(junit_file.stream.write)
        del junit
        listing = builder.listing([self._entry_dict(entry) for entry in builder.listed],
                                  {test: self._spool.record(ref) for test, ref in builder.test_records.items()})
        view = dict(report, results=listing.entries)
        with AtomicFile(md_path) as md_file:
            _render.write_markdown(view, md_file.stream.write, listing)
        with AtomicFile(html_path) as html_file:
            _render.write_html(view, html_file.stream.write, listing)
        return paths, view, listing
