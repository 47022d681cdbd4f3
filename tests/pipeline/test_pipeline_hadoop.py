"""Inputs read through Spark's Hadoop layer (``--via-hadoop``: listed with the Hadoop FileSystem API,
read by ``binaryFiles``) give the same tables as the local route that cuts files into byte ranges."""

from __future__ import annotations

import io
import json
import os
import random
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import capture, record_offsets, table, write_pcapng

from harness.cli import main as cli_main
from harness.pipeline.hadoop import hadoop_name, input_spec
from harness.pipeline.splits import is_local, scheme_of


def local_name(name: str) -> str:
    assert name.startswith("file:/"), name
    return name[len("file:") :]


def renamed(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps({**r, "input": local_name(r["input"])}, sort_keys=True) for r in rows)


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_hadoop_route_gives_the_tables_of_the_local_route_for_a_folder_and_a_glob(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    anomalies, manifest = capture(folder, "anomalies.pcap", sessions=10, rate=0.5, seed=3)
    write_pcapng(anomalies, folder / "sub" / "anomalies.pcapng")
    clean, _ = capture(tmp_path, "clean-1.pcap", sessions=4, seed=4)
    capture(tmp_path, "clean-2.pcap", sessions=3, seed=8)
    data = clean.read_bytes()
    offs = record_offsets(clean)
    garbage = bytes(random.Random(2).randrange(256) for _ in range(37))
    (folder / "odd [1].pcap").write_bytes(data[: offs[20] + 30] + garbage + data[offs[20] + 30 : offs[-2] + 9])
    (folder / "badmagic.pcap").write_bytes(b"\xde\xad\xbe\xef" + data[4:])
    inputs = [str(folder), str(tmp_path / "clean-*.pcap")]
    common = ["--master", "local[2]", "--partitions", "3", "--quiet"]
    local_out, hadoop_out = tmp_path / "local", tmp_path / "hadoop"
    assert cli_main(["pipeline", *inputs, "--out", str(local_out), "--split-size", "8192", *common]) == 0
    assert cli_main(["pipeline", *inputs, "--out", str(hadoop_out), "--via-hadoop", *common]) == 0

    for name in ("packets", "sessions", "violations"):
        local_rows, hadoop_rows = table(local_out, name), table(hadoop_out, name)
        assert local_rows, name
        assert renamed(hadoop_rows) == sorted(json.dumps(r, sort_keys=True) for r in local_rows), name
    local_summary = json.loads((local_out / "summary.json").read_text())
    hadoop_summary = json.loads((hadoop_out / "summary.json").read_text())
    assert local_summary["inputs"] == hadoop_summary["inputs"] == 6
    assert anomalies.stat().st_size > 4 * 8192  # so the local route read it in several byte ranges
    assert hadoop_summary["hadoop_inputs"] == 6 and local_summary["hadoop_inputs"] == 0
    for key in ("frames_read", "packets", "sessions", "violations", "violations_by_rule", "session_outcomes"):
        assert hadoop_summary[key] == local_summary[key], key
    hadoop_rec = [
        {**r, "input": local_name(r["input"]), "problems": [p.removeprefix("file:") for p in r["problems"]]}
        for r in hadoop_summary["reconciliation"]
    ]
    assert hadoop_rec == local_summary["reconciliation"]
    assert [r["input"] for r in local_summary["reconciliation"]] == [
        str(folder / "anomalies.pcap"), str(folder / "badmagic.pcap"), str(folder / "odd [1].pcap"),
        str(folder / "sub" / "anomalies.pcapng"),
        str(tmp_path / "clean-1.pcap"), str(tmp_path / "clean-2.pcap"),
    ]
    badmagic = hadoop_summary["reconciliation"][1]
    assert badmagic["frames_read"] == 0 and badmagic["problems"][0].startswith(f"file:{folder}/badmagic.pcap@0: ")
    damaged = hadoop_summary["reconciliation"][2]
    assert damaged["problems"] and damaged["problems"][0].startswith(f"file:{folder}/odd [1].pcap@{offs[20]}: ")
    assert damaged["frames_read"] >= len(offs) - 4
    flagged = {(v["input"], v["flow"]) for v in table(hadoop_out, "violations")}
    for a in manifest["anomalies"]:  # the anomalies are found in the pcap and in its pcapng copy
        if a["rule"]:
            assert (hadoop_name(str(anomalies)), a["flow"]) in flagged
            assert (hadoop_name(str(folder / "sub" / "anomalies.pcapng")), a["flow"]) in flagged


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_missing_and_unreadable_hadoop_inputs_are_named(tmp_path: Path) -> None:
    capture(tmp_path, "a.pcap", sessions=1)
    (tmp_path / ".hidden.pcap").write_bytes((tmp_path / "a.pcap").read_bytes())
    cases = [
        (["--via-hadoop", str(tmp_path / "missing.pcap")], f"{tmp_path / 'missing.pcap'}: no such file or folder"),
        (["--via-hadoop", f"file://{tmp_path}/none-*.pcap"], f"file://{tmp_path}/none-*.pcap: no capture files"),
        (["--via-hadoop", str(tmp_path / ".hidden.pcap")], f"{tmp_path / '.hidden.pcap'}: Hadoop input formats skip"),
        ([f"nosuch://host{tmp_path}/a.pcap"], f"nosuch://host{tmp_path}/a.pcap: cannot be listed through Spark's "
         'Hadoop layer: org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "nosuch"'),
    ]
    for args, message in cases:
        with redirect_stderr(io.StringIO()) as err:
            code = cli_main(["pipeline", *args, "--out", str(tmp_path / "out"), "--master", "local[1]", "--quiet"])
        assert code == 2, args
        assert f"msmq-harness pipeline: {message}" in err.getvalue(), err.getvalue()
    with redirect_stderr(io.StringIO()) as err:  # a missing local path is named before Spark starts
        assert cli_main(["pipeline", str(tmp_path / "gone"), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert f"{tmp_path / 'gone'}: no such file or folder" in err.getvalue()


def test_input_names_and_specs() -> None:
    assert [scheme_of(p) for p in ("/a", "a:b.pcap", "file:/a", "file:///a", "hdfs://nn/a", "s3a://b/k")] == [
        "", "", "file", "file", "hdfs", "s3a"]
    assert [is_local(p) for p in ("/a", "rel/a", "file:///a", "hdfs://nn/a", "s3a://b/k")] == [
        True, True, True, False, False]
    assert hadoop_name("hdfs://nn:8020/x/*.pcap") == "hdfs://nn:8020/x/*.pcap"
    assert hadoop_name("rel/a.pcap") == "file:" + os.path.abspath("rel/a.pcap")
    assert input_spec(["hdfs://nn/a[1].pcap", "s3a://b/c*.pcap"]) == "hdfs://nn/a\\[1\\].pcap,s3a://b/c\\*.pcap"
