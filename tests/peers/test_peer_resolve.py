"""[MS-MQQB] 3.1.5.2.1 Resolve Host Address at the IO edge: the InitiatorLink resolves the
destinationHostName of the Connect action with ``socket.getaddrinfo``; a name under the reserved
``.invalid`` top-level domain resolves to nothing, which the engine records as DnsFailure with a
Session Retry Connect Timer, and no TCP connection is made; a name that resolves connects."""

from __future__ import annotations

from peerkit import CLIENT, FAST, bodies

from harness.model.adm import OutgoingQueue
from harness.model.enums import ConnectionStatus, OutgoingQueueState
from harness.peers import InitiatorLink, SimulatedPeer
from harness.session import Initiator, user_message


def test_an_unresolvable_host_name_appends_dns_failure_and_connects_nowhere() -> None:
    with SimulatedPeer() as peer:
        port = peer.address[1]
        queue = OutgoingQueue("out")
        init = Initiator(
            CLIENT, peer.identifier, outgoing_queue=queue, address=f"msmq-harness.invalid:{port}", config=FAST
        )
        with InitiatorLink(init, peer.address, timeout=5.0) as link:
            link.send_message(user_message(CLIENT, peer.identifier, b"nowhere"))
            # the Session Retry Connect Timer starts each retry, which resolves again
            assert link.run_until(lambda: len(queue.ConnectionHistory) >= 3, 5.0)
        assert {e.Status for e in queue.ConnectionHistory} == {ConnectionStatus.DnsFailure}
        assert queue.ConnectionHistory[0].AddressList == [f"msmq-harness.invalid:{port}"]
        assert queue.State is OutgoingQueueState.NeedValidation
        assert len(link.resolve_errors) == len(queue.ConnectionHistory)
        assert link.connections == 0 and link.connect_errors == []
        assert peer.delivered == [] and [p.Transmitted for p in init.OutgoingMessageTable.values()] == [False]


def test_a_resolvable_host_name_in_the_connect_action_is_the_one_connected_to() -> None:
    with SimulatedPeer() as peer:
        port = peer.address[1]
        init = Initiator(CLIENT, peer.identifier, address=f"localhost:{port}", config=FAST)
        # the link's own address is unusable: the engine's RemoteQMAddress decides
        with InitiatorLink(init, ("msmq-harness.invalid", 1), timeout=5.0) as link:
            link.send_message(user_message(CLIENT, peer.identifier, b"resolved"))
            assert link.run_until(lambda: bodies(peer.delivered) == [b"resolved"], 5.0)
        statuses = [e.Status for e in init.OutgoingQueueReference.ConnectionHistory]
        assert ConnectionStatus.DnsFailure not in statuses and link.resolve_errors == []
        assert link.connections == 1
