"""What a Spark cluster's workers need to run the capture pipeline's tasks ([MS-MQQB] 2.1.1
sessions decoded by [MS-MQMQ] 2.2.19.1 and checked against [MS-MQQB] 3.1), shipped with the job
as the PySpark documentation's "Python Package Management" recommends:

- the project itself (the ``packets`` and ``harness`` packages) as a zip added to the job
  (``SparkContext.addPyFile``: each Python worker puts it on ``sys.path``): :func:`project_zip`;
- the third-party packages the executors import (:data:`WORKER_DISTRIBUTIONS` and what they
  require) as an archive Spark unpacks into each executor's working folder
  (``SparkContext.addArchive``, ``deps.zip#msmq-harness-deps``), put on the Python workers'
  ``PYTHONPATH``: :func:`deps_archive`.  It is copied from the driver's own environment, so it
  serves workers of the same platform and Python minor version (pyarrow is compiled code); other
  workers are given an archive built on their platform with ``pip install --target`` (see
  docs/pipeline.md, "Running on a cluster").
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import harness
import packets

__all__ = ["DEPS_FOLDER", "WORKER_DISTRIBUTIONS", "deps_archive", "project_zip", "worker_distributions"]

#: the distributions the executors import (``packets``: construct; the Parquet writer: pyarrow)
WORKER_DISTRIBUTIONS = ("construct", "pyarrow")
#: the folder of each executor's working folder the dependency archive is unpacked into
DEPS_FOLDER = "msmq-harness-deps"
#: parts of an installed distribution no worker imports (headers, sources, tests, caches)
_SKIPPED = re.compile(r"(^|/)(__pycache__|tests?|include)/|\.(pyc|pxd|pyx|pxi|h|hpp|cc|cpp)$")


def _package_files(package: Path) -> list[Path]:
    return sorted(
        p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def project_zip(folder: Path) -> Path:
    """``folder/msmq-harness-project.zip``: the ``packets`` and ``harness`` packages (sources and
    package data), importable from the zip."""
    path = folder / "msmq-harness-project.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for module in (packets, harness):
            package = Path(module.__file__ or "").resolve().parent
            for file in _package_files(package):
                z.write(file, str(Path(package.name) / file.relative_to(package)))
    return path


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    names = []
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        marker = req.split(";", 1)[1].strip() if ";" in req else ""
        if marker and not _marker_holds(marker):
            continue
        names.append(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0])
    return names


def _marker_holds(marker: str) -> bool:
    try:
        # packaging: no dependency of the project (pip brings it), 11 ms to import; only for the deps archive
        from packaging.markers import Marker
    except ImportError:  # pragma: no cover - packaging comes with pip and setuptools
        return True
    return bool(Marker(marker).evaluate())


def worker_distributions() -> list[metadata.Distribution]:
    """The installed distributions of :data:`WORKER_DISTRIBUTIONS` and everything they require."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(WORKER_DISTRIBUTIONS)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as e:
            raise FileNotFoundError(f"{name} is not installed in {sys.prefix} "
                                    " (pip install 'msmq-harness[spark]')") from e
        found[key] = dist
        todo.extend(_requirement_names(dist))
    return [found[k] for k in sorted(found)]


def _dist_files(dist: metadata.Distribution) -> list[tuple[Path, str]]:
    """(file on disk, name in the archive) of an installed distribution, what no worker imports left out."""
    out = []
    for rel in dist.files or []:
        name = str(rel).replace(os.sep, "/")
        if name.startswith("..") or _SKIPPED.search(name) or (".dist-info/" in name and name.endswith("RECORD")):
            continue
        file = Path(str(dist.locate_file(rel)))
        if file.is_file():
            out.append((file, name))
    return out


def deps_archive(cache: Path) -> Path:
    """A zip of the worker distributions as installed for this interpreter, made once per set of
    versions and platform in ``cache`` (reused while they are unchanged)."""
    dists = worker_distributions()
    tag = f"{sysconfig.get_platform()}-py{sys.version_info.major}{sys.version_info.minor}"
    ident = ";".join(f"{d.metadata['Name']}=={d.version}@{d.locate_file('')}" for d in dists) + tag
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    path = cache / f"worker-deps-{tag}-{digest}.zip"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            for dist in dists:
                for file, name in _dist_files(dist):
                    z.write(file, name)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def default_cache() -> Path:
    """Where :func:`deps_archive` keeps its archives: ``$XDG_CACHE_HOME/msmq-harness`` (``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "msmq-harness"
