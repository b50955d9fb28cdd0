"""SSD steady state (issue 19): fio's steadystate object (real fio 3.33 captures on the lab's fresh-SSD disks,
tests/fixtures/fio/fio333-steadystate-*.json with their .src.md), the record's steady_state, the plan of the
ssd_* tests and its job files (rendered from the role's template and checked by the real fio --parse-only),
the not_steady verdict and its precedence, datasheet rules on the steady figure, and the report.html chart."""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest

from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate as agg
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _report as pipeline
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _render as render
from ansible_collections.diskproof.fleet.plugins.module_utils import _steady
from ansible_collections.diskproof.fleet.plugins.module_utils._parse import fio
from ansible_collections.diskproof.fleet.plugins.module_utils._parse.records import make_record, parse_output
from ansible_collections.diskproof.fleet.plugins.module_utils._plan import (
    PROFILES, PlanError, Settings, TargetFacts, build_plan, plan_lines,
)

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures" / "fio"
TEMPLATE = ROOT / "roles" / "benchmark" / "templates" / "fio_job.ini.j2"
MIB = 1 << 20
GIB = 1 << 30


def text(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- fio's steadystate object ----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "attained", "setting", "criterion", "deviation", "iops"), [
    ("fio333-steadystate-fresh-attained.json", True, "iops:20.000000%", "0.000000%", 0.0, [600] * 10),
    ("fio333-steadystate-cliff-attained.json", True, "iops:20.000000%", "0.600400%", 0.9,
     [150, 150, 150, 150, 149, 150, 150, 150, 150, 150]),
    ("fio333-steadystate-unsteady-not-attained.json", False, "iops:20.000000%", "63.172108%", 257.3,
     [150, 519, 600, 600, 237, 150, 150, 467, 600, 600]),
])
def test_fio_steadystate_of_real_captures(name, attained, setting, criterion, deviation, iops):
    (job,) = fio.parse(text(name))
    found = job.steadystate
    assert (found.attained, found.setting, found.duration_s, found.criterion) == (attained, setting, 10, criterion)
    assert (found.max_deviation, found.slope, found.iops) == (deviation, 0.0, iops)
    assert len(found.bw) == 10


