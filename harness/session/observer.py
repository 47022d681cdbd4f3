"""The passive observer: checks a recorded two-way MSMQ binary session against the session rules.

Renders, for a third party that only listens, the rules of [MS-MQQB] 3.1.5.1 (signature, format,
packet type), 3.1.5.2.3/3.1.5.3/3.1.5.4 (the EstablishConnection and ConnectionParameters exchange,
in order, echoed, CS set exactly when required, 2.2.3.1 response padding), 3.1.5.5 (SessionAck
counts, 3.1.5.5.5), 3.1.5.6/3.1.5.7 (OrderAck and FinalAck name messages that were sent, in
order, 3.1.1.6.2), 3.1.5.8 (no UserMessage before OPEN), 3.1.7.1 (the sender's window),
3.1.7.1.1/3.1.7.1.3/3.1.1.5 (MessageID, transactional sequence numbering), 3.1.7.1.2 (no expired
UserMessage is sent: [MS-MQMQ] 2.2.19.1 evaluated at the packet's capture time) and 3.1.5.9 (a
session that ends before OPEN, unless a violation that closes the session explains it, or inside
a packet).  The checks are the engines' own (``core.check_*``, ``core.TxSequenceChecker``) and
every finding is a rule of :data:`harness.session.rules.RULES`; whether a finding ends the
session is the rule's ``closes_session``, as for the engines: :attr:`Observer.closing` is the
first violation after which the spec has the receiving end close the session.

Feed the client's bytes (initiator -> acceptor) to :meth:`Observer.client_data` and the server's
to :meth:`Observer.server_data` in capture order, each with the capture timestamp of the bytes
(seconds since 1970, UTC; without one, message expiration is not checked), then call
:meth:`Observer.end`.  A caller that has already cut the streams into packets ([MS-MQMQ]
2.2.19.1 BaseHeader.PacketSize) and parsed them (``packets.parse(data, strict=False)``, as
:func:`harness.capture.framing.decode_pieces` does) feeds them to :meth:`Observer.packet` instead, and a
stream that could not be framed any further to :meth:`Observer.unframed`: the checks and their
results are the same, and no packet is parsed twice.

Per session the state is bounded by a constant, not by the number of packets: counts, per
transactional sequence its highest numbers, and the MessageIDs sent as ranges per source queue
manager (:class:`harness.session.msgids.SentIds`; an identifier it can no longer tell sent or
unsent is judged by neither 3.1.5.8.1 nor 3.1.5.7), the highest numbers of at most a bounded
number of transactional sequences (:class:`harness.session.msgids.Highest`), and what
``TxSequenceChecker`` learnt of at most a bounded number of sending queue managers
(:class:`harness.session.msgids.Recent`; one forgotten is met again as never seen, and 3.1.1.5 is
not judged on its past).  The violations found are the Observer's output and are all kept.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping

from construct import Container

from harness.session.actions import RuleViolation, SessionState
from harness.session.core import (
    CODEC_RULES,
    U16,
    Finding,
    TxSequenceChecker,
    check_cp_request,
    check_cp_response,
    check_ec_request,
    check_ec_response,
    check_expiry,
    check_internal_reserved,
    check_message_id,
    check_packet,
    check_session_header,
    current_time,
    tx_sequence_id,
)
from harness.session.msgids import Highest, SentIds
from harness.session.rules import RuleId, rule
from harness.session.transitions import (
    ESTABLISHMENT,
    ROLES,
    SENDS,
    START,
    TRANSITIONS,
    WRONG_STATE,
    Role,
    other_role,
    transition,
)
from packets import GUID, Packet, PacketError, PacketKind, StreamSplitter
from packets.base import SIGNATURE, VERSION_NUMBER

__all__ = ["Observer"]

C2S, S2C = "c2s", "s2c"

INITIATOR: Role = "initiator"
ACCEPTOR: Role = "acceptor"
_S = SessionState
_WHAT: dict[Role, str] = {INITIATOR: "request", ACCEPTOR: "response"}  # an establishment packet, by its sender
_ESTABLISHING = frozenset(kind for _, kind in ESTABLISHMENT)


def _phase_names() -> dict[tuple[SessionState, SessionState], str]:
    """The two ends' SessionState (initiator, acceptor) at each step of the establishment
    (harness.session.transitions.ESTABLISHMENT, from START: the initiator in WAITING_ECR_MSG from its
    connecting on, 3.1.5.2.3, the acceptor in WAITING_EC_MSG, 3.1.5.10), each pair named in one word
    for the evidence: ``start``; after a packet its kind's initials and ``sent`` (the initiator's
    request) or ``replied`` (the acceptor's response), ``ec-sent``; ``open`` once both ends are."""
    state = dict(START)
    names = {(state[INITIATOR], state[ACCEPTOR]): "start"}
    for sender, kind in ESTABLISHMENT:
        receiver = other_role(sender)
        after = transition(receiver, state[receiver], kind).next
        assert after is not None
        state[receiver] = after
        initials = "".join(c for c in kind.name if c.isupper()).lower()
        opened = all(s is _S.OPEN for s in state.values())
        step = f"{initials}-{'sent' if sender == INITIATOR else 'replied'}"
        names[(state[INITIATOR], state[ACCEPTOR])] = "open" if opened else step
    return names


_PHASES = _phase_names()


class _Side:
    """What one endpoint has sent on the session so far ([MS-MQQB] 3.1.1.4 counts, its window)."""

    __slots__ = (
        "acked_at",
        "dead",
        "direction",
        "last_ack",
        "message_ids",
        "order_acked",
        "recoverable_sent",
        "role",
        "sent",
        "splitter",
        "tx_sent",
        "window",
        "window_reported",
    )

    def __init__(self, direction: str, role: Role) -> None:
        self.direction = direction
        self.role = role  # the end that sends in this direction
        self.splitter = StreamSplitter()
        self.dead = False  # the stream could not be framed any further
        self.sent = 0  # UserMessage Packets (incl. OrderAck/FinalAck): MessageSentCount
        self.recoverable_sent = 0  # RecoverableMessageSentCount
        self.last_ack = 0  # the last AckSequenceNumber this endpoint sent
        self.acked_at = 0  # the other end's sent count this endpoint acknowledged last
        self.window = 0  # WindowSize this endpoint announced (0: none yet)
        self.window_reported = False
        self.message_ids = SentIds()  # (SourceQueueManager, MessageID) sent on this session, as ranges
        self.tx_sent = Highest()  # TxSequenceID -> highest TxSequenceNumber sent
        self.order_acked = Highest()  # TxSequenceID -> the number this endpoint OrderAcked last


_SENDERS = {C2S: "client", S2C: "server"}


def _checked(data: bytes, parsed: Packet | None) -> tuple[Packet | None, list[Finding]]:
    """:func:`harness.session.core.check_packet` of ``data`` whose parse is ``parsed`` (when not
    None: the packet is not parsed again).  The signature is checked on the bytes first, as
    check_packet does ([MS-MQQB] 3.1.5.1.2), then the packet's violations and kind (3.1.5.1.3,
    3.1.5.1.1)."""
    if parsed is None or len(data) < 16 or data[0] != VERSION_NUMBER or data[4:8] != _SIGNATURE:
        return check_packet(data)  # parses only when no packet was given
    if parsed.violations:  # every rule the packet breaks, each once (they all close: 3.1.5.1.3)
        by_rule: dict[str, list[str]] = {}
        for v in parsed.violations:
            by_rule.setdefault(CODEC_RULES.get(v.field_path, RuleId.MQQB_3_1_5_1_3_MALFORMED), []).append(str(v))
        return None, [(rule_id, "; ".join(found[:3])) for rule_id, found in by_rule.items()]
    if parsed.kind == _UNKNOWN:
        pt = parsed.headers.get("InternalHeader")
        what = f"InternalHeader.Flags 0x{int(pt.Flags):04X}" if pt is not None else "no InternalHeader"
        return None, [(RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET, what)]
    return parsed, []


_SIGNATURE = struct.pack("<I", SIGNATURE)  # BaseHeader.Signature's bytes on the wire (little-endian, 2.2)
_UNKNOWN = PacketKind.Unknown  # read once: an Enum member is a slow attribute of its class


class Observer:
    """Passive checker of one recorded session; ``violations`` lists everything found so far.

    ``acceptor``: the acceptor's QueueManager.Identifier when known (checks the request's
    ServerGuid, 2.2.3.1).  Packets are numbered from 0 across both directions in feed order.
    ``expiry_tolerance``: seconds a UserMessage may look expired at its capture time before it is
    reported as sent expired (the capture clock is neither end's clock; see
    :func:`harness.session.core.check_expiry`).
    """

    def __init__(self, acceptor: GUID | bytes | str | None = None, *, expiry_tolerance: int = 1) -> None:
        self.acceptor = GUID(acceptor) if acceptor is not None else None
        self.expiry_tolerance = expiry_tolerance
        self.violations: list[RuleViolation] = []
        self.closing: RuleViolation | None = None  # the first violation whose rule closes the session
        self.expired = 0  # UserMessages a receiver ignores as expired ([MS-MQMQ] 2.2.19.1)
        self._now: float | None = None  # capture time of the bytes being checked
        self.packets = 0
        # each end's SessionState, as the transition table moves it (harness.session.transitions)
        self.state: dict[Role, SessionState] = dict(START)
        self.refused = False
        self.client = _Side(C2S, INITIATOR)
        self.server = _Side(S2C, ACCEPTOR)
        self._ec_request_headers: Container | None = None
        self._cp_request_headers: Container | None = None
        self._tx = TxSequenceChecker()
        self._ended = False

    # -- feeding -----------------------------------------------------------------------------------

    def client_data(self, data: bytes, timestamp: float | None = None) -> list[RuleViolation]:
        """Bytes the initiator sent, in any fragmentation, captured at ``timestamp``."""
        return self._feed(self.client, data, timestamp)

    def server_data(self, data: bytes, timestamp: float | None = None) -> list[RuleViolation]:
        """Bytes the acceptor sent, in any fragmentation, captured at ``timestamp``."""
        return self._feed(self.server, data, timestamp)

    def packet(
        self, sender: str, data: bytes, packet: Packet | None = None, timestamp: float | None = None
    ) -> list[RuleViolation]:
        """One whole packet ``sender`` (``"client"``: the initiator, or ``"server"``) sent: ``data``
        as framed by BaseHeader.PacketSize, and ``packet`` what ``packets.parse(data, strict=False)``
        returned for it (parsed here when None), captured at ``timestamp``.

        Each sender's packets in stream order, both senders interleaved in capture order: the order
        :meth:`client_data` and :meth:`server_data` would complete them in.  Do not mix the two ways
        of feeding for one sender."""
        side = self._side(sender)
        if side.dead:
            return []
        self._now = timestamp
        return self._packet(side, data, packet)

    def unframed(self, sender: str, error: PacketError) -> list[RuleViolation]:
        """``sender``'s stream cannot be framed any further: ``error`` is what
        :class:`packets.StreamSplitter` raised (at the point :meth:`client_data` or
        :meth:`server_data` would have met it)."""
        side = self._side(sender)
        if side.dead:
            return []
        return self._unframed(side, error)

    def end(self, unfinished: Mapping[str, int] | None = None) -> list[RuleViolation]:
        """The recording ended (both directions closed): unfinished packets, a session never opened.

        ``unfinished``: for a sender fed by :meth:`packet`, the bytes of an incomplete packet left
        at the end of its stream (``{"client": n, "server": m}``)."""
        if self._ended:
            return []
        self._ended = True
        out: list[RuleViolation] = []
        for side in (self.client, self.server):
            left = side.splitter.buffered + (unfinished or {}).get(_SENDERS[side.direction], 0)
            if not side.dead and left:
                out += self._report(
                    side,
                    [(RuleId.MQQB_3_1_5_1_3_TRUNCATED, f"{left} bytes of an unfinished packet at the end")],
                    self.packets,
                )
        if self.packets and self.state[INITIATOR] is not _S.OPEN and not self.refused and self.closing is None:
            out += self._report(
                self.client, [(RuleId.MQQB_3_1_5_9_CLOSED_EARLY, f"the session ended in phase {self.phase}")]
            )
        return out

    def _feed(self, side: _Side, data: bytes, timestamp: float | None = None) -> list[RuleViolation]:
        if side.dead or not data:
            return []
        self._now = timestamp
        out: list[RuleViolation] = []
        try:
            chunks = side.splitter.feed(data)
        except PacketError as e:
            return self._unframed(side, e)
        for chunk in chunks:
            out += self._packet(side, chunk.data, None)
        return out

    def _side(self, sender: str) -> _Side:
        if sender == "client":
            return self.client
        if sender == "server":
            return self.server
        raise ValueError(f"sender is 'client' or 'server', not {sender!r}")

    def _unframed(self, side: _Side, error: PacketError) -> list[RuleViolation]:
        side.dead = True
        rule_id = (
            RuleId.MQQB_3_1_5_1_2_SIGNATURE
            if error.field_path == "BaseHeader.Signature"
            else RuleId.MQQB_3_1_5_1_3_MALFORMED
        )
        return self._report(side, [(rule_id, str(error))], self.packets)

    def _packet(self, side: _Side, data: bytes, parsed: Packet | None) -> list[RuleViolation]:
        index = self.packets
        self.packets = index + 1
        packet, findings = _checked(data, parsed)
        if packet is not None:
            findings = self._sent(side, packet)
        return self._report(side, findings, index) if findings else []

    def _report(self, side: _Side, findings: list[Finding], index: int = -1) -> list[RuleViolation]:
        found = [RuleViolation.of(rule_id, index, evidence, side.direction) for rule_id, evidence in findings]
        self.violations += found
        if found and self.closing is None:
            self.closing = next((v for v in found if rule(v.rule_id).closes_session), None)
        return found

    # -- what each end sent -------------------------------------------------------------------------

    def _sent(self, me: _Side, packet: Packet) -> list[Finding]:
        """A packet ``me`` sent: sent in the state :data:`~harness.session.transitions.SENDS` names
        and accepted by the other end's row of the transition table, which moves that end (else the
        kind's wrong-state rule); then the checks of its kind (:data:`_CHECKS`)."""
        sender = me.role
        kind = packet.kind
        wrong = self._moves(sender, kind)
        if wrong is not None:
            what = f" {_WHAT[sender]}" if kind in _ESTABLISHING else ""
            return [(wrong, f"{kind.name}{what} in phase {self.phase}")]
        check = _CHECKS.get((sender, kind))
        return check(self, me, self.server if me is self.client else self.client, packet) if check else []

    # -- the establishment (3.1.5.2.3, 3.1.5.3, 3.1.5.4) -------------------------------------------

    def _ec_request(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        self._ec_request_headers = packet.headers
        return check_ec_request(packet, self.acceptor)

    def _cp_request(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        if self.refused:
            return [(RuleId.MQQB_3_1_5_3_2_AFTER_REFUSAL, "ConnectionParameters after a CS=1 response")]
        self._cp_request_headers = packet.headers
        me.window = max(1, int(packet.headers["ConnectionParametersHeader"]["WindowSize"]))
        return check_cp_request(packet)

    def _ec_response(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        self.refused = bool(packet.headers["InternalHeader"]["Flags"].CS)
        return check_ec_response(self._ec_request_headers, packet) + self._ec_response_validity(packet)

    def _cp_response(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        me.window = max(1, int(packet.headers["ConnectionParametersHeader"]["WindowSize"]))
        return check_cp_response(self._cp_request_headers, packet)

    @property
    def phase(self) -> str:
        """The two ends' SessionState in one word (``start`` ... ``open``; the pair itself when the
        establishment went another way)."""
        pair = (self.state[INITIATOR], self.state[ACCEPTOR])
        return _PHASES.get(pair, "/".join(s.value for s in pair))

    def _moves(self, sender: Role, kind: PacketKind) -> RuleId | None:
        """Check a packet against the two ends' states and move the receiver (:data:`_MOVES`); the
        rule it breaks: the receiver's row of the transition table, else the kind's wrong-state rule."""
        state = self.state
        receiver = _RECEIVER[sender]
        after = _MOVES.get((sender, state[sender], state[receiver], kind))
        if after is None:
            return transition(receiver, state[receiver], kind).rule or WRONG_STATE[kind]
        state[receiver] = after
        return None

    def _ec_response_validity(self, packet: Packet) -> list[Finding]:
        """[MS-MQQB] 3.1.5.3.2 as the initiator applies it: a response that accepts (CS 0) but names
        another client, or another server than a non-null ServerGuid requested, is invalid, and the
        initiator discards it and closes (the rule closes the session)."""
        if self._ec_request_headers is None or self.refused:
            return []
        req = self._ec_request_headers["EstablishConnectionHeader"]
        ec = packet.headers["EstablishConnectionHeader"]
        requested = GUID(req["ServerGuid"])
        client = GUID(ec["ClientGuid"])
        if client == GUID(req["ClientGuid"]) and (requested.is_null or GUID(ec["ServerGuid"]) == requested):
            return []
        return [
            (
                RuleId.MQQB_3_1_5_3_2_EC_RESPONSE,
                f"CS=0 with ClientGuid {client} / ServerGuid {GUID(ec['ServerGuid'])}; the request had "
                f"{GUID(req['ClientGuid'])} / {requested}",
            )
        ]

    # -- packets of an open session, either direction ------------------------------------------------

    def _session_ack(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        """A SessionAck Packet (3.1.5.5): its InternalHeader and the counts its SessionHeader acknowledges."""
        return check_internal_reserved(packet) + self._session_header(me, other, packet.headers["SessionHeader"])

    def _user_message_packet(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        """A UserMessage Packet, OrderAck and FinalAck included (3.1.5.6-3.1.5.8): counted, held to
        the sender's window (3.1.7.1), the checks of its kind, its piggy-backed SessionHeader."""
        found: list[Finding] = []
        headers = packet.headers
        me.sent += 1  # every UserMessage Packet counts, OrderAck and FinalAck included (3.1.1.4)
        if headers["UserHeader"]["Flags"].DM == 1:
            me.recoverable_sent += 1
        unacked = me.sent - other.acked_at
        if me.window and unacked > me.window and not me.window_reported:
            me.window_reported = True
            found.append(
                (RuleId.MQQB_3_1_7_1_WINDOW_EXCEEDED, f"{unacked} UserMessages unacknowledged, WindowSize {me.window}")
            )
        found += _USER_MESSAGE_CHECKS[packet.kind](self, me, other, packet)
        sh = headers.get("SessionHeader")
        if sh is not None:
            found += self._session_header(me, other, sh)
        return found

    def _final_ack(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        body = packet.body
        if body is None:
            return []
        message_id = int(body["MessageID"])
        if other.message_ids.sent(bytes(GUID(body["SourceGUID"])), message_id) is False:
            return [(RuleId.MQQB_3_1_5_7_FINAL_ACK_UNKNOWN, f"FinalAck for MessageID {message_id}")]
        return []

    def _user_message(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        found = check_message_id(packet)
        if self._now is not None:  # 3.1.7.1.2 / [MS-MQMQ] 2.2.19.1 at the capture time
            expired, findings = check_expiry(packet, current_time(self._now), self.expiry_tolerance)
            self.expired += expired
            found += findings
        headers = packet.headers
        uh = headers["UserHeader"]
        source, message_id = bytes(uh["SourceQueueManager"]), int(uh["MessageID"])  # a GUID's 16 bytes
        seen = me.message_ids.add(source, message_id)
        th = headers.get("TransactionHeader")
        if th is not None:
            found += self._tx.check(source, th)
            seq_id = tx_sequence_id(th["TxSequenceID"])
            me.tx_sent.note(seq_id, int(th["TxSequenceNumber"]))
        elif seen is True:  # exactly known sent before (None: no longer known either way)
            found.append((RuleId.MQQB_3_1_5_8_1_DUPLICATE, f"MessageID {message_id} sent twice on this session"))
        return found

    def _order_ack(self, me: _Side, other: _Side, packet: Packet) -> list[Finding]:
        body = packet.body
        if body is None:
            return [(RuleId.MQQB_3_1_5_1_3_MALFORMED, "OrderAck Packet without an OrderAck Body")]
        seq_id, number = tx_sequence_id(body["TxSequenceID"]), int(body["TxSequenceNumber"])
        sent = other.tx_sent.highest(seq_id)  # None: a sequence no longer known, not judged
        if sent is not None and number > sent:
            return [
                (RuleId.MQQB_3_1_5_6_ORDER_ACK_UNSENT, f"OrderAck for ({seq_id:#x}, {number}) which was never sent")
            ]
        acked = me.order_acked.last(seq_id)
        if number < acked:
            return [
                (
                    RuleId.MQQB_3_1_1_6_2_ORDER_ACK_ORDER,
                    f"OrderAck for number {number} after {acked} in sequence {seq_id:#x}",
                )
            ]
        me.order_acked.set(seq_id, number)
        return []

    def _session_header(self, me: _Side, other: _Side, sh: Container) -> list[Finding]:
        """A SessionHeader ``me`` sent acknowledging what ``other`` sent (3.1.5.5, 3.1.5.5.5)."""
        found = check_session_header(
            sh,
            sent=other.sent,
            recoverable_sent=other.recoverable_sent,
            received=me.sent,
            recoverable_received=me.recoverable_sent,
            last_ack=me.last_ack,
        )
        # the count the header acknowledges, unwrapped against what the other end has sent
        ack = me.last_ack = int(sh["AckSequenceNumber"])
        me.acked_at = max(me.acked_at, other.sent - ((other.sent - ack) % U16))
        return found


# (sender, its SessionState, the receiver's SessionState, kind) -> the receiver's SessionState after
# the packet: what a passive observer of both ends accepts, the sender in the state SENDS names and
# the receiver's row of TRANSITIONS accepting it (harness.session.transitions).  Any other packet
# breaks the receiver's row's rule, or its kind's wrong-state rule.
_MOVES: dict[tuple[Role, SessionState, SessionState, PacketKind], SessionState] = {
    (sender, SENDS[(sender, kind)], state, kind): after
    for (receiver, state, kind), after in TRANSITIONS.items()
    for sender in [other_role(receiver)]
    if (sender, kind) in SENDS
}
_RECEIVER: dict[Role, Role] = {role: other_role(role) for role in ROLES}

_Check = Callable[[Observer, _Side, _Side, Packet], list[Finding]]
K = PacketKind
_USER_MESSAGE_CHECKS: dict[PacketKind, _Check] = {
    K.OrderAck: Observer._order_ack,
    K.FinalAck: Observer._final_ack,
    K.UserMessage: Observer._user_message,
}
# The checks of each kind a sender sends, after the transition table has accepted it (a kind
# without an entry has none of its own): the establishment's requests and responses, and on an
# open session the SessionAck and the UserMessage Packets (OrderAck and FinalAck are UserMessages).
_CHECKS: dict[tuple[Role, PacketKind], _Check] = {
    (INITIATOR, K.EstablishConnection): Observer._ec_request,
    (INITIATOR, K.ConnectionParameters): Observer._cp_request,
    (ACCEPTOR, K.EstablishConnection): Observer._ec_response,
    (ACCEPTOR, K.ConnectionParameters): Observer._cp_response,
    **{(role, K.SessionAck): Observer._session_ack for role in ROLES},
    **{(role, kind): Observer._user_message_packet for role in ROLES for kind in _USER_MESSAGE_CHECKS},
}
