#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scale benchmark of the diskproof.fleet.report callback: N hosts x R results, CPU and peak RSS.

Drives the real callback class (ansible_collections.diskproof.fleet.plugins.callback.report)
through the event methods ansible-playbook calls, in the order the linear strategy calls them,
with real ansible-core Host, Task, Play, InventoryManager, VariableManager and AggregateStats
objects. Only the task results are stand-ins (StubTaskResult: host, task and the result dict,
under both the 2.19 names and the older underscore names).

The result records are the real lab records of benchmarks/data/lab-rack6-report.json (one per
test: every key, nesting and type), with seeded random figures around realistic speeds for a
handful of disk models, disk identities in ``target``, a few percent slow disks, some failed
tests (error records), some module failures that leave no record, and some unreachable hosts.
Every result dict goes through a pickle round trip before the callback sees it, as results do
on their way from the worker processes, so no string or dict is shared between results.

Phases, each measured with time.process_time (user + system CPU of this process) and
ru_maxrss (peak RSS, KiB on Linux):

- setup (not counted): imports, inventory, tasks, record templates, per-host plans;
- building (not counted): making each result dict just before it is fed (bracketed and
  subtracted, so results are never all in memory at once, as in a real run);
- ingestion: v2_playbook_on_start, v2_playbook_on_play_start, then per task and host the runner
  events (v2_runner_on_start, item ok/failed, loop summaries, unreachable);
- aggregation + writers: v2_playbook_on_stats (judging, console table, every file written); its
  parts (the callback's _judge, _write and _show, when it has them) are timed on their own too.

``--no-op-callback`` feeds the same events to a callback whose event handlers do nothing: the
ingestion figure is then the cost of this script's own event dispatch (and of ansible-core's
AggregateStats), which every measured ingestion figure includes.

Target (issue 18, docs/benchmarks.md): aggregation + all writers (on_stats) <= 8 s CPU and peak
RSS <= 300 MB (10^6 bytes) for 10,000 hosts x 12 results, with plainly written code (ElementTree,
the json module's public encoder, the garbage collector left alone; the earlier target was 3 s).
Ingestion, which happens while results arrive during the run, is measured and reported on its
own (and with the sum).

Inside on_stats the user and system CPU are reported apart, with the blocks the process read
from disk: the callback's record spool is a temporary file, and when something drops the page
cache during the run (``echo 3 > /proc/sys/vm/drop_caches``, as the benchmark role does on its
targets) on_stats reads it back from disk, which costs system CPU.

Run it as its own process for each measurement (peak RSS is per process):

    .venv/bin/python benchmarks/callback_scale.py --hosts 10000 --results-per-host 12
    .venv/bin/python benchmarks/callback_scale.py --hosts 10000 --repeat 3     # median of 3 processes
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import datetime
import hashlib
import json
import math
import operator
import os
import pickle
import platform
import pstats
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LAB_REPORT = REPO_ROOT / "benchmarks" / "data" / "lab-rack6-report.json"
COLLECTIONS_DIR = REPO_ROOT / ".ansible" / "collections"
COLLECTION_LINK = COLLECTIONS_DIR / "ansible_collections" / "diskproof" / "fleet"
CALLBACK_FQCN = "diskproof.fleet.report"
CALLBACK_MODULE = "ansible_collections.diskproof.fleet.plugins.callback.report"
FRAGMENTS_PACKAGE = "ansible_collections.diskproof.fleet.plugins.doc_fragments."
CODE_FILES = ("plugins/callback/report.py", "plugins/plugin_utils/_report.py", "plugins/plugin_utils/_aggregate.py",
              "plugins/plugin_utils/_render.py", "plugins/plugin_utils/_junit.py")
PIPELINE_MODULE = "ansible_collections.diskproof.fleet.plugins.plugin_utils._report"
# Parts of v2_playbook_on_stats timed on their own: (where, function, label); where is the callback
# (one of its methods, on the instance) or the pipeline's module (a function of it, for this process).
STATS_PHASES = (("pipeline", "judge", "judging"), ("pipeline", "write_files", "writing the five files"),
                ("callback", "_show", "console table"))
# Runner events the no-op callback ignores (--no-op-callback).
EVENT_METHODS = ("v2_playbook_on_task_start", "v2_runner_on_start", "v2_runner_on_ok", "v2_runner_item_on_ok", "v2_runner_on_failed",
                 "v2_runner_item_on_failed", "v2_runner_on_unreachable")

TARGET_CPU_S = 8.0
TARGET_RSS_MB = 300.0          # MB = 10^6 bytes, as everywhere in this project
DEFAULT_HOSTS = 10000
DEFAULT_RESULTS_PER_HOST = 12
DEFAULT_SEED = 20261122

WRITE_TESTS = ("dd_seq_write", "fio_rand_write")
READ_TESTS = ("dd_seq_read", "fio_rand_read")
TESTS_PER_TARGET = len(WRITE_TESTS) + len(READ_TESTS)
TARGET_ROOT = "/srv/diskproof"
TEST_FILE_NAME = "diskproof.testfile"
MIB = 2 ** 20
GIB = 2 ** 30

# A handful of disk models a fleet really has, with what these tests measure on them
# (B/s for dd with 1 MiB blocks, IOPS for fio 4 KiB at iodepth 32): vendor figures derated to
# what a fdatasync'd / O_DIRECT single job gets. weight = share of hosts.
DISK_MODEL_FIELDS = ("model", "firmware", "size_bytes", "rotational", "transport", "serial_prefix", "device_prefix",
                     "weight", "dd_seq_write", "dd_seq_read", "fio_rand_read", "fio_rand_write")
DISK_MODELS = tuple(dict(zip(DISK_MODEL_FIELDS, row)) for row in (
    ("SAMSUNG MZ7L3960HCJR-00A07", "JXTC404Q", 960197124096, False, "sata", "S6KNNE0T", "sd", 35,
     480e6, 535e6, 92000.0, 29000.0),
    ("INTEL SSDSC2KB960G8", "XCV10132", 960197124096, False, "sata", "PHYF0", "sd", 20,
     470e6, 540e6, 88000.0, 33000.0),
    ("Micron_5300_MTFDDAK960TDS", "D3MU001", 960197124096, False, "sata", "2107", "sd", 15,
     490e6, 530e6, 90000.0, 31000.0),
    ("SAMSUNG MZQL23T8HCLS-00A07", "GDC5602Q", 3840755982336, False, "nvme", "S64HNE0R", "nvme", 15,
     2900e6, 3400e6, 240000.0, 120000.0),
    ("ST4000NM000A-2HZ100", "SN04", 4000787030016, True, "sata", "WJG0", "sd", 15,
     205e6, 215e6, 420.0, 610.0),
))
MEMORY_CHOICES_GIB = (64, 128, 256, 512)
FIO_RUNTIME_S = 60
DISK_SPREAD = 0.03             # per-disk factor, relative standard deviation
RUN_SPREAD = 0.015             # per-run noise on top
SLOW_FACTOR = (0.45, 0.80)     # a slow disk runs at this fraction of its model's speed
# --disk-state: the share of disks that differ from their peers or whose health changes (the likely causes' inputs).
DISK_STATE_RATES = {"old_firmware": 0.02, "write_cache_off": 0.01, "degraded_link": 0.01, "media_errors": 0.005}

ERROR_TEXTS = {
    "dd_seq_write": "dd: error writing '{file}': Input/output error",
    "dd_seq_read": "dd: error reading '{file}': Input/output error",
    "fio_rand_read": "fio: io_u error on file {file}: Input/output error: read offset=183631872, buflen=4096",
    "fio_rand_write": "fio: io_u error on file {file}: No space left on device: write offset=5402259456, buflen=4096",
}
MODULE_FAILURE = "MODULE FAILURE: See stdout/stderr for the exact error"
UNREACHABLE_TEXT = ("Task failed: Failed to connect to the host via ssh: ssh: connect to host {address} port 22: "
                    "Connection timed out")


# ---------------------------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------------------------

def _ensure_collection_importable() -> None:
    """Make ansible_collections.diskproof.fleet importable from this checkout (as the unit tests do)."""
    if not COLLECTION_LINK.exists():
        COLLECTION_LINK.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.join("..", "..", "..", ".."), COLLECTION_LINK)
    if str(COLLECTIONS_DIR) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS_DIR))


