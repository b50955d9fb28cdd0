# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/module_cost.py measures what it says: the payloads are ansible-core's real AnsiballZ
payloads of this checkout's modules, and a start stops at argument validation (having run nothing).
The figures are the benchmark's business (docs/benchmarks.md)."""
from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def module_cost(load_benchmark):
    return load_benchmark("module_cost")


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="the payloads run with /usr/bin/python3")
def test_a_payload_stops_at_argument_validation(module_cost, tmp_path):
    payloads = module_cost.build_payloads(ROOT, ["ansible.builtin.ping", "quiesce"], tmp_path)
    assert sorted(payloads) == ["ansible.builtin.ping", "quiesce"]
    for name, payload in payloads.items():
        assert payload.read_bytes().startswith(b"#!/usr/bin/python3"), name
        answer = subprocess.run(["/usr/bin/python3", str(payload)], capture_output=True, text=True, check=False,
                                stdin=subprocess.DEVNULL, cwd=tmp_path, timeout=60)
        result = json.loads(answer.stdout)
        assert result["failed"] is True, (name, result)
        # Argument validation refused the call: the probe argument, or a required option it lacks (quiesce).
        assert result["msg"].startswith(("Unsupported parameters", "missing required arguments")), result
        assert "diskproof_module_cost_probe" in result["invocation"]["module_args"] or \
            "diskproof_module_cost_probe" in result["msg"], result
    # The quiesce payload carries the module and the module_utils it imports: the cache fence and write-cache
    # helpers, not the job runner and its tool parsers (docs/benchmarks.md, "What a module call costs a host").
    names = payload_files(payloads["quiesce"])
    utils = "ansible_collections/diskproof/fleet/plugins/module_utils/"
    assert "ansible_collections/diskproof/fleet/plugins/modules/quiesce.py" in names
    assert utils + "_write_cache.py" in names and utils + "_quiesce.py" in names
    assert utils + "_run.py" not in names and utils + "_parse/fio.py" not in names
    assert module_cost.start_cpu(payloads["ansible.builtin.ping"]) > 0


def payload_files(payload: Path) -> list:
    """The file names inside an AnsiballZ payload (its zip_data: base64 of a zip)."""
    match = re.search(r"^zip_data=['\"]([A-Za-z0-9+/=]+)['\"]", payload.read_text(), re.MULTILINE)
    assert match, "no zip_data in %s" % payload
    return zipfile.ZipFile(io.BytesIO(base64.b64decode(match.group(1)))).namelist()
