"""``pipeline --out`` URIs: ``file:`` writes there; a file system pyarrow writes is written through
its client from the executors (the same code on pyarrow's local file system here); schemes that
cannot be written exit 2 before any work, and never leave a local folder named after the URI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import capture, table
from pyarrow.fs import LocalFileSystem

from harness.cli import main as cli_main
from harness.outdir import MARKER
from harness.pipeline import job
from harness.pipeline.cluster import spark_session, stop_session
from harness.pipeline.outputs import FsFolder, OutTarget, RemoteStagedOutput, out_target
from harness.pipeline.splits import describe

HARNESS = str(Path(sys.executable).parent / "msmq-harness")


def _pipeline(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HARNESS, "pipeline", *args, "--quiet"], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("s3a://bucket/tables", ["s3a:// is a file system of Spark's Hadoop layer", "s3://"]),
        ("wasb://box@account/tables", ["wasb://", "abfs://"]),
        ("foo://host/tables", ["unknown scheme foo://", "hdfs://", "s3://"]),
        ("hdfs://no-such-namenode.invalid:8020/tables", ["pyarrow cannot open this file system here"]),
        ("file://elsewhere/tables", ["a file: URI of another host (elsewhere)"]),
    ],
)
def test_an_out_uri_that_cannot_be_written_exits_2_before_any_work(tmp_path: Path, out: str, words: list[str]) -> None:
    path, _manifest = capture(tmp_path, "c.pcap", sessions=2)
    started = time.monotonic()
    result = _pipeline(tmp_path, str(path), "--out", out)
    assert result.returncode == 2, result.stderr
    message = result.stderr.strip()
    assert message.startswith(f"msmq-harness pipeline: --out {out}: "), message
    for w in words:
        assert w in message, message
    assert "log4j" not in result.stderr and time.monotonic() - started < 60  # Spark never started
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pcap", "c.pcap.json"]  # no ./s3a:/..., ./foo:/...


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_out_file_uri_writes_to_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _manifest = capture(tmp_path, "c.pcap", sessions=6, rate=0.5, seed=2)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    plain, uri = tmp_path / "plain", tmp_path / "by-uri"
    for out in (str(plain), f"file://{uri}"):
        assert cli_main(["pipeline", str(path), "--out", out, "--master", "local[2]", "--quiet"]) == 0
    assert list(work.iterdir()) == []  # nothing named after the URI
    for name in ("packets", "sessions", "violations"):
        assert table(uri, name) == table(plain, name), name
    assert json.loads((uri / "summary.json").read_text())["out"] == str(uri)
    assert json.loads((uri / MARKER).read_text())["command"] == "pipeline"


def _local_target(folder: Path) -> OutTarget:
    return OutTarget(str(folder), uri=f"file://{folder}", fs=LocalFileSystem(), path=str(folder))


def test_a_uri_output_is_staged_marked_and_replaces_only_a_previous_output(tmp_path: Path) -> None:
    """RemoteStagedOutput on a real pyarrow file system (its local one): the rules of harness.outdir."""
    final = tmp_path / "tables"
    stage = RemoteStagedOutput(_local_target(final), "pipeline")
    assert stage.refusal() == ""
    with stage:
        assert Path(stage.path).is_dir() and Path(stage.path).name.startswith(".tables.partial-")
        stage.write_text("summary.json", "{}")
        stage.commit()
    assert not Path(stage.path).exists()
    assert json.loads((final / MARKER).read_text()) == {"command": "pipeline", "files": ["summary.json"]}
    assert RemoteStagedOutput(_local_target(final), "pipeline").refusal() == ""  # a previous output
    (final / "notes.txt").write_text("mine")
    why = RemoteStagedOutput(_local_target(final), "pipeline").refusal()
    assert "notes.txt" in why and "--force" in why
    failed = RemoteStagedOutput(_local_target(final), "pipeline", force=True)
    with pytest.raises(RuntimeError), failed:
        failed.write_text("summary.json", "{}")
        raise RuntimeError("the job failed")
    assert not Path(failed.path).exists() and (final / "notes.txt").exists()  # left as it was
    forced = RemoteStagedOutput(_local_target(final), "pipeline", force=True)
    with forced:
        forced.write_text("report.txt", "new")
        forced.commit()
    assert sorted(p.name for p in final.iterdir()) == [MARKER, "report.txt"]


def test_out_target_reads_the_scheme(tmp_path: Path) -> None:
    assert out_target("rel/out").local == Path("rel/out")
    assert out_target("file:///data/out").local == Path("/data/out")
    assert out_target("file://localhost/data/out").local == Path("/data/out")
    assert out_target("file:/data/out").local == Path("/data/out")


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_the_executors_write_the_tables_through_a_pyarrow_file_system(tmp_path: Path) -> None:
    """The job's URI route (FsFolder: part files, moves, summary through the file system's client)
    gives the tables of the local-folder route."""
    path, _manifest = capture(tmp_path, "c.pcap", sessions=8, rate=0.5, seed=4)
    plain = tmp_path / "plain"
    spark = spark_session("local[2]", 2)
    try:
        job.run_pipeline([str(path)], plain, spark=spark, progress=False, split_size=16 << 10)
        folder = tmp_path / "via-fs"
        os.mkdir(folder)
        files = [describe(str(path))]
        summary = job._run(spark, files, FsFolder(LocalFileSystem(), str(folder)), 0, frozenset({1801}), 16 << 10,
                           False, time.monotonic(), shown="uri")
    finally:
        stop_session(spark)
    for name in ("packets", "sessions", "violations"):
        rows = table(plain, name)
        assert rows and table(folder, name) == rows, name
    assert not list(folder.rglob("*.tmp"))
    assert json.loads((folder / "summary.json").read_text())["packets"] == summary["packets"] > 0
    assert (folder / "report.txt").read_text().startswith("inputs 1,")


def test_conf_takes_key_value(tmp_path: Path) -> None:
    result = _pipeline(tmp_path, "x.pcap", "--out", "o", "--conf", "spark.executor.memory")
    assert result.returncode == 2 and "expected KEY=VALUE" in result.stderr


def test_a_uri_output_keeps_the_folders_a_user_made_in_a_previous_output(tmp_path: Path) -> None:
    """A folder the previous output did not make (even empty) is the user's: refused, never removed."""
    final = tmp_path / "tables"
    first = RemoteStagedOutput(_local_target(final), "pipeline")
    with first:
        first.fs.create_dir(first.folder.join("packets"))
        first.write_text("packets/part-0.parquet", "p")
        first.commit()
    (final / "mine").mkdir()
    (final / "packets" / "kept").mkdir()
    again = RemoteStagedOutput(_local_target(final), "pipeline")
    why = again.refusal()
    assert "mine/" in why and "packets/kept/" in why, why
    with again:
        again.write_text("summary.json", "{}")
        with pytest.raises(OSError, match="mine/"):
            again.commit()
    assert (final / "mine").is_dir() and (final / "packets" / "kept").is_dir()
    assert (final / "packets" / "part-0.parquet").read_text() == "p"


