# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The human-readable pages of a judgement: ``report.md`` and ``report.html``.

Pure Python (no Ansible imports; the standard library and the judge's names). Both pages read what
every writer reads: the report's sections (``_aggregate.judge_report``: run, rules, baseline, hosts,
groups, summary) and the judged entries (``_aggregate.Entry``, worst first), through a ``Listing``.

``write_html`` writes ONE self-contained page: inline CSS, inline SVG charts drawn here, no
JavaScript, no external fonts, images, scripts or links. Every string taken from the report
(host names, paths, reasons, run metadata) is escaped: they come from the inventory and from
tool output.

Fleet scale: a report of more than ``LISTING_LIMIT`` results lists only the results that are not
``pass`` row by row; pass results are counted per test and peer group (``Listing``), and the
pages say so and point at report.json / results.csv, which hold every result. The pages are
written piece by piece through a ``write`` function.

Units: the report holds bytes per second and operations per second; here they are shown as
MB/s (10^6 B/s), MiB/s (2^20 B/s) and IOPS, always labelled.
"""
from __future__ import annotations

import html
import io
import math
import re
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.diskproof.fleet.plugins.module_utils._metrics import METRIC_BYTES_PER_S, METRIC_IOPS
from ansible_collections.diskproof.fleet.plugins.plugin_utils._causes import causes_text
from ansible_collections.diskproof.fleet.plugins.plugin_utils._aggregate import (
    INTEGRITY_KIND_TEXT, VERDICT_KINDS, VERDICT_PASS, Entry, finite_number, latency_check_text, number_text,
    one_line_text)

_RUN_KEY_ORDER = ("playbook", "started", "finished", "controller_hostname", "ansible_version",
                  "collection_version", "inventory_size", "targeted_hosts")
_RUN_KEY_LABELS = {
    "playbook": "Playbook",
    "started": "Started",
    "finished": "Finished",
    "controller_hostname": "Controller",
    "ansible_version": "Ansible",
    "collection_version": "diskproof.fleet",
    "inventory_size": "Hosts in inventory",
    "targeted_hosts": "Hosts targeted",
}
_METRIC_LABELS = {METRIC_BYTES_PER_S: "throughput", METRIC_IOPS: "IOPS"}
_UNITS_NOTE = "MB/s = 10^6 bytes/s, MiB/s = 2^20 bytes/s, IOPS = operations/s."
_DASH = "\u2014"
# More results than this: the pages list the results that are not pass row by row and only count
# the passes (per test and peer group). report.json and results.csv always hold every result.
LISTING_LIMIT = 200
# At most this many bars per chart when results are summarised (the worst, in report order).
CHART_LIMIT = 200
Write = Callable[[str], Any]
_text = one_line_text
_num = number_text


def _esc(value: Any) -> str:
    return html.escape(_text(value), quote=True)


def _verdict_class(verdict: str) -> str:
    return VERDICT_KINDS[verdict]


def _verdict_label(verdict: str) -> str:
    return verdict.replace("_", " ")


# ---------------------------------------------------------------------------------------------
# an entry as the pages show it
# ---------------------------------------------------------------------------------------------

def _reason(entry: Entry) -> str:
    """Every finding; with more than one, each prefixed by its verdict."""
    findings = [(_text(verdict), _text(reason)) for verdict, reason in entry.findings]
    findings = [(verdict, reason) for verdict, reason in findings if reason]
    if len(findings) > 1:
        return "; ".join("%s: %s" % (verdict, reason) if verdict else reason for verdict, reason in findings)
    if findings:
        return findings[0][1]
    return _text(entry.reason)


def _metric(entry: Entry) -> Tuple[Optional[str], Optional[float]]:
    name, value = entry.primary
    return name, finite_number(value)


def _test_of(entry: Entry) -> str:
    return _text(entry.test)


def _target_of(entry: Entry) -> Tuple[str, str]:
    return _text(entry.target_path), _text(entry.device)


def _device_cell(entry: Entry) -> str:
    """'sdb' or 'sdb, serial S3Z9NX0K' when the entry names the physical disk."""
    _path, device = _target_of(entry)
    serial = _text(entry.disk_id)
    if serial:
        return "%s, serial %s" % (device, serial) if device else "serial %s" % serial
    return device


def _counts(report: Mapping[str, Any]) -> List[Tuple[str, int]]:
    """(verdict, count), worst first: every verdict of the judge."""
    return list(report["summary"]["counts"].items())


def _overall(report: Mapping[str, Any], counts: Sequence[Tuple[str, int]]) -> Tuple[bool, str]:
    """(summary.passed, a sentence saying why)."""
    problems = sum(count for verdict, count in counts if verdict != VERDICT_PASS)
    total = report["summary"]["total"]
    errors = len(_input_errors(report))
    if total == 0:
        sentence = "No results: nothing was measured."
    elif problems == 0:
        sentence = "All %d results pass." % total
    else:
        sentence = "%d of %d results need attention." % (problems, total)
    if errors:
        sentence += " %d input error%s (rules or baseline not usable)." % (errors, "" if errors == 1 else "s")
    return report["summary"]["passed"], sentence


def _problem_entries(listing: "Listing") -> List[Entry]:
    """Non-pass entries, worst first (as the judge sorted them)."""
    return [entry for entry in listing.entries if entry.verdict != VERDICT_PASS]


def _group_test(group: Mapping[str, Any]) -> str:
    return _text(group["key"][0])


def _tests(report: Mapping[str, Any], listing: "Listing") -> List[str]:
    """Test ids in the order they first appear in the groups, then in the results (sorted)."""
    tests: List[str] = []
    for group in report["groups"]:
        test = _group_test(group)
        if test and test not in tests:
            tests.append(test)
    others = set(_test_of(entry) for entry in listing.entries)
    others.update(key[0] for key in listing.pass_counts)
    others.update(listing.test_descriptions)
    tests.extend(sorted(test for test in others if test and test not in tests))
    return tests


def _test_entries(listing: "Listing", test: str) -> List[Entry]:
    entries = [entry for entry in listing.entries if _test_of(entry) == test]
    return sorted(entries, key=lambda entry: (_text(entry.host), _target_of(entry)))


# ---------------------------------------------------------------------------------------------
# what the pages list row by row, and what they only count
# ---------------------------------------------------------------------------------------------

PassKey = Tuple[str, Tuple[str, ...], str]


class Listing(NamedTuple):
    """The entries a page lists row by row, and the pass entries it only counts.

    ``entries``: listed, in report order; ``total``: every entry of the report; ``summarised``:
    pass entries are counted in ``pass_counts`` (``pass_key`` -> count) instead of listed (more
    than ``LISTING_LIMIT`` results); ``test_descriptions``: per test, how it was run (the first
    entry of the test in report order that has a record) when its entries are not all listed.
    """

    entries: List[Entry]
    total: int
    summarised: bool
    pass_counts: Dict[PassKey, int]
    test_descriptions: Dict[str, str]

    @property
    def passes_not_listed(self) -> int:
        return sum(self.pass_counts.values())


def pass_key(test: Any, group: Any, metric: Any) -> PassKey:
    """How a pass entry that is not listed is counted: (test, group key, metric name), as text."""
    return _text(test), tuple(_text(part) for part in group or ()), _text(metric)


class ListingBuilder:
    """The ``Listing`` of a report, built one entry at a time in report order: ``add`` every entry, then
    ``listing``: every entry of a small report; at fleet scale the entries that are not pass, the
    passes counted by (test, group key, metric name)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.summarised = total > LISTING_LIMIT
        self.listed: List[Entry] = []
        self.pass_counts: Dict[PassKey, int] = {}
        self.test_descriptions: Dict[str, str] = {}

    def add(self, entry: Entry) -> None:
        if not self.summarised:
            self.listed.append(entry)
            return
        test = _text(entry.test)
        if test and entry.facts is not None and test not in self.test_descriptions:
            self.test_descriptions[test] = entry.facts.description
        if entry.verdict == VERDICT_PASS:
            key = pass_key(test, entry.group, entry.primary[0])
            self.pass_counts[key] = self.pass_counts.get(key, 0) + 1
        else:
            self.listed.append(entry)

    def listing(self) -> Listing:
        return Listing(self.listed, self.total, self.summarised, self.pass_counts, self.test_descriptions)


