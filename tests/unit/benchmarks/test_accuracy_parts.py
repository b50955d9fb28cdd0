"""benchmarks/accuracy.py: the device-counter evidence (request sizes over a record's run) and the matrix table.

The counters are synthetic here (the lab run is the script's own job); the report entries are real
(tests/fixtures/report/lab-accm-matrix-excerpt.src.md)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "accuracy.py"
FIXTURE = ROOT / "tests" / "fixtures" / "report" / "lab-accm-matrix-excerpt.json"
KIB, MIB = 1024, 1 << 20


def _load():
    spec = importlib.util.spec_from_file_location("accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(t, **counters):
    return {"t": t, "disks": {"loop9": {key: counters.get(key, 0) for key in _load().COUNTERS}}}


def test_request_sizes_over_the_run_of_a_record():
    accuracy = _load()
    start = accuracy.epoch("2026-11-25T15:00:10Z")
    samples = [_sample(start - 0.4, thr_read_ios=5, thr_read_bytes=5 * MIB, dev_read_ios=5, dev_read_bytes=5 * MIB),
               # during the run: 200 reads of 1 MiB that the throttle charged as 400 halves
               _sample(start + 5, thr_read_ios=205, thr_read_bytes=105 * MIB, dev_read_ios=205,
                       dev_read_bytes=105 * MIB),
               _sample(start + 12.1, thr_read_ios=405, thr_read_bytes=205 * MIB, dev_read_ios=405,
                       dev_read_bytes=205 * MIB),
               _sample(start + 30, thr_read_ios=999, thr_read_bytes=999 * MIB)]  # a later test: not counted
    record = {"started": "2026-11-25T15:00:10Z", "finished": "2026-11-25T15:00:21Z"}
    delta = accuracy.window_delta(samples, "loop9", record)
    assert (delta["thr_read_ios"], delta["thr_read_bytes"]) == (400, 200 * MIB)
    assert accuracy.request_sizes(delta, "read") == (512 * KIB, 512 * KIB)
    assert accuracy.request_sizes(delta, "write") == (None, None)
    assert accuracy.window_delta(samples, "loop8", record) is None
    assert accuracy.window_delta(samples[1:], "loop9", record) is None  # no sample before the start


def test_the_matrix_has_one_column_per_host_and_marks_misses():
    accuracy = _load()
    data = json.loads(FIXTURE.read_text())
    compared = accuracy.compare(data["report"], data["inventory"])
    header, errors, truths = accuracy.matrix_rows(compared, data["inventory"], 0.03, markdown=True)
    assert header == ["test", "50/100", "200/100", "200/200"]  # slowest first
    by_test = {line[0]: line[1:] for line in errors}
    assert [cell.startswith("**-") for cell in by_test["fio_seq_read"]] == [False, True, True]
    assert {line[0]: line[1:] for line in truths}["fio_seq_read"] == ["50 (B/s)", "100 (IOPS)", "200 (B/s = IOPS)"]
