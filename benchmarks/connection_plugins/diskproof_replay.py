# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A simulated host for benchmarks/controller_scale.py (not part of the collection): every module call is answered
with what the module answered on a real lab host (recorded by the callback replay_record), so a playbook runs its
whole controller side - workers, templating, the module payloads built and sent, results, callbacks, the report -
for any number of hosts, with no host at all. Nothing runs anywhere: the payload is read, not executed.

The recording's host name and run id are replaced by this host's and this run's (the controller checks both: the
restore is skipped only when the last test restored this run). A call with no recorded answer fails loudly.
"""
from __future__ import annotations

DOCUMENTATION = """
name: diskproof_replay
short_description: answer module calls from a recording, for benchmarks/controller_scale.py
description:
  - Replays the results of a real run (benchmarks/callback_plugins/replay_record.py) for any host name.
author: diskproof maintainers (@diskproof)
options:
  recording:
    description: The recording (JSON) to answer from.
    type: str
    required: true
    env:
      - name: DISKPROOF_REPLAY_RECORDING
extends_documentation_fragment:
  - connection_pipelining
"""

import ast
import json
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection import ConnectionBase

MODULE_LINE = re.compile(r"^ansible_module='([^']+)',$", re.M)
PARAMS_LINE = re.compile(r"^params=(.+),$", re.M)
_RECORDINGS: Dict[str, Dict[str, Any]] = {}


def module_call(in_data: bytes) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(module name, its arguments) of a pipelined AnsiballZ payload, or None for anything else."""
    text = in_data.decode("utf-8", "replace")
    module, params = MODULE_LINE.search(text), PARAMS_LINE.search(text)
    if not module or not params:
        return None
    return module.group(1), json.loads(ast.literal_eval(params.group(1)))["ANSIBLE_MODULE_ARGS"]


def call_key(module: str, args: Dict[str, Any]) -> str:
    """What tells one recorded call of a host from another: the module and, for a test, the test's name."""
    return "%s %s" % (module, args.get("test") or args.get("state") or "")


def recorded_host(recording: Dict[str, Any]) -> Tuple[str, List[Dict[str, Any]]]:
    if len(recording) != 1:
        raise AnsibleConnectionFailure("diskproof_replay: the recording must hold exactly one host, it holds %d"
                                       % len(recording))
    return next(iter(recording.items()))


def run_id_of(args: Dict[str, Any]) -> str:
    return str(args.get("run_id") or args.get("lock_run_id") or "")


def answer(recording: Dict[str, Any], module: str, args: Dict[str, Any], host: str) -> str:
    """The recorded result of this call, as the module printed it, for host and the run args names."""
    name, calls = recorded_host(recording)
    key = call_key(module, args)
    for call in calls:
        if call_key(call["module"], call["args"]) == key:
            text = json.dumps(call["result"])
            old_run, new_run = run_id_of(call["args"]), run_id_of(args)
            if old_run and new_run:
                text = text.replace(old_run, new_run)
            return text.replace(json.dumps(name)[1:-1], json.dumps(host)[1:-1])
    raise AnsibleConnectionFailure("diskproof_replay: no recorded answer for %s (recorded: %s)"
                                   % (key, ", ".join(sorted({call_key(c["module"], c["args"]) for c in calls}))))


class Connection(ConnectionBase):
    transport = "diskproof_replay"
    has_pipelining = True
    always_pipeline_modules = True

    def _connect(self):
        self._connected = True
        return self

    def _recording(self) -> Dict[str, Any]:
        path = self.get_option("recording")
        if path not in _RECORDINGS:
            with open(path, encoding="utf-8") as handle:
                _RECORDINGS[path] = json.load(handle)
        return _RECORDINGS[path]

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        call = module_call(in_data or b"")
        if call is None:
            raise AnsibleConnectionFailure("diskproof_replay: only pipelined module calls are replayed, not %r" % cmd)
        module, args = call
        return 0, answer(self._recording(), module, args, self._play_context.remote_addr or "").encode(), b""

    def put_file(self, in_path, out_path):
        raise AnsibleConnectionFailure("diskproof_replay: no file is copied to a simulated host (%s)" % out_path)

    def fetch_file(self, in_path, out_path):
        raise AnsibleConnectionFailure("diskproof_replay: no file is fetched from a simulated host (%s)" % in_path)

    def close(self):
        self._connected = False
