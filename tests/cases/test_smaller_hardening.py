"""The smaller findings of issue 21 (item 9), each refused or told apart where it is met.

- ``--record`` transcript names are unique and stable: ``a/b`` and ``a?b`` get a page each, and
  the HTML report links each case to its own;
- ``compare`` reads only what matches the results schema: a JSON array is exit 2 with a clear
  error (not a traceback with exit 1, "they disagree");
- ``pipeline --partitions -3`` and ``run --step-timeout nan`` (and the other counts and
  durations of those commands) are usage errors when the command line is parsed (exit 2);
- a FIFO, a link to ``/dev/zero`` or a link to nothing in a case folder is reported, not skipped
  silently (nor read: a FIFO blocks, /dev/zero never ends);
- a string ``iTimeout`` (and an argument of another declared type) is refused at load, with the
  file and line, instead of reaching the target as a TypeError.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cases.lines import CaseError
from harness.cases.loader import load_paths, load_text
from harness.cli import main as cli_main
from harness.report.transcript import file_stem
from tests.case_texts import establish_case

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


# ------------------------------------------------------------------------------ transcript names

COLLIDING = establish_case(
    "names.collide", "EstablishConnection answered (${v})", head='matrix:\n  v: ["a/b", "a?b"]\n'
)


def test_transcripts_of_a_slash_b_and_a_query_b_are_two_pages_each_linked(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(COLLIDING)
    done = _cli("run", "c.yaml", "--record", "rec", "--html", "out/report.html", "--json", "out/r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    pages = sorted((tmp_path / "rec").glob("*.html"))
    assert len(pages) == 2 and len(list((tmp_path / "rec").glob("*.pcap"))) == 2
    results = {r["case_id"]: r["transcript"] for r in json.loads((tmp_path / "out" / "r.json").read_text())["results"]}
    assert set(results) == {"names.collide[v=a/b]", "names.collide[v=a?b]"}
    assert len(set(results.values())) == 2
    for case_id, page in results.items():  # each page is the transcript of its own case
        text = (tmp_path / page).read_text()
        assert f"Transcript of <code>{case_id}</code>" in text.replace("&#x27;", "'")
    report = (tmp_path / "out" / "report.html").read_text()
    links = re.findall(r'class="transcript" href="([^"]+)"', report)
    assert len(links) == 2 and len(set(links)) == 2
    assert {(tmp_path / "out" / _unquote(h)).resolve() for h in links} == {
        (tmp_path / p).resolve() for p in results.values()
    }


def _unquote(href: str) -> str:
    from urllib.parse import unquote

    return unquote(href)


def test_file_stems_are_unique_and_stable() -> None:
    ids = [
        "a/b",
        "a?b",
        "a_b",
        "a b",
        "A",
        "a",
        "x",
        "..x",
        "x.",
        "nul",
        "c[v=" + "1" * 200 + "]",
        "c[v=" + "1" * 199 + "2]",
        "c[v=~abc]",
        "c[v=_abc]",
    ]
    stems = [file_stem(i) for i in ids]
    assert len({s.lower() for s in stems}) == len(ids), stems  # unique, even on a case-insensitive file system
    assert all(len(s) <= 170 and "/" not in s and "?" not in s for s in stems)
    assert file_stem("a_b") == "a_b" and file_stem("rec.acceptor.pass") == "rec.acceptor.pass"  # safe: as it is
    assert file_stem("a/b") == "a_b~c14cddc033f6" == file_stem("a/b")  # stable: a digest of the id, no counter


# ---------------------------------------------------------------------------------- compare input


def test_compare_refuses_a_json_array_with_exit_2(tmp_path: Path) -> None:
    array = tmp_path / "array.json"
    array.write_text("[1, 2, 3]\n")
    done = _cli("compare", str(array), str(array), cwd=tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "array.json: cannot read the report: an array, not a report" in done.stderr


def test_compare_checks_each_report_against_the_results_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.report.json_report import write_json
    from harness.results import CaseResult, Outcome, RunResult

    good = write_json(
        RunResult("impl", [CaseResult("c1", "t", ["MS-MQQB 2.1"], "MUST", Outcome.passed)]), tmp_path / "g.json"
    )
    assert cli_main(["compare", str(good), str(good)]) == 0
    capsys.readouterr()
    data = json.loads(good.read_text())
    for name, broken in (
        ("outcome", {**data, "results": [{**data["results"][0], "outcome": "green"}]}),
        ("results", {**data, "results": {"c1": "passed"}}),
        ("string", "a report"),
        ("missing", {k: v for k, v in data.items() if k != "target"}),
    ):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(broken))
        assert cli_main(["compare", str(good), str(path)]) == 2, name
        err = capsys.readouterr().err
        assert f"{name}.json: cannot read the report" in err and err[-1] == "\n" and err.count("\n") == 1, err
    # a report of the format before /2 (what read_json still reads) is compared
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "msmq-harness-results/1", "target": "x", "results": []}))
    assert cli_main(["compare", str(old), str(old)]) == 0


# ----------------------------------------------------------------------------- options at parse


@pytest.mark.parametrize(
    "argv",
    [
        ["pipeline", "x.pcap", "--out", "o", "--partitions", "-3"],
        ["pipeline", "x.pcap", "--out", "o", "--partitions", "two"],
        ["pipeline", "x.pcap", "--out", "o", "--split-size", "-1"],
        ["run", "--step-timeout", "nan"],
        ["run", "--step-timeout", "inf"],
        ["run", "--step-timeout", "-1"],
        ["run", "--step-timeout", "0"],
        ["run", "-n", "0"],
        ["run", "-n", "-2"],
        ["capture-to-case", "x.pcap", "--step-timeout", "nan"],
        ["capture-to-case", "x.pcap", "--max-runs", "0"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_counts_and_durations_out_of_range_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        cli_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    option = argv[-2]  # the option whose value is out of range
    assert f"argument {option}" in err and ("expected" in err or "not a" in err), err


def test_step_timeout_nan_is_not_reported_as_the_target_not_answering(tmp_path: Path) -> None:
    done = _cli("run", "--step-timeout", "nan", "--target", "cmd:true", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "argument --step-timeout" in done.stderr
    assert "hello" not in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------------------ case folder kinds


def _a_case_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "one.yaml").write_text(_valid_case())
    return folder


def _valid_case() -> str:
    """A case of the bundled corpus, as a file of its own."""
    text = (ROOT / "cases" / "mqdmpr" / "transactions" / "commit_abort.yaml").read_text()
    return text.split("\n---\n")[0] + "\n"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dangling"])
def test_a_case_folder_entry_that_is_no_file_is_reported(kind: str, tmp_path: Path) -> None:
    folder = _a_case_folder(tmp_path)
    odd = folder / "odd.yaml"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")
    else:
        odd.symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(CaseError) as e:
        load_paths([folder])
    assert e.value.file == str(odd)
    word = {"fifo": "FIFO", "dev-zero": "character device", "dangling": "link to nothing"}[kind]
    assert word in e.value.message
    # through the command: exit 2 at once, the entry named
    done = _cli("run", "cases", "--dry-run", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "odd.yaml" in done.stderr and word in done.stderr, done.stderr


def test_a_fifo_named_as_a_case_file_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    done = _cli("run", "pipe.yaml", "--dry-run", cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "pipe.yaml" in done.stderr and "FIFO" in done.stderr


def test_links_to_case_files_still_load(tmp_path: Path) -> None:
    folder = _a_case_folder(tmp_path)
    (folder / "linked.yml").symlink_to(ROOT / "cases" / "mqdmpr" / "queues" / "open_close_pause.yaml")
    ids = {c.id for c in load_paths([folder])}
    assert {"dmpr.txn.commit-receive-deletes", "dmpr.queue.open-not-found"} <= ids


# ------------------------------------------------------------------------------- argument types


def _with_args(args: str) -> str:
    text = _valid_case()
    assert "args: {iQueueDesc: h, iTimeout: 0, iTransaction: t1}" in text
    return text.replace("args: {iQueueDesc: h, iTimeout: 0, iTransaction: t1}", f"args: {args}")


def test_a_string_itimeout_is_refused_at_load_with_file_and_line() -> None:
    text = _with_args('{iQueueDesc: h, iTimeout: "5", iTransaction: t1}')
    line = next(n for n, row in enumerate(text.splitlines(), 1) if 'iTimeout: "5"' in row)
    with pytest.raises(CaseError) as e:
        load_text(text, "cases/x.yaml")
    assert (e.value.file, e.value.line, e.value.key) == ("cases/x.yaml", line, "when[0].args.iTimeout")
    assert "not a number of seconds" in e.value.message
    for good in ("0", "2.5", "Infinite", "-1", "null"):  # numbers, Infinite and null (the default) load
        load_text(_with_args(f"{{iQueueDesc: h, iTimeout: {good}, iTransaction: t1}}"), "cases/x.yaml")
    for bad in ("[1]", "true", ".nan", "{seconds: 1}"):
        with pytest.raises(CaseError, match="iTimeout"):
            load_text(_with_args(f"{{iQueueDesc: h, iTimeout: {bad}, iTransaction: t1}}"), "cases/x.yaml")


def test_an_argument_of_another_declared_type_is_refused_at_load() -> None:
    doc = """\
id: types.open
title: An open with a share mode given as a number
spec:
  - {section: MS-MQDMPR 3.1.7.1.5, requirement: DMPR-3.1.7.1.5-NOTFOUND}
given:
  queues: [{name: q}]
when:
  - event: open_queue
    args: {iFormatName: 'DIRECT=OS:LOCALHOST\\private$\\nosuch', iRequiredAccess: ReceiveAccess, iSharedMode: 3}
    expect: {rStatus: MQ_ERROR_QUEUE_NOT_FOUND}
"""
    with pytest.raises(CaseError, match=r"iSharedMode 3 is not a QueueShareMode name") as e:
        load_text(doc, "cases/t.yaml")
    assert e.value.key == "when[0].args.iSharedMode" and e.value.line == 9
