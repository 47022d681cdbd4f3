"""``msmq-harness peer``: run a simulated remote queue manager on a TCP socket.

Stands in for the acceptor of [MS-MQQB] 2.1.1 / 3.1.5.10 (see :mod:`harness.peers.server`):
answers EstablishConnection and ConnectionParameters, accepts UserMessages, acknowledges them, with
the chosen fault behaviour; checks every initiator that connects and writes its violations as JSON
lines (``--report``) and the traffic as a pcap (``--record``), both written as they happen; keeps
the details of the last ``--history`` packets in memory and counts everything.  Listens on loopback
only unless ``--allow-non-loopback`` is given.

Exit status: 0 no violation, 1 violations, 2 a usage or set-up error, 3 the peer stopped (SIGINT,
SIGTERM or ``--duration``) while a connection's packet was unfinished: that connection's verdict is
incomplete, 4 an output could not be written completely (``--report`` or ``--record`` failed, e.g.
a full disk, or the summary could not be printed): the peer went on serving and the output is
incomplete; it is named on stderr once, when it failed, and in the summary.
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

from harness.argtypes import count, seconds
from harness.peers.faults import fault_lines
from harness.peers.server import HISTORY, HISTORY_BYTES, PeerError, SimulatedPeer
from harness.session import BEHAVIOURS
from harness.session.acceptor import READING_BEHAVIOURS

__all__ = ["add_parser", "cmd_peer", "is_loopback", "list_behaviours"]

STOPPED_MID_PACKET = 3  # exit status: a connection's packet was unfinished when the peer stopped
OUTPUT_INCOMPLETE = 4  # exit status: --report, --record or the summary could not be written completely


class _Stdout:
    """Prints that never stop the peer: the first failure is said once on stderr, then nothing
    more is printed and ``failed`` holds the reason."""

    def __init__(self) -> None:
        self.failed: str | None = None

    def say(self, text: str) -> None:
        if self.failed is not None:
            return
        try:
            print(text, flush=True)
        except OSError as e:
            self.failed = e.strerror or str(e)
            _warn(f"cannot write to standard output: {self.failed}; the summary is incomplete")


def _warn(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"msmq-harness peer: {text}", file=sys.stderr, flush=True)


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


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def list_behaviours() -> list[str]:
    """One line per behaviour: name, family (fault, boundary or reading), what it does, the
    sections that make a boundary or reading behaviour legal (a reading behaviour also names the
    interpretation and the reading it takes); then the parametrised families."""
    width = max(len(n) for n in [*BEHAVIOURS, *READING_BEHAVIOURS])
    lines = []
    for name, b in [*BEHAVIOURS.items(), *READING_BEHAVIOURS.items()]:
        family = "boundary" if b.boundary else ("normal" if name == "normal" else "reading" if b.readings else "fault")
        legal = f" [{', '.join(b.sections)}]" if b.sections else ""
        taken = "; ".join(f"{alternative} of {rid}" for rid, alternative in b.readings)
        takes = f" (reading {taken})" if taken else ""
        lines.append(f"{name:<{width}}  {family:<8}  {b.summary}{takes}{legal}")

    lines += fault_lines(width)  # input-triggered crashes and hangs
    lines += [
        f"{'close-after-<N>':<{width}}  {'fault':<8}  closes after N packets",
        f"{'window-<N>':<{width}}  {'fault':<8}  advertises WindowSize N",
        f"{'window-<N>-late-ack':<{width}}  {'fault':<8}  advertises WindowSize N, SessionAcks on its timer only",
        f"{'slow-reader-<N>':<{width}}  {'fault':<8}  reads N bytes per second",
    ]
    return lines


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``peer`` on the ``msmq-harness`` subcommand parser."""
    p: argparse.ArgumentParser = sub.add_parser(
        "peer", help="run a simulated remote queue manager (acceptor) that checks whoever connects"
    )
    _add_serving(p)
    _add_limits(p)
    _add_queue_manager(p)
    p.set_defaults(func=cmd_peer)
    return p


def _add_serving(p: argparse.ArgumentParser) -> None:
    """Where the peer listens, how it behaves, and where its outputs go."""
    p.add_argument("--listen", type=_listen_address, metavar="HOST:PORT", help="e.g. 127.0.0.1:1801")
    p.add_argument("--behaviour", default="normal", metavar="NAME", help="acceptor behaviour (see --list-behaviours)")
    p.add_argument(
        "--record",
        metavar="FILE.pcap",
        help="write the traffic as a pcap with TCP framing (a write that fails, e.g. a full disk, ends the "
        "recording only: named on stderr, exit status 4)",
    )
    p.add_argument(
        "--report",
        metavar="FILE.jsonl",
        help="write each initiator violation as a JSON line (a write that fails ends the report only: named "
        "on stderr, exit status 4)",
    )


