"""The case loader (docs/cases.md): one clear error per bad case file, naming file, line and key;
good files load with their matrix variants; every cited requirement id resolves against the
nearest requirements.yaml (an unknown id is a load error); every expectation is attributed to one
requirement (an ambiguous attribution, readings that do not give every reading of their
interpretation first-first, an interpretation's value without readings and an interpretation as
then.requirement are load errors); requirements, their frames, and coverage."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import jsonschema
import pytest

from harness.cases.coverage import coverage, render_coverage
from harness.cases.eventnames import known_events, register_events, spec_events
from harness.cases.grading import attribute
from harness.cases.lines import CaseError
from harness.cases.loader import (
    BUNDLED_REQUIREMENTS,
    load_file,
    load_paths,
    load_requirements,
    load_text,
    requirements_for,
)
from harness.cases.model import Alternative, Case, Level, Requirement, SpecRef, Step
from harness.cases.schema import SCHEMA_PATH

HERE = Path(__file__).parent
BAD = HERE / "bad"
GOOD = HERE / "good"

PURGE_QUOTE = "If iMessagePosition.State is not Available: Set iMessagePosition.State to PurgePending."
PROCESSING = "The queue manager MUST perform the following actions to process this event:"
# The requirements the texts of these tests cite (load_text(..., requirements=REQUIREMENTS)).
REQUIREMENTS = {
    "T-PURGE": Requirement("T-PURGE", "MS-MQDMPR 3.1.7.1.7", PURGE_QUOTE),
    # a second MUST of Purge Queue's section: a case citing both names the one each step renders
    "DMPR-3.1.7.1.7-PROCESSING": Requirement("DMPR-3.1.7.1.7-PROCESSING", "MS-MQDMPR 3.1.7.1.7", PROCESSING),
    "T-PEEK-POSITION": Requirement(
        "T-PEEK-POSITION",
        "MS-MQDMPR 3.2.7.2",
        "rPosition: A reference to the MessagePosition (section 3.1.1.11) ADM element instance that contains the "
        "returned message. This value is undefined if rStatus is not set to Succeeded.",
        Level.interpretation,
        alternatives=(
            Alternative("absent", "no rPosition"),
            Alternative("end", "rPosition is End, where the seek stopped"),
            Alternative("any", "any value"),
        ),
        frame="DMPR-3.2.7.2-PROCESSING",
    ),
    # Get Message For Peek's processing: the frame of T-PEEK-POSITION, and what grades its steps
    # in a case that cites no MUST of 3.2.7.2
    "DMPR-3.2.7.2-PROCESSING": Requirement("DMPR-3.2.7.2-PROCESSING", "MS-MQDMPR 3.2.7.2", PROCESSING),
}

# A valid case the semantic tests extend (line numbers: `when` is line 9, its step line 10).
BASE = """\
id: x.base
title: base
spec:
  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}
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


def load(text: str, file: str = "t.yaml", **kw: object) -> list[Case]:
    return load_text(text, file, requirements=REQUIREMENTS, **kw)  # type: ignore[arg-type]


def text_error(text: str, file: str = "t.yaml") -> CaseError:
    with pytest.raises(CaseError) as info:
        load(text, file)
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
    (tmp_path / "requirements.yaml").write_text((BAD / "requirements.yaml").read_text())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text("# comment\n\n" + one)
    with pytest.raises(CaseError) as info:
        load_paths([tmp_path])
    b = tmp_path / "sub" / "b.yaml"
    assert_error(info.value, b, 3, "id", "duplicate case id 'bad.duplicate'", f"{tmp_path / 'a.yaml'}:1")


def test_a_requirement_the_list_lacks() -> None:
    path = BAD / "unknown_requirement.yaml"
    assert_error(
        error_of(path),
        path,
        14,
        "when[0].expect.rMessagePosition.requirement",
        "unknown requirement 'B-SEK'",
        "not in " + str(BAD / "requirements.yaml"),
        "did you mean 'B-SEEK'",
    )


def test_a_requirement_cited_under_another_section() -> None:
    path = BAD / "requirement_of_another_section.yaml"
    assert_error(
        error_of(path),
        path,
        5,
        "spec[1].section",
        "'MS-MQDMPR 3.1.7.1.9' is not the section of B-PURGE (MS-MQDMPR 3.1.7.1.7)",
    )


