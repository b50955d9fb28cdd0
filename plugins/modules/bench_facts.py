#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_facts
short_description: Run or parse a dd, fio, sysbench, bonnie++ or ioping benchmark and return exact result records
version_added: 0.1.0
description:
  - Turns the output of C(dd), C(fio), C(sysbench) (fileio), C(bonnie++) or C(ioping) into result records (schema 1,
    see C(docs/architecture.md)) with every figure in SI base units - bytes, bytes per second, operations per
    second, nanoseconds, seconds. C(docs/parsers.md) lists every output format understood and its units.
  - With O(argv) the module runs the tool itself (no shell, C(LANG=C LC_ALL=C)), records start and end times, the
    exit code and the command, and can sync and drop the page cache first and measure what reached the block
    device (O(device_io)).
  - With O(content) or O(src) it only parses text that was captured before; nothing is run.
  - dd rates are the byte count divided by the elapsed seconds of dd's summary line, never the rounded rate dd
    prints. GNU coreutils (any locale, decimal commas included), busybox (binary units), BSD/macOS and
    coreutils 5 output are understood; several runs in one text give one record each; C(status=progress)
    updates are never taken as the result.
  - fio output must be JSON (C(--output-format=json) or C(json+)), fio 2.x or 3.x, including C(--client) runs
    (one record per client; the C(All clients) aggregate is skipped). One record per job. Latency figures are
    the completion latency (C(clat)) mean, min, p50, p95, p99, p99.9, max and standard deviation in ns; when fio
    reports no completion latency the mean, min, max and standard deviation of the total latency (C(lat)) are
    used, without percentiles, and a warning says so.
  - sysbench fileio output of 0.4.x, 0.5 and 1.0.x, C(run) and C(prepare), one record per run (several runs
    appended to one log give one record each). reads/s and writes/s are the read and write IOPS, fsyncs/s (0.4 and
    0.5 C(Other) operations) C(fsyncs_per_s); bytes per second are operations per second times the block size
    (sysbench 0.4 C(Mb/sec) is MiB/s); latency is the min, mean (avg), max and the percentile sysbench prints
    (C(--percentile), 95 by default) when it is 50, 95, 99 or 99.9.
    A C(FATAL) run is a record with C(error) set.
  - bonnie++ output, CSV lines of 1.03, 1.96/1.97 and format 1.98 (bonnie++ 1.98 to 2.00a) or, without CSV, the
    text table (also as printed by C(bon_csv2txt)); one record per run. Block output is the write rate, block input
    the read rate and random seeks the read IOPS; the latencies are bonnie++'s maximum latency of those tests.
    C(+++++) (too fast to measure) gives null and a warning, never a number; K is 1024 bytes.
  - ioping output of 0.x and 1.x, the summary (one record per statistics block) or the raw C(-B) line; IOPS and
    bytes per second go to the direction ioping tested, latency min, mean (avg), max and stdev (mdev) come from
    C(min/avg/max/mdev).
  - Anything the parser cannot read exactly (unknown unit, truncated or malformed JSON, no dd summary, a sysbench
    result section without its figures) fails the task with a message naming the tool, what was expected and the
    offending line. No figure is guessed.
author:
  - diskproof maintainers (@diskproof)
