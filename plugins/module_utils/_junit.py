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
  nothing passed or failed); pass passes; unstable is a failure when the report's
  ``rules.unstable_fails`` is true (the default), else it passes and is listed in ``<system-out>``.

``JunitWriter`` takes the entries one at a time (``add`` a report entry, or ``add_case`` its
fields, or ``defer`` anything ``write`` turns into those fields when it reaches that host) and
writes the file host by host: a fleet's junit.xml is never one string or one element tree (with
``defer``, only one testsuite's testcases are text at a time). The text is what ElementTree
wrote with two-space indentation, byte for byte.
"""
from __future__ import annotations

import io
import re
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

FAILURE_VERDICTS = ("invalid", "not_steady", "slow", "regressed", "outlier")
ERROR_VERDICTS = ("error", "not_measured")
PACKAGE = "diskproof.fleet"
# XML 1.0 forbids most control characters; tool output sometimes carries them.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
RUN_PROPERTIES = ("started", "finished", "controller_hostname", "ansible_version", "collection_version", "playbook", "inventory_size")
HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n'
# add_case's arguments after the host: test, target path, seconds, verdict, reason, findings, notes.
CaseFields = Tuple[Any, Any, float, str, Any, Sequence[Tuple[Any, Any]], Iterable[Any]]
# add_case's fast path tests exact types (type(x) is str): text test ids, paths and seconds; anything
# else takes the general one.
# pylint: disable=unidiomatic-typecheck
_CHILD_TAGS = dict([(verdict, "failure") for verdict in FAILURE_VERDICTS] + [(verdict, "error") for verdict in ERROR_VERDICTS])


def xml_text(value: Any) -> str:
    """str(value) with characters XML 1.0 cannot carry replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", "" if value is None else str(value))


def _escape_text(text: str) -> str:
    # As ElementTree escapes character data.
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _escape_attribute(text: str) -> str:
    # As ElementTree escapes attribute values.
    text = _escape_text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    if "\n" in text:
        text = text.replace("\n", "&#10;")
    if "\t" in text:
        text = text.replace("\t", "&#09;")
    return text


def _attribute(value: Any) -> str:
    return _escape_attribute(xml_text(value))


def seconds_of(value: Any) -> float:
    """A record's ``seconds`` as a testcase time: 0.0 unless a number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return 0.0
    return float(value)


def _seconds(entry: Mapping[str, Any]) -> float:
    record = entry.get("record")
    return seconds_of(record.get("seconds") if isinstance(record, Mapping) else None)


def case_name(test: Any, target_path: Any) -> str:
    """``<test> <target path>``, or ``host problem`` when both are None."""
    if test is None and target_path is None:
        return "host problem"
    return "%s %s" % (test or "-", target_path or "-")


def testcase_name(entry: Mapping[str, Any]) -> str:
    """``<test> <target path>``, or ``host problem`` for an entry without a record."""
    return case_name(entry.get("test"), entry.get("target_path"))


def _timestamp(run: Mapping[str, Any]) -> str:
    # The schema's timestamp has no zone designator; report times are UTC.
    started = str(run.get("started") or "1970-01-01T00:00:00Z")
    return started[:19]


class _Suite:
    """One host's testcases (already XML), counted as they come."""

    __slots__ = ("cases", "failures", "errors", "time", "out", "classname")

    def __init__(self, classname: str) -> None:
        self.classname = classname  # the host as an attribute value
        self.cases: List[str] = []
        self.failures = 0
        self.errors = 0
        self.time: float = 0
        self.out: List[str] = []


