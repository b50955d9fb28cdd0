# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback diskproof.fleet.report: collect diskproof_results, judge them, write the report."""
from __future__ import annotations

DOCUMENTATION = r"""
name: report
type: aggregate
short_description: Judge diskproof results across the fleet and write report.json and results.csv
version_added: 0.1.0
description:
  - Collects every record of C(ansible_facts.diskproof_results) returned by
    M(diskproof.fleet.bench_facts) as tasks finish (loop items included, and failed tasks that
    still return records), and remembers failed and unreachable hosts and every host a play targeted.
  - At the end of the playbook it judges each record against the median of its peer group (same
    test id) and prints a table of host, target, test, MB/s (SI, 10^6 B/s), MiB/s (2^20 B/s), IOPS,
    verdict and reason, worst first, then the counts by verdict.
  - "Verdicts: C(pass); C(outlier) (primary metric more than O(outlier_fraction) below the group
    median, judged only when at least 3 hosts measured that test); C(error) (the record carries an
    error); C(not_measured) (host unreachable, a task failed without producing a record, or the
    host produced no record)."
  - The primary metric is IOPS for random-access or small-block (64 KiB or less) tests that report
    IOPS, otherwise bytes per second (read plus write).
  - Writes C(report.json) (run metadata, rules, hosts, peer groups, every record with its verdict,
    summary) and C(results.csv) (one row per record or host problem) into O(report_dir), each
    atomically. Nothing is written when the run produced no record and no host problem.
  - A problem inside this callback is reported as a warning and disables the callback; it never
    fails the play.
requirements:
  - enable in configuration, for example C(callbacks_enabled = diskproof.fleet.report) in the
    C([defaults]) section of C(ansible.cfg).
options:
  report_dir:
    description:
      - Directory that receives C(report.json) and C(results.csv); created when missing.
      - A relative path is relative to the current directory, or to the directory of the
        configuration file when set there.
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
    type: float
    default: 0.15
    env:
      - name: DISKPROOF_OUTLIER_FRACTION
    ini:
      - section: diskproof_report
        key: outlier_fraction
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = diskproof.fleet.report
#
# [diskproof_report]
# report_dir = ./diskproof-report
# outlier_fraction = 0.15
#
# or for one run:
#   ANSIBLE_CALLBACKS_ENABLED=diskproof.fleet.report DISKPROOF_REPORT_DIR=/tmp/rack6 \
#     ansible-playbook -i lab/inventory.yml playbooks/validate.yml
"""

import copy
import csv
import datetime
import functools
import io
import json
import os
import socket
import tempfile
from collections.abc import Mapping

import yaml
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version
from ansible_collections.diskproof.fleet.plugins.module_utils import _aggregate

REPORT_JSON = "report.json"
RESULTS_CSV = "results.csv"
CSV_COLUMNS = (
    "host", "target_path", "device", "test", "tool", "verdict", "reason",
    "read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "seconds", "bytes", "error",
)
TABLE_COLUMNS = ("host", "target", "device", "test", "MB/s", "MiB/s", "IOPS", "verdict", "reason")
NUMERIC_COLUMNS = frozenset(("MB/s", "MiB/s", "IOPS"))
TABLE_REASON_MAX = 110
MIB = 2 ** 20
TASK_FAILED_PREFIX = "Task failed: "


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

def _records_in(result) -> list[dict]:
    """Deep copies of the diskproof_results records of one task or item result."""
    facts = result._result.get("ansible_facts")
    if not isinstance(facts, Mapping):
        return []
    records = facts.get("diskproof_results")
    if not isinstance(records, list):
        return []
    # Copies: other callbacks get the same result objects and we must not share or mutate them.
    return [copy.deepcopy(dict(record)) for record in records if isinstance(record, Mapping)]


def _is_loop_summary(result) -> bool:
    """True for the final result of a looped task: its items were already reported one by one."""
    task = result._task
    is_loop = getattr(task, "loop", None) is not None or bool(getattr(task, "loop_with", None))
    return is_loop and isinstance(result._result.get("results"), list)