def _isolate_environment(workdir: str) -> None:
    """Before ansible is imported: no ansible.cfg from the current directory, no DISKPROOF_* settings."""
    for key in list(os.environ):
        if key.startswith(("ANSIBLE_", "DISKPROOF_")):
            del os.environ[key]
    config = os.path.join(workdir, "ansible.cfg")
    with open(config, "w", encoding="utf-8") as stream:
        stream.write("[defaults]\n")
    os.environ["ANSIBLE_CONFIG"] = config
    os.environ["ANSIBLE_HOME"] = os.path.join(workdir, ".ansible")
    os.environ["ANSIBLE_NOCOLOR"] = "1"


def _rss_now_kib() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as stream:
            return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return None


def _maxrss_kib() -> int:
    # KiB on Linux (bytes on macOS; this benchmark's figures are from Linux).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _kib_to_mb(kib) -> float | None:
    return None if kib is None else kib * 1024 / 1e6


def _code_fingerprint() -> dict:
    """sha256 (12 hex digits) of the code measured: figures belong to a version of it."""
    fingerprint = {}
    for name in CODE_FILES:
        try:
            fingerprint[name] = hashlib.sha256((REPO_ROOT / name).read_bytes()).hexdigest()[:12]
        except OSError:
            fingerprint[name] = None
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--"] + list(CODE_FILES),
                               capture_output=True, text=True, timeout=10, check=False)
        fingerprint["git_head"] = head.stdout.strip() or None
        fingerprint["code_files_modified"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        fingerprint["git_head"] = None
    return fingerprint


# ---------------------------------------------------------------------------------------------
# records (based on the real lab records)
# ---------------------------------------------------------------------------------------------

def _shape(value):
    """Key structure of a record (dict keys recursively; lists and scalars as their kind)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    return "list" if isinstance(value, list) else "scalar"


def load_templates(path: Path = LAB_REPORT) -> dict:
    """One real lab record per test; fio_rand_write derived from fio_rand_read."""
    report = json.loads(path.read_text(encoding="utf-8"))
    templates = {}
    for entry in sorted(report["results"], key=lambda entry: (entry["verdict"] != "pass", entry["host"])):
        record = entry.get("record")
        if record and not record.get("error") and record["test"] not in templates:
            templates[record["test"]] = record
    missing = {"dd_seq_write", "dd_seq_read", "fio_rand_read"} - set(templates)
    if missing:
        raise SystemExit("%s has no record for %s" % (path, ", ".join(sorted(missing))))
    write = copy.deepcopy(templates["fio_rand_read"])
    write["test"] = "fio_rand_write"
    write["job"]["name"] = "fio_rand_write"
    write["command"] = [part.replace("fio_rand_read", "fio_rand_write").replace("--rw=randread", "--rw=randwrite") for part in write["command"]]
    metrics = write["metrics"]
    metrics["write_bytes_per_s"], metrics["read_bytes_per_s"] = metrics["read_bytes_per_s"], None
    metrics["write_iops"], metrics["read_iops"] = metrics["read_iops"], None
    metrics["latency_ns"]["write"], metrics["latency_ns"]["read"] = metrics["latency_ns"]["read"], None
    write["device_io"] = {"read_bytes": 0, "write_bytes": write["device_io"]["read_bytes"]}
    templates["fio_rand_write"] = write
    return templates


def _timestamp(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FleetPlan:
    """Seeded per-host decisions: disk model, disks, slow disks, which slots fail, unreachable hosts."""

    def __init__(self, hosts: int, results_per_host: int, seed: int, unreachable_rate: float, error_rate: float,
                 no_record_rate: float, slow_rate: float):
        self.rng = random.Random(seed)
        self.results_per_host = results_per_host
        self.targets = max(1, math.ceil(results_per_host / TESTS_PER_TARGET))
        # Slot order is the role's order: every write test of every target, then every read test.
        # Fewer results than targets x tests: the last target runs only its first tests.
        per_target = [(target, test) for target in range(self.targets) for test in WRITE_TESTS + READ_TESTS][:results_per_host]
        self.slots = sorted((("write" if test in WRITE_TESTS else "read"), target, test) for target, test in per_target)
        self.slots.sort(key=lambda slot: (slot[0] != "write", slot[1], (WRITE_TESTS + READ_TESTS).index(slot[2])))
        self.names = ["dc1-r%03d-n%02d" % (index // 40 + 1, index % 40 + 1) for index in range(hosts)]
        weights = [model["weight"] for model in DISK_MODELS]
        self.host_model = [self.rng.choices(range(len(DISK_MODELS)), weights)[0] for _host in range(hosts)]
        self.host_memory = [self.rng.choice(MEMORY_CHOICES_GIB) * GIB for _host in range(hosts)]
        self.disk_factor = [[self._disk_factor(slow_rate) for _target in range(self.targets)] for _host in range(hosts)]
        self.disk_serial = [[self._serial(self.host_model[host]) for _target in range(self.targets)] for host in range(hosts)]
        self.unreachable = set(self.rng.sample(range(hosts), self._count(hosts, unreachable_rate)))
        reachable_slots = [(host, slot) for host in range(hosts) if host not in self.unreachable for slot in range(len(self.slots))]
        failing = self.rng.sample(reachable_slots, min(len(reachable_slots),
                                                       self._count(len(reachable_slots), error_rate) + self._count(len(reachable_slots), no_record_rate)))
        errors = self._count(len(reachable_slots), error_rate)
        self.failures = {pair: ("error" if index < errors else "no_record") for index, pair in enumerate(failing)}
        self.slow_disks = sum(1 for factors in self.disk_factor for factor in factors if factor < 0.9)

    @staticmethod
    def _count(population: int, rate: float) -> int:
        # At least one of each kind whenever the rate is not zero: every path is exercised.
        return 0 if rate <= 0 or population == 0 else max(1, round(population * rate))

    def _disk_factor(self, slow_rate: float) -> float:
        if self.rng.random() < slow_rate:
            return self.rng.uniform(*SLOW_FACTOR)
        return max(0.5, self.rng.gauss(1.0, DISK_SPREAD))

    def _serial(self, model_index: int) -> str:
        return "%s%06X" % (DISK_MODELS[model_index]["serial_prefix"], self.rng.getrandbits(24))

    def device(self, host: int, target: int) -> str:
        model = DISK_MODELS[self.host_model[host]]
        if model["device_prefix"] == "nvme":
            return "nvme%dn1" % target
        return "sd" + chr(ord("b") + target)


class RecordFactory:
    """Schema 1 records shaped exactly like the lab's, with this host's figures and identities."""

    def __init__(self, templates: dict, plan: FleetPlan, seed: int, disk_state: bool = False):
        self.templates = templates
        self.plan = plan
        self.disk_state = disk_state
        self.rng = random.Random(seed + 1)
        self.clock = datetime.datetime(2026, 11, 22, 1, 0, 0, tzinfo=datetime.timezone.utc).timestamp()
        self.shapes = {test: _shape(record) for test, record in templates.items()}

    def target(self, host: int, target: int) -> dict:
        model = DISK_MODELS[self.plan.host_model[host]]
        device = self.plan.device(host, target)
        path = "%s/d%d" % (TARGET_ROOT, target)
        serial = self.plan.disk_serial[host][target]
        return {
            "path": path, "test_file": path + "/" + TEST_FILE_NAME, "device": device, "disks": [device],
            "model": model["model"], "serial": serial, "wwn": "0x5002538%09x" % (int(hashlib.md5(serial.encode()).hexdigest()[:9], 16)),
            "firmware": model["firmware"], "size_bytes": model["size_bytes"], "rotational": model["rotational"],
            "transport": model["transport"],
        }

    def record(self, host: int, slot: int, error: bool) -> dict:
        _phase, target_index, test = self.plan.slots[slot]
        template = self.templates[test]
        record = copy.deepcopy(template)
        model = DISK_MODELS[self.plan.host_model[host]]
        target = self.target(host, target_index)
        test_file = target["test_file"]
        size_bytes = 2 * self.plan.host_memory[host]
        figure = model[test] * self.plan.disk_factor[host][target_index] * max(0.5, self.rng.gauss(1.0, RUN_SPREAD))
        tool = record["tool"]
        if tool == "dd":
            seconds = size_bytes / figure
            moved = size_bytes
            direction = "write" if test == "dd_seq_write" else "read"
            record["command"] = [part.replace(template["target"]["test_file"], test_file).replace("count=256", "count=%d" % (size_bytes // MIB))
                                 for part in template["command"]]
        else:
            seconds = FIO_RUNTIME_S + self.rng.uniform(0.05, 0.2)
            moved = int(figure * 4096 * FIO_RUNTIME_S)
            direction = "write" if test == "fio_rand_write" else "read"
            record["command"] = [part.replace(template["target"]["test_file"], test_file).replace("--size=268435456", "--size=%d" % size_bytes)
                                 .replace("--runtime=8", "--runtime=%d" % FIO_RUNTIME_S) for part in template["command"]]
            record["params"]["runtime_s"] = FIO_RUNTIME_S
            latency = record["metrics"]["latency_ns"][direction]
            scale = (template["metrics"][direction + "_iops"] or 1.0) / figure
            for key, value in list(latency.items()):
                latency[key] = int(value * scale) if isinstance(value, int) else value * scale
        record["target"] = target
        record["params"]["size_bytes"] = size_bytes
        metrics = record["metrics"]
        if tool == "dd":
            metrics[direction + "_bytes_per_s"] = figure
        else:
            metrics[direction + "_iops"] = figure
            metrics[direction + "_bytes_per_s"] = figure * 4096
        started = self.clock + host * 0.05 + slot * 600.0
        record.update({
            "bytes": moved, "seconds": round(seconds, 4), "started": _timestamp(started), "finished": _timestamp(started + seconds),
            "raw_sha256": "%064x" % self.rng.getrandbits(256), "exit_code": 0, "error": None,
        })
        record["device_io"] = {"read_bytes": moved + 4096 if direction == "read" else 8192,
                               "write_bytes": moved + 143360 if direction == "write" else 16384}
        if error:
            # A failed run keeps what the tool printed before it failed; nothing usable for statistics.
            record["error"] = ERROR_TEXTS[test].format(file=test_file)
            record["exit_code"] = 1
            fraction = self.rng.uniform(0.05, 0.6)
            record["bytes"] = int(moved * fraction)
            record["seconds"] = round(seconds * fraction, 4)
            for key in ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops"):
                metrics[key] = None
            metrics["latency_ns"] = {"read": None, "write": None}
        if self.disk_state:
            record["disk_state"] = self.disk_state_of(host, target_index)
        return record

    def disk_state_of(self, host: int, target: int) -> dict:
        """record.disk_state as bench_run reads it around a test (the reading before, every field; after, what changed),
        seeded per disk: a few
        disks on an older firmware, with the write cache off, on a degraded link, or whose media errors grow."""
        model = DISK_MODELS[self.plan.host_model[host]]
        serial = self.plan.disk_serial[host][target]
        odd = random.Random(serial)
        nvme = model["transport"] == "nvme"
        degraded = odd.random() < DISK_STATE_RATES["degraded_link"]
        firmware = "OLD" + model["firmware"][3:] if odd.random() < DISK_STATE_RATES["old_firmware"] else model["firmware"]
        write_cache = "write through" if odd.random() < DISK_STATE_RATES["write_cache_off"] else "write back"
        grows = odd.random() < DISK_STATE_RATES["media_errors"]
        health = {key: 0 for key in ("reallocated_sectors", "pending_sectors", "offline_uncorrectable", "udma_crc_errors",
                                     "media_errors", "error_log_entries", "grown_defects", "read_uncorrected", "write_uncorrected")}
        health.update(critical_warning=0 if nvme else None, health="passed", temperature_c=odd.randint(32, 55),
                      percentage_used=odd.randint(0, 20), available_spare=100 if nvme else None,
                      available_spare_threshold=10 if nvme else None, warning_temp_time=0 if nvme else None,
                      critical_comp_time=0 if nvme else None, thermal_throttle_events=0 if nvme else None)

        def reading(after: bool) -> dict:
            grown = dict(health)
            if after and grows:
                grown["media_errors"] = 12
            return {
                "disk": self.plan.device(host, target), "model": model["model"],
                "firmware": firmware,
                "rotational": model["rotational"], "scheduler": "none" if nvme else "mq-deadline", "nr_requests": 1023 if nvme else 64,
                "queue_depth": None if nvme else 32, "read_ahead_kb": 128, "max_sectors_kb": 1280 if nvme else 512,
                "logical_block_size": 512, "physical_block_size": 4096,
                "write_cache": write_cache,
                "partition": None,
                "pcie": {"function": "0000:%02x:00.0" % (target + 1), "speed_gts": 8.0 if degraded else 16.0, "width": 2 if degraded else 4,
                         "max_speed_gts": 16.0, "max_width": 4, "port": "0000:00:0%d.1" % (target + 1), "port_max_speed_gts": 16.0,
                         "port_max_width": 4, "degraded": degraded,
                         "text": "PCIe link x%d at %g GT/s, capable x4 at 16 GT/s" % (2 if degraded else 4, 8.0 if degraded else 16.0)}
                if nvme else None,
                "sata": None if nvme else {"speed_gbps": 3.0 if degraded else 6.0, "max_gbps": 6.0, "degraded": degraded,
                                           "text": "SATA link %.1f Gb/s, capable 6.0 Gb/s" % (3.0 if degraded else 6.0)},
                "nvme_power": {"power_state": 0, "apst": True} if nvme else None,
                "health": grown, "unknown": [],
            }
        # the collection is importable by now (_ensure_collection_importable runs first)
        from ansible_collections.diskproof.fleet.plugins.module_utils._disk_state import changes
        before = reading(False)
        return {"before": before, "after": changes(before, reading(True))}


# ---------------------------------------------------------------------------------------------
# ansible objects: real ones, except the task results
# ---------------------------------------------------------------------------------------------

def _alias(name: str) -> property:
    """A read-only property answering under a second name: the stub serves both spellings."""
    return property(operator.attrgetter(name))


def _result_flag(key: str):
    """A CallbackTaskResult.is_<key>() method: the flag of that name in the result dict."""
    def flag(self) -> bool:
        return bool(self.result.get(key))
    flag.__name__ = "is_" + key
    return flag


class StubTaskResult:
    """What a callback gets from ansible-core 2.19 (CallbackTaskResult), minus the lazy
    transform of the result dict: host, task, the result dict, under both names."""

    __slots__ = ("host", "task", "result", "task_fields")

    def __init__(self, host, task, result: dict):
        self.host = host
        self.task = task
        self.result = result
        self.task_fields = {}

    _host = _alias("host")
    _task = _alias("task")
    _result = _alias("result")
    _task_fields = _alias("task_fields")
    is_changed = _result_flag("changed")
    is_failed = _result_flag("failed")
    is_unreachable = _result_flag("unreachable")
    is_skipped = _result_flag("skipped")

    @property
    def task_name(self):
        return self.task.get_name()


def _real_task_result_class():
    from ansible.executor.task_result import CallbackTaskResult

    def make(host, task, result):
        return CallbackTaskResult(host, task, result, {})
    return make


class StubPlaybook:
    """The callback reads the playbook's file name."""

    def __init__(self, file_name: str):
        self._file_name = file_name
        self._basedir = os.path.dirname(file_name)
        self._entries = []

    def get_plays(self):
        return list(self._entries)


def build_ansible_objects(names):
    """Real inventory (every host in group fleet), variable manager, play and tasks."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook.play import Play
    from ansible.playbook.task import Task
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    with contextlib.redirect_stderr(open(os.devnull, "w", encoding="utf-8")):  # "no inventory was parsed"
        inventory = InventoryManager(loader=loader, sources=[])
    inventory.add_group("fleet")
    for name in names:
        inventory.add_host(name, group="fleet")
    inventory.reconcile_inventory()
    variable_manager = VariableManager(loader=loader, inventory=inventory)
    play = Play.load({"name": "Validate the disks of the fleet", "hosts": "fleet", "gather_facts": False, "tasks": []},
                     variable_manager=variable_manager, loader=loader)

    def task(name, action, loop=None):
        new = Task()
        new.name = name
        new.action = action
        if loop is not None:
            new.loop = loop
            new.loop_control = None
        return new

    tasks = {
        "discover": task("diskproof.fleet.discover : Discover disks and resolve targets", "diskproof.fleet.disk_facts"),
        "quiesce": task("diskproof.fleet.quiesce : Quiesce the host", "diskproof.fleet.quiesce"),
        "write": task("diskproof.fleet.benchmark : Run the write tests (they create the test files)", "diskproof.fleet.bench_run",
                      loop="{{ __benchmark_plan | selectattr('phase', 'equalto', 'write') }}"),
        "read": task("diskproof.fleet.benchmark : Run the read tests on the files just written (caches dropped first)",
                     "diskproof.fleet.bench_run", loop="{{ __benchmark_plan | selectattr('phase', 'equalto', 'read') }}"),
        "cleanup": task("diskproof.fleet.benchmark : Remove the test files this run created", "ansible.builtin.file",
                        loop="{{ __benchmark_write_results.results | default([]) | map(attribute='created', default=[]) | flatten }}"),
        "restore": task("diskproof.fleet.quiesce : Restore the services", "diskproof.fleet.quiesce"),
    }
    hosts = {host.get_name(): host for host in inventory.get_hosts("fleet")}
    return inventory, play, tasks, hosts


# ---------------------------------------------------------------------------------------------
# the callback, loaded as ansible's plugin loader loads it
# ---------------------------------------------------------------------------------------------

def load_callback():
    """An instance of the real CallbackModule with its option definitions registered."""
    import importlib

    import yaml
    from ansible import constants as C

    module = importlib.import_module(CALLBACK_MODULE)
    if not C.config.has_configuration_definition("callback", CALLBACK_FQCN):
        # What the plugin loader registers: the options of the callback's docs and of the collection's doc fragments
        # they extend (read here directly: in a process that imported the collection as a plain package, as pytest
        # does, ansible-core's fragment loader does not find it).
        doc = yaml.safe_load(module.DOCUMENTATION) or {}
        options = dict(doc.get("options") or {})
        for name in doc.get("extends_documentation_fragment") or ():
            fragment = importlib.import_module(FRAGMENTS_PACKAGE + name.rsplit(".", 1)[1]).ModuleDocFragment
            options.update(yaml.safe_load(fragment.DOCUMENTATION).get("options") or {})
        C.config.initialize_plugin_configuration_definitions("callback", CALLBACK_FQCN, options)
    cls = module.CallbackModule
    callback = cls.__new__(cls)
    # What PluginLoader._update_object sets before __init__.
    callback._original_path = module.__file__
    callback._load_name = CALLBACK_FQCN
    callback._redirected_names = []
    callback.ansible_aliases = [CALLBACK_FQCN]
    callback.ansible_name = CALLBACK_FQCN
    callback.__init__()
    return callback


def option_definitions() -> dict:
    from ansible import constants as C
    return dict(C.config.get_configuration_definitions("callback", CALLBACK_FQCN) or {})


WRITER_OPTION = re.compile(r"(format|writer|output|html|markdown|\bmd\b|_md|csv|json|render)", re.IGNORECASE)


def choose_options(report_dir: str, extra: dict) -> tuple[dict, list[str]]:
    """report_dir, plus every writer the callback offers switched on; notes say what and why."""
    definitions = option_definitions()
    direct = {"report_dir": report_dir}
    notes = []
    for name, definition in sorted(definitions.items()):
        if name in direct or name in extra or not isinstance(definition, dict):
            continue
        kind = str(definition.get("type") or "str")
        choices = definition.get("choices")
        if kind == "list" and choices and WRITER_OPTION.search(name):
            direct[name] = list(choices.keys() if isinstance(choices, dict) else choices)
            notes.append("%s = %s (every writer)" % (name, direct[name]))
        elif kind in ("bool", "boolean") and WRITER_OPTION.search(name) and not definition.get("default"):
            direct[name] = True
            notes.append("%s = true (writer switched on)" % name)
    for name, value in extra.items():
        if name in definitions:
            direct[name] = value
        else:
            notes.append("ignored --option %s: the callback has no such option" % name)
    return direct, notes


# ---------------------------------------------------------------------------------------------
# one measured run
# ---------------------------------------------------------------------------------------------

class Meter:
    """process_time spent building inputs inside the measured loop, to subtract it.

    Inputs are built one (task, host) at a time, so a bracket costs two process_time calls per
    task and host, not per event; the calls' own cost (calibrated) is subtracted too.
    """

    def __init__(self):
        self.build = 0.0
        self.brackets = 0
        self.bracket_cost = self.calibrate()

    @staticmethod
    def calibrate(rounds: int = 20000) -> float:
        # What one bracket adds to the time around it: one clock read.
        samples = []
        for _sample in range(5):
            start = time.process_time()
            for _round in range(rounds):
                time.process_time()
            samples.append((time.process_time() - start) / rounds)
        return statistics.median(samples)

    @contextlib.contextmanager
    def building(self):
        start = time.process_time()
        try:
            yield
        finally:
            self.build += time.process_time() - start
            self.brackets += 1

    @property
    def overhead(self) -> float:
        return self.brackets * self.bracket_cost


def _round_trip(value):
    # Results reach the controller pickled through a queue: nothing shared between results.
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def _job_of(factory: RecordFactory, host: int, slot: int) -> dict:
    phase, target_index, test = factory.plan.slots[slot]
    target = factory.target(host, target_index)
    return {"test": test, "phase": phase, "tool": test.split("_")[0], "target": target,
            "creates": target["test_file"] if test == "dd_seq_write" else None, "drop_caches": phase == "read"}


def _unreachable_result(index: int) -> dict:
    return {"unreachable": True, "changed": False, "msg": UNREACHABLE_TEXT.format(address="10.6.%d.%d" % (index // 250, index % 250 + 2))}


def _discover_result(plan: FleetPlan, factory: RecordFactory, index: int) -> dict:
    disks = {}
    for target in range(plan.targets):
        identity = factory.target(index, target)
        disks[identity["device"]] = {key: value for key, value in identity.items() if key not in ("path", "test_file", "disks")}
    return {"changed": False, "ansible_facts": {"diskproof_host": {"hostname": plan.names[index], "memory_bytes": plan.host_memory[index]},
                                                "diskproof_disks": disks}}


def _loop_events(plan: FleetPlan, factory: RecordFactory, index: int, phase: str, generated: dict) -> tuple[list, bool]:
    """(method, result, extra args) of one benchmark loop on one host, and whether the host failed."""
    events = []
    items = []
    host_failed = False
    for slot, (slot_phase, _target, _test) in enumerate(plan.slots):
        if slot_phase != phase:
            continue
        failure = plan.failures.get((index, slot))
        job = _job_of(factory, index, slot)
        item = {"changed": True, "item": job, "ansible_loop_var": "item", "_ansible_item_label": "%s %s" % (job["test"], job["target"]["path"])}
        if failure == "no_record":
            item.update({"failed": True, "changed": False, "msg": MODULE_FAILURE, "module_stderr": "Killed\n", "rc": 137})
            generated["no_record_failures"] += 1
            generated["not_measured_rows"] += 1
            generated["slots_not_run"] += 1
        else:
            record = factory.record(index, slot, error=failure == "error")
            item["ansible_facts"] = {"diskproof_results": [record]}
            if job["creates"]:
                item["created"] = [job["creates"]]
            if failure == "error":
                item.update({"failed": True, "msg": record["error"]})
                generated["error_records"] += 1
            generated["records"] += 1
        host_failed = host_failed or failure is not None
        items.append(item)
        events.append(("v2_runner_item_on_failed" if failure else "v2_runner_item_on_ok", item, ()))
    # The loop's own result carries every item result again; the callback must not count them twice.
    summary = {"changed": True, "results": items, "msg": "One or more items failed" if host_failed else "All items completed"}
    if host_failed:
        summary["failed"] = True
        events.append(("v2_runner_on_failed", summary, (False,)))
    else:
        events.append(("v2_runner_on_ok", summary, ()))
    return events, host_failed


def feed(callback, plan: FleetPlan, factory: RecordFactory, tasks: dict, hosts: dict, stats, meter: Meter, make_result) -> dict:
    """Every runner event of the run, task by task (linear strategy), host by host.

    The events of one task on one host are built (and pickled and unpickled) together, inside a
    building bracket, then handed to the callback one by one.
    """
    names = plan.names
    generated = {"events": 0, "records": 0, "error_records": 0, "no_record_failures": 0, "unreachable_hosts": 0,
                 "slots_not_run": 0, "not_measured_rows": 0, "failed_hosts": 0}
    reachable = [index for index in range(len(names)) if index not in plan.unreachable]
    failed = set()

    def dispatch(task, index, events):
        host = hosts[names[index]]
        with meter.building():
            wrapped = [(method, make_result(host, task, _round_trip(result)), args) for method, result, args in events]
        callback.v2_runner_on_start(host, task)
        for method, task_result, args in wrapped:
            getattr(callback, method)(task_result, *args)
        generated["events"] += len(wrapped)

    # discover: unreachable hosts stop here, with a not_measured row each
    task = tasks["discover"]
    callback.v2_playbook_on_task_start(task, False)
    for index in range(len(names)):
        with meter.building():
            if index in plan.unreachable:
                events = [("v2_runner_on_unreachable", _unreachable_result(index), ())]
            else:
                events = [("v2_runner_on_ok", _discover_result(plan, factory, index), ())]
        dispatch(task, index, events)
        if index in plan.unreachable:
            stats.increment("dark", names[index])
            generated["unreachable_hosts"] += 1
            generated["not_measured_rows"] += 1
            generated["slots_not_run"] += len(plan.slots)
        else:
            stats.increment("ok", names[index])

    task = tasks["quiesce"]
    callback.v2_playbook_on_task_start(task, False)
    for index in reachable:
        dispatch(task, index, [("v2_runner_on_ok", {"changed": True, "ansible_facts": {"diskproof_quiesce": {"stopped": ["cron.service"], "idle": True}}}, ())])
        stats.increment("ok", names[index])
        stats.increment("changed", names[index])

    # the two benchmark loops: an item event per job, then the loop's summary
    for phase in ("write", "read"):
        task = tasks[phase]
        callback.v2_playbook_on_task_start(task, False)
        for index in reachable:
            if index in failed:
                # A failed host leaves the block: its later jobs never run.
                generated["slots_not_run"] += sum(1 for slot in plan.slots if slot[0] == phase)
                continue
            with meter.building():
                events, host_failed = _loop_events(plan, factory, index, phase, generated)
            dispatch(task, index, events)
            if host_failed:
                stats.increment("failures", names[index])
                failed.add(index)
                generated["failed_hosts"] += 1
            else:
                stats.increment("ok", names[index])
                stats.increment("changed", names[index])

    # always: remove the test files, restore the services
    task = tasks["cleanup"]
    callback.v2_playbook_on_task_start(task, False)
    for index in reachable:
        with meter.building():
            items = [{"changed": True, "path": "%s/d%d/%s" % (TARGET_ROOT, target, TEST_FILE_NAME), "state": "absent",
                      "item": "%s/d%d/%s" % (TARGET_ROOT, target, TEST_FILE_NAME), "ansible_loop_var": "item"} for target in range(plan.targets)]
            events = [("v2_runner_item_on_ok", item, ()) for item in items]
            events.append(("v2_runner_on_ok", {"changed": True, "results": items, "msg": "All items completed"}, ()))
        dispatch(task, index, events)
    task = tasks["restore"]
    callback.v2_playbook_on_task_start(task, False)
    for index in reachable:
        dispatch(task, index, [("v2_runner_on_ok", {"changed": True, "ansible_facts": {"diskproof_quiesce": {"restored": ["cron.service"]}}}, ())])
        stats.increment("ok", names[index])
    return generated


def _files_written(report_dir: str) -> dict:
    sizes = {}
    for root, _dirs, files in os.walk(report_dir):
        for name in files:
            path = os.path.join(root, name)
            sizes[os.path.relpath(path, report_dir)] = os.path.getsize(path)
    return dict(sorted(sizes.items()))


@contextlib.contextmanager
def _time_stats_phases(callback):
    """CPU seconds of the parts of on_stats, by label, while in the block: the callback's own methods (wrapped
    on the instance only) and the pipeline's functions (wrapped in its module, put back after), when they exist."""
    spent = {}
    pipeline = sys.modules.get(PIPELINE_MODULE)
    originals = []
    for where, name, label in STATS_PHASES:
        owner = callback if where == "callback" else pipeline
        method = getattr(owner, name, None)
        if not callable(method):
            continue
        originals.append((owner, name, method))

        def timed(*args, _method=method, _label=label, **kwargs):
            start = time.process_time()
            try:
                return _method(*args, **kwargs)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.process_time() - start
        setattr(owner, name, timed)
    try:
        yield spent
    finally:
        for owner, name, method in originals:
            setattr(owner, name, method)