def listing_of(entries: Sequence[Entry]) -> Listing:
    """The Listing of a report's entries (``ListingBuilder``)."""
    builder = ListingBuilder(len(entries))
    for entry in entries:
        builder.add(entry)
    return builder.listing()


def _summarised_sentence(listing: Listing) -> str:
    return ("More than {limit:,} results: the {passes:,} pass results are counted per test and peer group, not listed one by one; "
            "report.json and results.csv hold all {total:,} results.").format(limit=LISTING_LIMIT, passes=listing.passes_not_listed,
                                                                              total=listing.total)


def _test_counts(listing: Listing, test: str) -> Tuple[int, int]:
    """(pass entries counted, entries listed) of a test."""
    passes = sum(count for key, count in listing.pass_counts.items() if key[0] == test)
    listed = sum(1 for entry in listing.entries if _test_of(entry) == test)
    return passes, listed


def _test_sentence(passes: int, listed: int) -> str:
    return "{results:,} result{s}: {passes:,} pass (counted, not listed), {listed:,} listed under Needs attention.".format(
        results=passes + listed, s="" if passes + listed == 1 else "s", passes=passes, listed=listed)


_FLEET_GROUP_HEADERS = ["Group key", "Metric", "Count", "Pass", "Median", "MAD", "Min", "Max"]


def _fleet_group_rows(report: Mapping[str, Any], listing: Listing, test: str) -> List[List[str]]:
    """The test's peer groups with the number of pass results counted in each."""
    rows = []
    for group in report["groups"]:
        if _group_test(group) != test:
            continue
        row = _group_row(group)
        passes = listing.pass_counts.get(pass_key(test, group["key"], group["metric"]), 0)
        rows.append(row[:3] + ["%d" % passes] + row[3:])
    return rows


# ---------------------------------------------------------------------------------------------
# numbers in human units
# ---------------------------------------------------------------------------------------------


def _metric_value(name: Optional[str], value: Optional[float], both_units: bool = True) -> str:
    """'33.5 MB/s (31.9 MiB/s)' for bytes per second, '404 IOPS' for IOPS, em dash for none."""
    if value is None:
        return _DASH
    if name == METRIC_BYTES_PER_S:
        text = "%s MB/s" % _num(value / 1e6)
        if both_units:
            text += " (%s MiB/s)" % _num(value / 1048576.0)
        return text
    if name == METRIC_IOPS:
        return "%s IOPS" % _num(value)
    return _num(value)


def _axis_unit(name: Optional[str]) -> Tuple[float, str]:
    if name == METRIC_BYTES_PER_S:
        return 1e6, "MB/s (10^6 bytes/s)"
    if name == METRIC_IOPS:
        return 1.0, "IOPS"
    return 1.0, _text(name)


def _deviation(entry: Entry) -> str:
    deviation = finite_number(entry.deviation_from_median)
    return _DASH if deviation is None else "%+.1f%%" % (deviation * 100)


def _group_key_text(group: Mapping[str, Any]) -> str:
    parts = [_text(part) for part in group["key"] if _text(part)]
    return " / ".join(parts) if parts else _DASH


def _group_row(group: Mapping[str, Any]) -> List[str]:
    name = group["metric"]
    return [
        _group_key_text(group),
        _METRIC_LABELS.get(name, name),
        "%d" % group["measured"],
        _metric_value(name, group["median"], both_units=False),
        _metric_value(name, group["mad"], both_units=False),
        _metric_value(name, group["min"], both_units=False),
        _metric_value(name, group["max"], both_units=False),
    ]


_GROUP_HEADERS = ["Group key", "Metric", "Count", "Median", "MAD", "Min", "Max"]
# Every cause in the column, ranked: the first is the likeliest, the rest are what a reader checks next.
_PROBLEM_HEADERS = ["Verdict", "Host", "Test", "Target", "Device", "Figure", "vs median", "Reason", "Likely cause"]
_TEST_HEADERS = ["Host", "Target", "Device", "Figure", "vs median", "Verdict", "Reason", "Likely cause"]


def _causes_cell(entry: Entry) -> str:
    return _text(causes_text(entry.causes))


def _problem_row(entry: Entry) -> List[str]:
    path, _device = _target_of(entry)
    name, value = _metric(entry)
    return [entry.verdict, _text(entry.host), _test_of(entry), path, _device_cell(entry),
            _metric_value(name, value), _deviation(entry), _reason(entry), _causes_cell(entry)]


_DIFFERENCE_HEADERS = ["Model", "Size", "Attribute", "Disks"]
_DIFFERENCES_NOTE = ("Disks of one model and size that differ in firmware, write cache or queue settings, passing disks "
                     "included: a difference is a hint, not a verdict.")


def _disk_size_text(size_bytes: float) -> str:
    """'3.84 TB', '960 GB', '134 MB': a disk's capacity as its label gives it (decimal units)."""
    if size_bytes >= 1e12:
        return "%s TB" % _num(round(size_bytes / 1e12, 2))
    if size_bytes >= 1e9:
        return "%s GB" % _num(round(size_bytes / 1e9, 1))
    return "%s MB" % _num(round(size_bytes / 1e6))


def _difference_rows(report: Mapping[str, Any]) -> List[List[str]]:
    rows = []
    for difference in report.get("differences") or ():
        size = finite_number(difference.get("size_bytes"))
        rows.append([_text(difference.get("model")), _disk_size_text(size) if size is not None else "",
                     _text(difference.get("attribute")), _text(difference.get("text"))])
    return rows


_BAD_BLOCK_HEADERS = ["Host", "Test", "Target", "Offset", "Length", "Kind", "What it holds"]
_BAD_BLOCKS_NOTE = ("Each block of a verify test that did not read back as written (offset and length in bytes, in the "
                    "test file or the raw device); the kind says what the block holds instead.")


def _bad_block_rows(listing: "Listing") -> List[List[str]]:
    """Every listed entry's bad blocks (the first of each, as its integrity keeps them), then how many more."""
    rows: List[List[str]] = []
    for entry in listing.entries:
        integrity = None if entry.facts is None else entry.facts.integrity
        if integrity is None or not integrity.bad_blocks_total:
            continue
        path = _target_of(entry)[0]
        for offset, length, kind, detail in integrity.blocks:
            rows.append([entry.host, _test_of(entry), path, _text(offset), _text(length),
                         "%s: %s" % (_text(kind), INTEGRITY_KIND_TEXT.get(_text(kind), "")), _text(detail)])
        more = integrity.bad_blocks_total - len(integrity.blocks)
        if more > 0:
            rows.append([entry.host, _test_of(entry), path, "", "", "",
                         "{0:,} more bad blocks: the record's integrity.bad_blocks lists the first 64, kinds counts "
                         "them all".format(more)])
    return rows


_LATENCY_HEADER = "Latency vs rule"


def _with_latency(entries: Sequence[Entry]) -> bool:
    """Whether a test's table gets the latency column: some entry has a latency limit of an acceptance rule."""
    return any(entry.latency for entry in entries)


