"""Input files that are files: what every command reads is a regular file (or a folder of them).

A device (``/dev/zero``, ``/dev/urandom``, a terminal), a FIFO or a socket named as an input would
be read until memory runs out, or wait for a writer forever: :func:`regular_file` refuses them,
following links, with :class:`NotRegularFile` -- an :class:`OSError` whose ``strerror`` says
what the path names, so the commands report it as they report a missing file (exit status 2).
:func:`open_regular` opens a file for reading and checks what it opened (no window between the
check and the read; a FIFO is opened without waiting for a writer).  :func:`read_prefix` reads at
most a given number of bytes: what an input check needs, never the whole input.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from harness.errors import HarnessError

__all__ = ["NotRegularFile", "describe_mode", "open_regular", "read_prefix", "regular_file"]


class NotRegularFile(HarnessError, OSError):
    """A path names a device, a FIFO or a socket (or a folder where a file is wanted)."""


def describe_mode(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in a few words."""
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def _refusal(path: str | os.PathLike[str], mode: int, folders: bool) -> NotRegularFile | None:
    if stat.S_ISREG(mode) or (folders and stat.S_ISDIR(mode)):
        return None
    what = describe_mode(mode)
    wanted = "a regular file or a folder" if folders else "a regular file"
    return NotRegularFile(errno.EINVAL, f"{what}, not {wanted}: never read", os.fspath(path))


def regular_file(path: str | os.PathLike[str], *, folders: bool = False) -> Path:
    """``path`` as a :class:`Path` when it names a regular file (or, with ``folders``, a folder),
    links followed; else :class:`NotRegularFile`.  A missing path raises what :func:`os.stat`
    raises (:class:`FileNotFoundError`)."""
    refused = _refusal(path, os.stat(path).st_mode, folders)
    if refused is not None:
        raise refused
    return Path(path)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary mode when it is a regular file, else
    :class:`NotRegularFile` (checked on the file opened, which a FIFO is without waiting)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        refused = _refusal(path, os.fstat(fd).st_mode, False)
        if refused is not None:
            raise refused
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_prefix(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most the first ``limit`` bytes of the regular file ``path`` (:func:`open_regular`)."""
    with open_regular(path) as f:
        return f.read(limit)
