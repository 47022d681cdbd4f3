"""The port of an initiator wire case whose peer is ``listening: false`` ([MS-MQQB] 3.1.5.2: a
connection that fails): it refuses connections, and no other listener can take it while the
case runs (another case's peer bound to it would accept the sender's connection)."""

from __future__ import annotations

import socket

import pytest

from harness.cases.wireruns.initiator import _ClosedPort


def test_the_port_refuses_connections_and_stays_reserved() -> None:
    view = _ClosedPort()
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(view.address, timeout=5).close()
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(view.address)
    finally:
        view.close()
