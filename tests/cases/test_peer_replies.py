"""``given.peer.replies``: the simulated acceptor of an initiator wire case answers a sender's packet
with bytes the case gives ([MS-MQQB] 3.1.5.3.1 and 3.1.5.4.1 fields echoed on request), and
``wait_for {closed: N, by: initiator}`` counts the sessions the sender closed (3.1.5.9).  The loader
names the file, line and key of every misuse; the peer is driven over real loopback sockets."""

from __future__ import annotations

import socket
import time

import pytest

import packets
from harness.cases.lines import CaseError
from harness.cases.loader import load_text
from harness.cases.wire import needs_simulated_peer
from harness.cases.wireruns.peer import PeerReply, close_peer, peer_replies, simulated_peer
from harness.fuzz.generate import Context, template
from packets import GUID
from packets.paths import field_offset

EC = "EstablishConnection"
SESSION_ACK = "10001b004c494f5224000000ffffffff0000010000000000000000000000000001000000"


def _case(peer: str, wait: str = "{closed: 1, within: SessionInitialization}") -> str:
    return f"""id: t.replies
title: replies
spec: [{{section: MS-MQQB 3.1.5.1.3, requirement: MQQB-3.1.5.1.3-DISCARD-CLOSE}}]
given:
  peer:
{peer}
when:
  - action: create_outgoing_queue
    args: {{name: out}}
  - action: enqueue
    args: {{queue: out, message: {{id: m1}}}}
  - action: wait_for
    args: {wait}
"""


def _error(text: str) -> CaseError:
    with pytest.raises(CaseError) as e:
        load_text(text, "c.yaml")
    return e.value


def test_a_case_with_replies_loads_and_needs_the_simulated_peer() -> None:
    peer = f"""    under_test: initiator
    replies:
      - to: {EC}
        echo: [EstablishConnectionHeader.ClientGuid]
        raw: {SESSION_ACK[:32]} {SESSION_ACK[32:]}
      - {{to: UserMessage, count: 2, connection: 2, raw: "{SESSION_ACK}"}}"""
    (case,) = load_text(_case(peer, "{closed: 1, by: initiator, within: SessionInitialization}"), "c.yaml")
    first, second = peer_replies(case.given["peer"])
    assert first == PeerReply(EC, bytes.fromhex(SESSION_ACK), ("EstablishConnectionHeader.ClientGuid",))
    assert (second.to, second.count, second.connection) == ("UserMessage", 2, 2)
    assert needs_simulated_peer(case.given, {}) == "needs the simulated peer's replies"


_ON = "    under_test: initiator\n"
_EC = "{to: EstablishConnection, raw: '10'}"
_WITHIN = "within: SessionInitialization}"


@pytest.mark.parametrize(
    ("peer", "wait", "line", "key", "says"),
    [
        (_ON + "    replies: [{to: EstablishConnection, raw: 10c}]", "", 7, "replies[0].raw", "pattern"),
        (_ON + "    replies: [{to: Ping, raw: '10'}]", "", 7, "replies[0].to", "EstablishConnection"),
        (_ON + "    replies: [{to: UserMessage, raw: '10', echo: [BaseHeader.Flags]}]", "", 7, "echo[0]", "ClientGuid"),
        ("    under_test: acceptor\n    replies: [" + _EC + "]", "", 7, "replies", "initiator only"),
        (_ON + "    silent: true\n    replies: [" + _EC + "]", "", 8, "replies", "silent"),
        (
            _ON + "    replies:\n      - " + _EC + "\n      - {to: EstablishConnection, count: 1, raw: '11'}",
            "",
            9,
            "replies[1]",
            "the same packet",
        ),
        (_ON.rstrip(), "{connections: 1, by: initiator, " + _WITHIN, 13, "args.by", "with closed"),
        (_ON.rstrip(), "{closed: 1, by: sender, " + _WITHIN, 13, "args.by", "initiator or acceptor"),
    ],
)
def test_misuse_is_named_by_file_line_and_key(peer: str, wait: str, line: int, key: str, says: str) -> None:
    text = _case(peer, wait) if wait else _case(peer)
    if "acceptor" in peer:  # a case checking the acceptor has no sender actions
        text = text.split("when:")[0] + "when:\n  - action: send\n    args: {packet: EstablishConnection}\n"
    e = _error(text)
    assert e.file == "c.yaml" and e.key.endswith(key), e
    assert e.line == line, e
    assert says in e.message


def _ec_request(client: GUID) -> bytes:
    return packets.build(template(EC).build(Context(client, GUID(bytes(16)))))


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    end = time.monotonic() + 5.0
    while len(data) < n and time.monotonic() < end:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def test_the_peer_sends_the_reply_with_the_echoed_fields_then_goes_on_as_the_conformant_acceptor() -> None:
    recorded = GUID(bytes(range(1, 17)))
    reply = packets.build(template("EstablishConnection[response]").build(Context(GUID(bytes(16)), recorded)))
    reply = reply[:100] + b"\x00" + reply[101:]  # a Padding byte that is not 0x5A: what the case sends
    echo = ("EstablishConnectionHeader.ClientGuid", "EstablishConnectionHeader.TimeStamp")
    peer = simulated_peer(["normal"], 0.05, [PeerReply(EC, reply, echo)])
    try:
        client = GUID(bytes(range(100, 116)))
        request = bytearray(_ec_request(client))
        stamp = field_offset(bytes(request), echo[1], EC)
        assert stamp is not None
        request[stamp[0] : stamp[1]] = b"\x11\x22\x33\x44"
        with socket.create_connection(peer.address, timeout=5.0) as s:
            s.sendall(request)
            got = _read(s, len(reply))
        where = field_offset(got, echo[0], EC)
        assert where is not None and got[where[0] : where[1]] == bytes(client)  # the request's, not the recording's
        assert got[stamp[0] : stamp[1]] == b"\x11\x22\x33\x44"
        assert got[100] == 0 and got[60:100] == b"\x5a" * 40  # the rest as the case gave it
        with socket.create_connection(peer.address, timeout=5.0) as s:  # connection 2: the peer's own answer
            s.sendall(_ec_request(client))
            again = _read(s, len(reply))
        assert again[60:572] == b"\x5a" * 512
        assert [d for d, _, _ in peer.connections[0].packets] == ["c2s", "s2c"]
    finally:
        close_peer(peer)