class _MoveInFails(LocalFileSystem):
    """pyarrow's local file system, whose move of a finished output into place fails (as a copy into
    an object store may, mid-way): every other move is the real one."""

    def __init__(self, final: str) -> None:
        super().__init__()
        self.final = final

    def move(self, src: str, dest: str) -> None:
        if dest == self.final and ".partial-" in src:
            raise OSError(f"{dest}: moving the output in failed")
        super().move(src, dest)


def test_a_uri_output_replaces_the_previous_one_only_once_it_is_in_place(tmp_path: Path) -> None:
    """The previous output stays until the new one is in place: a move that fails leaves it whole."""
    final = tmp_path / "tables"
    first = RemoteStagedOutput(_local_target(final), "pipeline")
    with first:
        first.write_text("summary.json", '{"run": 1}')
        first.commit()
    target = OutTarget(str(final), uri=f"file://{final}", fs=_MoveInFails(str(final)), path=str(final))
    second = RemoteStagedOutput(target, "pipeline")
    with second, pytest.raises(OSError, match="moving the output in failed"):
        second.write_text("summary.json", '{"run": 2}')
        second.commit()
    assert (final / "summary.json").read_text() == '{"run": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables"]  # nothing left aside
    third = RemoteStagedOutput(_local_target(final), "pipeline")
    with third:
        third.write_text("summary.json", '{"run": 3}')
        third.commit()
    assert (final / "summary.json").read_text() == '{"run": 3}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables"]
