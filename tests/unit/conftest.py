"""Make the checkout importable as ansible_collections.diskproof.fleet for pytest.

The Makefile creates .ansible/collections/ansible_collections/diskproof/fleet as a symlink to the
repository root; if it is missing (pytest run directly), create it the same way.
"""
from __future__ import annotations

import os
import shutil
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_DIR = os.path.join(REPO_ROOT, ".ansible", "collections")
COLLECTION_LINK = os.path.join(COLLECTIONS_DIR, "ansible_collections", "diskproof", "fleet")

if not os.path.exists(COLLECTION_LINK):
    os.makedirs(os.path.dirname(COLLECTION_LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), COLLECTION_LINK)
if COLLECTIONS_DIR not in sys.path:
    sys.path.insert(0, COLLECTIONS_DIR)


# `make units` runs without root, apt packages or a browser (docs/tests.md). A test that runs one of the benchmark
# or disk tools (Debian packages, not in the venv) says so with @pytest.mark.requires_tools("fio", ...) and is
# skipped, naming what is missing, where they are not installed; one that needs root, with
# @pytest.mark.requires_root(why) (most root-only tests have their own skipif naming the loop device, mount or
# cgroup they need). Tools are looked up as AnsibleModule.get_bin_path does: PATH, then the sbin directories
# (smartctl and nvme live there, outside a normal user's PATH).
SBIN_DIRS = ("/sbin", "/usr/sbin", "/usr/local/sbin")


def tool_path(name):
    return shutil.which(name) or next((path for path in (shutil.which(name, path=folder) for folder in SBIN_DIRS)
                                       if path), None)


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_tools(*names): skip unless every named program is installed")
    config.addinivalue_line("markers", "requires_root(why): skip unless running as root")


def pytest_collection_modifyitems(config, items):
    # Skip markers on the items themselves, so that -rs names each test (a skip raised in a hook names the hook).
    for item in items:
        for marker in item.iter_markers(name="requires_tools"):
            missing = [name for name in marker.args if tool_path(name) is None]
            if missing:
                item.add_marker(pytest.mark.skip(
                    reason="needs %s (not installed; make deps installs the Debian packages)" % ", ".join(missing)))
        for marker in item.iter_markers(name="requires_root"):
            if os.geteuid() != 0:
                item.add_marker(pytest.mark.skip(reason="needs root: %s" % marker.args[0]))