class JunitWriter:
    """junit.xml for a report: ``add`` every entry (report order), then ``write``.

    ``report`` gives ``run`` and ``hosts`` (every host gets a testsuite, in name order, even
    without entries). Memory: one short string per testcase until ``write``.
    """

    def __init__(self, report: Mapping[str, Any]) -> None:
        self.run: Mapping[str, Any] = report.get("run") or {}
        self.hosts: Mapping[str, Any] = report.get("hosts") or {}
        self._suites: Dict[str, _Suite] = {host: _Suite(_attribute(host)) for host in self.hosts}
        self._names: Dict[Tuple[Any, ...], str] = {}
        self._attributes: Dict[str, str] = {}
        self._by_path: Dict[str, Dict[str, Tuple[str, str]]] = {}  # target path -> test -> (name, attribute): text ones
        self._deferred: Dict[str, List[Any]] = {}  # host -> items given to ``defer``, in order
        self._run_properties: Optional[str] = None
        self._child_tags = dict(_CHILD_TAGS)
        if (report.get("rules") or {}).get("unstable_fails"):
            self._child_tags["unstable"] = "failure"

    def add(self, entry: Mapping[str, Any]) -> None:
        """A report entry (``results`` item)."""
        findings = [(finding.get("verdict"), finding.get("reason")) for finding in entry.get("reasons") or []]
        self.add_case(entry["host"], entry.get("test"), entry.get("target_path"), _seconds(entry), entry["verdict"], entry.get("reason"),
                      findings, entry.get("notes") or ())

    def add_case(self, host: str, test: Any, target_path: Any, seconds: float, verdict: str, reason: Any,
                 findings: Sequence[Tuple[Any, Any]], notes: Iterable[Any]) -> None:
        """An entry given by its fields: ``findings`` are (verdict, reason) pairs, worst first."""
        # Once per entry (117,000 times for 10,000 hosts): the usual testcase (text test and path,
        # one finding that is not unstable, no notes) without a call.
        suite = self._suites.get(host)
        if suite is None:
            suite = self._suites[host] = _Suite(_attribute(host))
        classname = suite.classname
        by_test = self._by_path.get(target_path) if type(target_path) is str else None
        names = by_test.get(test) if by_test is not None and type(test) is str else None
        if names is None:
            names = self._case_names(test, target_path)
        suite.time += seconds
        tag = self._child_tags.get(verdict) if isinstance(verdict, str) else None
        if tag is None:
            suite.cases.append('    <testcase name="%s" classname="%s" time="%.3f" />\n' % (names[1], classname, seconds))
        else:
            if tag == "failure":
                suite.failures += 1
            else:
                suite.errors += 1
            text = _escape_text(xml_text("\n".join("%s: %s" % (finding, why) for finding, why in findings)))
            child = '<%s type="%s" message="%s"' % (tag, _attribute(verdict), _attribute(reason))
            child += (">%s</%s>" % (text, tag)) if text else " />"
            suite.cases.append('    <testcase name="%s" classname="%s" time="%.3f">\n      %s\n    </testcase>\n' % (
                names[1], classname, seconds, child))
        if len(findings) > 1 or (findings and findings[0][0] == "unstable"):
            for finding, why in findings:
                if finding == "unstable":
                    suite.out.append("%s: unstable: %s" % (names[0], why))
        for note in notes:
            suite.out.append("%s: note: %s" % (names[0], note))

    def defer(self, host: str, item: Any) -> None:
        """A testcase of ``host`` whose fields ``write`` asks for (``fields_of(item)``) when it
        writes that host's testsuite: only one testsuite's testcases are ever held as text."""
        items = self._deferred.get(host)
        if items is None:
            items = self._deferred[host] = []
            if host not in self._suites:
                self._suites[host] = _Suite(_attribute(host))
        items.append(item)

    def _case_names(self, test: Any, target_path: Any) -> Tuple[str, str]:
        """(testcase name, the name as an attribute value) of a test and target path."""
        try:
            # Types in the key: True == 1, but "True /d0" is not "1 /d0".
            name_key: Optional[Tuple[Any, ...]] = (type(test), test, type(target_path), target_path)
            name = self._names.get(name_key)  # type: ignore[arg-type]
        except TypeError:  # unhashable values in a malformed entry
            name_key, name = None, None
        if name is None:
            name = case_name(test, target_path)
            if name_key is not None and len(self._names) < 10000:
                self._names[name_key] = name
        name_attribute = self._attributes.get(name)
        if name_attribute is None:
            name_attribute = _attribute(name)
            if len(self._attributes) < 10000:
                self._attributes[name] = name_attribute
        names = (name, name_attribute)
        if type(test) is str and type(target_path) is str and len(self._by_path) < 10000:
            self._by_path.setdefault(target_path, {})[test] = names
        return names

    def _properties(self, host: str) -> str:
        if self._run_properties is None:
            # The same for every testsuite: spelled once.
            pairs = [("run." + key, self.run.get(key)) for key in RUN_PROPERTIES if self.run.get(key) is not None]
            self._run_properties = "".join('      <property name="%s" value="%s" />\n' % (_attribute(name), _attribute(value))
                                           for name, value in pairs)
        host_info = self.hosts.get(host) or {}
        return '      <property name="host_status" value="%s" />\n%s' % (_attribute(host_info.get("status")), self._run_properties)

    def write(self, write: Callable[[str], Any], fields_of: Optional[Callable[[Any], CaseFields]] = None) -> None:
        """The whole file, one testsuite at a time. ``fields_of`` turns a deferred item into the
        arguments of ``add_case`` after the host (needed when items were deferred)."""
        write(HEADER)
        hosts = sorted(self._suites)
        if not hosts:
            write("<testsuites />\n")
            return
        write("<testsuites>\n")
        timestamp = _timestamp(self.run)
        hostname = _attribute(self.run.get("controller_hostname") or "localhost")
        for index, host in enumerate(hosts):
            suite = self._suites[host]
            items = self._deferred.pop(host, None)
            if items:
                if fields_of is None:
                    raise ValueError("testcases were deferred: write needs fields_of")
                add_case = self.add_case
                for item in items:
                    add_case(host, *fields_of(item))
            name = suite.classname
            write('  <testsuite name="%s" package="%s" id="%d" timestamp="%s" hostname="%s" tests="%d" failures="%d" errors="%d" '
                  'skipped="0" time="%.3f">\n' % (name, name, index, _attribute(timestamp), hostname, len(suite.cases), suite.failures,
                                                  suite.errors, suite.time))
            write("    <properties>\n%s    </properties>\n" % self._properties(host))
            write("".join(suite.cases))
            out = _escape_text(xml_text("\n".join(suite.out)))
            write("    <system-out>%s</system-out>\n" % out if out else "    <system-out />\n")
            write("    <system-err />\n  </testsuite>\n")
            # What is written is no longer needed.
            suite.cases = []
        write("</testsuites>\n")


def render_junit(report: Mapping[str, Any]) -> str:
    """junit.xml text for a report: a testsuite per host (sorted), a testcase per entry (report order)."""
    writer = JunitWriter(report)
    for entry in report.get("results") or []:
        writer.add(entry)
    buffer = io.StringIO()
    writer.write(buffer.write)
    return buffer.getvalue()
