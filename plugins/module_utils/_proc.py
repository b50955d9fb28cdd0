# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a benchmark command so that a cancel leaves nothing running: the host side of "Cancel is clean".

ansible-core's ``run_command`` starts the tool in the module's own process group and does not kill it
when the module is interrupted, so a cancelled job left dd writing into a removed run directory. Here:

* the command runs in a session (and process group) of its own, so the group can be killed as a
  whole (fio's job processes, anything a tool forks) and nothing sent to the module's group hits it;
* the child asks the kernel for SIGKILL when the module dies (``PR_SET_PDEATHSIG``): the safety net
  when the module itself is SIGKILLed and cannot clean up;
* while it runs, stdout and stderr are collected with ``poll``, and "watch" descriptors are polled
  too: the module's stdout is the pipe to sshd, and when the controller goes away (ansible-playbook
  cancelled, its ssh client killed) sshd closes the read end of that pipe, which ``poll`` reports as
  ``POLLERR`` on the module's side - the module gets no signal at all in that case;
* whatever interrupts the wait (that hangup, or an exception a signal handler raises), the group gets
  SIGTERM, a short grace, then SIGKILL, and is reaped before the exception goes on to the caller's
  teardown.

Linux-first (``/proc``, ``prctl``), stdlib only, no Ansible imports: tests reach it with real processes.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import select
import shlex
import signal
import stat
import subprocess
import time
from typing import Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ._parse.proc_pid_stat import fields_after_command

PR_SET_PDEATHSIG = 1
# How long a process group gets to end after SIGTERM before SIGKILL, and to be gone after SIGKILL.
TERM_GRACE_S = 1.0
KILL_WAIT_S = 10.0
POLL_INTERVAL_S = 0.1
# The signals the module turns into a cancel; a child starts with their default action again.
CANCEL_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# A command that reads a disk (wipefs, blkid, smartctl, nvme) can block for minutes on a failing one (command
# timeouts and retries in the kernel): ``probe`` stops it after this, and the modules report the disk as not probed.
DISK_PROBE_TIMEOUT_S = 60.0
HANGUP_EVENTS = select.POLLERR | select.POLLHUP | select.POLLNVAL
# Each of a command's streams is kept up to this many bytes: its first half and its last half, the middle left out
# with a line that says how much. A disk that fails fio's verify everywhere makes fio print about 5 lines per bad
# block (400 bytes per 4 KiB block: 100 GB for a 1 TB disk), which must not take the host's memory.
OUTPUT_LIMIT_BYTES = 64 << 20
READ_EVENTS = select.POLLIN | select.POLLPRI | HANGUP_EVENTS


class ControllerGone(Exception):
    """A watched descriptor hung up (the controller went away); the process group is already killed and reaped."""


class TimedOut(Exception):
    """The command ran past its time limit; the process group is already killed and reaped."""


class WatchStop(Exception):
    """What a ``check`` of ``run`` raises to stop the command (a stalled disk, _stall.py). ``run`` kills the group
    first and sets ``left_running``: the PIDs still alive after SIGKILL (stuck in the kernel)."""

    left_running: Sequence[int] = ()