def test_a_job_without_steadystate_has_none():
    (job,) = fio.parse(text("fio333-randread-4k-qd32.json"))
    assert job.steadystate is None


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda ss: ss["data"].update(iops="600"), "a list of non-negative integers at jobs[0].steadystate.data.iops"),
    (lambda ss: ss["data"].update(bw=[1, -2]), "a list of non-negative integers at jobs[0].steadystate.data.bw"),
    (lambda ss: ss.update(attained="yes"), "an integer at jobs[0].steadystate.attained"),
    (lambda ss: ss.update(slope=None), "a number at jobs[0].steadystate.slope"),
    (lambda ss: ss.update(criterion=3.0), "a string at jobs[0].steadystate.criterion"),
])
def test_a_malformed_steadystate_is_a_parse_error_naming_the_key(mutate, message):
    doc = json.loads(text("fio333-steadystate-cliff-attained.json"))
    mutate(doc["jobs"][0]["steadystate"])
    with pytest.raises(fio.ParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        fio.parse(json.dumps(doc))


# --- the record's steady_state ------------------------------------------------------------------------

PARAMS = {"block_size": 4096, "steadystate": "iops:20%", "runtime_s": 60, "ss_window_s": 10, "ss_ramp_s": 5,
          "ss_max_slope_excursion_percent": 10.0, "preconditioned_bytes": 128 * MIB}


def steady_record(name, params=None):
    """The record bench_run makes of a capture: make_record, then _steady.apply (as run_measured does)."""
    _tool, (result,) = parse_output(text(name), "fio")
    record = make_record(result, test="ssd_steady_rand_write", params=dict(params or PARAMS))
    _steady.apply(record, result["steadystate"])
    return record


def test_window_figures_follow_fios_formulas():
    figures = _steady.window_figures([100, 110, 120, 130])
    assert figures["mean"] == 115
    assert figures["slope_per_s"] == pytest.approx(10.0)
    assert figures["slope_percent"] == pytest.approx(100 * 10 / 115)          # fio's iops_slope:X%
    assert figures["slope_excursion_percent"] == pytest.approx(100 * 30 / 115)  # SNIA: across the window
    assert figures["max_deviation_percent"] == pytest.approx(100 * 15 / 115)   # fio's iops:X%
    assert _steady.window_figures([])["mean"] is None


def test_cliff_capture_gives_the_steady_figure_and_everything_the_record_carries():
    record = steady_record("fio333-steadystate-cliff-attained.json")
    state = record["steady_state"]
    assert state["attained"] is True and state["fio_attained"] is True and state["why_not"] is None
    assert record["metrics"]["write_iops"] == pytest.approx(149.9)              # the window's mean, not fio's 237
    assert state["job_iops"] == pytest.approx(237.176704)                     # fio's whole job, fresh start included
    assert record["metrics"]["write_bytes_per_s"] == pytest.approx(6146462 / 10)
    assert state["iops"] == [150, 150, 150, 150, 149, 150, 150, 150, 150, 150]
    assert state["max_deviation_percent"] == pytest.approx(100 * 0.9 / 149.9)
    assert state["slope_excursion_percent"] < 1
    assert state["bytes_before_window"] == 15663104 - 6146462
    assert (state["preconditioned_bytes"], state["window_s"], state["time_limit_s"], state["criterion"]) == (
        128 * MIB, 10, 60, "iops:20%")


def test_unsteady_capture_is_not_attained_and_says_why():
    state = steady_record("fio333-steadystate-unsteady-not-attained.json")["steady_state"]
    assert state["attained"] is False
    assert state["max_deviation_percent"] == pytest.approx(100 * (407.3 - 150) / 407.3)   # fio's 257.3 IOPS
    assert state["why_not"] == "fio's criterion iops:20% did not hold over a 10 s window within the time limit of 60 s"


def test_a_window_fio_accepted_but_sloping_beyond_the_slope_limit_is_not_attained():
    doc = json.loads(text("fio333-steadystate-cliff-attained.json"))
    doc["jobs"][0]["steadystate"]["data"]["iops"] = [130, 134, 138, 142, 146, 150, 154, 158, 162, 166]  # within 20 %
    _tool, (result,) = parse_output(json.dumps(doc), "fio")
    record = make_record(result, test="ssd_steady_rand_write", params=PARAMS)
    _steady.apply(record, result["steadystate"])
    state = record["steady_state"]
    assert state["fio_attained"] is True and state["attained"] is False
    assert state["why_not"] == "slope excursion 24.3% of the mean across the window > 10%"
    without_limit = dict(PARAMS, ss_max_slope_excursion_percent=None)
    record = make_record(result, test="ssd_steady_rand_write", params=without_limit)
    _steady.apply(record, result["steadystate"])
    assert record["steady_state"]["attained"] is True


# --- the plan ---------------------------------------------------------------------------------------

def raw(path="/dev/loop0", size=64 * MIB, granted="raw_write"):
    return TargetFacts(path=path, kind="raw", device_path=path, device_size_bytes=size, granted_class=granted,
                       device=os.path.basename(path))


def settings(**overrides):
    values = dict(run_id="r1", memory_bytes=32 * MIB, profile="ssd_steady_state", ssd_steady_window_s=8,
                  ssd_steady_ramp_s=2, ssd_steady_time_limit_s=24)
    values.update(overrides)
    return Settings(**values)


def test_profile_runs_precondition_then_write_then_read_on_the_whole_device():
    assert PROFILES["ssd_steady_state"].tests == ("ssd_precondition", "ssd_steady_rand_write", "ssd_steady_rand_read")
    assert not set(PROFILES["ssd_steady_state"].tests) & set(PROFILES["full"].tests)
    plan = build_plan([raw()], settings())
    tests = [job["test"] for job in plan.jobs]
    assert tests == (["ssd_precondition_%dof8" % n for n in range(1, 9)]
                     + ["ssd_steady_rand_write", "ssd_steady_rand_read"])
    parts = plan.jobs[:8]
    # Two sequential passes over the device in quarters: a progress line per part.
    quarters = [(q * 16 * MIB, 16 * MIB) for q in range(4)]
    assert [(job["fio"]["offset"], job["fio"]["size"]) for job in parts] == quarters * 2
    assert all(job["fio"]["bs"] == 128 * 1024 and job["fio"]["iodepth"] == 32 and job["fio"]["rw"] == "write"
               and not job["fio"]["time_based"] and job["repeats"] == job["max_repeats"] == 1 for job in parts)
    assert [job["params"]["precondition_done_bytes"] for job in parts][-1] == 128 * MIB
    write, read = plan.jobs[8:]
    assert (write["fio"]["rw"], write["fio"]["bs"], write["fio"]["iodepth"], write["fio"]["size"]) == (
        "randwrite", 4096, 32, 64 * MIB)
    assert (write["fio"]["steadystate"], write["fio"]["ss_dur"], write["fio"]["ss_ramp"], write["fio"]["runtime"]) == (
        "iops:20%", 8, 2, 24)
    assert read["argv"] == ["fio", "--output-format=json", "--readonly"] and read["fio"]["rw"] == "randread"
    assert write["params"]["preconditioned_bytes"] == read["params"]["preconditioned_bytes"] == 128 * MIB
    assert write["estimate_s"] == 24.0 and not write["drop_caches"]
    lines = plan_lines(plan, 32 * MIB, None)
    assert lines[0] == "profile ssd_steady_state: 3 tests, 10 jobs, 1 run(s) each (up to 1 when unstable), about 1 min"


def test_a_set_byte_count_walks_the_device_and_wraps():
    plan = build_plan([raw()], settings(tests=("ssd_precondition",), ssd_precondition_bytes=40 * MIB))
    assert [(job["fio"]["offset"], job["fio"]["size"]) for job in plan.jobs] == [
        (0, 16 * MIB), (16 * MIB, 16 * MIB), (32 * MIB, 8 * MIB)]


def test_purge_runs_once_before_the_first_part_and_is_recorded():
    plan = build_plan([raw()], settings(ssd_purge=True))
    assert plan.jobs[0]["setup"] == [["blkdiscard", "-v", "/dev/loop0"]] and plan.jobs[1]["setup"] == []
    assert {job["params"]["purge"] for job in plan.jobs[:8]} == {"blkdiscard"}
    nvme = build_plan([raw()], settings(ssd_purge=True, ssd_purge_method="nvme_format", ssd_purge_firmware_erase=True))
    assert nvme.jobs[0]["setup"] == [["nvme", "format", "/dev/loop0", "--ses=1", "--force"]]


@pytest.mark.parametrize(("overrides", "message"), [
    (dict(ssd_purge=True, ssd_purge_method="nvme_format"),
     "ssd_purge_method nvme_format erases the drive through its firmware: it needs ssd_purge_firmware_erase: true"),
    (dict(ssd_purge=True, ssd_purge_method="ata_secure_erase"), "needs ssd_purge_firmware_erase: true"),
    (dict(ssd_steady_criterion="bw:5%"), "ssd_steady_criterion must be fio's iops:<limit>[%] or iops_slope:<limit>[%]"),
    (dict(ssd_steady_criterion="iops:20%;rm"), "ssd_steady_criterion must be"),
    (dict(ssd_steady_time_limit_s=17), "ssd_steady_time_limit_s (17) must be at least ssd_steady_ramp_s + 2 x "
                                       "ssd_steady_window_s = 18"),
    (dict(ssd_steady_window_s=1), "ssd_steady_window_s must be a whole number >= 2"),
    (dict(ssd_precondition_bytes=4096), "ssd_precondition_bytes must be a whole number >= 131072"),
    (dict(ssd_steady_max_slope_excursion_percent=-1.0), "ssd_steady_max_slope_excursion_percent must be a positive"),
])
def test_bad_ssd_settings_are_refused_saying_what_to_fix(overrides, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]").replace("+", r"\+")):
        build_plan([raw()], settings(**overrides))


def test_only_raw_write_devices_run_them():
    directory = TargetFacts(path="/srv/a", free_bytes=100 * GIB, filesystem_size_bytes=200 * GIB, device="sdb")
    with pytest.raises(PlanError, match="none of the tests ssd_precondition, ssd_steady_rand_write, "
                                        "ssd_steady_rand_read can run on these targets: /srv/a: skipped "
                                        "ssd_precondition"):
        build_plan([directory], settings())
    with pytest.raises(PlanError, match=r"targets\[0\] \(/dev/loop0\) is raw_read: ssd_precondition, "
                                        "ssd_steady_rand_write, ssd_steady_rand_read write to the device"):
        build_plan([raw(granted="raw_read")],
                   settings(tests=("ssd_precondition", "ssd_steady_rand_write", "ssd_steady_rand_read")))
    # A profile on a raw_read device and a directory beside a raw_write one: skipped, with the reasons.
    plan = build_plan([directory, raw("/dev/loop1")], settings())
    assert {job["target"]["path"] for job in plan.jobs} == {"/dev/loop1"}
    assert any(line.startswith("/srv/a: skipped ssd_precondition, ssd_steady_rand_write, ssd_steady_rand_read: the SSD "
                               "steady-state tests write the whole device and run only on a raw device target granted "
                               "raw_write") for line in plan.warnings), plan.warnings


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_job_files_render_from_the_role_template_and_pass_fio_parse_only(tmp_path):
    """The real template, rendered as the role does, checked by the real fio (as bench_run does before a run)."""
    plan = build_plan([raw()], settings(ssd_purge=True))
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)), keep_trailing_newline=True)
    template = environment.get_template(TEMPLATE.name)
    rendered = {}
    for job in (plan.jobs[1], plan.jobs[8], plan.jobs[9]):
        job_file = template.render(item=job)
        path = tmp_path / (job["test"] + ".fio")
        path.write_text(job_file)
        checked = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, check=False)
        assert checked.returncode == 0, (job_file, checked.stderr)
        rendered[job["test"]] = job_file
    part = rendered["ssd_precondition_2of8"]
    assert "offset=16777216\n" in part and "size=16777216\n" in part and "time_based" not in part
    assert "steadystate" not in part and "bs=131072\n" in part
    steady = rendered["ssd_steady_rand_write"]
    assert "steadystate=iops:20%\nss_dur=8\nss_ramp=2\n" in steady
    assert "time_based=1\nruntime=24\nramp_time=0\n" in steady and "offset=" not in steady


