"""The acceptor end of an MSMQ binary session (sans-IO), with fault-injection behaviours.

Renders [MS-MQQB] 3.1.5.10 Handling an Incoming Transport Connection, 3.1.5.3.1 Receiving an
EstablishConnection Request Packet, 3.1.5.4.1 Receiving a ConnectionParameters Request Packet,
3.1.5.8 Receiving a UserMessage Packet (3.1.5.8.1 Duplicate Detection, 3.1.5.8.2 General
Processing, 3.1.5.8.4 SessionHeader Processing, 3.1.5.8.6 Transactional Message Processing,
3.1.5.8.7 Recoverable Message Processing), the Session Ack Send Timer (3.1.2.5, 3.1.6.4), the
Order Ack Send Timer (3.1.2.7, 3.1.6.9) with 3.1.7.17 Send Transactional Acknowledgment (OrderAck
only), 3.1.7.7 Receive Ping Request (the Ping Response of 2.1.2 / 2.2.7), and the rules of 3.1.5.1
and "any packet in the wrong state closes the session".  One
Acceptor object is one queue manager's listening side: queue-manager state (the
MessageIDHistoryTable of 3.1.1.3, the incoming transactional sequences) outlives each connection;
``connection_made`` starts a new session.  What the acceptor keeps of the wire is bounded by
constants, not by the packets or connections it sees: the MessageIDHistoryTable by its size, the
MessageIDs received on a session as ranges per source (3.1.5.8.1) and the state per remote queue
manager for a bounded number of them (:mod:`harness.session.msgids`); an identifier that fell out
of the bound is judged by no rule.
"""

from __future__ import annotations

import importlib
import re
import types
from collections import deque
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from construct import Container

import packets
from harness.session.actions import Action, Deliver, Send, SessionConfig, SessionState, Timer
from harness.session.core import (
    SessionEngine,
    TxSequenceChecker,
    check_cp_request,
    check_ec_request,
    check_internal_reserved,
    check_message_id,
    current_time,
    time_to_be_received_elapsed,
    tx_sequence_id,
)
from harness.session.messages import delivery_of
from harness.session.msgids import MAX_REMOTE_QUEUE_MANAGERS, Latest, Recent, SentIds
from harness.session.rules import RuleId
from harness.session.transitions import Role
from packets import GUID, NULL_GUID, Packet, PacketKind
from packets import session as sp

__all__ = [
    "BEHAVIOURS",
    "LONGEST_TIMER",
    "READING_BEHAVIOURS",
    "Acceptor",
    "AcceptorBehaviour",
    "boundary_behaviours",
    "named_behaviour",
    "ping_response",
]