def run_once(hosts: int = DEFAULT_HOSTS, results_per_host: int = DEFAULT_RESULTS_PER_HOST, seed: int = DEFAULT_SEED,
             report_dir: str | None = None, unreachable_rate: float = 0.01, error_rate: float = 0.003, no_record_rate: float = 0.001,
             slow_rate: float = 0.03, extra_options: dict | None = None, real_task_result: bool = False, profile_dir: str | None = None,
             workdir: str | None = None, no_op_callback: bool = False, disk_state: bool = False) -> dict:
    """One measured run in this process. Returns figures and what was generated.

    ``workdir`` (default: a new temp dir, left for the caller to remove) receives the console
    output and, unless ``report_dir`` is given, the report."""
    _ensure_collection_importable()
    cpu_start = time.process_time()
    setup_start = time.perf_counter()
    workdir = workdir or tempfile.mkdtemp(prefix="diskproof-callback-scale-")
    report_dir = report_dir or os.path.join(workdir, "report")
    capture_dir = os.path.join(workdir, "console")
    os.makedirs(capture_dir)

    from ansible.executor.stats import AggregateStats

    templates = load_templates()
    plan = FleetPlan(hosts, results_per_host, seed, unreachable_rate, error_rate, no_record_rate, slow_rate)
    factory = RecordFactory(templates, plan, seed, disk_state)
    # Every synthetic record has exactly the lab record's shape (spot check per test), disk_state aside.
    for slot, (_phase, _target, test) in enumerate(plan.slots[:TESTS_PER_TARGET * 1]):
        shape = _shape(factory.record(0, slot, error=False))
        shape.pop("disk_state", None)
        if shape != {**factory.shapes[test], "target": _shape(factory.target(0, 0))}:
            raise AssertionError("synthetic %s record does not have the lab record's shape" % test)
    _inventory, play, tasks, host_objects = build_ansible_objects(plan.names)
    stats = AggregateStats()
    callback = load_callback()
    direct, notes = choose_options(report_dir, extra_options or {})
    callback.set_options(direct=direct)
    effective = {}
    for name in sorted(option_definitions()):
        try:
            effective[name] = callback.get_option(name)
        except KeyError:
            effective[name] = "<unset>"
    make_result = _real_task_result_class() if real_task_result else StubTaskResult
    if no_op_callback:
        for name in EVENT_METHODS:
            setattr(callback, name, lambda *args, **kwargs: None)
    setup_cpu = time.process_time() - cpu_start
    setup_wall = time.perf_counter() - setup_start
    rss_after_setup = _rss_now_kib()
    maxrss_after_setup = _maxrss_kib()

    meter = Meter()
    stdout_path = os.path.join(capture_dir, "stdout.txt")
    stderr_path = os.path.join(capture_dir, "stderr.txt")
    profiles = {}
    with open(stdout_path, "w", encoding="utf-8") as out, open(stderr_path, "w", encoding="utf-8") as err, \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        profiler = cProfile.Profile() if profile_dir else None
        ingest_start = time.process_time()
        ingest_wall = time.perf_counter()
        if profiler:
            profiler.enable()
        callback.v2_playbook_on_start(StubPlaybook(os.path.join(workdir, "validate.yml")))
        callback.v2_playbook_on_play_start(play)
        generated = feed(callback, plan, factory, tasks, host_objects, stats, meter, make_result)
        if profiler:
            profiler.disable()
            profiles["ingestion"] = profiler
        ingest_cpu = time.process_time() - ingest_start - meter.build - meter.overhead
        ingest_wall = time.perf_counter() - ingest_wall
        disabled_after_ingest = bool(callback.disabled)
        rss_after_ingest = _rss_now_kib()
        maxrss_after_ingest = _maxrss_kib()

        profiler = cProfile.Profile() if profile_dir else None
        usage_before = resource.getrusage(resource.RUSAGE_SELF)
        stats_start = time.process_time()
        stats_wall = time.perf_counter()
        if profiler:
            profiler.enable()
        with _time_stats_phases(callback) as stats_phases:
            callback.v2_playbook_on_stats(stats)
        if profiler:
            profiler.disable()
            profiles["aggregation_writers"] = profiler
        stats_cpu = time.process_time() - stats_start
        stats_wall = time.perf_counter() - stats_wall
        usage_after = resource.getrusage(resource.RUSAGE_SELF)
        rss_after_stats = _rss_now_kib()
        maxrss_after_stats = _maxrss_kib()
        out.flush()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(stderr_path, encoding="utf-8", errors="replace") as stream:
        stderr_text = stream.read()
    if profile_dir:
        os.makedirs(profile_dir, exist_ok=True)
        for name, profiler in profiles.items():
            profiler.dump_stats(os.path.join(profile_dir, name + ".prof"))

    files = _files_written(report_dir) if os.path.isdir(report_dir) else {}
    measured_cpu = ingest_cpu + stats_cpu
    peak_mb = _kib_to_mb(maxrss_after_stats)
    problems = []
    if callback.disabled:
        problems.append("the callback disabled itself: " + " ".join(stderr_text.split())[:500])
    if "report.json" not in files and not no_op_callback:
        problems.append("no report.json written")
    figures = {
        "hosts": hosts, "results_per_host": results_per_host, "seed": seed,
        "real_task_result": real_task_result, "profiled": bool(profile_dir), "no_op_callback": no_op_callback,
        "generated": generated,
        "fleet": {"slow_disks": plan.slow_disks, "disks": hosts * plan.targets, "models": [model["model"] for model in DISK_MODELS]},
        "cpu_s": {"setup": setup_cpu, "building": meter.build, "bracket_overhead": meter.overhead, "ingestion": ingest_cpu, "aggregation_writers": stats_cpu,
                  "measured": measured_cpu},
        "stats_phases_cpu_s": dict(stats_phases),
        # on_stats: user and system CPU, and what it read from disk (ru_inblock: 512-byte blocks).
        "stats_rusage": {"user_s": usage_after.ru_utime - usage_before.ru_utime, "system_s": usage_after.ru_stime - usage_before.ru_stime,
                         "read_mb": (usage_after.ru_inblock - usage_before.ru_inblock) * 512 / 1e6,
                         "major_faults": usage_after.ru_majflt - usage_before.ru_majflt},
        "wall_s": {"setup": setup_wall, "ingestion": ingest_wall - meter.build, "aggregation_writers": stats_wall},
        "rusage_total": {"user_s": usage.ru_utime, "system_s": usage.ru_stime},
        "rss_kib": {"after_setup": rss_after_setup, "after_ingestion": rss_after_ingest, "after_aggregation_writers": rss_after_stats},
        "maxrss_kib": {"after_setup": maxrss_after_setup, "after_ingestion": maxrss_after_ingest, "after_aggregation_writers": maxrss_after_stats},
        "peak_rss_mb": peak_mb,
        "files": files,
        "console_bytes": os.path.getsize(stdout_path),
        "options": effective, "option_notes": notes,
        "callback_disabled": bool(callback.disabled), "disabled_after_ingestion": disabled_after_ingest,
        "warnings": stderr_text.strip()[:2000],
        "code": _code_fingerprint(),
        "report_dir": report_dir,
        "workdir": workdir,
        "python": platform.python_version(),
        "machine": _machine(),
        "targets": {"cpu_s": TARGET_CPU_S, "peak_rss_mb": TARGET_RSS_MB},
        "cpu_pass": stats_cpu <= TARGET_CPU_S,
        "rss_pass": peak_mb is not None and peak_mb <= TARGET_RSS_MB,
        "problems": problems,
    }
    figures["pass"] = figures["cpu_pass"] and figures["rss_pass"] and not problems
    return figures


