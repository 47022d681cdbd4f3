"""What a wire run reads from the implementation under test is cut into the same pieces
whatever TCP's bundling (harness/cases/wireruns/framing.py; [MS-MQMQ] 2.2.19.1 PacketSize,
[MS-MQQB] 3.1.5.1.2): whole packets by PacketSize whatever their Signature, then, from the first
BaseHeader that cannot start a packet, one piece holding every byte from it on.  A loaded machine
returns other reads than a quiet one; the recorded packets, and so the verdicts, stay the same.
"""

from __future__ import annotations

import socket
import time

import packets
from harness.cases.wireruns.framing import PacketFramer
from harness.cases.wireruns.peer import SilentListener
from packets import session as sp


def _ack(number: int) -> bytes:
    return packets.build(sp.session_ack(ack_sequence_number=number, user_msg_sequence_number=number))


def _bad_signature(data: bytes) -> bytes:
    return data[:4] + b"XXXX" + data[8:]


def _bad_size(data: bytes) -> bytes:
    return data[:8] + (4).to_bytes(4, "little") + data[12:]  # PacketSize 4 < a BaseHeader's 16


GOOD, WRONG_SIGNATURE, LOST = _ack(1), _bad_signature(_ack(2)), _bad_size(_ack(3))
STREAM = GOOD + WRONG_SIGNATURE + GOOD + LOST + b"after the stream is lost"
PIECES = [GOOD, WRONG_SIGNATURE, GOOD, LOST + b"after the stream is lost"]


def _pieces(reads: list[bytes]) -> list[bytes]:
    """The pieces as a reader records them: each new piece appended, the lost stream's grown."""
    framer, out = PacketFramer(), []
    for data in reads:
        pieces = framer.feed(data)
        if not pieces and framer.unframed is not None:
            out[-1] = framer.unframed
        out.extend(pieces)
    return out


def test_every_cut_of_the_stream_into_reads_gives_the_same_pieces() -> None:
    assert _pieces([STREAM]) == PIECES
    for first in range(1, len(STREAM)):
        for second in range(first, len(STREAM), 7):
            reads = [STREAM[:first], STREAM[first:second], STREAM[second:]]
            assert _pieces([r for r in reads if r]) == PIECES, (first, second)


def _recorded(reads: list[bytes]) -> list[bytes]:
    """What a SilentListener records of a connection sending ``reads``, each taken in by the
    listener before the next is sent (a read each, as on a machine that runs it promptly)."""
    listener = SilentListener()
    try:
        with socket.create_connection(listener.address) as sock:
            sent = 0
            for data in reads:
                sock.sendall(data)
                sent += len(data)
                deadline = time.monotonic() + 10
                while sum(r.size for r in listener.records) < sent:
                    assert time.monotonic() < deadline, "the listener did not take in what was sent"
                    assert listener.sync(10)
        assert listener.sync(10)
        (record,) = listener.records
        return list(record.packets)
    finally:
        listener.close()


def test_a_silent_listener_records_the_same_packets_however_the_sender_s_bytes_were_read() -> None:
    whole = _recorded([STREAM])
    assert whole == PIECES
    cut = len(GOOD) + 6  # inside the wrong Signature: the rest of the stream in another read
    assert _recorded([STREAM[:cut], STREAM[cut : len(STREAM) - 5], STREAM[len(STREAM) - 5 :]]) == whole
