"""The Observer's per-session state is bounded by a constant, not by the number of messages
([MS-MQQB] 3.1.5.8.1 duplicate detection and 3.1.5.7 FinalAck keep the MessageIDs sent on the
session as ranges per source queue manager, harness.session.msgids), and the two rules still
fire exactly where they did.

The sequential run sends 100,000 messages (past 2**16 MessageIDs; a state that kept
every MessageID would grow by about 15 MB, against the 1 KB allowed); MSMQ_TESTS=thorough sends
a million."""

from __future__ import annotations

import os

from brokenstreams import ACC, INI, OTHER, cp, ec, order_ack, um
from construct import Container

import packets
from benchmarks.bench_memory import deep_size
from harness.session import Observer
from harness.session.msgids import MAX_RANGES, MAX_SEQUENCES, MAX_SOURCES, SentIds
from packets import session as sp

MESSAGES = 1_000_000 if os.environ.get("MSMQ_TESTS") == "thorough" else 100_000


def opened() -> Observer:
    o = Observer(ACC)
    reply = packets.build(sp.establish_connection(INI, ACC, 1000, response=True))
    for sender, data in (("client", ec()), ("server", reply), ("client", cp()), ("server", cp())):
        o.packet(sender, data)
    assert o.phase == "open" and not o.violations
    return o


def final_ack(source: packets.GUID, message_id: int) -> bytes:
    return packets.build(sp.final_ack(1, 1, 0, source, message_id, source_qm=ACC, destination_qm=INI, message_id=7))


def send_sequential(o: Observer, first: int, last: int) -> None:
    """UserMessages ``first`` .. ``last`` from the initiator (one packet parsed once, its MessageID set)."""
    data = um(first)
    packet = packets.parse(data, strict=False)
    for message_id in range(first, last + 1):
        packet.UserHeader.MessageID = message_id
        o.packet("client", data, packet)


def test_many_sequential_messages_hold_the_state_of_a_thousand() -> None:
    o = opened()
    send_sequential(o, 1, 1_000)
    small = deep_size(o)
    send_sequential(o, 1_001, MESSAGES)
    assert o.packets == 4 + MESSAGES
    assert deep_size(o) - small < 1024  # before: every MessageID kept, about 150 bytes each
    assert o.client.message_ids.ranges() == 1
    # the exact verdicts: one window report (no SessionAck came), then a duplicate of the first
    # message and a FinalAck for a message never sent; a FinalAck for one that was sent is fine
    assert [v.rule_id for v in o.violations] == ["MQQB-3.1.7.1-window-exceeded"]
    o.packet("client", um(1))
    o.packet("server", final_ack(INI, MESSAGES))
    o.packet("server", final_ack(INI, MESSAGES + 1))
    o.packet("server", final_ack(OTHER, 5))
    assert [(v.rule_id, v.packet_index) for v in o.violations[1:]] == [
        ("MQQB-3.1.5.8.1-duplicate", 4 + MESSAGES),
        ("MQQB-3.1.5.7-final-ack-unknown", 6 + MESSAGES),
        ("MQQB-3.1.5.7-final-ack-unknown", 7 + MESSAGES),
    ]


def test_interleaved_identifiers_stay_exact_while_they_fit_and_are_never_made_up_beyond() -> None:
    # every other MessageID (the source's others went to another session): one range each
    ids = SentIds()
    src = bytes(INI)
    for n in range(1, 2 * MAX_RANGES, 2):
        assert ids.add(src, n) is False
    assert ids.ranges() == MAX_RANGES
    assert [ids.sent(src, n) for n in (1, 2, 2 * MAX_RANGES - 1, 2 * MAX_RANGES)] == [True, False, True, False]
    assert ids.add(src, 3) is True  # a duplicate, exactly
    for n in range(2 * MAX_RANGES + 1, 200_001, 2):
        ids.add(src, n)
    assert ids.ranges() <= MAX_RANGES  # bounded
    assert ids.sent(src, 199_999) is True and ids.sent(src, 199_998) is False  # the recent ones: exact
    assert ids.sent(src, 1) is None and ids.sent(src, 2) is None  # the oldest: not known either way
    assert ids.add(src, 3) is None  # so no duplicate is reported from there
    assert ids.sent(src, 300_000) is False  # above everything seen: never sent
    # gaps filled later merge into one range
    filled = SentIds()
    for n in [*range(1, 100, 2), *range(2, 100, 2)]:
        filled.add(src, n)
    assert filled.ranges() == 1 and filled.sent(src, 99) is True and filled.sent(src, 100) is False


