"""Boundary-conformant behaviours of the simulated peer: legal, each at an extreme the spec allows.

Each behaviour (``harness.session.boundary_behaviours()``) is listed by ``msmq-harness peer
--list-behaviours`` with the sections that make it legal, and runs on a scaled clock
(``SimulatedPeer(time_scale=...)``, ``msmq-harness peer --time-scale``).  Checked here: what each
one sends (window, acknowledgment timing, order queue name, reserved fields), that the project's
own Initiator completes express, recoverable and transactional deliveries against it with no
violation either way, and that ``msmq-harness run cases/mqqb --target mqqb://...?scale=S``
passes every applicable acceptor case against ``msmq-harness peer --behaviour NAME``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from peerkit import CLIENT, RawClient, cp_request, ec_request, session_ack_bytes, user_message_bytes

import packets
from harness.cli import main
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import (
    BEHAVIOURS,
    Acceptor,
    Initiator,
    SessionConfig,
    StartTimer,
    Timer,
    boundary_behaviours,
    named_behaviour,
    user_message,
)
from harness.session.acceptor import LONGEST_TIMER
from packets import GUID, Packet
from packets import session as sp

ROOT = Path(__file__).resolve().parents[2]
SCALE = 0.05  # the peer's 3.1.2 timers run a twentieth of their durations
BOUNDARY = boundary_behaviours()
# What the plain-socket client announces in its ConnectionParameters request (peerkit.cp_request):
# RecoverableAckTimeout 0x1F4 ms, AckTimeout 0x4E20 ms ([MS-MQQB] 2.2.2.1, the smallest valid).
ACK_TIMEOUT = sp.ACK_TIMEOUT_RANGE[0] / 1000
RECOVERABLE_ACK_TIMEOUT = sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0] / 1000


def test_there_are_boundary_behaviours_and_each_says_why_it_is_legal() -> None:
    assert {"late-ack", "window-min", "window-max", "longest-timers", "order-ack-direct", "base-reserved"} <= set(
        BOUNDARY
    )
    for name in BOUNDARY:
        b = named_behaviour(name)
        assert b.boundary and b.summary and b.sections, name
        assert all(s.startswith(("MS-MQQB ", "MS-MQMQ ")) for s in b.sections), name
        # nothing of a fault behaviour
        assert not b.refuse and b.reply_signature is None and b.reply_version is None and b.garbage_reply is None
        assert b.reply_padding == sp.RESPONSE_PADDING_BYTE and b.order_ack and b.session_ack in ("normal", "timer")
        assert b.ping == "answer" and b.read_rate is None and b.close_after_packets is None


def test_the_boundary_behaviours_are_listed_with_their_sections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["peer", "--list-behaviours"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    for name in BOUNDARY:
        assert " boundary " in lines[name], lines[name]
        for section in BEHAVIOURS[name].sections:
            assert section in lines[name], (name, section)
    assert " fault " in lines["missing-ack"]


@pytest.mark.parametrize("name", BOUNDARY)
def test_a_boundary_behaviour_is_accepted_by_the_peer_command(name: str) -> None:
    args = ["peer", "--listen", "127.0.0.1:0", "--behaviour", name, "--time-scale", "0.05", "--duration", "0"]
    assert main(args) == 0


def test_longest_timers_stretch_the_acceptors_own_timers() -> None:
    a = Acceptor(CLIENT, "longest-timers")
    assert a.config.session_initialization == a.config.session_cleanup == LONGEST_TIMER == 0xFFFFFFFF / 1000
    started = {act.name: act.seconds for act in a.connection_made() if isinstance(act, StartTimer)}
    assert started == {Timer.SessionCleanup: LONGEST_TIMER, Timer.SessionInitialization: LONGEST_TIMER}


# ------------------------------------------------------------------------------- on the wire


def _reserved_exact(p: Packet, base_reserved: int) -> list[str]:
    """Every reserved or unused field of a packet the acceptor sent, against the value the spec
    gives it ([MS-MQMQ] 2.2.19.1, 2.2.20.4; [MS-MQQB] 2.2.1, 2.2.2.1, 2.2.3.1, 2.2.4, 2.2.4.1)."""
    wrong = []
    bh = p.BaseHeader
    if int(bh.Reserved) != base_reserved:
        wrong.append(f"BaseHeader.Reserved {int(bh.Reserved)}")
    if int(bh.Flags) & 0xFEC0:  # X0-X9 (bits 6, 7, 9-15) SHOULD NOT be set
        wrong.append(f"BaseHeader.Flags 0x{int(bh.Flags):04X}")
    internal = p.headers.get("InternalHeader")
    if internal is not None:
        if int(internal.Reserved) != 0:
            wrong.append("InternalHeader.Reserved")
        if int(internal.Flags) & 0xFFE0:  # X5-X15
            wrong.append(f"InternalHeader.Flags 0x{int(internal.Flags):04X}")
    ec = p.headers.get("EstablishConnectionHeader")
    if ec is not None:
        if int(ec.Reserved) != 0 or ec.OperatingSystem.RE != 0x10:
            wrong.append("EstablishConnectionHeader Reserved/RE")
        if bytes(ec.Padding) != bytes([0x5A]) * sp.PADDING_SIZE:
            wrong.append("EstablishConnectionHeader.Padding")
    cp = p.headers.get("ConnectionParametersHeader")
    if cp is not None and int(cp.Reserved) != 0:
        wrong.append("ConnectionParametersHeader.Reserved")
    sh = p.headers.get("SessionHeader")
    if sh is not None and int(sh.Reserved) != 0:
        wrong.append("SessionHeader.Reserved")
    if p.kind.name == "OrderAck":
        if int(p.BaseHeader.Flags) != 0 or int(p.MessagePropertiesHeader.Flags) != 0:
            wrong.append("OrderAck flags")
        if p.body is None or bytes(p.body.Reserved) != bytes(20):
            wrong.append("OrderAck Body Reserved")
    return wrong


def _session(name: str) -> tuple[list[Packet], list[float], SimulatedPeer]:
    """A plain-socket session: 5 express, 2 recoverable and 2 transactional messages after one
    handshake announcing WindowSize 64; every packet the peer sent, with its arrival time."""
    with SimulatedPeer(behaviour=name, time_scale=SCALE) as peer, RawClient(peer.address) as c:
        ec, cp = c.handshake()
        q = peer.identifier
        start = time.monotonic()
        c.send(*(user_message_bytes(q, n) for n in range(1, 6)))
        c.send(*(user_message_bytes(q, n, delivery="recoverable") for n in (6, 7)))
        c.send(*(user_message_bytes(q, 7 + k, delivery="transactional", tx=(k, k - 1)) for k in (1, 2)))
        times: list[float] = []
        got: list[Packet] = [ec, cp]
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            new = c.read(1, deadline - time.monotonic())
            times += [time.monotonic() - start] * len(new)
            got += new
            acks = [int(p.SessionHeader.AckSequenceNumber) for p in got if p.kind.name == "SessionAck"]
            acked = max(acks, default=0)
            if acked >= 9 and any(p.kind.name == "OrderAck" for p in got):
                break
        orders = sum(p.kind.name == "OrderAck" for p in got)
        c.send(session_ack_bytes(orders, sent=9, recoverable_sent=4))
        assert peer.wait_for(lambda: len(peer.delivered) == 9, 5.0), name
        time.sleep(2 * ACK_TIMEOUT / 2 * SCALE)  # the peer's acknowledgment of its OrderAcks
    return got, [0.0, 0.0, *times], peer


@pytest.mark.parametrize("name", BOUNDARY)
def test_what_a_boundary_peer_sends(name: str) -> None:
    b = named_behaviour(name)
    got, times, peer = _session(name)
    assert peer.violations == [], peer.violations
    kinds = [p.kind.name for p in got]
    assert kinds[:2] == ["EstablishConnection", "ConnectionParameters"]
    assert "SessionAck" in kinds and "OrderAck" in kinds
    for p in got:
        assert not p.violations, (p.kind, p.violations)
        assert _reserved_exact(p, b.base_reserved or 0) == [], (p.kind, _reserved_exact(p, b.base_reserved or 0))
    window = b.window_size if b.window_size is not None else 64
    assert got[1].ConnectionParametersHeader.WindowSize == window
    assert {int(p.SessionHeader.WindowSize) for p in got if p.kind.name == "SessionAck"} == {window}
    order_acks = [p for p in got if p.kind.name == "OrderAck"]
    if b.order_ack_queue == "direct":
        assert all(p.UserHeader.Flags.DQ == 0x7 for p in order_acks)
        assert {str(p.UserHeader.DestinationQueue.DirectFormatName) for p in order_acks} == {
            "TCP:127.0.0.1\\PRIVATE$\\order_queue$"
        }
        assert all(GUID(p.UserHeader.QueueManagerAddress).is_null for p in order_acks)
    else:
        assert all(p.UserHeader.Flags.DQ == 0x3 for p in order_acks)
    if b.session_ack == "timer":
        # nothing before the Session Ack Send Timer: RecoverableAckSendTimeout after the first
        # recoverable message (3.1.5.8.7), which the client set to 0x1F4 ms, on the peer's clock
        first_ack = next(t for p, t in zip(got, times, strict=True) if p.kind.name == "SessionAck")
        assert first_ack >= 0.8 * RECOVERABLE_ACK_TIMEOUT * SCALE, first_ack
        assert len([p for p in got if p.kind.name == "SessionAck"]) <= 3  # never one per message by count


def test_late_ack_waits_for_half_the_initiators_ack_timeout_on_express_messages() -> None:
    """3.1.5.8.2: the Session Ack Send Timer runs AckWaitTimeout / 2 (the AckTimeout the initiator
    announced); late-ack sends nothing before it even when the initiator's window is full."""
    with SimulatedPeer(behaviour="late-ack", time_scale=SCALE) as peer, RawClient(peer.address) as c:
        c.send(ec_request())
        c.read(1)
        c.send(cp_request(window=2))
        c.read(1)
        start = time.monotonic()
        c.send(*(user_message_bytes(peer.identifier, n) for n in (1, 2)))
        (ack,) = c.read(1, timeout=5.0)
        waited = time.monotonic() - start
    assert ack.kind.name == "SessionAck" and ack.SessionHeader.AckSequenceNumber == 2
    expected = ACK_TIMEOUT / 2 * SCALE
    assert 0.8 * expected <= waited <= expected + 0.5, waited
    # normal: by count, at once
    with SimulatedPeer(behaviour="normal", time_scale=SCALE) as peer, RawClient(peer.address) as c:
        c.send(ec_request())
        c.read(1)
        c.send(cp_request(window=2))
        c.read(1)
        start = time.monotonic()
        c.send(*(user_message_bytes(peer.identifier, n) for n in (1, 2)))
        c.read(1, timeout=5.0)
        assert time.monotonic() - start < 0.8 * expected


