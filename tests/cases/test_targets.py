"""Targets (harness.cases.targets): the reference model's naming conventions, plugin targets
(a QueueManager subclass, a Target class that crashes or hangs), cmd targets over real
subprocesses (a hanging or crashing adapter fails only its case, an adapter that cannot start
stops the run, an event it does not implement is unsupported), and the reference adapter giving
the same outcomes through the JSON-lines protocol as the embedded reference."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.cases.execute import ConfigurationError, run_case
from harness.cases.loader import load_paths, load_text
from harness.cases.model import Alternative, Case, Level, Requirement, SpecRef, Step
from harness.cases.runner import run
from harness.cases.target import Target, TargetError, TargetInfo
from harness.cases.targets import CommandTarget, PluginTarget, ReferenceTarget, make_target
from harness.model import MessagePosition, QueueManager, SeekDirection
from harness.model.adm import Queue
from harness.results import Outcome

ROOT = Path(__file__).resolve().parent.parent.parent
ADAPTER = f"cmd:{sys.executable} {ROOT / 'examples' / 'reference_adapter.py'}"

PEEK_POSITION = (
    "rPosition: A reference to the MessagePosition (section 3.1.1.11) ADM element instance that contains "
    "the returned message. This value is undefined if rStatus is not set to Succeeded."
)

# The requirements the cases of these tests cite: the spec's sentences, verbatim.
REQUIREMENTS = {
    r.id: r
    for r in (
        Requirement(
            "T-SEEK-HEAD",
            "MS-MQDMPR 3.1.7.3.2",
            "If iIterator is equivalent to the StartMessagePosition ADM element instance defined for "
            "iQueue.MessagePositionList: Set iIterator to iQueue.MessagePositionList.Head",
        ),
        Requirement(
            "T-PEEK-WAITING",
            "MS-MQDMPR 3.2.7.2",
            "If rMessagePosition returned from the Seek Available Message Position event is equivalent to "
            "iQueue.MessagePositionList.End: Set the CursorState ADM attribute of the Cursor ADM element instance "
            "to WaitPeek. Set rStatus to Waiting.",
        ),
        Requirement("T-DEQUEUE", "MS-MQDMPR 3.1.7.1.10", "Set rMessage to iPosition.MessageReference."),
        Requirement(
            "T-PURGE",
            "MS-MQDMPR 3.1.7.1.7",
            "If iMessagePosition.State is not Available: Set iMessagePosition.State to PurgePending.",
        ),
        Requirement(
            "T-TIMER",
            "MS-MQDMPR 3.1.6.3",
            "Generate a Waiting Message Read Timer Stop (section 3.1.7.3.5) event with the following arguments: "
            "iReader := iReader iStatus := set to MQ_ERROR_IO_TIMEOUT (0xC00E001B).",
        ),
        Requirement(
            "T-PEEK-POSITION",
            "MS-MQDMPR 3.2.7.2",
            PEEK_POSITION,
            Level.interpretation,
            alternatives=(Alternative("absent", "no rPosition"), Alternative("end", "rPosition is End")),
            frame="T-PEEK-WAITING",
        ),
        # the same sentence, read so that the corpus checks `end` first: the reference (absent) is
        # non_strict under it, as a target taking another named reading is
        Requirement(
            "T-PEEK-POSITION-END",
            "MS-MQDMPR 3.2.7.2",
            PEEK_POSITION,
            Level.interpretation,
            alternatives=(Alternative("end", "rPosition is End"), Alternative("absent", "no rPosition")),
            frame="T-PEEK-WAITING",
        ),
        # the processing requirement a step of Peek Message is attributed to when its case cites
        # nothing in 3.1.7.1.15 (harness.cases.grading.processing_requirement)
        Requirement(
            "DMPR-3.1.7.1.15-PROCESSING",
            "MS-MQDMPR 3.1.7.1.15",
            "The queue manager MUST perform the following actions to process this event:",
        ),
    )
}


def load(text: str, file: str) -> list[Case]:
    return load_text(text, file, requirements=REQUIREMENTS)


GIVEN: dict[str, Any] = {
    "queues": [
        {
            "name": "q",
            "messages": [
                {"id": "m1"},
                {"id": "m2", "AllowPeekWhenLocked": True, "Label": "two"},
                {"id": "m3", "Priority": 1, "Body": "three"},
            ],
        },
        {"name": "q2", "Quota": 1},
    ],
    "transactions": ["t1"],
    "open": [{"name": "h", "queue": "q", "access": "ReceiveAccess", "share": "DenyNone"}],
    "cursors": [{"name": "c", "open": "h"}],
    "locked": [{"message": "m1", "transaction": "t1"}],
}


@pytest.fixture
def ref() -> ReferenceTarget:
    target = ReferenceTarget()
    target.setup(GIVEN)
    return target


# ---------------------------------------------------------------------- reference target
def test_hello_lists_spec_and_pseudo_events() -> None:
    info = ReferenceTarget().hello()
    assert info.name == "reference"
    assert {"dequeue_message", "get_next_message_for_peek", "advance_clock", "read_result"} <= set(info.events)
    assert "new_queue" not in info.events


def test_observe_names_positions_and_cursor_state(ref: ReferenceTarget) -> None:
    seen = ref.observe(["q", "q2"], ["c"])
    assert [(p["message"], p["State"]) for p in seen["queues"]["q"]] == [
        ("m1", "Locked"),
        ("m2", "Available"),
        ("m3", "Available"),
    ]
    assert seen["queues"]["q"][1]["Label"] == "two"
    assert seen["queues"]["q2"] == []
    assert seen["cursors"] == {"c": {"CursorState": "Unread", "MessagePositionReference": "Start"}}


def test_events_resolve_names_and_report_by_spec_names(ref: ReferenceTarget) -> None:
    args = {"iInitialPosition": "Start", "iQueue": "q", "iPeekOperation": False}
    seek = ref.event("seek_available_message_position", args)
    assert seek == {"rMessagePosition": "m2"}
    back = ref.event(
        "seek_available_message_position",
        {"iInitialPosition": "End", "iQueue": "q", "iPeekOperation": True, "iSeekDirection": "Backward"},
    )
    assert back == {"rMessagePosition": "m3"}
    assert ref.event("get_message_for_peek", {"cursor": "c"}) == {"rStatus": "Succeeded", "rPosition": "m2"}
    assert ref.event("get_next_message_for_peek", {"cursor": "c"}) == {"rStatus": "Succeeded", "rPosition": "m3"}
    assert ref.event("get_next_message_for_peek", {"cursor": "c"}) == {"rStatus": "Waiting"}
    with_id = ref.event(
        "seek_available_message_position_with_id",
        {"iQueue": "q", "iLookupId": "m2", "iPeekOperation": False, "iLookupAction": "SeekCurrent"},
    )
    assert with_id == {"rStatus": "MQ_OK", "rMessagePosition": "m2"}
    read = ref.event("dequeue_message", {"iQueueDesc": "h", "iTimeout": 0, "iTransaction": "t1"})
    assert read == {"rStatus": "MQ_OK", "rMessage": "m2"}
    assert ref.event("transaction_commit", {"iTransactionIdentifier": "t1"}) == {"rStatus": "MQ_OK"}
    assert [p["message"] for p in ref.observe(["q"], [])["queues"]["q"]] == ["m3"]


def test_events_that_create_objects(ref: ReferenceTarget) -> None:
    assert ref.event("create_transaction", {"iTransactionIdentifier": "t2"}) == {"rTransaction": "t2"}
    assert ref.event(
        "enqueue_message", {"iQueue": "q2", "iMessage": {"id": "m9", "Body": "x" * 2000}, "iTransaction": "t2"}
    ) == {"rStatus": "QueueQuotaExceeded"}
    assert ref.event("enqueue_message", {"iQueue": "q2", "iMessage": {"id": "m8"}, "iTransaction": "t2"}) == {
        "rStatus": "NoError"
    }
    assert ref.observe(["q2"], [])["queues"]["q2"][0]["State"] == "Locked"
    created = ref.event("create_queue", {"iQueue": {"name": "q3", "Transactional": True}})
    assert created == {"rStatus": "MQ_OK", "rQueue": "q3"}
    assert ref.event("queue_attributes", {"iQueue": "q3"})["Transactional"] is True
    args = {"iFormatName": "q3", "iRequiredAccess": "ReceiveAccess", "iSharedMode": "DenyReceive"}
    opened = ref.event("open_queue", args)
    assert opened == {"rStatus": "MQ_OK", "rOpenQueueDescriptor": "open1"}
    again = ref.event("open_queue", {**args, "iSharedMode": "DenyNone"})
    assert again == {"rStatus": "MQ_ERROR_SHARING_VIOLATION"}
    assert ref.event("open_cursor", {"iQueueDesc": "open1"}) == {"rCursor": "cursor1"}


def test_given_position_states_and_outgoing_queues() -> None:
    target = ReferenceTarget()
    target.setup(
        {
            "queues": [
                {"name": "q", "messages": [{"id": "a", "State": "PurgePending"}, {"id": "b", "State": "Deleted"}]},
                {"name": "out", "DestinationFormatName": "DIRECT=OS:remote\\private$\\x"},
            ]
        }
    )
    assert [p["State"] for p in target.observe(["q"], [])["queues"]["q"]] == ["PurgePending", "Deleted"]
    assert target.event("pause_queue", {"iQueue": "out"}) == {}
    assert target.event("queue_attributes", {"iQueue": "out"})["State"] == "OnHold"


def test_undefined_behaviour_and_unknown_names_are_target_errors(ref: ReferenceTarget) -> None:
    ref.event("get_next_message_for_peek", {"cursor": "c"})  # Unread: IllegalCursorAction
    ref.setup(
        {"queues": [{"name": "q"}], "open": [{"name": "h", "queue": "q"}], "cursors": [{"name": "c", "open": "h"}]}
    )
    assert ref.event("get_message_for_peek", {"cursor": "c"}) == {"rStatus": "Waiting"}
    with pytest.raises(TargetError) as e:
        ref.event("get_message_for_peek", {"cursor": "c"})
    assert e.value.kind == "UndefinedBehaviour" and "3.2.7.2" in e.value.message
    with pytest.raises(TargetError) as e:
        ref.event("purge_queue", {"iQueue": "nope"})
    assert e.value.kind == "Error" and "nope" in e.value.message
    with pytest.raises(TargetError) as e:
        ref.event("new_queue", {})
    assert e.value.kind == "Unsupported"


def test_setup_starts_from_a_fresh_state(ref: ReferenceTarget) -> None:
    ref.event("purge_queue", {"iQueue": "q"})
    ref.setup(GIVEN)
    assert len(ref.observe(["q"], [])["queues"]["q"]) == 3


def test_make_target() -> None:
    assert isinstance(make_target("reference"), ReferenceTarget)
    assert isinstance(make_target(f"plugin:{__name__}:SkipNothingQueueManager"), PluginTarget)
    cmd = make_target(ADAPTER, timeout=3)
    assert isinstance(cmd, CommandTarget) and cmd.timeout == 3
    assert isinstance(make_target('cmd:"python -u adapter.py"'), CommandTarget)
    with pytest.raises(ValueError):
        make_target("nonsense")


# ------------------------------------------------------------------------- plugin targets
class SkipNothingQueueManager(QueueManager):
    """A broken implementation: a forward seek returns the next position whatever its state."""

    def seek_available_message_position(
        self,
        iInitialPosition: MessagePosition,
        iQueue: Queue,
        iPeekOperation: bool,
        iSeekDirection: SeekDirection = SeekDirection.Forward,
    ) -> MessagePosition:
        return iInitialPosition.Next


class HangingQueueManager(QueueManager):
    """A broken implementation whose Purge Queue never returns."""

    def purge_queue(self, iQueue: Queue) -> None:
        while True:
            time.sleep(0.01)


class CrashingTarget:
    """A Target class whose `crash` event raises and whose `hang` event never returns."""

    def __init__(self) -> None:
        self.inner = ReferenceTarget()

    def hello(self) -> TargetInfo:
        return TargetInfo("crashing")

    def setup(self, given: dict[str, Any]) -> None:
        self.inner.setup(given)

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name == "crash":
            raise RuntimeError("boom")
        if name == "hang":
            while True:
                time.sleep(0.01)
        return self.inner.event(name, args)

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        return self.inner.observe(queues, cursors)

    def close(self) -> None:
        pass


SEEK = """
id: t.seek
title: A forward seek skips Locked positions
spec: [{section: MS-MQDMPR 3.1.7.3.2, requirement: T-SEEK-HEAD}]
given:
  queues: [{name: q, messages: [{id: m1}, {id: m2}]}]
  transactions: [t1]
  locked: [{message: m1, transaction: t1}]
