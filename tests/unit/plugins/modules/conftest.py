"""Module tests run modules in-process: make them behave as on a managed host whatever ran before.

Importing controller code (the callback and filter tests do) flips
ansible.module_utils._internal.is_controller, after which module.warn() goes to the controller's
display instead of the module result; and warnings collect in a process-wide dict. Both would make
a module test depend on which tests ran before it.
"""
from __future__ import annotations

import pytest

from ansible.module_utils import _internal
from ansible.module_utils.common import warnings


@pytest.fixture(autouse=True)
def module_side_of_ansible(monkeypatch):
    monkeypatch.setattr(_internal, "is_controller", False)
    warnings._global_warnings.clear()
    yield
    warnings._global_warnings.clear()