@pytest.mark.parametrize("name", BOUNDARY)
def test_the_project_initiator_delivers_everything_to_a_boundary_peer(name: str) -> None:
    with SimulatedPeer(behaviour=name, time_scale=SCALE) as peer:
        client = GUID(uuid.uuid4())
        initiator = Initiator(client, peer.identifier, config=SessionConfig(session_retry_connect=0.05))
        with InitiatorLink(initiator, peer.address, timeout=5.0) as link:
            deliveries = ["express"] * 4 + ["recoverable"] * 3 + ["transactional"] * 3
            for n, delivery in enumerate(deliveries):
                link.send_message(user_message(client, peer.identifier, f"{name}-{n}".encode()), delivery)
            ok = link.run_until(lambda: len(set(link.acked)) == len(deliveries), 20.0)
            assert ok, (name, len(set(link.acked)), [v.rule_id for v in link.violations])
            assert link.violations == [] and link.closes == []
            assert link.connections == 1
        assert peer.wait_for(lambda: len(peer.delivered) == len(deliveries), 5.0)
    assert peer.violations == []
    assert sorted(bytes(p.MessagePropertiesHeader.MessageBody) for p in peer.delivered) == sorted(
        f"{name}-{n}".encode() for n in range(len(deliveries))
    )


# ------------------------------------------------------------------- the acceptor corpus, live


