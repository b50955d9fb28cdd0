"""Make the checkout importable as ansible_collections.diskproof.fleet for pytest.

The Makefile creates .ansible/collections/ansible_collections/diskproof/fleet as a symlink to the
repository root; if it is missing (pytest run directly), create it the same way.
"""
from __future__ import annotations

import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_DIR = os.path.join(REPO_ROOT, ".ansible", "collections")
COLLECTION_LINK = os.path.join(COLLECTIONS_DIR, "ansible_collections", "diskproof", "fleet")

if not os.path.exists(COLLECTION_LINK):
    os.makedirs(os.path.dirname(COLLECTION_LINK), exist_ok=True)
    os.symlink(os.path.join("..", "..", "..", ".."), COLLECTION_LINK)
if COLLECTIONS_DIR not in sys.path:
    sys.path.insert(0, COLLECTIONS_DIR)
