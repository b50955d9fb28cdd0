# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CSV fields that a spreadsheet will not run as formulas (OWASP "CSV Injection" guidance).

Model, serial and device strings come from the disks, paths and error messages from hosts and
tools, verdict names and playbook names from report.json files: any of them may read
'=HYPERLINK(...)' or '@SUM(...)|cmd'. The rule, for every field of every CSV file the collection
writes, header included (results.csv, written by the callback on the controller; the report store's
index.csv, written on the store host, hence module_utils: both sides import it):

- a number (int or float, never a bool) is written as the number it is, a negative one included;
- anything else is text (its str()); text beginning with ``=``, ``+``, ``-``, ``@``, TAB or CR, or
  with ``'``, is written with a ``'`` in front. Quoting the quote as well makes the rule reversible:
  a reader drops the first character of any text field that begins with ``'`` to get the original.

This module is the one implementation of the rule.
"""

from __future__ import annotations

# The characters OWASP lists (= + - @ TAB CR), and the quote that marks a neutralised field.
LEADING = frozenset("=+-@\t\r'")


def neutralised(value):
    """value as a CSV field may hold it: numbers and None unchanged, text that a spreadsheet would
    run (or that begins with ') with a leading '; other text unchanged (its type kept, so csv
    spells it as before)."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    text = value if isinstance(value, str) else str(value)
    if text[:1] in LEADING:
        return "'" + text
    return value
