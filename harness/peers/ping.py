"""The simulated peer's Ping responder: [MS-MQQB] 2.1.2 Ping Requests over UDP, answered as
3.1.7.7 Receive Ping Request says (harness.session.ping_response), with the behaviour the next
connection would get (RF set for ``refuse`` and ``ping-refuse``, no answer for ``ping-silent``).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

from harness.peers.history import PingExchange
from harness.session import AcceptorBehaviour, ping_response
from packets import GUID

__all__ = ["answer_pings"]

log = logging.getLogger(__name__)

PINGS_PER_ROUND = 64  # bounded: the TCP connections get their turn


def answer_pings(
    sock: socket.socket,
    identifier: GUID,
    behaviour: Callable[[], AcceptorBehaviour],
    keep: Callable[[PingExchange], None],
) -> None:
    """[MS-MQQB] 3.1.7.7 Receive Ping Request for every datagram waiting on ``sock``; the Ping
    Response goes to the request's source address and port (2.1.2).  ``behaviour()``: the one
    that answers; ``keep``: takes each exchange before its response goes out (whoever got the
    response finds it kept)."""
    for _ in range(PINGS_PER_ROUND):
        try:
            data, source = sock.recvfrom(2048)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # e.g. an ICMP error for an earlier response
            log.debug("ping socket: %s", e)
            continue
        answering = behaviour()
        try:
            response = ping_response(data, identifier, answering)
        except Exception:
            log.debug("ping request from %s failed", source, exc_info=True)
            response = None
        keep(PingExchange(source[:2], data, response, answering.name, time.time()))
        if response is not None:
            try:
                sock.sendto(response, source)
            except OSError as e:
                log.debug("ping response to %s failed: %s", source, e)