options:
  tool:
    description:
      - Which tool produced the output.
      - V(auto) takes the tool from the basename of O(argv[0]) when it is C(dd), C(fio), C(sysbench),
        C(bonnie++) or C(ioping), else recognises the output itself.
      - V(bonnie) is bonnie++ (and C(bon_csv2txt) output).
    type: str
    choices: [auto, dd, fio, sysbench, bonnie, ioping]
    default: auto
  content:
    description:
      - Raw output to parse (stdout and stderr of the tool as captured). Nothing is run.
      - Exactly one of O(content), O(src) and O(argv) is required.
    type: str
  src:
    description:
      - Path on the managed host of a file holding raw tool output to parse. Nothing is run.
    type: path
  argv:
    description:
      - Command to run, as a list of arguments (no shell). The first element is looked up in E(PATH).
      - The module runs it with C(LANG=C) and C(LC_ALL=C) and parses stdout followed by stderr (dd prints its
        summary on stderr, fio its JSON on stdout). fio needs C(--output-format=json) or C(json+).
      - With C(bonnie++ -q) the CSV line (stdout) comes first and the text table (stderr) is only a cross-check.
        C(ioping -B) prints exact figures, its summary rounds them to 3 or 4 significant digits.
      - Not run in check mode.
    type: list
    elements: str
  test:
    description:
      - Test id put into every record, for example V(dd_seq_write). Defaults to the tool name.
    type: str
  target:
    description:
      - What was tested, copied into every record.
      - The module adds C(device), the whole-disk kernel name (V(sdb), V(nvme0n1), V(loop3)) of the block
        device holding C(path), unless the dict already has a C(device) key. C(device) is null when it cannot
        be known (no C(path), tmpfs, overlay, network filesystems).
    type: dict
  params:
    description:
      - Test parameters (block size, size, direct, sync, ...), copied into every record untouched.
    type: dict
  direction:
    description:
      - Which rate a dd run measures; dd output does not say.
      - V(read) fills C(read_bytes_per_s), V(write) fills C(write_bytes_per_s), V(copy) fills both.
      - When not set it is taken from the dd operands in O(argv) - C(of=/dev/null) is a read, C(if=/dev/zero) or
        C(if=/dev/urandom) is a write, file to file is a copy. When it is still unknown the dd rate is left out
        of C(metrics) with a warning (C(bytes) and C(seconds) are still set).
      - For ioping, only when its output does not say it - the raw C(-B) line, and 0.x summaries without request
        lines. Without it (and without C(-W) or C(-G) in O(argv)) ioping is taken to have read, with a warning.
      - Ignored for fio, sysbench and bonnie++, which say which direction each figure is.
    type: str
    choices: [read, write, copy]
  creates:
    description:
      - Path of a file the tool will create (the test file). The module refuses to run when it exists
        already, so a run never overwrites a file it did not create, and returns it in RV(created) when the
        run created it, so the caller can remove it.
      - Only with O(argv).
    type: path
  drop_caches:
    description:
      - Before running, C(sync) and write V(3) to C(/proc/sys/vm/drop_caches) so reads come from the device,
        not the page cache. Fails the task when that is not possible (not root, read-only C(/proc/sys)).
      - Only with O(argv).
    type: bool
    default: false
  device_io:
    description:
      - Snapshot C(/sys/block/<device>/stat) right before and after the run and put the difference in
        C(device_io) as C(read_bytes) and C(write_bytes) (sector counters x 512). This shows what really
        reached the disk, for example that a buffered write without sync did not.
      - Defaults to V(true) with O(argv). C(device_io) is null in the record when the device is unknown.
      - Only with O(argv).
    type: bool
  fail_on_error:
    description:
      - Fail the task when the tool failed - a non-zero exit code or a record with C(error) set. The message
        names the tool, the command, the exit code and the tool's own error line; the records are still
        returned in RV(ansible_facts.diskproof_results).
      - With V(false) the task succeeds and the failure is only in the records.
    type: bool
    default: true
extends_documentation_fragment:
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
attributes:
  check_mode:
    support: partial
    details:
      - Parsing (O(content), O(src)) works in check mode.
      - With O(argv) the tool is not run in check mode; an empty list of results is returned.
  facts:
    support: full
notes:
  - The result is C(changed=true) whenever O(argv) ran the tool, like M(ansible.builtin.command) - a benchmark
    writes test data and may drop caches, and the module cannot know what else the command changed. Parsing
    only is always C(changed=false). Set C(changed_when) in the task when a read-only benchmark should not
    count as a change.
  - O(device_io) and the C(device) of O(target) come from Linux C(/sys); elsewhere they are null.
