"""[MS-MQQB] 3.1.5.2.1 Resolve Host Address on the sans-IO Initiator: the Connect action names the
RemoteQMAddress whose destinationHostName the wrapper resolves; ``resolve_host_address_failed``
appends DnsFailure (3.1.5.2, [MS-MQDMPR] 3.1.1.3) and, with messages waiting and the OutgoingQueue
not OnHold, starts the Session Retry Connect Timer and sets State to NeedValidation."""

from __future__ import annotations

import pytest

from harness.model.adm import OutgoingQueue
from harness.model.enums import ConnectionStatus, OutgoingQueueState
from harness.session import Initiator, SessionState, Timer, user_message
from harness.session.actions import Connect, SendPing, StartTimer
from harness.session.initiator import MQ_ERROR_RESOLVE_ADDRESS, destination_host_name

INI = "11111111-1111-1111-1111-111111111111"
ACC = "22222222-2222-2222-2222-222222222222"
NOWHERE = "msmq-harness.invalid:1801"


def timers_started(actions: list[object]) -> list[str]:
    return [a.name for a in actions if isinstance(a, StartTimer)]


@pytest.mark.parametrize(
    "address,host",
    [
        ("msmq-harness.invalid:1801", "msmq-harness.invalid"),
        ("msmq-harness.invalid", "msmq-harness.invalid"),
        ("127.0.0.1", "127.0.0.1"),
        ("mqqb://127.0.0.1:1801", "127.0.0.1"),
        ("[::1]:1801", "::1"),
        ("fe80::1", "fe80::1"),
        ("", ""),
    ],
)
def test_destination_host_name_is_the_host_of_the_remote_qm_address(address: str, host: str) -> None:
    assert destination_host_name(address) == host
    assert Initiator(INI, ACC, address=address).destinationHostName == host


def test_a_name_that_resolves_to_no_address_appends_dns_failure_and_needs_validation() -> None:
    queue = OutgoingQueue("out")
    init = Initiator(INI, ACC, outgoing_queue=queue, address=NOWHERE, clock=lambda: 1234.0)
    actions = init.send_message(user_message(INI, ACC, b"x"))
    assert Connect(NOWHERE) in actions  # the wrapper resolves msmq-harness.invalid before it connects
    assert queue.ConnectionHistory == []

    actions = init.resolve_host_address_failed()
    [entry] = queue.ConnectionHistory
    assert entry.Status is ConnectionStatus.DnsFailure
    assert entry.Error == MQ_ERROR_RESOLVE_ADDRESS
    assert entry.ConnectionHistoryTime == 1234
    assert entry.AddressList == [NOWHERE]
    assert queue.State is OutgoingQueueState.NeedValidation
    assert timers_started(actions) == [Timer.SessionRetryConnect]
    assert init.SessionState is SessionState.WAITING_RECONNECT
    assert not any(isinstance(a, Connect) for a in actions)
    assert [p.Transmitted for p in init.OutgoingMessageTable.values()] == [False]


def test_the_retry_resolves_again_without_a_ping_and_each_failure_appends_an_entry() -> None:
    queue = OutgoingQueue("out")
    init = Initiator(INI, ACC, outgoing_queue=queue, address=NOWHERE, ping=True)
    first = init.send_message(user_message(INI, ACC, b"x"))
    assert any(isinstance(a, SendPing) for a in first)  # 3.1.5.2.2 on the first attempt
    init.timer_fired(Timer.PingResponse)  # PingFailure, then the retry timer
    assert [e.Status for e in queue.ConnectionHistory] == [ConnectionStatus.PingFailure]
    for attempt in range(1, 4):
        actions = init.timer_fired(Timer.SessionRetryConnect)
        assert actions == [Connect(NOWHERE)]  # no Ping Request on a retry
        actions = init.resolve_host_address_failed()
        assert timers_started(actions) == [Timer.SessionRetryConnect]
        assert [e.Status for e in queue.ConnectionHistory][1:] == [ConnectionStatus.DnsFailure] * attempt
    assert queue.State is OutgoingQueueState.NeedValidation


def test_an_on_hold_queue_gets_the_entry_but_no_retry_and_keeps_its_state() -> None:
    queue = OutgoingQueue("out")
    queue.State = OutgoingQueueState.OnHold
    init = Initiator(INI, ACC, outgoing_queue=queue, address=NOWHERE)
    init.send_message(user_message(INI, ACC, b"x"))
    actions = init.resolve_host_address_failed()
    assert [e.Status for e in queue.ConnectionHistory] == [ConnectionStatus.DnsFailure]
    assert queue.State is OutgoingQueueState.OnHold
    assert timers_started(actions) == []


def test_without_outgoing_messages_the_entry_is_appended_and_nothing_is_retried() -> None:
    queue = OutgoingQueue("out")
    init = Initiator(INI, ACC, outgoing_queue=queue, address=NOWHERE)
    assert init.start() == [Connect(NOWHERE)]
    actions = init.resolve_host_address_failed(0x80004005)
    [entry] = queue.ConnectionHistory
    assert entry.Status is ConnectionStatus.DnsFailure and entry.Error == 0x80004005
    assert queue.State is OutgoingQueueState.Inactive
    assert timers_started(actions) == []
    assert init.start() == [Connect(NOWHERE)]  # a later attempt starts 3.1.5.2 again
