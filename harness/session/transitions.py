"""The session transition table: which packet each side accepts in each SessionState, and what follows.

Renders the first sentence of each of [MS-MQQB] 3.1.5.3-3.1.5.8 ("If SessionState is not ...,
the protocol MUST close the session") and the state each accepted packet leads to (3.1.5.2.3,
3.1.5.3.1, 3.1.5.3.2, 3.1.5.4.1, 3.1.5.4.2), in the manner of h11's ``_state.py``: one table,
``(role, state, packet kind) -> next state``, read by the Initiator, the Acceptor and the passive
Observer (which also holds each sender to the state it sends a packet in, :data:`SENDS`, and names
the phases of the establishment after :data:`ESTABLISHMENT`, both ends' path from :data:`START` to
OPEN).  A packet kind the table does not accept in a state is a violation of that kind's
wrong-state rule; a kind the session protocol does not know ([MS-MQQB] 3.1.5.1.1) is a violation
of MQQB-3.1.5.1.1-unknown-packet.  :func:`transition` answers every (role, state, kind), never raising.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.session.actions import SessionState
from harness.session.rules import RuleId
from packets import PacketKind

__all__ = [
    "ESTABLISHMENT",
    "ROLES",
    "SENDS",
    "START",
    "TRANSITIONS",
    "WRONG_STATE",
    "Role",
    "Transition",
    "other_role",
    "transition",
]

Role = Literal["initiator", "acceptor"]
ROLES: tuple[Role, ...] = ("initiator", "acceptor")

S = SessionState
K = PacketKind
_OPEN_KINDS = (K.SessionAck, K.OrderAck, K.FinalAck, K.UserMessage)

# (role of the receiving end, its SessionState, the kind received) -> the SessionState after it.
TRANSITIONS: dict[tuple[Role, SessionState, PacketKind], SessionState] = {
    # 3.1.5.3.1: the acceptor answers an EstablishConnection request and waits for ConnectionParameters
    ("acceptor", S.WAITING_EC_MSG, K.EstablishConnection): S.WAITING_CP_MSG,
    # 3.1.5.4.1: ... answers the ConnectionParameters request: the session is open
    ("acceptor", S.WAITING_CP_MSG, K.ConnectionParameters): S.OPEN,
    # 3.1.5.3.2: the initiator receives the EstablishConnection response, sends ConnectionParameters
    ("initiator", S.WAITING_ECR_MSG, K.EstablishConnection): S.WAITING_CPR_MSG,
    # 3.1.5.4.2: ... receives the ConnectionParameters response: the session is open
    ("initiator", S.WAITING_CPR_MSG, K.ConnectionParameters): S.OPEN,
    # 3.1.5.5-3.1.5.8: acknowledgments and messages, on an open session only
    **{(role, S.OPEN, kind): S.OPEN for role in ROLES for kind in _OPEN_KINDS},
}

# (role of the sending end, the kind it sends) -> the SessionState it sends it in: 3.1.5.2.3 the
# initiator's EstablishConnection request on connecting (WAITING_ECR_MSG from then on); 3.1.5.3.1
# and 3.1.5.4.1 the acceptor's responses, each in the state the request it answers led to;
# 3.1.5.3.2 the initiator's ConnectionParameters request once the response came; 3.1.5.5-3.1.5.8
# acknowledgments and messages on an open session only.  A passive observer of both ends
# (harness.session.observer) holds the sender to this and the receiver to TRANSITIONS.
SENDS: dict[tuple[Role, PacketKind], SessionState] = {
    ("initiator", K.EstablishConnection): S.WAITING_ECR_MSG,
    ("acceptor", K.EstablishConnection): S.WAITING_CP_MSG,
    ("initiator", K.ConnectionParameters): S.WAITING_CPR_MSG,
    ("acceptor", K.ConnectionParameters): S.OPEN,
    **{(role, kind): S.OPEN for role in ROLES for kind in _OPEN_KINDS},
}

# Each end's SessionState when the session begins: the initiator's from its connecting on
# (3.1.5.2.3), the acceptor's once it has accepted the transport connection (3.1.5.10).
START: dict[Role, SessionState] = {"initiator": S.WAITING_ECR_MSG, "acceptor": S.WAITING_EC_MSG}


def other_role(role: Role) -> Role:
    """The other end of the session."""
    return "acceptor" if role == "initiator" else "initiator"


def _establishment() -> tuple[tuple[Role, PacketKind], ...]:
    """The packets that take both ends from START to OPEN, in order: each the one an end sends in
    its state (SENDS) that moves the other end (TRANSITIONS)."""
    state = dict(START)
    steps: list[tuple[Role, PacketKind]] = []
    while any(s is not S.OPEN for s in state.values()):
        sender, kind, after = next(
            (role, kind, after)
            for (role, kind), sent_in in SENDS.items()
            if sent_in is state[role]
            and (after := TRANSITIONS.get((other_role(role), state[other_role(role)], kind))) is not None
            and after is not state[other_role(role)]
        )
        state[other_role(sender)] = after
        steps.append((sender, kind))
    return tuple(steps)


# The establishment (3.1.5.2.3, 3.1.5.3.1, 3.1.5.3.2, 3.1.5.4.1, 3.1.5.4.2), read off the two tables:
# (sender, kind) in the order a session opens; a passive observer names its phases after it.
ESTABLISHMENT: tuple[tuple[Role, PacketKind], ...] = _establishment()

# The rule a packet of a kind breaks when it arrives in a state the table does not accept it in.
WRONG_STATE: dict[PacketKind, RuleId] = {
    K.EstablishConnection: RuleId.MQQB_3_1_5_3_WRONG_STATE,
    K.ConnectionParameters: RuleId.MQQB_3_1_5_4_WRONG_STATE,
    K.SessionAck: RuleId.MQQB_3_1_5_5_WRONG_STATE,
    K.OrderAck: RuleId.MQQB_3_1_5_6_WRONG_STATE,
    K.FinalAck: RuleId.MQQB_3_1_5_7_WRONG_STATE,
    K.UserMessage: RuleId.MQQB_3_1_5_8_WRONG_STATE,
}


@dataclass(frozen=True)
class Transition:
    """What receiving a packet does: ``next`` the SessionState after it (None: not accepted),
    ``rule`` the rule broken when it is not accepted."""

    next: SessionState | None
    rule: RuleId | None = None

    @property
    def accepted(self) -> bool:
        return self.next is not None


def _row(role: Role, state: SessionState, kind: PacketKind | str) -> Transition:
    """The row for a packet of ``kind`` received by ``role`` in ``state``, read off the tables."""
    try:
        kind = PacketKind(kind)
    except ValueError:
        return Transition(None, RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET)
    after = TRANSITIONS.get((role, state, kind))
    if after is not None:
        return Transition(after)
    return Transition(None, WRONG_STATE.get(kind, RuleId.MQQB_3_1_5_1_1_UNKNOWN_PACKET))


# Every row of every (role, state, kind), made once: an engine or the observer reads one per packet.
_ROWS: dict[tuple[Role, SessionState, PacketKind | str], Transition] = {
    (role, state, kind): _row(role, state, kind) for role in ROLES for state in S for kind in K
}


def transition(role: Role, state: SessionState, kind: PacketKind | str) -> Transition:
    """The row of the table for a packet of ``kind`` received by ``role`` in ``state``."""
    row = _ROWS.get((role, state, kind))  # a kind given by its name finds its row too (StrEnum)
    return row if row is not None else _row(role, state, kind)
