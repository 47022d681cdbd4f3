"""Wire waits derived from the [MS-MQQB] 3.1.2 timers (docs/cases.md, "Wire cases"): the bound of a
step is the sum of the timers it names, from the durations the harness uses and the values it sent
in its ConnectionParameters, scaled by the side that runs each timer, plus a margin (``within``) or
less one (``before``); a wait that runs out says how its bound was derived; wire differences are
graded by the requirement they check; the target options ``reference?peer=&scale=`` and
``mqqb://...?scale=``."""

from __future__ import annotations

import pytest

from harness.cases.loader import load_text
from harness.cases.model import Case
from harness.cases.targets import make_target
from harness.cases.targets.live import LiveAcceptor, parse_live_scale
from harness.cases.targets.wire import WireOptions, run_wire_case
from harness.cases.wireruns import AcceptorRun, InitiatorRun
from harness.cases.wiretimers import parse_bound
from harness.results import Outcome
from harness.session import SessionConfig

HEAD = """\
id: w.timing
title: t
spec: [{section: MS-MQQB 3.1.5.8.2, requirement: MQQB-3.1.5.8.2-ACK-SEND-TIMER}]
"""


def _case(body: str) -> Case:
    (case,) = load_text(HEAD + body, "timing.yaml")
    return case


ACCEPTOR = _case(
    "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n    args: {within: SessionAckSend}\n"
)
INITIATOR = _case(
    "given:\n  peer: {under_test: initiator}\nwhen:\n  - action: create_outgoing_queue\n    args: {name: out}\n"
)


def test_a_bound_is_a_sum_of_named_timers_with_factors() -> None:
    assert parse_bound("SessionAckSend") == ((1.0, "SessionAckSend"),)
    assert parse_bound("SessionInitialization + 2 * SessionAckWait") == (
        (1.0, "SessionInitialization"),
        (2.0, "SessionAckWait"),
    )
    for bad in ("", "3", "SessionAckSend + ", "Session Ack Send", "0 * PingResponse", 7):
        with pytest.raises(ValueError):
            parse_bound(bad)


def test_acceptor_acknowledgment_timers_follow_the_connection_parameters_the_case_sent() -> None:
    from packets import session as sp

    run = AcceptorRun(ACCEPTOR, WireOptions())
    config = SessionConfig()
    # nothing sent yet: the values the client will send (AckTimeout 0x4E20 ms: 10 s)
    assert run.timer("SessionAckSend") == (10.0, "AckTimeout 20000 ms to be sent / 2")
    run.sent["ConnectionParameters"] = sp.connection_parameters(0x1D4C0, 0x1D4C0, 64)
    assert run.timer("SessionAckSend") == (60.0, "AckTimeout 120000 ms sent / 2")
    run.recoverable_sent = True  # 3.1.5.8.7: RecoverableAckSendTimeout restarts the timer
    assert run.timer("SessionAckSend") == (120.0, "RecoverableAckTimeout 120000 ms sent (recoverable messages)")
    assert run.timer("SessionAckWait") == (config.ack_wait_multiple * 120.0, "1 x AckTimeout 120000 ms sent")
    assert run.timer("OrderAckSend")[0] == 0.5  # one transactional message: OrderAckTimeout only
    run.tx_number = 2  # a later one within MaximumOrderAckDelay restarts the Order Ack Send Timer
    assert run.timer("OrderAckSend") == (10.5, "OrderAckTimeout 500 ms + MaximumOrderAckDelay 10 s")
    assert run.timer("PingResponse") == (1.0, "one second")
    assert run.timer("SessionInitialization")[0] == config.session_initialization
    assert run.timer("SessionRetryConnect")[0] == config.session_retry_connect