when:
  - event: seek_available_message_position
    args: {iInitialPosition: Start, iQueue: q, iPeekOperation: false}
    expect: {rMessagePosition: m2}
"""


def _case(cid: str, event: str) -> Case:
    return Case(
        cid,
        cid,
        [SpecRef("MS-MQDMPR 3.1.7.1.7", "T-PURGE")],
        given={"queues": [{"name": "q"}]},
        when=[Step(event, {"iQueue": "q"} if event == "purge_queue" else {})],
        requirements={"T-PURGE": REQUIREMENTS["T-PURGE"]},
    )


def test_a_queue_manager_subclass_plugin_runs_behind_the_reference_target() -> None:
    cases = load(SEEK, "seek.yaml")
    assert run(cases, "reference").results[0].outcome is Outcome.passed
    broken = run(cases, f"plugin:{__name__}:SkipNothingQueueManager").results[0]
    assert broken.outcome is Outcome.failed
    assert (broken.failures[0].expected, broken.failures[0].observed) == ("m2", "m1")
    assert (broken.failures[0].requirement, broken.failures[0].level) == ("T-SEEK-HEAD", "MUST")


class UnannotatedSeekQueueManager(QueueManager):
    """A correct alternative implementation whose override carries no annotations: it must be
    called with the types the spec event declares (harness.cases.events), not with strings."""

    directions: list[object] = []  # every iSeekDirection it was called with

    def seek_available_message_position(
        self, iInitialPosition, iQueue, iPeekOperation, iSeekDirection=SeekDirection.Forward
    ):
        type(self).directions.append(iSeekDirection)
        assert isinstance(iSeekDirection, SeekDirection), f"a {type(iSeekDirection).__name__}, not a SeekDirection"
        return super().seek_available_message_position(iInitialPosition, iQueue, iPeekOperation, iSeekDirection)


def test_a_plugin_override_without_annotations_gets_the_spec_events_types() -> None:
    cases = load_paths([ROOT / "cases" / "mqdmpr" / "seek"])
    reference = run(cases, "reference").results
    UnannotatedSeekQueueManager.directions.clear()
    plugin = run(cases, f"plugin:{__name__}:UnannotatedSeekQueueManager").results
    assert [(r.case_id, r.outcome, r.failures) for r in plugin] == [(r.case_id, r.outcome, []) for r in reference]
    assert not [r.detail for r in plugin if r.outcome is not Outcome.passed]
    assert set(UnannotatedSeekQueueManager.directions) == {SeekDirection.Forward, SeekDirection.Backward}


def test_a_crashing_or_hanging_plugin_fails_only_its_case() -> None:
    cases = [_case("a", "purge_queue"), _case("crash", "crash"), _case("hang", "hang"), _case("b", "purge_queue")]
    result = run(cases, f"plugin:{__name__}:CrashingTarget", step_timeout=0.5)
    outcomes = [r.outcome for r in result.results]
    assert outcomes == [Outcome.passed, Outcome.error, Outcome.error, Outcome.passed]
    assert "RuntimeError: boom" in result.results[1].detail
    assert "timed out after 0.5 s" in result.results[2].detail


def test_a_hanging_queue_manager_plugin_times_out() -> None:
    cases = [_case("hang", "purge_queue"), *load(SEEK, "seek.yaml")]
    result = run(cases, f"plugin:{__name__}:HangingQueueManager", step_timeout=0.3)
    assert [r.outcome for r in result.results] == [Outcome.error, Outcome.passed]
    assert "step 0 (purge_queue): timed out after 0.3 s" in result.results[0].detail


def test_a_hang_outside_the_main_thread_is_caught_by_a_watchdog() -> None:
    target = PluginTarget(f"{__name__}:CrashingTarget")
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(r=run_case(_case("hang", "hang"), target, step_timeout=0.3)))
    worker.start()
    worker.join(10)
    assert box["r"].outcome is Outcome.error and "timed out" in box["r"].detail


# ---------------------------------------------------------------------------- cmd targets
FAKE_ADAPTER = textwrap.dedent("""
    import json, sys, time
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "bye":
            break
        if op == "event" and req["event"] == "hang":
            time.sleep(600)
        if op == "event" and req["event"] == "crash":
            print("adapter: crashing on purpose", file=sys.stderr, flush=True)
            sys.exit(3)
        if op == "event" and req["event"] == "garbage":
            print("this is not json", flush=True)
            continue
        if op == "event" and req["event"] == "ub":
            reply = {"ok": False, "kind": "UndefinedBehaviour", "error": "no branch"}
        elif op == "event" and req["event"] == "partial":
            reply = {"ok": False, "kind": "Unsupported", "error": "not in this build"}
        elif op == "hello":
            reply = {"ok": True, "name": "fake", "events": ["purge_queue", "hang", "crash", "garbage", "ub", "partial"]}
        elif op == "observe":
            reply = {"ok": True, "queues": {q: [] for q in req["queues"]}, "cursors": {}}
        else:
            reply = {"ok": True, "result": {"rStatus": "MQ_OK"}}
        print(json.dumps({"id": req.get("id"), **reply}), flush=True)
