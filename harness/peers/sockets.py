"""The listening socket of a simulated queue manager ([MS-MQQB] 2.1.1: TCP, port 1801 by default),
opened alike when the peer starts and when a fault that took it down brings it back."""

from __future__ import annotations

import socket

__all__ = ["tcp_listener"]


def tcp_listener(family: socket.AddressFamily, address: tuple[str, int], max_connections: int) -> socket.socket:
    """A listening TCP socket on ``address`` (connections beyond the backlog wait in the kernel
    until the loop accepts them); raises OSError, the socket closed, when it cannot listen."""
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(min(max(max_connections, 16), socket.SOMAXCONN))
    except OSError:
        listener.close()
        raise
    return listener
