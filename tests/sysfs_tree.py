# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Captured /sys trees as JSON maps, made real under a test's directory.

A map is ``{"files": {relative path: text}, "links": {relative path: link target}, "dirs": [relative path]}``
(tests/fixtures/disk_state/*.json): ansible-test refuses ':' in file names, and sysfs is full of them (PCI
addresses, 254:0), so trees are stored as maps and materialised in tmp_path. Link targets are written as captured
(relative, or absolute meaning the tree's own root: the disk-state reader resolves them inside it).

    sys.path.insert(0, str(TESTS_DIR))        # the directory holding this file (tests/)
    from sysfs_tree import materialise
    root = materialise(TESTS_DIR / "fixtures" / "disk_state" / "procfs-nvme0n1.json", tmp_path)
"""
from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Union


def _inside(root: pathlib.Path, relative: str) -> pathlib.Path:
    """root/relative, refusing a key that is absolute or climbs out with '..' (a map names paths inside its tree)."""
    parts = pathlib.PurePosixPath(relative).parts
    if not parts or relative.startswith("/") or ".." in parts:
        raise ValueError("a tree path must be relative and stay inside the tree: %r" % relative)
    return root.joinpath(*parts)


def load(tree: Union[str, os.PathLike, Mapping[str, Any]]) -> Mapping[str, Any]:
    if isinstance(tree, Mapping):
        return tree
    return json.loads(pathlib.Path(tree).read_text(encoding="utf-8"))


def materialise(tree: Union[str, os.PathLike, Mapping[str, Any]], root: Union[str, os.PathLike]) -> pathlib.Path:
    """Write a tree map (a path to its JSON, or the map) under root: its files, empty directories and symlinks.
    Returns root as a Path: the sys_root to read it with."""
    document = load(tree)
    base = pathlib.Path(root)
    for relative in document.get("dirs", []):
        _inside(base, relative).mkdir(parents=True, exist_ok=True)
    for relative, text in document.get("files", {}).items():
        path = _inside(base, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for relative, target in document.get("links", {}).items():
        path = _inside(base, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
    return base
