# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_junit.py: report dict -> junit.xml, valid against the JUnit XSD (tests/unit/plugins/callback/junit.xsd)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from lxml import etree

_ROOT = Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("diskproof_junit_under_test", _ROOT / "plugins" / "module_utils" / "_junit.py")
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