@dataclass(frozen=True)
class AcceptorBehaviour:
    r"""How a simulated acceptor behaves; ``BEHAVIOURS`` names the usual ones.

    Two families: fault behaviours (the peer breaks or strains a rule, to check the initiator's
    reaction) and boundary-conformant ones (``boundary`` True: every choice is legal, each at an
    extreme the spec allows; ``sections`` name the sections that make it legal).  ``summary`` is the
    one line ``msmq-harness peer --list-behaviours`` prints.

    refuse: answer every EstablishConnection with CS=1 ([MS-MQQB] 3.1.5.3.1).
    close_after_packets: close the connection after receiving this many packets on it.  A pending
        OrderAck goes out first: the Order Ack Send Timer is restarted by every transactional
        message that arrives within MaximumOrderAckDelay of LastOrderAckSendTime, which Session
        Initialization sets to the session's start ([MS-MQQB] 3.1.5.8.6, 3.1.3.2), so a session cut
        sooner than that under a steady stream of transactional messages would never acknowledge one
        and the sender would resend the same messages on every connection.
    reply_signature / reply_version: BaseHeader.Signature / VersionNumber written into every reply.
    reply_padding: the EC reply's 512 Padding bytes (0x5A is correct).
    session_ack: "normal" (by message count and on the Session Ack Send Timer, 3.1.1.6.1),
        "timer" (only when the Session Ack Send Timer expires, 3.1.6.4, and when the
        RecoverableMsgAckFlags are full, 3.1.5.8.7: the latest the spec allows), "delayed" (only on
        the timer, whose duration is multiplied by ``ack_delay_factor``: by default later than the
        initiator's first Session Ack Wait Timer expiry, before its second, [MS-MQQB] 3.1.6.3) or
        "missing" (never).
    order_ack: send OrderAcks (3.1.6.9) at all.
    window_size: WindowSize advertised in the CP response and every SessionHeader.
    garbage_reply: answer the EstablishConnection request with these bytes instead of a packet.
    read_rate: a slow reader: the peer reads at most this many bytes per second from each
        connection (in bursts of ``read_rate // 20`` bytes, 20 a second) and keeps a receive buffer
        of ``receive_buffer`` bytes, so that a fast sender meets TCP back-pressure and every
        acknowledgment comes as late as the reading lets it (the session engine is unchanged:
        the transport, harness.peers.server, does the pacing).
    ping: how Ping Requests ([MS-MQQB] 2.1.2) are answered (3.1.7.7): "answer" (RF set only when
        ``refuse`` is), "refuse" (RF set: the acceptor will not accept a connection) or "silent"
        (no Ping Response at all).  Only Ping Requests: the TCP session is served as usual.
    longest_timers: the implementation-dependent timers of the acceptor, Session Initialization
        (3.1.2.1 <43>) and Session Cleanup (3.1.2.2 <44>), run :data:`LONGEST_TIMER` seconds (the
        spec sets no upper bound; the largest count of milliseconds a 32-bit field holds).
    order_ack_queue: how an OrderAck addresses order_queue$ (2.2.4 allows either): "private"
        (UserHeader.Flags.DQ 0x3, PrivateQueueIdentifier 0x00000004) or "direct" (DQ 0x7,
        ``TCP:<initiator address>\PRIVATE$\order_queue$``; private when the address is unknown).
    base_reserved: BaseHeader.Reserved of every packet sent ([MS-MQMQ] 2.2.19.1: "can be set to any
        arbitrary value when sent and MUST be ignored on receipt"); None: 0.
    ack_overshoot: every SessionAck's AckSequenceNumber this many beyond the UserMessages received
        (a fault: the initiator's 3.1.5.5.1 check of an acknowledgment beyond what it sent).

    The acceptor's reading of each [MS-MQQB] ``interpretation`` of cases/requirements.yaml it
    renders (the first alternative, the reference's, by default; the behaviours named after the
    other readings set one each, examples/readings/mqqb.py):

    null_server_guid: MQQB-2.2.1-CS-NULL-SERVERGUID, "accepted" (3.1.5.3.1: a GUID_NULL ServerGuid
        is valid, CS 0) or "refused" (2.2.1: CS set when ServerGuid is zero).
    ping_flag_bits: MQQB-2.2.7-FLAG-BITS, the bits of Ping.Flags that carry (RC, RF) in a Ping
        Response: (0, 1) as the example frames' bytes show, (14, 15) as the diagram draws them.
    signature_order: MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER, "little-endian" (the bytes 52 4F 49 4C
        are invalid) or "big-endian" (they are the valid Signature, taken on receipt; with
        ``reply_signature`` 0x4C494F52 the replies carry them too).
    recoverable_ack: MQQB-3.1.6.4-RECOVERABLE-ACK-BASE (and MQQB-3.1.1.6.1-sender-ack-fields),
        "lowest-persisted", "zero-base" or "zero-with-offset-bits".
    timeout_ranges: MQQB-2.2.2.1-recoverable-ack-timeout and -ack-timeout, "outside-is-malformed"
        (a ConnectionParameters request outside 2.2.2.1's ranges is discarded and the session
        closed, 3.1.5.1.3) or "range-informative" (taken, clamped to the closest limit, unreported).
    final_ack: MQQB-3.1.5.7-final-ack-unknown, "same-session" (a FinalAck naming a message never
        sent on the session is the peer's fault, reported) or "any-session" (no fault, unreported).
    reading_hooks: python-only, (hook name, function) pairs that replace the Acceptor's reading
        hooks (``server_guid_valid``, ``recoverable_ack_fields``, ...) for this behaviour: each
        function is called with the Acceptor and the hook's arguments (examples/mutants).
    """

    name: str = "normal"
    refuse: bool = False
    close_after_packets: int | None = None
    reply_signature: int | None = None
    reply_version: int | None = None
    reply_padding: int = sp.RESPONSE_PADDING_BYTE
    session_ack: Literal["normal", "timer", "delayed", "missing"] = "normal"
    ack_delay_factor: float = 3.0
    order_ack: bool = True
    window_size: int | None = None
    garbage_reply: bytes | None = None
    read_rate: int | None = None
    receive_buffer: int | None = None
    ping: Literal["answer", "refuse", "silent"] = "answer"
    longest_timers: bool = False
    order_ack_queue: Literal["private", "direct"] = "private"
    base_reserved: int | None = None
    ack_overshoot: int = 0
    null_server_guid: Literal["accepted", "refused"] = "accepted"
    ping_flag_bits: tuple[int, int] = (0, 1)
    signature_order: Literal["little-endian", "big-endian"] = "little-endian"
    recoverable_ack: Literal["lowest-persisted", "zero-base", "zero-with-offset-bits"] = "lowest-persisted"
    timeout_ranges: Literal["outside-is-malformed", "range-informative"] = "outside-is-malformed"
    final_ack: Literal["same-session", "any-session"] = "same-session"
    reading_hooks: tuple[tuple[str, Callable[..., Any]], ...] = ()
    boundary: bool = False
    readings: tuple[tuple[str, str], ...] = ()  # a reading behaviour's (interpretation id, alternative)
    summary: str = ""
    sections: tuple[str, ...] = ()


LONGEST_TIMER = 0xFFFFFFFF / 1000  # seconds: 0xFFFFFFFF milliseconds, about 49.7 days
MAX_WINDOW = 0xFFFF  # WindowSize: [MS-MQQB] 2.2.2.1 0x0000-0xFFFF, [MS-MQMQ] 2.2.20.4 0x0001-0xFFFF
MIN_WINDOW = 0x0001

SLOW_READER_RATE = 5000  # bytes per second of the behaviour "slow-reader"
SLOW_READER_BUFFER = 4096  # SO_RCVBUF of a slow reader's connections (the kernel may round it up)

_LATE_ACK_SECTIONS = ("MS-MQQB 3.1.1.6.1", "MS-MQQB 3.1.5.8.2", "MS-MQQB 3.1.5.8.7", "MS-MQQB 3.1.6.4",
                      "MS-MQQB 3.1.5.8.6", "MS-MQQB 3.1.2.7", "MS-MQQB 3.1.3.2")  # fmt: skip
_WINDOW_SECTIONS = ("MS-MQQB 2.2.2.1", "MS-MQMQ 2.2.20.4", "MS-MQQB 3.1.5.4.1", "MS-MQQB 3.1.6.4")
_BOUNDARY_ALL_SECTIONS = ("MS-MQQB 3.1.2.1", "MS-MQQB 3.1.2.2", "MS-MQQB 2.2.4", "MS-MQMQ 2.2.19.1")

