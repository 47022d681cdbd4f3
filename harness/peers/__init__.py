"""harness.peers: the MSMQ binary protocol on real TCP sockets, around the sans-IO session engines.

Renders the transport of [MS-MQQB] 2.1.1 for both ends of a protocol session:

- :class:`SimulatedPeer`: a simulated remote queue manager (one :class:`harness.session.Acceptor`
  per connection, with fault-injection behaviours) that validates whoever connects to it and
  writes a per-connection conformance report and a pcap of the traffic, and answers Ping
  Requests on a UDP port of its own ([MS-MQQB] 2.1.2, 3.1.7.7);
- :class:`InitiatorLink`: drives a :class:`harness.session.Initiator` against any acceptor
  (the simulated peer, or a live queue manager at ``mqqb://host:port``);
- :class:`PcapRecorder`: the pcap writer with TCP framing both use.

Layer rules (the import-linter contracts of pyproject.toml): Rule 1: imports the cores
(``packets``, ``harness.model``, ``harness.session``) and nothing above them: never
``harness.capture`` (its sibling), ``harness.cases`` or ``harness.report``. Rule 2: the
recordings of a session (``harness.peers.recording``) live here; the reports only read them.
"""

from harness.peers.history import PeerConnection, PingExchange, SinkFailure
from harness.peers.link import InitiatorLink, LinkError, parse_address
from harness.peers.recorder import PcapRecorder, TcpFlow
from harness.peers.server import PeerError, SimulatedPeer

__all__ = [
    "InitiatorLink",
    "LinkError",
    "PcapRecorder",
    "PeerConnection",
    "PeerError",
    "PingExchange",
    "SimulatedPeer",
    "SinkFailure",
    "TcpFlow",
    "parse_address",
]