""")


@pytest.fixture
def fake_adapter(tmp_path: Path) -> str:
    path = tmp_path / "fake_adapter.py"
    path.write_text(FAKE_ADAPTER)
    return f"cmd:{sys.executable} {path}"


def test_a_hanging_or_crashing_adapter_fails_only_its_case(fake_adapter: str) -> None:
    names = ["a", "hang", "b", "crash", "garbage", "c", "partial", "unlisted"]
    cases = [_case(n, "purge_queue" if n in ("a", "b", "c") else n) for n in names]
    start = time.monotonic()
    result = run(cases, fake_adapter, step_timeout=1.0)
    assert time.monotonic() - start < 30
    outcomes = {r.case_id: r.outcome for r in result.results}
    assert outcomes == {
        "a": Outcome.passed,
        "hang": Outcome.error,
        "b": Outcome.passed,
        "crash": Outcome.error,
        "garbage": Outcome.error,
        "c": Outcome.passed,
        "partial": Outcome.unsupported,
        "unlisted": Outcome.unsupported,
    }
    details = {r.case_id: r.detail for r in result.results}
    assert "no reply within 1 s" in details["hang"]
    assert "exit status 3" in details["crash"] and "crashing on purpose" in details["crash"]
    assert "not JSON" in details["garbage"]
    assert "not in this build" in details["partial"]  # the adapter answered Unsupported
    assert details["unlisted"] == "the target does not implement: unlisted"  # its hello does not list it


def test_adapter_error_replies_are_target_errors(fake_adapter: str) -> None:
    target = make_target(fake_adapter, timeout=5)
    try:
        assert target.hello() == TargetInfo(
            "fake", ["purge_queue", "hang", "crash", "garbage", "ub", "partial"], ["model"]
        )
        target.setup({})
        with pytest.raises(TargetError) as e:
            target.event("ub", {})
        assert (e.value.kind, e.value.message) == ("UndefinedBehaviour", "no branch")
        assert target.event("purge_queue", {"iQueue": "q"}) == {"rStatus": "MQ_OK"}
    finally:
        target.close()


def test_an_adapter_that_cannot_start_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        run([_case("a", "purge_queue")], "cmd:/nonexistent/adapter --flag")
    assert "cannot start" in str(info.value) and "/nonexistent/adapter" in str(info.value)
    mute = tmp_path / "mute.py"
    mute.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(600)\n")
    start = time.monotonic()
    with pytest.raises(ConfigurationError, match="did not answer hello"):
        run([_case("a", "purge_queue")] * 2, f"cmd:{sys.executable} {mute}", step_timeout=1.0, workers=2)
    assert time.monotonic() - start < 30


CORPUS = (
    SEEK
    + """---
