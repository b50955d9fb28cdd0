#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fixed cost of one module call on a host: the AnsiballZ payload ansible-core builds for each
module of the collection, and the CPU a host spends starting it (python, unpacking, importing the
module and its module_utils, checking its arguments) before it does any work.

Each module's payload is built by ansible-core's own module_common.modify_module, exactly as a task
would ship it (ZIP_DEFLATED, the interpreter /usr/bin/python3), written to a scratch file and run
--runs times with one argument no module has: every module then stops at argument validation
("Unsupported parameters", or a required option missing) before it reads or runs anything, so the
time is the part of every call that is not the module's work. Prints payload bytes and the median and minimum CPU (user + system) per
start. --before CHECKOUT measures another checkout of the collection the same way, interleaved run
by run, for a before/after table.

    .venv/bin/python benchmarks/module_cost.py
    .venv/bin/python benchmarks/module_cost.py --before /tmp/old-checkout --runs 20 --markdown

Writes only under a temporary directory it removes.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

ROOT = pathlib.Path(__file__).resolve().parents[1]
# ansible.builtin.ping: the floor every module call pays (python, AnsiballZ, ansible-core's module_utils).
MODULES = ("ansible.builtin.ping", "disk_facts", "bench_plan", "quiesce", "bench_run", "bench_facts", "evidence",
           "report_store")
PYTHON = "/usr/bin/python3"


def build_payloads(root: pathlib.Path, modules: List[str], out: pathlib.Path) -> Dict[str, pathlib.Path]:
    """module -> its AnsiballZ payload file, built by ansible-core in a child process (its plugin loader
    sees only this checkout's collection)."""
    code = r"""
import json, os, sys
from ansible.plugins.loader import init_plugin_loader, module_loader
from ansible.executor import module_common
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader
root, out, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
init_plugin_loader([os.path.join(root, ".ansible", "collections")])
paths = {}
for name in modules:
    fqcn = name if "." in name else "diskproof.fleet." + name
    context = module_loader.find_plugin_with_context(fqcn)
    built = module_common.modify_module(
        module_name=fqcn, module_path=context.plugin_resolved_path,
        module_args={"diskproof_module_cost_probe": True},
        templar=Templar(loader=DataLoader()), task_vars={"ansible_python_interpreter": "/usr/bin/python3"},
        module_compression="ZIP_DEFLATED")
    path = os.path.join(out, fqcn + ".py")
    with open(path, "wb") as handle:
        handle.write(built.b_module_data)
    paths[name] = path
print(json.dumps(paths))
"""
    env = dict(os.environ, ANSIBLE_HOME=str(out / "ansible-home"), ANSIBLE_COLLECTIONS_PATH=str(root / ".ansible" / "collections"))
    result = subprocess.run([sys.executable, "-c", code, str(root), str(out)] + modules, capture_output=True, text=True,
                            env=env, check=False)
    if result.returncode != 0:
        raise SystemExit("building the payloads of %s failed:\n%s" % (root, result.stderr[-2000:]))
    return {name: pathlib.Path(path) for name, path in json.loads(result.stdout.splitlines()[-1]).items()}


def start_cpu(payload: pathlib.Path) -> float:
    """CPU seconds (user + system) of one start of the payload, children included."""
    process = subprocess.Popen([PYTHON, str(payload)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=str(payload.parent))
    _pid, _status, usage = os.wait4(process.pid, 0)
    process.returncode = 0   # reaped by wait4 above; Popen must not wait for it again
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--before", type=pathlib.Path, help="another checkout of the collection to measure the same way")
    parser.add_argument("--runs", type=int, default=15, help="starts of each payload (default 15)")
    parser.add_argument("--modules", default=",".join(MODULES), help="comma-separated module names")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    modules = [name.strip() for name in args.modules.split(",") if name.strip()]
    checkouts = [("before", args.before)] if args.before else []
    checkouts.append(("now", ROOT))
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="diskproof-module-cost-"))
    try:
        payloads: Dict[str, Dict[str, pathlib.Path]] = {}
        for label, root in checkouts:
            (scratch / label).mkdir()
            payloads[label] = build_payloads(root, modules, scratch / label)
        cpu: Dict[str, Dict[str, List[float]]] = {label: {name: [] for name in modules} for label, _root in checkouts}
        for _run in range(args.runs):   # interleaved: machine noise falls on both alike
            for name in modules:
                for label, _root in checkouts:
                    cpu[label][name].append(start_cpu(payloads[label][name]))
        header = ["module"]
        for label, _root in checkouts:
            header += ["payload KiB (%s)" % label, "CPU ms per start, median / min (%s)" % label]
        rows = []
        for name in modules:
            row = [name]
            for label, _root in checkouts:
                samples = cpu[label][name]
                row += ["%.0f" % (payloads[label][name].stat().st_size / 1024),
                        "%.0f / %.0f" % (1000 * statistics.median(samples), 1000 * min(samples))]
            rows.append(row)
        print_table(header, rows, args.markdown)
        print("\n%d starts of each payload with %s; %s" % (args.runs, PYTHON, ", ".join(
            "%s = %s" % (label, root) for label, root in checkouts)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def print_table(header: List[str], rows: List[List[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---:" if index else "---" for index in range(len(header))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    for row in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))


if __name__ == "__main__":
    sys.exit(main())