def _latency_cell(entry: Entry) -> str:
    """Every latency limit that applied to the entry beside its figure ('read p99.99 3.10 ms > 2.50 ms (rule 1)')."""
    return "; ".join(latency_check_text(check) for check in entry.latency) or "-"


def _test_row(entry: Entry, latency: bool = False) -> List[str]:
    path, _device = _target_of(entry)
    name, value = _metric(entry)
    row = [_text(entry.host), path, _device_cell(entry), _metric_value(name, value), _deviation(entry)]
    if latency:
        row.append(_latency_cell(entry))
    return row + [entry.verdict, _reason(entry), _causes_cell(entry)]


def _test_headers(latency: bool) -> List[str]:
    return _TEST_HEADERS[:5] + [_LATENCY_HEADER] + _TEST_HEADERS[5:] if latency else _TEST_HEADERS


def _run_items(report: Mapping[str, Any]) -> List[Tuple[str, str]]:
    run = report["run"]
    keys = [key for key in _RUN_KEY_ORDER if key in run]
    keys += sorted((key for key in run if key not in _RUN_KEY_ORDER), key=_text)
    items = [(_RUN_KEY_LABELS.get(key, _text(key)), _text(run.get(key)) or _DASH) for key in keys]
    rules = report["rules"]
    items.append(("Peer groups by", _text(rules["peer_group"])))
    baseline = report["baseline"]
    if _text(baseline["source"]):
        started = _text(baseline["started"])
        items.append(("Baseline", _text(baseline["source"]) + (" (run %s)" % started if started else "")))
        items.append(("Regression limit", "%.0f%% below baseline" % (rules["regression_fraction"] * 100)))
    if _text(rules["source"]):
        items.append(("Acceptance rules", _text(rules["source"])))
    return items


def _input_errors(report: Mapping[str, Any]) -> List[str]:
    """Inputs asked for but unusable (rules, baseline): they fail the run on their own."""
    return [_text(error) for error in report["summary"]["input_errors"] if _text(error)]


def _title(report: Mapping[str, Any]) -> str:
    run = report["run"]
    parts = ["diskproof report"]
    if _text(run.get("playbook")):
        parts.append(_text(run.get("playbook")))
    if _text(run.get("started")):
        parts.append(_text(run.get("started")))
    return " \u2014 ".join(parts)


def _subtitle(report: Mapping[str, Any], listing: Listing) -> str:
    """'validate.yml, 2026-11-22T01:08:38Z to 2026-11-22T01:09:32Z, 6 hosts, 18 results'."""
    run = report["run"]
    parts = []
    if _text(run.get("playbook")):
        parts.append("Playbook %s" % _text(run.get("playbook")))
    started, finished = _text(run.get("started")), _text(run.get("finished"))
    if started:
        parts.append("%s to %s" % (started, finished or "?"))
    hosts = len(report["hosts"])
    if hosts:
        parts.append("%d host%s" % (hosts, "" if hosts == 1 else "s"))
    parts.append("%d result%s" % (listing.total, "" if listing.total == 1 else "s"))
    return ", ".join(parts)


def _test_description(entries: Sequence[Entry]) -> str:
    """'fio 3.33, block 4 KiB, O_DIRECT, iodepth 32' of the first entry that has a record."""
    return next((entry.facts.description for entry in entries if entry.facts is not None), "")


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------

