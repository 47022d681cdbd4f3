"""A local master's Python workers import pyspark and py4j from this interpreter's installed copy,
not from the zip files Spark puts first on their path (compiled from source by every worker:
:mod:`harness.pipeline.workerdaemon`); and a read task given its ranges' connection ends by the
first pass (:func:`harness.pipeline.tasks.task_ends`, cached for it) writes what it writes when
it finds them itself."""

from __future__ import annotations

import os
import sys
import zipfile
from collections import Counter
from pathlib import Path

import py4j
import pyspark
import pytest
from pipeline_helpers import capture, table

from harness.pipeline import tasks
from harness.pipeline.cluster import spark_session, stop_session
from harness.pipeline.splits import Split
from harness.pipeline.workerdaemon import installed_path

PORTS = frozenset({1801})
SPARK_LIB = Path(pyspark.__file__).parent / "python" / "lib"


def _spark_zips() -> list[str]:
    return sorted(str(p) for p in SPARK_LIB.glob("*.zip"))


def test_spark_zips_of_the_installed_pyspark_leave_the_path_others_stay(tmp_path: Path) -> None:
    zips = _spark_zips()
    assert any(z.endswith("pyspark.zip") for z in zips) and any("py4j-" in z for z in zips)
    rest = [p for p in sys.path if p not in zips]
    assert installed_path([*zips, *rest]) == rest
    assert installed_path(rest) == rest
    elsewhere = tmp_path / "pyspark.zip"  # a Spark of its own, not the installed one: left as given
    with zipfile.ZipFile(elsewhere, "w") as z:
        z.writestr("pyspark/__init__.py", "")
    given = [str(elsewhere), *rest]
    assert installed_path(given) == given


@pytest.mark.usefixtures("spark_local")  # its local Spark job runs in process
def test_local_workers_import_the_installed_pyspark() -> None:
    def where(_: object) -> tuple[str, str, list[str]]:  # a closure: pickled whole, run on the worker
        import sys as worker_sys

        import py4j as worker_py4j
        import pyspark as worker_pyspark

        zips = [p for p in worker_sys.path if p.endswith(".zip")]
        return worker_pyspark.__file__ or "", worker_py4j.__file__ or "", zips

    spark = spark_session("local[1]", 1)
    try:
        found = spark.sparkContext.parallelize([0], 1).map(where).collect()
    finally:
        stop_session(spark)
    [(where_pyspark, where_py4j, zips)] = found
    assert os.path.realpath(where_pyspark) == os.path.realpath(pyspark.__file__ or "")
    assert os.path.realpath(where_py4j) == os.path.realpath(py4j.__file__ or "")
    assert not set(zips) & set(_spark_zips())


def test_a_read_task_given_its_ranges_ends_writes_what_it_writes_finding_them(tmp_path: Path) -> None:
    path, _manifest = capture(tmp_path, sessions=40, rate=0.3, seed=23, concurrency=4)
    size = path.stat().st_size
    splits = [Split(str(path), 0, size // 2, 0), Split(str(path), size // 2, size, 1)]
    [(given, ends)] = [tasks.task_ends(splits, PORTS)]
    assert given == splits and [set(e) for e in ends] == [set(tasks.range_ends(s, PORTS)) for s in splits]
    held = Counter(tasks.range_connections([(splits, ends)], False))  # digest -> ranges holding it
    cross = frozenset(digest for digest, ranges in held.items() if ranges > 1)
    assert cross and len(cross) < len(held)  # some connections in both halves, most in one
    local = tasks.RangeLocal(False, cross)
    found = list(tasks.read_task(splits, PORTS, local=local, out=str(tmp_path / "found"), index=0))
    kept = list(tasks.read_task(splits, PORTS, local=local, out=str(tmp_path / "kept"), index=0, ends=ends))
    assert kept == found
    for name in tasks.TABLES:
        assert table(tmp_path / "kept", name) == table(tmp_path / "found", name)
    assert table(tmp_path / "kept", "sessions")
