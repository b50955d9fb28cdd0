# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Steady state of an SSD, from fio's ``steadystate`` object: the record's ``steady_state`` and its figures.

Pure Python (no Ansible imports). ``bench_run`` calls ``apply`` on each record of a job that ran with
fio's ``steadystate=`` (the catalog's ``ssd_steady_rand_write`` / ``ssd_steady_rand_read``); the report
judges ``steady_state.attained`` (verdict ``not_steady``). docs/tests.md explains the method.

fio samples the job's IOPS and bytes/s once a second after ``ss_ramp`` and keeps the last ``ss_dur``
samples (the window); it stops the job as soon as its criterion holds over the window, else at
``runtime`` (the time limit). fio computes only the figure of its own criterion (the deviation for
``iops:``, the slope for ``iops_slope:``); both are computed here from the window, with fio's formulas,
so every record carries both:

- max deviation: the largest |sample - mean|, as % of the mean (fio's ``iops:X%``);
- slope: the least-squares slope of the samples per second, and as % of the mean per sample (fio's
  ``iops_slope:X%``); ``slope_excursion_percent`` is the fitted line's change across the whole window
  as % of the mean (the SNIA PTS "slope excursion", limit 10 %).

The record's figures (``metrics.<direction>_iops`` / ``_bytes_per_s``) are the window's means: that is the
steady-state figure a datasheet quotes. fio's whole-job figures (fresh start included) are kept in
``steady_state.job_iops`` / ``job_bytes_per_s``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence


def window_figures(samples: Sequence[float]) -> Dict[str, Optional[float]]:
    """mean, slope (per second and as % of the mean), slope excursion % and max deviation % of a window."""
    count = len(samples)
    if not count:
        return {"mean": None, "slope_per_s": None, "slope_percent": None, "slope_excursion_percent": None,
                "max_deviation_percent": None}
    mean = sum(samples) / count
    slope = 0.0
    if count > 1:
        x_mean = (count - 1) / 2.0
        numerator = sum((index - x_mean) * (value - mean) for index, value in enumerate(samples))
        denominator = sum((index - x_mean) ** 2 for index in range(count))
        slope = numerator / denominator
    deviation = max(abs(value - mean) for value in samples)

    def percent(value: float) -> Optional[float]:
        return 100.0 * value / mean if mean > 0 else None

    return {"mean": mean, "slope_per_s": slope, "slope_percent": percent(abs(slope)),
            "slope_excursion_percent": percent(abs(slope) * (count - 1)), "max_deviation_percent": percent(deviation)}


def _direction(record: Mapping[str, Any]) -> Optional[str]:
    """read or write: the direction the job measured (a steady-state job does one)."""
    metrics = record.get("metrics") or {}
    found = [name for name in ("write", "read") if metrics.get(name + "_iops") is not None]
    return found[0] if len(found) == 1 else None


def steady_state(found: Any, record: Mapping[str, Any], params: Mapping[str, Any]) -> Dict[str, Any]:
    """The record's ``steady_state`` from fio's (``_parse.fio_job.SteadyState``) and the run's params.

    ``attained`` is fio's verdict, and, when ``params.ss_max_slope_excursion_percent`` is set, also that
    the window's slope excursion stays within it (SNIA asks for both a flat and a level window; fio checks
    one criterion per job).
    """
    iops: List[int] = list(found.iops)
    bandwidth: List[int] = list(found.bw)
    figures = window_figures(iops)
    bw_mean = sum(bandwidth) / len(bandwidth) if bandwidth else None
    moved = record.get("bytes")
    window_bytes = sum(bandwidth)
    limit = params.get("ss_max_slope_excursion_percent")
    reasons: List[str] = []
    if not found.attained:
        reasons.append("fio's criterion %s did not hold over a %d s window within the time limit of %s s"
                       % (params.get("steadystate") or found.setting, found.duration_s, params.get("runtime_s")))
    excursion = figures["slope_excursion_percent"]
    if found.attained and limit is not None and excursion is not None and excursion > limit:
        reasons.append("slope excursion %.1f%% of the mean across the window > %g%%" % (excursion, limit))
    direction = _direction(record)
    metrics = record.get("metrics") or {}
    return {
        "attained": not reasons,
        "fio_attained": bool(found.attained),
        "criterion": params.get("steadystate") or found.setting,
        "fio_criterion": found.setting,
        "fio_criterion_value": found.criterion,
        "max_slope_excursion_percent": limit,
        "window_s": found.duration_s,
        "ramp_s": params.get("ss_ramp_s"),
        "time_limit_s": params.get("runtime_s"),
        "direction": direction,
        "iops_mean": figures["mean"],
        "bytes_per_s_mean": bw_mean,
        "slope_iops_per_s": figures["slope_per_s"],
        "slope_percent": figures["slope_percent"],
        "slope_excursion_percent": excursion,
        "max_deviation_percent": figures["max_deviation_percent"],
        "iops": iops,
        "job_iops": metrics.get(direction + "_iops") if direction else None,
        "job_bytes_per_s": metrics.get(direction + "_bytes_per_s") if direction else None,
        "bytes_before_window": max(0, int(moved) - window_bytes) if isinstance(moved, (int, float)) else None,
        "preconditioned_bytes": params.get("preconditioned_bytes"),
        "why_not": "; ".join(reasons) or None,
    }


def apply(record: Dict[str, Any], found: Any) -> None:
    """Give a record of a steady-state job its ``steady_state`` and the window's means as its figures."""
    summary = steady_state(found, record, record.get("params") or {})
    record["steady_state"] = summary
    direction = summary["direction"]
    if direction is None or summary["iops_mean"] is None:
        record["warnings"].append("steady state: the job measured %s, not one direction: figures left as fio's "
                                  "whole-job" % ("nothing" if direction is None else "both"))
        return
    record["metrics"][direction + "_iops"] = summary["iops_mean"]
    record["metrics"][direction + "_bytes_per_s"] = summary["bytes_per_s_mean"]


# ---------------------------------------------------------------------------------------------
# The evidence bundle's README: how the drive was preconditioned, and fio alone to do it again
# ---------------------------------------------------------------------------------------------

def _param(record: Mapping[str, Any], key: str) -> Any:
    params = record.get("params")
    return params.get(key) if isinstance(params, Mapping) else None


def _device(records: Sequence[Mapping[str, Any]]) -> str:
    for record in records:
        target = record.get("target")
        if isinstance(target, Mapping) and target.get("device_path"):
            return str(target["device_path"])
    return "/dev/DEVICE"


def _iops_text(value: Any) -> str:
    return "%.1f IOPS" % value if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _percent(value: Any) -> str:
    return "%.1f %%" % value if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def readme_lines(records: Sequence[Mapping[str, Any]]) -> List[str]:
    """The bundle README's section on SSD preconditioning and steady state; [] when the bundle has no such record."""
    parts = [record for record in records if str(record.get("test") or "").startswith("ssd_precondition_")]
    steady = [record for record in records if isinstance(record.get("steady_state"), Mapping)]
    if not parts and not steady:
        return []
    device = _device(parts + steady)
    total = sum(int(record.get("bytes") or 0) for record in parts)
    capacity = next((record.get("target", {}).get("device_size_bytes") for record in parts + steady
                     if isinstance(record.get("target"), Mapping)), None)
    purge = next((_param(record, "purge") for record in parts if _param(record, "purge")), None)
    purge_commands = [command for record in parts for command in record.get("setup_commands") or []]
    lines = ["## SSD preconditioning and steady state", "",
             "A fresh SSD writes far faster than it will once every block has been written (no garbage collection "
             "yet). The figures below were taken the way the SNIA Solid State Storage Performance Test Specification "
             "asks: purge (optional), precondition, then repeat the workload until it stops drifting.", ""]
    if purge:
        lines.append("1. **Purge**: `%s` (%s), once, before the preconditioning." % (
            "; ".join(" ".join(command) for command in purge_commands) or purge, purge))
    else:
        lines.append("1. **Purge**: none (the drive was preconditioned as it was).")
    if parts:
        lines.append("2. **Preconditioning** (`ssd_precondition`, %d parts): sequential 128 KiB writes, queue depth "
                     "32, O_DIRECT, fio's default random data, over the whole device from its first byte, %s bytes "
                     "in all (%s x the capacity of %s bytes). Each part's job file and raw output is in this bundle; "
                     "the device's own write counter (`device_io`) confirms every part reached the drive." % (
                         len(parts), "{:,}".format(total), "%.2f" % (total / capacity) if capacity else "?",
                         "{:,}".format(capacity) if capacity else "?"))
    else:
        lines.append("2. **Preconditioning**: not part of this run (the steady-state tests started on the drive as it "
                     "was).")
    for number, record in enumerate(steady, 3):
        state = record["steady_state"]
        lines.append("%d. **`%s`**: 4 KiB random %s, queue depth 32, O_DIRECT, over the whole device, until fio's "
                     "criterion `%s` held over a %s s window (samples once a second after a %s s ramp), at most %s s. "
                     "%s: window mean %s, max deviation %s of the mean, slope excursion %s across the window; "
                     "per-second IOPS of the window: %s. %s bytes were written by this run's preconditioning before "
                     "it." % (
                         number, record.get("test"), "reads" if state.get("direction") == "read" else "writes",
                         state.get("criterion"), state.get("window_s"), state.get("ramp_s"), state.get("time_limit_s"),
                         "**Steady state attained**" if state.get("attained") else "**Steady state NOT attained** (%s)"
                         % state.get("why_not"), _iops_text(state.get("iops_mean")),
                         _percent(state.get("max_deviation_percent")), _percent(state.get("slope_excursion_percent")),
                         ", ".join(str(value) for value in state.get("iops") or []),
                         "{:,}".format(state.get("preconditioned_bytes") or 0)))
    if any(not str(record.get("test") or "").startswith("ssd_") for record in records):
        lines += ["", "The other tests of this bundle ran before the preconditioning: their figures are the drive's "
                      "as it came (fresh, when it was new); these are the preconditioned drive's."]
    reference = steady[0] if steady else None
    criterion = _param(reference, "steadystate") if reference else "iops:20%"
    window = _param(reference, "ss_window_s") if reference else 60
    ramp = _param(reference, "ss_ramp_s") if reference else 30
    limit = _param(reference, "runtime_s") if reference else 1800
    loops = max(1, round(total / capacity)) if parts and capacity else 2
    lines += ["", "### Reproduce it with fio alone", "",
              "As root, on the same device, with nothing else using it. **This destroys every byte on %s.** "
              "Then read `jobs[].steadystate` of the JSON output: `attained`, and `data.iops` (the window)."
              % device, "",
              "```sh"]
    if purge_commands:
        lines += [" ".join(command) for command in purge_commands]
    lines += ["cat > ssd-steady-state.fio <<'EOF'", "[global]", "filename=%s" % device, "ioengine=libaio", "direct=1",
              "", "[precondition]", "rw=write", "bs=128k", "iodepth=32", "loops=%d" % loops, "",
              "[steady-rand-write]", "stonewall", "rw=randwrite", "bs=4k", "iodepth=32", "randrepeat=0",
              "norandommap=1", "time_based=1", "runtime=%s" % limit, "steadystate=%s" % criterion,
              "ss_dur=%s" % window, "ss_ramp=%s" % ramp, "", "[steady-rand-read]", "stonewall", "rw=randread",
              "bs=4k", "iodepth=32", "randrepeat=0", "norandommap=1", "time_based=1", "runtime=%s" % limit,
              "steadystate=%s" % criterion, "ss_dur=%s" % window, "ss_ramp=%s" % ramp, "EOF",
              "fio --output-format=json ssd-steady-state.fio > ssd-steady-state.json", "```", "",
              "diskproof ran the same jobs one at a time (each part of the preconditioning with its own `offset=` and "
              "`size=`, to report progress), and additionally requires the window's least-squares line to change by at "
              "most the stated slope excursion (SNIA's 10 %), which fio does not check itself.", ""]
    return lines
