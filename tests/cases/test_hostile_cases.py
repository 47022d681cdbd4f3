"""Hostile case files ([MS-MQDMPR]/[MS-MQQB] cases are data, docs/cases.md): deep nesting, alias
bombs and huge matrices are refused with a CaseError naming file, line and the limit, in bounded
time and memory, never a crash of the process."""

from __future__ import annotations

import time

import pytest

from harness.cases.loader import MAX_DEPTH, MAX_NODES, load_text
from harness.cases.matrix import MAX_VARIANTS
from harness.cases.schema import CaseError

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