class Output:
    """One stream of a command: kept whole up to ``limit`` bytes, else its first and last limit/2 bytes (whole lines
    at the cut) with a line saying how many bytes were left out between them."""

    def __init__(self, limit: Optional[int] = None) -> None:
        self.half = (OUTPUT_LIMIT_BYTES if limit is None else limit) // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.left_out = 0

    def add(self, data: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.half
        if excess > 0:
            del self.tail[:excess]
            self.left_out += excess

    def _cut(self) -> Tuple[int, int, int]:
        """Where the kept head ends and the kept tail starts (whole lines at the gap), and the bytes between."""
        head_end = self.head.rfind(b"\n") + 1 or len(self.head)     # one endless line: cut it where it is
        tail_start = self.tail.find(b"\n") + 1
        return head_end, tail_start, self.left_out + (len(self.head) - head_end) + tail_start

    @property
    def bytes_left_out(self) -> int:
        return self._cut()[2] if self.left_out else 0

    def value(self) -> bytes:
        if not self.left_out:
            return bytes(self.head + self.tail)
        head_end, tail_start, left_out = self._cut()
        kept = "%d MiB" % (self.half >> 20) if self.half >= 1 << 20 else "%d bytes" % self.half
        note = ("[diskproof: %d bytes of this output left out here: it kept its first and last %s]\n"
                % (left_out, kept)).encode("ascii")
        return bytes(self.head[:head_end]) + note + bytes(self.tail[tail_start:])


class Completed(NamedTuple):
    """How a command ended: rc (negative signal number when killed), its output, and its group's strays."""
    rc: int
    stdout: bytes
    stderr: bytes
    pid: int
    strays: int     # processes the command left running in its group after it exited, killed by run()
    left_out: int = 0   # bytes of its output not kept (Output: more than OUTPUT_LIMIT_BYTES on a stream)


def _libc_prctl() -> Optional[Callable[..., int]]:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


# Loaded once in the parent: the child calls it between fork and exec.
_PRCTL = _libc_prctl()


def child_setup(parent_pid: int) -> Callable[[], None]:
    """preexec_fn for the child (after start_new_session's setsid): die with the parent, default signals."""
    def setup() -> None:
        for signum in CANCEL_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent_pid:       # the parent died before the prctl: follow it now
                os.kill(os.getpid(), signal.SIGKILL)
    return setup


def hangup_watch(fds: Sequence[int] = (1,)) -> List[int]:
    """Which of fds (default: stdout) can tell that the reader went away: write ends of pipes. A file or a
    terminal cannot, and a socket is not judged here; those are left out."""
    watched = []
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if stat.S_ISFIFO(mode) and flags & os.O_ACCMODE == os.O_WRONLY:
            watched.append(fd)
    return watched


def hung_up(fds: Sequence[int]) -> List[int]:
    """The fds among these whose peer is gone, without waiting."""
    if not fds:
        return []
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)               # 0: only POLLERR / POLLHUP / POLLNVAL are reported
    return [fd for fd, events in poller.poll(0) if events & HANGUP_EVENTS]


def _stat_fields(pid: int) -> Optional[List[str]]:
    """Fields of /proc/<pid>/stat after the command name (field 3, state, first); None when gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    return fields_after_command(text)


def group_members(pgid: int) -> List[int]:
    """PIDs of the live (not zombie) processes of process group pgid, from /proc; without /proc, [pgid] while
    the group can still be signalled. A zombie is dead: it holds no file and does no I/O."""
    try:
        names = os.listdir("/proc")
    except OSError:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return []
        return [pgid]
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:   # no process at all in the group: nothing to scan /proc for (the common case)
        return []
    except PermissionError:      # a member changed user (bonnie++ -u): the scan below finds it
        pass
    members = []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is None or len(fields) < 3:
            continue
        if fields[0] != "Z" and fields[2] == str(pgid):
            members.append(int(name))
    return members


def _reap(process: subprocess.Popen) -> None:
    try:
        process.wait(timeout=0)
    except subprocess.TimeoutExpired:
        pass


@contextlib.contextmanager
def cancel_signals_held() -> Iterator[None]:
    """The cancel signals wait (blocked) until the block is done, then act as they would have: a step that must
    not be cut in half (killing a group, the renames of a store publish) is finished first. SIGKILL cannot wait."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, CANCEL_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def kill_group(process: subprocess.Popen, grace_s: float = TERM_GRACE_S, wait_s: float = KILL_WAIT_S) -> List[int]:
    """SIGTERM to the process group of process, grace_s to end, SIGKILL to what is left, reap process and wait
    (up to wait_s) until no live member remains. Returns the PIDs still alive then (stuck in the kernel)."""
    pgid = process.pid
    # No cancel signal may cut the kill short.
    with cancel_signals_held():
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while group_members(pgid) and time.monotonic() < deadline:
            _reap(process)
            time.sleep(0.02)
        if group_members(pgid):
            _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + wait_s
        while True:
            _reap(process)
            left = group_members(pgid)
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        return group_members(pgid)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass
    except PermissionError:     # a member changed user (bonnie++ -u): signal the leader at least
        try:
            os.kill(pgid, signum)
        except OSError:
            pass


