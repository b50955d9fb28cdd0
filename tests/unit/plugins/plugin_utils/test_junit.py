# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_junit.py: judged entries -> junit.xml, valid against the JUnit XSD (tests/unit/plugins/callback/junit.xsd)."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from lxml import etree

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _junit as junit

_ROOT = Path(__file__).resolve().parents[4]
SCHEMA = etree.XMLSchema(etree.parse(str(_ROOT / "tests" / "unit" / "plugins" / "callback" / "junit.xsd")))


def entry(host, verdict, reason="r", test="dd_seq_write", path="/srv/d0", seconds=5.0, reasons=None, notes=()):
    """A judged entry: a record's (test, target path, seconds) or, with test and path None, a host problem."""
    facts = None if test is None and path is None else agg.record_facts({"test": test, "target": {"path": path}, "seconds": seconds})
    findings = tuple(reasons) if reasons is not None else ((verdict, reason),)
    return agg.Entry(host, None, facts, verdict, findings, tuple(notes), None, None, None, None, None, None)


def report(*entries, hosts=None, run=None, unstable_fails=False):
    """(the report's sections the writer reads, its entries)."""
    return {
        "run": run if run is not None else {"started": "2026-11-22T00:00:00Z", "controller_hostname": "ctl",
                                            "ansible_version": "2.19.14", "collection_version": None},
        "rules": {"unstable_fails": unstable_fails},
        "hosts": hosts if hosts is not None else {e.host: {"status": "ok"} for e in entries},
    }, list(entries)


def render(judged):
    sections, entries = judged
    writer = junit.JunitWriter(sections)
    for item in entries:
        writer.add(item)
    buffer = io.StringIO()
    writer.write(buffer.write)
    return buffer.getvalue()


def parse(text):
    document = etree.fromstring(text.encode("utf-8"))
    SCHEMA.assertValid(document)
    return document


@pytest.mark.parametrize(("verdict", "child", "failures", "errors"), [
    ("pass", None, "0", "0"),
    ("unstable", None, "0", "0"),
    ("outlier", "failure", "1", "0"),
    ("slow", "failure", "1", "0"),
    ("regressed", "failure", "1", "0"),
    ("invalid", "failure", "1", "0"),
    ("error", "error", "0", "1"),
    ("not_measured", "error", "0", "1"),
])
def test_verdict_to_testcase(verdict, child, failures, errors):
    root = parse(render(report(entry("h1", verdict, reason="why <&> \"quoted\""))))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", failures, errors, "0")
    case = suite.find("testcase")
    assert (case.get("name"), case.get("classname"), case.get("time")) == ("dd_seq_write /srv/d0", "h1", "5.000")
    children = [element.tag for element in case]
    assert children == ([child] if child else [])
    if child:
        assert case.find(child).get("type") == verdict
        assert case.find(child).get("message") == 'why <&> "quoted"'


def test_suite_per_host_sorted_with_properties_and_times():
    text = render(report(entry("b", "pass", seconds=2.5), entry("a", "pass"), entry("b", "outlier", seconds=1.0),
                         hosts={"a": {"status": "ok"}, "b": {"status": "failed"}, "c": {"status": "unreachable"}}))
    root = parse(text)
    suites = root.findall("testsuite")
    assert [(suite.get("name"), suite.get("id"), suite.get("tests"), suite.get("time")) for suite in suites] == [
        ("a", "0", "1", "5.000"), ("b", "1", "2", "3.500"), ("c", "2", "0", "0.000")]
    assert suites[0].get("timestamp") == "2026-11-22T00:00:00"
    assert suites[0].get("hostname") == "ctl"
    properties = {prop.get("name"): prop.get("value") for prop in suites[1].find("properties")}
    assert properties == {"host_status": "failed", "run.started": "2026-11-22T00:00:00Z", "run.controller_hostname": "ctl",
                          "run.ansible_version": "2.19.14"}


def test_host_problem_is_an_error_case():
    root = parse(render(report(entry("h1", "not_measured", reason="unreachable: refused", test=None, path=None))))
    case = root.find("testsuite/testcase")
    assert (case.get("name"), case.get("time"), case.find("error").get("message")) == ("host problem", "0.000", "unreachable: refused")


def test_every_finding_in_the_text_notes_and_unstable_in_system_out():
    findings = [("slow", "rule 1: too slow"), ("unstable", "repeats vary")]
    root = parse(render(report(entry("h1", "slow", reason="rule 1: too slow", reasons=findings, notes=["no device counters"]))))
    assert root.find("testsuite/testcase/failure").text == "slow: rule 1: too slow\nunstable: repeats vary"
    assert root.find("testsuite/system-out").text == ("dd_seq_write /srv/d0: unstable: repeats vary\n"
                                                      "dd_seq_write /srv/d0: note: no device counters")


def test_characters_xml_cannot_carry_are_replaced():
    root = parse(render(report(entry("h1", "error", reason="dd: \x1b[31mboom\x00"))))
    assert root.find("testsuite/testcase/error").get("message") == "dd: \ufffd[31mboom\ufffd"