def _free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_peer(name: str, port: int, ping_port: int) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "harness.cli", "peer", "--listen", f"127.0.0.1:{port}", "--ping-port", str(ping_port)]
    cmd += ["--behaviour", name, "--time-scale", str(SCALE), "--duration", "300"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # Python's start-up on a loaded machine: a bound on the machine
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(f"the peer did not start: {proc.communicate()}") from None
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the peer did not listen")


@pytest.mark.parametrize("name", BOUNDARY)
def test_the_acceptor_corpus_passes_against_the_project_peer_with_a_boundary_behaviour(
    name: str, tmp_path: Path
) -> None:
    port, ping_port = _free_port(), _free_port(socket.SOCK_DGRAM)
    peer = _start_peer(name, port, ping_port)
    try:
        report = tmp_path / "results.json"
        target = f"mqqb://127.0.0.1:{port}?ping={ping_port}&scale={SCALE}&tx-queue=1"
        run = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "cases/mqqb", "--target", target, "--json", str(report)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    finally:
        peer.send_signal(signal.SIGTERM)
        try:
            peer.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            peer.kill()
            peer.communicate()
    results = _outcomes(report)
    bad = {case: outcome for case, outcome in results.items() if outcome not in ("passed", "not_applicable")}
    assert run.returncode == 0 and not bad, (run.returncode, bad, run.stdout[-3000:], run.stderr[-2000:])
    acceptor_cases = [case for case in results if case.startswith("mqqb.acceptor.")]
    assert acceptor_cases and all(results[case] == "passed" for case in acceptor_cases), results


def _outcomes(report: Path) -> dict[str, str]:
    """case id -> outcome from the run's JSON report (one entry per case variant)."""
    if not report.exists():
        return {}
    data = json.loads(report.read_text())
    return {str(row["case_id"]): str(row["outcome"]) for row in data["results"]}


def test_packets_module_still_parses_a_direct_order_ack() -> None:
    """An OrderAck addressed TCP:<ip>\\PRIVATE$\\order_queue$ is identified as an OrderAck ([MS-MQQB]
    3.1.5.1.1, 2.2.4), so an initiator reading it finds its acknowledgment."""
    headers = sp.order_ack(1, 1, source_qm=CLIENT, destination="TCP:10.0.0.1\\PRIVATE$\\order_queue$")
    assert packets.parse(packets.build(headers)).kind.name == "OrderAck"
