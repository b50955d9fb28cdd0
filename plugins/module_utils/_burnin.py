# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in (profile ``burnin``): cycles of verified writes and reads within a time budget, the disk's health
counters read around every cycle, the rest of the burn-in stopped at the first new media error, CRC error or
critical warning.

Each cycle is one bench_run call (the plan's ``burnin_<k>of<N>``, a fio write-and-verify pass over the target), so
progress shows as cycles finish. What a target's cycles share lives in one private file of the host's state
directory, ``burnin-<run id>-<crc32 of the target path>.json``: when its burn-in began, its budget, the health counters read
before its first cycle (the baseline), the cycles done and why it stopped. A cycle that starts past the budget, or
after the burn-in stopped, runs nothing and says why; the target's last planned cycle (or a cancel) removes the
file.

The health counters are the ones the discover role and the evidence bundle read (smartctl -x -j; nvme smart-log
for NVMe): reallocated, pending and offline-uncorrectable sectors, UDMA CRC errors (ATA); media errors, error-log
entries and the critical warning (NVMe); grown defects and uncorrected read/write errors (SCSI); SMART's overall
verdict. A disk without them (virtio, loop) is burnt in on its data alone: "unknown", never an error.

Host code, stdlib only, no Ansible imports.
"""
from __future__ import annotations

import json
import time
import zlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import _state_dir
from ._health import health_counters, new_problems, probe_health
from ._results import NotRun

KIND = "diskproof-burnin"
SCHEMA = 1


def state_name(run_id: str, target_path: str) -> str:
    """burnin-<run id>-<crc32 of the target's path>.json: one file per target of the run."""
    return "burnin-%s-%08x.json" % (run_id, zlib.crc32(target_path.encode("utf-8", "surrogateescape")))


def read_health(find_bin: Callable[[str], Optional[str]], device_path: Optional[str]) -> Dict[str, Any]:
    """health_counters of the disk now, read as the discover role reads them (all unknown without a device)."""
    if not device_path:
        return health_counters(None, None)
    return health_counters(*probe_health(find_bin, device_path, device_path.rsplit("/", 1)[-1].startswith("nvme")))


def parse_state(text: str, what: str) -> Dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise _state_dir.QuiesceError("%s is not valid JSON (%s): remove it" % (what, error))
    if not isinstance(document, dict) or document.get("kind") != KIND or document.get("schema") != SCHEMA:
        raise _state_dir.QuiesceError("%s is not a diskproof burn-in state file (kind %s, schema %d): remove it"
                                      % (what, KIND, SCHEMA))
    return document


def _duration(seconds: float) -> str:
    """'45 s', '1 min 40 s', '2 h 05 min'."""
    if seconds < 60:
        return "%.0f s" % seconds
    if seconds < 3600:
        minutes, rest = divmod(int(round(seconds)), 60)
        return "%d min %d s" % (minutes, rest) if rest else "%d min" % minutes
    return "%d h %02d min" % divmod(int(round(seconds / 60)), 60)


class Cycle:
    """One burn-in cycle of one target: ``begin`` before it runs (NotRun: it does not), ``end`` after it,
    ``finish`` after the target's last planned cycle."""

    def __init__(self, state_dir: str, params: Mapping[str, Any], device_path: Optional[str],
                 find_bin: Callable[[str], Optional[str]], clock: Callable[[], float] = time.time) -> None:
        self.state_dir, self.device_path = state_dir, device_path
        self.name = state_name(str(params["burnin_run"]), str(params["burnin_target"]))
        self.number, self.cycles = int(params["burnin_cycle"]), int(params["burnin_cycles"])
        self.budget_s = float(params["burnin_budget_s"])
        self.find_bin, self.clock = find_bin, clock
        self.baseline: Dict[str, Any] = {}
        self.last = self.number >= self.cycles

    def _update(self, change: Callable[[Optional[Dict[str, Any]]], Tuple[Optional[Dict[str, Any]], Any]]) -> Any:
        """change(the state document or None) -> (document to write, answer), under the state directory's mutex."""
        with _state_dir.StateDir(self.state_dir, create=True) as state, state.mutex():
            document, error = state.read(self.name, parse_state)
            if error:
                raise _state_dir.QuiesceError(error)
            document, answer = change(document)
            if document is not None:
                state.write(self.name, document)
            return answer

    def begin(self) -> None:
        """NotRun when this target's budget is spent or its burn-in stopped; else the baseline is known (read now,
        before the target's first cycle) and the cycle may run."""
        def check(document: Optional[Dict[str, Any]]) -> Tuple[Optional[Dict[str, Any]], Tuple[Optional[str], Any]]:
            if document is None:
                document = {"kind": KIND, "schema": SCHEMA, "started": self.clock(), "budget_s": self.budget_s,
                            "baseline": read_health(self.find_bin, self.device_path), "cycles_done": 0,
                            "stopped": None}
                return document, (None, document["baseline"])
            if document.get("stopped"):
                reason = "burn-in stopped after cycle %d: %s" % (document["cycles_done"], document["stopped"])
            elif self.clock() - document["started"] >= document["budget_s"]:
                reason = ("burn-in budget of %s spent (%s since it began) after %d of %d cycles"
                          % (_duration(document["budget_s"]), _duration(self.clock() - document["started"]),
                             document["cycles_done"], self.cycles))
            else:
                reason = None
            if reason:
                # the first cycle that runs nothing says why (a warning); the later ones only skip
                told = bool(document.get("told"))
                document["told"] = True
                return document, (reason, told)
            return None, (None, document["baseline"])
        reason, answer = self._update(check)
        if reason:
            raise NotRun(reason, told=answer)
        self.baseline = dict(answer or {})

    def end(self, records: List[Dict[str, Any]]) -> str:
        """After the cycle: the health read again and held against the baseline; each record gets ``health``
        (baseline, after, what grew) and, when something grew, an error naming it, which stops the burn-in. The
        progress text for the records' note."""
        now = read_health(self.find_bin, self.device_path)
        problems = new_problems(self.baseline, now)

        def record_cycle(document: Optional[Dict[str, Any]]) -> Tuple[Optional[Dict[str, Any]], float]:
            document = document or {"kind": KIND, "schema": SCHEMA, "started": self.clock(),
                                    "budget_s": self.budget_s, "baseline": self.baseline}
            document.update(cycles_done=self.number, stopped="; ".join(problems) or None)
            return document, self.clock() - document["started"]
        spent = self._update(record_cycle)
        for record in records:
            record["health"] = {"baseline": self.baseline, "after": now, "grew": problems}
            if problems:
                reason = "health: %s since the burn-in began (cycle %d of %d): the burn-in stopped" % (
                    ", ".join(problems), self.number, self.cycles)
                record["error"] = reason if not record.get("error") else "%s; %s" % (record["error"], reason)
        return "burn-in cycle %d of up to %d: %s of the %s budget used" % (
            self.number, self.cycles, _duration(spent), _duration(self.budget_s))

    def finish(self) -> None:
        """The target's last planned cycle ran (or was not run), or the job was cancelled: its state file goes."""
        with _state_dir.StateDir(self.state_dir, create=True) as state, state.mutex():
            state.remove(self.name)
