# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.md and report.html from plugin_utils/_render.py, of judged entries: the real lab records (rack6, one
slow host) judged and checked row by row, plus synthetic fleets: empty, only not_measured, hostile host names,
odd figures, every verdict with model groups and ZCAV, and fleet scale."""
from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _render as render

_ROOT = Path(__file__).resolve().parents[4]
FIXTURE = _ROOT / "tests" / "fixtures" / "report" / "lab-rack6-report.json"
SLOW = "rack6-n04"
HOSTILE = 'evil<script>alert("x")</script>&"\'|`*_'
OK = {"status": "ok", "problems": []}


def judged(records_by_host, statuses=None, run=None, **options):
    """(report sections, entries) of records judged as the pipeline judges them."""
    settings = agg.make_settings(**{key: value for key, value in options.items() if key not in ("acceptance", "baseline")})
    facts = {host: [(record, agg.record_facts(record)) for record in records] for host, records in records_by_host.items()}
    statuses = statuses if statuses is not None else {host: OK for host in records_by_host}
    return agg.judge_report(facts, statuses, run or {}, settings=settings, acceptance=options.get("acceptance"),
                            baseline=options.get("baseline"), baseline_source="baseline.json" if options.get("baseline") else None)


def lab_records():
    report = json.loads(FIXTURE.read_text(encoding="utf-8"))
    records = {}
    for entry in report["results"]:
        records.setdefault(entry["host"], []).append(entry["record"])
    return records, report["run"]


@pytest.fixture(name="lab")
def fixture_lab():
    """The rack6 lab run's records (one slow host) judged as the lab judged them: peers by test, the run's own
    outlier limit (the texts below quote it; the judge's default may change)."""
    records, run = lab_records()
    rules = json.loads(FIXTURE.read_text(encoding="utf-8"))["rules"]
    return judged(records, run=run, peer_group="test", outlier_fraction=rules["outlier_fraction"])


class _Page(HTMLParser):
    """Collects tables (rows of cell texts), tag balance, and every attribute for the checks."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "source", "wbr"}
    # SVG elements written self-closing (<rect .../>) arrive in handle_startendtag: never on the stack.

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables = []
        self.stack = []
        self.errors = []
        self.attributes = []
        self.tags = []
        self._cell = None
        self._row = None
        self.title = ""
        self._in_title = False
        self.texts = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        if tag == "title" and not self.stack.count("svg"):
            self._in_title = True
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        self.texts.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._in_title:
            self.title += data


def parse(page):
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert not parser.errors, parser.errors
    assert not parser.stack, "unclosed: %s" % parser.stack
    return parser


def md_table(markdown, heading):
    """Rows (cells) of the first table after the given heading line."""
    lines = markdown.splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows.append(cells)
        elif rows:
            break
    assert rows[1][0] == "---"
    return [rows[0]] + rows[2:]


def assert_self_contained(page):
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"\b(src|href)\s*=", page, re.IGNORECASE)
    assert "@import" not in page and "url(http" not in page
    assert "<link" not in page.lower() and "<img" not in page.lower() and "<iframe" not in page.lower()
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), sorted(identifier for identifier in ids if ids.count(identifier) > 1)
    # Only url(#id) references to patterns defined in the same page.
    for reference in re.findall(r"url\(([^)]*)\)", page):
        assert reference.startswith("#"), reference
        assert 'id="%s"' % reference[1:] in page, reference


# ---------------------------------------------------------------------------------------------
# the real lab report
# ---------------------------------------------------------------------------------------------

def test_markdown_lab_summary_and_problems(lab):
    markdown = render.render_markdown(*lab)
    assert markdown.startswith("# diskproof report \u2014 validate.yml \u2014 2026-11-22T01:08:38Z\n")
    for line in ("- **Playbook:** validate.yml", "- **Started:** 2026-11-22T01:08:38Z", "- **Finished:** 2026-11-22T01:09:32Z",
                 "- **Controller:** vm", "- **Ansible:** 2.19.14", "- **Hosts targeted:** 6",
                 "- **Outlier limit:** 15% below the group median", "**NOT PASSED.** 3 of 18 results need attention."):
        assert line in markdown.splitlines(), line
    assert md_table(markdown, "## Summary")[1:] == [[verdict, "3" if verdict == "outlier" else "15" if verdict == "pass" else "0"]
                                                    for verdict in agg.VERDICTS]
    assert md_table(markdown, "## Needs attention (worst first)") == [
        # The lab report's records have no disk state: no likely cause.
        ["Verdict", "Host", "Test", "Target", "Device", "Figure", "vs median", "Reason", "Likely cause"],
        ["outlier", SLOW, "fio_rand_read", "/srv/diskproof/d0", "loop3", "201 IOPS", "-50.1%", "-50.1% vs median 404 IOPS (n=6), limit -15%",
         "\u2014"],
        ["outlier", SLOW, "dd_seq_read", "/srv/diskproof/d0", "loop3", "16.8 MB/s (16.0 MiB/s)", "-50.0%",
         "-50.0% vs median 33.5 MB/s (n=6), limit -15%", "\u2014"],
        ["outlier", SLOW, "dd_seq_write", "/srv/diskproof/d0", "loop3", "16.7 MB/s (16.0 MiB/s)", "-49.8%",
         "-49.8% vs median 33.3 MB/s (n=6), limit -15%", "\u2014"],
    ]


def test_markdown_lab_per_test_tables_and_groups(lab):
    markdown = render.render_markdown(*lab)
    headings = [line for line in markdown.splitlines() if line.startswith("### ")]
    assert headings == ["### dd_seq_read", "### dd_seq_write", "### fio_rand_read"]
    assert "dd 9.1, block 1 MiB, size 256 MiB, O_DIRECT, iodepth 1" in markdown.splitlines()
    rows = md_table(markdown, "### dd_seq_read")
    assert rows[0] == ["Host", "Target", "Device", "Figure", "vs median", "Verdict", "Reason", "Likely cause"]
    assert [row[0] for row in rows[1:]] == ["rack6-n0%d" % number for number in range(1, 7)]
    assert rows[1] == ["rack6-n01", "/srv/diskproof/d0", "loop0", "33.5 MB/s (32.0 MiB/s)", "+0.0%", "pass", "+0.0% vs median 33.5 MB/s (n=6)",
                       "\u2014"]
    assert rows[4] == [SLOW, "/srv/diskproof/d0", "loop3", "16.8 MB/s (16.0 MiB/s)", "-50.0%", "outlier",
                       "-50.0% vs median 33.5 MB/s (n=6), limit -15%", "\u2014"]
    fio = md_table(markdown, "### fio_rand_read")
    assert [row[5] for row in fio[1:]] == ["pass", "pass", "pass", "outlier", "pass", "pass"]
    assert fio[4][3] == "201 IOPS"
    assert md_table(markdown, "## Peer groups") == [
        ["Group key", "Metric", "Count", "Median", "MAD", "Min", "Max"],
        ["dd_seq_read", "throughput", "6", "33.5 MB/s", "0.008 MB/s", "16.8 MB/s", "33.5 MB/s"],
        ["dd_seq_write", "throughput", "6", "33.3 MB/s", "0.065 MB/s", "16.7 MB/s", "33.4 MB/s"],
        ["fio_rand_read", "IOPS", "6", "404 IOPS", "0.101 IOPS", "201 IOPS", "404 IOPS"],
    ]
    assert "MB/s = 10^6 bytes/s, MiB/s = 2^20 bytes/s, IOPS = operations/s." in markdown


def test_html_lab_structure_tables_and_slow_host(lab):
    page = render.render_html(*lab)
    parsed = parse(page)
    assert page.startswith("<!DOCTYPE html>\n<html lang=\"en\">")
    assert parsed.title == "diskproof report \u2014 validate.yml \u2014 2026-11-22T01:08:38Z"
    assert "script" not in parsed.tags
    assert_self_contained(page)
    # Tables: problems, one per test (3), groups, hosts.
    assert len(parsed.tables) == 6
    problems = parsed.tables[0]
    assert problems[0] == ["Verdict", "Host", "Test", "Target", "Device", "Figure", "vs median", "Reason", "Likely cause"]
    assert [row[:3] for row in problems[1:]] == [["outlier", SLOW, "fio_rand_read"], ["outlier", SLOW, "dd_seq_read"],
                                                 ["outlier", SLOW, "dd_seq_write"]]
    assert problems[1][5:] == ["201 IOPS", "-50.1%", "-50.1% vs median 404 IOPS (n=6), limit -15%", "\u2014"]
    seq_read = parsed.tables[1]
    assert seq_read[4] == [SLOW, "/srv/diskproof/d0", "loop3", "16.8 MB/s (16.0 MiB/s)", "-50.0%", "outlier",
                           "-50.0% vs median 33.5 MB/s (n=6), limit -15%", "\u2014"]
    assert [row[5] for row in seq_read[1:]].count("pass") == 5
    assert parsed.tables[4][1] == ["dd_seq_read", "throughput", "6", "33.5 MB/s", "0.008 MB/s", "16.8 MB/s", "33.5 MB/s"]
    assert [row[:3] for row in parsed.tables[5][1:]] == [["rack6-n0%d" % number, "ok", "3"] for number in range(1, 7)]
    # Summary boxes.
    assert '<div class="count warn"><b>3</b><span>outlier</span></div>' in page
    assert '<div class="count ok"><b>15</b><span>pass</span></div>' in page
    assert "<strong>NOT PASSED</strong>3 of 18 results need attention." in page


def test_html_lab_charts(lab):
    page = render.render_html(*lab)
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.DOTALL)
    assert len(charts) == 3
    for chart, test in zip(charts, ("dd_seq_read", "dd_seq_write", "fio_rand_read")):
        assert 'role="img"' in chart and "aria-labelledby=" in chart
        assert re.search(r"<title id=\"c\d-t\">%s, " % test, chart)
        # Every disk is a bar; one hatched (flagged) bar, labelled by host with its verdict.
        assert len(re.findall(r'<rect class="bar ', chart)) == 6
        assert len(re.findall(r'<rect class="bar warn"', chart)) == 1
        assert '<text class="lbl flag" x="222"' in chart and ">rack6-n04 loop3</text>" in chart
        assert re.search(r'<text class="note warn"[^>]*>OUTLIER [0-9.]+ (MB/s|IOPS) -(49|50)\.\d%</text>', chart)
        assert chart.count('class="band"') == 1 and chart.count('class="median"') == 1
    assert ">median 33.5 MB/s</text>" in charts[0]
    assert ">median 404 IOPS</text>" in charts[2]
    # The band is median +/- 15 %: its tooltip states the limits.
    assert "expected band: median 33.5 MB/s \u00b1 15% (28.5 MB/s to 38.6 MB/s)" in charts[0]
    assert "<desc id=\"c1-d\">6 disks; 1 flagged." in charts[0]
    # No ZCAV data in these records: no line chart.
    assert "polyline" not in page


def test_html_band_follows_rules_outlier_fraction():
    records, run = lab_records()
    page = render.render_html(*judged(records, run=run, peer_group="test", outlier_fraction=0.25))
    assert "expected band: median 33.5 MB/s \u00b1 25% (25.1 MB/s to 41.9 MB/s)" in page
    assert "25% below group median" in page


def test_an_unreachable_host_is_named_first():
    records, run = lab_records()
    statuses = {host: OK for host in records}
    statuses["rack6-n07"] = {"status": "unreachable", "problems": [{"task": "discover", "status": "unreachable", "message": "ssh: timed out"}]}
    report, entries = judged(records, statuses, run=run)
    markdown = render.render_markdown(report, entries)
    problems = md_table(markdown, "## Needs attention (worst first)")[1:]
    assert problems[0][:2] == ["not_measured", "rack6-n07"]
    assert sorted(row[2] for row in problems if row[1] == SLOW) == ["dd_seq_read", "dd_seq_write", "fio_rand_read"]
    assert len(problems) == 4
    page = render.render_html(report, entries)
    parse(page)
    assert_self_contained(page)
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.DOTALL)
    assert len(charts) == 3
    assert all(chart.count('class="bar ok"') == 5 and chart.count('class="band"') == 1 for chart in charts)


def test_the_pages_change_nothing_they_are_given(lab):
    before = copy.deepcopy(lab)
    render.render_markdown(*lab)
    render.render_html(*lab)
    assert lab == before


# ---------------------------------------------------------------------------------------------
# synthetic fleets
# ---------------------------------------------------------------------------------------------

def test_an_empty_judgement():
    report, entries = judged({}, {})
    markdown = render.render_markdown(report, entries)
    page = render.render_html(report, entries)
    assert "No results: nothing was measured." in markdown
    assert "No results." in markdown and "No test results." in markdown and "No peer groups (nothing measured)." in markdown
    parsed = parse(page)
    assert parsed.title == "diskproof report"
    assert parsed.tables == []
    assert "<svg class=\"chart\"" not in page
    assert "PASSED" in page
    assert_self_contained(page)


def test_only_not_measured_hosts():
    statuses = {"a": {"status": "unreachable", "problems": [{"task": None, "status": "unreachable", "message": "ssh: timeout"}]},
                "b": {"status": "failed", "problems": [{"task": "quiesce", "status": "failed", "message": "md resync"}]}}
    report, entries = judged({}, statuses, run={"playbook": "validate.yml"})
    markdown = render.render_markdown(report, entries)
    assert md_table(markdown, "## Needs attention (worst first)")[1:] == [
        ["not_measured", "a", "\u2014", "\u2014", "\u2014", "\u2014", "\u2014", "unreachable: ssh: timeout", "\u2014"],
        ["not_measured", "b", "\u2014", "\u2014", "\u2014", "\u2014", "\u2014", "failed in task 'quiesce': md resync", "\u2014"],
    ]
    assert "No test results." in markdown
    page = render.render_html(report, entries)
    parsed = parse(page)
    assert parsed.tables[0][1] == ["not measured", "a", "\u2014", "\u2014", "\u2014", "\u2014", "\u2014", "unreachable: ssh: timeout", "\u2014"]
    assert parsed.tables[-1][1:] == [["a", "unreachable", "0", "ssh: timeout"], ["b", "failed", "0", "md resync"]]
    assert '<div class="count muted"><b>2</b><span>not measured</span></div>' in page
    assert "<svg class=\"chart\"" not in page


def test_hostile_strings_are_escaped():
    records, run = lab_records()
    records[HOSTILE] = records.pop(SLOW)
    failed = copy.deepcopy(records[HOSTILE][0])
    failed["error"] = "<img src=x onerror=alert(1)> & more"
    failed["target"]["device"] = "<b>loop3</b>"
    records[HOSTILE].append(failed)
    report, entries = judged(records, run=dict(run, playbook="<script>alert(2)</script>"), peer_group="test")
    page = render.render_html(report, entries)
    parsed = parse(page)
    assert "<script" not in page and "<img" not in page and "<b>loop3" not in page
    assert "script" not in parsed.tags and "img" not in parsed.tags and "b" in parsed.tags  # <b> only from the summary boxes
    assert "evil&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;&#x27;|`*_" in page
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; more" in page
    assert parsed.tables[0][1][1] == HOSTILE  # the text survives escaping intact
    assert parsed.title == "diskproof report \u2014 <script>alert(2)</script> \u2014 2026-11-22T01:08:38Z"
    assert_self_contained(page.replace("src=x", ""))  # the only src= is the escaped reason text
    assert not re.search(r"<[^>]*\bsrc\s*=", page)
    markdown = render.render_markdown(report, entries)
    assert "<script" not in markdown and "<img" not in markdown
    assert "evil&lt;script&gt;alert(\"x\")&lt;/script&gt;&amp;\"'\\|\\`\\*\\_" in markdown
    # The escaped pipe keeps the table shape: 9 cells in every row.
    assert all(len(row) == 9 for row in md_table(markdown, "## Needs attention (worst first)"))


def test_odd_figures_never_break_a_page():
    """A record's odd values (an infinite figure, ZCAV points without figures, text where a number goes) are
    shown as they are or left out, never a crash."""
    base = {"test": "t", "tool": "dd", "target": {"path": "/srv/d0"}, "params": {"block_size": "1M"}}
    records = {
        "h1": [dict(base, metrics={"write_bytes_per_s": 5e8}, tool_version={"odd": 1})],
        "h2": [dict(base, metrics={"write_bytes_per_s": float("inf"), "zcav": [None, {"offset_bytes": None}, "x"]})],
        "h3": [dict(base, metrics={"write_bytes_per_s": 4e8}, samples="three runs")],
    }
    report, entries = judged(records)
    markdown = render.render_markdown(report, entries)
    page = render.render_html(report, entries)
    parse(page)
    assert "| h1 | /srv/d0 | \u2014 | 500 MB/s (477 MiB/s) |" in markdown
    assert "| h2 | /srv/d0 | \u2014 | \u2014 |" in markdown   # an infinite figure is not drawn or printed
    assert 'dd {"odd": 1}' in markdown.splitlines()  # how the test ran, from its first record
    assert "polyline" not in page  # ZCAV points without figures draw nothing


ST4000 = {"model": "ST4000NM", "firmware": "SN04", "size_bytes": 4000787030016, "rotational": True}
MZ7LH = {"model": "MZ7LH960", "firmware": "HXT7", "size_bytes": 960197124096, "rotational": False}


def _disk(serial, disk, rate, **extra):
    record = {"test": "dd_seq_read", "tool": "dd", "target": dict(disk, path="/dev/sdb", device="sdb", serial=serial),
              "params": {"block_size": 1048576, "direct": True}, "metrics": {"read_bytes_per_s": rate},
              "bytes": 1e9, "device_io": {"read_bytes": 1e9, "write_bytes": 0}}
    record.update(extra)
    return record


def test_every_verdict_in_model_groups_with_zcav():
    """slow, regressed, unstable and invalid from the judge; peer groups by model; every finding of an entry;
    input errors; ZCAV curves."""
    zcav = {"zcav": [{"offset_bytes": index * 4e11, "read_bytes_per_s": 2.5e8 - index * 1e7} for index in range(11)]}
    records = {
        "hdd-1": [_disk("H1", ST4000, 2.5e8, metrics=dict(zcav, read_bytes_per_s=2.5e8))],
        "hdd-2": [_disk("H2", ST4000, 2.52e8, metrics=dict(zcav, read_bytes_per_s=2.52e8))],
        "hdd-3": [_disk("H3", ST4000, 1.5e8, metrics=dict(zcav, read_bytes_per_s=1.5e8))],
        "ssd-1": [_disk("S1", MZ7LH, 5.1e8)],
        "ssd-2": [_disk("S2", MZ7LH, 4e8)],
        "ssd-3": [_disk("S3", MZ7LH, 5.05e8, samples=[3.5e8, 5.05e8, 6.5e8])],
        "ssd-4": [_disk("S4", MZ7LH, 5e8, device_io={"read_bytes": 0, "write_bytes": 0})],
        "ssd-5": [_disk("S5", MZ7LH, 5e8)],
    }
    baseline = pipeline.build_report({"ssd-2": [_disk("S2", MZ7LH, 5e8)]}, {}, {})
    rules = {"rules": [{"name": "archive HDDs", "match": {"model": "ST4000*"}, "min_read_mb_per_s": 200}]}
    report, entries = judged(records, run={"playbook": "validate.yml"}, outlier_fraction=0.2, acceptance=rules, baseline=baseline)
    report["summary"]["input_errors"].append("baseline: /srv/old/report.json: not a report")
    markdown = render.render_markdown(report, entries)
    counts = dict(md_table(markdown, "## Summary")[1:])
    assert (counts["invalid"], counts["slow"], counts["regressed"], counts["unstable"], counts["pass"]) == ("1", "1", "1", "1", "4")
    assert "- baseline: /srv/old/report.json: not a report" in markdown.splitlines()
    assert "**NOT PASSED.** 4 of 8 results need attention. 1 input error (rules or baseline not usable)." in markdown
    problems = md_table(markdown, "## Needs attention (worst first)")
    assert [row[:2] for row in problems[1:]] == [["invalid", "ssd-4"], ["slow", "hdd-3"], ["regressed", "ssd-2"], ["unstable", "ssd-3"]]
    assert problems[2][7].startswith("slow: rule 1 'archive HDDs': read 150.0 MB/s &lt; minimum 200.0 MB/s; outlier: -40.0% vs median")
    groups = md_table(markdown, "## Peer groups")
    # Groups sorted by key; ssd-4's figure is not counted (invalid), ssd-3's is (unstable).
    assert [row[:3] for row in groups[1:]] == [
        ["dd_seq_read / model=MZ7LH960 / firmware=HXT7 / size_bytes=960197124096", "throughput", "4"],
        ["dd_seq_read / model=ST4000NM / firmware=SN04 / size_bytes=4000787030016", "throughput", "3"]]

    page = render.render_html(report, entries)
    parsed = parse(page)
    assert_self_contained(page)
    assert '<div class="count warn"><b>1</b><span>slow</span></div>' in page
    assert '<div class="count bad"><b>1</b><span>invalid</span></div>' in page
    assert "<li>baseline: /srv/old/report.json: not a report</li>" in page
    chart = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.DOTALL)
    assert len(chart) == 2  # the bar chart and the ZCAV chart
    bars = chart[0]
    # One band and median per peer group, each group headed by its key, disks in their own group.
    assert bars.count('class="band"') == 2 and bars.count('class="median"') == 2
    assert ">group: dd_seq_read / model=ST4000NM / firmware=SN04 / size_bytes=4000787030016</text>" in bars
    assert bars.index(">ssd-2 sdb</text>") < bars.index(">group: dd_seq_read / model=ST4000NM") < bars.index(">hdd-3 sdb</text>")
    assert ">median 250 MB/s</text>" in bars and ">median 502 MB/s</text>" in bars
    assert "expected band: median 250 MB/s \u00b1 20% (200 MB/s to 300 MB/s)" in bars
    assert ">SLOW 150 MB/s -40.0%</text>" in bars and ">REGRESSED 400 MB/s -20.4%</text>" in bars and ">INVALID 500 MB/s -0.5%</text>" in bars
    zcav_chart = chart[1]
    assert zcav_chart.count("<polyline") == 3  # hdd-1, hdd-2 and the slow hdd-3
    assert ">hdd-3 sdb</text>" in zcav_chart and "offset on disk, GB (10^9 bytes)" in zcav_chart
    assert "ZCAV read throughput across the disk" in zcav_chart
    table = parsed.tables[1]
    assert [(row[0], row[5]) for row in table[1:]] == [
        ("hdd-1", "pass"), ("hdd-2", "pass"), ("hdd-3", "slow"), ("ssd-1", "pass"), ("ssd-2", "regressed"), ("ssd-3", "unstable"),
        ("ssd-4", "invalid"), ("ssd-5", "pass")]
    assert table[3][2:5] == ["sdb, serial H3", "150 MB/s (143 MiB/s)", "-40.0%"]


def test_passed_summary_and_all_pass():
    records = {"h%d" % index: [{"test": "t", "tool": "fio", "target": {"path": "/srv/d0"}, "params": {"block_size": 4096},
                                "metrics": {"read_iops": 1000.0 + index}}] for index in range(3)}
    report, entries = judged(records)
    markdown = render.render_markdown(report, entries)
    assert "**PASSED.** All 3 results pass." in markdown
    assert "Nothing: every result passes." in markdown
    page = render.render_html(report, entries)
    assert '<div class="verdict-box passed"><strong>PASSED</strong>All 3 results pass.</div>' in page
    assert ">median 1,001 IOPS</text>" in page
    assert 'class="bar warn"' not in page and 'class="bar ok"' in page


# ---------------------------------------------------------------------------------------------
# fleet scale: more than LISTING_LIMIT results list only what is not pass
# ---------------------------------------------------------------------------------------------

def _fleet_record(test, path, rate):
    iops = test.startswith("fio")
    return {
        "schema": 1, "test": test, "tool": "fio" if iops else "dd", "tool_version": "3.33" if iops else "9.1",
        "target": {"path": path, "device": "sdb", "model": "MZ7LH960", "firmware": "F1", "size_bytes": 960197124096, "rotational": False},
        "params": {"block_size": 4096 if iops else 1048576, "direct": True},
        "metrics": {"read_bytes_per_s": rate * 4096 if iops else None, "write_bytes_per_s": None if iops else rate,
                    "read_iops": rate if iops else None, "write_iops": None},
        "bytes": None, "seconds": 10.0, "error": None,
    }


def _fleet_report(hosts, slow=("n007",), unreachable=()):
    """4 results per host (2 tests x 2 targets); the slow hosts run at half speed; unreachable hosts add one row each."""
    records_by_host = {}
    for index in range(hosts):
        host = "n%03d" % index
        factor = 0.5 if host in slow else 1.0 + (index % 7) / 1000.0
        records_by_host[host] = [_fleet_record(test, path, base * factor) for test, base in (("dd_seq_write", 400e6), ("fio_rand_read", 90000.0))
                                 for path in ("/srv/d0", "/srv/d1")]
    statuses = {host: OK for host in records_by_host}
    for host in unreachable:
        statuses[host] = {"status": "unreachable", "problems": [{"task": "discover", "status": "unreachable", "message": "ssh: timed out"}]}
    return judged(records_by_host, statuses, run={"playbook": "validate.yml", "started": "2026-11-22T00:00:00Z"})


def test_every_result_is_listed_up_to_the_limit():
    report, entries = _fleet_report(50)
    assert len(entries) == render.LISTING_LIMIT == 200
    markdown = render.render_markdown(report, entries)
    assert "More than 200 results" not in markdown and "counted, not listed" not in markdown
    rows = md_table(markdown, "### dd_seq_write")[1:]
    assert len(rows) == 100 and {row[0] for row in rows} == {"n%03d" % index for index in range(50)}
    page = render.render_html(report, entries)
    parsed = parse(page)
    assert "not listed" not in page
    hosts_table = parsed.tables[-1]
    assert hosts_table[0] == ["Host", "Status", "Records", "Problems"] and len(hosts_table) == 1 + 50


def test_beyond_the_limit_passes_are_counted_not_listed():
    report, entries = _fleet_report(50, unreachable=("zz-down",))
    assert len(entries) == 201
    counts = report["summary"]["counts"]
    assert (counts["pass"], counts["outlier"], counts["not_measured"]) == (196, 4, 1)
    markdown = render.render_markdown(report, entries)
    assert ("More than 200 results: the 196 pass results are counted per test and peer group, not listed one by one; "
            "report.json and results.csv hold all 201 results.") in markdown
    problems = md_table(markdown, "## Needs attention (worst first)")[1:]
    assert [(row[0], row[1]) for row in problems] == [("not_measured", "zz-down")] + [("outlier", "n007")] * 4
    # No pass row anywhere: only the problem hosts are named.
    assert "n008" not in markdown and "n000" not in markdown
    assert "100 results: 98 pass (counted, not listed), 2 listed under Needs attention." in markdown
    groups = md_table(markdown, "### dd_seq_write")
    assert groups[0] == ["Group key", "Metric", "Count", "Pass", "Median", "MAD", "Min", "Max"]
    assert groups[1][:4] == ["dd_seq_write / model=MZ7LH960 / firmware=F1 / size_bytes=960197124096", "throughput", "100", "98"]
    assert "dd 9.1, block 1 MiB, O_DIRECT" in markdown

    page = render.render_html(report, entries)
    parsed = parse(page)
    assert_self_contained(page)
    assert "More than 200 results: the 196 pass results are counted" in page
    assert "50 hosts with status ok and no problem are not listed." in page
    assert parsed.tables[-1][1:] == [["zz-down", "unreachable", "0", "ssh: timed out"]]
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.DOTALL)
    assert len(charts) == 2 and all('class="bar ok"' not in chart and chart.count('class="bar warn"') == 2 for chart in charts)
    assert "Only results that are not pass. Throughput per disk" in page


def test_a_fleet_listing_keeps_what_is_not_pass_and_counts_the_rest():
    report, entries = _fleet_report(60, slow=("n003", "n031"), unreachable=("zz-down",))
    listing = render.listing_of(entries)
    assert listing.summarised and listing.total == len(entries)
    assert listing.entries == [entry for entry in entries if entry.verdict != "pass"]
    assert listing.passes_not_listed == sum(1 for entry in entries if entry.verdict == "pass")
    assert listing.test_descriptions == {"dd_seq_write": "dd 9.1, block 1 MiB, O_DIRECT",
                                         "fio_rand_read": "fio 3.33, block 4 KiB, O_DIRECT"}
    chunks = []
    render.write_html(report, listing, chunks.append)
    assert len(chunks) > 10 and "".join(chunks) == render.render_html(report, entries)
    # A small report is listed whole, pass entries included.
    small = render.listing_of(_fleet_report(3)[1])
    assert not small.summarised and len(small.entries) == 12 and not small.pass_counts and not small.test_descriptions


def test_charts_draw_the_worst_chart_limit_results(monkeypatch):
    slow = tuple("n%03d" % index for index in range(0, 120, 2))
    report, entries = _fleet_report(120, slow=slow)
    page = render.render_html(report, entries)
    # 60 slow hosts x 2 targets = 120 outliers per test and metric, all drawn; then over the limit.
    assert page.count("Only results that are not pass. ") == 2
    monkeypatch.setattr(render, "CHART_LIMIT", 50)
    page = render.render_html(report, entries)
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.DOTALL)
    assert [chart.count('class="bar warn"') for chart in charts] == [50, 50]
    assert page.count("Only results that are not pass: the 50 worst of 120. ") == 2


def test_every_verdict_of_the_judge_has_a_kind():
    assert set(agg.VERDICT_KINDS) == set(agg.VERDICTS) and set(agg.VERDICT_KINDS.values()) == {"bad", "warn", "muted", "ok"}


def _random_read(p99_ns, p99_99_ns):
    record = {"schema": 1, "test": "fio_rand_read", "tool": "fio", "target": {"path": "/srv/d0", "device": "sdb"},
              "params": {"block_size": 4096, "direct": True, "judged_on": "iops"},
              "metrics": {"read_bytes_per_s": 40e6, "write_bytes_per_s": None, "read_iops": 10000.0, "write_iops": None,
                          "fsyncs_per_s": None, "latency_ns": {"read": {"mean": 1e5, "min": 1e4, "p50": 1e5, "p95": 2e5,
                                                                        "p99": p99_ns, "p99_9": None, "p99_99": p99_99_ns,
                                                                        "max": None, "stdev": None},
                                                               "write": None, "sync": None}},
              "error": None}
    return record


LATENCY_RULES = {"rules": [{"name": "db SSDs", "match": {"test": "fio_rand_read"}, "max_read_p99_ms": 1.5,
                            "max_read_p99_99_ms": 2.5}]}


def test_each_latency_figure_is_shown_beside_its_rule():
    fleet = {"db1": [_random_read(1.2e6, 2.4e6)], "db2": [_random_read(1.3e6, 3.1e6)], "db3": [_random_read(0.25e6, 0.4e6)]}
    report, entries = judged(fleet, acceptance=LATENCY_RULES)
    parsed = parse(render.render_html(report, entries))
    table = next(rows for rows in parsed.tables if rows[0][:6] == ["Host", "Target", "Device", "Figure", "vs median",
                                                                   "Latency vs rule"])
    assert table[0][6:] == ["Verdict", "Reason", "Likely cause"]
    cells = {row[0]: (row[5], row[6]) for row in table[1:]}
    assert cells["db2"] == ("read p99 1.30 ms \u2264 1.50 ms (rule 1 'db SSDs'); read p99.99 3.10 ms > 2.50 ms (rule 1 'db SSDs')",
                            "slow")
    assert cells["db1"] == ("read p99 1.20 ms \u2264 1.50 ms (rule 1 'db SSDs'); read p99.99 2.40 ms \u2264 2.50 ms (rule 1 'db SSDs')",
                            "pass")
    assert cells["db3"][0].startswith("read p99 0.250 ms \u2264 1.50 ms")
    markdown = render.render_markdown(report, entries)
    assert "| Host | Target | Device | Figure | vs median | Latency vs rule | Verdict | Reason |" in markdown
    assert "read p99.99 3.10 ms &gt; 2.50 ms (rule 1 'db SSDs')" in markdown   # report.md escapes HTML, as every cell


def test_no_latency_column_without_a_latency_rule():
    fleet = {"db%d" % number: [_random_read(1.2e6, 2.4e6)] for number in (1, 2, 3)}
    report, entries = judged(fleet)
    parsed = parse(render.render_html(report, entries))
    assert all("Latency vs rule" not in rows[0] for rows in parsed.tables)


def _verify_capture_record(host_path="/dev/loop9"):
    """A real capture (fio 3.33 verifying a loop device with three planted faults, tests/fixtures/fio/
    fio333-verify-pattern-three-faults.src.md) as bench_facts makes its record."""
    from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
    text = (_ROOT / "tests" / "fixtures" / "fio" / "fio333-verify-pattern-three-faults.txt").read_text(encoding="utf-8")
    _tool, (result,) = parse_output(text)
    return make_record(result, test="fio_verify_2of2", target={"path": host_path, "device": "loop9", "serial": "V1"},
                       params={"block_size": 4096, "direct": True, "judged_on": "bytes_per_s"})


def test_bad_blocks_are_listed_with_offset_length_and_kind():
    report, entries = judged({"v1": [_verify_capture_record()]})
    parsed = parse(render.render_html(report, entries))
    table = next(rows for rows in parsed.tables if rows[0] == render._BAD_BLOCK_HEADERS)
    # The first 16 of the 18 the record holds, then the count of the rest.
    assert len(table) == 1 + agg.PAGE_BAD_BLOCKS + 1
    assert table[1][:6] == ["v1", "fio_verify_2of2", "/dev/loop9", "1048576", "4096",
                            "unclassified: not classified"]
    assert table[1][6].startswith("pattern differs at byte 100 of the block: got 0x10, wanted 0x00")
    assert table[-1][6].startswith("2 more bad blocks")
    markdown = render.render_markdown(report, entries)
    assert "## Bad blocks" in markdown and "| v1 | fio_verify_2of2 | /dev/loop9 | 3145728 | 4096 |" in markdown


def test_no_bad_blocks_section_without_a_bad_block():
    report, entries = judged({"h1": [_random_read(1.2e6, 2.4e6)]})
    assert "Bad blocks" not in render.render_html(report, entries)
    assert "## Bad blocks" not in render.render_markdown(report, entries)
