"""Spark's own configuration reaches the pipeline's session: ``spark-defaults.conf`` (its master and
settings) and ``--conf``, which comes last; the progress display names the pipeline's stages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipeline_helpers import capture

from harness.pipeline.cluster import STAGE_LABELS

HARNESS = str(Path(sys.executable).parent / "msmq-harness")


def test_spark_defaults_conf_and_conf_options_are_applied(tmp_path: Path) -> None:
    path, _manifest = capture(tmp_path, "c.pcap", sessions=4)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.master local[1]\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(conf)}
    for given, master in ((["--quiet"], "local[1]"), (["--conf", "spark.master=local[2]"], "local[2]")):
        out = tmp_path / master
        argv = [HARNESS, "pipeline", str(path), "--out", str(out), *given]
        result = subprocess.run(argv, env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert json.loads((out / "summary.json").read_text())["master"] == master  # no --master given
    for label in STAGE_LABELS.values():  # the progress display of the second run names every stage
        assert f": {label}" in result.stdout, (label, result.stdout)