# --- verdicts, rules, chart ----------------------------------------------------------------------------

OK = {"status": "ok", "problems": []}


def test_not_steady_is_a_failing_verdict_above_slow_and_says_why():
    assert agg.VERDICTS.index("invalid") < agg.VERDICTS.index("not_steady") < agg.VERDICTS.index("slow")
    assert "not_steady" in agg.FAILING_VERDICTS and "not_steady" in agg.VERDICT_KINDS
    unsteady = steady_record("fio333-steadystate-unsteady-not-attained.json")
    rules = {"rules": [{"name": "datasheet", "match": {"test": "ssd_steady_*"},
                        "datasheet": {"write_iops": 1000, "min_percent": 90}}]}
    (entry,) = pipeline.build_report({"h1": [unsteady]}, {"h1": OK}, {}, acceptance=rules)["results"]
    assert entry["verdict"] == "not_steady"
    assert [finding["verdict"] for finding in entry["reasons"]] == ["not_steady", "slow"]
    assert entry["reason"] == (
        "steady state not attained within 60 s (iops:20%, slope excursion <= 10.0%): last 10 s window mean 407 IOPS, "
        "max deviation 63.2%, slope excursion 33.7% (fio's criterion iops:20% did not hold over a 10 s window within "
        "the time limit of 60 s)")
    report = pipeline.build_report({"h1": [unsteady]}, {"h1": OK}, {})
    assert report["summary"]["counts"]["not_steady"] == 1 and report["summary"]["passed"] is False