def test_every_bad_fixture_fails_with_its_file_name() -> None:
    fixtures = sorted(p for p in BAD.glob("*.yaml") if p.name != "requirements.yaml")
    assert len(fixtures) == 10
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
    assert [c.id for c in load(text, events={"advance_clock_xyz"})] == ["x.base"]
    register_events("advance_clock_xyz")
    assert "advance_clock_xyz" in known_events()
    assert len(load(text)) == 1


# ------------------------------------------------------------------ more checks, one error each
@pytest.mark.parametrize(
    ("extra", "line", "key", "words"),
    [
        ("level: MUST\n", 12, "level", ["unknown key 'level'"]),  # derived from the cited requirements
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
        (
            "    requirement: T-PURG\n",
            12,
            "when[0].requirement",
            ["unknown requirement 'T-PURG'", "did you mean 'T-PURGE'"],
        ),
        (
            "    expect: {rStatus: {any_of: [MQ_OK], requirement: R-9}}\n",
            12,
            "when[0].expect.rStatus.requirement",
            ["unknown requirement 'R-9'"],
        ),
        ("then:\n  requirement: R-9\n  queues: {q: []}\n", 13, "then.requirement", ["unknown requirement 'R-9'"]),
        (
            "then:\n  queues:\n    q:\n      - {message: m1, Priority: {is: 3, requirement: R-9}}\n",
            15,
            "then.queues.q[0].Priority.requirement",
            ["unknown requirement 'R-9'"],
        ),
        ("    expect: {rStatus: {is: MQ_OK, not: 1}}\n", 12, "when[0].expect.rStatus", ["{any_of: [...]}"]),
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
        ("MS-MQDMPR 3.1.7.1.7,", "MS-MQDMPR 3.1.7.1.9,", 4, "spec[0].section", ["not the section of T-PURGE"]),
        (", requirement: T-PURGE}", "}", 4, "spec[0].requirement", ["missing required key 'requirement'"]),
        ("spec:\n  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}\n", "", 1, "spec",
         ["missing required key 'spec'"]),
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
    [case] = load(text)
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
    cases = load_file(path)  # cites the ids of good/requirements.yaml, the nearest list
    assert [c.full_id for c in cases] == [
        "good.seek.first-available",
        "good.dequeue.after-purge[prio=0,tx=False]",
        "good.dequeue.after-purge[prio=0,tx=True]",
        "good.dequeue.after-purge[prio=7,tx=False]",
        "good.dequeue.after-purge[prio=7,tx=True]",
    ]
    first = cases[0]
    assert first.spec == [SpecRef("MS-MQDMPR 3.1.7.3.2", "G-SEEK-HEAD")]
    # the spec reference, the annotation of step 1's rPosition and then.requirement, resolved (the
    # interpretation's frame is then.requirement too); the strongest level
    assert list(first.requirements) == ["G-SEEK-HEAD", "G-PEEK-POSITION", "DMPR-3.2.7.2-PROCESSING"]
    assert first.requirements["G-PEEK-POSITION"].level is Level.interpretation
    assert first.requirements["G-PEEK-POSITION"].frame == "DMPR-3.2.7.2-PROCESSING"
    assert first.requirements["G-SEEK-HEAD"].line == 2
    assert (first.level, first.tags, first.variant, first.source, first.line) == (
        Level.MUST,
        ["seek"],
        {},
        str(path),
        2,
    )
    assert [s.line for s in first.when] == [22, 25]
    assert first.when[1].args == {"cursor": "c"}
    assert first.when[1].expect == {
        "rStatus": {"any_of": ["Succeeded", "Waiting"]},
        "rPosition": {
            "readings": {"absent": {"any_of": ["m2", {"absent": True}]}, "any-position": {"any_of": ["m2", "End"]}},
            "requirement": "G-PEEK-POSITION",
        },
    }
    # each expectation is attributed to one requirement: the seek to the MUST the case cites in its
    # section, the peek's rStatus to its event's processing requirement (the case cites none of
    # 3.2.7.2), rPosition to its interpretation; `then` to then.requirement
    seek, peek = first.when
    assert [attribute(first, step, value)[0] for step in (seek, peek) for value in (step.expect or {}).values()] == [
        "G-SEEK-HEAD", "DMPR-3.2.7.2-PROCESSING", "G-PEEK-POSITION"]  # fmt: skip
    assert attribute(first, None) == ("DMPR-3.2.7.2-PROCESSING", Level.MUST)
    assert first.then["cursors"] == {"c": {"CursorState": "Read", "MessagePositionReference": "m2"}}

    variant = cases[3]  # prio=7, tx=False
    assert (variant.id, variant.variant, variant.level, variant.line) == (
        "good.dequeue.after-purge",
        {"prio": 7, "tx": False},
        Level.MUST,  # it cites an interpretation only, but its step is graded by a MUST
        41,
    )
    # the interpretation grades no value: the dequeue's expect_error is its event's processing requirement's
    assert list(variant.requirements) == ["G-DEQUEUE-MESSAGE", "DMPR-3.1.7.1.10-PROCESSING"]
    assert attribute(variant, variant.when[1], variant.when[1].expect_error) == ("DMPR-3.1.7.1.10-PROCESSING",
                                                                                 Level.MUST)
    queue = variant.given["queues"][0]
    assert queue["Transactional"] is False  # a whole-string placeholder takes the value's type
    assert queue["messages"][0] == {"id": "m1", "Priority": 7, "Label": "prio-7"}  # inside a string: str()
    assert variant.when[1].expect_error == "UndefinedBehaviour" and variant.when[1].expect is None
    assert cases[1].given["queues"][0]["messages"][0]["Priority"] == 0
    assert cases[1].given is not cases[2].given  # variants do not share state


PEEK_READINGS = "{absent: {absent: true}, end: End, any: {any_of: [m1, End]}}"
PEEK_STEP = (
    "  - event: get_message_for_peek\n    args: {cursor: c}\n"
    f"    expect: {{rStatus: Waiting, rPosition: {{readings: {PEEK_READINGS}, requirement: T-PEEK-POSITION}}}}\n"
)


def test_steps_and_expectations_cite_requirements() -> None:
    text = BASE.replace("    args: {iQueue: q}\n", "    args: {iQueue: q}\n    requirement: T-PURGE\n") + PEEK_STEP
    [case] = load(text)
    assert [s.requirement for s in case.when] == ["T-PURGE", ""]
    # cited (spec, step, annotation), then attributed: the peek's rStatus to its event's processing
    # requirement (the case cites no MUST of 3.2.7.2), which is also the interpretation's frame
    assert case.requirements == {
        "T-PURGE": REQUIREMENTS["T-PURGE"],
        "T-PEEK-POSITION": REQUIREMENTS["T-PEEK-POSITION"],
        "DMPR-3.2.7.2-PROCESSING": REQUIREMENTS["DMPR-3.2.7.2-PROCESSING"],
    }
    assert case.level is Level.MUST  # the strongest
    assert case.when[1].expect == {
        "rStatus": "Waiting",
        "rPosition": {
            "readings": {"absent": {"absent": True}, "end": "End", "any": {"any_of": ["m1", "End"]}},
            "requirement": "T-PEEK-POSITION",
        },
    }
    # a case citing only an interpretation: its frame and the processing requirement its step
    # renders join it, so its level is MUST
    only = text.replace("{section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}",
                        "{section: MS-MQDMPR 3.2.7.2, requirement: T-PEEK-POSITION}")
    [case] = load(only.replace("    requirement: T-PURGE\n", ""))
    assert (case.level, list(case.requirements)) == (Level.MUST, ["T-PEEK-POSITION", "DMPR-3.2.7.2-PROCESSING"])


# ---------------------------------------------------------------- attribution and readings
@pytest.mark.parametrize(
    ("old", "new", "line", "key", "words"),
    [
        # the case cites two MUSTs of the step's section and the step names neither
        (
            "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}\n",
            "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}\n"
            "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: DMPR-3.1.7.1.7-PROCESSING}\n",
            13,  # one more line: the purge step's expect
            "when[0].expect.rStatus",
            ["the case cites several requirements (T-PURGE, DMPR-3.1.7.1.7-PROCESSING)",
             "step 'purge_queue'", "name it with requirement:"],
        ),
        # readings missing an alternative
        (PEEK_READINGS, "{absent: {absent: true}, end: End}", 15, "when[1].expect.rPosition.readings",
         ["give every reading of T-PEEK-POSITION, the one the corpus checks first: absent, end, any",
          "(got absent, end)"]),
        # readings whose first is not the interpretation's first alternative
        (PEEK_READINGS, "{end: End, absent: {absent: true}, any: {any_of: [m1, End]}}", 15,
         "when[1].expect.rPosition.readings", ["the one the corpus checks first", "(got end, absent, any)"]),
        # a reading the interpretation does not name
        (PEEK_READINGS, "{absent: {absent: true}, end: End, anything: m1}", 15, "when[1].expect.rPosition.readings",
         ["give every reading of T-PEEK-POSITION", "(got absent, end, anything)"]),
        # an interpretation's value without its readings
        (f"{{readings: {PEEK_READINGS}, requirement: T-PEEK-POSITION}}", "{is: End, requirement: T-PEEK-POSITION}",
         15, "when[1].expect.rPosition",
         ["T-PEEK-POSITION is an interpretation: write the value each reading gives",
          "{readings: {absent: ..., end: ..., any: ...}, requirement: T-PEEK-POSITION}"]),
        # ... also when the step names the interpretation
        (f"    expect: {{rStatus: Waiting, rPosition: {{readings: {PEEK_READINGS}, requirement: T-PEEK-POSITION}}}}\n",
         "    requirement: T-PEEK-POSITION\n    expect: {rStatus: Waiting}\n", 16, "when[1].expect.rStatus",
         ["T-PEEK-POSITION is an interpretation"]),
        # readings of a requirement that is not an interpretation
        ("requirement: T-PEEK-POSITION}}", "requirement: T-PURGE}}", 15, "when[1].expect.rPosition",
         ["readings grade an interpretation; T-PURGE is MUST"]),
    ],
)
def test_attribution_and_readings_errors(old: str, new: str, line: int, key: str, words: list[str]) -> None:
    """BASE with an expectation on its purge step (line 12) and a peek step (its expect: line 15)."""
    text = BASE.replace("    args: {iQueue: q}\n", "    args: {iQueue: q}\n    expect: {rStatus: MQ_OK}\n") + PEEK_STEP
    assert [c.id for c in load(text)] == ["x.base"]
    assert old in text
    assert_error(text_error(text.replace(old, new)), "t.yaml", line, key, *words)


def test_then_requirement_is_never_an_interpretation() -> None:
    then = "then:\n  requirement: T-PEEK-POSITION\n  queues: {q: []}\n"
    assert_error(text_error(BASE + then), "t.yaml", 12, "then", "T-PEEK-POSITION is an interpretation",
                 "`then` is graded by a MUST requirement")
    # a value of `then` it grades carries its readings
    then = ("then:\n  requirement: T-PURGE\n  cursors:\n    c:\n      MessagePositionReference:\n"
            "        {readings: {absent: Start, end: End, any: m1}, requirement: T-PEEK-POSITION}\n")
    [case] = load(BASE + then)
    assert attribute(case, None, case.then["cursors"]["c"]["MessagePositionReference"])[0] == "T-PEEK-POSITION"
    assert attribute(case, None, case.then["cursors"]["c"])[0] == "T-PURGE"


def test_a_then_of_a_case_citing_several_requirements_names_its_own() -> None:
    text = BASE.replace(
        "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}\n",
        "  - {section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}\n"
        "  - {section: MS-MQDMPR 3.2.7.2, requirement: DMPR-3.2.7.2-PROCESSING}\n",
    ) + "then:\n  cursors:\n    c: {CursorState: Unread}\n"
    assert_error(text_error(text), "t.yaml", 13, "then", "the case cites several requirements",
                 "then.requirement")
    [case] = load(text.replace("then:\n", "then:\n  requirement: T-PURGE\n"))
    assert attribute(case, None) == ("T-PURGE", Level.MUST)


def test_a_then_state_can_cite_a_requirement() -> None:
    """Any expectation may carry its requirement (compare.py unwraps the State of a position)."""
    then = "then:\n  queues:\n    q:\n      - {message: m1, State: {is: Deleted, requirement: T-PURGE}}\n"
    [case] = load(BASE + then)
    assert case.then["queues"]["q"][0]["State"] == {"is": "Deleted", "requirement": "T-PURGE"}


def test_placeholders_in_keys_events_and_args() -> None:
    text = BASE + (
        "  - event: ${ev}\n    args: {iQueue: '${queue}'}\n"
        "then:\n  queues:\n    ${queue}: []\n"
        "matrix:\n  ev: [purge_queue, set_queue_defaults]\n  queue: [q]\n"
    )
    cases = load(text)
    assert [c.full_id for c in cases] == ["x.base[ev=purge_queue,queue=q]", "x.base[ev=set_queue_defaults,queue=q]"]
    assert cases[1].when[1].event == "set_queue_defaults"
    assert cases[1].then == {"queues": {"q": []}}
    bad = text.replace("queue: [q]", "queue: [r]")
    assert_error(text_error(bad), "t.yaml", 13, "when[1].args.iQueue", "queue reference 'r'")


TMP_REQUIREMENTS = f"- {{id: T-PURGE, section: MS-MQDMPR 3.1.7.1.7, quote: '{PURGE_QUOTE}'}}\n"


def test_load_paths_walks_folders_sorted_and_skips_the_requirement_list(tmp_path: Path) -> None:
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "b.yaml").write_text(BASE.replace("x.base", "x.b"))
    (tmp_path / "a.yml").write_text(BASE.replace("x.base", "x.a"))
    (tmp_path / "requirements.yaml").write_text(TMP_REQUIREMENTS)  # cited by both, not loaded as cases
    (tmp_path / "notes.txt").write_text("not a case")
    cases = load_paths([tmp_path, GOOD / "seek_matrix.yaml"])
    assert [c.id for c in cases][:2] == ["x.a", "x.b"]
    assert len(cases) == 7
    assert load_paths([GOOD]) == load_file(GOOD / "seek_matrix.yaml")


def test_each_file_cites_the_nearest_requirements_list(tmp_path: Path) -> None:
    (tmp_path / "requirements.yaml").write_text(TMP_REQUIREMENTS)
    (tmp_path / "deep" / "er").mkdir(parents=True)
    case_file = tmp_path / "deep" / "er" / "c.yaml"
    case_file.write_text(BASE)
    assert list(requirements_for(case_file)) == ["T-PURGE"]
    [case] = load_file(case_file)
    assert case.requirements["T-PURGE"].quote == PURGE_QUOTE
    # a closer list hides the farther one
    (tmp_path / "deep" / "requirements.yaml").write_text(TMP_REQUIREMENTS.replace("T-PURGE", "T-OTHER"))
    assert list(requirements_for(case_file)) == ["T-OTHER"]
    assert_error(error_of(case_file), case_file, 4, "spec[0].requirement", "unknown requirement 'T-PURGE'")
    # ``requirements=`` overrides the files
    assert len(load_file(case_file, requirements=REQUIREMENTS)) == 1
    # no list above the file: the bundled cases/requirements.yaml
    assert HERE.parent.parent / "cases" / "requirements.yaml" == BUNDLED_REQUIREMENTS
    bundled = {r.id for r in load_requirements(BUNDLED_REQUIREMENTS)}
    assert set(requirements_for(Path("/") / "nowhere" / "c.yaml")) == bundled


# ---------------------------------------------------------------------- requirements, coverage
SEEK_QUOTE = "The End position indicates that no message was available."
REQS = f"""\
- {{id: R-SEEK-END, section: MS-MQDMPR 3.1.7.3.2, quote: {SEEK_QUOTE}}}
- id: R-DEQUEUE-MESSAGE
  section: MS-MQDMPR 3.1.7.1.10
  level: interpretation
  quote: >-
    rMessage: A reference to the Message (section 3.1.1.12) ADM element instance that was
    dequeued. This value is undefined if rStatus is not MQ_OK.
  note: The cases accept either reading.
  alternatives:
    - {{name: absent, reading: Without MQ_OK the event returns no rMessage.}}
    - {{name: any-message, reading: Without MQ_OK rMessage may hold any value.}}
  frame: R-DEQUEUE
- {{id: R-PURGE, section: MS-MQDMPR 3.1.7.1.7, level: MUST, quote: "{PURGE_QUOTE}"}}
- {{id: R-DEQUEUE, section: MS-MQDMPR 3.1.7.1.10, quote: "{PROCESSING}"}}
"""


def requirements_error(path: Path, text: str) -> CaseError:
    path.write_text(text)
    with pytest.raises(CaseError) as info:
        load_requirements(path)
    return info.value


def test_load_requirements(tmp_path: Path) -> None:
    path = tmp_path / "requirements.yaml"
    path.write_text(REQS)
    reqs = load_requirements(path)
    assert reqs[0] == Requirement("R-SEEK-END", "MS-MQDMPR 3.1.7.3.2", SEEK_QUOTE, Level.MUST, line=1, file=str(path))
    assert reqs[1] == Requirement(
        "R-DEQUEUE-MESSAGE",
        "MS-MQDMPR 3.1.7.1.10",
        "rMessage: A reference to the Message (section 3.1.1.12) ADM element instance that was dequeued. "
        "This value is undefined if rStatus is not MQ_OK.",
        Level.interpretation,
        "The cases accept either reading.",
        (
            Alternative("absent", "Without MQ_OK the event returns no rMessage."),
            Alternative("any-message", "Without MQ_OK rMessage may hold any value."),
        ),
        line=2,
        file=str(path),
        frame="R-DEQUEUE",  # the MUST whose sentence frames the choice, listed later in the file
    )
    assert reqs[3] == Requirement("R-DEQUEUE", "MS-MQDMPR 3.1.7.1.10", PROCESSING, Level.MUST, line=14, file=str(path))
    assert [r.level for r in reqs] == [Level.MUST, Level.interpretation, Level.MUST, Level.MUST]
    assert [r.level.strict for r in reqs] == [True, False, True, True]
    # a paraphrase is no quote: ``text`` is not a key of a requirement
    path.write_text(f"- {{id: R1, section: MS-MQDMPR 3.1.7.3.2, text: {SEEK_QUOTE}}}\n")
    with pytest.raises(CaseError, match="unknown key 'text'"):
        load_requirements(path)


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "words"),
    [
        (f"quote: {SEEK_QUOTE}}}", "}", 1, "[0].quote", ["missing required key 'quote'"]),
        ("  note: The cases", "  nite: The cases", 8, "[1].nite", ["unknown key 'nite'"]),
        ("level: MUST,", "level: must,", 13, "[2].level", ["'must' is not one of: MUST, SHOULD, MAY, interpretation"]),
        ("level: MUST,", "level: SHOULD, alternatives: [{name: a, reading: b}, {name: c, reading: d}],", 13,
         "[2].alternatives", ["only an interpretation has alternatives"]),
        ("    - {name: any-message, reading: Without MQ_OK rMessage may hold any value.}\n", "", 4, "[1].level",
         ["at least two alternatives"]),
        ("{name: any-message,", "{name: absent,", 9, "[1].alternatives", ["alternative names repeat"]),
        ("{name: absent, reading:", "{name: absent, readings:", 10, "[1].alternatives[0]", ["name, reading"]),
        ("id: R-PURGE,", "id: R-SEEK-END,", 13, "[2].id", ["duplicate requirement id 'R-SEEK-END' (first at line 1)"]),
        (f"quote: {SEEK_QUOTE}}}", 'quote: "  "}', 1, "[0].quote", ["non-empty string"]),
        ("section: MS-MQDMPR 3.1.7.3.2", "section: 3.1.7.3.2", 1, "[0].section", ["does not match"]),
        # an interpretation's frame: present, a MUST of the same file; only an interpretation has one
        ("  frame: R-DEQUEUE\n", "", 4, "[1].level", ["an interpretation names its frame", "MUST requirement"]),
        ("frame: R-DEQUEUE\n", "frame: R-DEQUEUE-MESSAGE\n", 12, "[1].frame",
         ["'R-DEQUEUE-MESSAGE' is not a MUST requirement of this file"]),
        ("frame: R-DEQUEUE\n", "frame: R-SEEK-ENDS\n", 12, "[1].frame",
         ["'R-SEEK-ENDS' is not a MUST requirement of this file"]),
        ("frame: R-DEQUEUE\n", "frame: [R-DEQUEUE]\n", 4, "[1].level", ["an interpretation names its frame"]),
        ("level: MUST,", "level: MUST, frame: R-DEQUEUE,", 13, "[2].frame", ["only an interpretation has a frame"]),
    ],
)
def test_one_error_per_bad_requirement(
    tmp_path: Path, old: str, new: str, line: int, key: str, words: list[str]
) -> None:
    assert old in REQS
    path = tmp_path / "requirements.yaml"
    assert_error(requirements_error(path, REQS.replace(old, new)), path, line, key, *words)


