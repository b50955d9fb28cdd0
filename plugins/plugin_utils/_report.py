# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one report pipeline: records in, the judge, every report file out.

    Collection (records by host, host outcomes) --judge_report--> report sections + Entry list
        --write_files--> report.json, results.csv, junit.xml, report.md, report.html (+ the console table)

Three callers, one path: the callback diskproof.fleet.report (a run's records, spooled as they arrive,
judged once), the action diskproof.fleet.report (the record sets of a merge, plugin_utils/_record_sets.py)
and, for the report dict without files, the filter diskproof.fleet.fleet_report (``build_report``: a Collection in
memory, ``judge``, and report.json's text read back). Every writer reads the same judged entries
(``_aggregate.Entry``); none reads a record again. Pure Python: no Ansible imports.
"""
from __future__ import annotations

import array
import csv
import datetime
import io
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import yaml

from ansible_collections.diskproof.fleet.plugins.module_utils import _csv_cells
from ansible_collections.diskproof.fleet.plugins.module_utils._metrics import number_or_none, sum_of
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _causes, _junit, _render, _report_inputs, _settings

REPORT_JSON = "report.json"
RESULTS_CSV = "results.csv"
JUNIT_XML = "junit.xml"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
REPORT_FILES = (REPORT_JSON, RESULTS_CSV, JUNIT_XML, REPORT_MD, REPORT_HTML)
CSV_COLUMNS = (
    "host", "target_path", "device", "test", "tool", "verdict", "reason",
    "read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "seconds", "bytes", "error",
    "serial", "model", "likely_causes",
)
# ansible-runner (AWX's engine) names the job's artifacts directory here; a copy of the report
# files goes to <it>/diskproof-report, where ansible-runner users and AWX's artifact tooling look.
RUNNER_ARTIFACTS_ENV = "AWX_ISOLATED_DATA_DIR"
# The key of the action diskproof.fleet.report's result that the report callback answers: the play's report
# variables, and with a response file a request to judge this run now (the action sets it, the callback reads it).
REQUEST = "diskproof_report_request"
ARTIFACTS_SUBDIR = "diskproof-report"
TABLE_COLUMNS = ("host", "target", "device", "test", "MB/s", "MiB/s", "IOPS", "verdict", "reason")
NUMERIC_COLUMNS = frozenset(("MB/s", "MiB/s", "IOPS"))
TABLE_REASON_MAX = 110
# A flagged row's likely causes go on a line of their own under it: the table stays as wide as before.
TABLE_CAUSES_PREFIX = "    likely cause: "
MIB = 2 ** 20
# Large buffers: report.json of a fleet is hundreds of MB written line by line.
WRITE_BUFFER = 2 ** 20
NO_RESULT = "no result: no host produced a diskproof_results record"
# What a console line's colour says (the callback maps it to Ansible's colours): none, a warning, an error.
WARN = "warn"
ERROR = "error"


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# records in
# ---------------------------------------------------------------------------------------------

class RecordSpool:
    """A run's records, kept out of memory until report.json is written (the callback's).

    ``add`` encodes the record once, as report.json holds it (``_aggregate.record_json``: that copy is
    what isolates it from other callbacks, which get the same result objects), into an anonymous temp
    file and takes its ``record_facts``, the few values judging and the writers read. The ref of a
    record is its place in the file."""

    def __init__(self) -> None:
        self._file = None
        self._offsets = array.array("Q", [0])  # record i is offsets[i]:offsets[i + 1]

    def add(self, record: Mapping[str, Any]) -> Tuple[int, _aggregate.RecordFacts]:
        text = _aggregate.record_json(record)
        facts = _aggregate.record_facts(record)
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="diskproof-report-", suffix=".spool")
        self._file.write(text)
        offsets = self._offsets
        offsets.append(offsets[-1] + len(text))
        return len(offsets) - 2, facts

    def json(self, ref: int) -> bytes:
        """The record's report.json text."""
        self._file.flush()
        start = self._offsets[ref]
        return os.pread(self._file.fileno(), self._offsets[ref + 1] - start, start)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class RecordsInMemory:
    """Records kept as the dicts they are (a merge's record sets, the filter's records): the ref is the record."""

    @staticmethod
    def add(record: Mapping[str, Any]) -> Tuple[Mapping[str, Any], _aggregate.RecordFacts]:
        return record, _aggregate.record_facts(record)

    @staticmethod
    def json(record: Mapping[str, Any]) -> bytes:
        return _aggregate.record_json(record)

    def close(self) -> None:
        """Nothing to release."""