def _add_limits(p: argparse.ArgumentParser) -> None:
    """How long the peer runs and what it keeps."""
    p.add_argument(
        "--duration",
        type=seconds(allow_zero=True),
        metavar="S",
        help="stop after S seconds (default: until interrupted)",
    )
    p.add_argument(
        "--max-connections",
        type=count(1),
        default=256,
        metavar="N",
        help="connections served at once (default 256); beyond them a newcomer takes the slot of the longest-idle "
        "connection, one that never sent a byte first",
    )
    p.add_argument(
        "--read-timeout",
        type=seconds(),
        default=10.0,
        metavar="S",
        help="close a connection whose packet is not complete S seconds after its first byte (default 10)",
    )
    p.add_argument(
        "--history",
        type=_positive,
        default=HISTORY,
        metavar="N",
        help=f"keep the details of the last N packets, deliveries, violations, closed connections and pings "
        f"(default {HISTORY}); everything is counted",
    )
    p.add_argument(
        "--history-mb",
        type=_positive,
        default=HISTORY_BYTES >> 20,
        metavar="MB",
        help=f"keep no more than MB mebibytes of packet details (default {HISTORY_BYTES >> 20})",
    )


def _add_queue_manager(p: argparse.ArgumentParser) -> None:
    """The simulated queue manager's Ping port, identifier and timers, and the options that stop
    before serving."""
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


def cmd_peer(args: argparse.Namespace) -> int:
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
    out = _Stdout()
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)} if main else {}
    for sig in previous:  # both stop the peer the same way: every connection closed, then the summary
        signal.signal(sig, lambda *_: stop.set())
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
            history=args.history,
            history_bytes=args.history_mb << 20,
            on_sink_failure=lambda failure: _warn(str(failure)),
        )
        with peer:
            h, p = peer.address
            shown = f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
            pinged = ""
            if peer.ping_port is not None:
                pinged = f", pings on UDP port {peer.ping_address[1]}"
            scaled = f", timers x{peer.time_scale:g}" if peer.time_scale != 1 else ""
            out.say(f"listening on {shown} as {peer.identifier}, behaviour {peer.behaviour.name}{pinged}{scaled}")
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait(args.duration)
    except (PeerError, ValueError) as e:
        print(f"msmq-harness peer: {e}", file=sys.stderr)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return _summary(peer, args, out)


def _summary(peer: Any, args: argparse.Namespace, out: _Stdout | None = None) -> int:
    """Print what the peer saw (the connections it still holds in detail, then the totals) and
    return the exit status."""
    out = out or _Stdout()
    connections = peer.connections
    for c in connections:
        note = f", error: {c.error}" if c.error else ""
        closed = f"closed by {c.closed_by or '-'}" + (f" ({c.close_reason})" if c.closed_by == "stopped" else "")
        out.say(
            f"connection {c.index} from {c.client[0]}:{c.client[1]} [{c.behaviour}]: {c.packet_count} packets, "
            f"{c.delivered_count} delivered, {c.violation_count} violations, {closed}{note}"
        )
        for v in c.violations:
            out.say(f"  {v.section} {v.rule_id} (packet {v.packet_index}): {v.evidence}")
        if len(c.violations) < c.violation_count:
            out.say(f"  ({c.violation_count - len(c.violations)} earlier violations left the history; see --report)")
    t = peer.totals
    rejected = (f", {t.evicted} evicted" if t.evicted else "") + (f", {t.rejected} rejected" if t.rejected else "")
    left = t.connections - len(connections)
    shown = f" ({left} earlier ones left the history)" if left else ""
    out.say(
        f"{t.connections} connections{shown}, {t.packets} packets, {t.delivered} delivered, "
        f"{t.violations} violations{rejected}"
    )
    failed = {f.sink: f for f in peer.sink_failures}
    for label, path in (("record", args.record), ("report", args.report)):
        if path:
            f = failed.get(label)
            note = f" (incomplete: {f.error}; {f.written} {f.unit} written, {f.lost} lost)" if f else ""
            out.say(f"{label}: {path}{note}")
    cut = [c for c in connections if c.stopped_mid_packet]
    if cut:
        which = ", ".join(str(c.index) for c in cut)
        out.say(f"stopped with an unfinished packet on connection {which}: the verdict on it is incomplete")
    if failed or out.failed is not None:
        return OUTPUT_INCOMPLETE
    if cut:
        return STOPPED_MID_PACKET
    return 1 if t.violations else 0
