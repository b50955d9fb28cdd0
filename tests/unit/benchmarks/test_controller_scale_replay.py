# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replay of benchmarks/controller_scale.py: a module call's payload, as ansible-core itself builds it
(module_common.modify_module, the code every task uses), is read back as its module and arguments; the recorded
answer is given to another host and another run with the recorded host's name and run id made theirs, and a call
nothing was recorded for fails naming what was."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible.errors import AnsibleConnectionFailure

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "benchmarks" / "connection_plugins" / "diskproof_replay.py"
RECORDED_RUN = "20261202T070000Z-0123abcd"
THIS_RUN = "20261202T080000Z-89abcdef"


@pytest.fixture(scope="module")
def replay():
    spec = importlib.util.spec_from_file_location("diskproof_replay", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ansible-core's own payload builder, in a process of its own: it needs ansible's collection loader installed, which
# would change the import machinery of the whole test process.
BUILD = """
import json, sys
from ansible import constants
from ansible.executor.module_common import modify_module
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
constants.DEFAULT_LOCAL_TMP = sys.argv[2]
built = modify_module(module_name="diskproof.fleet.bench_run", module_path=sys.argv[3], module_args=json.loads(sys.argv[4]),
                      templar=Templar(loader=DataLoader()), task_vars={"ansible_python_interpreter": "/usr/bin/python3"})
sys.stdout.buffer.write(built.b_module_data)
"""


def payload(tmp_path, args):
    """The pipelined payload ansible-core builds for the collection's bench_run module with these arguments."""
    completed = subprocess.run([sys.executable, "-c", BUILD, str(ROOT / ".ansible" / "collections"), str(tmp_path),
                                str(ROOT / "plugins" / "modules" / "bench_run.py"), json.dumps(args)],
                               capture_output=True, check=True)
    return completed.stdout


RECORDING = {"csc-n01": [
    {"module": "diskproof.fleet.quiesce", "args": {"state": "quiesced", "run_id": RECORDED_RUN},
     "result": {"changed": False, "msg": "quiesced: nothing to stop", "ansible_facts": {"diskproof_host": {"name": "csc-n01"}}}},
    {"module": "diskproof.fleet.bench_run", "args": {"test": "fio_rand_read", "lock_run_id": RECORDED_RUN},
     "result": {"changed": True, "restored": {"run_id": RECORDED_RUN},
                "ansible_facts": {"diskproof_results": [{"host": "csc-n01", "test": "fio_rand_read"}]}}},
]}


def test_a_payload_built_by_ansible_core_is_read_back_as_its_module_and_arguments(replay, tmp_path):
    data = payload(tmp_path, {"test": "fio_rand_read", "lock_run_id": THIS_RUN})
    module, args = replay.module_call(data)
    assert module == "diskproof.fleet.bench_run"
    assert args["test"] == "fio_rand_read" and args["lock_run_id"] == THIS_RUN
    assert replay.module_call(b"/bin/sh -c 'echo ~ && sleep 0'") is None


def test_the_recorded_answer_is_this_hosts_and_this_runs(replay):
    text = replay.answer(RECORDING, "diskproof.fleet.bench_run", {"test": "fio_rand_read", "lock_run_id": THIS_RUN},
                         "sim-00042")
    result = json.loads(text)
    assert result["restored"]["run_id"] == THIS_RUN
    assert result["ansible_facts"]["diskproof_results"] == [{"host": "sim-00042", "test": "fio_rand_read"}]
    quiesce = json.loads(replay.answer(RECORDING, "diskproof.fleet.quiesce", {"state": "quiesced", "run_id": THIS_RUN},
                                       "sim-00042"))
    assert quiesce["ansible_facts"]["diskproof_host"] == {"name": "sim-00042"}


def test_a_call_nothing_was_recorded_for_fails_naming_what_was(replay):
    with pytest.raises(AnsibleConnectionFailure, match=r"no recorded answer for diskproof.fleet.bench_run "
                                                       r"fio_seq_read \(recorded: diskproof.fleet.bench_run "
                                                       r"fio_rand_read, diskproof.fleet.quiesce quiesced\)"):
        replay.answer(RECORDING, "diskproof.fleet.bench_run", {"test": "fio_seq_read"}, "sim-00001")
