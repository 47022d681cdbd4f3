"""The engines keep of the wire what a constant bounds, not what the packets add up to, and judge
nothing on an identifier that fell out of the bound (as the Observer, test_observer_memory):

- the Acceptor's MessageIDs of one session ([MS-MQQB] 3.1.5.8.1 duplicate detection) are ranges
  per SourceQueueManager (harness.session.msgids.SentIds);
- the Initiator's MessageIDs and TxSequenceIDs sent (3.1.5.7 FinalAck, 3.1.5.6 OrderAck) are ranges
  (harness.session.msgids.Ranges), the packets it received for its caller the latest ones;
- what a receiver keeps per sending queue manager (TxSequenceChecker, 3.1.1.5; the Acceptor's
  incoming transactional sequences, [MS-MQDMPR] 3.1.1.5) is kept for a bounded number of them.

Each test fails on engines that keep everything: the structure grows with the packets, and a
verdict is given on an identifier the bound forgot."""

from __future__ import annotations

import copy
import pickle

from brokenstreams import ACC, INI, cp, ec, um
from construct import Container
from sessionloop import Wire

import packets
from benchmarks.bench_memory import deep_size
from harness.session import Acceptor, Initiator, Observer, user_message
from harness.session.actions import DeliveryClass, SessionConfig
from harness.session.msgids import MAX_RANGES, MAX_REMOTE_QUEUE_MANAGERS, MAX_SOURCES, PACKETS_KEPT
from packets import GUID, UserMessageTemplate
from packets import session as sp

DUPLICATE = "MQQB-3.1.5.8.1-duplicate"
PRIOR = "MQQB-3.1.1.5-prior-sequence"
UNKNOWN_FINAL_ACK = "MQQB-3.1.5.7-final-ack-unknown"


def _open_acceptor(client: GUID = INI) -> Acceptor:
    a = Acceptor(ACC)
    a.connection_made()
    a.receive_data(ec(client=client))
    a.receive_data(cp())
    return a


def _rules(a: Acceptor | Observer, since: int = 0) -> list[str]:
    return [v.rule_id for v in list(a.violations)[since:]]


def _template() -> UserMessageTemplate:
    return UserMessageTemplate(user_message(INI, ACC, b"m", message_id=1))


def test_the_acceptor_keeps_a_sessions_message_ids_bounded_and_judges_only_those_it_knows() -> None:
    a = Acceptor(ACC)  # the violations kept: the verdicts are read from them
    a.connection_made()
    a.receive_data(ec())
    a.receive_data(cp())
    template = _template()
    a.receive_data(b"".join(template.build(n, b"m") for n in range(1, 2 * MAX_RANGES, 2)))
    small = deep_size(a._session_message_ids)
    # every other MessageID (the source's others went to other sessions): a range each
    for first in range(2 * MAX_RANGES + 1, 40_001, 2_000):
        a.receive_data(b"".join(template.build(n, b"m") for n in range(first, first + 2_000, 2)))
    assert a.counters.MessageReceivedCount == 20_000 + MAX_RANGES
    grown = deep_size(a._session_message_ids) - small
    assert grown < 2048, f"{grown} bytes more for 20,000 MessageIDs"  # before: a set of every one, ~2 MB
    before = len(a.violations)
    a.receive_data(template.build(39_999, b"m"))  # recent: a duplicate, exactly known
    a.receive_data(template.build(1, b"m"))  # received, but folded out of the bound: not judged
    a.receive_data(template.build(40_001, b"m"))  # never received: fine
    assert _rules(a, before) == [DUPLICATE]
    a.connection_made()  # a new session: nothing received on it yet
    a.receive_data(ec())
    a.receive_data(cp())
    a.receive_data(template.build(39_999, b"m"))
    assert _rules(a, before) == [DUPLICATE]


def test_the_observer_forgets_the_least_recent_senders_sequences_and_judges_none_of_them() -> None:
    o = Observer(ACC)
    reply = packets.build(sp.establish_connection(INI, ACC, 1000, response=True))
    for sender, data in (("client", ec()), ("server", reply), ("client", cp()), ("server", cp())):
        o.packet(sender, data)
    data = um(1, "transactional", tx=(5, 1, 0))
    packet = packets.parse(data, strict=False)
    sources = [GUID(n.to_bytes(16, "little")) for n in range(1, 2 * MAX_SOURCES + 1)]
    for n, source in enumerate(sources, 1):  # each sender one message of its sequence 5
        packet.UserHeader.SourceQueueManager = source
        packet.UserHeader.MessageID = n
        o.packet("client", data, packet)
    assert len(o._tx.seen) == MAX_SOURCES  # before: every sender kept
    assert deep_size(o._tx.seen) < 64 * 1024
    before = len(o.violations)
    packet.TransactionHeader.TxSequenceID = Container(Ordinal=4, TimeStamp=0)  # an older sequence
    for source in (sources[0], sources[-1]):  # forgotten, then recent
        packet.UserHeader.SourceQueueManager = source
        packet.UserHeader.MessageID += 1
        o.packet("client", data, packet)
    assert _rules(o, before) == [PRIOR]
    assert o.violations[-1].packet_index == o.packets - 1  # the recent sender's


