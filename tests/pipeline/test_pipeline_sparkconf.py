"""Spark's own configuration reaches the pipeline's session (``spark-defaults.conf``'s master when
no ``--master`` is given); the progress display names the pipeline's stages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline_helpers import capture

from harness.pipeline.cluster import STAGE_LABELS

HARNESS = str(Path(sys.executable).parent / "msmq-harness")


def test_spark_defaults_conf_gives_the_master_and_the_progress_names_the_stages(tmp_path: Path, spark_jvm: str) -> None:
    path, _manifest = capture(tmp_path, "c.pcap", sessions=4)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.master local[1]\n")
    # the driver's JVM as the tests' others (the class archive, one GC thread): what is read is its output
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "JAVA_TOOL_OPTIONS": spark_jvm}
    out = tmp_path / "out"
    argv = [HARNESS, "pipeline", str(path), "--out", str(out)]
    result = subprocess.run(argv, env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["master"] == "local[1]"  # no --master given
    for label in STAGE_LABELS.values():  # the progress display names every stage
        assert f": {label}" in result.stdout, (label, result.stdout)