seealso:
  - name: diskproof result records (schema 1)
    description: The record layout every result follows, in C(docs/architecture.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/architecture.md
"""

EXAMPLES = r"""
- name: Sequential write with dd, measured on the device (the module runs dd itself)
  diskproof.fleet.bench_facts:
    argv: [dd, if=/dev/zero, of=/srv/diskproof/d0/diskproof.testfile, bs=1048576, count=256, conv=fdatasync]
    test: dd_seq_write
    target:
      path: /srv/diskproof/d0
    params:
      block_size: 1048576
      size_bytes: 268435456
      direct: false
      sync: fdatasync
    creates: /srv/diskproof/d0/diskproof.testfile
  become: true
  register: seq_write

- name: Random 4k reads, queue depth 32, from the file written above; caches dropped first
  diskproof.fleet.bench_facts:
    argv:
      - fio
      - --name=fio_rand_read
      - --filename=/srv/diskproof/d0/diskproof.testfile
      - --rw=randread
      - --bs=4096
      - --iodepth=32
      - --direct=1
      - --ioengine=libaio
      - --runtime=30
      - --time_based=1
      - --output-format=json
    test: fio_rand_read
    target:
      path: /srv/diskproof/d0
    drop_caches: true
  become: true

- name: Parse dd output captured earlier (nothing is run)
  diskproof.fleet.bench_facts:
    src: /var/tmp/diskproof/dd_seq_write.log
    tool: dd
    direction: write
    test: dd_seq_write

- name: Parse fio JSON held in a variable, keep going when a job failed
  diskproof.fleet.bench_facts:
    content: "{{ fio_run.stdout }}"
    tool: fio
    fail_on_error: false

- name: Show the write rate in MB/s (10^6 bytes per second)
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.write_bytes_per_s / 1e6) | round(1) }} MB/s"

- name: Parse a sysbench fileio log holding the prepare step and three runs (one record each)
  diskproof.fleet.bench_facts:
    src: /var/tmp/diskproof/sysbench_rndrd.log
    tool: sysbench
    test: sysbench_rand_read

- name: bonnie++ as an unprivileged user, CSV on stdout (-q) and the text table on stderr
  diskproof.fleet.bench_facts:
    argv: [bonnie++, -q, -d, /srv/diskproof/d0, -u, nobody, -s, "2048", -r, "1024", -n, "0", -m, "{{ inventory_hostname }}"]
    test: bonnie
    target:
      path: /srv/diskproof/d0
  become: true

- name: ioping, 20 direct reads, raw (exact) statistics
  diskproof.fleet.bench_facts:
    argv: [ioping, -B, -D, -c, "20", -i, "0.1", /srv/diskproof/d0]
    test: ioping_read_latency
    target:
      path: /srv/diskproof/d0

