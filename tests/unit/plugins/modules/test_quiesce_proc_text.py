"""The quiesce module when a /proc file it reads is not what it should be: the parsers of module_utils/_parse raise
their ParseError, and the quiesce treats it as any refusal after the stop: it undoes what it did (lock and state
released) and fails with the parser's words. In-process, with the quiesce's /proc (module_utils/_quiesce_host.py)
pointed at a temporary tree."""
from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.module_utils import _quiesce_host
from ansible_collections.diskproof.fleet.plugins.modules import quiesce

LOADAVG = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "quiesce", "loadavg-idle.txt")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the state directory must be owned by root, as on a host")


@pytest.mark.parametrize(("name", "text", "message"), [
    # a line cut short (a kernel that printed fewer counters would look so)
    ("diskstats", "   8       0 sda 1 2 3\n", "not a /proc/diskstats line: '   8       0 sda 1 2 3'"),
    ("loadavg", "", "not /proc/loadavg: ''"),
])
def test_unreadable_proc_text_rolls_the_quiesce_back(tmp_path, monkeypatch, capsys, name, text, message):
    proc = tmp_path / "proc"
    proc.mkdir()
    with open(LOADAVG) as handle:
        (proc / "loadavg").write_text(handle.read())
    (proc / "diskstats").write_text("")
    (proc / name).write_text(text)
    monkeypatch.setattr(_quiesce_host, "PROC", str(proc))
    state_dir = tmp_path / "state"
    args = {"state": "quiesced", "run_id": "unit-proc-text", "state_dir": str(state_dir), "service_manager": "sysv",
            "services": [], "timers": [], "checks": [], "drop_caches": False, "idle_window": 0.1,
            "idle_timeout": 1, "idle_load_source": "loadavg"}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            quiesce.main()
    result = json.loads(capsys.readouterr().out)
    assert result.get("failed") is True, result
    assert result["msg"] == "quiesce failed, host restored (started nothing): " + message
    assert not (state_dir / "quiesce.lock").exists() and not (state_dir / "quiesce-state.json").exists()