BEHAVIOURS: dict[str, AcceptorBehaviour] = {
    b.name: b
    for b in (
        AcceptorBehaviour(summary="acknowledges by message count and on the Session Ack Send Timer"),
        AcceptorBehaviour("refuse", refuse=True, summary="answers every EstablishConnection with CS=1"),
        AcceptorBehaviour("close-after-50", close_after_packets=50, summary="closes after 50 packets"),
        AcceptorBehaviour("bad-signature", reply_signature=0x4C494F52, summary="replies with a wrong Signature"),
        AcceptorBehaviour("bad-version", reply_version=0x20, summary="replies with VersionNumber 0x20"),
        AcceptorBehaviour("bad-padding", reply_padding=0x00, summary="EC reply Padding 0x00, not 0x5A"),
        AcceptorBehaviour("delayed-ack", session_ack="delayed", summary="SessionAcks 3x later than the timer"),
        AcceptorBehaviour("missing-ack", session_ack="missing", summary="never sends a SessionAck"),
        AcceptorBehaviour("missing-order-ack", order_ack=False, summary="never sends an OrderAck"),
        AcceptorBehaviour("window-1", window_size=1, summary="advertises WindowSize 1"),
        AcceptorBehaviour(
            "ack-beyond-sent", ack_overshoot=1, summary="SessionAcks acknowledge one UserMessage more than received"
        ),
        AcceptorBehaviour("garbage-reply", garbage_reply=bytes(range(256)) * 2, summary="answers EC with garbage"),
        AcceptorBehaviour(
            "slow-reader",
            read_rate=SLOW_READER_RATE,
            receive_buffer=SLOW_READER_BUFFER,
            summary=f"reads {SLOW_READER_RATE} bytes per second",
        ),
        AcceptorBehaviour("ping-refuse", ping="refuse", summary="Ping Responses with RF set"),
        AcceptorBehaviour("ping-silent", ping="silent", summary="no Ping Response"),
        # Boundary-conformant: every choice legal, each at an extreme the spec allows.
        AcceptorBehaviour(
            "late-ack",
            session_ack="timer",
            boundary=True,
            summary="SessionAck only when the Session Ack Send Timer expires (AckTimeout/2 after the first "
            "unacknowledged message, RecoverableAckTimeout after the first recoverable one), never by count; "
            "OrderAck only when the Order Ack Send Timer expires (500 ms after the last transactional message, "
            "up to MaximumOrderAckDelay 10 s)",
            sections=_LATE_ACK_SECTIONS,
        ),
        AcceptorBehaviour(
            "window-min",
            window_size=MIN_WINDOW,
            boundary=True,
            summary="WindowSize 0x0001 in the ConnectionParameters response and every SessionHeader (the "
            "smallest value legal in both)",
            sections=_WINDOW_SECTIONS,
        ),
        AcceptorBehaviour(
            "window-max",
            window_size=MAX_WINDOW,
            boundary=True,
            summary="WindowSize 0xFFFF in the ConnectionParameters response and every SessionHeader",
            sections=_WINDOW_SECTIONS,
        ),
        AcceptorBehaviour(
            "longest-timers",
            longest_timers=True,
            boundary=True,
            summary="Session Initialization and Session Cleanup Timers of 0xFFFFFFFF ms (implementation-dependent, "
            "no upper bound); the announced timeouts are echoes (3.1.5.4.1), so nothing else to stretch",
            sections=("MS-MQQB 3.1.2.1", "MS-MQQB 3.1.2.2", "MS-MQQB 3.1.5.4.1"),
        ),
        AcceptorBehaviour(
            "order-ack-direct",
            order_ack_queue="direct",
            boundary=True,
            summary="OrderAck addressed with the direct format name TCP:<initiator>\\PRIVATE$\\order_queue$ "
            "(UserHeader.Flags.DQ 0x7) instead of the private queue id 4",
            sections=("MS-MQQB 2.2.4", "MS-MQQB 3.1.5.1.1", "MS-MQMQ 2.2.18.1.5.2"),
        ),
        AcceptorBehaviour(
            "base-reserved",
            base_reserved=0xA5,
            boundary=True,
            summary="BaseHeader.Reserved 0xA5 in every packet it sends (any value is legal when sent and "
            "MUST be ignored on receipt); every other reserved field exact",
            sections=("MS-MQMQ 2.2.19.1",),
        ),
        AcceptorBehaviour(
            "boundary-all",
            session_ack="timer",
            window_size=MIN_WINDOW,
            longest_timers=True,
            order_ack_queue="direct",
            base_reserved=0xA5,
            boundary=True,
            summary="late-ack, window-min, longest-timers, order-ack-direct and base-reserved at once",
            sections=tuple(dict.fromkeys(_LATE_ACK_SECTIONS + _WINDOW_SECTIONS + _BOUNDARY_ALL_SECTIONS)),
        ),
    )
}


def boundary_behaviours() -> list[str]:
    """The names of the boundary-conformant behaviours, in table order."""
    return [name for name, b in BEHAVIOURS.items() if b.boundary]


