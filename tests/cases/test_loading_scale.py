"""Loading and running cases at scale (docs/cases.md, "Loading at scale"): the schema is checked
once per document (matrix variants only where a placeholder was substituted) with the very errors
a check of every variant gives, naming file and line; loaded files are cached, keyed by what they
depend on (the file's text, not its timestamp); ``run -n 2`` gives the results of ``-n 1``, case by case."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.cases import loader, schema
from harness.cases.cache import ENV, CaseCache
from harness.cases.lines import CaseError, Lines
from harness.cases.loader import load_file, load_paths, load_text
from harness.cases.matrix import check_placeholders, expand
from harness.cases.model import Case, Requirement
from harness.cases.pool import chunk_spans
from harness.cases.runner import run
from harness.cases.semantics import check_case
from harness.cases.variants import WHOLE_DOCUMENT, VariantCheck, substitution_units

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.bench_cases import _matrix_corpus  # noqa: E402

REQUIREMENTS = {"T-PURGE": Requirement("T-PURGE", "MS-MQDMPR 3.1.7.1.7", "q")}
TMP_REQUIREMENTS = "- {id: T-PURGE, section: MS-MQDMPR 3.1.7.1.7, quote: q}\n"

# A matrix document whose placeholders sit where the schema looks: an ADM attribute, an event, an
# expectation, a then state, a key.  Line numbers: `when` is line 8, its steps lines 9 and 11.
TEMPLATE = """\
id: x.m
title: matrix ${n}
spec:
  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}
given:
  queues: [{name: q, messages: [{id: m1, Priority: '${prio}'}]}]
  open: [{name: h, queue: q}]
when:
  - event: purge_queue
    args: {iQueue: q}
  - event: '${ev}'
    args: {iQueue: q}
    expect: {rStatus: '${status}'}
then:
  queues:
    q:
      - {message: m1, State: '${state}'}
matrix:
  n: [1, 2]
  prio: [1, 3]
  ev: [purge_queue]
  status: [MQ_OK]
  state: [Deleted]
