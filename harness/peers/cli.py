"""``msmq-harness peer``: run a simulated remote queue manager on a TCP socket.

Stands in for the acceptor of [MS-MQQB] 2.1.1 / 3.1.5.10 (see :mod:`harness.peers.server`):
answers EstablishConnection and ConnectionParameters, accepts UserMessages, acknowledges them, with
the chosen fault behaviour; checks every initiator that connects and writes its violations as JSON
lines (``--report``) and the traffic as a pcap (``--record``).  Listens on loopback only unless
``--allow-non-loopback`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import signal
import socket
import sys
import threading
from typing import Any

__all__ = ["add_parser", "cmd_peer", "is_loopback", "list_behaviours"]


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def _listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    number = int(port)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"port {number} is out of range")
    return host.strip("[]"), number


def _time_scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time scale (a number > 0)")
    return value


def list_behaviours() -> list[str]:
    """One line per behaviour: name, family (fault or boundary), what it does, the sections that
    make a boundary behaviour legal; then the parametrised families."""
    from harness.session import BEHAVIOURS

    width = max(len(n) for n in BEHAVIOURS)
    lines = []
    for name, b in BEHAVIOURS.items():
        family = "boundary" if b.boundary else ("normal" if name == "normal" else "fault")
        legal = f" [{', '.join(b.sections)}]" if b.sections else ""
        lines.append(f"{name:<{width}}  {family:<8}  {b.summary}{legal}")
    lines += [
        f"{'close-after-<N>':<{width}}  {'fault':<8}  closes after N packets",
        f"{'window-<N>':<{width}}  {'fault':<8}  advertises WindowSize N",
        f"{'slow-reader-<N>':<{width}}  {'fault':<8}  reads N bytes per second",
    ]
    return lines


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``peer`` on the ``msmq-harness`` subcommand parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "peer", help="run a simulated remote queue manager (acceptor) that checks whoever connects"
    )
    p.add_argument("--listen", type=_listen_address, metavar="HOST:PORT", help="e.g. 127.0.0.1:1801")
    p.add_argument("--behaviour", default="normal", metavar="NAME", help="acceptor behaviour (see --list-behaviours)")
    p.add_argument("--record", metavar="FILE.pcap", help="write the traffic as a pcap with TCP framing")
    p.add_argument("--report", metavar="FILE.jsonl", help="write each initiator violation as a JSON line")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until interrupted)")
    p.add_argument("--max-connections", type=int, default=256, metavar="N")
    p.add_argument(
        "--read-timeout", type=float, default=10.0, metavar="S", help="close a connection stalled mid-packet"
    )
    p.add_argument(
        "--ping-port",
        type=int,
        default=0,
        metavar="PORT",
        help="UDP port answering Ping Requests ([MS-MQQB] 2.1.2 names 3527; default 0: an ephemeral one; -1: none)",
    )
    p.add_argument("--identifier", metavar="GUID", help="QueueManager.Identifier of the simulated queue manager")
    p.add_argument(
        "--time-scale",
        type=_time_scale,
        default=1.0,
        metavar="S",
        help="run the [MS-MQQB] 3.1.2 timers S times their durations (default 1; e.g. 0.05 with "
        "--target mqqb://HOST:PORT?scale=0.05)",
    )
    p.add_argument("--allow-non-loopback", action="store_true", help="listen on an address that is not loopback")
    p.add_argument("--list-behaviours", action="store_true", help="print the behaviours (fault and boundary) and stop")
    p.set_defaults(func=cmd_peer)
    return p


def cmd_peer(args: argparse.Namespace) -> int:
    from harness.peers.server import PeerError, SimulatedPeer

    if args.list_behaviours:
        print("\n".join(list_behaviours()))
        return 0
    if args.listen is None:
        print("msmq-harness peer: --listen HOST:PORT is required", file=sys.stderr)
        return 2
    host, port = args.listen
    if not args.allow_non_loopback and not is_loopback(host):
        print(
            f"msmq-harness peer: {host} is not a loopback address; pass --allow-non-loopback to listen on it",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if previous is not None:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        peer = SimulatedPeer(
            host,
            port,
            behaviour=args.behaviour,
            identifier=args.identifier,
            record=args.record,
            report=args.report,
            read_timeout=args.read_timeout,
            max_connections=args.max_connections,
            ping_port=None if args.ping_port < 0 else args.ping_port,
            time_scale=args.time_scale,
        )
        with peer:
            h, p = peer.address
            shown = f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
            pinged = ""
            if peer.ping_port is not None:
                pinged = f", pings on UDP port {peer.ping_address[1]}"
            scaled = f", timers x{peer.time_scale:g}" if peer.time_scale != 1 else ""
            print(
                f"listening on {shown} as {peer.identifier}, behaviour {peer.behaviour.name}{pinged}{scaled}",
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait(args.duration)
    except (PeerError, ValueError) as e:
        print(f"msmq-harness peer: {e}", file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    connections = peer.connections
    total = 0
    for c in connections:
        total += len(c.violations)
        note = f", error: {c.error}" if c.error else ""
        print(
            f"connection {c.index} from {c.client[0]}:{c.client[1]} [{c.behaviour}]: {len(c.packets)} packets, "
            f"{len(c.delivered)} delivered, {len(c.violations)} violations, closed by {c.closed_by or '-'}{note}"
        )
        for v in c.violations:
            print(f"  {v.section} {v.rule_id} (packet {v.packet_index}): {v.evidence}")
    rejected = f", {peer.rejected} rejected" if peer.rejected else ""
    print(f"{len(connections)} connections, {total} violations{rejected}")
    for label, path in (("record", args.record), ("report", args.report)):
        if path:
            print(f"{label}: {path}")
    return 1 if total else 0