def test_a_frame_that_is_not_a_must_is_a_load_error_naming_its_file_and_line(tmp_path: Path) -> None:
    """A frame naming a SHOULD: an answer no reading gives fails the frame, which must be a MUST."""
    path = tmp_path / "requirements.yaml"
    text = REQS.replace("level: MUST,", "level: SHOULD,").replace(PURGE_QUOTE, "A purge SHOULD ...").replace(
        "frame: R-DEQUEUE", "frame: R-PURGE"
    )
    err = requirements_error(path, text)
    assert_error(err, path, 12, "[1].frame", "'R-PURGE' is not a MUST requirement of this file")
    assert str(err).startswith(f"{path}:12: ")


def test_coverage(tmp_path: Path) -> None:
    """Cases loaded against one list (good/requirements.yaml), checked against another."""
    path = tmp_path / "requirements.yaml"
    good = (GOOD / "requirements.yaml").read_text()
    listed = "- id: G-DEQUEUE-MESSAGE\n  section: MS-MQDMPR 3.1.7.1.10\n"
    assert listed in good
    path.write_text(
        good.replace(listed, listed.replace("3.1.7.1.10", "3.1.7.1.11"))
        + f"- {{id: R-PURGE, section: MS-MQDMPR 3.1.7.1.7, quote: '{PURGE_QUOTE}'}}\n"
    )
    requirements = load_requirements(path)
    unknown = Case(
        "x.unknown", "cites an id the list lacks", [SpecRef("MS-MQDMPR 3.1.7.3.2", "R-9")],
        when=[Step("purge_queue")], source="u.yaml", line=3,
    )  # fmt: skip
    cases = [*load_file(GOOD / "seek_matrix.yaml"), unknown]
    report = coverage(requirements, cases)
    assert {row.requirement.id: row.cases for row in report.rows} == {
        "G-SEEK-HEAD": ["good.seek.first-available"],
        "G-PEEK-POSITION": ["good.seek.first-available"],  # cited by an expectation: covered too
        "G-DEQUEUE-MESSAGE": ["good.dequeue.after-purge"],  # four variants, one case
        # a frame, then.requirement and the requirement a step is attributed to: covered too
        "DMPR-3.2.7.2-PROCESSING": ["good.seek.first-available"],
        "DMPR-3.1.7.1.10-PROCESSING": ["good.dequeue.after-purge"],
        "R-PURGE": [],
    }
    assert [r.id for r in report.uncovered] == ["R-PURGE"]
    assert [(c.case, c.requirement, c.source, c.line) for c in report.unknown] == [("x.unknown", "R-9", "u.yaml", 3)]
    assert [(c.case, c.section) for c in report.mismatched] == [("good.dequeue.after-purge", "MS-MQDMPR 3.1.7.1.10")]
    assert not report.ok
    assert coverage(requirements[:-1], cases[:5]).ok

    table = render_coverage(report)
    assert "G-SEEK-HEAD  [MUST]  MS-MQDMPR 3.1.7.3.2  1 case: good.seek.first-available" in table
    assert "G-DEQUEUE-MESSAGE  [interpretation]  MS-MQDMPR 3.1.7.1.11  1 case: good.dequeue.after-purge" in table
    assert "R-PURGE  [MUST]  MS-MQDMPR 3.1.7.1.7  0 cases: -" in table
    assert "\u201cIf iMessagePosition.State is not Available" in table  # the spec's sentence under its id
    assert "- absent: Without Succeeded the event returns no rPosition." in table  # an interpretation's readings
    assert "5/6 requirements have cases (83.3%); 4 MUST, 2 interpretation" in table
    assert "without cases: R-PURGE" in table
    assert "u.yaml:3: case x.unknown cites unknown requirement R-9" in table
    data = json.loads(render_coverage(report, as_json=True))
    assert (data["covered"], data["total"], data["uncovered"]) == (5, 6, ["R-PURGE"])
    assert data["unknown"][0]["requirement"] == "R-9"
    row = data["requirements"][1]
    assert (row["id"], row["level"]) == ("G-PEEK-POSITION", "interpretation")
    assert row["cases"] == ["good.seek.first-available"]
    assert row["alternatives"][0]["name"] == "absent" and row["quote"].startswith("rPosition: A reference")


def test_the_example_of_docs_cases_md_loads() -> None:
    docs = (HERE.parent.parent / "docs" / "cases.md").read_text()
    example = docs.split("```yaml\n", 1)[1].split("```", 1)[0]
    cases = load_text(example, "docs/cases.md")  # against the bundled cases/requirements.yaml
    assert [c.full_id for c in cases] == [
        "dmpr.seek.forward-skips-locked[prio=0]",
        "dmpr.seek.forward-skips-locked[prio=3]",
    ]
    assert cases[1].given["queues"][0]["messages"][2] == {"id": "m3", "Priority": 3}
