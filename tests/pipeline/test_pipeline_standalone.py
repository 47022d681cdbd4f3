"""The same job on a real Spark standalone cluster (master and worker started with spark-class from
the pyspark package, on loopback) through spark-submit: identical Parquet content to local[2]."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from pipeline_helpers import ROOT, SPLIT, table
from standalone import SPARK_HOME, spark_env, standalone_cluster


def test_standalone_cluster_gives_identical_parquet_to_local2(
    local2: tuple[dict[str, Any], Path], spark_jvm: str, tmp_path: Path
) -> None:
    inputs, local = local2
    out = tmp_path / "cluster"
    with standalone_cluster(tmp_path / "spark", jvm=spark_jvm) as url:
        env = spark_env(tmp_path / "spark", spark_jvm)
        env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        env["JAVA_TOOL_OPTIONS"] = spark_jvm  # the driver's JVM as the cluster's: C2 costs more than it saves here
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", url, "--conf", "spark.executor.memory=512m",
               str(ROOT / "harness" / "pipeline" / "__main__.py"), *inputs["paths"], "--out", str(out),
               "--partitions", "3", "--split-size", str(SPLIT // 2), "--ports", inputs["ports"], "--quiet"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            _stdout, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:  # the driver and its JVM, never left behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        assert proc.returncode == 0, stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    local_summary = json.loads((local / "summary.json").read_text())
    assert summary["master"] == url and local_summary["master"] == "local[2]"
    assert summary["tasks"] != local_summary["tasks"]  # other ranges, other partitions: same result
    for name in ("packets", "sessions", "violations"):
        cluster_rows, local_rows = table(out, name), table(local, name)
        assert local_rows, name
        assert cluster_rows == local_rows, name
    assert summary["reconciliation"] == local_summary["reconciliation"]
    for key in ("frames_read", "packets", "sessions", "violations", "violations_by_rule", "session_outcomes"):
        assert summary[key] == local_summary[key], key
