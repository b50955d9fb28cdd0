# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers that run the real ansible-playbook with the diskproof.fleet.report callback enabled."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[4]
LIBRARY = Path(__file__).resolve().parent / "library"
# The ansible-playbook of the interpreter running pytest (the venv's); PATH only when it has none.
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
if not ANSIBLE_PLAYBOOK.exists() and shutil.which("ansible-playbook"):
    ANSIBLE_PLAYBOOK = Path(shutil.which("ansible-playbook"))


@pytest.fixture(scope="session")
def collections_path(tmp_path_factory):
    """A collections dir where ansible_collections/diskproof/fleet is this repository."""
    root = tmp_path_factory.mktemp("collections")
    namespace = root / "ansible_collections" / "diskproof"
    namespace.mkdir(parents=True)
    (namespace / "fleet").symlink_to(REPO_ROOT, target_is_directory=True)
    return root


class PlaybookRunner:
    """Writes inventory, playbook and config into a work dir and runs ansible-playbook there."""

    repo_root = REPO_ROOT

    def __init__(self, workdir: Path, collections_path: Path):
        self.workdir = workdir
        self.collections_path = collections_path

    def run(self, inventory, playbook, extra_env=None, config_text="[defaults]\n"):
        # JSON is YAML: no quoting surprises in generated inventories and playbooks.
        (self.workdir / "inventory.yml").write_text(json.dumps(inventory, indent=2))
        (self.workdir / "fleet.yml").write_text(json.dumps(playbook, indent=2))
        (self.workdir / "ansible.cfg").write_text(config_text)
        command = [str(ANSIBLE_PLAYBOOK), "-i", "inventory.yml", "fleet.yml"]
        return subprocess.run(command, cwd=self.workdir, env=self._env(extra_env or {}), capture_output=True, text=True, timeout=300, check=False)

    def ansible_doc(self, *args):
        command = [str(ANSIBLE_PLAYBOOK.parent / "ansible-doc")] + list(args)
        return subprocess.run(command, cwd=self.workdir, env=self._env({}), capture_output=True, text=True, timeout=120, check=False)

    def _env(self, extra_env):
        # Start clean: the developer's own ANSIBLE_* / DISKPROOF_* settings must not leak in.
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "DISKPROOF_"))}
        env.update({
            "ANSIBLE_CONFIG": str(self.workdir / "ansible.cfg"),
            "ANSIBLE_HOME": str(self.workdir / ".ansible"),
            # The ssh plugin's control sockets (the unreachable test host) default to ~/.ansible/cp otherwise.
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.workdir / ".ansible" / "cp"),
            # The local connection's remote tmp is ~/.ansible/tmp whatever ANSIBLE_HOME says: keep it in the work dir.
            "ANSIBLE_REMOTE_TMP": str(self.workdir / ".ansible" / "remote_tmp"),
            "ANSIBLE_COLLECTIONS_PATH": str(self.collections_path),
            "ANSIBLE_CALLBACKS_ENABLED": "diskproof.fleet.report",
            "ANSIBLE_LIBRARY": str(LIBRARY),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_DEPRECATION_WARNINGS": "False",
        })
        env.update(extra_env)
        return env


@pytest.fixture(scope="session")
def make_playbook_runner(collections_path):
    """Factory for module-scoped runs: make_playbook_runner(workdir)."""
    return lambda workdir: PlaybookRunner(workdir, collections_path)


@pytest.fixture
def playbook_runner(tmp_path, make_playbook_runner):
    return make_playbook_runner(tmp_path)