class Collection:
    """What a caller collected: every record by host (its ref and facts) and every targeted host's outcome
    (``{"status": ok | failed | unreachable, "problems": [{task, status, message}]}``)."""

    # unreachable outranks failed outranks ok: a host keeps its worst outcome.
    _RANKS = (_aggregate.HOST_OK, _aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE)

    def __init__(self, records: Any) -> None:
        self.records = records
        self.by_host: Dict[str, List[Tuple[Any, _aggregate.RecordFacts]]] = {}
        self.host_statuses: Dict[str, Dict[str, Any]] = {}

    def host(self, host: str) -> Dict[str, Any]:
        """The host's outcome (ok until told otherwise): a host named here is a targeted host."""
        status = self.host_statuses.get(host)
        if status is None:
            status = self.host_statuses[host] = {"status": _aggregate.HOST_OK, "problems": []}
        return status

    def add_records(self, host: str, records: Sequence[Mapping[str, Any]]) -> None:
        self.host(host)
        kept = self.by_host.setdefault(host, [])
        kept.extend(self.records.add(record) for record in records)

    def mark(self, host: str, status: str, problem: Optional[Mapping[str, Any]] = None) -> None:
        current = self.host(host)
        if self._RANKS.index(status) > self._RANKS.index(current["status"]):
            current["status"] = status
        if problem is not None:
            current["problems"].append(problem)

    def size(self) -> Tuple[int, int]:
        """(records, host problems) collected: what a judgement covered."""
        return (sum(len(kept) for kept in self.by_host.values()),
                sum(len(status["problems"]) for status in self.host_statuses.values()))

    def empty(self) -> bool:
        return not self.by_host and not any(status["problems"] for status in self.host_statuses.values())


def collection_of(report: Mapping[str, Any]) -> Collection:
    """The records and host outcomes of a report.json (a record set), in memory, in the file's order. The caller
    checks the report first (plugin_utils/_record_sets.py)."""
    collection = Collection(RecordsInMemory())
    for host, status in report["hosts"].items():
        for problem in status["problems"]:
            collection.mark(host, problem["status"], dict(problem))
        collection.mark(host, status["status"])
    for entry in report["results"]:
        if entry["record"] is not None:
            collection.add_records(entry["host"], [entry["record"]])
    return collection


# ---------------------------------------------------------------------------------------------
# the report's inputs: settings, acceptance rules, baseline
# ---------------------------------------------------------------------------------------------

class Inputs(NamedTuple):
    """What the judge is given besides the records (``read_inputs``)."""

    settings: _aggregate.Settings
    report_dir: str
    acceptance: Any
    rules_source: Optional[str]
    rules_errors: List[str]
    baseline: Any
    baseline_source: Optional[str]
    baseline_errors: List[str]
    input_errors: List[str]   # settings that could not be used


def read_inputs(variables: Mapping[str, Any], option: Callable[[str], Any]) -> Tuple[Inputs, List[str]]:
    """(inputs, warnings) from the report's variables (``_settings.resolve``: a variable wins over the
    callback's ``option``) with the rules and the baseline they name read. Nothing here fails: a bad
    setting falls back to the callback's own, bad rules or baseline are left out, and each says so in
    a warning and in the report (``summary.passed`` false)."""
    warnings: List[str] = []
    input_errors: List[str] = []
    try:
        values, _sources = _settings.resolve(variables, option)
        settings = _settings.judge_settings(values)
    except ValueError as error:
        values, _sources = _settings.resolve({}, option)
        settings = _settings.judge_settings(values)
        input_errors.append("settings: %s; judged with the callback's own settings" % error)
        warnings.append(input_errors[-1])
    acceptance, rules_source, rules_errors = _acceptance(variables, values)
    if not rules_errors:
        rules_errors = _report_inputs.rules_errors(acceptance)
    if rules_errors:
        acceptance = None
        warnings.append("acceptance rules from %s not used: %s" % (rules_source, "; ".join(rules_errors)))
    baseline, baseline_errors = (None, []) if not values["baseline_file"] else \
        _report_inputs.read_baseline_file(values["baseline_file"])
    if baseline_errors:
        warnings.append("baseline not used: %s" % "; ".join(baseline_errors))
    return Inputs(settings, os.path.abspath(values["report_dir"]), acceptance, rules_source, rules_errors, baseline,
                  values["baseline_file"] or None, baseline_errors, input_errors), warnings


