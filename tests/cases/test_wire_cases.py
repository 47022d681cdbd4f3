"""Wire cases ([MS-MQQB], cases/mqqb/): the corpus passes against the simulated peer under
``msmq-harness run`` and under the pytest plugin with ``-n 2``; acceptor cases give the same
outcome against a second simulated peer addressed as a live target (``mqqb://``); a deliberately
broken acceptor fails the relevant cases with the section, values and a hex dump; cases that need
the simulated peer are not applicable to a live target (issue 5, "Wire cases" and acceptance 2)."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cases.lines import CaseError
from harness.cases.loader import load_paths, load_text
from harness.cases.runner import run
from harness.cases.violations import watches
from harness.peers import SimulatedPeer
from harness.results import Outcome

REPO = Path(__file__).resolve().parents[2]
WIRE = REPO / "cases" / "mqqb"


def _plugin_args() -> list[str]:
    if importlib.metadata.entry_points(group="pytest11", name="msmq_harness"):
        return ["-p", "msmq_harness"]
    return ["-p", "harness.pytest_plugin"]


@pytest.fixture(scope="module")
def wire_cases() -> list:
    return load_paths([WIRE])


def _outcomes(result) -> dict[str, str]:
    return {r.case_id: str(r.outcome) for r in result.results}


def _bad(result) -> list[tuple[str, str, str]]:
    return [(r.case_id, str(r.outcome), r.detail) for r in result.results if r.outcome is not Outcome.passed]


def test_wire_corpus_covers_every_behaviour_and_seed_003(wire_cases: list) -> None:
    """Every fault behaviour has a case; the boundary-conformant ones run the whole corpus
    instead (``reference?peer=...``, tests/cases/test_wire_boundary.py)."""
    from harness.session import BEHAVIOURS

    assert len(wire_cases) >= 70
    behaviours = {
        b
        for c in wire_cases
        for b in (
            [c.given["peer"].get("behaviour", "normal")]
            if isinstance(c.given["peer"].get("behaviour", "normal"), str)
            else c.given["peer"]["behaviour"]
        )
    }
    families = {b.rsplit("-", 1)[0] if b.startswith(("close-after-", "window-")) else b for b in behaviours}
    named = {
        b.rsplit("-", 1)[0] if b.startswith(("close-after-", "window-")) else b
        for b, behaviour in BEHAVIOURS.items()
        if not behaviour.boundary
    }
    assert named <= families, named - families
    seed = {r.requirement for c in wire_cases for r in c.spec if r.section == "MS-MQQB 3.1.7.12"}
    assert len(seed) >= 9


def test_wire_corpus_passes_under_msmq_harness_run(tmp_path: Path) -> None:
    report = tmp_path / "wire.json"
    command = [sys.executable, "-m", "harness.cli", "run", str(WIRE), "-n", "4", "--json", str(report)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    records = json.loads(report.read_text())["results"]
    bad = [(r["case_id"], r["outcome"], r["detail"]) for r in records if r["outcome"] != "passed"]
    assert not bad, done.stdout[-3000:]
    assert done.returncode == 0
    assert len(records) >= 70


def test_wire_corpus_passes_under_the_pytest_plugin_with_two_workers(tmp_path: Path) -> None:
    shutil.copytree(WIRE, tmp_path / "cases" / "mqqb")
    command = [
        sys.executable, "-m", "pytest", *_plugin_args(), "cases", "-n", "2", "-p", "no:cacheprovider", "-q",
        "--strict-markers", "-m", "spec_mqqb or spec_mqmq",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.stdout.count("bringing up nodes") >= 1
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary


def test_acceptor_cases_give_the_same_outcome_against_a_live_simulated_peer(wire_cases: list) -> None:
    acceptor = [c for c in wire_cases if c.given["peer"]["under_test"] == "acceptor"]
    assert len(acceptor) >= 25
    simulated = run(acceptor, "reference")
    with SimulatedPeer(time_scale=0.05) as peer:
        host, port = peer.address
        live = run(acceptor, f"mqqb://{host}:{port}?ping={peer.ping_address[1]}&scale=0.05&tx-queue=1")
    assert _outcomes(live) == _outcomes(simulated)
    assert set(_outcomes(live).values()) == {"passed"}


def test_a_transactional_case_needs_a_named_transactional_queue_of_a_live_acceptor(wire_cases: list) -> None:
    order_ack = [c for c in wire_cases if c.id == "mqqb.acceptor.order-ack"]
    with SimulatedPeer(time_scale=0.05) as peer:
        host, port = peer.address
        unnamed = run(order_ack, f"mqqb://{host}:{port}?scale=0.05")
        named = run(order_ack, f"mqqb://{host}:{port}?scale=0.05&tx-queue=7")
        delivered = [m.headers.UserHeader.DestinationQueue.PrivateQueueIdentifier for m in peer.delivered]
    [result] = unnamed.results
    assert result.outcome is Outcome.not_applicable and "tx-queue=ID" in result.detail
    assert [r.outcome for r in named.results] == [Outcome.passed]
    assert delivered == [7]


def test_a_live_acceptor_runs_the_acceptor_cases_and_no_initiator_case(wire_cases: list) -> None:
    with SimulatedPeer(time_scale=0.05) as peer:  # a live acceptor on a fast clock: ?scale=0.05
        host, port = peer.address
        result = run(wire_cases, f"mqqb://{host}:{port}?scale=0.05", workers=4)
    outcomes = _outcomes(result)
    details = {r.case_id: r.detail for r in result.results}
    sides = {c.full_id: c.given["peer"]["under_test"] for c in wire_cases}
    # an initiator case judges a sender: the live target has none (its hello lists no wire:initiator)
    for case_id in ("mqqb.fault.refuse", "mqqb.establish.ec-request-fields", "mqqb.outgoing.multicast"):
        assert outcomes[case_id] == "not_applicable"
        assert "the target lacks wire:initiator" in details[case_id]
    assert {outcomes[k] for k, side in sides.items() if side == "initiator"} == {"not_applicable"}
    # the acceptor cases run against it
    assert outcomes["mqqb.acceptor.ec-response[se=0]"] == "passed"
    assert all("the target lacks" in details[k] for k, v in outcomes.items() if v == "not_applicable")
    assert not [k for k, v in outcomes.items() if v not in ("passed", "not_applicable")], _bad(result)


@pytest.mark.parametrize(
    ("behaviour", "case_id", "field", "section", "outcome"),
    [
        (
            "bad-padding",
            "mqqb.acceptor.ec-response-structure",
            "EstablishConnectionHeader.Padding",
            "MS-MQQB 2.2.3.1",
            Outcome.failed,
        ),
        # a zero ServerGuid refused: what 2.2.1 writes, against 3.1.5.3.1 (an interpretation)
        ("refuse", "mqqb.acceptor.ec-response[se=1]", "InternalHeader.Flags.CS", "MS-MQQB 2.2.1", Outcome.non_strict),
        (
            "refuse",
            "mqqb.acceptor.ec-own-guid-accepted",
            "InternalHeader.Flags.CS",
            "MS-MQQB 3.1.5.3.1",
            Outcome.failed,
        ),
        # the Signature bytes 52 4F 49 4C: valid if "0x524F494C (big-endian order)" is read literally
        (
            "bad-signature",
            "mqqb.acceptor.ec-response-structure",
            "BaseHeader.Signature",
            "MS-MQQB 3.1.5.1.2",
            Outcome.non_strict,
        ),
    ],
)
def test_a_broken_acceptor_fails_the_relevant_acceptor_cases(
    wire_cases: list, behaviour: str, case_id: str, field: str, section: str, outcome: Outcome
) -> None:
    acceptor = [c for c in wire_cases if c.given["peer"]["under_test"] == "acceptor"]
    with SimulatedPeer(behaviour=behaviour, time_scale=0.05) as peer:  # a live acceptor on a fast clock
        host, port = peer.address
        result = run(acceptor, f"mqqb://{host}:{port}?ping={peer.ping_address[1]}&scale=0.05&tx-queue=1", workers=4)
    by_id = {r.case_id: r for r in result.results}
    failed = by_id[case_id]
    assert failed.outcome is outcome, failed.detail
    failure = next(f for f in failed.failures if f.field == field)
    assert failure.section == section
    assert failure.level == ("MUST" if outcome is Outcome.failed else "interpretation")
    assert "[" in failure.evidence and "^^" in failure.evidence and "field at bytes" in failure.evidence
    if behaviour == "bad-padding":  # the padding case notices, and so does every case watching the rules
        watching = {c.full_id for c in acceptor if watches(c)}
        assert watching and case_id not in watching
        assert {r.case_id for r in result.results if r.outcome is not Outcome.passed} == {case_id} | watching
        assert failure.expected == {"every_byte": 0x5A}
        assert "field at bytes 60..571" in failure.evidence
        padding = "MQQB-2.2.3.1-response-padding"  # each watching case: one difference, graded by the rule
        for r in result.results:
            if r.case_id in watching:
                assert [(f.field, f.requirement, f.level) for f in r.failures] == [
                    (f"peer.violations[{padding}]", padding, "MUST")
                ], r.case_id


def test_wire_cases_are_not_applicable_to_model_targets_and_model_cases_to_mqqb(wire_cases: list) -> None:
    model_only = "plugin:examples.mutants.seek:PeekReturnsAnyLocked"  # a QueueManager plugin: the model alone
    result = run(wire_cases[:3], model_only)
    assert set(_outcomes(result).values()) == {"not_applicable"}
    assert all("the target lacks wire:" in r.detail for r in result.results)
    model = load_paths([REPO / "cases" / "mqdmpr" / "seek"])[:2]
    with SimulatedPeer() as peer:  # the target's hello connects to it
        host, port = peer.address
        result = run(model, f"mqqb://{host}:{port}")
    assert set(_outcomes(result).values()) == {"not_applicable"}


def test_not_applicable_is_a_skip_under_the_pytest_plugin(tmp_path: Path) -> None:
    shutil.copytree(WIRE, tmp_path / "cases" / "mqqb")
    with SimulatedPeer() as peer:
        host, port = peer.address
        command = [
            sys.executable, "-m", "pytest", *_plugin_args(), "cases/mqqb/faults.yaml", "-p", "no:cacheprovider",
            "-q", "-rs", f"--msmq-target=mqqb://{host}:{port}", "-k", "refuse or window",
        ]  # fmt: skip
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "6 skipped" in done.stdout  # -k as run -k selects: ids, titles and tags (slow-reader's title names window)
    assert "not applicable: the case judges a sender; the target lacks wire:initiator" in done.stdout


WIRE_HEAD = """\
id: w.bad
title: t
spec: [{section: MS-MQQB 3.1.5.3.1, requirement: MQQB-3.1.5.3.1-CS-VALID}]
"""


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            "given:\n  peer: {under_test: acceptor, behaviour: refuze}\nwhen:\n  - action: receive\n",
            "bad.yaml:5: given.peer.behaviour:",
            "unknown acceptor behaviour 'refuze'",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: enqueue\n"
            "    args: {queue: q, message: {id: m}}\n",
            "bad.yaml:7: when[0].action:",
            "not an action of a case checking the acceptor",
        ),
        (
            "given:\n  peer: {under_test: initiator}\nwhen:\n  - action: enqueue\n"
            "    args: {queue: q, message: {id: m}}\n",
            "bad.yaml:8: when[0].args.queue:",
            "unknown queue reference 'q'",
        ),
        (
            "given:\n  peer: {under_test: initiator}\nwhen:\n  - event: purge_queue\n",
            "bad.yaml:7: when[0].event:",
            "wire actions only",
        ),
        ("when:\n  - action: receive\n    args: {timeout: 99}\n", "bad.yaml:1: given:", "names its peer"),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n    args: {timeout: 99}\n",
            "bad.yaml:8: when[0].args.timeout:",
            "a wait is not a number of seconds: name the [MS-MQQB] 3.1.2 timer",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n    args: {packet: SessionAck}\n",
            "bad.yaml:8: when[0].args:",
            "receive names the [MS-MQQB] 3.1.2 timer that bounds its wait",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n    args: {within: SessionAckWiat}\n",
            "bad.yaml:8: when[0].args.within:",
            "unknown timer 'SessionAckWiat' (did you mean 'SessionAckWait'?)",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n"
            "    args: {within: 2 * SessionAckSend +}\n",
            "bad.yaml:8: when[0].args.within:",
            "is not a timer or N * timer",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: receive\n"
            "    args: {before: SessionAckSend}\n    expect: {closed: true}\n",
            "bad.yaml:8: when[0].args.before:",
            "before bounds a check that nothing happened before the timer ran out: expect {timed_out: True}",
        ),
        (
            "given:\n  peer: {under_test: acceptor}\nwhen:\n  - action: send\n    args: {packet: Hello}\n",
            "bad.yaml:8: when[0].args.packet:",
            "packet is one of",
        ),
    ],
)
def test_bad_wire_cases_name_file_line_and_key(body: str, where: str, message: str) -> None:
    with pytest.raises(CaseError) as info:
        load_text(WIRE_HEAD + body, "bad.yaml")
    text = str(info.value)
    assert text.startswith(where), text
    assert message in text


def test_wire_expectations_and_hex_dump() -> None:
    import packets
    from harness.cases.wirefields import field_span, field_value, hexdump
    from harness.cases.wirematch import wire_matches
    from packets import session as sp

    data = packets.build(sp.establish_connection("{11111111-2222-3333-4444-555555555555}", time_stamp=7))
    packet = packets.parse(data)
    assert field_value(packet, "EstablishConnection.EstablishConnectionHeader.ClientGuid") == (
        True,
        "{11111111-2222-3333-4444-555555555555}",
    )
    assert field_value(packet, "BaseHeader.Flags.IN") == (True, 1)
    assert field_value(packet, "SessionHeader.WindowSize") == (False, None)
    assert field_span(data, "EstablishConnectionHeader.ServerGuid", "EstablishConnection") == (36, 52)
    assert field_span(data, "BaseHeader.Flags.IN", "EstablishConnection") == (2, 4)
    dump = hexdump(data, (36, 52))
    assert "[00]" in dump and "^^" in dump and "field at bytes 36..51" in dump
    assert wire_matches({"not": "{00000000-0000-0000-0000-000000000000}"}, "{11111111-2222-3333-4444-555555555555}")
    assert not wire_matches({"not": 0}, None, present=False)
    assert wire_matches({"range": [1, 3]}, 3) and not wire_matches({"range": [1, 3]}, 4)
    assert wire_matches({"every_byte": 0x5A}, "5a5a") and not wire_matches({"every_byte": 0x5A}, "5a00")
    assert wire_matches({"sent": "X.y"}, 7, lambda path: 7) and not wire_matches({"sent": "X.y"}, 7, lambda path: 8)
    assert wire_matches("11111111-2222-3333-4444-555555555555", "{11111111-2222-3333-4444-555555555555}")


def test_the_schema_names_the_model_connection_statuses_and_the_session_behaviours() -> None:
    from harness.cases.schema import schema
    from harness.model.enums import ConnectionStatus, OutgoingQueueState

    defs = schema()["$defs"]
    assert defs["connectionStatus"]["enum"] == [s.value for s in ConnectionStatus]
    assert set(defs["outgoingState"]["properties"]["State"]["enum"]) == {s.value for s in OutgoingQueueState}
