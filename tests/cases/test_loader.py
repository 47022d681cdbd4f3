"""The case loader (docs/cases.md): one clear error per bad case file, naming file, line and key;
good files load with their matrix variants; requirements and coverage."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import jsonschema
import pytest

from harness.cases.coverage import coverage, render_coverage
from harness.cases.loader import (
    CaseError,
    Requirement,
    known_events,
    load_file,
    load_paths,
    load_requirements,
    load_text,
)
from harness.cases.model import Level, SpecRef
from harness.cases.schema import SCHEMA_PATH, register_events, spec_events

HERE = Path(__file__).parent
BAD = HERE / "bad"
GOOD = HERE / "good"

# A valid case the semantic tests extend (line numbers: `when` is line 9, its step line 10).
BASE = """\
id: x.base
title: base
spec:
  - section: MS-MQDMPR 3.1.7.1.7
given:
  queues: [{name: q, messages: [{id: m1}, {id: m2}]}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: purge_queue
    args: {iQueue: q}
"""


def error_of(path: Path) -> CaseError:
    with pytest.raises(CaseError) as info:
        load_file(path)
    return info.value


def text_error(text: str, file: str = "t.yaml") -> CaseError:
    with pytest.raises(CaseError) as info:
        load_text(text, file)
    return info.value


def assert_error(err: CaseError, file: Path | str, line: int, key: str, *words: str) -> None:
    assert (err.file, err.line, err.key) == (str(file), line, key), str(err)
    assert str(err) == f"{file}:{line}: {key}: {err.message}"
    assert "\n" not in str(err)  # one error, one line
    for word in words:
        assert word in err.message, str(err)


# ------------------------------------------------------------------ acceptance 3: bad case files
def test_invalid_yaml_names_the_line_yaml_reports() -> None:
    path = BAD / "invalid_yaml.yaml"
    assert_error(error_of(path), path, 8, "", "invalid YAML", "flow mapping")


def test_unknown_event() -> None:
    path = BAD / "unknown_event.yaml"
    assert_error(error_of(path), path, 15, "when[1].event", "unknown event 'dequeue_mesage'", "'dequeue_message'")


def test_missing_key() -> None:
    path = BAD / "missing_key.yaml"
    assert_error(error_of(path), path, 11, "when[1].event", "missing required key 'event'")


def test_wrong_type() -> None:
    path = BAD / "wrong_type.yaml"
    assert_error(error_of(path), path, 8, "given.queues[0].messages", "wrong type", "expected a list", "'m1'")


def test_unknown_message_reference() -> None:
    path = BAD / "unknown_message_reference.yaml"
    assert_error(
        error_of(path), path, 19, "then.queues.q[1].message", "unknown message reference 'm3'", "given defines: m1, m2"
    )


def test_duplicate_id_in_one_file() -> None:
    path = BAD / "duplicate_id.yaml"
    assert_error(error_of(path), path, 12, "id", "duplicate case id 'bad.duplicate'", f"{path}:1")


def test_unknown_top_level_key() -> None:
    path = BAD / "unknown_top_level_key.yaml"
    assert_error(error_of(path), path, 10, "than", "unknown key 'than'", "did you mean 'then'")


def test_bad_matrix_placeholder() -> None:
    path = BAD / "bad_placeholder.yaml"
    assert_error(
        error_of(path),
        path,
        10,
        "given.queues[0].messages[1].Priority",
        "placeholder ${priority} has no matrix key",
        "matrix keys: prio",
    )


def test_duplicate_id_across_files(tmp_path: Path) -> None:
    one = (BAD / "duplicate_id.yaml").read_text().split("---")[0]
    (tmp_path / "a.yaml").write_text(one)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("# comment\n\n" + one)
    with pytest.raises(CaseError) as info:
        load_paths([tmp_path])
    b = tmp_path / "sub" / "b.yaml"
    assert_error(info.value, b, 3, "id", "duplicate case id 'bad.duplicate'", f"{tmp_path / 'a.yaml'}:1")


def test_every_bad_fixture_fails_with_its_file_name() -> None:
    fixtures = sorted(BAD.glob("*.yaml"))
    assert len(fixtures) == 8
    for path in fixtures:
        err = error_of(path)
        assert str(err).startswith(f"{path}:{err.line}: ")


# --------------------------------------------------------------------------- events
def test_known_events_are_the_models_spec_events() -> None:
    events = known_events()
    for name in (
        "seek_available_message_position",  # 3.1.7.3.2
        "dequeue_message",  # 3.1.7.1.10
        "transaction_commit",  # 3.1.4.4
        "waiting_message_read_timer_expired",  # 3.1.6.3
        "get_next_message_for_dequeue",  # Cursor 3.2.7.4
        "initialize",  # Cursor 3.2.7.1
    ):
        assert name in events
    for helper in ("new_queue", "fire_due_timers", "new_handle", "waiting_readers", "find_queue"):
        assert helper not in spec_events()  # targets may register some of them as extra events
    assert "reset_clock" in known_events(["reset_clock"])


def test_an_event_a_target_adds_is_accepted_when_named() -> None:
    text = BASE + "  - event: advance_clock_xyz\n    args: {seconds: 5}\n"
    err = text_error(text)
    assert_error(err, "t.yaml", 12, "when[1].event", "unknown event 'advance_clock_xyz'")
    assert [c.id for c in load_text(text, "t.yaml", events={"advance_clock_xyz"})] == ["x.base"]
    register_events("advance_clock_xyz")
    assert "advance_clock_xyz" in known_events()
    assert len(load_text(text, "t.yaml")) == 1


# ------------------------------------------------------------------ more checks, one error each
@pytest.mark.parametrize(
    ("extra", "line", "key", "words"),
    [
        ("level: must\n", 12, "level", ["'must' is not one of: MUST, SHOULD, MAY"]),
        ("tags: seek\n", 12, "tags", ["expected a list, got a string"]),
        ("    expect: {rStatus: {anyof: [MQ_OK]}}\n", 12, "when[0].expect.rStatus", ["{any_of: [...]}"]),
        ("    expect: {rStatus: {absent: false}}\n", 12, "when[0].expect.rStatus.absent", ["must be true"]),
        (
            "    expect: {rStatus: MQ_OK}\n    expect_error: UndefinedBehaviour\n",
            13,
            "when[0].expect_error",
            ["not both"],
        ),
        ("  - event: peek_message\n    args: {iQueueDes: h}\n", 13, "when[1].args.iQueueDes", ["'iQueueDesc'"]),
        ("  - event: get_message_for_peek\n", 12, "when[1].args.cursor", ["Cursor event"]),
        (
            "  - event: get_message_for_peek\n    args: {cursor: d}\n",
            13,
            "when[1].args.cursor",
            ["cursor reference 'd'"],
        ),
        ("  - event: purge_queue\n    args: {iQueue: r}\n", 13, "when[1].args.iQueue", ["queue reference 'r'"]),
        (
            "  - event: close_queue\n    args: {iQueueDesc: g}\n",
            13,
            "when[1].args.iQueueDesc",
            ["open descriptor reference 'g'"],
        ),
        (
            "  - event: transaction_commit\n    args: {iTransactionIdentifier: t9}\n",
            13,
            "when[1].args.iTransactionIdentifier",
            ["transaction reference 't9'"],
        ),
        (
            "    expect: {rMessagePosition: {any_of: [m1, m7]}}\n",
            12,
            "when[0].expect.rMessagePosition",
            ["message reference 'm7'"],
        ),
        (
            "then:\n  cursors:\n    c: {MessagePositionReference: m5}\n",
            14,
            "then.cursors.c.MessagePositionReference",
            ["message reference 'm5'"],
        ),
        (
            "then:\n  queues:\n    q:\n      - {message: m1, state: Locked}\n",
            15,
            "then.queues.q[0].state",
            ["did you mean 'State'"],
        ),
        ("then:\n  cursors:\n    z: {CursorState: Read}\n", 14, "then.cursors.z", ["cursor reference 'z'"]),
        ("title: again\n", 12, "title", ["duplicate key 'title' (first at line 2)"]),
        ("matrix: {a: []}\n", 12, "matrix.a", ["must not be empty"]),
        ("matrix: [1, 2]\n", 12, "matrix", ["expected a mapping"]),
    ],
)
def test_one_error_per_kind(extra: str, line: int, key: str, words: list[str]) -> None:
    assert_error(text_error(BASE + extra), "t.yaml", line, key, *words)


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "words"),
    [
        ("  open:", "  opens:", 7, "given.opens", ["did you mean 'open'"]),
        ("{id: m2}", "{id: m1}", 6, "given.queues[0].messages[1].id", ["duplicate message name 'm1'"]),
        ("[{name: q,", "[{name: q, transactional: true,", 6, "given.queues[0].transactional", ["PascalCase"]),
        ("MS-MQDMPR 3.1.7.1.7", "3.1.7.1.7", 4, "spec[0].section", ["does not match"]),
        ("spec:\n  - section: MS-MQDMPR 3.1.7.1.7\n", "", 1, "spec", ["missing required key 'spec'"]),
        ("{name: c, open: h}", "{name: c, open: k}", 8, "given.cursors[0].open", ["open descriptor reference 'k'"]),
        ("id: x.base", "id: x.${a}", 1, "id", ["the id cannot hold a placeholder"]),
        ("{iQueue: q}", "{iQueue: q\n", 13, "", ["invalid YAML", "flow mapping started at line 11"]),
    ],
)
def test_one_error_per_kind_in_given(old: str, new: str, line: int, key: str, words: list[str]) -> None:
    assert old in BASE
    assert_error(text_error(BASE.replace(old, new)), "t.yaml", line, key, *words)


def test_a_document_that_is_not_a_mapping() -> None:
    assert_error(text_error("# c\n- 1\n- 2\n"), "t.yaml", 2, "", "expected a mapping, got a list")


def test_python_tags_are_refused_as_safe_load_would() -> None:
    err = text_error(BASE + "tags: [!!python/object:os.system x]\n")
    assert_error(err, "t.yaml", 12, "", "invalid YAML", "python/object")


def test_objects_a_step_creates_can_be_named() -> None:
    text = BASE + (
        "  - event: create_transaction\n    args: {iTransactionIdentifier: t2}\n"
        "  - event: enqueue_message\n    args: {iQueue: q, iMessage: {id: m9, Priority: 1}, iTransaction: t2}\n"
        "  - event: transaction_commit\n    args: {iTransactionIdentifier: t2}\n"
        "then:\n  queues:\n    q:\n      - {message: m9, State: Available}\n"
    )
    [case] = load_text(text, "t.yaml")
    assert [s.event for s in case.when] == [
        "purge_queue",
        "create_transaction",
        "enqueue_message",
        "transaction_commit",
    ]
    assert [s.line for s in case.when] == [10, 12, 14, 16]


def test_case_error_pickles() -> None:
    err = CaseError("f.yaml", 3, "when[0].event", "unknown event 'x'")
    again = pickle.loads(pickle.dumps(err))
    assert (again.file, again.line, again.key, again.message, str(again)) == (
        "f.yaml",
        3,
        "when[0].event",
        "unknown event 'x'",
        "f.yaml:3: when[0].event: unknown event 'x'",
    )


# --------------------------------------------------------------------------- good files
def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


def test_good_file_loads_with_matrix_expansion() -> None:
    path = GOOD / "seek_matrix.yaml"
    cases = load_file(path)
    assert [c.full_id for c in cases] == [
        "good.seek.first-available",
        "good.enqueue.priority[prio=0,tx=False]",
        "good.enqueue.priority[prio=0,tx=True]",
        "good.enqueue.priority[prio=7,tx=False]",
        "good.enqueue.priority[prio=7,tx=True]",
    ]
    first = cases[0]
    assert first.spec == [
        SpecRef(
            "MS-MQDMPR 3.1.7.3.2",
            "DMPR-3.1.7.3.2-1",
            "Seek Available Message Position returns the first Available position after iInitialPosition.",
        )
    ]
    assert (first.level, first.tags, first.variant, first.source, first.line) == (
        Level.MUST,
        ["seek"],
        {},
        str(path),
        2,
    )
    assert [s.line for s in first.when] == [23, 26]
    assert first.when[1].args == {"cursor": "c"}
    assert first.when[1].expect == {
        "rStatus": {"any_of": ["Succeeded", "NotFound"]},
        "rPosition": {"any_of": ["m2", "End"]},
    }
    assert first.then["cursors"] == {"c": {"CursorState": "Read", "MessagePositionReference": "m2"}}

    variant = cases[3]  # prio=7, tx=False
    assert (variant.id, variant.variant, variant.level, variant.line) == (
        "good.enqueue.priority",
        {"prio": 7, "tx": False},
        Level.SHOULD,
        39,
    )
    queue = variant.given["queues"][0]
    assert queue["Transactional"] is False  # a whole-string placeholder takes the value's type
    assert queue["messages"][0] == {"id": "m1", "Priority": 7, "Label": "prio-7"}  # inside a string: str()
    assert variant.when[1].expect_error == "UndefinedBehaviour" and variant.when[1].expect is None
    assert cases[1].given["queues"][0]["messages"][0]["Priority"] == 0
    assert cases[1].given is not cases[2].given  # variants do not share state


def test_placeholders_in_keys_events_and_args() -> None:
    text = BASE + (
        "  - event: ${ev}\n    args: {iQueue: '${queue}'}\n"
        "then:\n  queues:\n    ${queue}: []\n"
        "matrix:\n  ev: [purge_queue, set_queue_defaults]\n  queue: [q]\n"
    )
    cases = load_text(text, "t.yaml")
    assert [c.full_id for c in cases] == ["x.base[ev=purge_queue,queue=q]", "x.base[ev=set_queue_defaults,queue=q]"]
    assert cases[1].when[1].event == "set_queue_defaults"
    assert cases[1].then == {"queues": {"q": []}}
    bad = text.replace("queue: [q]", "queue: [r]")
    assert_error(text_error(bad), "t.yaml", 13, "when[1].args.iQueue", "queue reference 'r'")


def test_load_paths_walks_folders_sorted_and_skips_the_requirement_list(tmp_path: Path) -> None:
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "b.yaml").write_text(BASE.replace("x.base", "x.b"))
    (tmp_path / "a.yml").write_text(BASE.replace("x.base", "x.a"))
    (tmp_path / "requirements.yaml").write_text("- {id: R1, section: MS-MQDMPR 3.1.7.1.7, text: t}\n")
    (tmp_path / "notes.txt").write_text("not a case")
    cases = load_paths([tmp_path, GOOD / "seek_matrix.yaml"])
    assert [c.id for c in cases][:2] == ["x.a", "x.b"]
    assert len(cases) == 7
    assert load_paths([GOOD]) == load_file(GOOD / "seek_matrix.yaml")


# ---------------------------------------------------------------------- requirements, coverage
REQS = """\
- {id: DMPR-3.1.7.3.2-1, section: MS-MQDMPR 3.1.7.3.2, text: Seek skips positions that are not Available.}
- id: DMPR-3.1.7.1.9-2
  section: MS-MQDMPR 3.1.7.1.9
  text: Enqueue keeps priority order.
  level: SHOULD
- {id: DMPR-3.1.7.1.7-1, section: MS-MQDMPR 3.1.7.1.7, text: Purge marks positions.}
"""


def test_load_requirements(tmp_path: Path) -> None:
    path = tmp_path / "requirements.yaml"
    path.write_text(REQS)
    reqs = load_requirements(path)
    assert reqs[1] == Requirement("DMPR-3.1.7.1.9-2", "MS-MQDMPR 3.1.7.1.9", "Enqueue keeps priority order.", "SHOULD")
    assert [r.level for r in reqs] == ["MUST", "SHOULD", "MUST"]
    path.write_text(REQS.replace("  text: Enqueue keeps priority order.\n", ""))
    with pytest.raises(CaseError) as info:
        load_requirements(path)
    assert_error(info.value, path, 2, "[1].text", "missing required key 'text'")
    path.write_text(REQS.replace("level: SHOULD", "levle: SHOULD"))
    with pytest.raises(CaseError) as info:
        load_requirements(path)
    assert_error(info.value, path, 5, "[1].levle", "unknown key 'levle'")


def test_coverage(tmp_path: Path) -> None:
    path = tmp_path / "requirements.yaml"
    path.write_text(
        REQS.replace("MS-MQDMPR 3.1.7.1.9,", "MS-MQDMPR 3.1.7.1.9,").replace(
            "section: MS-MQDMPR 3.1.7.1.9", "section: MS-MQDMPR 3.1.7.1.8"
        )
    )
    cases = load_file(GOOD / "seek_matrix.yaml") + load_text(
        BASE.replace("section: MS-MQDMPR 3.1.7.1.7", "section: MS-MQDMPR 3.1.7.1.7\n    requirement: DMPR-9"), "u.yaml"
    )
    report = coverage(load_requirements(path), cases)
    assert {row.requirement.id: row.cases for row in report.rows} == {
        "DMPR-3.1.7.3.2-1": ["good.seek.first-available"],
        "DMPR-3.1.7.1.9-2": ["good.enqueue.priority"],  # four variants, one case
        "DMPR-3.1.7.1.7-1": [],
    }
    assert [r.id for r in report.uncovered] == ["DMPR-3.1.7.1.7-1"]
    assert [(c.case, c.requirement, c.source, c.line) for c in report.unknown] == [("x.base", "DMPR-9", "u.yaml", 1)]
    assert [(c.case, c.section) for c in report.mismatched] == [("good.enqueue.priority", "MS-MQDMPR 3.1.7.1.9")]
    assert not report.ok

    table = render_coverage(report)
    assert "DMPR-3.1.7.3.2-1  MUST" in table
    assert "2/3 requirements have cases (66.7%)" in table
    assert "without cases: DMPR-3.1.7.1.7-1" in table
    assert "u.yaml:1: case x.base cites unknown requirement DMPR-9" in table
    data = json.loads(render_coverage(report, as_json=True))
    assert (data["covered"], data["total"], data["uncovered"]) == (2, 3, ["DMPR-3.1.7.1.7-1"])
    assert data["unknown"][0]["requirement"] == "DMPR-9"


def test_the_example_of_docs_cases_md_loads() -> None:
    docs = (HERE.parent.parent / "docs" / "cases.md").read_text()
    example = docs.split("```yaml\n", 1)[1].split("```", 1)[0]
    cases = load_text(example, "docs/cases.md")
    assert [c.full_id for c in cases] == [
        "dmpr.seek.forward-skips-locked[prio=0]",
        "dmpr.seek.forward-skips-locked[prio=7]",
    ]
    assert cases[1].given["queues"][0]["messages"][2] == {"id": "m3", "Priority": 7}
