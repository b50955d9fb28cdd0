"""After the converge (and its idempotence pass), per host and with the host's own init tool: every
unit is as prepare recorded it before any run (systemd host: `systemctl is-active` and `is-enabled`
of cron.service and every timer, so of each timer the quiesce stopped; SysV host: `service cron
status`), the quiesce stopped cron and, on systemd, no timer stayed active inside the run (the
converge recorded `systemctl is-active` of each stopped unit there), and the run left no lock or state
file. Hosts come from the lab inventory (molecule.yml verifier options); quiesc-n01 runs SysV init,
quiesc-n02 systemd (lab/spec.yml)."""
import json

STATE_DIR = "/srv/diskproof-state"
OBSERVED = "/var/tmp/diskproof-quiesce-observed.json"
BEFORE = "/var/tmp/diskproof-quiesce-before.json"
CRON_UNIT = {"sysv": "cron", "systemd": "cron.service"}   # how the quiesce module names cron


def init_of(host):
    return host.ansible.get_variables().get("diskproof_lab_init", "sysv")


def systemd_units_now(host, units):
    """{unit: [is-active, is-enabled]} read the way prepare read them before the run."""
    active = host.run("systemctl is-active %s" % " ".join(units)).stdout.split()
    enabled = host.run("systemctl is-enabled %s" % " ".join(units)).stdout.split()
    assert len(active) == len(enabled) == len(units), (active, enabled, units)
    return {unit: [state, enabled_state] for unit, state, enabled_state in zip(units, active, enabled)}


def test_units_are_as_before_the_run(host):
    before = json.loads(host.file(BEFORE).content_string)
    if init_of(host) == "systemd":
        assert before["cron.service"] == ["active", "enabled"]
        assert any(unit.endswith(".timer") and state[0] == "active" for unit, state in before.items()), before
        assert systemd_units_now(host, sorted(before)) == before
        # Nothing the lab added: the timers now are the timers then.
        files = host.run("systemctl list-unit-files --type=timer --no-legend --plain").stdout.splitlines()
        assert sorted(line.split()[0] for line in files if "@." not in line.split()[0]) == sorted(
            unit for unit in before if unit.endswith(".timer"))
    else:
        assert before == {"cron": ["active", "-"]}
        status = host.run("service cron status")
        assert status.rc == 0, status.stdout + status.stderr
        pid = host.file("/run/crond.pid").content_string.strip()
        assert host.file("/proc/%s/comm" % pid).content_string.strip() == "cron"


def test_cron_and_timers_were_stopped_inside_the_run(host):
    init = init_of(host)
    observed = json.loads(host.file(OBSERVED).content_string)
    before = json.loads(host.file(BEFORE).content_string)
    assert int(observed["cron_status_rc_before"]) == 0
    assert int(observed["cron_status_rc_during"]) == 3
    assert int(observed["cron_status_rc_after_benchmark"]) == 3
    assert observed["service_manager"] == init
    assert CRON_UNIT[init] in observed["stopped"]
    assert observed["idle_reached"] in (True, "True", "true")
    if init == "systemd":
        # Each unit the quiesce stopped was inactive inside the run and is as before now (the test above).
        assert observed["units_during"] == {unit: "inactive" for unit in observed["stopped"]}
        # No timer can fire during the measurement: the role's default list covers every timer this Debian
        # host has, so every timer that was active before was stopped.
        active_timers = sorted(unit for unit, (state, _enabled) in before.items()
                               if unit.endswith(".timer") and state == "active")
        assert sorted(unit for unit in observed["stopped"] if unit.endswith(".timer")) == active_timers
    else:
        assert observed["stopped"] == ["cron"]
        assert observed["units_during"] == {}


def test_no_lock_or_state_left_behind(host):
    assert host.file(STATE_DIR).is_directory
    assert not host.file(STATE_DIR + "/quiesce.lock").exists
    assert not host.file(STATE_DIR + "/quiesce-state.json").exists
