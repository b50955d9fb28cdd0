"""The parsers' registry (module_utils/_parse/registry.py) is the one list of parsed tools: every parser in it has the
interface tool=auto and the dispatch use, the modules' tool choices and docs are made from it, and a plan knows how
to install and ask the version of every program it names."""
from __future__ import annotations

import yaml

from ansible_collections.diskproof.fleet.plugins.module_utils import _results, _tools
from ansible_collections.diskproof.fleet.plugins.module_utils._parse import detect, records, registry


def test_every_registered_parser_recognises_and_parses():
    for parser in registry.PARSERS:
        module = parser.load()
        assert callable(module.records) and callable(module.recognise), parser.tool
        assert module.recognise("hello\n") is None, parser.tool


def test_the_tool_lists_are_the_registry_s():
    assert tuple(_results.TOOLS) == ("auto",) + registry.TOOLS
    for parser in registry.PARSERS:
        assert all(detect.tool_from_argv(["/usr/bin/" + name]) == parser.tool for name in parser.programs)


def test_a_plan_can_install_and_probe_every_parsed_program():
    for parser in registry.PARSERS:
        program = parser.programs[0]
        assert program in _tools.PACKAGES, "%s: add its package to module_utils/_tools.py PACKAGES" % program
        assert program in _tools.TOOL_VERSION_ARGS, "%s: add its version arguments to _tools.TOOL_VERSION_ARGS" % program


def test_the_module_docs_offer_the_registry_s_tools():
    from ansible_collections.diskproof.fleet.plugins.doc_fragments import bench_records
    options = yaml.safe_load(bench_records.ModuleDocFragment.DOCUMENTATION)["options"]
    assert options["tool"]["choices"] == list(_results.TOOLS)


def test_a_registered_parser_is_dispatched_to_and_detected(monkeypatch):
    """A new parser is its module and its registry entry: tool=auto and parse_output find it there."""
    class Blip:
        @staticmethod
        def recognise(text):
            return 9 if text.startswith("blip ") else None

        @staticmethod
        def records(text, direction=None, argv=None):
            result = records.partial_result("blip", "1.0", records.job_ident(None, 0))
            result["metrics"]["read_iops"] = float(text.split()[1])
            return [result]

    entry = registry.ToolParser("blip", ("blip",), "blip", lambda: Blip)
    monkeypatch.setattr(registry, "PARSERS", registry.PARSERS + (entry,))
    monkeypatch.setattr(detect, "PARSERS", registry.PARSERS)
    monkeypatch.setitem(registry.BY_TOOL, "blip", entry)
    assert detect.detect_tool("blip 42\n") == "blip"
    tool, found = records.parse_output("blip 42\n")
    assert tool == "blip" and found[0]["metrics"]["read_iops"] == 42.0