#: Reading behaviours: each takes, for an [MS-MQQB] ``interpretation`` of cases/requirements.yaml,
#: another reading than the reference's (its first alternative), and is named after that reading;
#: ``readings`` names the interpretations and the alternative (two interpretations that share
#: their readings share the behaviour), ``sections`` the sentences that make it legal.  Legal
#: under that reading only, so neither boundary behaviours (the corpus grades the reading
#: non-strict) nor faults (no rule is broken): examples/readings/mqqb.py runs each as
#: ``reference?peer=NAME``.
READING_BEHAVIOURS: dict[str, AcceptorBehaviour] = {
    b.name: b
    for b in (
        AcceptorBehaviour(
            "zero-valid",
            window_size=0,
            readings=(("MQQB-2.2.2.1-WINDOWSIZE-ZERO", "zero-valid"),),
            summary="advertises WindowSize 0 in its ConnectionParameters response and SessionHeaders (2.2.2.1: "
            "the field's valid range is 0x0000 to 0xFFFF)",
            sections=("MS-MQQB 2.2.2.1",),
        ),
        AcceptorBehaviour(
            "null-refused",
            null_server_guid="refused",
            readings=(("MQQB-2.2.1-CS-NULL-SERVERGUID", "null-refused"),),
            summary="answers an EstablishConnection whose ServerGuid is GUID_NULL with CS set (2.2.1: CS is set "
            "when ServerGuid is zero); its own GUID is accepted",
            sections=("MS-MQQB 2.2.1",),
        ),
        AcceptorBehaviour(
            "high-bits",
            ping_flag_bits=(14, 15),
            readings=(("MQQB-2.2.7-FLAG-BITS", "high-bits"),),
            summary="Ping Responses carry RC and RF in bits 14 and 15 of Flags, after the fourteen unused bits, "
            "as the diagram of 2.2.7 draws them",
            sections=("MS-MQQB 2.2.7", "MS-MQQB 3.1.7.7"),
        ),
        AcceptorBehaviour(
            "big-endian",
            reply_signature=0x4C494F52,
            signature_order="big-endian",
            readings=(("MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER", "big-endian"),),
            summary="BaseHeader.Signature 0x524F494C written in big-endian order (bytes 52 4F 49 4C) in every "
            "packet it sends, and taken as valid on receipt (the little-endian bytes too)",
            sections=("MS-MQQB 3.1.5.1.2",),
        ),
        AcceptorBehaviour(
            "zero-base",
            recoverable_ack="zero-base",
            readings=(
                ("MQQB-3.1.6.4-RECOVERABLE-ACK-BASE", "zero-base"),
                ("MQQB-3.1.1.6.1-sender-ack-fields", "zero-base"),
            ),
            summary="SessionHeaders with RecoverableMsgAckSeqNumber 0 (3.1.1.6.1) and bit k of "
            "RecoverableMsgAckFlags for recoverable message k (MS-MQMQ 2.2.20.4)",
            sections=("MS-MQQB 3.1.1.6.1", "MS-MQMQ 2.2.20.4"),
        ),
        AcceptorBehaviour(
            "zero-with-offset-bits",
            recoverable_ack="zero-with-offset-bits",
            readings=(
                ("MQQB-3.1.6.4-RECOVERABLE-ACK-BASE", "zero-with-offset-bits"),
                ("MQQB-3.1.1.6.1-sender-ack-fields", "zero-with-offset-bits"),
            ),
            summary="SessionHeaders with RecoverableMsgAckSeqNumber 0 (3.1.1.6.1) and the RecoverableMsgAckFlags "
            "bit of 3.1.5.8.7 (bit 0 for the first message not acknowledged yet)",
            sections=("MS-MQQB 3.1.1.6.1", "MS-MQQB 3.1.5.8.7"),
        ),
        AcceptorBehaviour(
            "range-informative",
            timeout_ranges="range-informative",
            readings=(
                ("MQQB-2.2.2.1-recoverable-ack-timeout", "range-informative"),
                ("MQQB-2.2.2.1-ack-timeout", "range-informative"),
            ),
            summary="takes a ConnectionParameters request whose RecoverableAckTimeout or AckTimeout lies outside "
            "the ranges of 2.2.2.1 (echoed, its timers clamped to the closest limit) and goes on",
            sections=("MS-MQQB 2.2.2.1", "MS-MQQB 3.1.5.4.1"),
        ),
        AcceptorBehaviour(
            "any-session",
            final_ack="any-session",
            readings=(("MQQB-3.1.5.7-final-ack-unknown", "any-session"),),
            summary="a FinalAck naming a message it never sent on the session is no fault (3.1.5.7 looks the "
            "message up in the OutgoingMessageTable and the AwaitingFinalACKTable): not reported",
            sections=("MS-MQQB 3.1.5.7", "MS-MQQB 3.1.1.7.3"),
        ),
    )
}


def named_behaviour(name: str) -> AcceptorBehaviour:
    """A named behaviour; ``close-after-<N>``, ``window-<N>``, ``window-<N>-late-ack`` (WindowSize N,
    SessionAcks on the Session Ack Send Timer only, as ``late-ack``) and ``slow-reader-<N>`` (N bytes
    per second, N > 0) take any N; ``pkg.module:NAME`` is the AcceptorBehaviour that module defines
    under NAME (examples/mutants)."""
    if name in BEHAVIOURS:
        return BEHAVIOURS[name]
    if name in READING_BEHAVIOURS:
        return READING_BEHAVIOURS[name]
    module, colon, attr = name.partition(":")
    if colon and module and attr:
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            found = None
        if isinstance(found, AcceptorBehaviour):
            return found
    m = re.fullmatch(r"(close-after|window|slow-reader)-(\d+)", name)
    if m:
        n = int(m.group(2))
        if m.group(1) == "close-after":
            return AcceptorBehaviour(name, close_after_packets=n)
        if m.group(1) == "slow-reader" and n > 0:
            return AcceptorBehaviour(name, read_rate=n, receive_buffer=SLOW_READER_BUFFER)
        if m.group(1) == "window":
            return AcceptorBehaviour(name, window_size=n)
    m = re.fullmatch(r"window-(\d+)-late-ack", name)
    if m:
        return AcceptorBehaviour(name, window_size=int(m.group(1)), session_ack="timer")
    known = ", ".join(sorted([*BEHAVIOURS, *READING_BEHAVIOURS]))
    raise KeyError(f"unknown acceptor behaviour {name!r}; known: {known}")