id: t.cursor
title: Cursor peeks, receives and an undefined branch
spec:
  - {section: MS-MQDMPR 3.2.7.2, requirement: T-PEEK-WAITING}
  - {section: MS-MQDMPR 3.1.7.1.10, requirement: T-DEQUEUE}
given:
  queues: [{name: q, messages: [{id: m1, Priority: 1}, {id: m2, Priority: 6, Body: b}]}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rStatus: Succeeded, rPosition: m2}
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 0, iCursor: c}
    expect: {rStatus: MQ_OK, rMessage: m2}
  - event: dequeue_message
    args: {iQueueDesc: h, iTimeout: 0, iCursor: c}
    expect: {rStatus: MQ_OK, rMessage: m1}
  - event: get_message_for_peek
    args: {cursor: c}
    expect:
      rStatus: Waiting
      rPosition: {readings: {absent: {absent: true}, end: End}, requirement: T-PEEK-POSITION}
  - event: get_message_for_peek
    args: {cursor: c}
    expect_error: UndefinedBehaviour
then:
  requirement: T-DEQUEUE
  queues: {q: []}
  cursors: {c: {CursorState: {is: WaitPeek, requirement: T-PEEK-WAITING}}}
---
id: t.wrong
title: A case the reference fails
spec: [{section: MS-MQDMPR 3.1.7.1.7, requirement: T-PURGE}]
given:
  queues: [{name: q, messages: [{id: m1}, {id: m2}]}]
  transactions: [t1]
  locked: [{message: m2, transaction: t1}]
