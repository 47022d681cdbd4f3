"""Where the capture pipeline's tables go (``--out``): a local folder (a path or a ``file:`` URI,
written through :class:`harness.outdir.StagedOutput`), or a folder on a file system pyarrow
writes from every executor (``hdfs://``, ``viewfs://``, ``s3://``, ``gs://``, ``abfs://``, ...),
written through :class:`RemoteStagedOutput` with the same rules; any other scheme is refused
before any work.  The tables are those of [MS-MQQB] 3.1 sessions and [MS-MQMQ] 2.2.19.1 packets
(:mod:`harness.pipeline.job`); nothing here reads them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from harness.errors import HarnessError
from harness.outdir import MARKER, listed_files, not_written, parse_marker
from harness.pipeline.splits import scheme_of

__all__ = ["PYARROW_SCHEMES", "FsFolder", "OutError", "OutTarget", "RemoteStagedOutput", "out_target"]

#: schemes of the file systems pyarrow writes (``pyarrow.fs.FileSystem.from_uri``)
PYARROW_SCHEMES = frozenset({"hdfs", "viewfs", "s3", "gs", "gcs", "abfs", "abfss"})
#: schemes only Spark's Hadoop layer knows: read there, never written by pyarrow (what pyarrow calls them)
HADOOP_ONLY = {"s3a": "s3", "s3n": "s3", "wasb": "abfs", "wasbs": "abfss", "adl": "abfs"}


class OutError(HarnessError):
    """``--out`` cannot be written (a usage error: nothing was done)."""


@dataclass(frozen=True)
class FsFolder:
    """A folder on a pyarrow file system (pickled to the executors with its file system)."""

    fs: Any
    path: str

    def join(self, *names: str) -> str:
        return "/".join((self.path, *names))


@dataclass(frozen=True)
class OutTarget:
    """A local folder (``local``) or a folder ``path`` on the pyarrow file system ``fs`` of ``uri``."""

    given: str
    local: Path | None = None
    uri: str = ""
    fs: Any = None
    path: str = ""


def out_target(out: str) -> OutTarget:
    """Where ``--out`` points, or :class:`OutError` saying why it cannot be written."""
    scheme = scheme_of(out)
    if scheme == "":
        return OutTarget(out, local=Path(out))
    if scheme == "file":
        rest = out[len("file:") :]
        if rest.startswith("//"):
            host, _, tail = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise OutError(f"--out {out}: a file: URI of another host ({host}); name a folder of this one")
            rest = "/" + tail
        return OutTarget(out, local=Path(rest))
    if scheme in PYARROW_SCHEMES:
        try:
            # pyarrow: optional heavy dependency (the spark extra), imported only for a remote --out
            from pyarrow.fs import FileSystem

            fs, path = FileSystem.from_uri(out)
        except Exception as e:  # pyarrow: no client library (libhdfs, ...), unreachable, bad URI
            raise OutError(
                f"--out {out}: pyarrow cannot open this file system here ({str(e).strip().splitlines()[0]}); the "
                "tables are written by the executors with pyarrow, which needs the file system's client on the "
                "driver and every worker"
            ) from e
        return OutTarget(out, uri=out, fs=fs, path=path.rstrip("/"))
    if scheme in HADOOP_ONLY:
        raise OutError(
            f"--out {out}: {scheme}:// is a file system of Spark's Hadoop layer (its connector, e.g. hadoop-aws, on "
            "Spark's class path), which reads inputs; the tables are written by the executors with pyarrow, which "
            f"has no {scheme}:// client: name the same place as {HADOOP_ONLY[scheme]}://... (pyarrow's client, "
            "credentials from each worker's environment), or a folder every worker shares"
        )
    raise OutError(
        f"--out {out}: unknown scheme {scheme}://; give a local folder, a file: URI, or a URI of a file system "
        f"pyarrow writes ({', '.join(s + '://' for s in sorted(PYARROW_SCHEMES))})"
    )


def _infos(fs: Any, path: str) -> list[Any]:
    # pyarrow: optional heavy dependency (the spark extra), imported only for a remote --out
    from pyarrow.fs import FileSelector

    return list(fs.get_file_info(FileSelector(path, recursive=True)))


class RemoteStagedOutput:
    """:class:`harness.outdir.StagedOutput` on a pyarrow file system: written into a hidden sibling
    ``.NAME.partial-<host>-<pid>-<random>``, the marker listing every file, then moved into place;
    an existing folder is replaced only when it is empty or holds a previous output of the command
    and nothing else -- no file and no folder it did not write (or with ``force``).  The previous
    output is moved aside (``.NAME.old-...``) and removed only once the new one is in place; when
    the new one cannot be moved in, the previous one is moved back.  Where the file system's move
    is not atomic (object stores copy), a reader may see the folder being filled; a failed run
    removes its sibling."""

    def __init__(self, target: OutTarget, command: str, *, force: bool = False) -> None:
        self.fs, self.final, self.command, self.force = target.fs, target.path, command, force
        self.path = self._sibling("partial")
        self.folder = FsFolder(self.fs, self.path)  # what the executors write into
        self.committed = False

    def _sibling(self, kind: str) -> str:
        parent, _, name = self.final.rpartition("/")
        return f"{parent}/.{name}.{kind}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"

    def refusal(self) -> str:
        # pyarrow: optional heavy dependency (the spark extra), imported only for a remote --out
        from pyarrow.fs import FileType

        info = self.fs.get_file_info(self.final)
        if info.type == FileType.NotFound:
            return ""
        if info.type != FileType.Directory:
            return f"--out {self.final}: not a folder"
        entries = _infos(self.fs, self.final)
        names = {e.path[len(self.final) + 1 :]: e for e in entries}
        marker = None
        if MARKER in names:
            try:
                with self.fs.open_input_stream(f"{self.final}/{MARKER}") as f:
                    marker = parse_marker(f.read().decode(errors="replace"))
            except OSError:
                marker = None
        listed = listed_files(marker, self.command) or set()
        folders = {str(p) for f in listed for p in PurePosixPath(f).parents}  # those the listed files lie in
        foreign = sorted(
            n + "/" if e.type == FileType.Directory else n
            for n, e in names.items()
            if (n not in folders if e.type == FileType.Directory else n not in listed | {MARKER})
        )
        if foreign and not self.force:
            return not_written("--out", self.final, self.command, foreign)
        return ""

    def __enter__(self) -> RemoteStagedOutput:
        self.fs.create_dir(self.path, recursive=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.committed:
            self.discard()

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.fs.delete_dir(self.path)

    def write_text(self, name: str, text: str) -> None:
        with self.fs.open_output_stream(f"{self.path}/{name}") as f:
            f.write(text.encode())

    def commit(self) -> str:
        # pyarrow: optional heavy dependency (the spark extra), imported only for a remote --out
        from pyarrow.fs import FileType

        files = sorted(e.path[len(self.path) + 1 :] for e in _infos(self.fs, self.path) if e.type == FileType.File)
        self.write_text(MARKER, json.dumps({"command": self.command, "files": files}, indent=1) + "\n")
        why = self.refusal()
        if why:
            self.committed = True  # kept where it was written
            raise OSError(f"{why} (this run's output is left in {self.path})")
        old = None
        if self.fs.get_file_info(self.final).type != FileType.NotFound:
            old = self._sibling("old")
            self.fs.move(self.final, old)
        try:
            self.fs.move(self.path, self.final)
        except BaseException as e:
            if old is not None:
                try:
                    self.fs.move(old, self.final)
                except OSError as back:
                    raise OSError(
                        f"--out {self.final}: the output could not be moved into place ({e}), nor the previous "
                        f"one back ({back}): it is left in {old}, this run's in {self.path}"
                    ) from e
            raise
        self.committed = True
        if old is not None:
            with contextlib.suppress(OSError):
                self.fs.delete_dir(old)
        return self.final
