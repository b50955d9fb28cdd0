# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options that label and parse result records, shared by bench_facts (parse) and bench_run (run)."""
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  test:
    description:
      - Test id put into every record, for example V(dd_seq_write). Defaults to the tool name.
    type: str
  params:
    description:
      - Test parameters (block size, size, direct, sync, ...), copied into every record untouched.
    type: dict
  direction:
    description:
      - Which rate a dd run measures; dd's own output does not say.
      - V(read) fills C(read_bytes_per_s), V(write) fills C(write_bytes_per_s), V(copy) fills both.
      - When not set it is taken from the dd operands in O(argv) - C(of=/dev/null) is a read, C(if=/dev/zero) or
        C(if=/dev/urandom) is a write, file to file is a copy - else from the dd command a pasted shell transcript
        shows before each run's output (with a warning naming the line). A direction given here wins; when the
        transcript's command says otherwise, a warning names both.
      - When it is still unknown the dd rate is kept only as C(metrics.transfer_bytes_per_s), with a warning; the
        report shows it but does not judge it until the output is parsed again with this option.
      - For ioping, only when its output does not say it - the raw C(-B) line, and 0.x summaries without request
        lines. Without it (and without C(-W) or C(-G) in O(argv)) ioping is taken to have read, with a warning.
      - Ignored for fio, sysbench and bonnie++, which say which direction each figure is.
    type: str
    choices: [read, write, copy]
"""
