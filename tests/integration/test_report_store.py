"""The report store through the role diskproof.fleet.report_store, with real ansible-playbook runs of
rstore_run.yml (a first play takes the baseline from the store, the final localhost play publishes the run's
report directory - the way the playbooks wire it):

- remote: the store on the lab host rstore-fs1 (lab `rstore`, rstore_lab.yml, 10.231.81.0/24), on its own lab
  disk, reached over the lab's real SSH (`diskproof_report_store_host: rstore-fs1`);
- local: the store in a directory on the controller (`diskproof_report_store_host: localhost`).

Two "scheduled runs" each: the first publishes a passing report, the second a failing one. Proves: one run
directory per run with every file and a SHA256SUMS that `sha256sum -c` on the store host accepts, signed
(SHA256SUMS.hmac) with a store key that only the controller holds (DISKPROOF_STORE_KEY_FILE, a throwaway 0600
file); the AWX job id in the run id (else a random suffix); latest -> second, last-pass -> first; index.json with
both; the second run's baseline is the first run's report.json, brought to the controller and checked there (the
copy adds only which run it is); the first run (empty store) gets no baseline. And the failures: a store path that
is a file, a report dir without report.json - each fails with what to do, the store as it was.

Issue 31, on the lab file server (test_the_baseline_cannot_be_poisoned_on_a_lab_file_server): a store owned by
another user, a symlinked .incoming, a forged index entry naming a directory outside the store, a tampered last-pass
with its SHA256SUMS recomputed, a failed run pointed at by last-pass and a --limit run: each refused or kept out of
the baseline; an evidence bundle (0600) published with become stays 0600 in the store.

Report contents: the real report.json of tests/fixtures/report/lab-rack6-report.json (a lab rack run: 15 pass,
3 outlier), with summary.passed set true for the first run and false for the second (the fixture predates the
key); report.md, report.html and junit.xml rendered from it by the collection's own renderers; results.csv a
small stand-in written by the test (the store copies files, it never reads them). Root only (the lab).
"""
from __future__ import annotations

import csv
import hashlib
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
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _report  # noqa: E402

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
    collection = _report.collection_of(report)
    inputs = _report.Inputs(_aggregate.make_settings(peer_group="test"), str(where), None, None, [], None, None, [], [])
    _report.judge_and_write(collection, inputs, report["run"])
    report["summary"]["passed"] = passed
    (where / "report.json").write_text(json.dumps(report, indent=1))
    return where


def store_key(tmp: Path) -> Path:
    """The throwaway store key of a test: a 0600 file on the controller, never sent to the store host."""
    path = tmp / "store.key"
    if not path.exists():
        path.write_text(hashlib.sha256(str(tmp).encode()).hexdigest() + "\n")
        path.chmod(0o600)
    return path


def scheduled_run(tmp: Path, name: str, store: str, store_host: str, reports: Path, *extra: str, args=()):
    """One run of rstore_run.yml: (exit code, output, the baseline report the first play set - the JSON of its
    controller copy - or None when it set none); the baseline's temporary directory is removed. ``extra`` are -e
    values, ``args`` other ansible-playbook arguments (--limit ...)."""
    record = tmp / ("%s-record.json" % name)
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory_path(LAB)), str(PLAYBOOK),
            "-e", "diskproof_report_store=%s" % store, "-e", "diskproof_report_store_host=%s" % store_host,
            "-e", "publish_dir=%s" % reports, "-e", "record_file=%s" % record, *args]
    for value in extra:
        argv += ["-e", value]
    # The report callback (enabled by ansible.cfg) writes this playbook's own, empty, report elsewhere.
    env = dict(checkout_collection_env(tmp / ("%s-callback" % name)), DISKPROOF_STORE_KEY_FILE=str(store_key(tmp)))
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    baseline_file = json.loads(record.read_text())["baseline_file"] if record.exists() else None
    baseline = None
    if baseline_file is not None:
        # The role's own temporary directory for the baseline (diskproof_report_store_baseline_dir unset).
        assert Path(baseline_file).parent.name.startswith("diskproof-baseline-"), baseline_file
        baseline = json.loads(Path(baseline_file).read_text())
        shutil.rmtree(Path(baseline_file).parent)
    return result.returncode, result.stdout + result.stderr, baseline