- name: Show the mean ioping read latency in microseconds
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['diskproof_results'][0].metrics.latency_ns.read.mean / 1000) | round(1) }} us"
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    diskproof_results:
      description:
        - One result record per dd run or fio job found in the output, in order (schema 1). Empty for an
          O(argv) run in check mode.
        - Returned also when the task fails because the tool failed (O(fail_on_error)).
      returned: always
      type: list
      elements: dict
      contains:
        schema:
          description: Record layout version.
          type: int
          returned: always
          sample: 1
        test:
          description: O(test), or the tool name.
          type: str
          returned: always
          sample: dd_seq_write
        tool:
          description: V(dd), V(fio), V(sysbench), V(bonnie) (bonnie++) or V(ioping).
          type: str
          returned: always
          sample: dd
        tool_version:
          description:
            - Version from the output (fio, sysbench banner, bonnie++ CSV or text table) or from C(<tool> --version)
              (C(ioping -v)) after an O(argv) run; null when unknown.
          type: str
          returned: always
          sample: "9.1"
        target:
          description: O(target) with C(device) added.
          type: dict
          returned: always
          sample: {path: /srv/diskproof/d0, device: sdb}
        params:
          description: O(params), untouched.
          type: dict
          returned: always
          sample: {block_size: 1048576, size_bytes: 268435456, direct: false, sync: fdatasync}
        job:
          description:
            - Which job of the output this record is - C(name) (fio job name, sysbench test mode such as V(rndrd) or
              V(prepare), bonnie++ machine name, ioping target), C(index) (position in the output, from 0),
              C(groupid) (fio), C(client) (fio C(--client) server as host:port). Null fields for dd except C(index).
          type: dict
          returned: always
          sample: {name: null, index: 0, groupid: null, client: null}
        metrics:
          description:
            - C(read_bytes_per_s), C(write_bytes_per_s) (bytes/s), C(read_iops), C(write_iops) (ops/s),
              C(fsyncs_per_s) (fio C(fsync)/C(fdatasync) calls, sysbench fsyncs, per second) and C(latency_ns.read),
              C(latency_ns.write) (each null or a dict of C(mean), C(min), C(p50), C(p95), C(p99), C(p99_9), C(max),
              C(stdev) in ns, in that order; any of them null when the tool does not print it).
            - fio fills them all from C(clat) (C(stdev) is fio's C(stddev)); sysbench C(min), C(mean), C(max) and the
              one percentile it prints (C(stdev) null); ioping C(min), C(mean), C(max) and C(stdev) (its C(mdev)).
            - bonnie++ - C(write_bytes_per_s) is block output, C(read_bytes_per_s) block input, C(read_iops) random
              seeks, the latencies are C(max) only (bonnie++ reports the worst latency of each test).
            - A direction the test did not exercise is null, and so is a figure the tool could not measure
              (bonnie++ C(+++++)).
          type: dict
          returned: always
          sample:
            read_bytes_per_s: null
            write_bytes_per_s: 48996732.035687685
            read_iops: null
            write_iops: null
            fsyncs_per_s: null
            latency_ns: {read: null, write: null}
        bytes:
          description:
            - Bytes the tool says it moved (dd summary line; fio sum of C(io_bytes) over directions; sysbench 0.4/0.5
              operations x block size, prepare its C(bytes written); ioping the size of the counted requests).
            - Null when the tool does not say (sysbench 1.0 runs, bonnie++).
          type: int
          returned: always
          sample: 134217728
        seconds:
          description:
            - The tool's own elapsed time (dd summary line; fio longest direction runtime; sysbench C(total time);
              ioping 1.x the time of the counted requests, 0.x its run time). Null for bonnie++.
          type: float
          returned: always
          sample: 2.73932
        started:
          description: ISO 8601 UTC time the module started the tool; null when parsing only.
          type: str
          returned: always
          sample: "2026-11-22T00:00:00Z"
        finished:
          description: ISO 8601 UTC time the tool exited; null when parsing only.
          type: str
          returned: always
          sample: "2026-11-22T00:00:03Z"
        command:
          description: O(argv) as given; null when parsing only.
          type: list
          elements: str
          returned: always
          sample: [dd, if=/dev/zero, of=/srv/diskproof/d0/diskproof.testfile, bs=1048576, count=128, conv=fdatasync]
        exit_code:
          description: Exit code of the tool; null when parsing only.
          type: int
          returned: always
          sample: 0
        raw_sha256:
          description: SHA-256 of the exact raw text parsed (stdout followed by stderr for O(argv) runs).
          type: str
          returned: always
          sample: 9f2c3c0c6d0f1bd0f0d4b0c3f1a1e9c0b1d3a2e5f4c6b7a8d9e0f1a2b3c4d5e6
        device_io:
          description: Bytes read and written on C(target.device) during the run (C(/sys/block) sectors x 512); null when unknown.
          type: dict
          returned: always
          sample: {read_bytes: 0, write_bytes: 134221824}
        warnings:
          description:
            - Everything the parser noticed but did not treat as a failure (partial records, fio messages, sysbench
              WARNING lines, bonnie++ C(+++++) figures, ...).
          type: list
          elements: str
          returned: always
          sample: []
        error:
          description: The tool's own error message when it failed, else null. Partial figures may still be set.
          type: str
          returned: always
          sample: null
