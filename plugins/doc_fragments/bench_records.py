# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options that label and parse result records (module_utils/_results.py's record_options()), shared by bench_facts
(parse) and bench_run (run). The tool choices are the parsers' registry's (module_utils/_parse/registry.py)."""
from __future__ import annotations

import yaml  # ansible-core's own dependency; doc fragments are read on the controller only

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.registry import TOOLS


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  tool:
    description:
      - Which tool produced the output.
      - V(auto) takes the tool from the basename of the command run (the first element of
        O(diskproof.fleet.bench_run#module:argv)) when that program runs one of the other choices, else recognises the
        output itself.
      - V(bonnie) is bonnie++ (and C(bon_csv2txt) output).
    type: str
    default: auto
  target:
    description:
      - What was tested, copied into every record.
      - The module adds C(device), the whole-disk kernel name (V(sdb), V(nvme0n1), V(loop3)) of the block
        device holding C(path), unless the dict already has a C(device) key. C(device) is null when it cannot
        be known (no C(path), tmpfs, overlay, network filesystems).
      - M(diskproof.fleet.bench_run) - a raw target (C(kind=raw)) with a C(grant) (the discover role's, passed on by
        the plan) is checked right before the job - the disks' serial, WWN, disk sequence number, size and loop identity read again from sysfs
        and C(/dev/disk/by-id); for C(class=raw_write) also no mount (C(/proc/self/mountinfo)), partition, holder or
        signature (C(wipefs -n)), and the device is held open with C(O_EXCL) for the whole job. Anything changed
        fails the job before it runs, naming what changed.
    type: dict
  fail_on_error:
    description:
      - Fail the task when the tool failed - a non-zero exit code or a record with C(error) set. The message
        names the tool, the command, the exit code and the tool's own error line; the records are still
        returned in RV(ansible_facts.diskproof_results).
      - With V(false) the task succeeds and the failure is only in the records.
      - Failures of a job M(diskproof.fleet.bench_run) runs (a failing O(diskproof.fleet.bench_run#module:setup)
        command, a O(diskproof.fleet.bench_run#module:job_file) fio rejects, a write cache that cannot be switched off
        or restored, an unusable O(diskproof.fleet.bench_run#module:workdir)) always fail the task.
      - A failure naming C(No space left on device) (ENOSPC) on a directory target (O(target) C(path)) adds what it
        means and what to do to the message - the filesystem, its free space now, and that the space went after the
        plan checked it.
    type: bool
    default: true
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
      - When not set it is taken from the dd operands in O(diskproof.fleet.bench_run#module:argv) - C(of=/dev/null) is a read, C(if=/dev/zero) or
        C(if=/dev/urandom) is a write, file to file is a copy - else from the dd command a pasted shell transcript
        shows before each run's output (with a warning naming the line). A direction given here wins; when the
        transcript's command says otherwise, a warning names both.
      - When it is still unknown the dd rate is kept only as C(metrics.transfer_bytes_per_s), with a warning; the
        report shows it but does not judge it until the output is parsed again with this option.
      - For ioping, only when its output does not say it - the raw C(-B) line, and 0.x summaries without request
        lines. Without it (and without C(-W) or C(-G) in O(diskproof.fleet.bench_run#module:argv)) ioping is taken to have read, with a warning.
      - Ignored for fio, sysbench and bonnie++, which say which direction each figure is.
    type: str
    choices: [read, write, copy]
"""


def _with_tool_choices(documentation: str) -> str:
    doc = yaml.safe_load(documentation)
    doc["options"]["tool"]["choices"] = ["auto"] + list(TOOLS)
    return yaml.safe_dump(doc, sort_keys=False, width=120)


# Set outside the class body, where ansible-test's yamllint reads every assignment as a string literal; the fragment
# loader finds it as any class attribute.
ModuleDocFragment.DOCUMENTATION = _with_tool_choices(ModuleDocFragment.DOCUMENTATION)