_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _md(value: Any) -> str:
    """One table cell / inline text: no newlines, pipes and markup characters neutralised."""
    text = _text(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("*", "\\*")
    text = html.escape(text, quote=False)  # Markdown renders inline HTML: & < > as text
    text = text.replace("[", "\\[").replace("]", "\\]")
    return _MD_UNDERSCORE.sub("\\_", text)


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> Iterator[str]:
    yield "| " + " | ".join(_md(header) for header in headers) + " |"
    yield "|" + "|".join("---" for _header in headers) + "|"
    for row in rows:
        yield "| " + " | ".join(_md(cell) if cell != "" else _DASH for cell in row) + " |"


class _Lines:
    """Writes lines joined by newlines (the last line without one), as "\n".join(lines) would."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._first = True

    def add(self, *lines: str) -> None:
        self.extend(lines)

    def extend(self, lines: Iterable[str]) -> None:
        write = self._write
        for line in lines:
            if self._first:
                self._first = False
                write(line)
            else:
                write("\n" + line)


def render_markdown(report: Mapping[str, Any], entries: Sequence[Entry]) -> str:
    """``report.md`` of a report's sections and entries (``write_markdown`` into a string)."""
    buffer = io.StringIO()
    write_markdown(report, listing_of(entries), buffer.write)
    return buffer.getvalue()


def write_markdown(report: Mapping[str, Any], listing: Listing, write: Write) -> None:
    """``report.md``: title, run metadata, summary, problems worst first, per-test tables, groups; piece by piece."""
    counts = _counts(report)
    passed, sentence = _overall(report, counts)
    out = _Lines(write)
    out.add("# %s" % _md(_title(report)), "")

    out.add("## Run", "")
    out.extend(["- **%s:** %s" % (_md(label), _md(value)) for label, value in _run_items(report)])
    out.add("- **Outlier limit:** %.0f%% below the group median" % (report["rules"]["outlier_fraction"] * 100))
    out.add("")

    out.add("## Summary", "", "**%s** %s" % ("PASSED." if passed else "NOT PASSED.", _md(sentence)), "")
    out.extend(_md_table(["Verdict", "Count"], [[verdict, "%d" % count] for verdict, count in counts]))
    out.add("")
    input_errors = _input_errors(report)
    if input_errors:
        out.extend(["Input errors:", ""] + ["- %s" % _md(error) for error in input_errors] + [""])
    if listing.summarised:
        out.add(_md(_summarised_sentence(listing)), "")

    problems = _problem_entries(listing)
    out.add("## Needs attention (worst first)", "")
    if problems:
        out.extend(_md_table(_PROBLEM_HEADERS, (_problem_row(entry) for entry in problems)))
    else:
        out.add("Nothing: every result passes." if listing.total else "No results.")
    out.add("")

    bad_blocks = _bad_block_rows(listing)
    if bad_blocks:
        out.add("## Bad blocks", "", _md(_BAD_BLOCKS_NOTE), "")
        out.extend(_md_table(_BAD_BLOCK_HEADERS, bad_blocks))
        out.add("")

    out.add("## Results by test", "", _md(_UNITS_NOTE) + " vs median: deviation from the group median.", "")
    tests = _tests(report, listing)
    for test in tests:
        out.add("### %s" % _md(test), "")
        if listing.summarised:
            description = listing.test_descriptions.get(test, "")
            if description:
                out.add(_md(description), "")
            out.add(_md(_test_sentence(*_test_counts(listing, test))), "")
            rows = _fleet_group_rows(report, listing, test)
            if rows:
                out.extend(_md_table(_FLEET_GROUP_HEADERS, rows))
                out.add("")
            continue
        entries = _test_entries(listing, test)
        description = _test_description(entries)
        if description:
            out.add(_md(description), "")
        latency = _with_latency(entries)
        out.extend(_md_table(_test_headers(latency), (_test_row(entry, latency) for entry in entries)))
        out.add("")
    if not tests:
        out.add("No test results.", "")

    differences = _difference_rows(report)
    if differences:
        out.add("## Differences within disk groups", "", _md(_DIFFERENCES_NOTE), "")
        out.extend(_md_table(_DIFFERENCE_HEADERS, differences))
        out.add("")

    out.add("## Peer groups", "")
    groups = report["groups"]
    if groups:
        out.extend(_md_table(_GROUP_HEADERS, (_group_row(group) for group in groups)))
    else:
        out.add("No peer groups (nothing measured).")
    out.add("")


# ---------------------------------------------------------------------------------------------
# SVG charts
# ---------------------------------------------------------------------------------------------

_CHART_WIDTH = 960
_LABEL_WIDTH = 230
_NOTE_WIDTH = 210
_PLOT_WIDTH = _CHART_WIDTH - _LABEL_WIDTH - _NOTE_WIDTH
_LINE_COLOURS = ("#1f4e79", "#c55a11", "#2e7d32", "#7b1fa2", "#00838f", "#ad1457", "#5d4037", "#455a64")
_LINE_DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 2 1 2", "3 6")


def _nice_step(span: float, target_ticks: int = 6) -> float:
    if span <= 0:
        return 1.0
    raw = span / target_ticks
    power = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if raw <= multiple * power:
            return multiple * power
    return 10 * power


def _ticks(maximum: float) -> Tuple[float, List[float]]:
    """(axis maximum, tick values from 0) for a value axis that starts at zero."""
    step = _nice_step(maximum)
    top = step * math.ceil(maximum / step) if maximum > 0 else step
    count = int(round(top / step))
    return top, [step * index for index in range(count + 1)]


def _tick_label(value: float) -> str:
    if value == int(value):
        return "{:,.0f}".format(value)
    return ("%.2f" % value).rstrip("0").rstrip(".")


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _group_of(entry: Entry, groups: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The peer group an entry was judged in: by its key when the group has members, else by test + metric,
    with the entry's group median breaking ties between several groups."""
    name, value = _metric(entry)
    test = _test_of(entry)
    if entry.group is not None:
        key = list(entry.group)
        for group in groups:
            if group["key"] == key and (name is None or group["metric"] == name):
                return group
    if value is None:
        # No figure (error, invalid, not measured): not drawn against any group.
        return None
    candidates = [group for group in groups
                  if test in [_text(part) for part in group["key"]] and (name is None or group["metric"] == name)]
    if len(candidates) > 1:
        entry_median = finite_number(entry.group_median)
        if entry_median is not None:
            return min(candidates, key=lambda group: abs((finite_number(group["median"]) or 0.0) - entry_median))
    return candidates[0] if candidates else None


def _chart_rows(entries: Sequence[Entry], groups: Sequence[Mapping[str, Any]]) -> List[Tuple[Optional[Mapping[str, Any]], List[Entry]]]:
    """Entries bucketed by peer group, in the order of the groups list, then ungrouped ones."""
    buckets: List[Tuple[Optional[Mapping[str, Any]], List[Entry]]] = []
    for entry in entries:
        group = _group_of(entry, groups)
        for bucket_group, bucket in buckets:
            if bucket_group is group:
                bucket.append(entry)
                break
        else:
            buckets.append((group, [entry]))

    def position(bucket: Tuple[Optional[Mapping[str, Any]], List[Entry]]) -> int:
        for index, group in enumerate(groups):
            if group is bucket[0]:
                return index
        return len(groups)
    return sorted(buckets, key=position)


def _median_of(group: Optional[Mapping[str, Any]], entries: Sequence[Entry]) -> Optional[float]:
    if group is not None:
        return finite_number(group["median"])
    medians = [finite_number(entry.group_median) for entry in entries]
    medians = [value for value in medians if value is not None]
    return medians[0] if medians else None


def _svg_defs(prefix: str) -> str:
    return (
        "<defs>"
        '<pattern id="%s-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#e07b24"/><line x1="0" y1="0" x2="0" y2="6" stroke="#7a3a00" stroke-width="2.2"/></pattern>'
        '<pattern id="%s-cross" width="6" height="6" patternUnits="userSpaceOnUse">'
        '<rect width="6" height="6" fill="#c62828"/><path d="M0 0L6 6M6 0L0 6" stroke="#5a0000" stroke-width="1.4"/></pattern>'
        '<pattern id="%s-band" width="5" height="5" patternUnits="userSpaceOnUse">'
        '<rect width="5" height="5" fill="#e6f0e6"/><circle cx="2.5" cy="2.5" r="0.6" fill="#8aa88a"/></pattern>'
        "</defs>"
    ) % (prefix, prefix, prefix)


def _bar_chart(chart_id: str, test: str, metric_name: Optional[str], entries: Sequence[Entry],
               groups: Sequence[Mapping[str, Any]], fraction: float) -> str:
    """Horizontal bars, one per disk, over each peer group's median line and median +/- fraction band."""
    scale, unit = _axis_unit(metric_name)
    buckets = _chart_rows(entries, groups)
    many = len(entries) > 40
    row_height = 16 if many else 26
    bar_height = 10 if many else 16
    font = 10 if many else 12
    top_pad = 22
    group_header = 40
    values: List[float] = []
    for group, bucket in buckets:
        median = _median_of(group, bucket)
        if median is not None:
            values.append(median * (1 + fraction))
        for entry in bucket:
            _name, value = _metric(entry)
            if value is not None:
                values.append(value)
    top, ticks = _ticks(max(values) / scale * 1.02 if values else 1.0)

    def x_of(value: float) -> float:
        return _LABEL_WIDTH + max(0.0, min(1.0, value / scale / top)) * _PLOT_WIDTH

    stripes: List[str] = []
    parts: List[str] = []
    overlays: List[str] = []
    y = top_pad
    flagged = 0
    for bucket_index, (group, bucket) in enumerate(buckets):
        median = _median_of(group, bucket)
        if len(buckets) > 1 or (group is not None and len(group["key"]) > 1):
            # A header line per peer group, then room for the median label above the rows.
            y += 8 if bucket_index else -top_pad + 4
            label = "group: %s" % (_group_key_text(group) if group is not None else "none (no figure to compare)")
            parts.append('<text class="grp" x="%d" y="%.1f">%s</text>' % (8, y + 12, _esc(_short(label, 110))))
            y += group_header if median is not None else group_header - 16
        block_top = y
        block_height = row_height * len(bucket)
        if median is not None:
            low, high = x_of(median * (1 - fraction)), x_of(median * (1 + fraction))
            parts.append(
                '<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#%s-band)">'
                "<title>%s</title></rect>"
                % (low, block_top, max(high - low, 1.0), block_height, chart_id,
                   _esc("expected band: median %s \u00b1 %.0f%% (%s to %s)" % (
                       _metric_value(metric_name, median, False), fraction * 100,
                       _metric_value(metric_name, median * (1 - fraction), False),
                       _metric_value(metric_name, median * (1 + fraction), False)))))
        for index, entry in enumerate(bucket):
            row_y = block_top + index * row_height
            name, value = _metric(entry)
            verdict = entry.verdict
            klass = _verdict_class(verdict)
            path, device = _target_of(entry)
            host = _text(entry.host) or "?"
            label = host + (" " + device if device else "")
            tooltip = "%s %s %s: %s, %s, %s" % (host, device, path, _metric_value(name, value), _deviation(entry), verdict)
            if index % 2 == 1:
                stripes.append('<rect class="stripe" x="0" y="%.1f" width="%d" height="%d"/>' % (row_y, _CHART_WIDTH, row_height))
            parts.append('<text class="lbl%s" x="%d" y="%.1f" text-anchor="end">%s</text>' % (
                "" if klass == "ok" else " flag", _LABEL_WIDTH - 8, row_y + row_height / 2 + font / 2 - 1.5, _esc(_short(label, 28))))
            bar_y = row_y + (row_height - bar_height) / 2
            if value is not None:
                width = max(x_of(value) - _LABEL_WIDTH, 1.5)
                fill = {"ok": "#3d6fa8", "bad": "url(#%s-cross)" % chart_id}.get(klass, "url(#%s-hatch)" % chart_id)
                parts.append('<rect class="bar %s" x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>' % (
                    klass, _LABEL_WIDTH, bar_y, width, bar_height, fill, _esc(tooltip)))
                note = _metric_value(name, value, False)
                if entry.deviation_from_median is not None:
                    note += " " + _deviation(entry)
            else:
                parts.append('<text class="none" x="%d" y="%.1f">no figure</text>' % (_LABEL_WIDTH + 6, row_y + row_height / 2 + font / 2 - 1.5))
                note = ""
            if klass != "ok":
                flagged += 1
                note = (verdict.upper().replace("_", " ") + " " + note).strip()
            parts.append('<text class="note %s" x="%d" y="%.1f">%s</text>' % (
                klass, _LABEL_WIDTH + _PLOT_WIDTH + 10, row_y + row_height / 2 + font / 2 - 1.5, _esc(note)))
        if median is not None:
            x_median = x_of(median)
            low, high = x_of(median * (1 - fraction)), x_of(median * (1 + fraction))
            overlays.append('<rect class="band-edge" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>' % (
                low, block_top, max(high - low, 1.0), block_height))
            overlays.append('<line class="median" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"><title>%s</title></line>' % (
                x_median, block_top - 3, x_median, block_top + block_height + 3,
                _esc("group median %s" % _metric_value(metric_name, median, False))))
            overlays.append('<text class="mlabel" x="%.1f" y="%.1f" text-anchor="middle">median %s</text>' % (
                x_median, block_top - 6, _esc(_metric_value(metric_name, median, False))))
        y = block_top + block_height
    plot_bottom = y + 4
    grid = []
    for tick in ticks:
        x = _LABEL_WIDTH + (tick / top) * _PLOT_WIDTH
        grid.append('<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>' % (x, top_pad - 2, x, plot_bottom))
        grid.append('<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>' % (x, plot_bottom + 14, _esc(_tick_label(tick))))
    grid.append('<line class="axis" x1="%d" y1="%d" x2="%d" y2="%.1f"/>' % (_LABEL_WIDTH, top_pad - 2, _LABEL_WIDTH, plot_bottom))
    grid.append('<text class="axis-title" x="%.1f" y="%.1f" text-anchor="middle">%s</text>' % (
        _LABEL_WIDTH + _PLOT_WIDTH / 2, plot_bottom + 32, _esc(unit)))
    height = plot_bottom + 42
    metric_label = _METRIC_LABELS.get(metric_name or "", metric_name or "figure")
    title = "%s, %s per disk against the group median" % (test, metric_label)
    description = "%d disks; %d flagged. Shaded band: group median \u00b1 %.0f%%; vertical line: median." % (
        len(entries), flagged, fraction * 100)
    return (
        '<svg class="chart" viewBox="0 0 %d %.0f" width="100%%" role="img" aria-labelledby="%s-t %s-d" '
        'preserveAspectRatio="xMinYMin meet" style="font-size:%dpx">'
        '<title id="%s-t">%s</title><desc id="%s-d">%s</desc>%s%s%s</svg>'
    ) % (_CHART_WIDTH, height, chart_id, chart_id, font, chart_id, _esc(title), chart_id, _esc(description),
         _svg_defs(chart_id), "".join(stripes), "".join(grid) + "".join(parts) + "".join(overlays))


def _zcav_points(entry: Entry) -> Sequence[Tuple[float, float]]:
    return (entry.facts.zcav if entry.facts is not None else None) or ()


def _zcav_chart(chart_id: str, test: str, entries: Sequence[Entry]) -> str:
    """Read throughput over the disk's offset, one line per disk (colour, dash and end label)."""
    series = [(entry, _zcav_points(entry)) for entry in entries]
    series = [(entry, points) for entry, points in series if points]
    if not series:
        return ""
    left, right, top_pad, plot_height = 70, 200, 12, 260
    plot_width = _CHART_WIDTH - left - right
    max_offset = max(point[0] for _entry, points in series for point in points) / 1e9
    max_rate = max(point[1] for _entry, points in series for point in points) / 1e6
    x_top, x_ticks = _ticks(max_offset or 1.0)
    y_top, y_ticks = _ticks((max_rate or 1.0) * 1.02)

    def xy(offset: float, rate: float) -> Tuple[float, float]:
        return (left + offset / 1e9 / x_top * plot_width, top_pad + plot_height - rate / 1e6 / y_top * plot_height)

    parts = []
    for tick in y_ticks:
        _x, y = xy(0, tick * 1e6)
        parts.append('<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>' % (left, y, left + plot_width, y))
        parts.append('<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, y + 4, _esc(_tick_label(tick))))
    for tick in x_ticks:
        x, _y = xy(tick * 1e9, 0)
        parts.append('<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>' % (x, top_pad, x, top_pad + plot_height))
        parts.append('<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, top_pad + plot_height + 16, _esc(_tick_label(tick))))
    parts.append('<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>' % (left, top_pad, plot_width, plot_height))
    label_ys: List[float] = []
    for index, (entry, points) in enumerate(series):
        colour = _LINE_COLOURS[index % len(_LINE_COLOURS)]
        dash = _LINE_DASHES[(index // 1) % len(_LINE_DASHES)]
        path, device = _target_of(entry)
        host = _text(entry.host) or "?"
        coordinates = " ".join("%.1f,%.1f" % xy(offset, rate) for offset, rate in points)
        parts.append('<polyline class="zline" points="%s" stroke="%s"%s><title>%s</title></polyline>' % (
            coordinates, colour, ' stroke-dasharray="%s"' % dash if dash else "", _esc("%s %s %s" % (host, device, path))))
        _end_x, end_y = xy(*points[-1])
        for used in sorted(label_ys):
            if abs(end_y - used) < 13:
                end_y = used + 13
        label_ys.append(end_y)
        parts.append('<text class="zlabel" x="%.1f" y="%.1f" fill="%s">%s</text>' % (
            left + plot_width + 8, end_y + 4, colour, _esc(_short(host + (" " + device if device else ""), 26))))
    parts.append('<text class="axis-title" x="%.1f" y="%d" text-anchor="middle">offset on disk, GB (10^9 bytes)</text>' % (
        left + plot_width / 2, top_pad + plot_height + 36))
    parts.append('<text class="axis-title" transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">read MB/s (10^6 bytes/s)</text>' % (
        top_pad + plot_height / 2))
    height = top_pad + plot_height + 46
    title = "%s: ZCAV read throughput across the disk" % test
    description = "%d disks; read throughput by offset from the start of the disk." % len(series)
    return (
        '<svg class="chart" viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-t %s-d" style="font-size:12px">'
        '<title id="%s-t">%s</title><desc id="%s-d">%s</desc>%s</svg>'
    ) % (_CHART_WIDTH, height, chart_id, chart_id, chart_id, _esc(title), chart_id, _esc(description), "".join(parts))


# Steady-state charts drawn per test at most (one per disk): beyond that the table carries the figures.
STEADY_CHART_LIMIT = 24


def _steady_state(entry: Entry) -> Mapping[str, Any]:
    return (entry.facts.steady if entry.facts is not None else None) or {}


def _steady_series(entry: Entry) -> List[float]:
    values = [finite_number(value) for value in _steady_state(entry).get("iops") or ()]
    return [value for value in values if value is not None]


def _steady_chart(chart_id: str, test: str, entry: Entry) -> str:
    """The steady-state window of one record: IOPS each second (line and points), the window's mean (dashed)
    and, for fio's iops:<limit>% criterion, the band the samples had to stay in (shaded)."""
    series = _steady_series(entry)
    if not series:
        return ""
    state = _steady_state(entry)
    mean = sum(series) / len(series)
    match = re.match(r"^iops:([0-9.]+)%$", _text(state.get("criterion")))
    band = mean * float(match.group(1)) / 100 if match else None
    left, right, top_pad, plot_height = 70, 40, 12, 160
    plot_width = _CHART_WIDTH - left - right
    y_top, y_ticks = _ticks(max(*series, mean + (band or 0)) * 1.05 or 1.0)
    x_top = max(len(series) - 1, 1)

    def xy(second: float, iops: float) -> Tuple[float, float]:
        return left + second / x_top * plot_width, top_pad + plot_height - iops / y_top * plot_height

    parts = []
    for tick in y_ticks:
        _x, y = xy(0, tick)
        parts.append('<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>' % (left, y, left + plot_width, y))
        parts.append('<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>'
                     % (left - 6, y + 4, _esc(_tick_label(tick))))
    if band is not None:
        _x, high = xy(0, mean + band)
        _x, low = xy(0, max(mean - band, 0))
        parts.append('<rect class="ss-band" x="%d" y="%.1f" width="%d" height="%.1f"/>'
                     % (left, high, plot_width, low - high))
    parts.append('<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>'
                 % (left, top_pad, plot_width, plot_height))
    _x, mean_y = xy(0, mean)
    parts.append('<line class="median" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>'
                 % (left, mean_y, left + plot_width, mean_y))
    points = " ".join("%.1f,%.1f" % xy(second, iops) for second, iops in enumerate(series))
    parts.append('<polyline class="zline" points="%s" stroke="#1f4e79"/>' % points)
    for second, iops in enumerate(series):
        x, y = xy(second, iops)
        parts.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="#1f4e79"><title>second %d: %s IOPS</title></circle>'
                     % (x, y, second + 1, _esc(_num(iops))))
    parts.append('<text class="axis-title" x="%.1f" y="%d" text-anchor="middle">second of the %d s window</text>' % (
        left + plot_width / 2, top_pad + plot_height + 20, len(series)))
    parts.append('<text class="axis-title" transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">IOPS</text>'
                 % (top_pad + plot_height / 2))
    path, device = _target_of(entry)
    host = _text(entry.host) or "?"
    attained = state.get("attained") is True
    title = "%s on %s %s: %s, window mean %s IOPS" % (test, host, device or path, "steady state attained" if attained
                                                      else "not_steady: steady state NOT attained", _num(mean))
    description = "%d per-second IOPS samples of the last window; dashed line: their mean%s." % (
        len(series), "; shaded band: the criterion %s" % _text(state.get("criterion")) if band is not None else "")
    return (
        '<svg class="chart steady-chart" viewBox="0 0 %d %d" width="100%%" role="img" aria-labelledby="%s-t %s-d" '
        'style="font-size:12px"><title id="%s-t">%s</title><desc id="%s-d">%s</desc>%s</svg>'
    ) % (_CHART_WIDTH, top_pad + plot_height + 30, chart_id, chart_id, chart_id, _esc(title), chart_id,
         _esc(description), "".join(parts))


def _steady_caption(entry: Entry) -> str:
    state = _steady_state(entry)
    path, device = _target_of(entry)

    def figure(key: str, unit: str) -> str:
        value = finite_number(state.get(key))
        return "?" if value is None else "%.1f%s" % (value, unit)

    return "%s %s: %s (%s in %s s); max deviation %s, slope excursion %s; %s bytes written before the window " \
        "(preconditioning %s)." % (
            _text(entry.host) or "?", device or path,
            "steady state attained" if state.get("attained") is True else "not steady",
            _text(state.get("criterion")), _text(state.get("time_limit_s")), figure("max_deviation_percent", " %"),
            figure("slope_excursion_percent", " %"), _text(state.get("bytes_before_window")),
            _text(state.get("preconditioned_bytes")))


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

_CSS = """
:root { --ink:#1d2330; --muted:#5b6472; --line:#d8dde5; --head:#f1f4f8; --ok:#2e7d32; --warn:#b45309; --bad:#b71c1c; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
  "Helvetica Neue", Arial, "Liberation Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 32px 48px; }
header.top { border-bottom: 3px solid var(--ink); padding-bottom: 14px; margin-bottom: 22px; }
h1 { font-size: 24px; margin: 0 0 4px; letter-spacing: -0.01em; }
h1 .brand { font-weight: 800; }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 26px 0 4px; }
.sub { color: var(--muted); margin: 0 0 8px; }
code, .mono, td.mono { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
dl.meta { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 4px 22px; margin: 12px 0 0; }
dl.meta div { display: flex; gap: 8px; border-bottom: 1px dotted var(--line); padding: 2px 0; }
dl.meta dt { color: var(--muted); min-width: 135px; }
dl.meta dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.status { display: flex; flex-wrap: wrap; align-items: stretch; gap: 10px; margin: 6px 0 4px; }
.verdict-box { border: 2px solid var(--ink); border-radius: 6px; padding: 10px 16px; min-width: 210px; }
.verdict-box.passed { border-color: var(--ok); }
.verdict-box.failed { border-color: var(--bad); }
.verdict-box strong { display: block; font-size: 20px; letter-spacing: 0.03em; }
.verdict-box.passed strong { color: var(--ok); }
.verdict-box.failed strong { color: var(--bad); }
.count { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 104px; background: var(--head); }
.count b { display: block; font-size: 22px; line-height: 1.1; font-variant-numeric: tabular-nums; }
.count span { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; }
.count.warn b { color: var(--warn); } .count.bad b { color: var(--bad); } .count.ok b { color: var(--ok); }
.count.zero b { color: var(--muted); }
.tablewrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 4px; font-variant-numeric: tabular-nums; }
caption { text-align: left; color: var(--muted); font-size: 12.5px; padding: 0 0 4px; caption-side: top; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--head); font-weight: 600; font-size: 12.5px; white-space: nowrap; border-bottom: 2px solid #b9c1cc; }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fafbfc; }
tr.warn td:first-child, tr.bad td:first-child, tr.muted td:first-child { box-shadow: inset 4px 0 0 var(--warn); }
tr.bad td:first-child { box-shadow: inset 4px 0 0 var(--bad); }
tr.muted td:first-child { box-shadow: inset 4px 0 0 #9aa3ae; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 11.5px; font-weight: 700;
  text-transform: uppercase; letter-spacing: 0.03em; border: 1px solid currentColor; white-space: nowrap; }
.badge.ok { color: var(--ok); } .badge.warn { color: var(--warn); background: #fff4e5; }
.badge.bad { color: var(--bad); background: #fdecea; } .badge.muted { color: #4b5563; background: #eef0f3; }
.reason { color: #343b47; }
figure { margin: 14px 0 10px; break-inside: avoid; page-break-inside: avoid; }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 2px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12.5px; color: var(--muted); margin: 4px 0 0; }
.legend svg { vertical-align: -2px; }
svg.chart { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg.chart text { fill: var(--ink); }
svg.chart .tick { fill: var(--muted); font-size: 11px; }
svg.chart .axis-title { fill: var(--muted); font-size: 11.5px; }
svg.chart .grp { font-weight: 600; fill: var(--muted); }
svg.chart .grid { stroke: #e3e7ed; stroke-width: 1; }
svg.chart .axis { stroke: #8a93a0; stroke-width: 1; }
svg.chart .stripe { fill: #f7f8fa; }
svg.chart .band { stroke: none; }
svg.chart .band-edge { fill: none; stroke: #4f7a4f; stroke-width: 1; stroke-dasharray: 3 2; }
svg.chart .mlabel { font-size: 11px; font-weight: 600; }
svg.chart .median { stroke: #1d2330; stroke-width: 2; stroke-dasharray: 5 3; }
svg.chart .bar.warn, svg.chart .bar.bad { stroke: #3a1d00; stroke-width: 0.8; }
svg.chart .lbl.flag { font-weight: 700; }
svg.chart .note { fill: var(--muted); font-variant-numeric: tabular-nums; }
svg.chart .note.warn { fill: var(--warn); font-weight: 700; }
svg.chart .note.bad { fill: var(--bad); font-weight: 700; }
svg.chart .none { fill: var(--bad); font-style: italic; }
svg.chart .frame { fill: none; stroke: #8a93a0; }
svg.chart .zline { fill: none; stroke-width: 2; }
svg.chart .zlabel { font-size: 11px; font-weight: 600; }
svg.chart .ss-band { fill: #e6f0e6; stroke: #6d8f6d; stroke-dasharray: 3 2; }
.empty { color: var(--muted); font-style: italic; }
.input-errors { border-left: 4px solid var(--bad); padding: 4px 12px; margin: 10px 0; }
.input-errors ul { margin: 4px 0; padding-left: 18px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding-top: 8px; }
@media print {
  @page { margin: 14mm 12mm; }
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; page-break-after: avoid; }
  h3 { break-after: avoid; page-break-after: avoid; }
  figure, svg.chart, .status, tr { break-inside: avoid; page-break-inside: avoid; }
  thead { display: table-header-group; }
  .count, th, tbody tr:nth-child(even) td, .badge.warn, .badge.bad, .badge.muted { background: none; }
  .tablewrap { overflow: visible; }
  svg.chart { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  th { border-bottom: 1.5pt solid #000; }
}
"""


def _html_table(headers: Sequence[str], rows: Iterable[Tuple[str, Sequence[str]]], caption: str = "",
                numeric: Sequence[int] = (), badge: Optional[int] = None, mono: Sequence[int] = ()) -> str:
    """rows: (row class, cells as plain text); cells are escaped here."""
    return "".join(_html_table_parts(headers, rows, caption, numeric, badge, mono))


def _html_table_parts(headers: Sequence[str], rows: Iterable[Tuple[str, Sequence[str]]], caption: str = "",
                      numeric: Sequence[int] = (), badge: Optional[int] = None, mono: Sequence[int] = ()) -> Iterator[str]:
    """``_html_table`` a row at a time."""
    out = ['<div class="tablewrap"><table>']
    if caption:
        out.append("<caption>%s</caption>" % _esc(caption))
    out.append("<thead><tr>%s</tr></thead><tbody>" % "".join(
        '<th scope="col"%s>%s</th>' % (' class="num"' if index in numeric else "", _esc(header)) for index, header in enumerate(headers)))
    yield "".join(out)
    for row_class, cells in rows:
        tds = []
        for index, cell in enumerate(cells):
            classes = []
            if index in numeric:
                classes.append("num")
            if index in mono:
                classes.append("mono")
            attribute = ' class="%s"' % " ".join(classes) if classes else ""
            if badge is not None and index == badge:
                content = '<span class="badge %s">%s</span>' % (_verdict_class(cell), _esc(_verdict_label(cell)))
            else:
                content = _esc(cell) if cell != "" else _DASH
            tds.append("<td%s>%s</td>" % (attribute, content))
        yield '<tr class="%s">%s</tr>' % (_esc(row_class), "".join(tds))
    yield "</tbody></table></div>"


def _legend(fraction: float, prefix: str) -> str:
    """Key to the bar charts; pattern ids are document-wide, so each legend gets its own prefix."""
    def swatch(body: str) -> str:
        return '<svg width="22" height="12" viewBox="0 0 22 12" aria-hidden="true">%s</svg>' % body
    return (
        '<div class="legend" aria-hidden="true">'
        "<span>%s within the peer group</span>"
        "<span>%s flagged (outlier, slow, regressed, unstable)</span>"
        "<span>%s corrupt / error / invalid</span>"
        "<span>%s group median</span>"
        "<span>%s median \u00b1 %.0f%%</span>"
        "</div>"
    ) % (
        swatch('<rect x="0" y="1" width="22" height="10" fill="#3d6fa8"/>'),
        swatch('<defs><pattern id="%s-lh" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
               '<rect width="6" height="6" fill="#e07b24"/><line x1="0" y1="0" x2="0" y2="6" stroke="#7a3a00" stroke-width="2.2"/>'
               '</pattern></defs><rect x="0" y="1" width="22" height="10" fill="url(#%s-lh)" stroke="#3a1d00" stroke-width="0.8"/>' % (prefix, prefix)),
        swatch('<defs><pattern id="%s-lc" width="6" height="6" patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="#c62828"/>'
               '<path d="M0 0L6 6M6 0L0 6" stroke="#5a0000" stroke-width="1.4"/></pattern></defs>'
               '<rect x="0" y="1" width="22" height="10" fill="url(#%s-lc)"/>' % (prefix, prefix)),
        swatch('<line x1="11" y1="0" x2="11" y2="12" stroke="#1d2330" stroke-width="2" stroke-dasharray="4 2"/>'),
        swatch('<rect x="0" y="0" width="22" height="12" fill="#e6f0e6" stroke="#6d8f6d" stroke-dasharray="3 2"/>'),
        fraction * 100,
    )


def _summary_html(report: Mapping[str, Any], listing: Listing) -> str:
    counts = _counts(report)
    passed, sentence = _overall(report, counts)
    boxes = ['<div class="verdict-box %s"><strong>%s</strong>%s</div>' % (
        "passed" if passed else "failed", "PASSED" if passed else "NOT PASSED", _esc(sentence))]
    for verdict, count in counts:
        klass = _verdict_class(verdict) if count else "zero"
        boxes.append('<div class="count %s"><b>%d</b><span>%s</span></div>' % (klass, count, _esc(_verdict_label(verdict))))
    status = '<div class="status" role="group" aria-label="Summary">%s</div>' % "".join(boxes)
    input_errors = _input_errors(report)
    if input_errors:
        status += '<div class="input-errors"><strong>Input errors</strong><ul>%s</ul></div>' % "".join(
            "<li>%s</li>" % _esc(error) for error in input_errors)
    if listing.summarised:
        status += '<p class="sub">%s</p>' % _esc(_summarised_sentence(listing))
    return status


def _hosts_rows(report: Mapping[str, Any], only_problems: bool = False) -> Tuple[List[Tuple[str, List[str]]], int]:
    """(rows, hosts left out): with ``only_problems`` hosts with status ok and no problem are left out."""
    rows = []
    left_out = 0
    for host, info in sorted(report["hosts"].items(), key=lambda item: _text(item[0])):
        status = info["status"]
        if only_problems and status == "ok" and not info["problems"]:
            left_out += 1
            continue
        problems = "; ".join(_text(problem.get("message")) or _text(problem) for problem in info["problems"])
        rows.append(("" if status == "ok" else "bad", [_text(host), status, "%d" % info["records"], problems]))
    return rows, left_out


def render_html(report: Mapping[str, Any], entries: Sequence[Entry]) -> str:
    """``report.html`` of a report's sections and entries (``write_html`` into a string)."""
    buffer = io.StringIO()
    write_html(report, listing_of(entries), buffer.write)
    return buffer.getvalue()


def _charts(test: str, entries: Sequence[Entry], groups: Sequence[Mapping[str, Any]], fraction: float,
            chart_number: int, note: str = "") -> Tuple[List[str], int]:
    """The bar charts (one per metric) and the ZCAV chart of a test's entries; (figures, charts drawn so far)."""
    parts: List[str] = []
    metric_names: List[Optional[str]] = []
    for entry in entries:
        name, _value = _metric(entry)
        if name is not None and name not in metric_names:
            metric_names.append(name)
    for position, name in enumerate(metric_names):
        # Entries without a figure (error, not measured) are listed in the first chart only.
        chart_entries = [entry for entry in entries
                         if _metric(entry)[0] == name or (position == 0 and _metric(entry)[0] is None)]
        if not any(_metric(entry)[1] is not None for entry in chart_entries):
            continue
        chart_number += 1
        chart = _bar_chart("c%d" % chart_number, test, name, chart_entries, groups, fraction)
        parts.append('<figure>%s<figcaption>%s%s per disk (%s). Bars from zero; dashed line: group median; '
                     "shaded band: median \u00b1 %.0f%%. Flagged disks are hatched and labelled.</figcaption>%s</figure>" % (
                         chart, _esc(note) + " " if note else "", _esc(_capitalize(_METRIC_LABELS.get(name or "", name or "figure"))),
                         _esc(_axis_unit(name)[1]), fraction * 100, _legend(fraction, "c%d" % chart_number)))
    if any(_zcav_points(entry) for entry in entries):
        chart_number += 1
        caption = _esc(note) + " " if note else ""
        parts.append('<figure>%s<figcaption>%sZCAV: read throughput by position on the disk; each line one disk '
                     "(colour, dash pattern and end label).</figcaption></figure>" % (_zcav_chart("c%d" % chart_number, test, entries), caption))
    for entry in [entry for entry in entries if _steady_series(entry)][:STEADY_CHART_LIMIT]:
        chart_number += 1
        parts.append("<figure>%s<figcaption>%sSteady state: %s</figcaption></figure>" % (
            _steady_chart("c%d" % chart_number, test, entry), _esc(note) + " " if note else "",
            _esc(_steady_caption(entry))))
    return parts, chart_number


def _fleet_chart_note(entries: Sequence[Entry]) -> Tuple[List[Entry], str]:
    """The listed entries a summarised test's charts draw (the worst ``CHART_LIMIT``), and a caption prefix."""
    if len(entries) > CHART_LIMIT:
        return list(entries[:CHART_LIMIT]), "Only results that are not pass: the {0:,} worst of {1:,}.".format(CHART_LIMIT, len(entries))
    return list(entries), "Only results that are not pass."


def write_html(report: Mapping[str, Any], listing: Listing, write: Write) -> None:
    """``report.html``: one self-contained page (inline CSS and SVG, no script, no external resource), piece by piece."""
    fraction = report["rules"]["outlier_fraction"]
    title = _title(report)
    groups = report["groups"]
    write('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
          '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
          "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n" % (_esc(title), _CSS))

    run_items = _run_items(report)
    meta = "".join("<div><dt>%s</dt><dd>%s</dd></div>" % (_esc(label), _esc(value)) for label, value in run_items)
    meta += "<div><dt>Outlier limit</dt><dd>%.0f%% below group median</dd></div>" % (fraction * 100)
    write('<header class="top"><h1><span class="brand">diskproof</span> fleet disk report</h1>'
          '<p class="sub">%s</p><dl class="meta">%s</dl></header>' % (_esc(_subtitle(report, listing)), meta))

    write('\n<section aria-labelledby="s-summary"><h2 id="s-summary">Summary</h2>%s</section>' % _summary_html(report, listing))

    problems = _problem_entries(listing)
    write('\n<section aria-labelledby="s-problems"><h2 id="s-problems">Needs attention</h2>')
    if problems:
        rows = ((_verdict_class(entry.verdict), _problem_row(entry)) for entry in problems)
        for part in _html_table_parts(_PROBLEM_HEADERS, rows, caption="Every result that is not a pass, worst first. " + _UNITS_NOTE,
                                      numeric=(5, 6), badge=0, mono=(3, 4)):
            write(part)
    else:
        write('<p class="empty">%s</p>' % ("Nothing: every result passes." if listing.total else "No results."))
    write("</section>")

    bad_blocks = _bad_block_rows(listing)
    if bad_blocks:
        write('\n<section aria-labelledby="s-bad-blocks"><h2 id="s-bad-blocks">Bad blocks</h2>')
        for part in _html_table_parts(_BAD_BLOCK_HEADERS, [("bad", row) for row in bad_blocks],
                                      caption=_BAD_BLOCKS_NOTE, numeric=(3, 4), mono=(2, 3)):
            write(part)
        write("</section>")

    tests = _tests(report, listing)
    write('\n<section aria-labelledby="s-tests"><h2 id="s-tests">Results by test</h2>')
    chart_number = 0
    for number, test in enumerate(tests):
        parts = ['<h3 id="t-%d">%s</h3>' % (number, _esc(test))]
        if listing.summarised:
            description = listing.test_descriptions.get(test, "")
            if description:
                parts.append('<p class="sub">%s</p>' % _esc(description))
            parts.append('<p class="sub">%s</p>' % _esc(_test_sentence(*_test_counts(listing, test))))
            listed = [entry for entry in listing.entries if _test_of(entry) == test]
            drawn, note = _fleet_chart_note(listed)
            figures, chart_number = _charts(test, drawn, groups, fraction, chart_number, note)
            parts.extend(figures)
            rows = _fleet_group_rows(report, listing, test)
            if rows:
                parts.append(_html_table(_FLEET_GROUP_HEADERS, [("", row) for row in rows],
                                         caption="%s: peer groups; Pass: pass results counted in the group, not listed." % test,
                                         numeric=(2, 3, 4, 5, 6, 7)))
        else:
            entries = _test_entries(listing, test)
            description = _test_description(entries)
            if description:
                parts.append('<p class="sub">%s</p>' % _esc(description))
            figures, chart_number = _charts(test, entries, groups, fraction, chart_number)
            parts.extend(figures)
            latency = _with_latency(entries)
            rows = [(_verdict_class(entry.verdict), _test_row(entry, latency)) for entry in entries]
            caption = "%s: every disk.%s %s" % (test, " Latency vs rule: each latency limit of a matching acceptance rule "
                                                "beside the disk's figure (\u2264 within, > over)." if latency else "", _UNITS_NOTE)
            parts.append(_html_table(_test_headers(latency), rows, caption=caption, numeric=(3, 4), badge=6 if latency else 5,
                                     mono=(1, 2)))
        write('<section class="test" aria-labelledby="t-%d">%s</section>' % (number, "".join(parts)))
    if not tests:
        write('<p class="empty">No test results.</p>')
    write("</section>")

    differences = _difference_rows(report)
    if differences:
        write('\n<section aria-labelledby="s-differences"><h2 id="s-differences">Differences within disk groups</h2>%s</section>'
              % _html_table(_DIFFERENCE_HEADERS, [("", row) for row in differences], caption=_DIFFERENCES_NOTE))

    if groups:
        table = _html_table(_GROUP_HEADERS, [("", _group_row(group)) for group in groups],
                            caption="Peer groups: disks judged against each other. MAD: median absolute deviation.", numeric=(2, 3, 4, 5, 6))
    else:
        table = '<p class="empty">No peer groups (nothing measured).</p>'
    write('\n<section aria-labelledby="s-groups"><h2 id="s-groups">Peer groups</h2>%s</section>' % table)

    host_rows, left_out = _hosts_rows(report, only_problems=listing.summarised)
    if host_rows or left_out:
        write('\n<section aria-labelledby="s-hosts"><h2 id="s-hosts">Hosts</h2>')
        if left_out:
            write('<p class="sub">%s</p>' % _esc("{0:,} hosts with status ok and no problem are not listed.".format(left_out)))
        if host_rows:
            for part in _html_table_parts(["Host", "Status", "Records", "Problems"], host_rows, numeric=(2,)):
                write(part)
        write("</section>")

    write("\n<footer>Generated by diskproof.fleet from report.json (report schema %s). %s</footer>" % (
        _esc(report["report_schema"]), _esc(_UNITS_NOTE)))
    write("\n</main>\n</body>\n</html>\n")