def as_published(baseline: dict) -> dict:
    """The baseline copy without what the controller added to it (which run it is, the hosts it lacks)."""
    return {key: value for key, value in baseline.items() if key != "store_baseline"}


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
    # The second run's baseline is the first run's report.json, brought to the controller and checked there.
    assert as_published(baseline_2) == json.loads((first / "report.json").read_text())
    assert baseline_2["store_baseline"]["scope"] == "full" and baseline_2["store_baseline"]["hosts_missing"] == {}
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
        assert sorted(run_on("ls -A %s/%s" % (STORE, name)).split()) == sorted(FILES + ["SHA256SUMS", "SHA256SUMS.hmac"])
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
    assert as_published(baseline) == json.loads((first / "report.json").read_text())
    assert "no report.json in %s" % empty in output, output
    assert run_on("cd %s && ls -lAR --time-style=full-iso . && cat index.json" % STORE) == before


def test_local_store_two_scheduled_runs(rstore, tmp_path):
    store = tmp_path / "store"
    first, second = two_runs(tmp_path, str(store), "localhost")
    names = sorted(path.name for path in store.iterdir() if path.name[0].isdigit())
    assert len(names) == 2 and RUN_ID_AWX.match(names[0]) and RUN_ID_RANDOM.match(names[1]), names
    for name, source in zip(names, (first, second)):
        assert sorted(path.name for path in (store / name).iterdir()) == sorted(FILES + ["SHA256SUMS", "SHA256SUMS.hmac"])
        checked = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=store / name,
                                 capture_output=True, text=True, check=False)
        assert checked.returncode == 0 and checked.stdout.count(": OK\n") == len(FILES), checked.stdout
        assert (store / name / "report.json").read_bytes() == (source / "report.json").read_bytes()
    assert (store / "latest").readlink() == Path(names[1])
    assert (store / "last-pass").readlink() == Path(names[0])
    check_index(json.loads((store / "index.json").read_text()), str(store), names)
    shutil.rmtree(store)


ATTACKED = "/srv/diskproof/d0/attacked"


def flat(output: str) -> str:
    return " ".join(output.split())