def test_datasheet_rules_compare_the_steady_figure():
    steady = steady_record("fio333-steadystate-cliff-attained.json")
    rules = {"rules": [{"name": "datasheet steady 4k write", "match": {"test": "ssd_steady_rand_write"},
                        "datasheet": {"write_iops": 200, "min_percent": 80}}]}
    (entry,) = pipeline.build_report({"h1": [steady]}, {"h1": OK}, {}, acceptance=rules)["results"]
    assert (entry["verdict"], entry["reason"]) == (
        "slow", "rule 1 'datasheet steady 4k write': 150 IOPS is 75.0% of datasheet 200 IOPS (< 80%)")
    passing = {"rules": [{"match": {"test": "ssd_steady_rand_write"},
                          "datasheet": {"write_iops": 160, "min_percent": 90}}]}
    (entry,) = pipeline.build_report({"h1": [steady]}, {"h1": OK}, {}, acceptance=passing)["results"]
    assert entry["verdict"] == "pass"


def test_report_html_draws_one_steady_chart_per_steady_record():
    steady = steady_record("fio333-steadystate-cliff-attained.json")
    unsteady = steady_record("fio333-steadystate-unsteady-not-attained.json")
    unsteady["target"] = {"path": "/dev/loop2", "device": "loop2"}
    plain = make_record(parse_output(text("fio333-randread-4k-qd32.json"), "fio")[1][0], test="fio_rand_read")
    records = [steady, unsteady, plain]
    report, entries = agg.judge_report({"h1": [(record, agg.record_facts(record)) for record in records]}, {"h1": OK}, {},
                                       settings=agg.make_settings())
    page = render.render_html(report, entries)
    assert page.count('class="chart steady-chart"') == 2
    assert "ssd_steady_rand_write on h1 loop2: not_steady: steady state NOT attained, window mean 407 IOPS" in page
    assert "steady state attained, window mean 150 IOPS" in page
    # ten samples each, a point per second with its value; the criterion's band around the mean
    assert page.count("<title>second ") == 20 and "<title>second 2: 519 IOPS</title>" in page
    assert page.count('<rect class="ss-band"') == 2
    assert "steady-chart" not in render.render_html(report, [entry for entry in entries if entry.test == "fio_rand_read"])


