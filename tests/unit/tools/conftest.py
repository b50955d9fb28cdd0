"""Make tools/labkit importable (tools/lab itself puts tools/ on sys.path the same way)."""
from __future__ import annotations

import os
import sys

TOOLS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "tools")
if TOOLS_DIR not in sys.path:
    sys.path.insert(0, TOOLS_DIR)
