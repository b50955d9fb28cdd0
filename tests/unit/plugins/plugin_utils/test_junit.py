# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_junit.py: report dict -> junit.xml, valid against the JUnit XSD (tests/unit/plugins/callback/junit.xsd)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from lxml import etree

_ROOT = Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("diskproof_junit_under_test", _ROOT / "plugins" / "plugin_utils" / "_junit.py")
junit = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(junit)
SCHEMA = etree.XMLSchema(etree.parse(str(_ROOT / "tests" / "unit" / "plugins" / "callback" / "junit.xsd")))


def entry(host, verdict, reason="r", test="dd_seq_write", path="/srv/d0", seconds=5.0, reasons=None, notes=()):
    return {
        "host": host, "test": test, "target_path": path, "verdict": verdict, "reason": reason,
        "reasons": reasons if reasons is not None else [{"verdict": verdict, "reason": reason}], "notes": list(notes),
        "record": {"seconds": seconds} if test is not None else None,
    }


def report(*entries, hosts=None):
    return {
        "run": {"started": "2026-11-22T00:00:00Z", "controller_hostname": "ctl", "ansible_version": "2.19.14", "collection_version": None},
        "hosts": hosts if hosts is not None else {e["host"]: {"status": "ok"} for e in entries},
        "results": list(entries),
    }


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
    root = parse(junit.render_junit(report(entry("h1", verdict, reason="why <&> \"quoted\""))))
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
    text = junit.render_junit(report(entry("b", "pass", seconds=2.5), entry("a", "pass"), entry("b", "outlier", seconds=1.0),
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
    root = parse(junit.render_junit(report(entry("h1", "not_measured", reason="unreachable: refused", test=None, path=None))))
    case = root.find("testsuite/testcase")
    assert (case.get("name"), case.get("time"), case.find("error").get("message")) == ("host problem", "0.000", "unreachable: refused")


def test_every_finding_in_the_text_notes_and_unstable_in_system_out():
    findings = [{"verdict": "slow", "reason": "rule 1: too slow"}, {"verdict": "unstable", "reason": "repeats vary"}]
    root = parse(junit.render_junit(report(entry("h1", "slow", reason="rule 1: too slow", reasons=findings, notes=["no device counters"]))))
    assert root.find("testsuite/testcase/failure").text == "slow: rule 1: too slow\nunstable: repeats vary"
    assert root.find("testsuite/system-out").text == ("dd_seq_write /srv/d0: unstable: repeats vary\n"
                                                      "dd_seq_write /srv/d0: note: no device counters")


def test_characters_xml_cannot_carry_are_replaced():
    root = parse(junit.render_junit(report(entry("h1", "error", reason="dd: \x1b[31mboom\x00"))))
    assert root.find("testsuite/testcase/error").get("message") == "dd: \ufffd[31mboom\ufffd"


def test_empty_report_is_valid():
    root = parse(junit.render_junit({"run": {}, "hosts": {}, "results": []}))
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

    by_host = {host: [] for host in sorted(rep.get("hosts") or {})}
    for item in rep.get("results") or []:
        by_host.setdefault(item["host"], []).append(item)
    root = ET.Element("testsuites")
    run = rep.get("run") or {}
    for index, host in enumerate(sorted(by_host)):
        items = by_host[host]
        suite = ET.SubElement(root, "testsuite", {
            "name": junit.xml_text(host), "package": junit.xml_text(host), "id": str(index), "timestamp": junit._timestamp(run),
            "hostname": junit.xml_text(run.get("controller_hostname") or "localhost"), "tests": str(len(items)),
            "failures": str(sum(1 for item in items if item["verdict"] in junit.FAILURE_VERDICTS)),
            "errors": str(sum(1 for item in items if item["verdict"] in junit.ERROR_VERDICTS)), "skipped": "0",
            "time": "%.3f" % sum(_seconds(item) for item in items)})
        properties = ET.SubElement(suite, "properties")
        pairs = [("host_status", ((rep.get("hosts") or {}).get(host) or {}).get("status"))]
        pairs += [("run." + key, run.get(key)) for key in junit.RUN_PROPERTIES if run.get(key) is not None]
        for name, value in pairs:
            ET.SubElement(properties, "property", {"name": name, "value": junit.xml_text(value)})
        out = []
        for item in items:
            name = junit.case_name(item.get("test"), item.get("target_path"))
            case = ET.SubElement(suite, "testcase", {"name": junit.xml_text(name), "classname": junit.xml_text(host),
                                                     "time": "%.3f" % _seconds(item)})
            if item["verdict"] in junit.FAILURE_VERDICTS + junit.ERROR_VERDICTS:
                child = ET.SubElement(case, "failure" if item["verdict"] in junit.FAILURE_VERDICTS else "error",
                                      {"type": item["verdict"], "message": junit.xml_text(item.get("reason"))})
                child.text = junit.xml_text("\n".join("%s: %s" % (f.get("verdict"), f.get("reason")) for f in item.get("reasons") or []))
            out += ["%s: unstable: %s" % (name, f.get("reason")) for f in item.get("reasons") or [] if f.get("verdict") == "unstable"]
            out += ["%s: note: %s" % (name, note) for note in item.get("notes") or []]
        ET.SubElement(suite, "system-out").text = junit.xml_text("\n".join(out))
        ET.SubElement(suite, "system-err").text = ""
    indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _varied_report():
    findings = [{"verdict": "slow", "reason": "rule 1: <too> slow & \"odd\""}, {"verdict": "unstable", "reason": "repeats\tvary\r\n"}]
    return report(
        entry("b", "pass", seconds=2.5), entry("a", "pass"), entry("b", "outlier", seconds=1.0, reason="far\nbelow"),
        entry("b", "slow", reason="rule 1: <too> slow & \"odd\"", reasons=findings, notes=["no device counters", "x < y"]),
        entry("c<&>", "not_measured", reason="unreachable: \x1b[0m", test=None, path=None),
        entry("a", "error", reason="", reasons=[]), entry("a", "unstable", reasons=[{"verdict": "unstable", "reason": "cv 9%"}]),
        hosts={"a": {"status": "ok"}, "b": {"status": "failed"}, "c<&>": {"status": "unreachable"}, "d": {"status": "ok"}})


def test_streamed_text_is_what_element_tree_wrote():
    for rep in (_varied_report(), report(entry("h1", "pass")), {"run": {}, "hosts": {}, "results": []},
                {"run": {"started": "2026-11-22T00:00:00Z", "playbook": "p\"b", "inventory_size": 4}, "hosts": {"x": {}}, "results": []}):
        text = junit.render_junit(rep)
        assert text == _element_tree_junit(rep)
        parse(text)


def _seconds(item):
    record = item.get("record")
    return junit.seconds_of(record.get("seconds") if isinstance(record, dict) else None)


def test_a_writer_spells_what_it_is_given_with_its_own_fields_of():
    """The callback hands the writer compact entries and its own fields_of: the same file."""
    rep = _varied_report()
    by_entry = junit.JunitWriter(rep)
    by_index = junit.JunitWriter(rep, lambda index: junit.entry_fields(rep["results"][index]))
    for index, item in enumerate(rep["results"]):
        by_entry.add(item["host"], item)
        by_index.add(item["host"], index)
    chunks_entry, chunks_index = [], []
    by_entry.write(chunks_entry.append)
    by_index.write(chunks_index.append)
    # Written a testsuite at a time, never one string.
    assert len(chunks_entry) > 4 and "".join(chunks_entry) == "".join(chunks_index) == junit.render_junit(rep)