def _machine() -> dict:
    memory_kib = None
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            memory_kib = int(stream.readline().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    cpu_model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            cpu_model = next((line.split(":", 1)[1].strip() for line in stream if line.startswith("model name")), None)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "memory_gib": None if memory_kib is None else round(memory_kib / 2 ** 20, 1), "cpu_model": cpu_model,
            "kernel": platform.release()}


# ---------------------------------------------------------------------------------------------
# presentation
# ---------------------------------------------------------------------------------------------

def _mb(kib) -> str:
    return "-" if kib is None else "%.1f" % _kib_to_mb(kib)


def _status(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _stats_rusage_lines(figures: dict) -> list[str]:
    usage = figures.get("stats_rusage")
    if not usage:
        return []
    return ["%-40s %10.2f" % ("  user CPU", usage["user_s"]), "%-40s %10.2f" % ("  system CPU", usage["system_s"]),
            "%-40s %10.1f" % ("  read from disk, MB (not CPU)", usage["read_mb"])]


def format_run(figures: dict) -> str:
    cpu, rss, maxrss = figures["cpu_s"], figures["rss_kib"], figures["maxrss_kib"]
    generated = figures["generated"]
    lines = [
        "diskproof.fleet.report at scale: %d hosts x %d results (seed %d)%s%s" % (
            figures["hosts"], figures["results_per_host"], figures["seed"], ", PROFILED (figures inflated)" if figures["profiled"] else "",
            ", NO-OP CALLBACK (the harness's own cost)" if figures.get("no_op_callback") else ""),
        "generated: %(records)d records (%(error_records)d with error), %(no_record_failures)d failures without record, "
        "%(unreachable_hosts)d unreachable hosts, %(failed_hosts)d failed hosts, %(slots_not_run)d result slots not run, "
        "%(not_measured_rows)d not_measured rows, %(events)d runner events" % generated,
        "",
        "%-40s %10s %16s %16s" % ("phase", "CPU s", "RSS after MB", "peak RSS MB"),
        "%-40s %10.2f %16s %16s" % ("setup (not counted)", cpu["setup"], _mb(rss["after_setup"]), _mb(maxrss["after_setup"])),
        "%-40s %10.2f %16s %16s" % ("building results (not counted)", cpu["building"], "", ""),
        "%-40s %10.2f %16s %16s" % ("clock reads around building (subtracted)", cpu.get("bracket_overhead", 0.0), "", ""),
        "%-40s %10.2f %16s %16s" % ("event ingestion", cpu["ingestion"], _mb(rss["after_ingestion"]), _mb(maxrss["after_ingestion"])),
        "%-40s %10.2f %16s %16s" % ("aggregation + all writers (on_stats)", cpu["aggregation_writers"], _mb(rss["after_aggregation_writers"]),
                                    _mb(maxrss["after_aggregation_writers"])),
    ] + ["%-40s %10.2f" % ("  of which " + label[:29], figures["stats_phases_cpu_s"][label]) for _where, _name, label in STATS_PHASES
         if label in figures.get("stats_phases_cpu_s", {})] + _stats_rusage_lines(figures) + [
        "%-40s %10.2f %16s %16s" % ("ingestion + aggregation + writers", cpu["measured"], "", _mb(maxrss["after_aggregation_writers"])),
        "",
        "files written (%s):" % figures["report_dir"],
    ]
    lines.extend("  %-30s %14s bytes" % (name, format(size, ",")) for name, size in figures["files"].items())
    lines.append("  %-30s %14s bytes" % ("(console output)", format(figures["console_bytes"], ",")))
    for note in figures["option_notes"]:
        lines.append("option: " + note)
    lines.append("options in effect: " + json.dumps(figures["options"], sort_keys=True, default=str))
    lines.append("code: " + json.dumps(figures["code"], sort_keys=True))
    for problem in figures["problems"]:
        lines.append("PROBLEM: " + problem)
    lines.extend([
        "",
        "CPU  %.2f s aggregation + writers (target <= %.1f s)   %s   (ingestion %.2f s, sum %.2f s)" % (
            cpu["aggregation_writers"], TARGET_CPU_S, _status(figures["cpu_pass"]), cpu["ingestion"], cpu["measured"]),
        "RSS  %.1f MB (target <= %.0f MB)  %s  (peak of the whole process; %s MB after setup)" % (
            figures["peak_rss_mb"], TARGET_RSS_MB, _status(figures["rss_pass"]), _mb(maxrss["after_setup"])),
        "overall: %s" % _status(figures["pass"]),
    ])
    return "\n".join(lines)


SUMMARY_ROWS = (
    ("event ingestion, CPU s", lambda f: f["cpu_s"]["ingestion"], "%.2f"),
    ("aggregation + writers (on_stats), CPU s", lambda f: f["cpu_s"]["aggregation_writers"], "%.2f"),
    ("  on_stats user CPU, s", lambda f: f.get("stats_rusage", {}).get("user_s", 0.0), "%.2f"),
    ("  on_stats system CPU, s", lambda f: f.get("stats_rusage", {}).get("system_s", 0.0), "%.2f"),
    ("  on_stats read from disk, MB", lambda f: f.get("stats_rusage", {}).get("read_mb", 0.0), "%.1f"),
    ("ingestion + aggregation + writers, CPU s", lambda f: f["cpu_s"]["measured"], "%.2f"),
    ("record building (not counted), CPU s", lambda f: f["cpu_s"]["building"], "%.2f"),
    ("RSS after setup, MB", lambda f: _kib_to_mb(f["maxrss_kib"]["after_setup"]), "%.1f"),
    ("peak RSS after ingestion, MB", lambda f: _kib_to_mb(f["maxrss_kib"]["after_ingestion"]), "%.1f"),
    ("peak RSS after aggregation + writers, MB", lambda f: f["peak_rss_mb"], "%.1f"),
)


def format_summary(runs: list[dict], markdown: bool = False) -> str:
    """Per-run figures and their median; PASS/FAIL on the medians."""
    headers = ["measure"] + ["run %d" % (index + 1) for index in range(len(runs))] + ["median"]
    rows = []
    medians = {}
    for label, getter, fmt in SUMMARY_ROWS:
        values = [getter(run) for run in runs]
        medians[label] = statistics.median(values)
        rows.append([label] + [fmt % value for value in values] + [fmt % medians[label]])
        if label.startswith("aggregation + writers"):
            for phase in [label for _where, _name, label in STATS_PHASES if label in runs[0].get("stats_phases_cpu_s", {})]:
                values = [run.get("stats_phases_cpu_s", {}).get(phase, 0.0) for run in runs]
                rows.append(["  of which %s, CPU s" % phase] + ["%.2f" % value for value in values] + ["%.2f" % statistics.median(values)])
    files = runs[0]["files"]
    for name in files:
        sizes = [run["files"].get(name, 0) for run in runs]
        rows.append(["%s, bytes" % name] + [format(size, ",") for size in sizes] + [format(int(statistics.median(sizes)), ",")])
    console = [run["console_bytes"] for run in runs]
    rows.append(["console output, bytes"] + [format(size, ",") for size in console] + [format(int(statistics.median(console)), ",")])
    for name in CODE_FILES:
        # Other work may change the code between runs: each run names what it measured.
        versions = [str(run["code"].get(name)) for run in runs]
        rows.append(["%s sha256" % os.path.basename(name)] + versions + ["same" if len(set(versions)) == 1 else "DIFFERENT"])
    cpu = medians["aggregation + writers (on_stats), CPU s"]
    rss = medians["peak RSS after aggregation + writers, MB"]
    problems = sorted({problem for run in runs for problem in run["problems"]})
    verdict = [
        "CPU  median %.2f s aggregation + writers (target <= %.1f s)  %s  (quietest run %.2f s; ingestion median %.2f s)" % (
            cpu, TARGET_CPU_S, _status(cpu <= TARGET_CPU_S), min(run["cpu_s"]["aggregation_writers"] for run in runs),
            medians["event ingestion, CPU s"]),
        "RSS  median %.1f MB (target <= %.0f MB)  %s" % (rss, TARGET_RSS_MB, _status(rss <= TARGET_RSS_MB)),
        "overall: %s" % _status(cpu <= TARGET_CPU_S and rss <= TARGET_RSS_MB and not problems),
    ] + ["PROBLEM: " + problem for problem in problems]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|"]
        lines.extend("| " + " | ".join(row) + " |" for row in rows)
    else:
        widths = [max(len(str(row[index])) for row in [headers] + rows) for index in range(len(headers))]
        lines = ["  ".join(cell.ljust(widths[0]) if index == 0 else cell.rjust(widths[index]) for index, cell in enumerate(row)).rstrip()
                 for row in [headers, ["-" * width for width in widths]] + rows]
    return "\n".join(lines + [""] + verdict)


def print_profile(profile_dir: str, limit: int = 25) -> None:
    for name in ("ingestion", "aggregation_writers"):
        path = os.path.join(profile_dir, name + ".prof")
        if os.path.exists(path):
            print("\n== cProfile: %s (top %d by cumulative time) ==" % (name, limit))
            stats = pstats.Stats(path, stream=sys.stdout)
            stats.strip_dirs().sort_stats("cumulative").print_stats(limit)
            stats.sort_stats("tottime").print_stats(limit)


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------

def _parse_option(text: str) -> tuple[str, object]:
    name, separator, value = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError("--option wants NAME=VALUE (VALUE as YAML), got %r" % text)
    import yaml
    return name.strip(), yaml.safe_load(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=DEFAULT_HOSTS, help="hosts in the fleet (default %(default)s)")
    parser.add_argument("--results-per-host", type=int, default=DEFAULT_RESULTS_PER_HOST,
                        help="result records per host: targets x %d tests (default %%(default)s)" % TESTS_PER_TARGET)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--repeat", type=int, default=1, help="run this many separate processes and report the median")
    parser.add_argument("--report-dir", help="where the callback writes (default: a temp dir, removed afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (report, console output)")
    parser.add_argument("--unreachable-rate", type=float, default=0.01, help="share of hosts unreachable (default %(default)s)")
    parser.add_argument("--error-rate", type=float, default=0.003, help="share of results that fail with an error record (default %(default)s)")
    parser.add_argument("--no-record-rate", type=float, default=0.001, help="share of results that fail without a record (default %(default)s)")
    parser.add_argument("--slow-rate", type=float, default=0.03, help="share of disks that are slow (default %(default)s)")
    parser.add_argument("--option", action="append", type=_parse_option, default=[], metavar="NAME=VALUE",
                        help="extra callback option (VALUE as YAML); unknown names are reported and ignored")
    parser.add_argument("--real-task-result", action="store_true",
                        help="hand the callback ansible-core's CallbackTaskResult instead of the stand-in (adds its lazy result transform)")
    parser.add_argument("--profile", metavar="DIR", help="cProfile ingestion and on_stats into DIR/*.prof and print the top functions")
    parser.add_argument("--no-op-callback", action="store_true",
                        help="event handlers that do nothing: the ingestion figure is this script's own dispatch cost (writes no report)")
    parser.add_argument("--disk-state", action="store_true",
                        help="give every record a disk_state (before/after readings: the health rules' and likely causes' input)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument("--markdown", action="store_true", help="summary table (with --repeat) as markdown")
    return parser


def _child_command(args, json_path: str) -> list[str]:
    command = [sys.executable, os.path.abspath(__file__), "--hosts", str(args.hosts), "--results-per-host", str(args.results_per_host),
               "--seed", str(args.seed), "--unreachable-rate", str(args.unreachable_rate), "--error-rate", str(args.error_rate),
               "--no-record-rate", str(args.no_record_rate), "--slow-rate", str(args.slow_rate), "--json", json_path]
    for name, value in args.option:
        command += ["--option", "%s=%s" % (name, json.dumps(value))]
    if args.real_task_result:
        command.append("--real-task-result")
    if args.no_op_callback:
        command.append("--no-op-callback")
    if args.disk_state:
        command.append("--disk-state")
    return command


def repeat(args) -> int:
    runs = []
    with tempfile.TemporaryDirectory(prefix="diskproof-callback-scale-runs-") as directory:
        for index in range(args.repeat):
            json_path = os.path.join(directory, "run%d.json" % index)
            # A fresh process per measurement: peak RSS is per process.
            completed = subprocess.run(_child_command(args, json_path), capture_output=True, text=True, check=False)
            if completed.returncode not in (0, 1) or not os.path.exists(json_path):
                sys.stderr.write(completed.stdout + completed.stderr)
                return 2
            with open(json_path, encoding="utf-8") as stream:
                run = json.load(stream)
            runs.append(run)
            print("run %d/%d: CPU %.2f s (ingestion %.2f + on_stats %.2f), peak RSS %.1f MB" % (
                index + 1, args.repeat, run["cpu_s"]["measured"], run["cpu_s"]["ingestion"], run["cpu_s"]["aggregation_writers"], run["peak_rss_mb"]),
                flush=True)
    first = runs[0]
    print("\ndiskproof.fleet.report at scale: %d hosts x %d results, %d separate processes, %s, Python %s, %s CPUs, %s GiB" % (
        args.hosts, args.results_per_host, len(runs), datetime.date.today().isoformat(), first["python"], first["machine"]["cpus"],
        first["machine"]["memory_gib"]))
    print("generated: " + json.dumps(first["generated"], sort_keys=True))
    print("code: " + json.dumps(first["code"], sort_keys=True))
    print(format_summary(runs, markdown=args.markdown))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump(runs, stream, indent=2, sort_keys=True)
    return 0 if all(run["pass"] for run in runs) else 1


def main(argv=None) -> dict:
    """Run one measurement (or, with --repeat > 1, that many subprocesses); return the figures."""
    args = build_parser().parse_args(argv)
    if args.repeat > 1:
        return {"exit_code": repeat(args)}
    workdir = tempfile.mkdtemp(prefix="diskproof-callback-scale-")
    try:
        figures = run_once(workdir=workdir, hosts=args.hosts, results_per_host=args.results_per_host, seed=args.seed, report_dir=args.report_dir,
                           unreachable_rate=args.unreachable_rate, error_rate=args.error_rate, no_record_rate=args.no_record_rate,
                           slow_rate=args.slow_rate, extra_options=dict(args.option), real_task_result=args.real_task_result,
                           profile_dir=args.profile, no_op_callback=args.no_op_callback, disk_state=args.disk_state)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as stream:
                json.dump(figures, stream, indent=2, sort_keys=True)
        print(format_run(figures), flush=True)
        if args.profile:
            print_profile(args.profile)
    finally:
        # Reports at scale are hundreds of MB: never leave them behind unless asked to.
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    figures["exit_code"] = 0 if figures["pass"] else 1
    return figures


if __name__ == "__main__":
    _WORKDIR = tempfile.mkdtemp(prefix="diskproof-callback-scale-env-")
    _isolate_environment(_WORKDIR)
    try:
        _RESULT = main()
    finally:
        shutil.rmtree(_WORKDIR, ignore_errors=True)
    sys.exit(_RESULT["exit_code"])
