"""Every lab SPEC of the repository can be up at the same time as any other: `make test` runs the integration
test files side by side (one lab per file, pytest-xdist) and molecule's labs beside them, and the demo's rack6
may be up meanwhile. Two labs with one name share a state dir, work dir, bridge and namespaces; two with one
subnet are refused by `tools/lab up` ("subnet ... overlaps"). A SPEC without a subnet gets one from its name's
crc32 (labkit.spec.default_subnet), which can land on another lab's, so the subnet a lab gets is what counts.
"""
from __future__ import annotations

import glob
import os
from collections import defaultdict

from labkit.spec import load_spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPEC_PATTERNS = ("lab/*.yml", "tests/integration/*_lab.yml", "molecule/*/lab/spec.yml")


def lab_specs():
    found = sorted(path for pattern in SPEC_PATTERNS for path in glob.glob(os.path.join(REPO, pattern)))
    return {os.path.relpath(path, REPO): load_spec(path) for path in found}


def shared(key):
    """{value: [SPEC files]} for every value of key that more than one SPEC has."""
    owners = defaultdict(list)
    for path, spec in lab_specs().items():
        owners[key(spec)].append(path)
    return {value: paths for value, paths in owners.items() if len(paths) > 1}


def test_the_specs_are_found():
    specs = lab_specs()
    assert "lab/rack6.yml" in specs and "molecule/quiesce/lab/spec.yml" in specs
    assert len([path for path in specs if path.startswith("tests/integration/")]) >= 20, sorted(specs)


def test_every_lab_has_a_name_of_its_own():
    assert shared(lambda spec: spec.name) == {}


def test_every_lab_has_a_subnet_of_its_own():
    assert shared(lambda spec: spec.subnet) == {}, "give one of them another `subnet:` (a free 10.231.N.0/24)"
