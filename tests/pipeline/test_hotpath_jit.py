"""A local master's driver JVM -- the whole Spark engine of a local run -- starts with C1 only
(``-XX:TieredStopAtLevel=1``): C2's compiling was a third of a local run's start-up CPU; a user's
``--conf spark.driver.extraJavaOptions`` replaces it.  Read from the running JVM's own arguments.

The JVMs collect their garbage with one thread and map the run's class archive
(``JAVA_TOOL_OPTIONS``, as the tests' other Spark JVMs, :func:`standalone.class_sharing`), never
with a compiler option: the compiler is what is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from standalone import class_sharing

from harness.pipeline.cluster import LOCAL_DRIVER_JAVA_OPTIONS

_JVM_ARGUMENTS = """
import json, sys
from harness.pipeline.cluster import spark_session, stop_session
conf = json.loads(sys.argv[1])
spark = spark_session("local[1]", 1, conf=conf)
try:
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    given = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    print(json.dumps([given, list(bean.getInputArguments())]))
finally:
    stop_session(spark)
"""


def _jvm_arguments(conf: dict[str, str], archive: Path) -> tuple[str, list[str]]:
    """The driver's extraJavaOptions setting and the arguments its JVM was started with."""
    env = {**os.environ, "JAVA_TOOL_OPTIONS": f"-XX:+UseSerialGC {class_sharing(archive)}"}
    said = subprocess.run([sys.executable, "-c", _JVM_ARGUMENTS, json.dumps(conf)],
                          capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert said.returncode == 0, said.stderr[-3000:]
    given, arguments = json.loads(said.stdout.strip().splitlines()[-1])
    return given, arguments


def test_a_local_driver_jvm_compiles_with_c1_only_unless_told_otherwise(spark_archive: Path) -> None:
    given, arguments = _jvm_arguments({}, spark_archive)  # Spark adds its own options to the setting
    assert LOCAL_DRIVER_JAVA_OPTIONS in given.split() and LOCAL_DRIVER_JAVA_OPTIONS in arguments
    given, arguments = _jvm_arguments({"spark.driver.extraJavaOptions": "-Dmsmq.harness.test=1"}, spark_archive)
    assert "-Dmsmq.harness.test=1" in given.split() and "-Dmsmq.harness.test=1" in arguments
    assert LOCAL_DRIVER_JAVA_OPTIONS not in given.split()