# --- the evidence option and the bundle README ----------------------------------------------------------

def test_the_evidence_option_runs_the_steady_state_tests_after_the_profiles_own():
    plan = build_plan([raw()], settings(profile="evidence", include_ssd_steady_state=True))
    tests = [job["test"] for job in plan.jobs]
    first_ssd = tests.index("ssd_precondition_1of8")
    assert "fio_rand_write" in tests[:first_ssd] and tests[-2:] == ["ssd_steady_rand_write", "ssd_steady_rand_read"]
    assert not any(test.startswith("ssd_") for test in
                   (job["test"] for job in build_plan([raw()], settings(profile="evidence")).jobs))
    # An explicit list wins: the option adds nothing to it.
    explicit = build_plan([raw()], settings(tests=("fio_rand_write",), include_ssd_steady_state=True))
    assert [job["test"] for job in explicit.jobs] == ["fio_rand_write"]


def bundle_records(purge=True):
    """Records as the run of a purged, preconditioned lab disk made them: the plan's parts, then the capture."""
    plan = build_plan([raw()], settings(ssd_purge=purge, ssd_steady_window_s=10, ssd_steady_ramp_s=5,
                                        ssd_steady_time_limit_s=60))
    records = []
    for job in plan.jobs[:8]:
        records.append({"test": job["test"], "tool": "fio", "target": job["target"], "params": job["params"],
                        "bytes": job["params"]["size_bytes"], "setup_commands": job["setup"]})
    steady = steady_record("fio333-steadystate-cliff-attained.json", params=plan.jobs[8]["params"])
    steady["target"] = plan.jobs[8]["target"]
    return records + [steady]


