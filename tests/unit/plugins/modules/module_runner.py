# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in-process, as the module tests do: its exit code and the JSON it printed."""
from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args


def run_main(module, capsys, args):
    """(exit code, result) of module.main() called with args."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            module.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def records(result):
    """The result records a bench_facts or bench_run result carries."""
    return result["ansible_facts"]["diskproof_results"]
