"""Which target reproduces the rule a captured session broke: ``capture-to-case --minimize``.

A case made from a captured session (harness.pipeline.tocase) tests the acceptor; ``--minimize``
shrinks it while it keeps failing the same way, so it needs a target against which it fails.  The
conformant reference is not one: it passes every such case.  What does fail it:

* a rule the captured *acceptor* broke (a wrong BaseHeader.Signature in its replies, [MS-MQQB]
  3.1.5.1.2; a SessionAck acknowledging more than was sent, 3.1.5.5.1, or counting UserMessages it
  never sent, 3.1.5.5.5): the acceptor that was captured, or the simulated peer with the behaviour
  that breaks the same rule (``reference?peer=NAME``) -- the faults ``msmq-harness synth`` injects;
* a rule the captured *initiator* broke (a packet discarded under 3.1.5.1.2 or 3.1.5.1.3): the
  case expects the close the acceptor owes, so an acceptor that takes the packet anyway fails it
  -- the simulated peer tolerating that rule (:data:`TOLERATES_MALFORMED`,
  :data:`TOLERATES_SIGNATURE`).

:func:`reproducing_target` picks the first of these for the rules a flow broke, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.session import AcceptorBehaviour, named_behaviour
from harness.session.acceptor import Acceptor
from harness.session.rules import RuleId

__all__ = [
    "ACK_BEYOND_SENT",
    "SEQUENCE_GAP",
    "TOLERATES_MALFORMED",
    "TOLERATES_SIGNATURE",
    "Choice",
    "reproducing_target",
]


def _count_mismatch_encode(acceptor: Any, headers: Any) -> bytes:
    """The acceptor's encoder, with every SessionAck Packet ([MS-MQQB] 2.2.6: a SessionHeader and
    no UserHeader) counting one UserMessage more than the acceptor sent (3.1.5.5.5)."""
    if headers.get("SessionHeader") is not None and headers.get("UserHeader") is None:
        headers.SessionHeader = dict(headers.SessionHeader)
        count = headers.SessionHeader["UserMsgSequenceNumber"]
        headers.SessionHeader["UserMsgSequenceNumber"] = (count + 1) % (1 << 16)
    return bytes(Acceptor._encode(acceptor, headers))


def _tolerates(*rule_ids: str) -> Any:
    def field_rule_tolerated(acceptor: Any, rule_id: str) -> bool:
        return rule_id in rule_ids

    return field_rule_tolerated


#: SessionAcks whose UserMsgSequenceNumber counts one UserMessage the acceptor never sent: what
#: ``synth`` injects as "sequence-gap" ([MS-MQQB] 3.1.5.5.5)
SEQUENCE_GAP = AcceptorBehaviour(
    "sequence-gap",
    reading_hooks=(("_encode", _count_mismatch_encode),),
    summary="SessionAcks count one UserMessage more than the acceptor sent (UserMsgSequenceNumber)",
)
#: SessionAcks acknowledging 0x100 UserMessages more than received ([MS-MQQB] 3.1.5.5.1): what
#: ``synth`` injects as "ack-beyond-sent" (one more, on one SessionAck) made independent of when the
#: replayed acceptor acknowledges -- its first SessionAck may come after fewer messages than the
#: captured one did, and one more than it had received may still be no more than the case sends
ACK_BEYOND_SENT = AcceptorBehaviour(
    "ack-beyond-sent-far",
    ack_overshoot=0x100,
    summary="SessionAcks acknowledge 0x100 UserMessages more than received",
)
#: takes a packet whose lengths do not add up ([MS-MQQB] 3.1.5.1.3) instead of closing: fails the
#: close a case from a "packet-size" session expects
TOLERATES_MALFORMED = AcceptorBehaviour(
    "tolerates-malformed",
    reading_hooks=(("field_rule_tolerated", _tolerates(RuleId.MQQB_3_1_5_1_3_MALFORMED)),),
    summary="takes malformed packets (3.1.5.1.3) instead of closing the session",
)
#: takes a packet with a wrong BaseHeader.Signature ([MS-MQQB] 3.1.5.1.2) instead of closing
TOLERATES_SIGNATURE = AcceptorBehaviour(
    "tolerates-signature",
    reading_hooks=(("field_rule_tolerated", _tolerates(RuleId.MQQB_3_1_5_1_2_SIGNATURE)),),
    summary="takes packets with a wrong Signature (3.1.5.1.2) instead of closing the session",
)

_HERE = __name__
#: (rule, who broke it) -> the peer behaviour that breaks it the same way
_BEHAVIOURS: dict[tuple[str, str], str] = {
    (RuleId.MQQB_3_1_5_1_2_SIGNATURE, "server"): "bad-signature",
    (RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT, "server"): f"{_HERE}:ACK_BEYOND_SENT",
    (RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH, "server"): f"{_HERE}:SEQUENCE_GAP",
    (RuleId.MQQB_3_1_5_1_3_MALFORMED, "client"): f"{_HERE}:TOLERATES_MALFORMED",
    (RuleId.MQQB_3_1_5_1_2_SIGNATURE, "client"): f"{_HERE}:TOLERATES_SIGNATURE",
}


@dataclass(frozen=True)
class Choice:
    """The target to minimize against (None: no target known to reproduce) and why."""

    target: str | None
    reason: str
    broke: bool = True  # whether the session broke any rule (else there is no failure to minimize)


def reproducing_target(violations: list[dict[str, Any]]) -> Choice:
    """The simulated peer that fails a case made from a session that broke ``violations`` (the
    observer's records: ``rule_id`` and ``direction``, the sender of the packet that broke it)."""
    if not violations:
        return Choice(None, "the session broke no rule, so its case passes against any conformant acceptor", False)
    for v in violations:
        rule_id, who = str(v["rule_id"]), str(v["direction"])
        behaviour = _BEHAVIOURS.get((rule_id, who))
        if behaviour is None:
            continue
        target = f"reference?peer={behaviour}"
        name = named_behaviour(behaviour).name
        if who == "server":
            why = f"the captured acceptor broke {rule_id}; the simulated peer {name} breaks it the same way"
        else:
            why = (
                f"the captured initiator broke {rule_id} and the case expects the close a conformant acceptor "
                f"owes; the simulated peer {name} takes the packet instead"
            )
        return Choice(target, why)
    broken = ", ".join(sorted({f"{v['rule_id']} ({'acceptor' if v['direction'] == 'server' else 'initiator'})"
                               for v in violations}))  # fmt: skip
    return Choice(None, f"no simulated peer is known to break {broken}")
