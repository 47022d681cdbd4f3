"""An MSMQ binary session a scapy user drives by hand: crafted layers in, decoded layers out.

Renders the initiator side of [MS-MQQB] 2.1.1 and 3.1.5.2-3.1.5.4 (EstablishConnection and
ConnectionParameters, done by the project's sans-IO :class:`harness.session.Initiator`) on the
same transport as the live-peer client (:class:`harness.peers.link.InitiatorLink`: a plain socket,
``packets.StreamSplitter`` framing, the engine's timers on a monotonic clock), then hands the
session to the user:

```python
from harness.peers.scapy_session import ScapySession
from packets.scapy_layers import MSMQ

with ScapySession(("127.0.0.1", 1801)) as s:      # connects, EC + CP through the engine
    s.send(MSMQ(UserHeader={...}, MessagePropertiesHeader={"MessageBody": b"hi"}))
    reply = s.recv(timeout=2)                     # an MSMQ layer (a SessionAck, ...) or None
    s.violations                                  # the peer's rule breaks the engine saw
```

``send`` writes the layer's bytes exactly as crafted (``raw(layer)``: ``packets.build`` of its
fields); the engine is not asked, so nothing is corrected.  A UserMessage sent this way is counted
in the engine's session counters ([MS-MQQB] 3.1.1.4 MessageSentCount, RecoverableMessageSentCount)
so that the peer's SessionAck for it does not read as a count mismatch.  ``send_message`` instead
hands a UserMessage to the engine, which numbers and acknowledges it as 3.1.7.1 says.  Every
packet the peer sends is both given to the engine (which checks it, answers it, and reports the
peer's violations) and kept for ``recv`` as an :class:`~packets.scapy_layers.MSMQ` layer.

Bounded in time: every wait (``connect``, ``recv``, ``wait``, ``sr1``, the flush after ``send``)
has a timeout, the session's ``timeout`` (seconds) unless one is given.  The engine and its timers
run only while one of these waits (everything happens in the caller's thread).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.peers.link import InitiatorLink, LinkError
from harness.session import DeliveryClass, Initiator, RuleViolation, SessionConfig, SessionState
from packets import GUID, NULL_GUID, PacketError
from packets import parse as parse_packet
from packets.layout import PacketKind

__all__ = ["ScapySession", "ScapySessionError"]


class ScapySessionError(HarnessError):
    """The session could not be established, or was used after it closed."""


class _Link(InitiatorLink):
    """An InitiatorLink that can also write bytes the engine did not produce."""

    def send_raw(self, data: bytes) -> None:
        if self._sock is None:
            raise ScapySessionError("not connected (the peer closed the session, or it was never opened)")
        ts = time.time()
        self._out += data
        self.packets.append(("c2s", data, ts))
        if self._flow is not None:
            self._flow.data("c2s", data, ts)
        self._flush(block=True)


class ScapySession:
    """One protocol session to ``address`` (``(host, port)``, ``"host:port"`` or ``mqqb://...``).

    ``identifier``: this end's QM GUID (random when None); ``remote_qm``: the acceptor's, NULL to
    take what its EstablishConnection response names; ``record``: a pcap of the connection.
    ``connect=False`` leaves :meth:`connect` to the caller.
    """

    def __init__(
        self,
        address: tuple[str, int] | str,
        *,
        identifier: GUID | bytes | str | None = None,
        remote_qm: GUID | bytes | str = NULL_GUID,
        timeout: float = 5.0,
        config: SessionConfig | None = None,
        record: str | Path | None = None,
        connect: bool = True,
    ) -> None:
        self.timeout = float(timeout)
        self.identifier = GUID(identifier) if identifier is not None else GUID(uuid.uuid4())
        self.engine = Initiator(self.identifier, remote_qm, config=config or SessionConfig(), address="")
        self.link = _Link(self.engine, address, timeout=self.timeout, record=record)
        self._read = 0  # packets of link.packets already looked at by recv
        if connect:
            self.connect()

    # -- establishing ----------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The engine's SessionState ([MS-MQQB] 3.1.1.3.1)."""
        return self.engine.SessionState

    @property
    def is_open(self) -> bool:
        return self.state is SessionState.OPEN and self.link.connected

    def connect(self, timeout: float | None = None) -> ScapySession:
        """Open the connection and run EstablishConnection and ConnectionParameters ([MS-MQQB]
        3.1.5.2-3.1.5.4) through the engine until the session is OPEN; raises
        :class:`ScapySessionError` when it is not within ``timeout`` seconds."""
        self.link.start()
        limit = self.timeout if timeout is None else timeout
        opened = self.link.run_until(lambda: self.is_open or bool(self.link.closes), limit)
        if not opened or not self.is_open:
            why = self.link.connect_errors or self.link.resolve_errors or [c.reason for c in self.link.closes]
            raise ScapySessionError(f"no open session after {limit} s (state {self.state.value}): {why}")
        self._read = len(self.link.packets)  # the handshake is not for recv
        return self

    # -- sending and receiving -------------------------------------------------------------------

    def send(self, layer: Any) -> bytes:
        """Write ``layer`` (an MSMQ layer, or any scapy packet or bytes) as crafted; returns the bytes."""
        data = bytes(layer)
        self.link.send_raw(data)
        try:
            sent = parse_packet(data, strict=False)
        except PacketError:
            return data
        if sent.kind is PacketKind.UserMessage:
            counters = self.engine.counters
            counters.MessageSentCount += 1
            if int(sent.headers.UserHeader.Flags) >> 5 & 0x3:  # DM: recoverable or transactional
                counters.RecoverableMessageSentCount += 1
        return data

    def send_message(self, message: Any, delivery: DeliveryClass | str = DeliveryClass.express) -> int:
        """Hand a UserMessage (an MSMQ layer, a Packet or headers) to the engine ([MS-MQQB] 3.1.7.1:
        it assigns the MessageID, the session's sequence numbers and, for a transactional message,
        the TransactionHeader); returns the UserHeader.MessageID it used."""
        if hasattr(message, "to_headers"):
            message = message.to_headers()
        self.link.send_message(message, delivery)
        self.link.step(0)
        return int(self.engine.last_message_id)

    def recv(self, timeout: float | None = None) -> Any:
        """The next packet the peer sent, as an MSMQ layer (its ``decoded``/``violations`` are the
        codec's), or None when none arrives within ``timeout`` seconds or the session closed."""
        from packets.scapy_layers import MSMQ  # scapy: optional heavy dependency, only for MSMQ layers asked for

        def arrived() -> bool:
            return self._next_index() is not None or not self.link.connected

        with contextlib.suppress(LinkError):  # the link was closed: nothing more arrives
            self.link.run_until(arrived, self.timeout if timeout is None else timeout)
        index = self._next_index()
        if index is None:
            return None
        self._read = index + 1
        _, data, ts = self.link.packets[index]
        layer = MSMQ(data)
        layer.time = ts
        return layer

    def _next_index(self) -> int | None:
        for i in range(self._read, len(self.link.packets)):
            if self.link.packets[i][0] == "s2c":
                return i
        return None

    def sr1(self, layer: Any, timeout: float | None = None) -> Any:
        """``send`` then ``recv``: the first packet the peer sends after it (or None)."""
        self._read = len(self.link.packets)
        self.send(layer)
        return self.recv(timeout)

    def wait(self, seconds: float) -> None:
        """Let the engine run (read, answer, fire timers) for ``seconds``."""
        if self.link.connected:
            self.link.run_until(lambda: not self.link.connected, seconds)

    # -- what happened ---------------------------------------------------------------------------

    @property
    def violations(self) -> list[RuleViolation]:
        """The peer's rule breaks the engine saw ([MS-MQQB] 3.1.5.1-3.1.5.8)."""
        return list(self.link.violations)

    @property
    def closed(self) -> bool:
        """Whether the connection is gone (the peer closed it, the engine did, or :meth:`close`)."""
        return not self.link.connected

    def received(self) -> list[Any]:
        """Every packet the peer sent on this session so far, as MSMQ layers."""
        from packets.scapy_layers import MSMQ  # scapy: optional heavy dependency, only for MSMQ layers asked for

        return [MSMQ(data) for direction, data, _ in self.link.packets if direction == "s2c"]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.link.close()

    def __enter__(self) -> ScapySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ScapySession {self.link.address[0]}:{self.link.address[1]} {self.state.value}>"