def _acceptance(variables: Mapping[str, Any], values: Mapping[str, Any]) -> Tuple[Any, Optional[str], List[str]]:
    """(raw acceptance, source, errors): inline rules, else the rules file, else diskproof_acceptance."""
    inline = _settings.inline_rules(variables)
    if inline is not None:
        try:
            return yaml.safe_load(inline), "variable " + _settings.RULES_YAML_VARIABLE, []
        except yaml.YAMLError as error:
            return None, "variable " + _settings.RULES_YAML_VARIABLE, ["not YAML: %s" % error]
    if values["rules_file"]:
        acceptance, errors = _report_inputs.read_rules_file(values["rules_file"])
        return acceptance, values["rules_file"], errors
    if variables.get(_settings.ACCEPTANCE_VARIABLE) is not None:
        return variables[_settings.ACCEPTANCE_VARIABLE], "variable " + _settings.ACCEPTANCE_VARIABLE, []
    return None, None, []


def collection_version(root: Optional[str] = None) -> Optional[str]:
    """This collection's version: MANIFEST.json (installed) or galaxy.yml (source tree), else None."""
    root = root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        manifest = os.path.join(root, "MANIFEST.json")
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as stream:
                version = json.load(stream).get("collection_info", {}).get("version")
        else:
            with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as stream:
                version = (yaml.safe_load(stream) or {}).get("version")
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        # A broken metadata file costs the report one field, not the whole report.
        return None
    return None if version is None else str(version)


def run_metadata(started: Optional[str], playbook: Optional[str], ansible_version: str, inventory_size: Optional[int],
                 targeted_hosts: int) -> Dict[str, Any]:
    """report.json ``run``: when, where, with what, on how many hosts."""
    return {
        "started": started,
        "finished": utc_now(),
        "controller_hostname": socket.gethostname(),
        "ansible_version": ansible_version,
        "collection_version": collection_version(),
        "playbook": playbook,
        "inventory_size": inventory_size,
        "targeted_hosts": targeted_hosts,
    }


# ---------------------------------------------------------------------------------------------
# judge, then write
# ---------------------------------------------------------------------------------------------

class Judgement(NamedTuple):
    """A judged collection, written: the report (report.json without its results), the entries worst
    first, the files written and what the pages and the console listed."""

    report: Dict[str, Any]
    entries: List[_aggregate.Entry]
    paths: List[str]
    listing: _render.Listing


def judge(collection: Collection, inputs: Inputs, run: Mapping[str, Any]) -> Tuple[Dict[str, Any], List[_aggregate.Entry]]:
    """The report's sections and its entries, worst first (``_aggregate.judge_report``)."""
    return _aggregate.judge_report(
        collection.by_host, collection.host_statuses, run, settings=inputs.settings, acceptance=inputs.acceptance,
        rules_source=inputs.rules_source, rules_errors=inputs.rules_errors, baseline=inputs.baseline,
        baseline_source=inputs.baseline_source, baseline_errors=inputs.baseline_errors, input_errors=inputs.input_errors)


def report_dict(collection: Collection, inputs: Inputs, run: Mapping[str, Any]) -> Dict[str, Any]:
    """The whole report as report.json holds it, without writing a file: ``judge``, then report.json's one spelling
    (``_aggregate.report_json_chunks``) read back, so it is what the files would hold."""
    report, entries = judge(collection, inputs, run)
    return json.loads(b"".join(_aggregate.report_json_chunks(report, entries, collection.records.json)))


def build_report(records_by_host: Mapping[str, Sequence[Mapping[str, Any]]], host_statuses: Mapping[str, Mapping[str, Any]],
                 run: Mapping[str, Any], outlier_fraction: Optional[float] = None, *,
                 settings: Optional[_aggregate.Settings] = None, acceptance: Any = None, rules_source: Optional[str] = None,
                 rules_errors: Sequence[str] = (), baseline: Any = None, baseline_source: Optional[str] = None,
                 baseline_errors: Sequence[str] = ()) -> Dict[str, Any]:
    """The report of ``{host: [records]}`` (the filter diskproof.fleet.fleet_report): the records in a Collection in
    memory, then ``report_dict``. ``acceptance`` is the raw ``{rules: [...]}`` (``_aggregate.RulesError`` when
    malformed), ``baseline`` a previous report.json as a dict (``BaselineError`` when it is not one); a caller that
    could not load either passes what went wrong as ``rules_errors`` / ``baseline_errors``: the report shows them and
    ``summary.passed`` is false. ``settings`` default to the judge's own (``outlier_fraction`` alone changes that one).
    Inputs are not modified."""
    if settings is None:
        settings = _aggregate.make_settings() if outlier_fraction is None else _aggregate.make_settings(outlier_fraction)
    collection = Collection(RecordsInMemory())
    for host, status in host_statuses.items():
        collection.host_statuses[host] = {"status": status.get("status", _aggregate.HOST_OK),
                                          "problems": list(status.get("problems") or [])}
    for host, records in records_by_host.items():
        collection.add_records(host, records)
    inputs = Inputs(settings, "", acceptance, rules_source, list(rules_errors), baseline, baseline_source,
                    list(baseline_errors), [])
    return report_dict(collection, inputs, run)