def ping_response(datagram: bytes, identifier: GUID, behaviour: AcceptorBehaviour | None = None) -> bytes | None:
    """[MS-MQQB] 3.1.7.7 Receive Ping Request: the Ping Response datagram to send back to the
    request's source address and port (2.1.2), or None when there is none to send: a datagram that
    is no Ping Packet (2.2.7) or whose Signature is not 0x5548 is ignored, and a "silent" behaviour
    never answers.  Response.Flags.RF is set when the acceptor will not accept a connection,
    Flags.RC and Cookie are the request's, QMGuid is QueueManager.Identifier."""
    behaviour = behaviour or AcceptorBehaviour()
    if behaviour.ping == "silent":
        return None
    try:
        request = packets.parse_ping(datagram, strict=False)
    except packets.PacketError:
        return None
    ping = request.headers.get("Ping")
    if ping is None or ping.Signature != sp.PING_SIGNATURE:
        return None
    refuse = behaviour.refuse or behaviour.ping == "refuse"
    response = packets.build_ping(sp.ping(ping.Cookie, identifier, rc=bool(ping.Flags.RC), rf=refuse))
    if behaviour.ping_flag_bits == (0, 1):
        return response
    # MQQB-2.2.7-FLAG-BITS: RC and RF where this behaviour reads the diagram to put them
    rc_bit, rf_bit = behaviour.ping_flag_bits
    flags = (int(ping.Flags.RC) << rc_bit) | (int(refuse) << rf_bit)
    return flags.to_bytes(2, "little") + response[2:]


