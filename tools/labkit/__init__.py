"""labkit: the diskproof lab (a fleet of network-namespace hosts with throttled loop disks).

spec.py      pure SPEC parsing and validation (no side effects, unit tested)
inventory.py pure: the Ansible inventory a running lab is described by
journal.py   append-only record of every resource before it is created
system.py    subprocess and /proc helpers (clean environment, no shell)
fleet.py     bring-up, teardown, cut/heal, status
cli.py       argument parsing for tools/lab
"""
from __future__ import annotations

DEFAULT_STATE_ROOT = "/run/diskproof-lab"
STATE_ENV = "DISKPROOF_LAB_STATE"
