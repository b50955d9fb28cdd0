"""The journal: one JSON object per line, appended BEFORE the resource it names is created.

Teardown undoes only what the journal names, so it works after a crash or a half-finished `up`
and never touches anything the lab did not create. Each record is written with a single
write(2) on an O_APPEND descriptor: a SIGKILL can cut the tool at any point, but a record that
reached the kernel survives it (no fsync needed: after a machine crash nothing of the lab is
left to undo). A torn last line can only be the intent of a resource never created; it is ignored.
"""
from __future__ import annotations

import json
import os
from typing import Any

JOURNAL_FILE = "journal.jsonl"


class Journal:
    def __init__(self, state_dir: str, new: bool = False) -> None:
        """new=True: the journal must not exist yet (O_EXCL), so two concurrent `up`s cannot share one."""
        self.path = os.path.join(state_dir, JOURNAL_FILE)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new else 0)
        self._fd = os.open(self.path, flags, 0o600)

    def record(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, **fields}, sort_keys=True) + "\n"
        os.write(self._fd, line.encode())

    def close(self) -> None:
        os.close(self._fd)


def read_journal(state_dir: str) -> list[dict[str, Any]] | None:
    """All complete records, in order; None when there is no journal."""
    path = os.path.join(state_dir, JOURNAL_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
    except FileNotFoundError:
        return None
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # empty tail or a record torn by a kill
        if isinstance(record, dict) and "kind" in record:
            records.append(record)
    return records