class Acceptor(SessionEngine):
    """The acceptor ([MS-MQQB] 3.1.5.10): answers EC and CP, accepts UserMessages, acknowledges.

    Public events: ``connection_made(remote_address)``, ``receive_data(bytes)``,
    ``timer_fired(name)``, ``connection_lost()``; each returns the actions to perform.  Accepted
    messages come out as :class:`Deliver` actions (and in ``delivered``).  ``wall_clock`` (seconds
    since 1970, UTC) is CURRENT_TIME for message expiration: an expired UserMessage is ignored
    ([MS-MQMQ] 2.2.19.1) and reported as the sender's (3.1.7.1.2); one whose TimeToBeReceived has
    elapsed is not delivered (2.2.19.2).
    """

    role = "acceptor"
    peer_direction = "c2s"

    ROLE: Role = "acceptor"  # its rows of the transition table (harness.session.transitions)

    def __init__(
        self,
        identifier: GUID | bytes | str,
        behaviour: AcceptorBehaviour | str | None = None,
        *,
        config: SessionConfig | None = None,
        clock: Callable[[], float] = lambda: 0.0,
        wall_clock: Callable[[], float] | None = None,
        message_id_history_size: int = 1 << 16,
        keep: int | None = None,
    ) -> None:
        super().__init__(identifier, config, clock, wall_clock)
        if keep is not None:  # python-only: hold only the last ``keep`` violations and delivered packets
            self.violations = deque(maxlen=keep)
        if isinstance(behaviour, str):
            behaviour = named_behaviour(behaviour)
        self.behaviour = behaviour or AcceptorBehaviour()
        for hook, function in self.behaviour.reading_hooks:  # python-only: another answer at a reading hook
            if not callable(getattr(self, hook, None)):
                raise AttributeError(f"behaviour {self.behaviour.name}: the Acceptor has no hook {hook!r}")
            setattr(self, hook, types.MethodType(function, self))
        if self.behaviour.longest_timers:  # 3.1.2.1 <43>, 3.1.2.2 <44>: implementation-dependent
            self.config = replace(self.config, session_initialization=LONGEST_TIMER, session_cleanup=LONGEST_TIMER)
        self.remote_address = ""  # the initiator's IP address, when the transport knows it
        # Queue manager state (3.1.1.3), kept across sessions.
        self.MessageIDHistoryTable: dict[tuple[bytes, int], float] = {}
        self.message_id_history_size = message_id_history_size
        # Per remote queue manager: [IncomingTxSequenceID, IncomingTxSequenceNumber] (3.1.1.5), for
        # at most MAX_REMOTE_QUEUE_MANAGERS of them, the least recently used forgotten (met again
        # as a queue manager never seen: a new sequence is accepted, one met mid-way is not).
        self.incoming_tx: dict[bytes, list[int]] = Recent(MAX_REMOTE_QUEUE_MANAGERS)
        self.TxMessageRejectCount = 0
        self.LastOrderAckSendTime = 0.0
        # python-only: the latest delivered packets (each was handed out as a Deliver action)
        self.delivered: MutableSequence[Packet] = Latest() if keep is None else deque(maxlen=keep)
        self.duplicates_discarded = 0
        self.time_to_be_received_elapsed = 0  # accepted, but removed from the queue at once (2.2.19.2)
        self.connections = 0
        self._ec_request: Container | None = None
        self._refused = False
        self._order_ack_ordinal = 0
        self.tx_checker = TxSequenceChecker()  # what the initiators' TransactionHeaders revealed (3.1.1.5)
        self._session_message_ids = SentIds()  # (SourceQueueManager, MessageID) received this session
        self._window_reported = False

    # -- readings: the acceptor's reading of each interpretation (AcceptorBehaviour) ---------------

    def server_guid_valid(self, server: GUID) -> bool:
        """MQQB-2.2.1-CS-NULL-SERVERGUID: whether an EstablishConnection request naming ``server`` as
        ServerGuid is valid (answered with CS 0).  3.1.5.3.1: valid when it is
        QueueManager.Identifier or GUID_NULL (the reference, null-accepted); 2.2.1: CS is set when
        it "is zero or not equal to the receiving queue manager's GUID" (null-refused)."""
        if server.is_null:
            return self.behaviour.null_server_guid == "accepted"
        return server == self.identifier

    def accepts_byte_swapped_signature(self) -> bool:
        """MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER, as the behaviour reads it (``signature_order``)."""
        return self.behaviour.signature_order == "big-endian"

    def field_rule_tolerated(self, rule_id: str) -> bool:
        """MQQB-2.2.2.1-recoverable-ack-timeout, -ack-timeout: a ConnectionParameters request outside
        the ranges of 2.2.2.1 is taken under the behaviour's ``timeout_ranges`` range-informative."""
        return self.behaviour.timeout_ranges == "range-informative" and rule_id in (
            RuleId.MQQB_2_2_2_1_RECOVERABLE_ACK_TIMEOUT,
            RuleId.MQQB_2_2_2_1_ACK_TIMEOUT,
        )

    def recoverable_ack_fields(self, lowest: int, flags: int) -> tuple[int, int]:
        """MQQB-3.1.6.4-RECOVERABLE-ACK-BASE, as the behaviour reads it (``recoverable_ack``): bit j
        of the reference's ``flags`` stands for recoverable message ``lowest`` + j."""
        reading = self.behaviour.recoverable_ack
        if reading == "zero-base":  # base 0, bit k for message k ([MS-MQMQ] 2.2.20.4)
            return 0, (flags << lowest) & 0xFFFFFFFF if flags else 0
        if reading == "zero-with-offset-bits":  # base 0, the bit 3.1.5.8.7 sets
            return 0, flags
        return lowest, flags

    def reports_unknown_final_ack(self) -> bool:
        """MQQB-3.1.5.7-final-ack-unknown: whether a FinalAck naming a message never sent on the
        session is the peer's fault (same-session, the reference: reported) or none (any-session)."""
        return self.behaviour.final_ack == "same-session"

    def ping_request(self, datagram: bytes) -> bytes | None:
        """[MS-MQQB] 3.1.7.7 Receive Ping Request (see :func:`ping_response`)."""
        return ping_response(datagram, self.identifier, self.behaviour)

    # -- 3.1.5.10 -------------------------------------------------------------------------------

    def connection_made(self, remote_address: str = "") -> list[Action]:
        """[MS-MQQB] 3.1.5.10 Handling an Incoming Transport Connection: 3.1.3.2, WAITING_EC_MSG,
        (re)start the Session Initialization Timer.  ``remote_address``: the initiator's IP address
        (for a direct order queue name, 2.2.4), when known."""
        self.remote_address = remote_address
        self._session_initialization()
        if self.behaviour.window_size is not None:
            self.WindowSize = self.behaviour.window_size
        self.connections += 1
        self._ec_request = None
        self._refused = False
        self._session_message_ids = SentIds()
        self._window_reported = False
        self.LastOrderAckSendTime = self.clock()
        self._stop_timer(Timer.SessionInitialization)
        self._start_timer(Timer.SessionInitialization, self.config.session_initialization)
        return self._take()

    def _encode(self, headers: Container) -> bytes:
        b = self.behaviour
        if b.reply_signature is not None or b.reply_version is not None or b.base_reserved is not None:
            headers.BaseHeader = dict(headers.BaseHeader)
            if b.reply_signature is not None:
                headers.BaseHeader["Signature"] = b.reply_signature
            if b.reply_version is not None:
                headers.BaseHeader["VersionNumber"] = b.reply_version
            if b.base_reserved is not None:  # [MS-MQMQ] 2.2.19.1: any value when sent
                headers.BaseHeader["Reserved"] = b.base_reserved
        if b.ack_overshoot and headers.get("SessionHeader") is not None and headers.get("UserHeader") is None:
            headers.SessionHeader = dict(headers.SessionHeader)  # a SessionAck Packet (2.2.6)
            headers.SessionHeader["AckSequenceNumber"] = (
                headers.SessionHeader["AckSequenceNumber"] + b.ack_overshoot
            ) % (1 << 16)
        return packets.build(headers)

    def _after_packet(self, index: int) -> None:
        limit = self.behaviour.close_after_packets
        if limit is not None and self._transport and self.packets_received >= limit:
            if Timer.OrderAckSend in self._timers:
                self._stop_timer(Timer.OrderAckSend)
                self._send_order_ack()
            self._close(f"behaviour {self.behaviour.name}: closing after {limit} packets", "MS-MQQB 3.1.5.9")

    # -- 3.1.5.3.1 --------------------------------------------------------------------------------

    def _on_EstablishConnection(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.3 / 3.1.5.3.1 Receiving an EstablishConnection Request Packet."""
        if not self._accepts(PacketKind.EstablishConnection, packet, index):
            return
        req = packet.EstablishConnectionHeader
        if self._report(check_ec_request(packet, self.identifier), index):
            return
        self.RemoteQMGuid = GUID(req.ClientGuid)
        self._ec_request = packet.headers
        valid = self.server_guid_valid(GUID(req.ServerGuid))
        self._refused = self.behaviour.refuse or not valid
        if self.behaviour.garbage_reply is not None:
            self._out.append(Send(self.behaviour.garbage_reply, PacketKind.Unknown))
        else:
            reply = sp.establish_connection(
                req.ClientGuid,
                self.identifier,
                req.TimeStamp,
                refused=self._refused,
                ping_sent=not req.OperatingSystem.SE,
                padding=bytes([self.behaviour.reply_padding]) * sp.PADDING_SIZE,
            )
            self._send_packet(reply, PacketKind.EstablishConnection)
        self.SessionState = SessionState.WAITING_CP_MSG
        self._stop_timer(Timer.SessionInitialization)
        self._start_timer(Timer.SessionInitialization, self.config.session_initialization)

    # -- 3.1.5.4.1 --------------------------------------------------------------------------------

    def _on_ConnectionParameters(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.4 / 3.1.5.4.1 Receiving a ConnectionParameters Request Packet: adopt, echo, OPEN."""
        if not self._accepts(PacketKind.ConnectionParameters, packet, index):
            return
        if self._refused and not self.behaviour.refuse:  # the rule closes the rejected connection (3.1.5.3.1)
            self._violation(RuleId.MQQB_3_1_5_3_2_AFTER_REFUSAL, "ConnectionParameters after a CS=1 response", index)
            return
        cp = packet.ConnectionParametersHeader
        if self._report(check_cp_request(packet), index):
            return
        self.ReceivedWindowSize = max(1, int(cp.WindowSize))
        self.AckWaitTimeout = int(cp.AckTimeout)
        self.RecoverableAckSendTimeout = int(cp.RecoverableAckTimeout)
        if self.behaviour.timeout_ranges == "range-informative":  # taken, clamped to the closest limit
            self.AckWaitTimeout = min(max(self.AckWaitTimeout, sp.ACK_TIMEOUT_RANGE[0]), sp.ACK_TIMEOUT_RANGE[1])
            self.RecoverableAckSendTimeout = min(
                max(self.RecoverableAckSendTimeout, sp.RECOVERABLE_ACK_TIMEOUT_RANGE[0]),
                sp.RECOVERABLE_ACK_TIMEOUT_RANGE[1],
            )
        reply = sp.connection_parameters(cp.RecoverableAckTimeout, cp.AckTimeout, self.WindowSize)
        self._send_packet(reply, PacketKind.ConnectionParameters)
        self._stop_timer(Timer.SessionInitialization)
        self.SessionState = SessionState.OPEN

    # -- 3.1.5.8 ----------------------------------------------------------------------------------

    def _on_UserMessage(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.8 Receiving a UserMessage Packet, in the order of its steps: Duplicate
        Detection, General Processing, SessionHeader Processing, Message Expiration, Transactional
        Message Processing, Inserting a Message into a Local Queue.

        Every UserMessage Packet is counted (3.1.5.8.2) and, when recoverable, flagged for
        acknowledgment (3.1.5.8.7) before duplicate detection (3.1.5.8.1) discards it: a duplicate
        is a retransmission the sender counts as sent, and 3.1.5.5.5 compares those counts.  An
        expired message is counted and acknowledged too (General Processing precedes Message
        Expiration), then ignored ([MS-MQMQ] 2.2.19.1): not delivered, no OrderAck scheduled."""
        if not self._accepts(PacketKind.UserMessage, packet, index):
            return
        delivery = delivery_of(packet)
        self._count_received(packet, recoverable=packet.UserHeader.Flags.DM == 1)
        if self._check_sender(packet, index, delivery.name == "transactional"):
            return
        sh = packet.headers.get("SessionHeader")
        if sh is not None:  # 3.1.5.8.4
            self._process_session_header(sh, index)
            if not self._transport:
                return
        uh = packet.UserHeader
        key = (bytes(uh.SourceQueueManager), int(uh.MessageID))
        if self._expired(packet, index):  # Message Expiration: ignored by a receiver
            if delivery.name != "transactional":
                self._remember(key)  # the MessageIDHistoryEntry of General Processing
            self._ack_by_count()
            return
        accepted: bool
        if delivery.name == "transactional":
            accepted = self._transactional(packet)
        else:
            accepted = key not in self.MessageIDHistoryTable
            self._remember(key)
        if (
            accepted
            and self.wall_clock is not None
            and time_to_be_received_elapsed(packet, current_time(self.wall_clock()))
        ):
            self.time_to_be_received_elapsed += 1  # removed from the destination queue at once
        elif accepted:
            self.delivered.append(packet)
            self._out.append(Deliver(packet))
        else:
            self.duplicates_discarded += 1
        self._ack_by_count()

    def _ack_by_count(self) -> None:
        """3.1.1.6.1: "at intervals defined by an acknowledgment timer or based on message count and
        session window size": by count too unless the behaviour acknowledges on the timer only."""
        if self.behaviour.session_ack == "normal":
            self._maybe_ack_by_count()

    def _send_session_ack(self) -> None:
        super()._send_session_ack()
        self._window_reported = False  # a sender that runs past the window again is reported again

    def _check_sender(self, packet: Packet, index: int, transactional: bool) -> bool:
        """What a UserMessage Packet reveals of how the initiator numbers and sends it: MessageID
        (3.1.7.1.1), the window (3.1.7.1: UnAckedMessageCount < the WindowSize it announced in its
        ConnectionParameters request), one transmission per session (3.1.1.4), and its
        transactional sequence (3.1.1.5, 3.1.7.1.3).  Every finding is reported; True when one
        closed the session (none of these rules does)."""
        found = check_message_id(packet)
        unacked = self.counters.MessageReceivedCount - self._last_ack_sent
        if unacked > self.ReceivedWindowSize and not self._window_reported:
            self._window_reported = True  # once until the next SessionAck
            found.append(
                (
                    RuleId.MQQB_3_1_7_1_WINDOW_EXCEEDED,
                    f"{unacked} UserMessages unacknowledged, the initiator's WindowSize is {self.ReceivedWindowSize}",
                )
            )
        uh = packet.UserHeader
        if transactional:
            found += self.tx_checker.check(bytes(self.RemoteQMGuid), packet.TransactionHeader)
        elif self._session_message_ids.add(bytes(uh.SourceQueueManager), int(uh.MessageID)) is True:
            # exactly known received before on this session (None: no longer known either way)
            found.append((RuleId.MQQB_3_1_5_8_1_DUPLICATE, f"MessageID {int(uh.MessageID)} sent twice on this session"))
        return self._report(found, index)

    def _connection_lost(self) -> None:
        """The initiator closed the transport: inside a packet (3.1.5.1.3), or before OPEN (3.1.5.9)."""
        if self._splitter.buffered:
            self._violation(
                RuleId.MQQB_3_1_5_1_3_TRUNCATED,
                f"{self._splitter.buffered} bytes of an unfinished packet when the connection closed",
                self.packets_received,
            )
        b = self.behaviour
        replies_conform = (
            b.reply_signature is None
            and b.reply_version is None
            and b.garbage_reply is None
            and b.reply_padding == sp.RESPONSE_PADDING_BYTE
        )
        if self.SessionState is not SessionState.OPEN and not self._refused and replies_conform:
            self._violation(RuleId.MQQB_3_1_5_9_CLOSED_EARLY, f"closed in SessionState {self.SessionState.value}")

    def _remember(self, key: tuple[bytes, int]) -> None:
        """3.1.5.8.2: a MessageIDHistoryEntry for the message (oldest dropped when full)."""
        table = self.MessageIDHistoryTable
        table.pop(key, None)
        if len(table) >= self.message_id_history_size:
            del table[next(iter(table))]
        table[key] = self.clock()

    def _transactional(self, packet: Packet) -> bool:
        """[MS-MQQB] 3.1.5.8.6 Transactional Message Processing: schedule the OrderAck, accept only
        in order and exactly once.  The incoming sequence state is kept per sending queue manager
        across sessions (IncomingTransactionalTransferInfo, [MS-MQDMPR] 3.1.1.5)."""
        uh, th = packet.UserHeader, packet.TransactionHeader
        destination = GUID(uh.QueueManagerAddress)
        if not (destination.is_null or destination == self.identifier):
            return True  # an intermediate hop passes the TransactionHeader on (3.1.1.5)
        now = self.clock()
        if Timer.OrderAckSend in self._timers:
            if now - self.LastOrderAckSendTime < self.config.maximum_order_ack_delay:
                self._stop_timer(Timer.OrderAckSend)
                self._start_timer(Timer.OrderAckSend, self.config.order_ack_timeout)
        else:
            self._start_timer(Timer.OrderAckSend, self.config.order_ack_timeout)
        state = self.incoming_tx.setdefault(bytes(self.RemoteQMGuid), [0, 0])
        seq_id = tx_sequence_id(th.TxSequenceID)
        number, previous = int(th.TxSequenceNumber), int(th.PreviousTxSequenceNumber)
        accepted = (seq_id == state[0] and number > state[1] and previous <= state[1]) or (
            seq_id > state[0] and previous == 0
        )
        if not accepted:
            self.TxMessageRejectCount += 1
            return False
        self.TxMessageRejectCount = 0
        state[0], state[1] = seq_id, number
        return True

    # -- acknowledgments sent by the acceptor -------------------------------------------------------

    def _session_ack_send_timer(self) -> None:
        if self.behaviour.session_ack == "missing":
            return
        super()._session_ack_send_timer()

    def _start_timer(self, name: str, seconds: float) -> None:
        if name == Timer.SessionAckSend and self.behaviour.session_ack == "delayed":
            seconds *= self.behaviour.ack_delay_factor
        super()._start_timer(name, seconds)

    def _timer_OrderAckSend(self) -> None:
        """[MS-MQQB] 3.1.6.9 Order Ack Send Timer Event -> 3.1.7.17 with MQMSG_CLASS_ORDER_ACK."""
        self._send_order_ack()

    def _send_order_ack(self) -> None:
        """3.1.7.17 Send Transactional Acknowledgment (MQMSG_CLASS_ORDER_ACK) for the last accepted
        transactional message of the sending queue manager."""
        if self.SessionState != SessionState.OPEN or not self.behaviour.order_ack:
            return
        state = self.incoming_tx.get(bytes(self.RemoteQMGuid))
        if not state or state[1] == 0:
            return
        self._order_ack_ordinal += 1
        ack = sp.order_ack(
            state[0],
            state[1],
            source_qm=self.identifier,
            destination=self._order_queue(),
            destination_qm=self.RemoteQMGuid if not self.RemoteQMGuid.is_null else NULL_GUID,
            message_id=self._order_ack_ordinal,
        )
        self._send_packet(ack, PacketKind.OrderAck)
        self.counters.MessageSentCount += 1  # an OrderAck is an express UserMessage Packet (3.1.1.4)
        self.LastOrderAckSendTime = self.clock()

    def _order_queue(self) -> str | int:
        """UserHeader.DestinationQueue of an OrderAck ([MS-MQQB] 2.2.4): order_queue$ as private queue
        id 4 (DQ 0x3), or the direct name ``TCP:<ip>\\PRIVATE$\\order_queue$`` (DQ 0x7) where the
        IPv4/IPv6 address is the one of "the queue manager to receive the message", the initiator."""
        if self.behaviour.order_ack_queue == "direct" and self.remote_address:
            return f"TCP:{self.remote_address}\\PRIVATE$\\{sp.ORDER_QUEUE_NAME}"
        return sp.ORDER_QUEUE_PRIVATE_ID

    def _on_SessionAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.5: the initiator acknowledges the OrderAcks this acceptor sent."""
        if self.SessionState == SessionState.OPEN and self._report(check_internal_reserved(packet), index):
            return
        super()._on_SessionAck(packet, index)

    def _on_OrderAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.6: an acceptor has sent no transactional messages to acknowledge."""
        if not self._accepts(PacketKind.OrderAck, packet, index):
            return
        self._count_received(packet, recoverable=False)
        self._violation(
            RuleId.MQQB_3_1_5_6_ORDER_ACK_UNSENT,
            "OrderAck sent to the acceptor, which sent no transactional message",
            index,
        )
        self._ack_by_count()

    def _on_FinalAck(self, packet: Packet, index: int) -> None:
        """[MS-MQQB] 3.1.5.7 on an acceptor that sent no messages."""
        if not self._accepts(PacketKind.FinalAck, packet, index):
            return
        self._count_received(packet, recoverable=packet.UserHeader.Flags.DM == 1)
        if self.reports_unknown_final_ack():
            self._violation(
                RuleId.MQQB_3_1_5_7_FINAL_ACK_UNKNOWN, "FinalAck sent to the acceptor, which sent no message", index
            )
        self._ack_by_count()


def with_name(b: AcceptorBehaviour, name: str) -> AcceptorBehaviour:
    """A copy of ``b`` under another name (for matrices of behaviours)."""
    return replace(b, name=name)
