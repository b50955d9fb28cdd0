"""The report store through the role diskproof.fleet.report_store, with real ansible-playbook runs of
rstore_run.yml (a first play takes the baseline from the store, the final localhost play publishes the run's
report directory - the way the playbooks wire it):

- remote: the store on the lab host rstore-fs1 (lab `rstore`, rstore_lab.yml, 10.231.81.0/24), on its own lab
  disk, reached over the lab's real SSH (`diskproof_report_store_host: rstore-fs1`);
- local: the store in a directory on the controller (`diskproof_report_store_host: localhost`).

Two "scheduled runs" each: the first publishes a passing report, the second a failing one. Proves: one run
directory per run with every file and a SHA256SUMS that `sha256sum -c` on the store host accepts; the AWX job
id in the run id (else a random suffix); latest -> second, last-pass -> first; index.json with both; the second
run's baseline is the first run's report.json, byte for byte, brought to the controller; the first run (empty
store) gets no baseline. And the failures: a store path that is a file, a report dir without report.json - each
fails with what to do, the store as it was.

Report contents: the real report.json of tests/fixtures/report/lab-rack6-report.json (a lab rack run: 15 pass,
3 outlier), with summary.passed set true for the first run and false for the second (the fixture predates the
key); report.md, report.html and junit.xml rendered from it by the collection's own renderers; results.csv a
small stand-in written by the test (the store copies files, it never reads them). Root only (the lab).
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labhelpers import BIN, REPO, checkout_collection_env, inventory_path, needs_root, on_host, running_lab

sys.path.insert(0, str(REPO / ".ansible" / "collections"))
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _junit, _render  # noqa: E402

SPEC = Path(__file__).resolve().parent / "rstore_lab.yml"
PLAYBOOK = Path(__file__).resolve().parent / "rstore_run.yml"
LAB = "rstore"
SERVER = "rstore-fs1"
STORE = "/srv/diskproof/d0/reports"
RACK6 = REPO / "tests" / "fixtures" / "report" / "lab-rack6-report.json"
FILES = ["junit.xml", "report.html", "report.json", "report.md", "results.csv"]
RUN_ID_AWX = re.compile(r"\d{8}T\d{6}Z-awx4711\Z")
RUN_ID_RANDOM = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}\Z")

pytestmark = needs_root


def report_dir(where: Path, passed: bool) -> Path:
    """A report directory as the callback leaves it: the five files, report.json with summary.passed."""
    report = json.loads(RACK6.read_text())
    report["summary"]["passed"] = passed
    where.mkdir(parents=True)
    (where / "report.json").write_text(json.dumps(report, indent=1))
    (where / "report.md").write_text(_render.render_markdown(report))
    (where / "report.html").write_text(_render.render_html(report))
    (where / "junit.xml").write_text(_junit.render_junit(report))
    (where / "results.csv").write_text("host,test,verdict\n" + "".join(
        "%s,%s,%s\n" % (entry["host"], entry["test"], entry["verdict"]) for entry in report["results"]))
    return where


def scheduled_run(tmp: Path, name: str, store: str, store_host: str, reports: Path, *extra: str):
    """One run of rstore_run.yml: (exit code, output, the content of the baseline file the first play set, or
    None when it set none); the baseline's temporary directory is removed."""
    record = tmp / ("%s-record.json" % name)
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory_path(LAB)), str(PLAYBOOK),
            "-e", "diskproof_report_store=%s" % store, "-e", "diskproof_report_store_host=%s" % store_host,
            "-e", "publish_dir=%s" % reports, "-e", "record_file=%s" % record]
    for value in extra:
        argv += ["-e", value]
    # The report callback (enabled by ansible.cfg) writes this playbook's own, empty, report elsewhere.
    result = subprocess.run(argv, cwd=REPO, env=checkout_collection_env(tmp / ("%s-callback" % name)),
                            capture_output=True, text=True, timeout=120, check=False)
    baseline_file = json.loads(record.read_text())["baseline_file"] if record.exists() else None
    baseline = None
    if baseline_file is not None:
        # The role's own temporary directory for the baseline (diskproof_report_store_baseline_dir unset).
        assert Path(baseline_file).parent.name.startswith("diskproof-baseline-"), baseline_file
        baseline = Path(baseline_file).read_bytes()
        shutil.rmtree(Path(baseline_file).parent)
    return result.returncode, result.stdout + result.stderr, baseline


