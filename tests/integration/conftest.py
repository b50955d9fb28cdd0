"""How the integration tests run side by side (docs/tests.md, "Integration tests in parallel").

`make integration` runs `pytest -n N --dist loadfile --no-loadscope-reorder -m "not alone"`: every test file brings up
a lab of its own (a name and subnet no other SPEC has: tests/unit/tools/test_lab_specs_distinct.py), so a file is the
unit of work: all its tests go to one worker, in their order, and share the file's module-scoped lab. A new file
needs nothing here. Then the files marked `alone` run, one after the other, with no other lab up. Run by itself
(`pytest tests/integration/test_x.py`, no -n), nothing here changes what runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest

# Files that must not run at the same time are one unit of work (one worker runs them one after the other).
SHARED_UNITS = {
    # `losetup --find` takes the first free loop device, and test_raw_grant_binding detaches its lab disk's loop
    # device for a moment to attach another image under the same name (tools/lab up never takes an existing loop
    # device: it makes its own).
    "test_discover_refusals": "loop devices: test_discover_refusals.py, test_raw_grant_binding.py",
    "test_raw_grant_binding": "loop devices: test_discover_refusals.py, test_raw_grant_binding.py",
}

# The files that take longest (lab up and down included, measured side by side: docs/tests.md) go first, so that
# none of them starts while the other workers are running out of work; the others follow in collection order.
LONGEST_FIRST = (
    "test_cancel",
    "test_bad_input_matrix",
    "test_evidence_bundle",
    "test_path_swap",
    "test_benchmark_raw",
    "test_non_disk_targets",
    "test_quiesce_systemd",
    "test_space_per_filesystem",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: the file runs when no other lab does (it measures what every lab "
                                       "shares: the page cache); make integration runs such files after the others")


def pytest_collection_modifyitems(items):
    rank = {stem: index for index, stem in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))   # stable: a file's tests keep their order


try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:   # pytest-xdist not installed: the files run one after the other
    LoadFileScheduling = None

if LoadFileScheduling is not None:
    class LabFileScheduling(LoadFileScheduling):
        """--dist loadfile, with the files of SHARED_UNITS in one unit of work."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_UNITS.get(Path(path).stem, path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(config, log):
        return LabFileScheduling(config, log) if config.getvalue("dist") == "loadfile" else None
