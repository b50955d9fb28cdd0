"""After the converge (and its idempotence pass): cron runs again on every lab host, it was stopped
inside the run around the benchmark (the converge recorded `service cron status` there), and the
run left no lock or state file. Hosts come from the lab inventory (molecule.yml verifier options)."""
import json

STATE_DIR = "/srv/diskproof-state"
OBSERVED = "/var/tmp/diskproof-quiesce-observed.json"


def test_cron_runs_after_the_run(host):
    status = host.run("service cron status")
    assert status.rc == 0, status.stdout + status.stderr
    pid = host.file("/run/crond.pid").content_string.strip()
    assert host.file("/proc/%s/comm" % pid).content_string.strip() == "cron"


def test_cron_was_stopped_inside_the_run(host):
    observed = json.loads(host.file(OBSERVED).content_string)
    assert int(observed["cron_status_rc_before"]) == 0
    assert int(observed["cron_status_rc_during"]) == 3
    assert int(observed["cron_status_rc_after_benchmark"]) == 3
    assert observed["stopped"] == ["cron"]
    assert observed["service_manager"] == "sysv"
    assert observed["idle_reached"] in (True, "True", "true")


def test_no_lock_or_state_left_behind(host):
    assert host.file(STATE_DIR).is_directory
    assert not host.file(STATE_DIR + "/quiesce.lock").exists
    assert not host.file(STATE_DIR + "/quiesce-state.json").exists
