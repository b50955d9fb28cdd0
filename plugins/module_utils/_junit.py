# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report dict (module_utils/_aggregate.build_report) -> junit.xml text. Pure Python, no Ansible.

The shape is the strict Apache Ant JUnit schema (windyroad JUnit.xsd), which CI servers read:

- ``<testsuites>``: one ``<testsuite>`` per host (``name`` and ``package`` the host, ``id`` from
  0, ``timestamp`` the run start without zone, ``hostname`` the controller, ``time`` the sum of
  the tools' own seconds), each with ``<properties>`` (host status, run metadata),
  ``<system-out>`` (notes and unstable findings, which do not fail) and ``<system-err>``.
- ``<testcase>`` per entry, named ``<test> <target path>`` (``host problem`` for a host that
  left no record), ``classname`` the host, ``time`` the tool's seconds.
- ``<failure type=verdict message=reason>`` for invalid, slow, regressed and outlier;
  ``<error type=verdict message=reason>`` for error and not_measured (nothing was measured, so
  nothing passed or failed); pass and unstable pass.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Mapping, Sequence

FAILURE_VERDICTS = ("invalid", "slow", "regressed", "outlier")
ERROR_VERDICTS = ("error", "not_measured")
PACKAGE = "diskproof.fleet"
# XML 1.0 forbids most control characters; tool output sometimes carries them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
RUN_PROPERTIES = ("started", "finished", "controller_hostname", "ansible_version", "collection_version", "playbook", "inventory_size")


def xml_text(value: Any) -> str:
    """str(value) with characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _seconds(entry: Mapping[str, Any]) -> float:
    record = entry.get("record")
    seconds = record.get("seconds") if isinstance(record, Mapping) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        return 0.0
    return float(seconds)


def testcase_name(entry: Mapping[str, Any]) -> str:
    """``<test> <target path>``, or ``host problem`` for an entry without a record."""
    if entry.get("test") is None and entry.get("target_path") is None:
        return "host problem"
    return "%s %s" % (entry.get("test") or "-", entry.get("target_path") or "-")


def _timestamp(run: Mapping[str, Any]) -> str:
    # The schema's timestamp has no zone designator; report times are UTC.
    started = str(run.get("started") or "1970-01-01T00:00:00Z")
    return started[:19]


def _suite(index: int, host: str, entries: Sequence[Mapping[str, Any]], report: Mapping[str, Any]) -> ET.Element:
    run = report.get("run") or {}
    failures = sum(1 for entry in entries if entry["verdict"] in FAILURE_VERDICTS)
    errors = sum(1 for entry in entries if entry["verdict"] in ERROR_VERDICTS)
    suite = ET.Element("testsuite", {
        "name": xml_text(host),
        "package": xml_text(host),
        "id": str(index),
        "timestamp": _timestamp(run),
        "hostname": xml_text(run.get("controller_hostname") or "localhost"),
        "tests": str(len(entries)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": "0",
        "time": "%.3f" % sum(_seconds(entry) for entry in entries),
    })
    properties = ET.SubElement(suite, "properties")
    host_info = (report.get("hosts") or {}).get(host) or {}
    pairs = [("host_status", host_info.get("status"))] + [("run." + key, run.get(key)) for key in RUN_PROPERTIES if run.get(key) is not None]
    for name, value in pairs:
        ET.SubElement(properties, "property", {"name": name, "value": xml_text(value)})
    out_lines: List[str] = []
    for entry in entries:
        case = ET.SubElement(suite, "testcase", {"name": xml_text(testcase_name(entry)), "classname": xml_text(host), "time": "%.3f" % _seconds(entry)})
        verdict = entry["verdict"]
        if verdict in FAILURE_VERDICTS or verdict in ERROR_VERDICTS:
            child = ET.SubElement(case, "failure" if verdict in FAILURE_VERDICTS else "error",
                                  {"type": verdict, "message": xml_text(entry.get("reason"))})
            child.text = xml_text("\n".join("%s: %s" % (finding.get("verdict"), finding.get("reason")) for finding in entry.get("reasons") or []))
        for finding in entry.get("reasons") or []:
            if finding.get("verdict") == "unstable":
                out_lines.append("%s: unstable: %s" % (testcase_name(entry), finding.get("reason")))
        out_lines.extend("%s: note: %s" % (testcase_name(entry), note) for note in entry.get("notes") or [])
    ET.SubElement(suite, "system-out").text = xml_text("\n".join(out_lines))
    ET.SubElement(suite, "system-err").text = ""
    return suite


def render_junit(report: Mapping[str, Any]) -> str:
    """junit.xml text for a report: a testsuite per host (sorted), a testcase per entry (report order)."""
    by_host: Dict[str, List[Mapping[str, Any]]] = {host: [] for host in sorted(report.get("hosts") or {})}
    for entry in report.get("results") or []:
        by_host.setdefault(entry["host"], []).append(entry)
    root = ET.Element("testsuites")
    for index, host in enumerate(sorted(by_host)):
        root.append(_suite(index, host, by_host[host], report))
    _indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _indent(element: ET.Element, level: int = 0) -> None:
    # ElementTree.indent is Python 3.9+; module_utils stays importable on 3.8.
    padding = "\n" + "  " * level
    children = list(element)
    if children:
        if not (element.text or "").strip():
            element.text = padding + "  "
        for child in children:
            _indent(child, level + 1)
            if not (child.tail or "").strip():
                child.tail = padding + "  "
        if not (children[-1].tail or "").strip():
            children[-1].tail = padding