"""


def load(text: str, file: str = "t.yaml") -> list[Case]:
    return load_text(text, file, requirements=REQUIREMENTS)


def _old_cases(doc: Any, lines: Any, events: Collection[str], known: Mapping[str, Requirement]) -> list[Case]:
    """The loader before validation was once per document: every variant validated in full."""
    if not isinstance(doc, dict):
        schema.validate(doc, lines)
    if "matrix" in doc:
        schema.validate_def("matrix", doc["matrix"], ("matrix",), lines)
    check_placeholders(doc, lines)
    cases = []
    for values, variant_doc, variant_lines in expand(doc, lines):
        schema.validate(variant_doc, variant_lines)
        check_case(variant_doc, variant_lines, events)
        cases.append(loader._build(variant_doc, variant_lines, values, known))
    return cases


def outcome(text: str) -> str | list[tuple[str, dict[str, Any]]]:
    try:
        return [(c.full_id, c.then) for c in load(text)]
    except CaseError as e:
        return str(e)


# ------------------------------------------------------------------------ once per document
def test_the_schema_is_checked_once_per_document(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    full = schema.validate

    def counted(doc: Any, lines: Lines) -> None:
        calls.append(str(doc.get("id")))
        full(doc, lines)

    monkeypatch.setattr(loader, "validate", counted)
    text = TEMPLATE.replace("n: [1, 2]", "n: [1, 2, 3, 4, 5, 6]") + "---\n" + TEMPLATE.replace("x.m", "x.other")
    cases = load(text)
    assert len(cases) == 6 * 2 + 2 * 2
    assert calls == ["x.m", "x.other"]


def test_a_unit_is_checked_once_per_combination_of_the_values_it_cites() -> None:
    text = TEMPLATE.replace("n: [1, 2]", "n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")
    doc, lines = loader._documents(text, "t.yaml")[0]
    checker = VariantCheck(doc)
    assert set(checker.units) == {("title",), ("given", "queues", 0), ("when", 1), ("then", "queues", "q", 0)}
    variants = expand(doc, lines)
    for values, variant, variant_lines in variants[1:]:
        checker.check(variant, variant_lines, values)
    # 19 variants through the checker: the title once per n, the queue once per prio, the second
    # step and the then state (their values never change) once.
    assert len(variants) == 20
    assert checker.calls == 10 + 2 + 1 + 1


def test_units_stop_where_the_schema_looks_at_more_than_one_part() -> None:
    doc = {"id": "x", "title": "t", "given": {"queues": [{"name": "q", "messages": [{"id": "m", "P": "${a}"}]}]},
           "when": [{"event": "e", "args": {"x": "${a}"}}], "then": {"queues": {"${a}": []}}}  # fmt: skip
    assert set(substitution_units(doc)) == {("given", "queues", 0), ("when", 0), ("then", "queues")}
    assert set(substitution_units({**doc, "${a}": 1})) == {WHOLE_DOCUMENT}
    assert substitution_units({"id": "${a}", "title": "t", "matrix": {"a": ["${b}"]}}) == {}


BAD_VARIANTS = [
    ("prio: [1, 3]", "prio: [1, [3]]"),  # given: an attribute becomes a list (still allowed)
    ("ev: [purge_queue]", "ev: [purge_queue, Purge-Queue]"),  # an event that breaks the pattern
    ("ev: [purge_queue]", "ev: [purge_queue, no_such_event]"),  # a semantic error, not a schema one
    ("status: [MQ_OK]", "status: [MQ_OK, {is: MQ_OK, bogus: 1}]"),  # an expectation of no known form
    ("state: [Deleted]", "state: [Deleted, Gone]"),  # a State that is not one
    ("state: [Deleted]", "state: [Deleted, 7]"),  # of the wrong type
    ("n: [1, 2]", "n: [1, 2, ~]"),  # the title stays a string ("matrix None")
    ("  q:\n      - {message", "  '${qq}':\n      - {message"),  # a key: its mapping is the unit
    ("title: matrix ${n}", "title: '${n}'"),  # the title becomes an integer
    ("Priority: '${prio}'", "'${attr}': 1"),  # an ADM attribute name that is not one
    ("title: matrix ${n}", "'${top}': 1\ntitle: matrix ${n}"),  # a top-level key
]


@pytest.mark.parametrize(("old", "new"), BAD_VARIANTS)
def test_each_variant_gives_what_a_check_of_every_variant_gives(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TEMPLATE.replace(old, new)
    if "${qq}" in new:
        text += "  qq: [q, r]\n"
    if "${top}" in new:
        text += "  top: [title, extra]\n"
    if "${attr}" in new:
        text += "  attr: [Priority, priority]\n"
    now = outcome(text)
    monkeypatch.setattr(loader, "_cases", _old_cases)
    assert now == outcome(text)


def test_a_schema_error_in_a_matrix_template_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "requirements.yaml").write_text(TMP_REQUIREMENTS)
    bad = tmp_path / "bad.yaml"
    bad.write_text(TEMPLATE.replace("    args: {iQueue: q}\n    expect", "    argz: {iQueue: q}\n    expect"))
    with pytest.raises(CaseError) as first:
        load_file(bad)
    assert (first.value.file, first.value.line, first.value.key) == (str(bad), 12, "when[1].argz")
    assert "unknown key 'argz'" in first.value.message
    bad.write_text(TEMPLATE.replace("state: [Deleted]", "state: [Deleted, Gone]"))  # only the second variant
    with pytest.raises(CaseError) as later:
        load_file(bad)
    assert (later.value.file, later.value.line, later.value.key) == (str(bad), 17, "then.queues.q[0].State")
    assert "'Gone' is not one of" in later.value.message


def test_the_bundled_corpus_loads_as_the_old_path_loads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    now = load_paths([ROOT / "cases"])
    monkeypatch.setattr(loader, "_cases", _old_cases)
    old = load_paths([ROOT / "cases"])
    assert now == old


# ------------------------------------------------------------------------------------ cache
def test_the_cache_reads_back_a_file_that_did_not_change(tmp_path: Path) -> None:
    (tmp_path / "requirements.yaml").write_text(TMP_REQUIREMENTS)
    case_file = tmp_path / "m.yaml"
    case_file.write_text(TEMPLATE)
    cache = CaseCache(tmp_path / "cache")
    cache.folder.mkdir()
    first = load_file(case_file, cache=cache)
    assert (cache.hits, cache.misses) == (0, 1)
    assert load_file(case_file, cache=cache) == first == load_file(case_file)
    assert (cache.hits, cache.misses) == (1, 1)
    load_file(case_file, events=["an_added_event"], cache=cache)  # other events: another entry
    assert (cache.hits, cache.misses) == (1, 2)
    stat = case_file.stat()
    case_file.write_text(TEMPLATE.replace("matrix ${n}", "MATRIX ${n}"))  # same size, same mtime
    os.utime(case_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert {c.title for c in load_file(case_file, cache=cache)} == {"MATRIX 1", "MATRIX 2"}
    (tmp_path / "requirements.yaml").write_text("- {id: T-PURGE, section: MS-MQDMPR 3.1.7.1.7, quote: q2}\n")
    os.utime(tmp_path / "requirements.yaml", ns=(2, 2))
    assert load_file(case_file, cache=cache)[0].requirements["T-PURGE"].quote == "q2"
    misses = cache.misses
    case_file.write_text(TEMPLATE.replace("purge_queue]", "Purge]"))  # an error is found every time
    for _ in range(2):
        with pytest.raises(CaseError):
            load_file(case_file, cache=cache)
    assert cache.misses == misses + 2


def test_the_default_cache_is_private_or_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "off")
    assert CaseCache.default() is None
    monkeypatch.setenv(ENV, str(tmp_path / "mine"))
    cache = CaseCache.default()
    assert cache is not None and cache.folder == tmp_path / "mine"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(ENV, str(shared))
    assert CaseCache.default() is None  # others could plant pickles there


# ----------------------------------------------------------------------------------- workers
def test_wire_cases_are_dispatched_alone() -> None:
    model = Case("m", "t", [])
    wire = Case("w", "t", [], given={"peer": {"under_test": "initiator"}})
    cases = [model] * 3 + [wire, wire] + [model] * 40
    chunks = chunk_spans(cases, 2)
    assert chunks[:3] == [(0, 2), (2, 3), (3, 4)] and chunks[3] == (4, 5)
    assert [i for a, b in chunks for i in range(a, b)] == list(range(len(cases)))


def _results(cases: list[Case], workers: int) -> list[tuple[str, str, Any, str]]:
    result = run(cases, "reference", workers=workers)
    return [(r.case_id, str(r.outcome), r.failures, r.detail) for r in result.results]


def test_two_workers_give_the_results_of_one_case_by_case(tmp_path: Path) -> None:
    _matrix_corpus(tmp_path, 150)
    cases = load_paths([ROOT / "cases" / "mqdmpr"]) + load_paths([tmp_path])  # the same ids
    wire = [c for c in load_paths([ROOT / "cases" / "mqqb" / "acceptor.yaml"]) if c.wire][:6]
    cases = cases[:60] + wire + cases[60:]
    assert len(cases) > 250
    one = _results(cases, 1)
    assert one == _results(cases, 2)
    assert [r[0] for r in one] == [c.full_id for c in cases]


def test_entries_not_written_for_two_weeks_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    old, fresh = folder / "a.pickle", folder / "b.pickle"
    for entry in (old, fresh, folder / "a.lock"):
        entry.write_bytes(b"")
    for entry in (old, folder / "a.lock"):
        os.utime(entry, (1, 1))
    monkeypatch.setenv(ENV, str(folder))
    assert CaseCache.default() is not None
    assert sorted(p.name for p in folder.iterdir()) == ["b.pickle"]
