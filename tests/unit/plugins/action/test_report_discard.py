"""The report action's discard: the report play removes the callback's answer through the action itself (no file
module started on the controller), and only a directory judge=true handed out - nothing a variable could point at
elsewhere (plugins/action/report.py response_directory)."""
from __future__ import annotations

import os
import tempfile

import pytest

from ansible_collections.diskproof.fleet.plugins.action.report import RESPONSE_NAME, RESPONSE_PREFIX, response_directory


@pytest.fixture
def controller_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_response_the_action_handed_out_names_its_private_directory(controller_tmp):
    directory = tempfile.mkdtemp(prefix=RESPONSE_PREFIX)
    assert response_directory(os.path.join(directory, RESPONSE_NAME)) == directory


@pytest.mark.parametrize("path", [
    "/etc/passwd",
    "{tmp}/judgement.json",                          # the temporary directory itself
    "{tmp}/someone-else/judgement.json",              # another directory there
    "{tmp}/diskproof-judgement-x/other.json",         # another file name
    "/var/tmp/diskproof-judgement-x/judgement.json",  # outside the controller's temporary directory
    "{tmp}/diskproof-judgement-x/../../etc/judgement.json",
])
def test_anything_else_is_refused(controller_tmp, path):
    assert response_directory(path.format(tmp=controller_tmp)) is None


def test_a_symbolic_link_named_like_a_response_directory_is_refused(controller_tmp):
    target = controller_tmp / "elsewhere"
    target.mkdir()
    (controller_tmp / (RESPONSE_PREFIX + "link")).symlink_to(target)
    assert response_directory(str(controller_tmp / (RESPONSE_PREFIX + "link") / RESPONSE_NAME)) is None