def run_on(command: str) -> str:
    result = on_host(LAB, SERVER, command)
    assert result.returncode == 0, "%s\n%s%s" % (command, result.stdout, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def rstore():
    with running_lab(LAB, SPEC, services=()):
        yield


def two_runs(tmp_path: Path, store: str, store_host: str):
    """Run 1 (AWX job 4711) publishes a passing report, run 2 (no job id) a failing one."""
    first = report_dir(tmp_path / "first", passed=True)
    second = report_dir(tmp_path / "second", passed=False)
    code, output, baseline_1 = scheduled_run(tmp_path, "run1", store, store_host, first, "awx_job_id=4711")
    assert code == 0, output
    assert baseline_1 is None, "an empty store has no baseline, got %s" % baseline_1
    code, output, baseline_2 = scheduled_run(tmp_path, "run2", store, store_host, second)
    assert code == 0, output
    assert baseline_2 is not None, output
    # The second run's baseline is the first run's report.json, brought to the controller.
    assert baseline_2 == (first / "report.json").read_bytes()
    return first, second


def check_index(index: dict, store: str, names: list) -> None:
    assert [run["run_id"] for run in index["runs"]] == names
    assert [run["passed"] for run in index["runs"]] == [True, False]
    assert [run["path"] for run in index["runs"]] == ["%s/%s" % (store, name) for name in names]
    assert index["runs"][0]["counts"] == {"error": 0, "not_measured": 0, "outlier": 3, "pass": 15}
    assert index["runs"][0]["hosts"] == ["rack6-n0%d" % n for n in range(1, 7)]


def test_remote_store_two_scheduled_runs_and_failures(rstore, tmp_path):
    first, second = two_runs(tmp_path, STORE, SERVER)

    names = sorted(name for name in run_on("ls -A %s" % STORE).split() if name[0].isdigit())
    assert len(names) == 2 and RUN_ID_AWX.match(names[0]) and RUN_ID_RANDOM.match(names[1]), names
    assert sorted(run_on("ls -A %s" % STORE).split()) == sorted(
        names + [".incoming", ".lock", "index.csv", "index.json", "last-pass", "latest"])
    for name, source in zip(names, (first, second)):
        assert sorted(run_on("ls -A %s/%s" % (STORE, name)).split()) == sorted(FILES + ["SHA256SUMS"])
        checked = run_on("cd %s/%s && sha256sum -c --strict SHA256SUMS" % (STORE, name))
        assert sorted(checked.split()) == sorted([name + ":" for name in FILES] + ["OK"] * len(FILES)), checked
        assert run_on("cat %s/%s/report.json" % (STORE, name)) == (source / "report.json").read_text()
    assert run_on("readlink %s/latest" % STORE).strip() == names[1]
    assert run_on("readlink %s/last-pass" % STORE).strip() == names[0]
    assert run_on("ls -A %s/.incoming" % STORE).split() == []
    check_index(json.loads(run_on("cat %s/index.json" % STORE)), STORE, names)
    rows = list(csv.DictReader(io.StringIO(run_on("cat %s/index.csv" % STORE))))
    assert [(row["run_id"], row["passed"], row["outlier"]) for row in rows] == [
        (names[0], "true", "3"), (names[1], "false", "3")]

    # A store path that is a file: refused saying what to do; the store is as it was.
    before = run_on("cd %s && ls -lAR --time-style=full-iso . && cat index.json" % STORE)
    run_on("echo keep > /srv/diskproof/d0/not-a-store")
    code, output, _published = scheduled_run(tmp_path, "bad-store", "/srv/diskproof/d0/not-a-store", SERVER, first)
    assert code == 2, output
    assert ("diskproof_report_store /srv/diskproof/d0/not-a-store is not a directory; point diskproof_report_store "
            "at a directory (or remove what is there)") in output
    assert run_on("cat /srv/diskproof/d0/not-a-store") == "keep\n"
    # A report directory without report.json (the callback wrote nothing): refused, nothing half-published.
    empty = tmp_path / "no-report"
    empty.mkdir()
    (empty / "results.csv").write_text("host,test,verdict\n")
    code, output, baseline = scheduled_run(tmp_path, "no-report", STORE, SERVER, empty)
    assert code == 2, output
    assert baseline == (first / "report.json").read_bytes()
    assert "no report.json in %s" % empty in output, output
    assert run_on("cd %s && ls -lAR --time-style=full-iso . && cat index.json" % STORE) == before


def test_local_store_two_scheduled_runs(rstore, tmp_path):
    store = tmp_path / "store"
    first, second = two_runs(tmp_path, str(store), "localhost")
    names = sorted(path.name for path in store.iterdir() if path.name[0].isdigit())
    assert len(names) == 2 and RUN_ID_AWX.match(names[0]) and RUN_ID_RANDOM.match(names[1]), names
    for name, source in zip(names, (first, second)):
        assert sorted(path.name for path in (store / name).iterdir()) == sorted(FILES + ["SHA256SUMS"])
        checked = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=store / name,
                                 capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and checked.stdout.count(": OK\n") == len(FILES), checked.stdout
        assert (store / name / "report.json").read_bytes() == (source / "report.json").read_bytes()
    assert (store / "latest").readlink() == Path(names[1])
    assert (store / "last-pass").readlink() == Path(names[0])
    check_index(json.loads((store / "index.json").read_text()), str(store), names)
    shutil.rmtree(store)