def test_bundle_readme_says_how_the_drive_was_preconditioned_and_how_to_repeat_it_with_fio_alone():
    lines = _steady.readme_lines(bundle_records())
    readme = "\n".join(lines)
    assert lines[0] == "## SSD preconditioning and steady state"
    assert "1. **Purge**: `blkdiscard -v /dev/loop0` (blkdiscard), once, before the preconditioning." in readme
    assert ("sequential 128 KiB writes, queue depth 32, O_DIRECT, fio's default random data, over the whole device "
            "from its first byte, 134,217,728 bytes in all (2.00 x the capacity of 67,108,864 bytes)") in readme
    assert ("**Steady state attained**: window mean 149.9 IOPS, max deviation 0.6 % of the mean, slope excursion "
            "0.0 % across the window; per-second IOPS of the window: 150, 150, 150, 150, 149, 150, 150, 150, 150, 150. "
            "134,217,728 bytes were written by this run's preconditioning before it.") in readme
    job_file = readme[readme.index("cat > ssd-steady-state.fio <<'EOF'"):readme.index("\nEOF\n")]
    assert "filename=/dev/loop0\n" in job_file
    assert "[precondition]\nrw=write\nbs=128k\niodepth=32\nloops=2\n" in job_file
    assert "steadystate=iops:20%\nss_dur=10\nss_ramp=5" in job_file and "runtime=60" in job_file
    assert "blkdiscard -v /dev/loop0\ncat > ssd-steady-state.fio" in readme
    assert "1. **Purge**: none" in "\n".join(_steady.readme_lines(bundle_records(purge=False)))
    assert _steady.readme_lines([{"test": "fio_rand_write", "params": {}}]) == []


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_the_readmes_fio_job_file_is_one_fio_accepts(tmp_path):
    readme = "\n".join(_steady.readme_lines(bundle_records()))
    job_file = readme[readme.index("<<'EOF'\n") + len("<<'EOF'\n"):readme.index("\nEOF\n")] + "\n"
    path = tmp_path / "ssd-steady-state.fio"
    path.write_text(job_file)
    checked = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, (job_file, checked.stderr)


def test_the_evidence_readme_carries_the_section():
    import datetime
    from ansible_collections.diskproof.fleet.plugins.module_utils import _evidence
    context = _evidence.ReadmeContext(
        bundle="loop0-20261125T000000Z.tar.gz", disk="loop0", identity={}, host_name="ssdss-n01", host_facts={},
        created=datetime.datetime(2026, 11, 25, tzinfo=datetime.timezone.utc), records=bundle_records(), quiesce={},
        raw_members={}, members=[], snapshots={})
    readme = _evidence.render_readme(context)
    assert "## SSD preconditioning and steady state" in readme and "### Reproduce it with fio alone" in readme


def test_readme_numbers_each_steady_test_and_says_which_figures_are_fresh():
    records = bundle_records()
    read = copy.deepcopy(records[-1])
    read["test"] = "ssd_steady_rand_read"
    readme = "\n".join(_steady.readme_lines([{"test": "fio_rand_write", "params": {}}] + records + [read]))
    assert "\n3. **`ssd_steady_rand_write`**" in readme and "\n4. **`ssd_steady_rand_read`**" in readme
    assert "The other tests of this bundle ran before the preconditioning" in readme
    assert "The other tests" not in "\n".join(_steady.readme_lines(records))