def test_within_adds_a_margin_before_takes_one_off_and_each_side_has_its_scale() -> None:
    live = AcceptorRun(ACCEPTOR, WireOptions(), LiveAcceptor(("127.0.0.1", 1), None, 1, None, 0.5))
    seconds, how = live.bound({"within": "SessionAckSend"})
    assert seconds == pytest.approx(10.0 * 0.5 * 1.25 + 0.5)
    assert how.startswith("within SessionAckSend: SessionAckSend (MS-MQQB 3.1.2.5, AckTimeout 20000 ms")
    assert "x scale 0.5" in how and "+25 % +0.5 s" in how.replace("%", " %")
    seconds, how = live.bound({"before": "2 * PingResponse"})
    assert seconds == pytest.approx(2 * 1.0 * 0.5 * 0.75)
    assert how.startswith("before 2 * PingResponse: 2 x PingResponse")
    # the sender runs at the case's timers (as its wire_setup reply says); the simulated peer no slower
    slow = _case(
        "given:\n  peer: {under_test: initiator, timers: 1}\nwhen:\n  - action: create_outgoing_queue\n"
        "    args: {name: out}\n"
    )
    target = make_target("reference")
    run = InitiatorRun(slow, WireOptions(), target.control, adm=True)  # type: ignore[attr-defined]
    try:
        run.start()
        assert (run.initiator_scale, run.acceptor_scale) == (1.0, 0.05)
        seconds, how = run.bound({"within": "SessionInitialization + SessionAckSend"})
    finally:
        run.close()
    assert seconds == pytest.approx((30.0 * 1.0 + 10.0 * 0.05) * 1.25 + 0.5)
    assert "the sender's declared 30 s" in how


def test_the_initiator_bound_uses_the_connection_parameters_the_reference_sent() -> None:
    case = _case(
        "given:\n  peer: {under_test: initiator}\nwhen:\n  - action: create_outgoing_queue\n    args: {name: out}\n"
        "  - action: enqueue\n    args: {queue: out, message: {id: m1, delivery: recoverable}}\n"
        "  - action: wait_for\n    args: {acked: [m1], within: SessionInitialization + SessionAckSend}\n"
    )
    target = make_target("reference")
    before = InitiatorRun(case, WireOptions(), target.control, adm=True)  # type: ignore[attr-defined]
    before.messages["m1"] = {"id": "m1", "delivery": "recoverable"}
    before.view = type("NoPeer", (), {"connections": lambda self: []})()
    # RecoverableAckSendTimeout comes from the EstablishConnection round trip: at most 0x1D4C0 ms
    assert before.timer("SessionAckSend") == (120.0, "RecoverableAckTimeout 120000 ms at most (recoverable messages)")
    run = InitiatorRun(case, WireOptions(), target.control, adm=True)  # type: ignore[attr-defined]
    try:
        run.start()
        for step in case.when:
            result = getattr(run, step.action)(step.args)
        assert result["satisfied"] is True
        seconds, how = run.timer("SessionAckSend")
        recoverable, _, said = run.connection_parameters()
    finally:
        run.close()
    # once sent: 8 x the round trip of the EstablishConnection Packet, clamped to 0x1F4-0x1D4C0 ms
    # (3.1.5.3.2): on an idle loopback 500 ms, less than AckTimeout / 2, which then bounds the wait;
    # a round trip past 1.25 s (a loaded machine) makes it the longer of the two, and the bound
    assert said == "sent" and recoverable is not None and 0x1F4 <= recoverable < 0x1D4C0
    if recoverable <= 10_000:
        assert (seconds, how) == (10.0, "AckTimeout 20000 ms sent / 2")
    else:
        said_how = f"RecoverableAckTimeout {recoverable} ms sent (recoverable messages)"
        assert (seconds, how) == (recoverable / 1000, said_how)
    assert run.waited.startswith("within SessionInitialization + SessionAckSend: ")