def test_the_acceptor_keeps_a_bounded_number_of_remote_queue_managers() -> None:
    first, last = GUID(b"\x01" * 16), GUID(b"\x02" * 16)
    a = Acceptor(ACC, keep=0)
    for n in range(MAX_REMOTE_QUEUE_MANAGERS + 100):  # each connection another initiator
        client = first if n == 0 else last if n == MAX_REMOTE_QUEUE_MANAGERS + 99 else GUID(n.to_bytes(16, "big"))
        a.connection_made()
        a.receive_data(ec(client=client) + cp() + um(1, "transactional", tx=(5, 1, 0)))
    assert len(a.incoming_tx) == MAX_REMOTE_QUEUE_MANAGERS  # before: one entry per initiator ever met
    assert len(a.tx_checker.seen) == MAX_SOURCES
    assert bytes(first) not in a.incoming_tx and a.incoming_tx[bytes(last)] == [5, 1]
    verdicts = []
    for client in (first, last):  # each back with an older sequence: only the one still known is judged
        b = _open_acceptor(client)
        b.incoming_tx, b.tx_checker = a.incoming_tx, a.tx_checker  # the queue manager's state
        b.receive_data(um(2, "transactional", tx=(4, 1, 0)))
        verdicts.append(_rules(b))
    assert verdicts == [[], [PRIOR]]


def test_the_initiator_keeps_its_message_ids_as_ranges_and_judges_only_those_it_knows() -> None:
    w = Wire(Initiator(INI, ACC), Acceptor(ACC, keep=0))
    w.start()
    # MessageIDs every other number (others of this queue manager went elsewhere): a range each
    for mid in range(1, 10_001, 2):
        w.send(user_message(INI, ACC, b"x", message_id=mid))
    w.finish(max_steps=200_000)
    assert len(w.acked) == 5_000
    i = w.i
    assert deep_size(i.sent_message_ids) < 4096  # before: a set of every MessageID sent, ~270 KB
    before = len(i.violations)
    for mid in (9_999, 9_998, 2):  # sent; never sent (recent: exactly known); folded: not judged
        fa = sp.final_ack(1, 1, 0, INI, mid, source_qm=ACC, destination_qm=INI, message_id=700 + mid % 7)
        i.receive_data(packets.build(fa))  # injected: what the initiator answers goes nowhere
    assert [v.rule_id for v in list(i.violations)[before:]] == [UNKNOWN_FINAL_ACK]
    assert f"MessageID {9_998}" in i.violations[-1].evidence


def test_the_initiator_keeps_its_transactional_sequences_as_ranges() -> None:
    # the OrderAck after the SessionAck: the sequence is complete when it comes (3.1.5.6)
    w = Wire(Initiator(INI, ACC), Acceptor(ACC, config=SessionConfig(order_ack_timeout=2.0), keep=0))
    w.start()
    for n in range(2_000):  # one message per sequence: each OrderAcked before the next is sent
        w.send(user_message(INI, ACC, b"t%d" % n), "transactional")
        w.finish(max_steps=200_000)
    i = w.i
    assert i.OutgoingTxSequenceID == 2_001 and len(w.acked) == 2_000
    assert deep_size(i.used_tx_sequence_ids) < 1024  # before: a set of 2,000 TxSequenceIDs, ~100 KB


def test_the_acceptor_keeps_the_latest_packets_it_delivered() -> None:
    a = Acceptor(ACC)  # keep left out: the violations all kept, the delivered packets the latest
    a.connection_made()
    a.receive_data(ec())
    a.receive_data(cp())
    template = _template()
    for first in range(1, 3 * PACKETS_KEPT, 500):
        a.receive_data(b"".join(template.build(n, b"m") for n in range(first, first + 500)))
    assert a.counters.MessageReceivedCount > 2 * PACKETS_KEPT and not a.violations
    assert len(a.delivered) == PACKETS_KEPT  # before: every UserMessage delivered
    assert int(a.delivered[-1].UserHeader.MessageID) == first + 499


def test_the_initiator_keeps_the_latest_packets_it_received() -> None:
    w = Wire(Initiator(INI, ACC), Acceptor(ACC, keep=0))
    w.start()
    w.finish()
    i = w.i
    headers = user_message(ACC, INI, b"back", message_id=1, delivery=DeliveryClass.express)
    template = UserMessageTemplate(headers)
    for first in range(1, 3 * PACKETS_KEPT, 500):
        i.receive_data(b"".join(template.build(n, b"back") for n in range(first, first + 500)))
    assert i.counters.MessageReceivedCount > 2 * PACKETS_KEPT
    assert len(i.received) == PACKETS_KEPT  # before: every UserMessage received
    assert int(i.received[-1].UserHeader.MessageID) == first + 499
    fa = packets.build(sp.final_ack(1, 1, 0, INI, 1, source_qm=ACC, destination_qm=INI, message_id=1))
    for _ in range(2 * PACKETS_KEPT):
        i.receive_data(fa)
    assert len(i.final_acks) == PACKETS_KEPT


def test_the_bounded_state_is_the_same_after_pickling() -> None:
    """Spark ships engines and observers pickled: a bound holds the same keys on the other side."""
    a = Acceptor(ACC)
    for n in range(MAX_SOURCES + 44):  # more than the default bound of a Recent, fewer than this one's
        a.incoming_tx[n.to_bytes(16, "big")] = [1, n]
    again = pickle.loads(pickle.dumps(a.incoming_tx))
    assert list(again.items()) == list(a.incoming_tx.items()) and again.limit == MAX_REMOTE_QUEUE_MANAGERS
    assert copy.deepcopy(a.incoming_tx) == a.incoming_tx and a.incoming_tx.copy() == a.incoming_tx
