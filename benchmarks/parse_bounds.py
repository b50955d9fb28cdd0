#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bounded input: how long each parser (of a tool's output or of a system source, and tool=auto) takes
on adversarial text, and how that time grows with the size of the text.

bench_facts parses whatever a tool printed, or whatever file src= names, and disk_facts, quiesce and
evidence parse system files and commands (lsblk, smartctl, /proc, systemctl, ...) on every host: a
parser whose time grows faster than its input (regex backtracking, a search restarted at every line)
can hang a host's module for minutes on a few kB of unlucky text. For every parser and every shape
below it prints the CPU seconds of one parse for each size (the best of --repeat; CPU time, so that
other work on the machine does not count) and the growth from the smallest to the largest size: ~10x
for 100 kB -> 1 MB is linear, ~100x is quadratic.

    .venv/bin/python benchmarks/parse_bounds.py                       # 100 kB and 1 MB, every shape
    .venv/bin/python benchmarks/parse_bounds.py --markdown            # one row per parser: its slowest shape
    .venv/bin/python benchmarks/parse_bounds.py --parser auto --shape number_lines --sizes 1000,10000

Exit code 0 when every parser takes at most --target seconds (1.0) for the largest size, 1 when one
does not (or runs out of --timeout). The unit test tests/unit/plugins/module_utils/test_parse_bounds.py
feeds these same shapes to the parsers and asserts the growth; this script only measures.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".ansible", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

from ansible_collections.diskproof.fleet.plugins.module_utils._parse import (  # noqa: E402  (after the path is set)
    blkid, bonnie, cgroup, chronyc, dd, diskstats, fio, fio_text, fstab, ioping, kernel_log, loadavg, lsblk, mdstat,
    meminfo, mountinfo, nvme, nvme_feature, os_release, proc_cgroup, proc_pid_stat, smartctl, swaps, sysbench, sysfs, systemctl,
    timedatectl, tool_version, units, wipefs, write_cache)
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import parse_output  # noqa: E402
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.detect import detect_tool  # noqa: E402
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.errors import ParseError  # noqa: E402

KB = 1000
DEFAULT_SIZES = (100 * KB, 1000 * KB)


