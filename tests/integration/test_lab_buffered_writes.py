"""A lab whose SPEC says `buffered_writes: one_at_a_time` models a rack for buffered writes: one host's
`dd conv=fdatasync` waits until no other host of the lab runs one (tools/labkit/lab-dd, bound over /usr/bin/dd
inside each host; docs/lab.md, "Buffered writes"), because every lab host shares this machine's page cache and
writeback and a rack's hosts do not.

Real lab (lbw_lab.yml: two SysV hosts and a systemd one, 64 MiB/s disks), real dd over the lab's ssh. Proves, on
both inits: three buffered writes started together end one after the other (each takes its full time, none
overlaps another), while three O_DIRECT writes started together run side by side; `dd --version` and reads are
the real dd; and a lab with the default, `buffered_writes: together`, has the machine's dd, untouched. Root only.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Tuple

import pytest
import yaml

from labhelpers import needs_root, on_host, running_lab

SPEC = Path(__file__).resolve().parent / "lbw_lab.yml"
LAB = "lbw"
HOSTS = ("lbw-n01", "lbw-n02", "lbw-n03")
MIB = 1 << 20
WRITE_BYTES = 128 * MIB                  # at most the host's memory figure: a smaller dirty limit slows buffered writes
THROTTLE = 64 * MIB                      # lbw_lab.yml
ONE_WRITE_S = WRITE_BYTES / THROTTLE     # 2 s at the throttle

pytestmark = needs_root


@pytest.fixture(scope="module")
def lbw():
    with running_lab(LAB, SPEC, services=()):
        yield


def timed_dd(flags: str) -> str:
    """A shell command: the wall-clock start and end of one dd into the host's disk (this machine's one clock,
    so the hosts' times compare), then dd's own last line."""
    return ("s=$(date +%%s.%%N); dd if=/dev/zero of=/srv/diskproof/d0/lbw.file bs=1M count=%d %s 2>/tmp/lbw.err; "
            "rc=$?; e=$(date +%%s.%%N); rm -f /srv/diskproof/d0/lbw.file; echo \"$rc $s $e\"; cat /tmp/lbw.err"
            % (WRITE_BYTES // MIB, flags))


def at_once(command: str) -> Dict[str, Tuple[float, float, str]]:
    """The command on every host at the same moment: {host: (start, end, dd's summary)}. dd's stderr is its own
    three lines, nothing of the stand-in's (the product parses it)."""
    with ThreadPoolExecutor(max_workers=len(HOSTS)) as pool:
        results = dict(zip(HOSTS, pool.map(lambda host: on_host(LAB, host, command), HOSTS)))
    timed = {}
    for host, result in results.items():
        lines = result.stdout.splitlines()
        assert result.returncode == 0 and lines and lines[0].split()[0] == "0", (host, result.stdout, result.stderr)
        assert len(lines) == 4 and lines[1].endswith("records in") and lines[2].endswith("records out"), lines
        _rc, start, end = lines[0].split()
        timed[host] = (float(start), float(end), lines[-1])
    return timed


def test_buffered_writes_of_the_lab_hosts_run_one_at_a_time(lbw):
    timed = at_once(timed_dd("conv=fdatasync"))
    ends = sorted(end for _start, end, _summary in timed.values())
    starts = [start for start, _end, _summary in timed.values()]
    # One after the other: each write ends at least most of one write's time after the one before it (a
    # write that ran beside another would end within a fraction of a second of it).
    gaps = [later - earlier for earlier, later in zip(ends, ends[1:])]
    assert min(gaps) > 0.8 * ONE_WRITE_S, timed
    assert ends[-1] - min(starts) > 0.8 * len(HOSTS) * ONE_WRITE_S, timed
    # dd's own timing starts after the wait: every host's figure is of its own write (timed with the wait, the
    # last of three would read a third of the throttle at best). Not an accuracy check (this file runs beside
    # others, and a busy machine slows buffered writes): benchmarks/lab_writes.py measures that, alone.
    for host, (_start, _end, summary) in timed.items():
        rate = WRITE_BYTES / float(summary.split(", ")[2].split()[0])
        assert 0.5 * THROTTLE < rate < 1.02 * THROTTLE, (host, summary)


def test_direct_writes_and_reads_are_not_held(lbw):
    timed = at_once(timed_dd("oflag=direct"))
    ends = [end for _start, end, _summary in timed.values()]
    starts = [start for start, _end, _summary in timed.values()]
    # Side by side: all three together take about one write's time, not three.
    assert max(ends) - min(starts) < 2 * ONE_WRITE_S, timed
    for host in HOSTS:
        shown = on_host(LAB, host, "head -c 2 /usr/bin/dd; echo; dd --version | head -n 1; "
                                   "dd if=/proc/version of=/dev/null 2>&1 | tail -n 1")
        lines = shown.stdout.splitlines()
        assert lines[0] == "#!", (host, shown.stdout, shown.stderr)       # the lab's stand-in in front
        assert lines[1].startswith("dd (coreutils)"), (host, shown.stdout)  # the real dd answers
        assert "copied" in lines[-1], (host, shown.stdout)


def test_a_lab_whose_buffered_writes_meet_the_default_has_the_machines_dd(tmp_path):
    spec = yaml.safe_load(SPEC.read_text())
    del spec["buffered_writes"]      # the default: together
    spec.update(name="lbwt", subnet="10.231.83.0/24", hosts=[{"name": "lbwt-n01"}])
    path = tmp_path / "lbwt.yml"
    path.write_text(yaml.safe_dump(spec))
    with running_lab("lbwt", path, services=()):
        shown = on_host("lbwt", "lbwt-n01", "head -c 4 /usr/bin/dd | od -An -c; ls /run/diskproof-lab 2>&1 | head -n 1")
    assert shown.stdout.split()[:4] == ["177", "E", "L", "F"], shown.stdout
    assert "No such file" in shown.stdout