def test_a_timer_named_with_its_side_is_that_sides_own_instance() -> None:
    """``initiator.SessionAckSend``: the sender's own Session Ack Send Timer (its AckWaitTimeout / 2,
    the AckTimeout it sends, 3.1.5.3.2) at the sender's time scale, never the acceptor's timer of
    that name (RecoverableAckTimeout once recoverable messages were sent, the acceptor's scale)."""
    assert parse_bound("1.1 * initiator.SessionAckSend") == ((1.1, "initiator.SessionAckSend"),)
    assert parse_bound("acceptor.SessionAckSend") == ((1.0, "SessionAckSend"),)  # its own side: the timer
    assert parse_bound("initiator.SessionInitialization") == ((1.0, "SessionInitialization"),)
    for bad in ("initiator.OrderAckSend", "sender.SessionAckSend", "initiator.Nothing", "initiator."):
        with pytest.raises(ValueError):
            parse_bound(bad)
    run = InitiatorRun(INITIATOR, WireOptions(), make_target("reference").control, adm=True)  # type: ignore[attr-defined]
    # a sender that declares another AckWaitTimeout and runs its timers at another scale
    run._configure({"scale": 0.5, "timers": {"AckWaitTimeout": 0x9C40}})
    run.view = type("NoPeer", (), {"connections": lambda self: []})()
    run.messages["m1"] = {"id": "m1", "delivery": "transactional"}
    assert run.timer("initiator.SessionAckSend") == (
        20.0,
        "the initiator's AckWaitTimeout: AckTimeout 40000 ms to be sent / 2",
    )
    assert run.timer("SessionAckSend")[0] == 120.0  # the acceptor's, after a recoverable message
    seconds, how = run.bound({"before": "1.1 * initiator.SessionAckSend"})
    assert seconds == pytest.approx(1.1 * 20.0 * 0.5 * 0.75)  # the sender's scale, not the acceptor's 0.05
    assert "1.1 x initiator.SessionAckSend (MS-MQQB 3.1.2.5" in how and "x scale 0.5" in how
    assert run.bound({"within": "SessionAckSend"})[0] == pytest.approx(120.0 * 0.05 * 1.25 + 0.5)


def test_a_wait_that_runs_out_says_which_timers_bound_it() -> None:
    case = _case(
        "given:\n  peer: {under_test: acceptor, behaviour: missing-ack}\nwhen:\n"
        "  - action: send\n    args: {packet: EstablishConnection}\n"
        "  - action: receive\n    args: {packet: EstablishConnection, within: SessionInitialization}\n"
        "  - action: send\n    args: {packet: ConnectionParameters}\n"
        "  - action: receive\n    args: {packet: ConnectionParameters, within: SessionInitialization}\n"
        "  - action: send\n    args: {packet: UserMessage}\n"
        "  - action: receive\n    args: {packet: SessionAck, within: SessionAckSend}\n"
    )
    result = run_wire_case(case, make_target("reference"))
    assert result.outcome is Outcome.failed
    failure = result.failures[0]
    assert (failure.step, failure.field, failure.requirement, failure.level) == (
        5,
        "timed_out",
        "MQQB-3.1.5.8.2-ACK-SEND-TIMER",
        "MUST",
    )
    assert "waited within SessionAckSend: SessionAckSend (MS-MQQB 3.1.2.5, AckTimeout 20000 ms sent / 2: 10 s)" in (
        failure.message
    )
    assert "x scale 0.05" in failure.message and "1.12 s" in failure.message


CS_NULL = "MQQB-2.2.1-CS-NULL-SERVERGUID"  # an interpretation: null-accepted (CS 0), null-refused (CS 1)
#: the readings cases/mqqb/acceptor.yaml gives the CS bit of the answer to an EstablishConnection
#: whose ServerGuid is zero (the request the harness sends)
CS_READINGS = f"{{readings: {{null-accepted: 0, null-refused: 1}}, requirement: {CS_NULL}}}"


