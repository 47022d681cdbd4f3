"""The Python worker daemon of a local master (``spark.python.daemon.module``,
:func:`harness.pipeline.cluster.spark_session`): PySpark's own daemon (:mod:`pyspark.daemon`,
which forks the Python workers), importing pyspark and py4j from this interpreter's installed
copies rather than from the zip files Spark puts first on the workers' path.

A module in a zip file is compiled from its source by every process that imports it (zipimport
keeps no bytecode), and PySpark invalidates the import caches at every task, which re-reads the
directory of every zip file on the path: in a local run these cost about three quarters of the
Python workers' CPU on a small capture (docs/performance.md, "Pipeline").  The zips are dropped
from the path only when they are the installed pyspark's own (inside its package folder, as a
``pip install pyspark`` has them), so the code imported is the same; otherwise the path is left
as Spark gave it.
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec

__all__ = ["installed_path", "main"]


def _spark_zip(entry: str) -> bool:
    name = os.path.basename(entry)
    return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))


def installed_path(path: list[str]) -> list[str]:
    """``path`` without Spark's pyspark and py4j zip files when those lie in the folder of the
    pyspark the rest of ``path`` imports (the installed copy the zips were made from), else
    ``path`` as it is."""
    zips = [entry for entry in path if _spark_zip(entry)]
    if not zips:
        return path
    rest = [entry for entry in path if not _spark_zip(entry)]
    saved = sys.path[:]
    sys.path[:] = rest
    try:
        pyspark, py4j = find_spec("pyspark"), find_spec("py4j")
    finally:
        sys.path[:] = saved
    if pyspark is None or py4j is None or not pyspark.submodule_search_locations:
        return path
    home = os.path.realpath(next(iter(pyspark.submodule_search_locations)))
    if all(os.path.realpath(entry).startswith(home + os.sep) for entry in zips):
        return rest
    return path


def main() -> None:
    """The daemon, with the import path of :func:`installed_path`."""
    kept = installed_path(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    from pyspark import daemon  # pyspark: optional heavy dependency, imported once the path is set

    daemon.manager()


if __name__ == "__main__":
    main()