def test_the_baseline_cannot_be_poisoned_on_a_lab_file_server(rstore, tmp_path):
    """Issue 31's attacks on a store on the lab file server, each through real ansible-playbook runs over SSH."""
    run_on("rm -rf %s /srv/diskproof/d0/elsewhere /srv/diskproof/d0/victim" % ATTACKED)

    # A store owned by another user: refused before anything is made in it.
    run_on("mkdir -m 0755 %s && chown 65534:65534 %s" % (ATTACKED, ATTACKED))
    code, output, _baseline = scheduled_run(tmp_path, "foreign", ATTACKED, SERVER, report_dir(tmp_path / "r0", True))
    assert code == 2 and "diskproof_report_store %s is owned by uid 65534 (nobody) (mode 0755), not by uid 0 (root)" \
        % ATTACKED in flat(output), output
    assert run_on("ls -A %s" % ATTACKED).split() == []
    run_on("chown 0:0 %s" % ATTACKED)

    # A symlinked .incoming: refused; nothing made or swept where it points.
    run_on("mkdir -p /srv/diskproof/d0/elsewhere/old.tmp && touch -d '10 days ago' /srv/diskproof/d0/elsewhere/old.tmp "
           "&& ln -s /srv/diskproof/d0/elsewhere %s/.incoming" % ATTACKED)
    code, output, _baseline = scheduled_run(tmp_path, "link", ATTACKED, SERVER, report_dir(tmp_path / "r1", True))
    assert code == 2 and "the store's upload directory %s/.incoming is a symbolic link" % ATTACKED in flat(output), \
        output
    assert run_on("ls -A /srv/diskproof/d0/elsewhere").split() == ["old.tmp"]
    run_on("rm %s/.incoming" % ATTACKED)

    # Two full runs that pass, the second with an evidence bundle (0600) published with become: 0600 in the store.
    first = report_dir(tmp_path / "full1", True)
    code, output, _baseline = scheduled_run(tmp_path, "full1", ATTACKED, SERVER, first)
    assert code == 0, output
    second = report_dir(tmp_path / "full2", True)
    (second / "evidence" / "rstore-fs1").mkdir(parents=True)
    bundle = second / "evidence" / "rstore-fs1" / "loop0-20261128T000000Z.tar.gz"
    bundle.write_bytes(b"bundle")
    bundle.chmod(0o600)
    code, output, baseline = scheduled_run(tmp_path, "full2", ATTACKED, SERVER, second,
                                           "diskproof_report_store_become=true", "ansible_become_method=su")
    assert code == 0 and baseline is not None, output
    full1, full2 = json.loads(run_on("cat %s/index.json" % ATTACKED))["runs"][0]["run_id"], run_on(
        "readlink %s/last-pass" % ATTACKED).strip()
    assert baseline["store_baseline"]["run_id"] == full1 and full2 != full1
    assert run_on("stat -c %%a %s/%s/evidence/rstore-fs1/%s" % (ATTACKED, full2, bundle.name)).strip() == "600"

    # A slice (--limit) that passes: published as a partial run, the baseline stays on the full run. (The plays run
    # on localhost: a second inventory names it, so that --limit can select it.)
    (tmp_path / "localhost.json").write_text(json.dumps({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    code, output, baseline = scheduled_run(tmp_path, "slice", ATTACKED, SERVER, report_dir(tmp_path / "slice", True),
                                           args=("-i", str(tmp_path / "localhost.json"), "--limit", "localhost"))
    assert code == 0 and baseline["store_baseline"]["run_id"] == full2, output
    runs = json.loads(run_on("cat %s/index.json" % ATTACKED))["runs"]
    assert [run["scope"] for run in runs] == ["full", "full", "partial"]
    assert run_on("readlink %s/last-pass" % ATTACKED).strip() == full2

    # A forged index entry naming a directory outside the store, then a publish with keep=2: the index is rebuilt
    # from the run directories, the directory outside untouched.
    run_on("mkdir /srv/diskproof/d0/victim && echo precious > /srv/diskproof/d0/victim/data")
    runs.insert(0, dict(runs[0], run_id="/srv/diskproof/d0/victim", published="2000-01-01T00:00:00Z"))
    (tmp_path / "forged.json").write_text(json.dumps({"schema": 1, "runs": runs}))
    run_on("cat > %s/index.json <<'EOF'\n%s\nEOF" % (ATTACKED, (tmp_path / "forged.json").read_text()))
    code, output, _baseline = scheduled_run(tmp_path, "forged", ATTACKED, SERVER, report_dir(tmp_path / "r3", False),
                                            "diskproof_report_store_keep=2")
    assert code == 0, output
    assert "index.json was unreadable or not the store's (it names run_id '/srv/diskproof/d0/victim'" in flat(output)
    assert run_on("cat /srv/diskproof/d0/victim/data") == "precious\n"

    # last-pass's report.json tampered with and its SHA256SUMS recomputed: sha256sum -c accepts it, the baseline
    # does not.
    run_on("cd %s/%s && sed -i 's/\"read_iops\": 201.406886/\"read_iops\": 901.406886/' report.json && "
           "sha256sum $(sed 's/^[0-9a-f]*  //' SHA256SUMS) > SHA256SUMS.new && mv SHA256SUMS.new SHA256SUMS && "
           "sha256sum -c --quiet SHA256SUMS" % (ATTACKED, full2))
    code, output, baseline = scheduled_run(tmp_path, "tampered", ATTACKED, SERVER, report_dir(tmp_path / "r4", True))
    assert code == 2 and baseline is None, output
    assert "the SHA256SUMS of run %s does not match its signature" % full2 in flat(output), output

    # A failed run pointed at by last-pass (ln -sfn, the remedy the docs once gave): refused.
    failed = next(run["run_id"] for run in json.loads(run_on("cat %s/index.json" % ATTACKED))["runs"]
                  if run["passed"] is False)
    run_on("cd %s && ln -sfn %s last-pass" % (ATTACKED, failed))
    code, output, baseline = scheduled_run(tmp_path, "failed", ATTACKED, SERVER, report_dir(tmp_path / "r5", True))
    assert code == 2 and baseline is None, output
    assert "index.json says run %s did not pass" % failed in flat(output), output
    run_on("rm -rf %s /srv/diskproof/d0/elsewhere /srv/diskproof/d0/victim" % ATTACKED)
