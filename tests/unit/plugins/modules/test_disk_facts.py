"""disk_facts through AnsibleModule: target names it refuses before it looks at anything."""
from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args
from ansible_collections.diskproof.fleet.plugins.modules import disk_facts


@pytest.mark.parametrize(("target", "message"), [
    ({"path": "srv/disk1"}, "targets[0].path srv/disk1 is a relative path: give the absolute path (a directory such as "
                            "/srv/disk1, a device such as /dev/sdb)"),
    ({"device": "dev/sdb", "mode": "raw_read"}, "targets[0].device dev/sdb is a relative path: give the absolute path"),
])
def test_a_relative_target_is_refused_even_where_it_exists(tmp_path, monkeypatch, capsys, target, message):
    # From here srv/disk1 exists: a relative name would resolve to whatever the module's directory holds.
    (tmp_path / "srv" / "disk1").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(disk_facts.Discovery, "view", lambda self: pytest.fail("looked at the host"))
    with patch_module_args({"targets": [{"path": "/srv"}, target]}):
        with pytest.raises(SystemExit) as caught:
            disk_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert caught.value.code == 1 and result["failed"] is True
    assert result["msg"].startswith(message.replace("targets[0]", "targets[1]")), result["msg"]
