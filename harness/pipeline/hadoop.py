"""Inputs read through Spark's Hadoop file system layer (``hdfs://``, ``s3a://``, ``abfs://``, ...,
and ``file:`` when asked): listed on the driver with the Hadoop FileSystem API through the JVM
gateway, read on the executors by ``SparkContext.binaryFiles`` (a whole file per record, small files
packed into shared tasks by Spark), then handed to the same per-range reader
(:func:`harness.pipeline.splits.read_split`) and per-connection functions as local files, so the
pcap (libpcap) and pcapng (draft-ietf-opsawg-pcapng) records, the [MS-MQQB] 2.1.1 TCP segments and
the tables are the same whichever way a file was read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from harness.pipeline.splits import CAPTURE_SUFFIXES, InputFile, SplitError, scheme_of

__all__ = ["GLOB_CHARS", "hadoop_name", "input_spec", "list_inputs"]

#: characters Hadoop's glob syntax gives a meaning to (escaped with a backslash in input specs)
GLOB_CHARS = "\\*?[]{}"
#: characters a path read by binaryFiles cannot hold: its input list is split at commas (outside braces)
_UNLISTABLE = ",{}"


def hadoop_name(raw: str) -> str:
    """An input as a Hadoop path: URIs unchanged, plain local paths as absolute ``file:`` URIs (so a
    cluster whose default file system is HDFS still reads them from the local file system)."""
    if scheme_of(raw):
        return raw
    return "file:" + os.path.abspath(raw)


def _hidden(name: str) -> bool:
    """Hadoop's FileInputFormat skips files named ``_*`` or ``.*``."""
    return name.startswith(("_", "."))


def list_inputs(spark: Any, inputs: Iterable[str]) -> list[InputFile]:
    """Files named, every capture file under the folders named (recursively) and the files a glob
    matches, as fully qualified Hadoop paths with their sizes (sorted per input, duplicates dropped,
    order of the inputs kept).  A missing path, a glob matching nothing and a folder without capture
    files raise :class:`SplitError` naming the input."""
    sc = spark.sparkContext
    jvm = sc._jvm
    conf = sc._jsc.hadoopConfiguration()
    seen: dict[str, InputFile] = {}
    for raw in inputs:
        name = hadoop_name(raw)
        try:
            jpath = jvm.org.apache.hadoop.fs.Path(name)
            fs = jpath.getFileSystem(conf)
            found = _list_one(fs, jpath, name, raw)
        except SplitError:
            raise
        except Exception as e:  # py4j: the Hadoop layer refused the path (no file system for the scheme, ...)
            raise SplitError(f"{raw}: cannot be listed through Spark's Hadoop layer: {_java_message(e)}") from e
        if not found:
            raise SplitError(f"{raw}: no capture files")
        for path, size in found:
            if any(c in path for c in _UNLISTABLE):
                raise SplitError(f"{path}: a path with ',', '{{' or '}}' cannot be read through Spark's Hadoop layer")
            seen.setdefault(path, InputFile(path, size, "unread", splittable=False))
    return list(seen.values())


def _list_one(fs: Any, jpath: Any, name: str, raw: str) -> list[tuple[str, int]]:
    if any(c in name for c in "*?[{"):
        statuses = fs.globStatus(jpath) or []
        files = [s for s in statuses if s.isFile() and not _hidden(s.getPath().getName())]
        return sorted((str(fs.makeQualified(s.getPath()).toString()), int(s.getLen())) for s in files)
    if not fs.exists(jpath):
        raise SplitError(f"{raw}: no such file or folder")
    status = fs.getFileStatus(jpath)
    if status.isFile():
        if _hidden(jpath.getName()):
            raise SplitError(f"{raw}: Hadoop input formats skip files whose name starts with '_' or '.'")
        return [(str(fs.makeQualified(status.getPath()).toString()), int(status.getLen()))]
    found = []
    listing = fs.listFiles(jpath, True)
    while listing.hasNext():
        s = listing.next()
        p = s.getPath()
        if s.isFile() and not _hidden(p.getName()) and os.path.splitext(p.getName())[1].lower() in CAPTURE_SUFFIXES:
            found.append((str(fs.makeQualified(p).toString()), int(s.getLen())))
    return sorted(found)


def _java_message(e: Exception) -> str:
    java = getattr(e, "java_exception", None)
    if java is not None:
        return f"{java.getClass().getName()}: {java.getMessage()}"
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def input_spec(paths: Iterable[str]) -> str:
    """The comma-separated input list ``binaryFiles`` takes, each path's glob characters escaped so
    it names exactly that file."""
    out = []
    for path in paths:
        out.append("".join("\\" + c if c in GLOB_CHARS else c for c in path))
    return ",".join(out)
