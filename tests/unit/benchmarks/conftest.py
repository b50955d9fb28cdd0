# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark scripts are files, not a package: tests load them by path."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="session")
def load_benchmark():
    """load_benchmark("overhead") -> benchmarks/overhead.py as a module."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / (name + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
