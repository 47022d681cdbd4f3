"""Hostile case files ([MS-MQDMPR]/[MS-MQQB] cases are data, docs/cases.md): deep nesting, alias
bombs and huge matrices are refused with a CaseError naming file, line and the limit, in bounded
time and memory, never a crash of the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cases.lines import CaseError
from harness.cases.loader import MAX_DEPTH, MAX_NODES, load_text
from harness.cases.matrix import MAX_VARIANTS

HEAD = "id: x\ntitle: t\nspec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: DMPR-3.1.7.3.2-FWD-START}]\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (HEAD + "given: " + "[" * 30_000 + "]" * 30_000 + "\n", 4, f"deeper than {MAX_DEPTH}"),
        (HEAD + "given: " + "[" * 1_000 + "]" * 1_000 + "\n", 4, f"deeper than {MAX_DEPTH}"),
        (HEAD + "given:\n" + "".join("  " * i + f"k{i}:\n" for i in range(200)), 0, f"deeper than {MAX_DEPTH}"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
            "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n",
            1,
            f"more than {MAX_NODES} nodes",
        ),
    ],
)
def test_hostile_yaml_is_one_clear_error(text: str, line: int, words: str) -> None:
    start = time.monotonic()
    with pytest.raises(CaseError) as e:
        load_text(text, "hostile.yaml")
    assert e.value.file == "hostile.yaml" and words in e.value.message
    if line:
        assert e.value.line == line
    assert time.monotonic() - start < 10


def test_a_matrix_beyond_the_limit_names_its_line() -> None:
    values = ", ".join(str(i) for i in range(10))
    text = (
        HEAD
        + "given: {queues: [{name: q}]}\nwhen:\n  - event: purge_queue\n    args: {iQueue: q}\n"
        + "matrix:\n"
        + "".join(f"  v{i}: [{values}]\n" for i in range(6))
    )
    with pytest.raises(CaseError) as e:
        load_text(text, "matrix.yaml")
    assert f"at most {MAX_VARIANTS}" in e.value.message and e.value.line == 8


SURROGATE_ADAPTER = """\
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "bye":
        break
    if r["op"] == "hello":
        reply = {"ok": True, "name": "name\\\\ud800"}
    elif r["op"] == "event":
        reply = {"ok": False, "kind": "Error", "error": "broken \\\\udcff text"}
    else:
        reply = {"ok": True}
    sys.stdout.write(json.dumps({"id": r["id"], **reply}).replace("\\\\\\\\u", "\\\\u") + "\\n")
    sys.stdout.flush()
"""


def test_text_an_adapter_sends_cannot_cost_a_report(tmp_path: Path) -> None:
    """Lone surrogates in an adapter's replies, and a terminal that cannot print the summary: every
    report is still written, with the text escaped."""
    adapter = tmp_path / "adapter.py"
    adapter.write_text(SURROGATE_ADAPTER)
    seek = Path(__file__).resolve().parents[2] / "cases" / "mqdmpr" / "seek"
    command = [
        sys.executable, "-m", "harness.cli", "run", str(seek), "-k", "end-is-tail",
        "--target", f"cmd:{sys.executable} {adapter}",
        "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"), "--html", str(tmp_path / "r.html"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONIOENCODING": "ascii:strict"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    for name in ("r.json", "r.xml", "r.html"):
        assert (tmp_path / name).stat().st_size > 0, name
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "\\udcff" in json.dumps(data) or "udcff" in (tmp_path / "r.json").read_text(encoding="utf-8")
