"""The evidence role's controller side (tasks_from pack: fetch, sha256 check, gpg signature) with real
ansible-playbook, real fetch through `become` (su, as root: no password), real gpg, on localhost.

STAND-IN, labelled: the collection is copied to a temporary collections path with plugins/modules/evidence.py
replaced by a stand-in (below) that snapshots nothing and "packs" one real 0600 file, returning the bundle list a
host controls - here a hostile one, whose `host` climbs out of the evidence destination. Everything else (the role,
fetch, stat, gpg, file) is the real thing.

Proves (issue 31): the controller copy of a bundle is 0600 in a 0700 directory even though fetch through become
writes it 0644, and no controller path is made from a name the host returned - the signature lands beside the
fetched bundle, never where the host's names point.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

STANDIN = '''#!/usr/bin/python
# STAND-IN for diskproof.fleet.evidence (tests/unit/roles/test_evidence_fetch.py): the bundle list comes from
# <dir>/standin.json, as a hostile host could return it.
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={name: {"type": "raw"} for name in (
        "state", "phase", "dir", "devices", "disk_facts", "host_facts", "host_name", "results", "quiesce", "raw_dirs",
        "extra_files", "dest_dir")}, supports_check_mode=True)
    if module.params["state"] != "pack":
        module.exit_json(changed=False, created=False)
    with open(os.path.join(module.params["dir"], "standin.json")) as handle:
        script = json.load(handle)
    path = os.path.join(module.params["dir"], "bundle.tar.gz")
    with open(path, "wb") as handle:
        handle.write(script["content"].encode())
    os.chmod(path, 0o600)
    digest = hashlib.sha256(script["content"].encode()).hexdigest()
    module.exit_json(changed=True, bundles=[{"path": path, "name": script["name"], "host": script["host"],
                                             "sha256": digest}])


main()
'''


@pytest.fixture
def collections(tmp_path):
    """A collections path holding this collection with the evidence module replaced by the stand-in."""
    root = tmp_path / "collections" / "ansible_collections" / "diskproof" / "fleet"
    for part in ("plugins", "roles", "meta"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "plugins" / "modules" / "evidence.py").write_text(STANDIN)
    return tmp_path / "collections"


@pytest.fixture
def gpg_home(tmp_path):
    if shutil.which("gpg") is None:
        pytest.skip("needs gpg")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(home))
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-generate-key", "evidence fetch test "
                    "<evidence-fetch@diskproof.invalid>", "ed25519", "sign", "1d"], env=env, check=True,
                   capture_output=True, timeout=60)
    listing = subprocess.run(["gpg", "--batch", "--with-colons", "--list-secret-keys"], env=env, check=True,
                             capture_output=True, text=True).stdout
    try:
        yield home, [line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")][0]
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False, capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("su") is None,
                    reason="needs root and su: fetch through become (su needs no password for root)")
def test_bundles_are_private_and_signed_where_fetch_put_them_not_where_the_host_says(
        tmp_path, collections, gpg_home):
    home, fingerprint = gpg_home
    dest = tmp_path / "dest"
    host_dir = tmp_path / "host-evidence"
    host_dir.mkdir()
    content = "bundle bytes\n"
    # The host names its bundle as if it belonged two levels above the evidence destination; a file with the
    # bundle's bytes waits there (the sha256 check passes for it), as an attacker would arrange.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bundle.tar.gz").write_text(content)
    (host_dir / "standin.json").write_text(json.dumps({"content": content, "name": "bundle.tar.gz",
                                                       "host": "localhost/../../outside"}))
    playbook = [{"name": "Pack and fetch", "hosts": "localhost", "connection": "local", "gather_facts": False,
                 "tasks": [{"name": "The evidence role's pack entry point",
                            "ansible.builtin.include_role": {"name": "diskproof.fleet.evidence",
                                                             "tasks_from": "pack"}}]}]
    (tmp_path / "play.yml").write_text(json.dumps(playbook))
    (tmp_path / "inventory.json").write_text(json.dumps({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "ansible_become_method": "su", "ansible_become_user": "root"}}}}))
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ANSIBLE_", "DISKPROOF_"))}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_HOME=str(tmp_path / ".ansible"),
               ANSIBLE_REMOTE_TMP=str(tmp_path / ".ansible" / "tmp"), ANSIBLE_NOCOLOR="1", PWD=str(tmp_path))
    argv = [str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml"),
            "-e", json.dumps({"evidence_run_dir": str(host_dir), "evidence_devices": ["loop9"],
                              "evidence_dest": str(dest), "evidence_become": True, "evidence_gpg_key": fingerprint,
                              "evidence_gpg_homedir": str(home)})]
    result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    fetched = dest / "localhost" / "bundle.tar.gz"
    assert fetched.read_text() == content
    assert stat.S_IMODE(fetched.stat().st_mode) == 0o600, oct(fetched.stat().st_mode)
    assert stat.S_IMODE((dest / "localhost").stat().st_mode) == 0o700
    assert Path(str(fetched) + ".asc").read_text().startswith("-----BEGIN PGP SIGNATURE-----")
    assert sorted(os.listdir(outside)) == ["bundle.tar.gz"], "a signature was written where the host's names point"
