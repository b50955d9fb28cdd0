"""What the test catalog declares, once, and everything that follows from it: what the report judges each test on
(the records carry it: params.judged_on), which block sizes it uses with O_DIRECT, and - for a plain fio test - the
whole job, so that a new fio test is its catalog entry and a place in a profile."""
from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.diskproof.fleet.plugins.module_utils import _metrics, _plan
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import CATALOG, PROFILES, Settings, TargetFacts, build_plan

MIB = 1048576
GIB = 1 << 30


def plan(tests, **overrides):
    target = TargetFacts(path="/srv/a", free_bytes=100 * GIB, filesystem_size_bytes=200 * GIB, device="sdb",
                         logical_block_size=512, physical_block_size=4096)
    return build_plan([target], Settings(run_id="r1", memory_bytes=128 * MIB, profile="full", tests=tuple(tests), **overrides))


def test_every_catalog_test_declares_what_it_is_judged_on():
    assert {entry.judged_on for entry in CATALOG.values()} == {_metrics.METRIC_IOPS, _metrics.METRIC_BYTES_PER_S}


def test_every_job_carries_its_test_s_declaration_to_its_records():
    jobs = plan(PROFILES["full"].tests).jobs
    assert jobs and all(job["params"]["judged_on"] == CATALOG[_plan._catalog_id(job["test"])].judged_on for job in jobs)


@pytest.mark.parametrize(("declared", "expected"), [
    (_metrics.METRIC_BYTES_PER_S, {"name": "bytes_per_s", "value": 8e6}),   # "rand" in the name and 4 KiB: still bytes
    (_metrics.METRIC_IOPS, {"name": "iops", "value": 2000.0}),
    (None, {"name": "iops", "value": 2000.0}),                              # undeclared: the inference of old records
])
def test_the_judge_takes_the_declaration_over_any_inference(declared, expected):
    record = {"test": "fio_rand_read", "params": {"block_size": 4096, "judged_on": declared},
              "metrics": {"read_bytes_per_s": 8e6, "read_iops": 2000.0}}
    assert _metrics.primary_metric(record) == expected


def test_a_declared_figure_the_record_lacks_falls_back_to_the_one_it_has():
    record = {"test": "t", "params": {"judged_on": _metrics.METRIC_IOPS}, "metrics": {"write_bytes_per_s": 5e8}}
    assert _metrics.primary_metric(record) == {"name": "bytes_per_s", "value": 5e8}


def test_direct_block_sizes_are_the_catalog_s():
    sizes = _plan._direct_block_sizes(["fio_seq_read", "ioping_latency", "sysbench_rndrd", "dd_seq_write"],
                                      Settings(run_id="r1", memory_bytes=128 * MIB))
    assert sizes == [("sequential_block_size", MIB), ("random_block_size", 4096), ("sysbench_block_size", 8192)]


def test_a_new_fio_test_is_its_catalog_entry_and_a_place_in_a_profile(monkeypatch):
    """A plain fio test needs no code: the catalog's FioJob is the whole job (the role's template renders it)."""
    entry = _plan.CatalogEntry("fio", "random read, 64 KiB, QD4, direct", True, False, _metrics.METRIC_IOPS, raw="read",
                               direct_block=_plan.RANDOM, fio=_plan.FioJob("randread", _plan.RANDOM, 4))
    monkeypatch.setitem(CATALOG, "fio_rand_read_64k_qd4", entry)
    monkeypatch.setitem(PROFILES, "quick", dataclasses.replace(PROFILES["quick"],
                                                               tests=PROFILES["quick"].tests + ("fio_rand_read_64k_qd4",)))
    jobs = {job["test"]: job for job in plan(["fio_rand_read_64k_qd4"], random_block_size=65536).jobs}
    job = jobs["fio_rand_read_64k_qd4"]
    assert (job["fio"]["rw"], job["fio"]["bs"], job["fio"]["iodepth"], job["fio"]["direct"]) == ("randread", 65536, 4, 1)
    assert job["params"]["judged_on"] == "iops" and job["description"] == "random read, 64 KiB, QD4, direct"
    assert "fio_rand_read_64k_qd4" in _plan.select_tests("quick", [])


DOCS = __import__("pathlib").Path(__file__).resolve().parents[4] / "docs" / "tests.md"


def _table(heading_row):
    """The rows (cells) of the docs/tests.md table whose header is heading_row."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading_row)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_docs_list_every_catalog_test_with_what_it_is_judged_on():
    shown = {}
    for row in _table("| id | tool | what it measures | judged on | how |"):
        for test in row[0].replace("`", "").split(" / "):
            shown[test] = row[3]
    units = {_metrics.METRIC_IOPS: "IOPS", _metrics.METRIC_BYTES_PER_S: "bytes/s"}
    assert shown == {test: units[entry.judged_on] for test, entry in CATALOG.items()}


def test_docs_list_each_profile_s_tests():
    listed = {row[0].strip("`"): row[1] for row in _table("| profile | tests | runs per test (most when unstable) | "
                                                          "fio/sysbench seconds per run |")}
    assert set(listed) == set(PROFILES)
    for name, profile in PROFILES.items():
        if name == "full":
            assert listed[name] == "every test above but the `ssd_*` ones and the burn-in"
            continue
        assert listed[name].replace("then ", "").split(" (")[0].split(", ") == list(profile.tests), name


def test_the_profiles_are_named_the_same_everywhere():
    """The catalog's PROFILES are the choices of bench_plan (its spec is built from them; its docs and the role's
    argument specs are checked here) and a superset of the AWX survey's."""
    import json
    import yaml
    from ansible_collections.diskproof.fleet.plugins.module_utils._plan_host import PLAN_ARGUMENT_SPEC
    from ansible_collections.diskproof.fleet.plugins.modules import bench_plan

    root = DOCS.parents[1]
    assert PLAN_ARGUMENT_SPEC["profile"]["choices"] == list(PROFILES)
    assert yaml.safe_load(bench_plan.DOCUMENTATION)["options"]["profile"]["choices"] == list(PROFILES)
    specs = yaml.safe_load((root / "roles" / "benchmark" / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    for entry_point in specs.values():
        for name in ("diskproof_profile", "diskproof_profile_default"):
            assert entry_point["options"][name]["choices"] == list(PROFILES), name
    survey = json.loads((root / "docs" / "awx" / "survey.json").read_text())["spec"]
    offered = next(question for question in survey if question["variable"] == "diskproof_profile")["choices"]
    assert set(offered.split("\n") if isinstance(offered, str) else offered) <= set(PROFILES)
