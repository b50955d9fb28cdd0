"""Module tests run modules in-process: make them behave as on a managed host whatever ran before.

Importing controller code (the callback and filter tests do) flips
ansible.module_utils._internal.is_controller, after which module.warn() goes to the controller's
display instead of the module result; and warnings collect in a process-wide dict. Both would make
a module test depend on which tests ran before it.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
import types
from unittest import mock

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings

try:
    from ansible.module_utils import _internal
except ImportError:
    _internal = None
# ansible-core < 2.19 (make matrix) has no controller side of module.warn() to flip.
_FLIP_CONTROLLER = hasattr(_internal, "is_controller")


def _install_patch_module_args_shim() -> None:
    """ansible.module_utils.testing.patch_module_args is new in ansible-core 2.19; the module tests
    import it. On 2.17/2.18 (make matrix) give them the same context manager: the args in
    basic._ANSIBLE_ARGS, where AnsibleModule reads them on those versions too."""
    if importlib.util.find_spec("ansible.module_utils.testing") is not None:
        return

    @contextlib.contextmanager
    def patch_module_args(args=None):
        if not isinstance(args, (dict, type(None))):
            raise TypeError("The `args` arg must be a dict or None.")
        encoded = json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}).encode()
        with mock.patch.object(basic, "_ANSIBLE_ARGS", encoded):
            yield

    shim = types.ModuleType("ansible.module_utils.testing")
    shim.patch_module_args = patch_module_args
    sys.modules[shim.__name__] = shim


_install_patch_module_args_shim()


@pytest.fixture(autouse=True)
def module_side_of_ansible(monkeypatch):
    if _FLIP_CONTROLLER:
        monkeypatch.setattr(_internal, "is_controller", False)
    warnings._global_warnings.clear()
    yield
    warnings._global_warnings.clear()


@pytest.fixture
def hanging_programs(tmp_path, monkeypatch):
    """hanging_programs(*names) -> {name: path}: stand-ins for programs that never answer (a failing disk's
    smartctl, a binary on a dead network mount): shell scripts that sleep 60 s, found in place of the real
    programs by AnsibleModule.get_bin_path (every other name is looked up as usual)."""
    def install(*names):
        directory = tmp_path / "hanging-bin"
        directory.mkdir(exist_ok=True)
        paths = {}
        for name in names:
            path = directory / name
            path.write_text("#!/bin/sh\nexec sleep 60\n")
            path.chmod(0o755)
            paths[name] = str(path)
        real = basic.AnsibleModule.get_bin_path

        def get_bin_path(self, name, *args, **kwargs):
            return paths[name] if name in paths else real(self, name, *args, **kwargs)

        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        return paths

    return install
