"""What a wire run reads from the implementation under test, cut into packets the same way
whatever TCP's bundling ([MS-MQMQ] 2.2.19.1 BaseHeader.PacketSize; [MS-MQQB] 3.1.5.1.2).

The run's own client and listener read a stream as it arrives; how many bytes one read returns
depends on the machine's load.  A :class:`PacketFramer` gives the same pieces for the same bytes
however they were read: whole packets cut by BaseHeader.PacketSize whatever their Signature (a
wrong Signature is the implementation's to answer for: the rule the Observer reports, a step's
expectation on BaseHeader.Signature), and, from the first BaseHeader that cannot start a packet
(a PacketSize out of range, 3.1.5.1.2: the stream is lost), one unframed piece holding every byte
from it on.
"""

from __future__ import annotations

from packets import PacketError, StreamSplitter

__all__ = ["PacketFramer"]


class PacketFramer:
    """Feed what a read returned; take the pieces it completed.  After the stream is lost,
    :attr:`unframed` is the piece that keeps growing (already returned once, when it began)."""

    def __init__(self) -> None:
        self._splitter = StreamSplitter(signature_checked=False)
        self._pending = bytearray()  # bytes read since the end of the last packet returned
        self._unframed: bytearray | None = None

    @property
    def unframed(self) -> bytes | None:
        """Every byte from the first BaseHeader that could not start a packet on (None while the
        stream is whole)."""
        return None if self._unframed is None else bytes(self._unframed)

    def feed(self, data: bytes) -> list[bytes]:
        """The pieces ``data`` completed, in stream order: whole packets, then the unframed piece
        when the stream is lost in ``data``.  Bytes after that are added to :attr:`unframed`."""
        if self._unframed is not None:
            self._unframed += data
            return []
        start = self._splitter.offset
        self._pending += data
        try:
            packets = [piece.data for piece in self._splitter.feed(data)]
        except PacketError:
            # the packets completed in this read before the lost one are whole: cut them again
            whole = bytes(self._pending[: self._splitter.offset - start])
            packets = [piece.data for piece in StreamSplitter(signature_checked=False).feed(whole)]
            self._unframed = self._pending[len(whole) :]
            self._pending = bytearray()
            return [*packets, bytes(self._unframed)]
        del self._pending[: sum(len(p) for p in packets)]
        return packets