@pytest.mark.parametrize(
    ("expect", "target", "outcome", "graded", "reading"),
    [
        # the reference accepts (CS 0): the reading the corpus checks
        (CS_READINGS, "reference", Outcome.passed, None, ""),
        # an acceptor that refuses (CS 1) takes the other named reading: non_strict, with its name
        (CS_READINGS, "reference?peer=refuse", Outcome.non_strict, (CS_NULL, "interpretation", 0, 1), "null-refused"),
        # a value no reading gives (here every reading gives CS 1): failed under the frame
        (
            f"{{readings: {{null-accepted: 1, null-refused: 1}}, requirement: {CS_NULL}}}",
            "reference",
            Outcome.failed,
            ("MQQB-3.1.5.3.1-EC-HEADERS", "MUST", 1, 0),
            "",
        ),
        # a MUST: failed under it
        ("{is: 1, requirement: MQQB-3.1.5.3.1-CS-VALID}", "reference", Outcome.failed,
         ("MQQB-3.1.5.3.1-CS-VALID", "MUST", 1, 0), ""),
    ],
    ids=["reference-reading", "another-reading", "no-reading", "must"],
)
def test_a_wire_difference_is_graded_by_the_requirement_it_checks(
    expect: str, target: str, outcome: Outcome, graded: tuple[str, str, int, int] | None, reading: str
) -> None:
    case = _case(
        "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: send\n    args: {packet: EstablishConnection}\n"
        "  - action: receive\n    args: {packet: EstablishConnection, within: SessionInitialization}\n"
        f"    expect:\n      InternalHeader.Flags.CS: {expect}\n"
        "      InternalHeader.Flags.PT: {is: 2, requirement: MQQB-3.1.5.3.1-EC-HEADERS}\n"
    )
    result = run_wire_case(case, make_target(target))
    assert result.outcome is outcome, result.detail
    if graded is None:
        assert result.failures == []
        return
    (failure,) = result.failures
    requirement, level, expected, observed = graded
    assert failure.field == "InternalHeader.Flags.CS"
    assert (failure.expected, failure.observed) == (expected, observed)  # a readings value: the first reading's
    assert (failure.requirement, failure.level) == (requirement, level)
    assert failure.section == case.requirements[requirement].section
    assert failure.reading == reading
    if "readings:" in expect:  # graded by the interpretation or its frame: each reading weighed
        assert failure.interpretation == CS_NULL
        assert [row["name"] for row in failure.readings if row["matched"]] == ([reading] if reading else [])
    else:
        assert (failure.interpretation, failure.readings) == ("", [])


def test_target_options_name_the_peer_behaviour_and_the_time_scale() -> None:
    target = make_target("reference?peer=late-ack&scale=0.1")
    assert getattr(target, "wire_options", None) == WireOptions("late-ack", 0.1)
    assert getattr(make_target("reference"), "wire_options", None) == WireOptions()
    for bad in ("reference?peer=lazy", "reference?scale=0", "reference?scale=2", "reference?speed=1"):
        with pytest.raises(ValueError):
            make_target(bad)
    assert parse_live_scale("mqqb://127.0.0.1:1801") == 1.0
    assert parse_live_scale("mqqb://127.0.0.1:1801?ping=3527&scale=0.05") == 0.05
    with pytest.raises(ValueError):
        parse_live_scale("mqqb://127.0.0.1:1801?scale=x")


def test_the_peer_option_replaces_the_normal_behaviour_only() -> None:
    faults = _case(
        "given:\n  peer: {under_test: initiator, behaviour: [close-after-3, normal]}\nwhen:\n"
        "  - action: create_outgoing_queue\n    args: {name: out}\n"
    )
    control = make_target("reference").control  # type: ignore[attr-defined]
    run = InitiatorRun(faults, WireOptions(peer="late-ack"), control, adm=True)
    assert run.behaviours == ["close-after-3", "late-ack"]
    assert InitiatorRun(INITIATOR, WireOptions(peer="window-min"), control, adm=True).behaviours == ["window-min"]