def judge_and_write(collection: Collection, inputs: Inputs, run: Mapping[str, Any]) -> Judgement:
    """Judge once, then write every report file from the same entries (``write_files``)."""
    report, entries = judge(collection, inputs, run)
    paths, listing = write_files(report, entries, collection.records.json, inputs.report_dir)
    return Judgement(report, entries, paths, listing)


def handoff(judgement: Optional[Judgement], report_dir: str) -> Dict[str, Any]:
    """What the report play reads (``diskproof_report``): written, report_dir, files, summary (set_stats)."""
    if judgement is None:
        summary = _aggregate.summarize_entries([], [NO_RESULT])
        return {"written": False, "report_dir": report_dir, "files": [], "summary": _aggregate.stats_summary(summary)}
    return {"written": True, "report_dir": report_dir, "files": [os.path.basename(path) for path in judgement.paths],
            "summary": _aggregate.stats_summary(judgement.report["summary"])}


class AtomicFile:
    """A file written under a temp name in its directory, then fsync'd and renamed into place by
    ``commit``: readers never see half a report. An exception in the ``with`` block removes the temp
    file and leaves any previous file as it was."""

    def __init__(self, path: str, binary: bool = False) -> None:
        self.path = path
        directory, name = os.path.split(path)
        handle, self._temp_path = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=directory)
        self.stream = (os.fdopen(handle, "wb", buffering=WRITE_BUFFER) if binary
                       else os.fdopen(handle, "w", buffering=WRITE_BUFFER, encoding="utf-8", newline=""))

    def commit(self) -> None:
        self.stream.flush()
        os.fsync(self.stream.fileno())
        self.stream.close()
        # mkstemp creates 0600; a report is meant to be shared.
        os.chmod(self._temp_path, 0o644)
        os.replace(self._temp_path, self.path)

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, kind, _value, _traceback) -> None:
        if kind is None and not self.stream.closed:
            self.commit()
        elif os.path.exists(self._temp_path):
            self.stream.close()
            os.unlink(self._temp_path)


def write_files(report: Mapping[str, Any], entries: Sequence[_aggregate.Entry], record_json: Callable[[Any], bytes],
                report_dir: str) -> Tuple[List[str], _render.Listing]:
    """Every report file, each written atomically, report.json first; (paths, what the pages listed).

    One pass over the entries writes report.json (``_aggregate.report_json_chunks``: each record's own JSON
    text, from ``record_json(entry.record)``) and results.csv a line per entry, hands each entry to the junit.xml
    writer (which writes host by host) and to the pages' listing (every entry of a small report; at fleet scale
    the entries that are not pass, the passes counted per test and peer group)."""
    os.makedirs(report_dir, exist_ok=True)
    paths = [os.path.join(report_dir, name) for name in REPORT_FILES]
    json_path, csv_path, junit_path, md_path, html_path = paths
    junit = _junit.JunitWriter(report)
    builder = _render.ListingBuilder(len(entries))
    csv_line = CsvLines().line
    with AtomicFile(json_path, binary=True) as json_file, AtomicFile(csv_path) as csv_file:
        csv_file.stream.write(",".join(CSV_COLUMNS) + "\n")
        chunks = _aggregate.report_json_chunks(report, entries, record_json)
        json_file.stream.write(next(chunks))
        for entry, chunk in zip(entries, chunks):
            json_file.stream.write(chunk)
            csv_file.stream.write(csv_line(entry))
            junit.add(entry)
            builder.add(entry)
        json_file.stream.write(next(chunks))
        json_file.commit()
    with AtomicFile(junit_path) as junit_file:
        junit.write(junit_file.stream.write)
    listing = builder.listing()
    with AtomicFile(md_path) as md_file:
        _render.write_markdown(report, listing, md_file.stream.write)
    with AtomicFile(html_path) as html_file:
        _render.write_html(report, listing, html_file.stream.write)
    return paths, listing


def copy_to_runner_artifacts(paths: Sequence[str], artifacts_dir: Optional[str]) -> Optional[str]:
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
# results.csv
# ---------------------------------------------------------------------------------------------

