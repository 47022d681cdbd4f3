"""The reference adapter (examples/reference_adapter.py) with a sender that hangs: a session that
receives a whole SessionAck Packet that does not decode ([MS-MQQB] 2.2.6; a conformant sender discards it
and closes the session, 3.1.5.1.3, or closes it as wrong for the state, 3.1.5.5) stops: it sends
nothing more, runs no timer and never closes, whatever its state.  A faulty implementation for
tests/fuzz/test_fuzz_sender.py to find."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import packets
from harness.session import initiator

_receive = initiator.Initiator.receive_data


def _malformed_session_ack(data: bytes) -> bool:
    """A whole SessionAck Packet whose fields break a rule of 2.2.6 (strict decoding fails)."""
    try:
        if packets.parse(data, strict=False).kind.value != "SessionAck":
            return False
    except packets.PacketError:
        return False  # not a whole packet: the session waits for the rest, as every sender does
    try:
        packets.parse(data, strict=True)
    except packets.PacketError:
        return True
    return False


def _hanging(self: Any, data: bytes) -> Any:
    if _malformed_session_ack(data):
        self._out.clear()
        self._take = list  # every action of the session from now on is dropped: it hangs
        return []
    return _receive(self, data)


initiator.Initiator.receive_data = _hanging  # type: ignore[method-assign]

from examples.reference_adapter import main  # noqa: E402

sys.exit(main())