def repeat_to(size: int, *pieces: str) -> str:
    """pieces repeated in turn until the text holds at least size characters, cut to size."""
    unit = "".join(pieces)
    return (unit * (size // len(unit) + 1))[:size]


def long_lines(size: int, piece: str, width: int = 64 * 1024) -> str:
    """Lines of width characters made of piece, size characters in all."""
    line = repeat_to(width - 1, piece) + "\n"
    return repeat_to(size, line)


# Real output (tests/fixtures/ioping/ioping13-c10-device.txt, bonnie/bonnie200a-n0-text-csv.txt), repeated.
IOPING_BLOCK = (
    "--- /dev/loop3 (block device 1 GiB) ioping statistics ---\n"
    "9 requests completed in 987.0 us, 36 KiB read, 9.12 k iops, 35.6 MiB/s\n"
    "generated 10 requests in 9.00 s, 40 KiB, 1 iops, 4.44 KiB/s\n"
    "min/avg/max/mdev = 29.4 us / 109.7 us / 143.9 us / 37.9 us\n")
BONNIE_CSV = ("1.98,2.00a,lab-loop3,1,1795324197,128M,,8192,5,1589,90,19287,5,20295,0,2470,86,21766,0,317.3,2,,,,,,,,,,"
              ",,,,,,,,8510us,4080us,89082us,10887us,101ms,105ms,,,,,,")


# Real fio normal and terse output (tests/fixtures/fio/fio333-normal-randrw-70-30.txt, shortened; fio333-terse-v3.txt)
FIO_TEXT_JOB = (
    "randrw-70-30: (groupid=0, jobs=1): err= 0: pid=23195: Wed Nov 25 23:38:35 2026\n"
    "  read: IOPS=8462, BW=33.1MiB/s (34.7MB/s)(66.1MiB/2001msec)\n"
    "    clat (usec): min=33, max=14568, avg=101.24, stdev=415.41\n"
    "     lat (usec): min=33, max=14568, avg=101.27, stdev=415.41\n"
    "    clat percentiles (usec):\n"
    "     |  1.00th=[   37],  5.00th=[   39], 10.00th=[   40], 20.00th=[   42],\n"
    "     | 99.00th=[ 1876], 99.50th=[ 2835], 99.90th=[ 5932], 99.95th=[ 7504],\n"
    "  write: IOPS=3592, BW=14.0MiB/s (14.7MB/s)(28.1MiB/2001msec); 0 zone resets\n"
    "    clat (nsec): min=1952, max=61132, avg=3431.43, stdev=2396.06\n"
    "     issued rwts: total=16934,7188,0,0 short=0,0,0,0 dropped=0,0,0,0\n"
    "fio: pid=1, err=7/file:io_u.c:1845, func=io_u error, error=x\n")
FIO_TERSE_LINE = ("3;fio-3.33;randread-terse;0;0;50820;50769;12692;1001;0;0;0.000000;0.000000;24;11119;76.893548;"
                  "278.615815;" + "50.000000%=45;" * 20 + "24;11119;76.912500;278.619539;" + "0;" * 5 + "0;0;0;0;"
                  + "0;0;0.000000;0.000000;" * 2 + "0%=0;" * 20 + "0;0;0.000000;0.000000;" + "0;" * 5 + "1%;" * 34
                  + "vda;1;2;3;4;5;6;7;8%\n")


def fio_jobs_and_noise(size: int) -> str:
    """fio messages (half the text), then one JSON object of failed jobs (error 5, no err=5 line)."""
    noise = repeat_to(size // 2, "fio: pid=1, err=7/file:io_u.c:1845, func=io_u error, error=x\n")
    noise = noise[:noise.rindex("\n") + 1]
    job = ('{"jobname": "j", "groupid": 0, "error": 5, "read": {"io_bytes": 0, "runtime": 0, "iops": 0}, '
           '"write": {"io_bytes": 0, "runtime": 0, "iops": 0}}')
    jobs = ",\n".join([job] * max(1, (size - len(noise)) // (len(job) + 2)))
    return noise + '{\n"fio version" : "fio-3.33",\n"jobs" : [\n' + jobs + "\n]\n}\n"


# Lines of the system sources: from tests/fixtures/{discover,quiesce,evidence} where there is one (lsblk and
# journalctl shortened), else as the unit tests of the parser have them.
SYSTEM_LINES = (
    "175 174 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534\n",
    "   7       0 loop0 63551 4 5664934 9356 6586 2021 6330256 12008 0 4108 21385 22 0 23068760 0 694 20\n",
    "Personalities : [linear] [multipath] [raid0] [raid1] [raid6] [raid5] [raid4] [raid10] \n",
    "md127 : active raid1 sdc1[0] sdc2[1]\n",
    "      52395008 blocks super 1.2 [2/2] [UU]\n",
    "      [==========>..........]  resync = 50.4% (26409536/52395008) finish=6.4min speed=67648K/sec\n",
    "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
    "/dev/loop2p2                            partition\t31740\t\t31740\t\t-2\n",
    "1.62 1.00 1.22 3/115 27930\n",
    "MemTotal:       16315444 kB\n",
    "DEVNAME=/dev/loop1\n", "UUID=520f938e-c205-4857-92f0-787e39468302\n", "TYPE=ext4\n",
    "Reference ID    : AB42617E (srcf-ntp.stanford.edu)\n",
    "System time     : 0.000669840 seconds slow of NTP time\n",
    "26990 (cat) R 26837 26837 18080 0 -1 4194304 121 0 0 0 0 0 0 0 20 0 1 0 270611 3133440 418\n",
    "usage_usec 151239906\n", "9:name=systemd:/init.scope\n", "0::/init.scope\n",
    "Id=cron.service\n", "ActiveState=active\n",
    "TimersCalendar={ OnCalendar=Mon *-*-* 00:00:00 ; next_elapse=(null) }\n",
    "NTPSynchronized=no\n", 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
    "UUID=520f938e-c205-4857-92f0-787e39468302 / ext4 errors=remount-ro 0 1\n",
    "[  12.269410] nvme0n1: p1 p2\n", "none [mq-deadline] kyber bfq\n", "/tmp/lab/disk0.img (deleted)\n",
    " write-caching =  1 (on)\n", "WCE           0  [cha: y]\n",
    "get-feature:0x06 (Volatile Write Cache), Current value:0x00000001\n",
    "dd (coreutils) 9.1\n", "fio-3.33\n",
)
LSBLK_DEVICE = ('{"kname": "loop0", "name": "loop0", "maj:min": "7:0", "type": "loop", "size": 1073741824, '
                '"mountpoints": [null], "children": []}')
LSBLK_NESTED = '{"kname": "md0", "maj:min": "9:0", "type": "raid1", "mountpoints": [null], "children": ['
JOURNAL_ENTRY = ('{"_SOURCE_MONOTONIC_TIMESTAMP":"12269410034","_TRANSPORT":"kernel","MESSAGE":"nvme0n1: p1 p2",'
                 '"PRIORITY":"6","__MONOTONIC_TIMESTAMP":"12269416071"}')


# Adversarial shapes: each a function of the wanted size. Near misses of every tool's own lines
# make the parsers and tool=auto try (and backtrack over) the most.
SHAPES: Dict[str, Callable[[int], str]] = {
    # the case: lines of 10 integers (an ioping -B raw line) and one line that is not
    "number_lines": lambda size: repeat_to(size - 2, "1 2 3 4 5 6 7 8 9 10\n") + "\nx",
    "number_lines_11": lambda size: repeat_to(size - 2, "10 20 30 40 50 60 70 80 90 100 110\n") + "\nx",
    "digits_dots": lambda size: long_lines(size, "1.22.333.4444.0,5e"),
    "digit_run": lambda size: "9" * size,
    "spaced_digits_one_line": lambda size: repeat_to(size, "0 "),
    "key_value": lambda size: long_lines(size, "request=1 time=2 err=3/ bs=4k iodepth=1 ", width=4096),
    "whitespace": lambda size: repeat_to(size - 1, " \t\n", "\r\n", "   \n\n") + "x",
    "dd_near_miss": lambda size: repeat_to(
        size, "1048576 bytes (1.0 MB, 1.0 MiB) copied, 0,5.5 s, 2.1 GB/\n", "12+0 records in\n",
        "0 bytes transferred in 1 secs (\n", "1 bytes (((1 kB) copied, 1 s, 1 kB/s\n", "dd: \n"),
    # shell transcripts: dd command lines (dd reads each as the next run's command), chained and quoted
    "dd_commands": lambda size: repeat_to(
        size, "$ sync; dd if=/dev/zero of=t bs=1M count=1; sync\n", "+ dd if=a of=b iflag=direct\n",
        "user@h:~$ sudo sh -c \"dd if='/a b' of=/dev/null\" | dd of=c 2>&1 < d\n", "1+0 records in\n",
        "dd " + "if=x " * 2000 + "\n", 'dd if=" ;dd ' * 3000 + "\n", "dd 'if=" + "x" * 20000 + "\n"),
    # one line of dd words, each ending its command: the rest of the line must not be copied per word
    "dd_words_one_line": lambda size: repeat_to(size - 1, "dd if=a;", "dd \"", " dd '") + "x",
    "fio_near_miss": lambda size: repeat_to(
        size, '{"fio version" : "fio-3.33", "jobs" : [\n', '  "jobs" :\n', "fio: pid=1, err=5/file:io_u.c\n"),
    "sysbench_near_miss": lambda size: repeat_to(
        size, "sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta2)\n", "Operations performed:  1 Read, 2 Write, \n",
        "File operations:\n", "    reads/s:  \n", "Latency (ms):\n", "         min: 1.2.3\n"),
    "bonnie_near_miss": lambda size: repeat_to(
        size, "Version  2.00a       ------Sequential Output------ --Sequential Input- --Random-\n",
        "Name:Size etc        /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP\n",
        "host 4G " + "1 2 " * 40 + "\n", "2.00a,2.00a," + "," * 47 + "x\n", "1.97,1.97" + ",1" * 46 + "\n"),
    "ioping_near_miss": lambda size: repeat_to(
        size, "4 KiB <<< /dev/sda (block device 1 GiB): request=1 time=\n",
        "--- /dev/sda (block device 1 GiB) ioping statistics \n",
        "9 requests completed in 987.0 us, 36 KiB read, 9.12 k iops,\n", "min/avg/max/mdev = 1 us / 2 us /\n"),
    "nested_brackets": lambda size: repeat_to(size, "{[(" * 20 + "\n", '{"a":[\n', "((((((((\n"),
    # closed JSON objects nested 30 deep, each at a line start: every one of them can be decoded
    "json_nested_objects": lambda size: repeat_to(size, '{"a":\n' * 30 + "1" + "}" * 30 + "\n"),
    "json_junk": lambda size: repeat_to(size, '{"jobs": [{"read": {"io_bytes": 1, "x": [1, 2, {"y": "\n'),
    "huge_line": lambda size: repeat_to(size, "1 bytes (1 kB) copied, 1 s, ( request=1 {\"jobs\": [ 12+0 "),
    "rate_letters": lambda size: "1 bytes copied, 1 s, " + "a" * (size - 21),
    # counts of more digits than any counter has (int() refuses more than 4300)
    "long_numbers": lambda size: repeat_to(
        size, "9" * 5000 + "+0 records in\n",
        "Operations performed:  " + "9" * 5000 + " Read, 0 Write, 0 Other = 0 Total\n",
        "9" * 5000 + " bytes written in 1.00 seconds (1.00 MiB/sec).\n", "sysbench " + "1." * 3000 + "x y\n"),
    # many runs and many messages: a message repeated into every run's warnings is quadratic
    "ioping_blocks_messages": lambda size: repeat_to(size, IOPING_BLOCK, "ioping: message\n" * 10),
    "bonnie_csv_errors": lambda size: repeat_to(size, BONNIE_CSV + "\n", "Can't write block.\n" * 10),
    "fio_jobs_noise": fio_jobs_and_noise,
    # fio normal and terse output: many jobs (each its messages), and near misses of their lines
    "fio_text_jobs": lambda size: repeat_to(size, FIO_TEXT_JOB),
    "fio_terse_lines": lambda size: repeat_to(size, FIO_TERSE_LINE),
    "fio_text_near_miss": lambda size: repeat_to(
        size, "x: (groupid=0, jobs=1): err= 0: pid=1\n", "  read: IOPS=1, BW=(1)(((((((\n",
        "  read : io=1KB, bw=, iops=1 , runt=1\n", "    clat (usec): min=1k, max=\n",
        "    clat percentiles (usec):\n", "     | " + "1.00th=[" * 200 + "\n", "     | " + "9" * 3000 + "th=[1]\n",
        " " * 5000 + "x: (groupid=\n", "Run status group 0 (all jobs):\n", "   READ: bw=" + ", io=1" * 300 + "\n"),
    # system files and commands (SYSTEM_LINES), repeated whole
    "system_lines": lambda size: repeat_to(size, *SYSTEM_LINES),
    # the same lines cut short: every field a parser looks for is there but the last
    "system_near_miss": lambda size: repeat_to(size, *(line[:len(line) * 2 // 3] + "\n" for line in SYSTEM_LINES)),
    # systemctl show of a timer with ever more triggers: one key on every line (each value kept, one per line)
    "systemctl_one_key": lambda size: repeat_to(size, "TimersCalendar={ OnCalendar=daily ; next_elapse=n/a }\n"),
    # lsblk, smartctl, nvme-cli, wipefs and journalctl JSON: one document of many entries, and one line per entry
    "json_devices": lambda size: '{"blockdevices": [' + ",\n".join([LSBLK_DEVICE] * (size // (len(LSBLK_DEVICE) + 2)))
    + "]}",
    "json_entry_lines": lambda size: repeat_to(size, JOURNAL_ENTRY + "\n", '{"signatures": [{"device": "x"}]}\n'),
    # lsblk children nested ever deeper on one line until the text ends: JSON too deep for the decoder's
    # recursion (a RecursionError of json must end as a ParseError)
    "json_nested_children": lambda size: '{"blockdevices": [' + repeat_to(size - 19, LSBLK_NESTED),
}


def _each(*calls: Callable[[str], object]) -> Callable[[str], None]:
    """A source with several entry points: each one on the whole text; a ParseError ends only its own call."""
    def parse(text: str) -> None:
        for call in calls:
            try:
                call(text)
            except ParseError:
                pass
    return parse


# The units helpers on the whole text as one token (the parsers hand them regex groups).
_units = _each(lambda text: units.parse_decimal(text, "units", "line"),
               lambda text: units.parse_unsigned(text, "units", "line"),
               units.decimal_places)


PARSERS: Dict[str, Callable[[str], object]] = {
    "dd": dd.parse,
    "fio": fio.parse,
    "fio_text": fio_text.parse,
    "sysbench": sysbench.parse,
    "bonnie": bonnie.parse,
    "ioping": ioping.parse,
    "units": _units,
    "detect": detect_tool,
    "auto": lambda text: parse_output(text, "auto"),
    # the system sources the host modules read (one parser file each under module_utils/_parse/)
    "lsblk": lsblk.parse_lsblk,
    "smartctl": _each(smartctl.parse_smartctl, lambda text: smartctl.smartctl_result(4, text, text)),
    "nvme": _each(nvme.parse_nvme_smart_log, lambda text: nvme.nvme_result(0, text, text)),
    "wipefs": wipefs.parse_wipefs_json,
    "blkid": _each(lambda text: blkid.blkid_result(0, text, ""), lambda text: blkid.blkid_result(2, "", text)),
    "diskstats": _each(diskstats.parse_diskstats, diskstats.parse_block_stat),
    "mdstat": mdstat.parse_mdstat,
    "mountinfo": _each(mountinfo.parse_mountinfo, mountinfo.cgroup2_mount),
    "swaps": swaps.parse_swaps,
    "fstab": _each(fstab.parse_fstab, fstab.fstab_spec),
    "nvme_feature": _each(lambda text: nvme_feature.feature_value(text, nvme_feature.FEATURE_POWER_MANAGEMENT)),
    "sysfs": _each(sysfs.parse_scheduler, sysfs.link_speed_gts, sysfs.link_width, sysfs.loop_backing_file,
                   sysfs.whole_number, sysfs.signed_number, sysfs.flag, sysfs.write_cache_mode, sysfs.sata_link_gbps,
                   sysfs.text_attribute,
                   lambda text: sysfs.vpd_unit_serial(text.encode("utf-8", "surrogateescape"))),
    "meminfo": meminfo.parse_meminfo,
    "loadavg": loadavg.parse_loadavg,
    "cgroup": cgroup.parse_cpu_stat,
    "proc_cgroup": proc_cgroup.parse_proc_cgroup,
    "proc_pid_stat": _each(proc_pid_stat.fields_after_command, proc_pid_stat.parse_proc_stat),
    "systemctl": _each(systemctl.parse_systemctl_show, systemctl.parse_list_units, systemctl.timer_entries,
                       systemctl.parse_systemd_time, systemctl.parse_timespan),
    "timedatectl": _each(timedatectl.parse_timesync_status, timedatectl.parse_timedatectl_show),
    "chronyc": _each(chronyc.chronyc_unsynchronised, chronyc.parse_chronyc_tracking),
    "kernel_log": _each(lambda text: kernel_log.dmesg_lines(text, "nvme0n1"),
                        lambda text: kernel_log.dmesg_lines(text, "sda"), kernel_log.journal_kernel_text),
    "os_release": os_release.parse_os_release,
    "tool_version": _each(lambda text: tool_version.parse_tool_version("fio", text, text),
                          lambda text: tool_version.parse_tool_version("bonnie++", "", text),
                          tool_version.version_tuple),
    "write_cache": _each(write_cache.parse_hdparm_write_cache, write_cache.parse_sdparm_wce,
                         write_cache.parse_nvme_volatile_write_cache),
}


class TimedOut(Exception):
    """A parse that used more CPU time than its timeout (raised from SIGPROF: re and Python code stop)."""


def _expired(_signum, _frame):
    raise TimedOut()


def parse_seconds(parser: Callable[[str], object], text: str, timeout: Optional[float] = None) -> float:
    """CPU seconds one parse of text took (ParseError is a normal outcome); TimedOut after timeout CPU
    seconds. Anything but ParseError escapes: a parser must not raise anything else."""
    previous = None
    if timeout:
        previous = signal.signal(signal.SIGPROF, _expired)
        signal.setitimer(signal.ITIMER_PROF, timeout)
    # thread_time, not process_time: with a process CPU timer armed, Linux advances the process clock
    # only at scheduler ticks (a 3 ms parse often reads as 0).
    started = time.thread_time()
    try:
        parser(text)
    except ParseError:
        pass
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)
    return time.thread_time() - started


def best_seconds(parser: Callable[[str], object], text: str, repeat: int, timeout: Optional[float] = None) -> float:
    """The fastest of repeat parses: the least disturbed by other work on the machine."""
    return min(parse_seconds(parser, text, timeout) for _attempt in range(repeat))


def measure(parsers: Sequence[str], shapes: Sequence[str], sizes: Sequence[int], repeat: int,
            timeout: float) -> List[dict]:
    rows = []
    for shape in shapes:
        texts = {size: SHAPES[shape](size) for size in sizes}
        for name in parsers:
            row = {"parser": name, "shape": shape, "seconds": {}, "error": None}
            for size in sizes:
                try:
                    row["seconds"][size] = best_seconds(PARSERS[name], texts[size], repeat, timeout)
                except TimedOut:
                    row["seconds"][size] = None
                    break  # a larger size would time out too
                except Exception as error:  # pylint: disable=broad-except  # a parser bug: shown, not fatal here
                    row["seconds"][size] = None
                    row["error"] = "%s: %s" % (type(error).__name__, str(error)[:80])
                    break
            rows.append(row)
            print(_line(row, sizes), file=sys.stderr, flush=True)
    return rows


def _growth(row: dict, sizes: Sequence[int]) -> Optional[float]:
    first, last = row["seconds"].get(sizes[0]), row["seconds"].get(sizes[-1])
    if not first or last is None:
        return None
    return last / first


def _cell(seconds: Optional[float], timeout: float, error: Optional[str] = None) -> str:
    if error:
        return "raised " + error.split(":")[0]
    return "> %g (timeout)" % timeout if seconds is None else "%.4f" % seconds


def _line(row: dict, sizes: Sequence[int], timeout: float = 0) -> str:
    cells = ["%s=%s" % (_size_name(size), _cell(row["seconds"].get(size, None), timeout, row.get("error")))
             for size in sizes if size in row["seconds"]]
    growth = _growth(row, sizes)
    return "%-9s %-23s %s%s" % (row["parser"], row["shape"], "  ".join(cells),
                                "  growth x%.1f" % growth if growth is not None else "")


def _size_name(size: int) -> str:
    return "%g kB" % (size / KB) if size < 1000 * KB else "%g MB" % (size / KB / 1000)


def markdown(rows: List[dict], sizes: Sequence[int], timeout: float) -> str:
    """One row per parser: its slowest shape at the largest size (every parser x shape is in --json and the
    plain output; a page of 1,000 rows says less than which shape costs each parser most)."""
    head = "| parser | slowest shape | " + " | ".join("CPU s, %s" % _size_name(size) for size in sizes) + \
        " | growth | shapes |"
    lines = [head, "|" + "---|" * (len(sizes) + 4)]
    by_parser: Dict[str, List[dict]] = {}
    for row in rows:
        by_parser.setdefault(row["parser"], []).append(row)
    for parser_name, parser_rows in by_parser.items():
        # a timeout or an error (no figure) is the slowest there is
        row = max(parser_rows, key=lambda item: (item["seconds"].get(sizes[-1]) is None, item["seconds"].get(sizes[-1]) or 0))
        growth = _growth(row, sizes)
        cells = [_cell(row["seconds"].get(size), timeout, row["error"]) if size in row["seconds"] else "-"
                 for size in sizes]
        growth_text = "x%.1f" % growth if growth is not None else "-"
        lines.append("| %s | %s | %s | %s | %d |" % (
            parser_name, row["shape"], " | ".join(cells), growth_text, len(parser_rows)))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--parser", action="append", choices=sorted(PARSERS), help="default: all")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="default: all")
    parser.add_argument("--sizes", default=",".join(str(size) for size in DEFAULT_SIZES),
                        help="characters of text, comma-separated, smallest first (default 100000,1000000)")
    parser.add_argument("--repeat", type=int, default=3, help="parses per figure, the fastest counts (default 3)")
    parser.add_argument("--timeout", type=float, default=60.0, help="CPU seconds before one parse is given up (60)")
    parser.add_argument("--target", type=float, default=1.0, help="CPU seconds allowed for the largest size (1.0)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    rows = measure(args.parser or list(PARSERS), args.shape or list(SHAPES), sizes, args.repeat, args.timeout)
    if args.markdown:
        print(markdown(rows, sizes, args.timeout))
    else:
        print("\n".join(_line(row, sizes, args.timeout) for row in rows))
    slow = [row for row in rows if row["seconds"].get(sizes[-1]) is None or row["seconds"][sizes[-1]] > args.target]
    measured = [row["seconds"][sizes[-1]] for row in rows if row["seconds"].get(sizes[-1]) is not None]
    print("%s: slowest %.4f CPU s for %s (target %.2f s); %d of %d over the target, timed out or raised" % (
        "PASS" if not slow else "FAIL", max(measured, default=0.0), _size_name(sizes[-1]), args.target, len(slow),
        len(rows)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"sizes": sizes, "rows": rows}, handle, indent=1)
    return 0 if not slow else 1


if __name__ == "__main__":
    sys.exit(main())
