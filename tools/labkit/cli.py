"""Command line of tools/lab. Exit codes: 0 ok, 1 failure (or `status` found a problem), 2 bad SPEC or usage."""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from types import FrameType

import yaml

from . import DEFAULT_STATE_ROOT, STATE_ENV
from .compare import compare, format_table
from .fleet import LabError, down, set_link, ssh_exec, status, up
from .journal import JOURNAL_FILE
from .spec import LAB_NAME_RE, SpecError, format_bytes, load_spec
from .system import CommandError

EXIT_OK, EXIT_FAILED, EXIT_BAD_SPEC = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tools/lab",
        description="Bring up a lab fleet (network-namespace hosts with sshd and throttled loop disks) and tear it down.",
        epilog=f"State dir: --state, else ${STATE_ENV}, else {DEFAULT_STATE_ROOT}/<lab name>. See docs/lab.md.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    select = argparse.ArgumentParser(add_help=False)
    group = select.add_mutually_exclusive_group()
    group.add_argument("--name", help=f"lab name (state in {DEFAULT_STATE_ROOT}/NAME)")
    group.add_argument("--state", metavar="DIR", help="state dir of the lab")

    up_parser = commands.add_parser("up", help="create the lab described by SPEC")
    up_parser.add_argument("spec", metavar="SPEC", help="lab SPEC (YAML), e.g. lab/rack6.yml")
    up_parser.add_argument("--state", metavar="DIR", help=f"state dir (default ${STATE_ENV} or {DEFAULT_STATE_ROOT}/NAME)")
    up_parser.add_argument("--replace", action="store_true", help="tear down a lab already recorded in the state dir first")
    up_parser.add_argument("--keep-on-failure", action="store_true", help="leave a failed bring-up in place for debugging")
    up_parser.add_argument("--ssh-timeout", type=float, default=30.0, metavar="S", help="wait this long for every sshd (30)")

    commands.add_parser("down", parents=[select], help="tear down everything the lab's journal records")
    for name, text in (("cut", "set HOST's eth0 down (unreachable)"), ("heal", "set HOST's eth0 up again")):
        sub = commands.add_parser(name, parents=[select], help=text)
        sub.add_argument("host", metavar="HOST")
    commands.add_parser("status", parents=[select], help="hosts, addresses, ssh reachability, disks and throttles")
    ssh_parser = commands.add_parser("ssh", parents=[select], help="ssh into HOST as root with the lab key")
    ssh_parser.add_argument("host", metavar="HOST")
    ssh_parser.add_argument("remote", nargs=argparse.REMAINDER, metavar="COMMAND", help="command to run (default: a login shell)")
    compare_parser = commands.add_parser("compare", parents=[select], help="compare a diskproof report.json with the configured speeds")
    compare_parser.add_argument("report", metavar="REPORT", help="report.json written by the diskproof.fleet.report callback")
    compare_parser.add_argument("--tolerance", type=float, default=0.05, metavar="F", help="allowed relative error (0.05)")
    check_parser = commands.add_parser("check", help="validate SPEC only (no root needed, creates nothing)")
    check_parser.add_argument("spec", metavar="SPEC")
    return parser


def _labs_under_root() -> list[str]:
    try:
        names = sorted(os.listdir(DEFAULT_STATE_ROOT))
    except OSError:
        return []
    return [name for name in names if os.path.exists(os.path.join(DEFAULT_STATE_ROOT, name, JOURNAL_FILE))]


def _selected_state(args: argparse.Namespace) -> str | None:
    """--state, --name, $DISKPROOF_LAB_STATE, or the only lab under the default root (None: no lab)."""
    if args.state:
        return os.path.abspath(args.state)
    if args.name:
        if not LAB_NAME_RE.fullmatch(args.name):
            raise LabError(f"--name: must be 1-8 characters from a-z and 0-9, got {args.name!r}")
        return os.path.join(DEFAULT_STATE_ROOT, args.name)
    if os.environ.get(STATE_ENV):
        return os.path.abspath(os.environ[STATE_ENV])
    labs = _labs_under_root()
    if len(labs) > 1:
        raise LabError(f"several labs are up under {DEFAULT_STATE_ROOT} ({', '.join(labs)}): pick one with --name")
    return os.path.join(DEFAULT_STATE_ROOT, labs[0]) if labs else None


def _raise_interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # SIGTERM rolls a bring-up back like Ctrl-C does; SIGKILL is what the journal is for.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return _dispatch(args)
    except SpecError as exc:
        spec_path = getattr(args, "spec", "SPEC")
        count = len(exc.problems)
        print(f"{spec_path}: invalid SPEC ({count} problem{'s' if count != 1 else ''}), nothing was created:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_BAD_SPEC
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except (LabError, CommandError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"tools/lab {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:
        print(f"tools/lab {args.command}: interrupted {exc}".rstrip(), file=sys.stderr)
        return EXIT_FAILED


def _compare(state_dir: str, report_path: str, tolerance: float) -> int:
    with open(report_path, encoding="utf-8") as report_file:
        report = json.load(report_file)
    with open(os.path.join(state_dir, "inventory.yml"), encoding="utf-8") as inventory_file:
        inventory = yaml.safe_load(inventory_file)
    table, all_within = format_table(compare(report, inventory), tolerance)
    print(table)
    return EXIT_OK if all_within else EXIT_FAILED


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "check":
        spec = load_spec(args.spec)
        disks = sum(len(h.disks) for h in spec.hosts)
        size = sum(d.size_bytes for h in spec.hosts for d in h.disks)
        print(f"{args.spec}: lab {spec.name}, {len(spec.hosts)} hosts on {spec.subnet}, {disks} disks ({format_bytes(size)})")
        return EXIT_OK
    if args.command == "up":
        spec = load_spec(args.spec)
        state_dir = os.path.abspath(args.state or os.environ.get(STATE_ENV) or os.path.join(DEFAULT_STATE_ROOT, spec.name))
        up(spec, state_dir, args.spec, replace=args.replace, keep_on_failure=args.keep_on_failure, ssh_timeout=args.ssh_timeout)
        return EXIT_OK

    state_dir = _selected_state(args)
    if args.command == "down":
        if state_dir is None:
            print(f"no lab is up under {DEFAULT_STATE_ROOT}: nothing to do")
            return EXIT_OK
        down(state_dir)
        return EXIT_OK
    if state_dir is None:
        raise LabError(f"no lab is up under {DEFAULT_STATE_ROOT}")
    if args.command in ("cut", "heal"):
        set_link(state_dir, args.host, up_=args.command == "heal")
        return EXIT_OK
    if args.command == "status":
        return EXIT_OK if status(state_dir) else EXIT_FAILED
    if args.command == "compare":
        return _compare(state_dir, args.report, args.tolerance)
    if args.command == "ssh":
        remote = args.remote[1:] if args.remote[:1] == ["--"] else args.remote
        ssh_exec(state_dir, args.host, remote)
    return EXIT_FAILED
