"""From a captured session to a wire case that replays it: ``msmq-harness capture-to-case``.

The case tests the acceptor (``given.peer.under_test: acceptor``, docs/cases.md "Wire cases"):
it sends what the captured initiator sent, in capture order -- the EstablishConnection request
([MS-MQQB] 2.2.3, 3.1.5.2.3) with the captured ClientGuid and OperatingSystem.SE but ServerGuid
GUID_NULL so that any acceptor may accept it (3.1.5.3.1), the ConnectionParameters request
(2.2.2) with the captured RecoverableAckTimeout, AckTimeout and WindowSize, every other packet
byte for byte -- and receives the replies whose order the spec fixes, asserting what the spec
demands of them: BaseHeader.VersionNumber 0x10 and Signature 0x524F494C ([MS-MQQB] 3.1.5.1.2),
the EstablishConnection response's echoes, CS and 0x5A padding (3.1.5.3.1, 2.2.3.1), the
ConnectionParameters response's echoes (3.1.5.4.1).  A rule the capture shows the acceptor
breaking on a SessionAck (3.1.5.5.1, 3.1.5.5.5) becomes an expectation on the next SessionAck;
a packet of the initiator that broke a rule is followed by the close the acceptor owes
([MS-MQQB] 3.1.5.1.2, 3.1.5.1.3).  So a case made from a session that broke a rule fails,
against the same acceptor, on that rule, and passes once the fault is gone.

The packets are taken in the order the observer checked them (:mod:`harness.capture.connection`):
within a direction TCP stream order, across directions capture time with frame order breaking
every tie, so equal timestamps, a one-second clock or zero timestamps give the case of the
original capture; a session whose capture times contradict its frame order makes no case
(:class:`CaseBuildError` naming where the order is not established).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import packets
from harness.capture.connection import merge_key, replay_flow
from harness.capture.framing import DecodedPacket, Key
from harness.capture.tcp import Direction, Flow, reassemble
from harness.cases.loader import BUNDLED_REQUIREMENTS, requirements_for
from harness.cases.model import Level
from harness.errors import HarnessError
from harness.outdir import write_file_atomically
from harness.pipeline.flows import (
    DEFAULT_PORTS,
    OPEN_SESSION_KINDS,
    FlowRows,
    FrameCounts,
    analyse_flow,
    flow_id,
    segments_of,
)
from harness.pipeline.splits import Split, read_split
from harness.session.core import check_packet
from harness.session.rules import RULES, RuleId, closing_rules
from packets import PacketKind

__all__ = [
    "CaseBuildError",
    "Replayed",
    "capture_to_case",
    "find_flow",
    "flow_violations",
    "replay",
    "sessions_with_problems",
    "write_case",
]

SESSION_ACK_RULES = frozenset({RuleId.MQQB_3_1_5_5_5_COUNT_MISMATCH, RuleId.MQQB_3_1_5_5_1_ACK_BEYOND_SENT})
_SESSION_ACK = PacketKind.SessionAck.name
_USER_MESSAGE = PacketKind.UserMessage.name
_ESTABLISH_CONNECTION = PacketKind.EstablishConnection.name
#: the requests of the establishment, whose replies the spec fixes (3.1.5.3.1, 3.1.5.4.1)
_REQUESTS = (_ESTABLISH_CONNECTION, PacketKind.ConnectionParameters.name)
#: the acknowledgments an acceptor may send before the close it owes: every kind of an open
#: session ([MS-MQQB] 3.1.5.5-3.1.5.8) but the UserMessage
_ACKS = [kind.name for kind in OPEN_SESSION_KINDS if kind is not PacketKind.UserMessage]
_WELL_FORMED = {"BaseHeader.VersionNumber": 0x10, "BaseHeader.Signature": 0x524F494C}


class CaseBuildError(HarnessError):
    """The capture does not hold the flow asked for, or it holds no session to replay."""


def find_flow(path: str | Path, flow: str, ports: frozenset[int] = DEFAULT_PORTS) -> Flow:
    """The reassembled flow ``flow`` (as in the pipeline's ``flow`` column) of a capture."""
    path = str(path)
    split = Split(path, 0, max(1, os.path.getsize(path)))
    segments = segments_of(read_split(split), FrameCounts(path), ports)
    segs = [(ts, seg) for _off, ts, seg in segments if flow_id(seg) == flow]
    if not segs:
        raise CaseBuildError(f"{path}: no TCP flow {flow} on ports {','.join(map(str, sorted(ports)))}")
    return next(iter(reassemble(segs, ports).values()))


def flow_violations(path: str | Path, flow: str, ports: frozenset[int] = DEFAULT_PORTS) -> list[dict[str, Any]]:
    """The rules the session of ``flow`` broke, as the observer records them (``rule_id``,
    ``direction``: the sender of the packet that broke it, ``packet_index``, ...)."""
    return list(analyse_flow(str(path), find_flow(path, flow, ports))["violations"])


def sessions_with_problems(path: str | Path, ports: frozenset[int] = DEFAULT_PORTS) -> list[tuple[str, list[str]]]:
    """(flow id, rules broken) of every flow of a capture whose session broke a rule, in the
    order the flows begin: what ``capture-to-case`` can make a case of."""
    path = str(path)
    split = Split(path, 0, max(1, os.path.getsize(path)))
    segments = segments_of(read_split(split), FrameCounts(path), ports)
    flows = reassemble([(ts, seg) for _off, ts, seg in segments], ports)
    found = []
    for flow in flows.values():
        rules = sorted({v["rule_id"] for v in analyse_flow(path, flow)["violations"]})
        if rules:
            found.append((flow.id, rules))
    return found


Ordered = list[tuple[str, int, bytes, str]]


@dataclass
class Replayed:
    """A flow as the observer saw it: its packets (direction, index in its direction, bytes, kind)
    up to each direction's first gap in the order the capture proves, the rules broken (rows as
    the pipeline's ``violations`` table), and why the order was not established from some point
    ("" when it was)."""

    ordered: Ordered
    violations: list[dict[str, Any]]
    unordered: str


def replay(capture: str, flow: Flow) -> Replayed:
    """The packets of ``flow`` merged as :class:`harness.capture.connection.Connection` merges them
    for the observer (:func:`harness.capture.connection.merge_key`: within a direction TCP stream
    order, across directions capture time with frame order breaking every tie), with the
    violations the observer found in that order; bytes of the initiator that cannot be framed are
    kept whole as one packet, where the observer met the error."""
    builder = FlowRows(capture, flow.key)
    got: list[tuple[tuple[float, int, int], str, int, bytes, str]] = []
    ends = {d: side.pieces[0][0] + len(side.pieces[0][1]) if side.pieces else 0
            for d, side in (("client", flow.client), ("server", flow.server))}  # fmt: skip

    def sink(direction: str, item: DecodedPacket, key: Key) -> None:
        builder._packet(direction, item, key)
        if item.offset < ends[direction]:  # the first run: up to the first gap
            got.append((merge_key(direction, key), direction, item.index, item.data, item.packet.kind.name))

    result = replay_flow(flow, sink)
    violations = list(builder.tables(result)["violations"])
    errors = result.reports["client"].errors
    if flow.client.pieces and errors and errors[0].offset < ends["client"]:
        base, data = flow.client.pieces[0]
        at = errors[0].offset
        rest = data[at - base :]
        index = sum(1 for _k, d, *_rest in got if d == "client")
        got.append((merge_key("client", _key_at(flow.client, at + 15)), "client", index, rest, "raw"))
    got.sort(key=lambda t: t[0])  # stable: each direction keeps its stream order
    return Replayed([(d, i, data, kind) for _k, d, i, data, kind in got], violations, result.unordered)


def _key_at(side: Direction, offset: int) -> Key:
    """The :data:`harness.capture.framing.Key` of the byte at stream ``offset``: the latest capture time
    and the latest frame number of the chunks up to it."""
    starts = [a for a in side.timestamps if a <= offset]
    return (
        max((side.timestamps[a] for a in starts), default=0.0),
        max((side.frames.get(a, 0) for a in starts), default=0),
    )


def _hex(data: bytes) -> str:
    return " ".join(data[i : i + 32].hex() for i in range(0, len(data), 32))


def _receive_reply(kind: str) -> dict[str, Any]:
    """The reply to an EstablishConnection or ConnectionParameters request, as the spec fixes it."""
    expect: dict[str, Any] = dict(_WELL_FORMED)
    expect["InternalHeader.Flags.CS"] = 0
    if kind == _ESTABLISH_CONNECTION:
        for name in ("ClientGuid", "TimeStamp"):
            path = f"EstablishConnectionHeader.{name}"
            expect[path] = {"sent": f"EstablishConnection.{path}"}
        expect["EstablishConnectionHeader.Padding"] = {"every_byte": 0x5A}
    else:
        for name in ("RecoverableAckTimeout", "AckTimeout"):
            path = f"ConnectionParametersHeader.{name}"
            expect[path] = {"sent": f"ConnectionParameters.{path}"}
    return {"action": "receive", "args": {"packet": kind, "within": "SessionInitialization"}, "expect": expect}


def _receive_session_ack(sent_user_messages: int) -> dict[str, Any]:
    """The next SessionAck: it counts no UserMessage of the acceptor's (none was sent to the case)
    and acknowledges no more than the case sent ([MS-MQQB] 3.1.5.5.1, 3.1.5.5.5)."""
    expect: dict[str, Any] = dict(_WELL_FORMED)
    expect["SessionHeader.UserMsgSequenceNumber"] = 0
    expect["SessionHeader.AckSequenceNumber"] = {"range": [0, sent_user_messages]}
    args = {"packet": _SESSION_ACK, "within": "SessionAckSend", "skip": [k for k in _ACKS if k != _SESSION_ACK]}
    return {"action": "receive", "args": args, "expect": expect}


def _breaks(data: bytes, rule_id: str) -> bool:
    """Does this packet, on its own, break ``rule_id`` ([MS-MQQB] 3.1.5.1)?"""
    _packet, findings = check_packet(data)
    return any(f[0] == rule_id for f in findings)


def _blame(ordered: Ordered, violations: list[dict[str, Any]]) -> dict[str, dict[int, set[str]]]:
    """direction -> index of the packet in its direction -> rules that packet broke.

    The observer numbers packets across both directions in capture order and names the sender
    of the packet that broke the rule; a rule of 3.1.5.1 is pinned on the sender's packet that
    fails it on its own, a SessionAck rule on the acceptor's SessionAck at (or after) that place."""
    closing = closing_rules()
    out: dict[str, dict[int, set[str]]] = {"client": {}, "server": {}}
    for v in violations:
        rule_id, sender, position = v["rule_id"], v["direction"], v["packet_index"]
        if rule_id in SESSION_ACK_RULES:  # (3.1.5.5.5 closes too, but on the initiator's side)
            acks = [(p, i) for p, (d, i, _data, kind) in enumerate(ordered) if d == "server" and kind == _SESSION_ACK]
            later = [i for p, i in acks if p >= position] or [i for _p, i in acks[-1:]]
            if later:
                out["server"].setdefault(later[0], set()).add(rule_id)
        elif rule_id in closing:  # a packet that breaks it on its own: the close the acceptor owes follows
            for direction, i, data, _kind in ordered:
                if direction == sender and _breaks(data, rule_id):
                    out[direction].setdefault(i, set()).add(rule_id)
                    break
    return out


def capture_to_case(
    capture: str | Path,
    flow: str,
    *,
    ports: frozenset[int] = DEFAULT_PORTS,
    behaviour: str | None = None,
    case_id: str | None = None,
) -> dict[str, Any]:
    """The wire case (a YAML-ready mapping) replaying the initiator's side of ``flow``."""
    replayed = replay(str(capture), find_flow(capture, flow, ports))
    if replayed.unordered:
        raise CaseBuildError(
            f"{flow}: {replayed.unordered}; a case replays the packets in the order the capture proves, "
            "and from there it proves none (if the capture's times are right, sort it by time first)"
        )
    violations, ordered = replayed.violations, replayed.ordered
    if not any(d == "client" for d, _, _, _ in ordered):
        raise CaseBuildError(f"{flow}: the initiator sent no packet to replay")
    steps = _replay_steps(ordered, _blame(ordered, violations))
    spec = _spec_refs(RULES[v["rule_id"]].section for v in violations if v["rule_id"] in RULES)
    peer: dict[str, Any] = {"under_test": "acceptor"}
    if behaviour:
        peer["behaviour"] = behaviour
    broken = sorted({v["rule_id"] for v in violations})
    title = f"Replay of the initiator's side of {flow} from {Path(capture).name}"
    title += f"; the capture broke {', '.join(broken)}" if broken else "; the capture broke no rule"
    return {
        "id": case_id or "capture." + re.sub(r"[^A-Za-z0-9]+", "-", flow).strip("-").lower(),
        "title": title,
        "spec": spec,
        "tags": ["mqqb", "capture"],
        "given": {"peer": peer},
        "when": steps,
    }


def _replay_steps(ordered: Ordered, blame: dict[str, dict[int, set[str]]]) -> list[dict[str, Any]]:
    """The case's steps: each packet of the initiator sent (:func:`_send_step`), followed by the
    reply the spec fixes to an EstablishConnection or ConnectionParameters request; an
    expectation on the acceptor's SessionAck that broke a SessionAck rule; and after a packet
    that breaks a closing rule the close the acceptor owes, which ends the case."""
    closing = closing_rules()
    steps: list[dict[str, Any]] = []
    sent_user_messages = 0
    for direction, index, data, kind in ordered:
        if direction == "server":
            if kind == _SESSION_ACK and blame["server"].get(index, set()) & SESSION_ACK_RULES:
                steps.append(_receive_session_ack(sent_user_messages))
            continue
        bad = blame["client"].get(index, set())
        step, request = _send_step(kind, data, bad)
        steps.append(step)
        if bad & closing.keys():
            close = {"within": "SessionAckSend", "skip": _ACKS}  # the close follows the discarded packet at once
            steps.append({"action": "receive", "args": close, "expect": {"closed": True}})
            break
        if request:
            steps.append(_receive_reply(kind))
        if kind == _USER_MESSAGE:
            sent_user_messages += 1
    return steps


def _send_step(kind: str, data: bytes, bad: set[str]) -> tuple[dict[str, Any], bool]:
    """The ``send`` of a packet of the initiator, and whether it is an establishment request whose
    reply the spec fixes: an EstablishConnection request ([MS-MQQB] 2.2.3) with the captured
    ClientGuid and OperatingSystem.SE, a ConnectionParameters request (2.2.2) with the captured
    RecoverableAckTimeout, AckTimeout and WindowSize -- unless it broke a rule -- every other
    packet byte for byte."""
    parsed = packets.parse(data, strict=False) if kind in _REQUESTS and not bad else None
    if parsed is None:
        return {"action": "send", "args": {"packet": "raw", "hex": _hex(data)}}, False
    if kind == _ESTABLISH_CONNECTION:
        ec = parsed.EstablishConnectionHeader
        fields = {
            "EstablishConnectionHeader.ClientGuid": str(packets.GUID(ec.ClientGuid)),
            "EstablishConnectionHeader.OperatingSystem.SE": int(ec.OperatingSystem.SE),
        }
    else:
        cp = parsed.ConnectionParametersHeader
        names = ("RecoverableAckTimeout", "AckTimeout", "WindowSize")
        fields = {f"ConnectionParametersHeader.{n}": int(cp[n]) for n in names}
    return {"action": "send", "args": {"packet": kind, "fields": fields}}, True


_DEFAULT_SECTION = "MS-MQQB 3.1.5.3.1"  # the acceptor answers the EstablishConnection request


def _spec_refs(sections: Iterable[str]) -> list[dict[str, str]]:
    """The case's ``spec``: for each section a broken rule states, the first requirement of
    cases/requirements.yaml under that section or the nearest enclosing one that is not an
    interpretation (the replay's expectations are plain values, which only an interpretation's
    readings could grade); when no rule was broken (or none maps), the acceptor's answer to the
    EstablishConnection request."""
    known = [r for r in requirements_for(BUNDLED_REQUIREMENTS).values() if r.level is not Level.interpretation]

    def requirement_of(section: str) -> Any:
        while section:
            found = next((r for r in known if r.section == section), None)
            if found is not None:
                return found
            document, _, number = section.partition(" ")
            number = number.rpartition(".")[0]
            section = f"{document} {number}" if number else ""
        return None

    refs: dict[str, dict[str, str]] = {}
    for section in [*sections, _DEFAULT_SECTION]:
        req = requirement_of(section)
        if req is not None and (not refs or section != _DEFAULT_SECTION):
            refs.setdefault(req.id, {"section": req.section, "requirement": req.id})
    return list(refs.values())


def write_case(case: dict[str, Any], out: str | Path) -> None:
    """Write the case to the file ``out``, whole or not at all: into a temporary sibling, then
    renamed into place (``capture-to-case`` checks first that ``out`` is no folder, and no
    existing file unless ``--force``)."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_file_atomically(out, yaml.safe_dump(case, sort_keys=False, width=110))
