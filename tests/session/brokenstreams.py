"""Client byte streams built with ``packets.build`` only (no Initiator), one per initiator-side rule.

Each scenario is a list of steps: bytes to send to the acceptor, ``("timer", name)`` to fire one of
its timers, or ``CLOSE`` for the initiator closing the connection.  :func:`run` feeds a scenario to
a fresh :class:`Acceptor` and records both directions in order, ready for an :class:`Observer`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from construct import Container

import packets
from harness.session import Acceptor, RuleViolation, Send, Timer, user_message
from harness.session.actions import DeliveryClass
from packets import GUID, NULL_GUID
from packets import session as sp

INI = GUID("{11111111-2222-3333-4444-555555555555}")
ACC = GUID("{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}")
OTHER = GUID("{99999999-9999-9999-9999-999999999999}")
CLOSE = "close"
NOW = 1_700_000_000  # CURRENT_TIME (seconds since 1970) of the scenarios that run with a wall clock

Step = bytes | tuple[str, str] | str


def _with(headers: Container, path: str, value: object) -> Container:
    """Set a field by dotted path (flags objects are replaced through their make())."""
    *parents, name = path.split(".")
    obj = headers
    for p in parents:
        obj = obj[p]
    obj[name] = value
    return headers


def ec(server: GUID = NULL_GUID, *, client: GUID = INI, cs: bool = False, **fields: object) -> bytes:
    headers = sp.establish_connection(client, server, 1000, refused=cs)
    for path, value in fields.items():
        _with(headers, path.replace("__", "."), value)
    return packets.build(headers)


def cp(*, cs: bool = False, window: int = 64, rat: int = 0x1F4, at: int = 0x4E20, **fields: object) -> bytes:
    headers = sp.connection_parameters(rat, at, window, refused=cs)
    for path, value in fields.items():
        _with(headers, path.replace("__", "."), value)
    return packets.build(headers)


def sa(ack: int = 0, sent: int = 0, *, base: int = 0, flags: int = 0, rsent: int = 0, **fields: object) -> bytes:
    headers = sp.session_ack(ack, base, flags, sent, rsent)
    for path, value in fields.items():
        _with(headers, path.replace("__", "."), value)
    return packets.build(headers)


def um(
    message_id: int,
    delivery: str = "express",
    *,
    tx: tuple[int, int, int] = (1, 1, 0),
    session_header: Container | None = None,
) -> bytes:
    """A UserMessage Packet; ``tx`` is (TxSequenceID, TxSequenceNumber, PreviousTxSequenceNumber)."""
    headers = user_message(INI, ACC, b"m%d" % message_id, message_id=message_id, delivery=DeliveryClass(delivery))
    if delivery == "transactional":
        seq_id, number, previous = tx
        th = headers.TransactionHeader
        th.TxSequenceID = Container(Ordinal=seq_id & 0xFFFFFFFF, TimeStamp=seq_id >> 32)
        th.TxSequenceNumber, th.PreviousTxSequenceNumber = number, previous
    if session_header is not None:
        headers.BaseHeader.Flags = _sh_flags(headers)
        headers.SessionHeader = session_header
    return packets.build(headers)


def expired(message_id: int, age: int = 3600, ttrq: int = 60, delivery: str = "express") -> bytes:
    """A UserMessage sent ``age`` seconds before :data:`NOW` with BaseHeader.TimeToReachQueue ``ttrq``."""
    headers = user_message(
        INI, ACC, b"late", message_id=message_id, sent_time=NOW - age, delivery=DeliveryClass(delivery)
    )
    headers.BaseHeader.TimeToReachQueue = ttrq
    return packets.build(headers)


def _sh_flags(headers: Container) -> object:
    from packets.base import BaseHeaderFlags

    return BaseHeaderFlags.make(int(headers.BaseHeader.Flags), SH=1)


def session_header(ack: int, sent: int, rsent: int = 0) -> Container:
    return Container(
        AckSequenceNumber=ack,
        RecoverableMsgAckSeqNumber=0,
        RecoverableMsgAckFlags=0,
        UserMsgSequenceNumber=sent,
        RecoverableMsgSeqNumber=rsent,
        WindowSize=64,
        Reserved=0,
    )


def order_ack(seq_id: int = 1, number: int = 1) -> bytes:
    return packets.build(sp.order_ack(seq_id, number, source_qm=INI, destination_qm=ACC, message_id=900))


def final_ack() -> bytes:
    return packets.build(sp.final_ack(1, 1, 0, ACC, 77, source_qm=INI, destination_qm=ACC, message_id=901))


def bad_signature() -> bytes:
    data = bytearray(um(1))
    data[4:8] = b"XXXX"
    return bytes(data)


def malformed() -> bytes:
    """A UserMessage whose UserHeader.Flags.MP is 0 (it MUST always be 1, [MS-MQMQ] 2.2.19.2)."""
    headers = user_message(INI, ACC, b"x", message_id=3)
    from packets.user import UserHeaderFlags

    headers.UserHeader.Flags = UserHeaderFlags.make(int(headers.UserHeader.Flags), MP=0)
    headers.MessagePropertiesHeader = None
    return packets.build(headers)


def unknown_packet() -> bytes:
    headers = sp.session_ack()
    headers.InternalHeader.Flags = sp.InternalHeaderFlags.make(int(headers.InternalHeader.Flags), PT=0x5)
    return packets.build(headers)


HANDSHAKE: list[Step] = [ec(), cp()]


def _tx(*triples: tuple[int, int, int], first_id: int = 10) -> list[Step]:
    return [um(first_id + k, "transactional", tx=t) for k, t in enumerate(triples)]


@dataclass
class Scenario:
    steps: list[Step]
    behaviour: str = "normal"
    observable: bool = True  # the Observer sees it too (no timer involved)
    wall_clock: float | None = None  # CURRENT_TIME of the Acceptor (message expiration)


SCENARIOS: dict[str, Scenario] = {
    "MQQB-3.1.5.1.2-signature": Scenario([*HANDSHAKE, bad_signature()]),
    "MQQB-3.1.7.1.2-expired": Scenario([*HANDSHAKE, expired(1)], observable=False, wall_clock=NOW),
    "MQQB-3.1.5.1.3-malformed": Scenario([*HANDSHAKE, malformed()]),
    "MQQB-3.1.5.1.3-truncated": Scenario([*HANDSHAKE, um(1)[:40], CLOSE]),
    "MQQB-3.1.5.1.1-unknown-packet": Scenario([*HANDSHAKE, unknown_packet()]),
    "MQQB-2.2.1-reserved": Scenario([ec(InternalHeader__Reserved=7), cp()]),
    "MQQB-2.2.1-cs-flag": Scenario(
        [*HANDSHAKE, sa(InternalHeader__Flags=sp.InternalHeaderFlags.make(sp.PT_SESSION_ACK | 0x10))]
    ),
    "MQMQ-2.2.19.1-time-to-reach-queue": Scenario([*HANDSHAKE, sa(BaseHeader__TimeToReachQueue=60)]),
    "MQQB-2.2.2.1-recoverable-ack-timeout": Scenario([ec(), cp(rat=0x10)]),
    "MQQB-2.2.2.1-ack-timeout": Scenario([ec(), cp(at=0x10)]),
    "MQQB-2.2.2.1-reserved": Scenario([ec(), cp(ConnectionParametersHeader__Reserved=1)]),
    "MQQB-2.2.3.1-client-guid": Scenario([ec(client=NULL_GUID), cp()]),
    "MQQB-2.2.3.1-server-guid": Scenario([ec(OTHER)]),
    "MQQB-2.2.3.1-operating-system": Scenario(
        [ec(EstablishConnectionHeader__OperatingSystem=sp.OperatingSystemFlags.make(RE=0x20, SE=1))]
    ),
    "MQQB-2.2.3.1-reserved": Scenario([ec(EstablishConnectionHeader__Reserved=1), cp()]),
    "MQQB-3.1.5.3-wrong-state": Scenario([ec(), ec()]),
    "MQQB-3.1.5.4-wrong-state": Scenario([cp()]),
    "MQQB-3.1.5.5-wrong-state": Scenario([ec(), sa()]),
    "MQQB-3.1.5.6-wrong-state": Scenario([ec(), order_ack()]),
    "MQQB-3.1.5.7-wrong-state": Scenario([ec(), final_ack()]),
    "MQQB-3.1.5.8-wrong-state": Scenario([um(1)]),
    "MQQB-3.1.5.2.3-ec-request": Scenario([ec(cs=True), cp()]),
    "MQQB-3.1.5.3.2-after-refusal": Scenario([ec(OTHER), cp()]),
    "MQQB-3.1.5.3.2-cp-request": Scenario([ec(), cp(cs=True)]),
    "MQQB-3.1.5.5.5-count-mismatch": Scenario([*HANDSHAKE, um(1), sa(0, 5)]),
    "MQQB-3.1.5.5.1-ack-beyond-sent": Scenario([*HANDSHAKE, um(1), sa(3, 1)]),
    "MQQB-3.1.5.5.1-ack-regressed": Scenario(
        [*HANDSHAKE, *_tx((1, 1, 0)), ("timer", Timer.OrderAckSend), sa(1, 1, rsent=1), sa(0, 1, rsent=1)]
    ),
    "MQQB-3.1.5.5.3-ack-unsent-recoverable": Scenario([*HANDSHAKE, um(1), sa(0, 1, base=2)]),
    "MQQB-3.1.1.6.1-sender-ack-fields": Scenario([*HANDSHAKE, um(1), sa(0, 1, flags=1)]),
    "MQQB-3.1.5.6-order-ack-unsent": Scenario([*HANDSHAKE, order_ack()]),
    "MQQB-3.1.5.7-final-ack-unknown": Scenario([*HANDSHAKE, final_ack()]),
    "MQQB-3.1.7.1-window-exceeded": Scenario([ec(), cp(window=2), um(1), um(2), um(3)], "missing-ack"),
    "MQQB-3.1.7.1.1-message-id": Scenario([*HANDSHAKE, um(0)]),
    "MQQB-3.1.1.5-tx-sequence": Scenario([*HANDSHAKE, *_tx((1, 1, 0), (1, 3, 2))]),
    "MQMQ-2.2.20.5-tx-number": Scenario([*HANDSHAKE, *_tx((1, 0, 0))]),
    "MQQB-3.1.7.1.3-tx-previous": Scenario([*HANDSHAKE, *_tx((1, 1, 0), (1, 2, 2))]),
    "MQQB-3.1.1.5-prior-sequence": Scenario([*HANDSHAKE, *_tx((2, 1, 0), (1, 1, 0))]),
    "MQQB-3.1.1.5-new-sequence": Scenario([*HANDSHAKE, *_tx((1, 1, 0), (2, 2, 1))]),
    "MQQB-3.1.5.8.1-duplicate": Scenario([*HANDSHAKE, um(5), um(5)]),
    "MQQB-3.1.6.6-init-timeout": Scenario([ec(), ("timer", Timer.SessionInitialization)], observable=False),
    "MQQB-3.1.5.9-closed-early": Scenario([ec(), CLOSE]),
}

CONFORMANT: list[Step] = [
    *HANDSHAKE,
    *(um(n) for n in range(1, 6)),
    *(um(n, "recoverable") for n in (6, 7)),
    *_tx((1, 1, 0), (1, 2, 1), (1, 3, 2), first_id=8),
    ("timer", Timer.OrderAckSend),
    sa(1, 10, rsent=5),  # acknowledges the OrderAck; 10 UserMessages sent, 5 recoverable (3.1.1.4)
    um(11, session_header=session_header(1, 11, 5)),  # piggy-backed: UserMsgSequenceNumber counts itself
]


@dataclass
class Run:
    acceptor: Acceptor
    recording: list[tuple[str, bytes]] = field(default_factory=list)
    actions: list[object] = field(default_factory=list)

    @property
    def violations(self) -> list[RuleViolation]:
        return self.acceptor.violations


def run(
    steps: list[Step],
    behaviour: str = "normal",
    make: Callable[[], Acceptor] | None = None,
    wall_clock: float | None = None,
) -> Run:
    """Feed ``steps`` to a fresh Acceptor (CURRENT_TIME ``wall_clock`` when given); record client and
    server bytes in the order they flowed, and every action."""
    clock = (lambda: wall_clock) if wall_clock is not None else None
    a = make() if make else Acceptor(ACC, behaviour, wall_clock=clock)
    r = Run(a)

    def take(actions: Sequence[object]) -> None:
        r.actions.extend(actions)
        r.recording.extend(("server", act.data) for act in actions if isinstance(act, Send))

    take(a.connection_made())
    for step in steps:
        if isinstance(step, bytes):
            r.recording.append(("client", step))
            take(a.receive_data(step))
        elif step == CLOSE:
            take(a.connection_lost())
        else:
            take(a.timer_fired(step[1]))
    return r