def _message_of(result) -> str:
    message = str(result._result.get("msg") or result._result.get("stderr") or "").strip()
    # ansible-core 2.19 prefixes unreachable messages with this; the status already says it.
    return message[len(TASK_FAILED_PREFIX):] if message.startswith(TASK_FAILED_PREFIX) else message


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
    bytes_per_s = _aggregate.bytes_per_s_of(record)
    iops = _aggregate.iops_of(record)
    return (
        entry["host"],
        entry.get("target_path") or "-",
        entry.get("device") or "-",
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


def render_table(report: Mapping) -> list[str]:
    """Console lines: title, header, one row per entry (already worst first), verdict counts."""
    rows = [_table_row(entry) for entry in report["results"]]
    widths = [max([len(column)] + [len(row[index]) for row in rows]) for index, column in enumerate(TABLE_COLUMNS)]
    summary = report["summary"]
    lines = [
        "diskproof fleet report: %d results, %d hosts (MB/s = 10^6 B/s, MiB/s = 2^20 B/s)" % (summary["total"], len(report["hosts"])),
        _align(TABLE_COLUMNS, widths),
        _align(["-" * width for width in widths], widths),
    ]
    lines.extend(_align(row, widths) for row in rows)
    lines.append("verdicts: " + ", ".join("%s %d" % (verdict, count) for verdict, count in summary["counts"].items()))
    return lines


def _csv_value(value) -> str:
    return "" if value is None else str(value)


def render_csv(report: Mapping) -> str:
    """results.csv text: one row per entry of the report, in report order."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry in report["results"]:
        record = entry.get("record") or {}
        metrics = record.get("metrics") if isinstance(record.get("metrics"), Mapping) else {}
        writer.writerow([_csv_value(value) for value in (
            entry["host"], entry.get("target_path"), entry.get("device"), entry.get("test"), record.get("tool"),
            entry["verdict"], entry.get("reason"),
            metrics.get("read_bytes_per_s"), metrics.get("write_bytes_per_s"), metrics.get("read_iops"), metrics.get("write_iops"),
            record.get("seconds"), record.get("bytes"), record.get("error"),
        )])
    return buffer.getvalue()


def write_atomically(path: str, text: str) -> None:
    """Write text to path through a temp file in the same directory and os.replace: readers never see half a report."""
    directory, name = os.path.split(path)
    handle, temp_path = tempfile.mkstemp(prefix="." + name + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp creates 0600; a report is meant to be shared.
        os.chmod(temp_path, 0o644)
        os.replace(temp_path, path)
    finally:
        if os.path.exists(temp_path):
            os.unlink(temp_path)


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
# ---------------------------------------------------------------------------------------------

class CallbackModule(CallbackBase):
    """Collects diskproof_results records and host outcomes; judges and writes them at the end."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "diskproof.fleet.report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, options=None):
        self._report_dir = None
        self._outlier_fraction = _aggregate.DEFAULT_OUTLIER_FRACTION
        self._records_by_host: dict[str, list[dict]] = {}
        self._host_statuses: dict[str, dict] = {}
        self._inventory_size = None
        self._playbook = None
        self._started = _utc_now()
        super().__init__(display=display, options=options)

    @_guarded
    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        self._report_dir = self.get_option("report_dir")
        self._outlier_fraction = _aggregate.validate_outlier_fraction(self.get_option("outlier_fraction"))

    # -- bookkeeping -----------------------------------------------------------------------

    def _host_status(self, host: str) -> dict:
        return self._host_statuses.setdefault(host, {"status": _aggregate.HOST_OK, "problems": []})

    def _mark_host(self, host: str, status: str) -> None:
        # unreachable outranks failed outranks ok: a host keeps its worst outcome.
        ranks = (_aggregate.HOST_OK, _aggregate.HOST_FAILED, _aggregate.HOST_UNREACHABLE)
        current = self._host_status(host)
        if ranks.index(status) > ranks.index(current["status"]):
            current["status"] = status

    def _add_records(self, result) -> bool:
        host = result._host.get_name()
        self._host_status(host)
        records = _records_in(result)
        if records:
            self._records_by_host.setdefault(host, []).extend(records)
        return bool(records)

    def _add_problem(self, result, status: str) -> None:
        host = result._host.get_name()
        self._mark_host(host, status)
        self._host_status(host)["problems"].append({"task": result._task.get_name(), "status": status, "message": _message_of(result)})

    def _failed(self, result) -> None:
        # A failure that still returned records is judged through those records (verdict error).
        self._mark_host(result._host.get_name(), _aggregate.HOST_FAILED)
        if not self._add_records(result):
            self._add_problem(result, _aggregate.HOST_FAILED)

    # -- events ----------------------------------------------------------------------------

    @_guarded
    def v2_playbook_on_start(self, playbook):
        self._started = _utc_now()
        self._playbook = os.path.basename(playbook._file_name)

    @_guarded
    def v2_playbook_on_play_start(self, play):
        inventory = play.get_variable_manager()._inventory
        # Every host the play targets appears in the report, even if it never answered.
        for host in inventory.get_hosts(play.hosts):
            self._host_status(host.get_name())
        self._inventory_size = len(inventory.get_hosts("all", ignore_limits=True, ignore_restrictions=True))

    @_guarded
    def v2_runner_on_ok(self, result):
        if not _is_loop_summary(result):
            self._add_records(result)

    @_guarded
    def v2_runner_item_on_ok(self, result):
        self._add_records(result)

    @_guarded
    def v2_runner_on_failed(self, result, ignore_errors=False):
        if _is_loop_summary(result):
            self._mark_host(result._host.get_name(), _aggregate.HOST_FAILED)
        else:
            self._failed(result)

    @_guarded
    def v2_runner_item_on_failed(self, result):
        self._failed(result)

    @_guarded
    def v2_runner_on_unreachable(self, result):
        self._add_problem(result, _aggregate.HOST_UNREACHABLE)

    @_guarded
    def v2_playbook_on_stats(self, stats):
        for host in stats.processed:
            self._host_status(str(host))
        if not self._records_by_host and not any(status["problems"] for status in self._host_statuses.values()):
            self._display.display("diskproof fleet report: no diskproof_results in this run, nothing written")
            return
        report = _aggregate.build_report(self._records_by_host, self._host_statuses, self._run_metadata(), self._outlier_fraction)
        self._display.display("\n".join(render_table(report)))
        json_path, csv_path = self._write(report)
        self._display.display("report: %s (also %s)" % (json_path, csv_path))

    # -- output ----------------------------------------------------------------------------

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

    def _write(self, report: dict) -> tuple[str, str]:
        report_dir = os.path.abspath(self._report_dir)
        os.makedirs(report_dir, exist_ok=True)
        json_path = os.path.join(report_dir, REPORT_JSON)
        csv_path = os.path.join(report_dir, RESULTS_CSV)
        write_atomically(json_path, json.dumps(report, indent=2, sort_keys=True) + "\n")
        write_atomically(csv_path, render_csv(report))
        return json_path, csv_path