def test_empty_report_is_valid():
    root = parse(render(report(hosts={}, run={})))
    assert root.tag == "testsuites" and len(root) == 0


# ---------------------------------------------------------------------------------------------
# streamed: the text ElementTree wrote, byte for byte
# ---------------------------------------------------------------------------------------------

def _element_tree_junit(rep):
    """The former renderer (one ElementTree for the whole file), kept as the reference."""
    import xml.etree.ElementTree as ET

    def indent(element, level=0):
        padding = "\n" + "  " * level
        children = list(element)
        if children:
            if not (element.text or "").strip():
                element.text = padding + "  "
            for child in children:
                indent(child, level + 1)
                if not (child.tail or "").strip():
                    child.tail = padding + "  "
            if not (children[-1].tail or "").strip():
                children[-1].tail = padding

    sections, entries = rep
    by_host = {host: [] for host in sorted(sections["hosts"])}
    for item in entries:
        by_host.setdefault(item.host, []).append(item)
    root = ET.Element("testsuites")
    run = sections["run"]
    failing = junit.FAILURE_VERDICTS + (("unstable",) if sections["rules"]["unstable_fails"] else ())
    for index, host in enumerate(sorted(by_host)):
        items = by_host[host]
        suite = ET.SubElement(root, "testsuite", {
            "name": junit.xml_text(host), "package": junit.xml_text(host), "id": str(index), "timestamp": junit._timestamp(run),
            "hostname": junit.xml_text(run.get("controller_hostname") or "localhost"), "tests": str(len(items)),
            "failures": str(sum(1 for item in items if item.verdict in failing)),
            "errors": str(sum(1 for item in items if item.verdict in junit.ERROR_VERDICTS)), "skipped": "0",
            "time": "%.3f" % sum(_seconds(item) for item in items)})
        properties = ET.SubElement(suite, "properties")
        pairs = [("host_status", (sections["hosts"].get(host) or {}).get("status"))]
        pairs += [("run." + key, run.get(key)) for key in junit.RUN_PROPERTIES if run.get(key) is not None]
        for name, value in pairs:
            ET.SubElement(properties, "property", {"name": name, "value": junit.xml_text(value)})
        out = []
        for item in items:
            name = junit.case_name(item.test, item.target_path)
            case = ET.SubElement(suite, "testcase", {"name": junit.xml_text(name), "classname": junit.xml_text(host),
                                                     "time": "%.3f" % _seconds(item)})
            if item.verdict in failing + junit.ERROR_VERDICTS:
                child = ET.SubElement(case, "failure" if item.verdict in failing else "error",
                                      {"type": item.verdict, "message": junit.xml_text(item.reason)})
                child.text = junit.xml_text("\n".join("%s: %s" % finding for finding in item.findings))
            out += ["%s: unstable: %s" % (name, why) for verdict, why in item.findings if verdict == "unstable"]
            out += ["%s: note: %s" % (name, note) for note in item.notes]
        ET.SubElement(suite, "system-out").text = junit.xml_text("\n".join(out))
        ET.SubElement(suite, "system-err").text = ""
    indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _varied_report(unstable_fails=False):
    findings = [("slow", "rule 1: <too> slow & \"odd\""), ("unstable", "repeats\tvary\r\n")]
    return report(
        entry("b", "pass", seconds=2.5), entry("a", "pass"), entry("b", "outlier", seconds=1.0, reason="far\nbelow"),
        entry("b", "slow", reason="rule 1: <too> slow & \"odd\"", reasons=findings, notes=["no device counters", "x < y"]),
        entry("c<&>", "not_measured", reason="unreachable: \x1b[0m", test=None, path=None),
        entry("a", "error", reason=""), entry("a", "unstable", reasons=[("unstable", "cv 9%")]),
        hosts={"a": {"status": "ok"}, "b": {"status": "failed"}, "c<&>": {"status": "unreachable"}, "d": {"status": "ok"}},
        unstable_fails=unstable_fails)


@pytest.mark.parametrize("unstable_fails", [False, True])
def test_streamed_text_is_what_element_tree_wrote(unstable_fails):
    for rep in (_varied_report(unstable_fails), report(entry("h1", "pass")), report(hosts={}, run={}),
                report(hosts={"x": {}}, run={"started": "2026-11-22T00:00:00Z", "playbook": "p\"b", "inventory_size": 4})):
        text = render(rep)
        assert text == _element_tree_junit(rep)
        parse(text)


def _seconds(item):
    return 0.0 if item.facts is None else junit.seconds_of(item.facts.seconds)


def test_written_a_testsuite_at_a_time():
    sections, entries = _varied_report()
    writer = junit.JunitWriter(sections)
    for item in entries:
        writer.add(item)
    chunks = []
    writer.write(chunks.append)
    assert len(chunks) > 4 and "".join(chunks) == render(_varied_report())