created:
  description: Paths created by this run (O(creates) when the tool created it); remove them when done.
  returned: always
  type: list
  elements: str
  sample: [/srv/diskproof/d0/diskproof.testfile]
"""

import datetime
import os
import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _blockdev
from ansible_collections.diskproof.fleet.plugins.module_utils._parse import (
    ParseError,
    apply_exit_code,
    error_result,
    join_output,
    make_record,
    parse_output,
    sha256_hex,
    tool_errors,
    version_from_banner,
)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import tool_from_argv

LOCALE_C = {"LANG": "C", "LC_ALL": "C"}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def complete_target(target):
    """The caller's target dict plus the whole-disk device holding target.path (unless given)."""
    completed = dict(target or {})
    if "device" not in completed:
        path = completed.get("path")
        completed["device"] = _blockdev.whole_disk_name(path) if isinstance(path, str) and path else None
    return completed


def read_input(module):
    """Raw bytes of content= or src=."""
    if module.params["content"] is not None:
        return module.params["content"].encode("utf-8", "surrogateescape")
    try:
        with open(module.params["src"], "rb") as handle:
            return handle.read()
    except OSError as error:
        module.fail_json(msg="cannot read src=%s: %s" % (module.params["src"], error))


def drop_caches(module):
    try:
        _blockdev.drop_caches()
    except OSError as error:
        module.fail_json(msg="drop_caches=true but the page cache cannot be dropped (%s: %s); run with become: true "
                             "on a host where /proc/sys is writable" % (_blockdev.DROP_CACHES, error), created=[])


def run_tool(module, device):
    """Run argv (optionally after a cache drop), snapshotting the device counters around it."""
    argv = module.params["argv"]
    binary = module.get_bin_path(argv[0], required=True)
    if module.params["drop_caches"]:
        drop_caches(module)
    measure = module.params["device_io"] is not False
    before = _blockdev.read_stat(device) if measure else None
    started = utc_now()
    # argv[0] stays as given (the tool names itself by it in messages), executable is the resolved path;
    # no ~ or $VAR expansion: the arguments reach the tool exactly as listed.
    rc, stdout, stderr = module.run_command(argv, executable=binary, environ_update=LOCALE_C, encoding=None,
                                            expand_user_and_vars=False)
    finished = utc_now()
    after = _blockdev.read_stat(device) if measure else None
    return {
        "raw": join_output(stdout or b"", stderr or b""),
        "rc": rc,
        "started": started,
        "finished": finished,
        "bin": binary,
        "device_io": _blockdev.stat_delta_bytes(before, after),
        "device_io_wanted": measure,
    }


# How each tool prints its version (bonnie++ has no such option: its CSV carries the version).
VERSION_ARGS = {"ioping": ["-v"], "bonnie": None}


def ask_version(module, binary, tool):
    args = VERSION_ARGS.get(tool, ["--version"])
    if args is None:
        return None
    rc, stdout, stderr = module.run_command([binary] + args, environ_update=LOCALE_C, expand_user_and_vars=False)
    return version_from_banner(stdout or stderr) if rc == 0 else None


def command_text(module):
    return shlex.join(module.params["argv"])


def describe_source(module, run):
    if run is not None:
        return "command: %s (exit code %s)" % (command_text(module), run["rc"])
    if module.params["src"] is not None:
        return "parsed from src=%s" % module.params["src"]
    return "parsed from content="


