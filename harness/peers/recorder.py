"""Recording what crossed an MSMQ session's TCP connection as a pcap file with real TCP framing.

The bytes of an [MS-MQQB] 2.1.1 protocol session are written as Ethernet/IPv4 (or IPv6)/TCP
frames through scapy's ``PcapWriter``: each connection opens with SYN, SYN-ACK and ACK, every
write becomes PSH+ACK segments whose sequence and acknowledgment numbers follow RFC 9293 3.4
(the SYN and the FIN each take one sequence number), and the connection ends with FIN+ACK from
the side that closed, FIN+ACK from the other and a last ACK.  One file holds every connection.
scapy is imported when a recorder is created, not when this module is imported.

A file that cannot be opened raises ``OSError`` naming it.  After that, a failing write (a full
disk) raises the same way, naming the path, unless the recorder was made with ``on_failure``:
then the first failure cuts the file back to its last whole frame (a valid pcap of everything
before), is handed once to ``on_failure``, and every later frame is counted in ``lost``, not
written; nothing raises, so whoever records goes on as if it had not failed.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

__all__ = ["PcapRecorder", "TcpFlow"]

LINKTYPE_ETHERNET = 1
SEGMENT = 32768  # payload bytes per recorded segment: well inside an IPv4 total length of 65535
BUFFER = 1 << 16  # bytes the file buffers between writes to the disk
# Offsets of the last frame ends remembered, to cut a failed file back to a whole frame: more than
# one buffer's worth (a frame is at least 70 bytes with its record header).
FRAME_ENDS = 2048
PCAP_HEADER = 24
_MAC = "00:00:00:00:00:00"
_SYN, _ACK, _PSH, _FIN = 0x02, 0x10, 0x08, 0x01
_MOD = 1 << 32


class TcpFlow:
    """One recorded TCP connection: client (the initiator) and server (the listening end)."""

    def __init__(self, recorder: PcapRecorder, client: tuple[str, int], server: tuple[str, int], ts: float) -> None:
        self._rec = recorder
        self.client, self.server = client, server
        self._next = {"c2s": random.getrandbits(32), "s2c": random.getrandbits(32)}
        self.closed = False
        c_isn, s_isn = self._next["c2s"], self._next["s2c"]
        self._segment("c2s", c_isn, 0, _SYN, b"", ts)
        self._segment("s2c", s_isn, (c_isn + 1) % _MOD, _SYN | _ACK, b"", ts)
        self._next = {"c2s": (c_isn + 1) % _MOD, "s2c": (s_isn + 1) % _MOD}
        self._segment("c2s", self._next["c2s"], self._next["s2c"], _ACK, b"", ts)

    @staticmethod
    def _other(direction: str) -> str:
        return "s2c" if direction == "c2s" else "c2s"

    def _segment(self, direction: str, seq: int, ack: int, flags: int, payload: bytes, ts: float) -> None:
        src, dst = (self.client, self.server) if direction == "c2s" else (self.server, self.client)
        self._rec._write(src, dst, seq, ack, flags, payload, ts)

    def data(self, direction: str, payload: bytes, ts: float) -> None:
        """Bytes written by one side (``"c2s"`` or ``"s2c"``), as PSH+ACK segments."""
        if self.closed or not payload:
            return
        other = self._other(direction)
        for start in range(0, len(payload), SEGMENT):
            piece = payload[start : start + SEGMENT]
            self._segment(direction, self._next[direction], self._next[other], _PSH | _ACK, piece, ts)
            self._next[direction] = (self._next[direction] + len(piece)) % _MOD

    def fin(self, closer: str, ts: float) -> None:
        """The connection closed, ``closer`` first: FIN+ACK, FIN+ACK, ACK."""
        if self.closed:
            return
        self.closed = True
        other = self._other(closer)
        self._segment(closer, self._next[closer], self._next[other], _FIN | _ACK, b"", ts)
        self._next[closer] = (self._next[closer] + 1) % _MOD
        self._segment(other, self._next[other], self._next[closer], _FIN | _ACK, b"", ts)
        self._next[other] = (self._next[other] + 1) % _MOD
        self._segment(closer, self._next[closer], self._next[other], _ACK, b"", ts)


class PcapRecorder:
    """A pcap file (LINKTYPE_ETHERNET) receiving the segments of any number of :class:`TcpFlow`.

    ``on_failure`` (see the module docstring): called once with the ``OSError`` (its ``filename``
    the path) of the first write that failed; ``failure`` keeps it, ``frames`` counts the frames
    the file holds, ``lost`` those not written since."""

    def __init__(self, path: str | Path, on_failure: Callable[[OSError], None] | None = None) -> None:
        # scapy: optional heavy dependency, imported only when a recording is made
        from scapy.layers.inet import IP, TCP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import Ether
        from scapy.utils import PcapWriter

        self._layers: dict[str, Any] = {"Ether": Ether, "IP": IP, "IPv6": IPv6, "TCP": TCP}
        self.path = Path(path)
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self.frames = 0
        self.lost = 0
        self.failure: OSError | None = None
        self._ends: deque[tuple[int, int]] = deque(maxlen=FRAME_ENDS)  # (file offset, frames) at frame ends
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._file: IO[bytes] | None = self.path.open("wb", buffering=BUFFER)
        except OSError as e:
            raise self._named(e) from e
        self._writer = PcapWriter(self._file, linktype=LINKTYPE_ETHERNET, sync=False)
        try:
            self._writer.write_header(None)
        except OSError as e:
            self._fail(e)
        else:
            self._ends.append((PCAP_HEADER, 0))

    def _named(self, e: OSError) -> OSError:
        """``e`` with this recorder's path as its filename (a failed write has none)."""
        if e.filename is not None or e.errno is None:
            return e
        return type(e)(e.errno, e.strerror, str(self.path))

    def _fail(self, e: OSError) -> None:
        """The first failed write: close, cut back to the last whole frame, report (or raise)."""
        named = self._named(e)
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError, ValueError):
                file.close()
        if self._on_failure is None:
            raise named from e
        self.failure = named
        with contextlib.suppress(OSError):
            if self.path.is_file():  # not a device such as /dev/full
                size = self.path.stat().st_size
                whole = [(end, frames) for end, frames in self._ends if end <= size]
                end, frames = whole[-1] if whole else (0, 0)
                os.truncate(self.path, end)
                self.lost += self.frames - frames
                self.frames = frames
        self._on_failure(named)

    def flow(self, client: tuple[str, int], server: tuple[str, int], ts: float) -> TcpFlow:
        """Start recording a connection from ``client`` to ``server`` (writes the handshake)."""
        return TcpFlow(self, client, server, ts)

    def _write(
        self, src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, payload: bytes, ts: float
    ) -> None:
        L = self._layers
        ip = L["IPv6"](src=src[0], dst=dst[0]) if ":" in src[0] else L["IP"](src=src[0], dst=dst[0])
        frame = (
            L["Ether"](src=_MAC, dst=_MAC)
            / ip
            / L["TCP"](sport=src[1], dport=dst[1], seq=seq, ack=ack, flags=flags, window=65535)
        )
        if payload:
            frame = frame / payload
        frame.time = ts
        with self._lock:
            if self._file is None:
                self.lost += 1
                return
            try:
                self._writer.write(frame)
                self.frames += 1
                self._ends.append((self._file.tell(), self.frames))
            except OSError as e:
                self.lost += 1
                self._fail(e)

    def flush(self) -> None:
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.flush()
            except OSError as e:
                self._fail(e)

    def close(self) -> None:
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.flush()
            except OSError as e:
                self._fail(e)
                return
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as e:
                self._file = file
                self._fail(e)
