# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quiesce state directory of a host and the small JSON files in it, pure Python (no Ansible imports).

    new_lock(...), parse_lock(text)   the lock: which run holds the host, its controller and host process
    new_state(...), parse_state(text) the state file: what was running, what the run stopped
    process_start(pid), process_alive(pid, start)   a process, told apart from a later one with the same pid
    same_run(mine, theirs)            the same playbook run, by the controller identity the lock records
    StateDir(path, create)            a private directory (0700, ours, no symlink), opened once; every file in it
                                      is opened relative to that directory descriptor with O_NOFOLLOW
    StateDir.write(name, doc)         atomic: an unpredictable temporary name opened O_CREAT|O_EXCL|O_NOFOLLOW,
                                      fsync, rename, fsync of the directory
    StateDir.mutex()                  flock serialising read-decide-write between module calls on the host
    StateDir.new_job_file()           a benchmark step's fio job file, named by its process (0600, O_EXCL)
    StateDir.remove_dead_job_files()  the job files of steps no longer running (a SIGKILL leaves its file behind)
    renewed_lock(...)                 the lock with its lease renewed by a benchmark step of the same run
    remember_write_cache(...)         a disk's original write-cache setting, recorded once, before the first toggle
    runs_reusing(...)                 a run id already used by another run (the runs file keeps the last ones)

Used by the quiesce module (lock, state, runs, write-cache restore; _quiesce.py decides on them) and by bench_run
(lease renewal, write-cache originals, job files). The lock's documents live here rather than in _quiesce.py so that
a benchmark step does not import the quiesce logic: AnsiballZ ships source, and each call compiles what it imports.
Errors raise QuiesceError with what is wrong and what to do.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import pwd
import secrets
import stat
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ._flock import wait_for_flock
from ._paths import ancestor_problem, owner_name, private_directory_problem, write_file_at
from ._parse.errors import ParseError
from ._parse.proc_pid_stat import parse_proc_stat

SCHEMA = 1
LOCK_NAME = "quiesce.lock"
STATE_NAME = "quiesce-state.json"
MUTEX_NAME = ".quiesce.mutex"
LOCK_KIND = "diskproof-quiesce-lock"
STATE_KIND = "diskproof-quiesce-state"

SYSTEMD = "systemd"
SYSV = "sysv"
ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

WRITE_CACHE_NAME = "write-cache.json"
WRITE_CACHE_KIND = "diskproof-write-cache"
RUNS_NAME = "quiesce-runs.json"
RUNS_KIND = "diskproof-quiesce-runs"
RUNS_KEPT = 200
DEFAULT_LEASE_S = 43200
MUTEX_TIMEOUT_S = 30
# fio-job.<pid>-<start>.<random>.fio, named by the bench_run that wrote it (its pid and start time, as the lock names a
# process): a killed step's file is found, a running one's kept, a reused pid told apart.
JOB_FILE_PREFIX = "fio-job."
JOB_FILE_SUFFIX = ".fio"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class QuiesceError(Exception):
    """Anything the quiesce logic cannot do or read; the message says what and why."""


# --------------------------------------------------------------------------------------------
# time and process identity


def utc_iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc).strftime(ISO_FORMAT)


