"""The resource-growth oracle: the open file descriptors and resident memory of a local target.

A target exposes its resources when it runs on this machine: on Linux, the process listening on
the target's loopback TCP port is found through ``/proc/net/tcp`` (the socket's inode) and
``/proc/<pid>/fd``, and its open descriptors (``/proc/<pid>/fd``) and resident set
(``VmRSS`` of ``/proc/<pid>/status``) are read between rounds.  Every connection of a round is
closed before the next begins ([MS-MQQB] 3.1.5.9 Closing a Session releases it), so descriptors
that keep growing round after round are a leak.  A remote target, or one whose process cannot be
read, exposes nothing and the oracle stays silent.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FD_GROWTH", "Usage", "listener_pid", "usage"]

FD_GROWTH = 64  # descriptors more than at the start of the run (and still growing) make a finding
PROC = Path("/proc")


@dataclass(frozen=True)
class Usage:
    fds: int
    rss_kib: int


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (PROC / "net" / table).read_text().splitlines()[1:]:
                parts = line.split()
                if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rpartition(":")[2], 16) == port:
                    inodes.add(parts[9])  # st 0A: LISTEN
    return inodes


def listener_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` of this machine; None when it cannot be found."""
    inodes = {f"socket:[{i}]" for i in _listening_inodes(port)}
    if not inodes:
        return None
    candidates = [os.getpid()] + [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]
    for pid in candidates:
        with contextlib.suppress(OSError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return pid
    return None


def usage(pid: int) -> Usage | None:
    """The process's open descriptors and resident set; None when it is gone or unreadable."""
    try:
        fds = len(os.listdir(PROC / str(pid) / "fd"))
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return Usage(fds, rss)
