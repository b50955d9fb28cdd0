# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark tools whose output is parsed, one entry each: the one list of them.

Everything that names the parsed tools reads it: tool=auto (detect.py), the dispatch to a tool's parser
(records.py), the modules' ``tool`` choices (_results.py, the bench_records docs). A parser is its module in this
package with

- ``records(text, direction, argv)``: the partial records (records.py's ``partial_result``) of every run or job in
  the text, ParseError for anything not exact;
- ``recognise(text)``: None, or the rank of its output among the others when text looks like it (tool=auto takes
  the lowest: fio JSON or text 0, dd 1, fio's own messages 2, sysbench 3, bonnie++ 4, ioping 5).

A new parser is its module and one entry here. Each module is imported where it is needed (the loader below, a
static import the module's packager sees): a module start compiles what it imports, and bench_run parses one tool.
How a host installs a program and asks its version is a plan's business, not a parser's (module_utils/_tools.py,
also for the programs nothing parses): this file stays out of the modules that only provision or probe, whose
payload would otherwise carry every parser (a unit test names a registered program _tools.py lacks).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Tuple


class ToolParser(NamedTuple):
    tool: str                        # the records' name of the tool
    programs: Tuple[str, ...]        # the program that runs it, then other argv[0] basenames whose output it reads
    description: str                 # how a message names its output
    load: Callable[[], Any]          # its parser module


def _dd() -> Any:
    from . import dd
    return dd


def _fio() -> Any:
    from . import fio
    return fio


def _sysbench() -> Any:
    from . import sysbench
    return sysbench


def _bonnie() -> Any:
    from . import bonnie
    return bonnie


def _ioping() -> Any:
    from . import ioping
    return ioping


PARSERS = (
    ToolParser("dd", ("dd",), "dd", _dd),
    ToolParser("fio", ("fio",), "fio", _fio),
    ToolParser("sysbench", ("sysbench",), "sysbench fileio", _sysbench),
    ToolParser("bonnie", ("bonnie++", "bonnie", "bon_csv2txt"), "bonnie++", _bonnie),
    ToolParser("ioping", ("ioping",), "ioping", _ioping),
)
TOOLS = tuple(parser.tool for parser in PARSERS)
BY_TOOL: Dict[str, ToolParser] = {parser.tool: parser for parser in PARSERS}
BY_PROGRAM: Dict[str, str] = {program: parser.tool for parser in PARSERS for program in parser.programs}