def parse_results(module, text, run, created):
    """(tool, partial records); a failed run with unparseable output still gives one error record."""
    params = module.params
    try:
        return parse_output(text, params["tool"], params["direction"], params["argv"])
    except ParseError as error:
        if run is not None and run["rc"] != 0:
            argv = params["argv"]
            tool = params["tool"] if params["tool"] != "auto" else tool_from_argv(argv) or os.path.basename(argv[0])
            return tool, [error_result(tool, error)]
        module.fail_json(msg="%s; %s" % (error, describe_source(module, run)), created=created)


def records_for(module, tool, results, run, target, raw):
    common = dict(test=module.params["test"], target=target, params=module.params["params"], raw_sha256=sha256_hex(raw))
    extra_warnings = []
    if run is not None:
        version = None
        if not any(result["tool_version"] for result in results):
            version = ask_version(module, run["bin"], tool)
        common.update(started=run["started"], finished=run["finished"], command=module.params["argv"],
                      exit_code=run["rc"], device_io=run["device_io"], tool_version=version)
        if run["device_io_wanted"] and run["device_io"] is None:
            extra_warnings.append("device_io unknown: no block device for target.path %r" % target.get("path"))
    records = []
    for result in results:
        record = make_record(result, **common)
        record["warnings"].extend(extra_warnings)
        records.append(record)
    return records


def failure_message(module, tool, records, run):
    """None when the tool succeeded, else what failed, the tool's own words and the command."""
    errors = tool_errors(records, run["rc"] if run is not None else None)
    if not errors:
        return None
    if run is None:
        return "%s reported an error: %s; %s" % (tool, " | ".join(errors), describe_source(module, run))
    return "%s failed (exit code %s): %s; command: %s" % (tool, run["rc"], " | ".join(errors), command_text(module))


def check_creates(module):
    creates = module.params["creates"]
    if creates and os.path.lexists(creates):
        module.fail_json(msg="creates=%s exists already: refusing to run over a file this run did not create "
                             "(remove the leftover test file first)" % creates, created=[])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tool=dict(type="str", default="auto", choices=["auto", "dd", "fio", "sysbench", "bonnie", "ioping"]),
            content=dict(type="str"),
            src=dict(type="path"),
            argv=dict(type="list", elements="str"),
            test=dict(type="str"),
            target=dict(type="dict"),
            params=dict(type="dict"),
            direction=dict(type="str", choices=["read", "write", "copy"]),
            creates=dict(type="path"),
            drop_caches=dict(type="bool", default=False),
            device_io=dict(type="bool"),
            fail_on_error=dict(type="bool", default=True),
        ),
        mutually_exclusive=[("content", "src", "argv")],
        required_one_of=[("content", "src", "argv")],
        required_if=[("drop_caches", True, ("argv",)), ("device_io", True, ("argv",))],
        required_by={"creates": "argv"},
        supports_check_mode=True,
    )
    params = module.params
    if params["argv"] is not None and not params["argv"]:
        module.fail_json(msg="argv must name a command: got an empty list", created=[])
    target = complete_target(params["target"])
    run = None
    if params["argv"]:
        if module.check_mode:
            module.exit_json(changed=False, created=[], ansible_facts={"diskproof_results": []},
                             msg="check mode: %s not run" % params["argv"][0])
        check_creates(module)
        run = run_tool(module, target["device"])
        raw = run["raw"]
    else:
        raw = read_input(module)
    created = [params["creates"]] if run is not None and params["creates"] and os.path.lexists(params["creates"]) else []
    text = raw.decode("utf-8", "replace")
    tool, results = parse_results(module, text, run, created)
    records = records_for(module, tool, results, run, target, raw)
    apply_exit_code(records, run["rc"] if run is not None else None, text)
    facts = {"diskproof_results": records}
    message = failure_message(module, tool, records, run)
    if message and params["fail_on_error"]:
        module.fail_json(msg=message, created=created, ansible_facts=facts)
    module.exit_json(changed=run is not None, created=created, ansible_facts=facts)


if __name__ == "__main__":
    main()
