"""No command destroys what it did not write (issue 21, item 3).

``pipeline --out DIR`` and ``run --record DIR`` write beside DIR and rename the output into place
when it is complete (harness.outdir); an existing DIR is replaced only when it holds a previous
output of the same command and nothing else, or with ``--force``; an interrupted run leaves DIR
as it was.  ``capture-to-case --out FILE`` refuses a folder and an existing file (without
``--force``) before any work, and ``--id`` is a case id, checked when the command line is parsed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pipeline_helpers import capture

from harness.cli import main as cli_main
from tests.case_texts import establish_case

ROOT = Path(__file__).resolve().parents[2]
SPARK = ["--master", "local[1]", "--partitions", "2", "--quiet"]


def _tree(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: relative path -> (SHA-256, mtime in ns)."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _siblings(folder: Path) -> list[str]:
    """What a run left beside ``folder`` (its temporary siblings are hidden: ``.NAME.*``)."""
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("outputs")
    small, _ = capture(d, "small.pcap", sessions=3, rate=0.0, seed=2)
    other, manifest = capture(d, "other.pcap", sessions=6, rate=0.5, seed=3, kinds=("bad-signature",))
    return small, other, manifest


# ------------------------------------------------------------------------------------- pipeline


def test_pipeline_keeps_a_users_files_in_out(
    captures: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, _, _ = captures
    out = tmp_path / "out"
    (out / "packets").mkdir(parents=True)
    (out / "packets" / "notes.csv").write_text("my notes\n")
    (out / "summary.json").write_text('{"mine": true}\n')
    before = _tree(out)
    assert cli_main(["pipeline", str(small), "--out", str(out), *SPARK]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and str(out) in err, err
    assert _tree(out) == before  # nothing deleted, summary.json not overwritten
    assert _siblings(out) == []


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_pipeline_replaces_its_own_output_refuses_an_added_file_and_forced_replaces_all(
    captures: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.outdir import MARKER

    small, other, _ = captures
    out = tmp_path / "out"
    assert cli_main(["pipeline", str(small), "--out", str(out), *SPARK]) == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["command"] == "pipeline" and "summary.json" in marker["files"]
    assert any(f.startswith("packets/part-") for f in marker["files"])
    first = json.loads((out / "summary.json").read_text())
    # its own previous output: replaced, wholly (no part file of the first run is left)
    assert cli_main(["pipeline", str(other), "--out", str(out), *SPARK]) == 0
    second = json.loads((out / "summary.json").read_text())
    assert second["sessions"] == 6 != first["sessions"] and second["out"] == str(out)
    assert set(_tree(out)) == {*json.loads((out / MARKER).read_text())["files"], MARKER}
    # a file the user added to it: refused, before Spark, and kept
    (out / "packets" / "notes.csv").write_text("my notes\n")
    before = _tree(out)
    capsys.readouterr()
    assert cli_main(["pipeline", str(small), "--out", str(out), *SPARK]) == 2
    assert "packets/notes.csv" in capsys.readouterr().err
    assert _tree(out) == before
    # --force: replaced all the same
    assert cli_main(["pipeline", str(small), "--out", str(out), "--force", *SPARK]) == 0
    assert not (out / "packets" / "notes.csv").exists()
    assert json.loads((out / "summary.json").read_text())["sessions"] == first["sessions"]
    assert _siblings(out) == []


@pytest.mark.usefixtures("spark_local")  # its local Spark jobs run in process
def test_an_interrupted_pipeline_leaves_the_previous_output_whole(
    captures: tuple[Path, Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import harness.pipeline.summary as job

    small, other, _ = captures
    out = tmp_path / "out"
    assert cli_main(["pipeline", str(small), "--out", str(out), *SPARK]) == 0
    before = _tree(out)

    def interrupted(*_args: object, **_kw: object) -> None:  # Ctrl-C once the tables are written
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "_reconcile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cli_main(["pipeline", str(other), "--out", str(out), *SPARK])
    assert _tree(out) == before  # the previous run's summary and its own tables, untouched
    assert _siblings(out) == []  # and nothing of the interrupted run


def test_pipeline_refuses_an_out_that_holds_its_input(
    captures: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, _, _ = captures
    out = tmp_path / "out"
    out.mkdir()
    inside = out / "small.pcap"
    inside.write_bytes(small.read_bytes())
    assert cli_main(["pipeline", str(inside), "--out", str(out), "--force", *SPARK]) == 2
    assert "small.pcap" in capsys.readouterr().err
    assert inside.read_bytes() == small.read_bytes()


def test_an_abandoned_temporary_sibling_is_removed_by_the_next_run(tmp_path: Path) -> None:
    import socket

    from harness.outdir import StagedOutput

    out = tmp_path / "out"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / f".out.partial-{socket.gethostname()}-{gone.stdout.strip()}-0000"
    (left / "packets").mkdir(parents=True)  # a run killed with SIGKILL
    with StagedOutput(out, "pipeline") as stage:
        (stage.path / "summary.json").write_text("{}")
        stage.commit()
    assert not left.exists() and (out / "summary.json").exists()
    assert _siblings(out) == []


# ------------------------------------------------------------------------------ capture-to-case


def test_capture_to_case_refuses_a_folder_and_an_existing_file_before_any_work(
    captures: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, other, manifest = captures
    flow = manifest["anomalies"][0]["flow"]
    folder = tmp_path / "cases"
    folder.mkdir()
    assert cli_main(["capture-to-case", str(other), "--flow", flow, "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "a folder" in err and "Traceback" not in err, err
    assert list(folder.iterdir()) == []
    mine = tmp_path / "mine.yaml"
    mine.write_text("# my edited case\n")
    assert cli_main(["capture-to-case", str(other), "--flow", flow, "--out", str(mine)]) == 2
    assert "--force" in capsys.readouterr().err
    assert mine.read_text() == "# my edited case\n"
    assert cli_main(["capture-to-case", str(other), "--flow", flow, "--out", str(mine), "--force"]) == 0
    assert yaml.safe_load(mine.read_text())["when"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases", "mine.yaml"]  # no temporary file left


def test_capture_to_case_id_is_a_case_id_checked_at_parse_time(
    captures: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, other, manifest = captures
    flow = manifest["anomalies"][0]["flow"]
    out = tmp_path / "sub" / "case.yaml"
    for bad in ("../../x", "a/b", ".hidden", "x y", ""):
        with pytest.raises(SystemExit) as e:
            cli_main(["capture-to-case", str(other), "--flow", flow, "--out", str(out), "--id", bad])
        assert e.value.code == 2
        assert "argument --id" in capsys.readouterr().err
    assert not out.parent.exists()
    assert cli_main(["capture-to-case", str(other), "--flow", flow, "--out", str(out), "--id", "my.case-1"]) == 0
    assert yaml.safe_load(out.read_text())["id"] == "my.case-1"


# --------------------------------------------------------------------------------- run --record

CASES = (
    establish_case("out.one", "EstablishConnection answered")
    + "---\n"
    + establish_case("out.two", "EstablishConnection answered, again")
)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_record_folder_holds_this_runs_transcripts_and_never_a_users_file(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(CASES)
    done = _run("cases.yaml", "--record", "rec", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "rec").iterdir() if not p.name.startswith("."))
    assert names == ["out.one.html", "out.one.pcap", "out.two.html", "out.two.pcap"]
    # a later run of one case: the folder holds its transcripts, none left over from out.two
    done = _run("cases.yaml", "-k", "one", "--record", "rec", "--json", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "rec").iterdir() if not p.name.startswith(".")) == [
        "out.one.html",
        "out.one.pcap",
    ]
    result = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert Path(result["transcript"]) == Path("rec") / "out.one.html"  # where it is, not where it was written
    # a file of the user's in it: refused before any case runs, and kept
    (tmp_path / "rec" / "mine.txt").write_text("keep me\n")
    before = _tree(tmp_path / "rec")
    done = _run("cases.yaml", "--record", "rec", cwd=tmp_path)
    assert done.returncode == 2 and "rec/mine.txt" in done.stderr and "--force" in done.stderr, done.stderr
    assert "cases in" not in done.stdout  # no case ran
    assert _tree(tmp_path / "rec") == before
    assert _siblings(tmp_path / "rec") == []


def test_force_never_replaces_the_root_the_home_or_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.outdir import refusal

    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "mine.txt").write_text("x")
    assert "root or home" in refusal("/", "pipeline", force=True)
    assert "root or home" in refusal(Path.home(), "pipeline", force=True)
    assert "current folder" in refusal(".", "pipeline", force=True)
    assert "current folder" in refusal(tmp_path, "pipeline", force=True)
    assert "mine.txt" in refusal("work", "pipeline")
    assert refusal("work", "pipeline", force=True) == ""
    assert refusal("new/deeper", "pipeline") == "" and (tmp_path / "new").is_dir()
    (tmp_path / "file").write_text("x")
    assert "not a folder" in refusal("file", "pipeline", force=True)