def csv_row(entry: _aggregate.Entry) -> List[Any]:
    """A results.csv row of an entry, formula-like text neutralised (module_utils/_csv_cells)."""
    facts = entry.facts
    if facts is None:
        row = [entry.host, None, None, None, None, entry.verdict, entry.reason, None, None, None, None, None, None, None,
               None, None, None]
    else:
        figures = facts.figures
        row = [entry.host, entry.target_path, entry.device, entry.test, facts.tool, entry.verdict, entry.reason,
               figures.read_bytes_per_s, figures.write_bytes_per_s, figures.read_iops, figures.write_iops,
               facts.seconds, facts.bytes, facts.error, entry.disk_id, facts.target.model,
               _causes.causes_text(entry.causes) or None]
    return [_csv_cells.neutralised(value) for value in row]


class CsvLines:
    """results.csv lines of entries: ``line(entry)`` is what csv.writer writes of the entry's ``csv_row``
    (None an empty field, a float its repr), ending in "\\n". The writer's own line terminator is "\\r\\n":
    csv quotes a field that holds a character of it, so a CR inside a field is quoted too (bare,
    spreadsheets and csv.reader start a new row there, and a formula could begin)."""

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")

    def line(self, entry: _aggregate.Entry) -> str:
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        self._writer.writerow(csv_row(entry))
        return buffer.getvalue()[:-2] + "\n"


# ---------------------------------------------------------------------------------------------
# the console table
# ---------------------------------------------------------------------------------------------

def _format_number(value: Optional[float], unit_divisor: float, digits: int) -> str:
    return "-" if value is None else "%.*f" % (digits, value / unit_divisor)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _table_row(entry: _aggregate.Entry) -> Tuple[str, ...]:
    facts = entry.facts
    figures = facts.figures if facts is not None else None
    bytes_per_s = None if figures is None else sum_of(number_or_none(figures.read_bytes_per_s),
                                                      number_or_none(figures.write_bytes_per_s))
    iops = None if figures is None else sum_of(number_or_none(figures.read_iops), number_or_none(figures.write_iops))
    not_a_disk = None if facts is None else facts.target.not_a_disk
    return (
        entry.host,
        entry.target_path or "-",
        # A target measured with allow_non_disk says so where a disk would be named.
        "%s (not a disk)" % not_a_disk if not_a_disk is not None else entry.device or "-",
        entry.test or "-",
        _format_number(bytes_per_s, 1e6, 1),
        _format_number(bytes_per_s, MIB, 1),
        _format_number(iops, 1, 0),
        entry.verdict,
        _short(entry.reason, TABLE_REASON_MAX),
    )


def _align(cells: Sequence[str], widths: Sequence[int]) -> str:
    parts = []
    for column, cell, width in zip(TABLE_COLUMNS, cells, widths):
        parts.append(cell.rjust(width) if column in NUMERIC_COLUMNS else cell.ljust(width))
    return "  ".join(parts).rstrip()


def verdict_colour(verdict: str) -> Optional[str]:
    """A row's colour: none for pass, a warning for unstable, an error otherwise."""
    if verdict == _aggregate.VERDICT_PASS:
        return None
    return WARN if verdict == _aggregate.VERDICT_UNSTABLE else ERROR


def table_lines(report: Mapping[str, Any], listing: _render.Listing) -> List[Tuple[str, Optional[str]]]:
    """Console (line, colour): title, header, one row per listed entry (already worst first), the
    pass results left out at fleet scale, verdict counts."""
    rows = [_table_row(entry) for entry in listing.entries]
    widths = [max([len(column)] + [len(row[index]) for row in rows]) for index, column in enumerate(TABLE_COLUMNS)]
    summary = report["summary"]
    lines: List[Tuple[str, Optional[str]]] = [
        ("diskproof fleet report: %d results, %d hosts (MB/s = 10^6 B/s, MiB/s = 2^20 B/s)" % (summary["total"], len(report["hosts"])), None),
        (_align(TABLE_COLUMNS, widths), None),
        (_align(["-" * width for width in widths], widths), None),
    ]
    for row, entry in zip(rows, listing.entries):
        lines.append((_align(row, widths), verdict_colour(entry.verdict)))
        if entry.causes:
            lines.append((TABLE_CAUSES_PREFIX + _short(_causes.causes_text(entry.causes), TABLE_REASON_MAX * 2),
                          verdict_colour(entry.verdict)))
    if listing.summarised:
        lines.append(("{0:,} pass results not listed (more than {1:,} results); report.json and results.csv hold all {2:,}".format(
            listing.passes_not_listed, _render.LISTING_LIMIT, listing.total), None))
    lines.append(("verdicts: " + ", ".join("%s %d" % (verdict, count) for verdict, count in summary["counts"].items() if count)
                  + "; acceptance %s" % ("passed" if summary["passed"] else "FAILED"), None if summary["passed"] else ERROR))
    return lines
