#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_facts
short_description: Parse dd, fio, sysbench, bonnie++ or ioping output into exact result records
version_added: 0.1.0
description:
  - Turns the output of C(dd), C(fio), C(sysbench) (fileio), C(bonnie++) or C(ioping), captured before (O(content) or
    O(src)), into result records (schema 1, see C(docs/architecture.md)) with every figure in SI base units - bytes,
    bytes per second, operations per second, nanoseconds, seconds. C(docs/parsers.md) lists every output format
    understood and its units.
  - Read-only - nothing is run, written or changed on the host. M(diskproof.fleet.bench_run) runs the tools (the
    benchmark role's job runner) and parses their output the same way.
  - dd rates are the byte count divided by the elapsed seconds of dd's summary line, never the rounded rate dd
    prints. GNU coreutils (any locale, decimal commas included), busybox (binary units), BSD/macOS and
    coreutils 5 output are understood; several runs in one text give one record each; C(status=progress)
    updates are never taken as the result.
  - fio output is best JSON (C(--output-format=json) or C(json+)), fio 2.x or 3.x, including C(--client) runs
    (one record per client; the C(All clients) aggregate is skipped). Without JSON, fio's normal (human-readable,
    fio 2.0 to 3.x) and terse (C(--minimal), versions 2 to 5) output are read too, with a warning that their
    figures are rounded (bytes per second = the printed io / runtime). One record per job. Latency figures are
    the completion latency (C(clat)) mean, min, p50, p95, p99, p99.9, p99.99, max and standard deviation in ns; when fio
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
  content:
    description:
      - Raw output to parse (stdout and stderr of the tool as captured). Nothing is run.
      - Exactly one of O(content) and O(src) is required.
    type: str
  src:
    description:
      - Path on the managed host of a file holding raw tool output to parse. Nothing is run.
      - It must be a regular file (a symlink to one is fine) of at most O(src_max_bytes); a directory, FIFO,
        device or socket is refused before it is read.
    type: path
  src_max_bytes:
    description:
      - Largest O(src) file read, in bytes (default 64 MiB); a larger file is refused, never read in part.
      - Only used with O(src).
    type: int
    default: 67108864
extends_documentation_fragment:
  - diskproof.fleet.bench_records
  - diskproof.fleet.attributes
  - diskproof.fleet.attributes.facts
  - diskproof.fleet.attributes.facts_module
notes:
  - Parsing is always C(changed=false).
  - The C(device) of O(target) comes from Linux C(/sys); elsewhere it is null.
seealso:
  - module: diskproof.fleet.bench_run
    description: Runs the tool (repeats, cache drop, device counters, cleanup) and returns the same records.
  - name: diskproof result records (schema 1)
    description: The record layout every result follows, in C(docs/architecture.md) of the collection.
    link: https://github.com/diskproof/fleet/blob/main/docs/architecture.md
"""

EXAMPLES = r"""
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
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: always
  type: dict
  contains:
    diskproof_results:
      description:
        - One result record per dd run or fio job found in the output, in order (schema 1).
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
            - Version from the output (fio, sysbench banner, bonnie++ CSV or text table); null when the output does
              not say.
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
              C(latency_ns.write) (each null or a dict of C(mean), C(min), C(p50), C(p95), C(p99), C(p99_9), C(p99_99),
              C(max), C(stdev) in ns, in that order; any of them null when the tool does not print it), and
              C(latency_ns.sync), the same dict of a fio job's fsync/fdatasync latency (null for every other record).
            - fio fills them all from C(clat) (C(stdev) is fio's C(stddev)); sysbench C(min), C(mean), C(max) and the
              one percentile it prints (C(stdev) null); ioping C(min), C(mean), C(max) and C(stdev) (its C(mdev)).
            - bonnie++ - C(write_bytes_per_s) is block output, C(read_bytes_per_s) block input, C(read_iops) random
              seeks, the latencies are C(max) only (bonnie++ reports the worst latency of each test).
            - A direction the test did not exercise is null, and so is a figure the tool could not measure
              (bonnie++ C(+++++)).
            - A dd record also has C(transfer_bytes_per_s), bytes / seconds whatever the direction (null when seconds
              is 0), so the figure is kept even when O(direction) is unknown.
          type: dict
          returned: always
          sample:
            read_bytes_per_s: null
            write_bytes_per_s: 48996732.035687685
            read_iops: null
            write_iops: null
            fsyncs_per_s: null
            latency_ns: {read: null, write: null, sync: null}
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
          description: Null - nothing was run (M(diskproof.fleet.bench_run) sets it).
          type: str
          returned: always
          sample: null
        finished:
          description: Null - nothing was run.
          type: str
          returned: always
          sample: null
        command:
          description: Null - nothing was run.
          type: list
          elements: str
          returned: always
          sample: null
        exit_code:
          description: Null - nothing was run.
          type: int
          returned: always
          sample: null
        raw_sha256:
          description: SHA-256 of the exact raw text parsed.
          type: str
          returned: always
          sample: 9f2c3c0c6d0f1bd0f0d4b0c3f1a1e9c0b1d3a2e5f4c6b7a8d9e0f1a2b3c4d5e6
        device_io:
          description: Bytes read and written on C(target.device) during a run; null when parsing (nothing ran).
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
        integrity:
          description:
            - A fio job run with C(verify=) - what read back as written. C(check) (fio's verify method),
              C(verified_bytes), C(bad_blocks_total), C(kinds) (count per kind - C(flipped), C(misplaced), C(stale),
              C(not_written), C(unclassified)) and C(bad_blocks), the first 64, each C(offset), C(length), C(check),
              C(kind) and C(detail) (fio's own words). Null for every other record.
            - A job whose only error is fio's EILSEQ of those verify failures keeps C(error) null - the bad blocks
              are the finding, and the report calls the record C(corrupt).
          type: dict
          returned: always
          sample: null
created:
  description: Always empty - nothing is created (kept so that both modules return the same keys).
  returned: always
  type: list
  elements: str
  sample: []
elapsed_s:
  description: Wall-clock seconds the module spent on the task.
  returned: always
  type: float
  sample: 63.482911
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.diskproof.fleet.plugins.module_utils import _results


def main():
    started = time.monotonic()
    module = AnsibleModule(
        argument_spec=dict(
            _results.record_options(),
            content=dict(type="str"),
            src=dict(type="path"),
            src_max_bytes=dict(type="int", default=67108864),
        ),
        mutually_exclusive=[("content", "src")],
        required_one_of=[("content", "src")],
        supports_check_mode=True,
    )
    _results.finish(module, started, lambda: _results.parse_only(module.params))


if __name__ == "__main__":
    main()