def parse_utc_iso(text: str) -> float:
    try:
        moment = datetime.datetime.strptime(text, ISO_FORMAT)
    except (TypeError, ValueError):
        raise QuiesceError("not an ISO 8601 UTC time (YYYY-MM-DDTHH:MM:SSZ): %r" % (text,))
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def process_start(pid: Any, proc_root: str = "/proc") -> Optional[int]:
    """Start time (ticks since boot) of a live process; None when it is gone or a zombie."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    try:
        with open(os.path.join(proc_root, str(pid), "stat")) as handle:
            state, start = parse_proc_stat(handle.read())
    except (OSError, ParseError):
        return None
    return None if state in ("Z", "X") else start


def process_alive(pid: Any, start: Any, proc_root: str = "/proc") -> bool:
    """The process pid is running and is the same one (same start time, so not a reused pid)."""
    current = process_start(pid, proc_root)
    return current is not None and (start is None or current == start)


def read_boot_id(proc_root: str = "/proc") -> str:
    try:
        with open(os.path.join(proc_root, "sys", "kernel", "random", "boot_id")) as handle:
            return handle.read().strip()
    except OSError:
        return ""


# --------------------------------------------------------------------------------------------
# the lock and state files


def _require(document: Any, kind: str, what: str) -> Dict[str, Any]:
    if not isinstance(document, dict) or document.get("kind") != kind:
        raise QuiesceError("%s is not a diskproof %s (kind %r)" % (what, kind, document.get("kind") if isinstance(document, dict) else None))
    if document.get("schema") != SCHEMA:
        raise QuiesceError("%s has schema %r, this collection reads schema %d" % (what, document.get("schema"), SCHEMA))
    if not isinstance(document.get("run_id"), str) or not document["run_id"]:
        raise QuiesceError("%s names no run_id" % what)
    return document


def _loads(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise QuiesceError("%s is not valid JSON (%s)" % (what, error))


def dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def new_lock(run_id: str, controller: Mapping[str, Any], host_boot_id: str, host_pid: int, host_pid_start: Optional[int],
             now: float, lease_s: int, phase: str, started: Optional[str] = None) -> Dict[str, Any]:
    """The lock document: who holds the host, from where, until when at the latest."""
    return {
        "schema": SCHEMA,
        "kind": LOCK_KIND,
        "run_id": run_id,
        "phase": phase,
        "started": started or utc_iso(now),
        "updated": utc_iso(now),
        "expires": utc_iso(now + lease_s),
        "lease_s": lease_s,
        "controller": {key: controller.get(key) for key in ("host", "user", "pid", "pid_start", "boot_id", "pid_ns")},
        "host": {"boot_id": host_boot_id, "pid": host_pid, "pid_start": host_pid_start},
    }


def parse_lock(text: str, what: str = "the lock file") -> Dict[str, Any]:
    lock = _require(_loads(text, what), LOCK_KIND, what)
    for key in ("controller", "host"):
        if not isinstance(lock.get(key), dict):
            raise QuiesceError("%s has no %s section" % (what, key))
    parse_utc_iso(lock.get("expires"))
    return lock


def new_state(run_id: str, manager: str, services: Sequence[Mapping[str, Any]], now: float, phase: str,
              **extra: Any) -> Dict[str, Any]:
    """The state document: what was running and what this run stopped, written before any stop."""
    state = {
        "schema": SCHEMA,
        "kind": STATE_KIND,
        "run_id": run_id,
        "phase": phase,
        "written": utc_iso(now),
        "service_manager": manager,
        "services": [dict(service) for service in services],
    }
    state.update(extra)
    return state


def parse_state(text: str, what: str = "the state file") -> Dict[str, Any]:
    state = _require(_loads(text, what), STATE_KIND, what)
    if state.get("service_manager") not in (SYSTEMD, SYSV):
        raise QuiesceError("%s names no known service manager (%r)" % (what, state.get("service_manager")))
    services = state.get("services")
    valid = isinstance(services, list)
    if valid:
        valid = all(isinstance(item, dict) and isinstance(item.get("unit"), str) for item in services)
    if not valid:
        raise QuiesceError("%s has no valid services list" % what)
    return state


def services_to_restore(state: Mapping[str, Any]) -> List[str]:
    """Exactly the units that were running when the run recorded them (stopped or about to be)."""
    return [item["unit"] for item in state["services"] if item.get("was_running")]


def same_controller(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Same machine, same boot, same PID namespace: their controller pid can be checked in our process list."""
    keys = ("host", "boot_id", "pid_ns")
    return all(mine.get(key) and mine.get(key) == theirs.get(key) for key in keys)


RUN_KEYS = ("host", "boot_id", "pid_ns", "pid", "pid_start")