def test_sources_beyond_the_bound_are_forgotten_and_never_reported_unsent() -> None:
    ids = SentIds()
    sources = [n.to_bytes(16, "little") for n in range(MAX_SOURCES + 10)]
    for src in sources:
        ids.add(src, 1)
    assert len(ids) == MAX_SOURCES
    kept = sources[MAX_SOURCES - 1]  # held since before any was forgotten: exact
    assert ids.sent(kept, 1) is True and ids.sent(kept, 2) is False
    assert ids.sent(sources[-1], 1) is True and ids.sent(sources[-1], 2) is None  # came after: may be one forgotten
    assert ids.sent(sources[0], 1) is None  # forgotten: not known either way
    assert ids.sent(b"\x01" * 16, 1) is None  # a source never seen may be one forgotten
    assert ids.add(sources[0], 1) is None  # back after it was forgotten: not a known duplicate
    assert ids.sent(sources[0], 2) is None


def test_the_observer_reports_nothing_on_an_identifier_it_no_longer_knows() -> None:
    o = opened()
    data = um(1)
    packet = packets.parse(data, strict=False)
    for n in range(1, 2 * MAX_RANGES + 200, 2):  # interleaved: the oldest are folded
        packet.UserHeader.MessageID = n
        o.packet("client", data, packet)
    before = len(o.violations)
    o.packet("client", um(1))  # sent, but no longer known exactly: not reported
    o.packet("server", final_ack(INI, 2))  # not sent, but no longer known exactly: not reported
    o.packet("client", um(2 * MAX_RANGES + 197))  # recent: still a duplicate, exactly
    assert [v.rule_id for v in o.violations[before:]] == ["MQQB-3.1.5.8.1-duplicate"]


def send_sequences(o: Observer, first: int, last: int) -> None:
    """One transactional UserMessage (number 1) in each of the sequences ``first`` .. ``last``."""
    data = um(1, "transactional", tx=(first, 1, 0))
    packet = packets.parse(data, strict=False)
    for seq_id in range(first, last + 1):
        packet.TransactionHeader.TxSequenceID = Container(Ordinal=seq_id, TimeStamp=0)
        o.packet("client", data, packet)


def test_transactional_sequences_are_bounded_and_never_judged_once_forgotten() -> None:
    o = opened()
    send_sequences(o, 1, 2 * MAX_SEQUENCES)
    small = deep_size(o)
    send_sequences(o, 2 * MAX_SEQUENCES + 1, 8 * MAX_SEQUENCES)
    assert deep_size(o) - small < 1024 and len(o.client.tx_sent) == MAX_SEQUENCES
    before = len(o.violations)
    recent = 8 * MAX_SEQUENCES
    o.packet("server", order_ack(recent, 1))  # sent: fine
    o.packet("server", order_ack(recent, 2))  # never sent, exactly known
    o.packet("server", order_ack(1, 3))  # a sequence forgotten: not judged
    o.packet("server", order_ack(recent - 1, 1))
    o.packet("server", order_ack(recent, 1))  # after number 1 of that sequence: in order
    assert [v.rule_id for v in o.violations[before:]] == ["MQQB-3.1.5.6-order-ack-unsent"]