when:
  - event: purge_queue
    args: {iQueue: q}
then:
  queues: {q: [{message: m2, State: Locked}]}
---
id: t.timer
title: A blocked peek ends when its timer fires
spec: [{section: MS-MQDMPR 3.1.6.3, requirement: T-TIMER}]
given:
  queues: [{name: q}]
  open: [{name: h, queue: q, access: PeekAccess}]
when:
  - event: peek_message
    args: {iQueueDesc: h, iTimeout: 2.5}
    expect: {rPending: read1}
  - event: advance_clock
    args: {seconds: 3}
    expect: {rFired: 1}
  - event: read_result
    args: {iReader: read1}
    expect: {rStatus: MQ_ERROR_IO_TIMEOUT}
---
id: t.non-strict
title: The reference reads an undefined rPosition as absent
spec: [{section: MS-MQDMPR 3.2.7.2, requirement: T-PEEK-POSITION-END}]
given:
  queues: [{name: q}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rPosition: {readings: {end: End, absent: {absent: true}}, requirement: T-PEEK-POSITION-END}}
"""
)


def test_reference_and_the_reference_adapter_give_identical_outcomes() -> None:
    cases = load(CORPUS, "corpus.yaml")
    embedded = run(cases, "reference")
    through_cmd = run(cases, ADAPTER, step_timeout=20)
    assert [r.outcome for r in embedded.results] == [
        Outcome.passed,
        Outcome.passed,
        Outcome.failed,
        Outcome.passed,
        Outcome.non_strict,
    ]
    assert [(r.case_id, r.outcome, r.failures) for r in through_cmd.results] == [
        (r.case_id, r.outcome, r.failures) for r in embedded.results
    ]
    # the non-strict difference through the adapter is the reference's reading, named
    (failure,) = through_cmd.results[-1].failures
    assert (failure.requirement, failure.interpretation, failure.reading) == (
        "T-PEEK-POSITION-END",
        "T-PEEK-POSITION-END",
        "absent",
    )
    assert [(r["name"], r["matched"]) for r in failure.readings] == [("end", False), ("absent", True)]


def test_cmd_targets_in_workers() -> None:
    cases = load(CORPUS, "corpus.yaml") * 2
    parallel = run(cases, ADAPTER, workers=2, step_timeout=20)
    assert [r.outcome for r in parallel.results] == [r.outcome for r in run(cases, "reference").results]


def test_targets_satisfy_the_protocol() -> None:
    assert isinstance(ReferenceTarget(), Target)
    assert isinstance(PluginTarget(f"{__name__}:CrashingTarget"), Target)
    assert isinstance(CommandTarget("true"), Target)