def same_run(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """The same playbook run: no identity key (controller host, boot, PID namespace, ansible-playbook pid and start)
    known on both sides differs. Without any identity (a direct module call) a run cannot be told apart: same."""
    return all(mine.get(key) is None or theirs.get(key) is None or mine.get(key) == theirs.get(key) for key in RUN_KEYS)


# --------------------------------------------------------------------------------------------
# the directory


def _user(uid: int) -> str:
    return owner_name(uid)


def _fix(path: str, euid: int) -> str:
    try:
        owner = pwd.getpwuid(euid).pw_name
    except KeyError:
        owner = str(euid)
    return ("make it private to %s (chown %s:%s %s; chmod 0700 %s) after checking nobody else tampered with it, "
            "or set quiesce_state_dir to another directory" % (owner, owner, owner, path, path))


def dir_problem(path: str, info: os.stat_result, euid: int) -> Optional[str]:
    """Why `path` (lstat/fstat `info`) cannot be the state directory, or None: it must be a real directory owned by
    the user running diskproof and writable by nobody else (others could swap the lock or the state files)."""
    return private_directory_problem("the state directory", path, info, euid, _fix(path, euid))


def parent_problem(path: str, info: os.stat_result, euid: int) -> Optional[str]:
    """A parent of the state directory must be owned by root or us and not writable by others, unless sticky
    (/tmp): otherwise someone else could rename the state directory away and put their own in its place."""
    return ancestor_problem("the state directory", path, info, euid)


class StateDir:
    """The state directory, opened once (O_DIRECTORY|O_NOFOLLOW) and checked with fstat; files inside are opened
    relative to it. `create` makes a missing directory with mode 0700 (parents 0755)."""

    def __init__(self, path: str, create: bool = False, euid: Optional[int] = None) -> None:
        self.path = os.path.abspath(path)
        self.euid = os.geteuid() if euid is None else euid
        self.fd: Optional[int] = None
        self.exists = False
        self._open(create)

    def _open(self, create: bool) -> None:
        parent = os.path.dirname(self.path)
        if create and not os.path.lexists(self.path):
            os.makedirs(parent, 0o755, exist_ok=True)
            try:
                os.mkdir(self.path, 0o700)
            except FileExistsError:
                pass
        current = parent
        while True:
            problem = parent_problem(current, os.stat(current), self.euid)
            if problem:
                raise QuiesceError(problem)
            if current == os.path.dirname(current):
                break
            current = os.path.dirname(current)
        try:
            self.fd = os.open(self.path, _DIR_FLAGS)
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(self.path):
                raise QuiesceError(dir_problem(self.path, os.lstat(self.path), self.euid) or str(error))
            raise QuiesceError("cannot open the state directory %s: %s" % (self.path, error))
        problem = dir_problem(self.path, os.fstat(self.fd), self.euid)
        if problem:
            self.close()
            raise QuiesceError(problem)
        self.exists = True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "StateDir":
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def path_of(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _need(self) -> int:
        if self.fd is None:
            raise QuiesceError("the state directory %s does not exist" % self.path)
        return self.fd

    def read_text(self, name: str) -> Optional[str]:
        """The text of a regular file in the directory, None when absent; never follows a symlink."""
        try:
            descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self._need())
        except FileNotFoundError:
            return None
        except OSError as error:
            raise QuiesceError("cannot read %s: %s (a symbolic link is never followed here)"
                               % (self.path_of(name), error))
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != self.euid:
                raise QuiesceError("%s is not a regular file owned by %s: remove it"
                                   % (self.path_of(name), _user(self.euid)))
            return handle.read().decode("utf-8", "replace")

    def read(self, name: str, parser: Any) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """(document or None, error message or None)."""
        try:
            text = self.read_text(name)
        except QuiesceError as error:
            return None, str(error)
        if text is None:
            return None, None
        try:
            return parser(text, self.path_of(name)), None
        except QuiesceError as error:
            return None, str(error)

    def write(self, name: str, document: Mapping[str, Any]) -> None:
        """Atomically replace `name` (0600; _paths.write_file_at: a new file with an unpredictable name, never
        written through a planted link, renamed over `name`)."""
        write_file_at(self._need(), name, (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8"))

    def remove(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self._need())
        except FileNotFoundError:
            return
        os.fsync(self._need())

    def new_job_file(self) -> Tuple[int, str]:
        """(descriptor open for writing, path) of a new private job file of this process."""
        pid = os.getpid()
        name = "%s%d-%s.%s%s" % (JOB_FILE_PREFIX, pid, process_start(pid), secrets.token_hex(8), JOB_FILE_SUFFIX)
        descriptor = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=self._need())
        return descriptor, self.path_of(name)

    def remove_dead_job_files(self, proc_root: str = "/proc") -> List[str]:
        """Remove the job files whose writer is gone (a step killed before it could remove its own); their names.
        Only regular files of ours named as new_job_file names them; a running step's file stays."""
        removed = []
        for name in sorted(os.listdir(self._need())):
            if not (name.startswith(JOB_FILE_PREFIX) and name.endswith(JOB_FILE_SUFFIX)):
                continue
            pid, _dash, start = name[len(JOB_FILE_PREFIX):].split(".", 1)[0].partition("-")
            if not (pid.isdigit() and start.isdigit()) or process_alive(int(pid), int(start), proc_root):
                continue
            try:
                info = os.stat(name, dir_fd=self._need(), follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_uid == self.euid:
                    os.unlink(name, dir_fd=self._need())
                    removed.append(name)
            except FileNotFoundError:
                continue
        return removed

    @contextlib.contextmanager
    def mutex(self, timeout_s: float = MUTEX_TIMEOUT_S) -> Iterator[None]:
        descriptor = os.open(MUTEX_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=self._need())
        try:
            if not wait_for_flock(descriptor, timeout_s, poll_s=0.1):
                raise QuiesceError("another diskproof call on this host kept %s locked for %d s"
                                   % (self.path_of(MUTEX_NAME), timeout_s))
            yield
        finally:
            os.close(descriptor)


# --------------------------------------------------------------------------------------------
# the lease, renewed by the benchmark steps of the run that holds the lock


def renewed_lock(lock: Optional[Mapping[str, Any]], run_id: str, now: float, pid: int, pid_start: Optional[int],
                 where: str) -> Dict[str, Any]:
    """The lock with `updated`, `expires` (now + its lease) and the host process (this step, so the lock counts as
    held while it runs) renewed. QuiesceError when the lock is not this run's any more."""
    if lock is None:
        raise QuiesceError("no quiesce lock in %s, but this step belongs to run %s, which should hold it: another run "
                           "or a restore released it; re-run the whole play" % (where, run_id))
    if lock.get("run_id") != run_id:
        raise QuiesceError("the quiesce lock in %s is held by run %s, not by this run (%s): another run took the host "
                           "over (its lease ran out, or it was forced); measuring now would compete with it. Re-run "
                           "once that run is over" % (where, lock.get("run_id"), run_id))
    lease = lock.get("lease_s")
    lease = lease if isinstance(lease, int) and not isinstance(lease, bool) and lease > 0 else DEFAULT_LEASE_S
    renewed = dict(lock)
    renewed.update(updated=utc_iso(now), expires=utc_iso(now + lease))
    renewed["host"] = dict(lock.get("host") or {}, pid=pid, pid_start=pid_start)
    return renewed


def renew_lease(state: StateDir, run_id: str, pid: int, pid_start: Optional[int]) -> Dict[str, Any]:
    with state.mutex():
        lock, error = state.read(LOCK_NAME, parse_lock)
        if error:
            raise QuiesceError(error)
        renewed = renewed_lock(lock, run_id, time.time(), pid, pid_start, state.path)
        state.write(LOCK_NAME, renewed)
    return renewed


# --------------------------------------------------------------------------------------------
# write-cache originals


def new_write_cache_doc() -> Dict[str, Any]:
    return {"schema": SCHEMA, "kind": WRITE_CACHE_KIND, "devices": {}}


def parse_write_cache_doc(text: str, what: str = WRITE_CACHE_NAME) -> Dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise QuiesceError("%s is not valid JSON (%s)" % (what, error))
    if not isinstance(document, dict) or document.get("kind") != WRITE_CACHE_KIND or document.get("schema") != SCHEMA:
        raise QuiesceError("%s is not a diskproof write-cache record (kind %s, schema 1)" % (what, WRITE_CACHE_KIND))
    devices = document.get("devices")
    if not isinstance(devices, dict) or not all(isinstance(entry, dict) and isinstance(entry.get("enabled"), bool)
                                                for entry in devices.values()):
        raise QuiesceError("%s has no valid devices map (device -> {enabled: true|false, ...})" % what)
    return document


def remember_write_cache(document: Dict[str, Any], device: str, enabled: bool, method: str, transport: str,
                         run_id: Optional[str], now: float, wwid: Optional[str]) -> Tuple[Dict[str, Any], bool]:
    """(the entry that holds the original, whether it was added now). An entry already there is never replaced: it
    was recorded before an earlier toggle that was not undone (a killed step), so it is the real original."""
    devices = document.setdefault("devices", {})
    if device in devices:
        return devices[device], False
    devices[device] = {"enabled": enabled, "method": method, "transport": transport, "recorded": utc_iso(now),
                       "run_id": run_id, "wwid": wwid}
    return devices[device], True


def read_wwid(device: str, sys_root: str = "/sys") -> Optional[str]:
    """The disk's world-wide id as the kernel shows it (ATA/SCSI/NVMe), None when it has none."""
    try:
        with open(os.path.join(sys_root, "block", device, "device", "wwid")) as handle:
            return handle.read().strip() or None
    except OSError:
        return None


# --------------------------------------------------------------------------------------------
# run ids already used on this host


def new_runs_doc() -> Dict[str, Any]:
    return {"schema": SCHEMA, "kind": RUNS_KIND, "runs": []}


def parse_runs_doc(text: str, what: str = RUNS_NAME) -> Dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise QuiesceError("%s is not valid JSON (%s)" % (what, error))
    if not isinstance(document, dict) or document.get("kind") != RUNS_KIND \
            or not isinstance(document.get("runs"), list):
        raise QuiesceError("%s is not a diskproof list of runs (kind %s)" % (what, RUNS_KIND))
    return document


def runs_reusing(document: Mapping[str, Any], run_id: str, controller: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Earlier runs that used `run_id` from another controller process: a second run given the same id."""
    return [entry for entry in document.get("runs", []) if isinstance(entry, dict) and entry.get("run_id") == run_id
            and not same_run(controller, entry.get("controller") or {})]


def record_run(document: Dict[str, Any], run_id: str, controller: Mapping[str, Any], now: float) -> bool:
    """Add this run (once); keep the last RUNS_KEPT. True when the document changed."""
    runs = document.setdefault("runs", [])
    if any(isinstance(entry, dict) and entry.get("run_id") == run_id for entry in runs):
        return False
    keys = ("host", "user", "pid", "pid_start", "boot_id", "pid_ns")
    runs.append({"run_id": run_id, "first_seen": utc_iso(now),
                 "controller": {key: controller.get(key) for key in keys}})
    del runs[:-RUNS_KEPT]
    return True
