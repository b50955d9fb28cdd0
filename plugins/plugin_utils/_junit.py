# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""junit.xml of judged entries (plugin_utils/_aggregate.Entry). Pure Python, no Ansible.

The shape is the strict Apache Ant JUnit schema (windyroad JUnit.xsd), which CI servers read:

- ``<testsuites>``: one ``<testsuite>`` per host (``name`` and ``package`` the host, ``id`` from
  0, ``timestamp`` the run start without zone, ``hostname`` the controller, ``time`` the sum of
  the tools' own seconds), each with ``<properties>`` (host status, run metadata),
  ``<system-out>`` (notes and unstable findings, which do not fail) and ``<system-err>``.
- ``<testcase>`` per entry, named ``<test> <target path>`` (``host problem`` for a host that
  left no record), ``classname`` the host, ``time`` the tool's seconds.
- ``<failure type=verdict message=reason>`` for invalid, slow, regressed and outlier;
  ``<error type=verdict message=reason>`` for error and not_measured (nothing was measured, so
  nothing passed or failed); pass passes; unstable is a failure when the report's
  ``rules.unstable_fails`` is true (the default), else it passes and is listed in ``<system-out>``.

``JunitWriter`` takes the entries one at a time (``add``) and writes the file host by host with
``xml.etree.ElementTree`` (two-space indentation): one testsuite's element tree at a time, so a
fleet's junit.xml is never one tree or one string.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List, Mapping

from ansible_collections.diskproof.fleet.plugins.plugin_utils._aggregate import (
    FAILING_VERDICTS, VERDICT_ERROR, VERDICT_NOT_MEASURED, VERDICT_UNSTABLE, Entry)

# Nothing was measured: an <error>, neither passed nor failed. The other failing verdicts are <failure>s.
ERROR_VERDICTS = (VERDICT_ERROR, VERDICT_NOT_MEASURED)
FAILURE_VERDICTS = tuple(verdict for verdict in FAILING_VERDICTS if verdict not in ERROR_VERDICTS)
# XML 1.0 forbids most control characters; tool output sometimes carries them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
RUN_PROPERTIES = ("started", "finished", "controller_hostname", "ansible_version", "collection_version", "playbook",
                  "inventory_size")
HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n'
INDENT = "  "


def xml_text(value: Any) -> str:
    """str(value) with characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def seconds_of(value: Any) -> float:
    """A record's ``seconds`` as a testcase time: 0.0 unless a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return 0.0
    return float(value)


def case_name(test: Any, target_path: Any) -> str:
    """``<test> <target path>``, or ``host problem`` when both are None."""
    if test is None and target_path is None:
        return "host problem"
    return "%s %s" % (test or "-", target_path or "-")


def _timestamp(run: Mapping[str, Any]) -> str:
    # The schema's timestamp has no zone designator; report times are UTC.
    started = str(run.get("started") or "1970-01-01T00:00:00Z")
    return started[:19]


class JunitWriter:
    """junit.xml for a report: ``add`` every entry (report order), then ``write``.

    ``report`` gives ``run``, ``rules`` and ``hosts`` (every host gets a testsuite, in name order, even
    without entries). Memory until ``write``: the entries added.
    """

    def __init__(self, report: Mapping[str, Any]) -> None:
        self.run: Mapping[str, Any] = report["run"]
        self.hosts: Mapping[str, Any] = report["hosts"]
        self._cases: Dict[str, List[Entry]] = {host: [] for host in self.hosts}  # host -> its entries, report order
        self._child_tags = {verdict: "failure" for verdict in FAILURE_VERDICTS}
        self._child_tags.update((verdict, "error") for verdict in ERROR_VERDICTS)
        if report["rules"]["unstable_fails"]:
            self._child_tags[VERDICT_UNSTABLE] = "failure"

    def add(self, entry: Entry) -> None:
        """A testcase of the entry's host."""
        self._cases.setdefault(entry.host, []).append(entry)

    def _suite(self, index: int, host: str, cases: List[Entry]) -> ET.Element:
        """The <testsuite> element of a host."""
        name = xml_text(host)
        # Every attribute now, in the schema's order; the counts are known at the end.
        suite = ET.Element("testsuite", {
            "name": name, "package": name, "id": str(index), "timestamp": _timestamp(self.run),
            "hostname": xml_text(self.run.get("controller_hostname") or "localhost"),
            "tests": str(len(cases)), "failures": "0", "errors": "0", "skipped": "0", "time": ""})
        properties = ET.SubElement(suite, "properties")
        pairs = [("host_status", (self.hosts.get(host) or {}).get("status"))]
        pairs += [("run." + key, self.run.get(key)) for key in RUN_PROPERTIES if self.run.get(key) is not None]
        for key, value in pairs:
            ET.SubElement(properties, "property", {"name": xml_text(key), "value": xml_text(value)})
        counts = {"failure": 0, "error": 0}
        total_seconds: float = 0
        out: List[str] = []
        for entry in cases:
            seconds = 0.0 if entry.facts is None else seconds_of(entry.facts.seconds)
            total_seconds += seconds
            case = case_name(entry.test, entry.target_path)
            testcase = ET.SubElement(suite, "testcase",
                                     {"name": xml_text(case), "classname": name, "time": "%.3f" % seconds})
            tag = self._child_tags.get(entry.verdict)
            if tag is not None:
                counts[tag] += 1
                child = ET.SubElement(testcase, tag, {"type": xml_text(entry.verdict), "message": xml_text(entry.reason)})
                lines = ["%s: %s" % (finding, why) for finding, why in entry.findings]
                lines.extend("likely cause: %s" % text for _kind, text in entry.causes)
                child.text = xml_text("\n".join(lines))
            out.extend("%s: unstable: %s" % (case, why) for finding, why in entry.findings if finding == VERDICT_UNSTABLE)
            out.extend("%s: note: %s" % (case, note) for note in entry.notes)
        suite.set("failures", str(counts["failure"]))
        suite.set("errors", str(counts["error"]))
        suite.set("time", "%.3f" % total_seconds)
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(out))
        ET.SubElement(suite, "system-err")
        ET.indent(suite, space=INDENT, level=1)
        return suite

    def write(self, write: Callable[[str], Any]) -> None:
        """The whole file, one testsuite at a time."""
        write(HEADER)
        hosts = sorted(self._cases)
        if not hosts:
            write("<testsuites />\n")
            return
        write("<testsuites>\n")
        for index, host in enumerate(hosts):
            suite = self._suite(index, host, self._cases[host])
            write(INDENT + ET.tostring(suite, encoding="unicode") + "\n")
            # What is written is no longer needed.
            self._cases[host] = []
        write("</testsuites>\n")
