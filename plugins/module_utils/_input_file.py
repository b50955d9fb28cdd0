# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a file of captured tool output (bench_facts src=) without harming the host: only a regular
file, only up to a size limit.

A FIFO would block the module forever, a block or character device would be read whole (a disk: its
entire size into memory), a directory is not output at all. The path may be a symlink: what it
points to is what is checked. The check that counts is fstat() on the opened descriptor, so a path
swapped between the check and the read cannot slip a device in; an os.stat() before the open only
keeps a device or FIFO from being opened at all (opening one can block or have side effects).

No Ansible imports: the module turns InputFileError into its failure message.
"""

from __future__ import annotations

import os
import stat

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_READ_CHUNK = 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputFileError(ValueError):
    """The file cannot or must not be read; the message names the path, what it is and what to do."""


def kind_of(mode: int) -> str:
    """'a directory', 'a block device', ... for a st_mode that is not a regular file's."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a special file (mode %o)" % stat.S_IFMT(mode)


def _not_regular(name: str, path: str, mode: int) -> InputFileError:
    return InputFileError(
        "%s=%s is %s, not a regular file: bench_facts parses tool output saved to a regular file; save the "
        "output to a file (for example with the tool's own output option) and pass its path"
        % (name, path, kind_of(mode)))


def _too_large(name: str, path: str, size: str, limit_name: str, max_bytes: int) -> InputFileError:
    return InputFileError(
        "%s=%s %s, more than %s=%d: pass a file that holds only the tool's output, or raise %s"
        % (name, path, size, limit_name, max_bytes, limit_name))


def read_regular_file(path: str, max_bytes: int = DEFAULT_MAX_BYTES, name: str = "src",
                      limit_name: str = "src_max_bytes") -> bytes:
    """The bytes of the regular file at path (symlinks followed), at most max_bytes of them; else
    InputFileError. name and limit_name are the option names the messages use."""
    if max_bytes < 1:
        raise InputFileError("%s must be 1 or more, got %d" % (limit_name, max_bytes))
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode):
            raise _not_regular(name, path, found.st_mode)
        # O_NONBLOCK: should a FIFO be swapped in after the stat, the open returns instead of waiting.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise InputFileError("cannot read %s=%s: %s" % (name, path, error)) from None
    try:
        opened = os.fstat(descriptor)
        if not stat.S_ISREG(opened.st_mode):
            raise _not_regular(name, path, opened.st_mode)
        if opened.st_size > max_bytes:
            raise _too_large(name, path, "is %d bytes" % opened.st_size, limit_name, max_bytes)
        chunks = []
        left = max_bytes + 1  # one byte more than allowed tells a file that grew since the fstat
        while left > 0:
            chunk = os.read(descriptor, min(left, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise _too_large(name, path, "grew while it was read", limit_name, max_bytes)
        return data
    except OSError as error:
        raise InputFileError("cannot read %s=%s: %s" % (name, path, error)) from None
    finally:
        os.close(descriptor)