def run(argv: Sequence[str], executable: Optional[str] = None, cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None, watch: Sequence[int] = (),
        grace_s: float = TERM_GRACE_S, timeout_s: Optional[float] = None,
        check: Optional[Callable[[], None]] = None) -> Completed:
    """Run argv (no shell) in its own session; collect stdout and stderr; return when it has exited and its
    group is empty. A hangup on a watched fd raises ControllerGone, running past ``timeout_s`` raises TimedOut,
    ``check`` (called about every POLL_INTERVAL_S while it runs) may raise WatchStop, any other exception raised
    while waiting (a signal handler's) goes on unchanged - all only after the group was killed and reaped.
    OSError when the command cannot be started."""
    process = subprocess.Popen(list(argv), executable=executable, cwd=cwd, env=dict(env) if env is not None else None,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=child_setup(os.getpid()))
    chunks: Dict[int, Output] = {process.stdout.fileno(): Output(), process.stderr.fileno(): Output()}
    try:
        gone = _collect(process, chunks, list(watch), None if timeout_s is None else time.monotonic() + timeout_s,
                        check)
        if gone:
            raise ControllerGone("the controller went away (fd %s hung up): %s was stopped"
                                 % (",".join(str(fd) for fd in gone), " ".join(argv)))
        strays = len(group_members(process.pid))
        if strays:
            kill_group(process, grace_s)
    except TimedOut:
        kill_group(process, grace_s)
        raise TimedOut("%s did not end within %g s (it was stopped)" % (shlex.join(argv), timeout_s)) from None
    except WatchStop as stop:
        stop.left_running = kill_group(process, grace_s)
        raise
    except BaseException:
        kill_group(process, grace_s)
        raise
    finally:
        process.stdout.close()
        process.stderr.close()
    out, err = (chunks[fd].value() for fd in chunks)
    return Completed(process.returncode, out, err, process.pid, strays,
                     sum(output.bytes_left_out for output in chunks.values()))


def probe(argv: Sequence[str], timeout_s: Optional[float] = None) -> Tuple[Optional[int], str, str]:
    """(exit code, stdout, stderr) of a command that reads a disk, run in the C locale in its own process group,
    output decoded leniently; (None, "", why) when it did not end within ``timeout_s`` (default
    DISK_PROBE_TIMEOUT_S: it was stopped) or could not be started."""
    limit = DISK_PROBE_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done = run(argv, env=dict(os.environ, LANG="C", LC_ALL="C"), timeout_s=limit)
    except TimedOut as error:
        return None, "", str(error)
    except OSError as error:
        return None, "", "%s could not be started: %s" % (argv[0], error.strerror or error)
    return done.rc, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def _collect(process: subprocess.Popen, chunks: Dict[int, Output], watch: List[int],
             deadline: Optional[float] = None, check: Optional[Callable[[], None]] = None) -> List[int]:
    """Read the child's output until both pipes closed and the child exited; the watched fds that hung up (then
    it stops at once), else []. TimedOut when the monotonic clock passes ``deadline`` first."""
    poller = select.poll()
    open_pipes = set(chunks)
    for fd in open_pipes:
        poller.register(fd, READ_EVENTS)
    for fd in watch:
        poller.register(fd, 0)
    exited_at = None
    while True:
        # With both pipes closed only the watched fds are left to poll: look at them without waiting, and wait for
        # the child itself below (polling an idle set would sleep a whole interval after every command).
        for fd, events in poller.poll(POLL_INTERVAL_S * 1000 if open_pipes else 0):
            if fd in open_pipes:
                data = os.read(fd, 65536) if events & (select.POLLIN | select.POLLPRI | select.POLLHUP) else b""
                if data:
                    chunks[fd].add(data)
                else:
                    poller.unregister(fd)
                    open_pipes.discard(fd)
            elif events & HANGUP_EVENTS:
                return [fd]
        if not open_pipes and process.poll() is None:
            try:
                process.wait(timeout=POLL_INTERVAL_S if deadline is None
                             else max(0.0, min(POLL_INTERVAL_S, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
        if deadline is not None and time.monotonic() >= deadline and process.poll() is None:
            raise TimedOut()
        if check is not None and process.poll() is None:
            check()
        if process.poll() is not None:
            if not open_pipes:
                return []
            # A process the command left behind still holds its pipes: stop reading after a moment.
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > 1.0:
                return []
