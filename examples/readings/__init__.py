"""Conformant readings the reference does not take: where [MS-MQDMPR] or [MS-MQQB] is silent or
contradicts itself, an ``interpretation`` requirement of cases/requirements.yaml names the readings
a conformant implementation may take.  Each entry here is the reference with exactly one other
reading; tests/cases/test_readings.py ([MS-MQDMPR]) and tests/cases/test_readings_mqqb.py
([MS-MQQB]) run the corpus against each and prove that it is never failed, only graded non-strict
on the expectations of that interpretation.

:data:`READINGS`: [MS-MQDMPR], (requirement id, alternative name, ``plugin:`` class path of a
QueueManager subclass, examples/readings/dmpr.py).

:data:`MQQB_READINGS`: [MS-MQQB], (requirement id, alternative name, how it runs): ``sender:pkg.mod:Class``,
an OutgoingQueueProcessing subclass run through the reference adapter as an external sender, or
``reference?peer=NAME``, the simulated peer with the reading behaviour NAME
(``harness.session.acceptor.READING_BEHAVIOURS``; examples/readings/mqqb.py, ``target``).  They
are kept apart from READINGS, whose entries are all ``plugin:`` queue managers.
"""

READINGS: list[tuple[str, str, str]] = [
    ("DMPR-3.1.7.3.2-BWD-START", "returns-end", "examples.readings.dmpr:BackwardMissReturnsEnd"),
    ("DMPR-3.1.1.2-END-NEXT", "end-next-is-head", "examples.readings.dmpr:EndNextIsHead"),
    ("DMPR-3.1.1.2-START-PREVIOUS", "start-previous-is-tail", "examples.readings.dmpr:StartPreviousIsTail"),
    ("DMPR-3.1.1.11-REMOVED-NEXT", "restarts-at-start", "examples.readings.dmpr:RemovedPositionRestartsAtStart"),
    ("DMPR-3.1.7.2.1-STORAGE", "stored-size", "examples.readings.dmpr:StoredSizeWithHeaders"),
    ("DMPR-3.1.7.2.2-TOTALBYTES", "counted-once", "examples.readings.dmpr:AvailableCountedOnce"),
    ("DMPR-3.1.7.1.10-HEAD", "after-head", "examples.readings.dmpr:ReceiveAfterHead"),
    ("DMPR-3.1.7.1.13-END", "ok-without-message", "examples.readings.dmpr:LookupPastEndOk"),
    ("DMPR-3.1.7.3.3-CURRENT-RECEIVE", "ok-without-position", "examples.readings.dmpr:CurrentReceiveOkWithoutPosition"),
    ("DMPR-3.1.7.1.15-HEAD", "after-head", "examples.readings.dmpr:PeekAfterHead"),
    ("DMPR-3.1.7.1.15-RELEASE", "blocked", "examples.readings.dmpr:PeekWithoutCursorBlocks"),
    ("DMPR-3.1.7.3.1-FAILED-STATUS", "other-error", "examples.readings.dmpr:FailedWaitNotFound"),
    ("DMPR-3.1.7.2.2-DESCRIPTOR-ORDER", "any-order", "examples.readings.dmpr:DescriptorsLastOpenedFirst"),
    ("DMPR-3.1.7.1.5-SHARE-PEEK", "deny-receive-denies-peek", "examples.readings.dmpr:DenyReceiveDeniesPeek"),
    ("DMPR-3.2.7.2-WAIT-STATES", "as-unread", "examples.readings.dmpr:WaitingPeekAsUnread"),
    ("DMPR-3.2.7.4-WAIT-STATES", "as-unread", "examples.readings.dmpr:WaitingDequeueAsUnread"),
    ("DMPR-3.2.7.2-WAIT-STATES", "still-waiting", "examples.readings.dmpr:WaitingPeekStillWaits"),
    ("DMPR-3.2.7.4-WAIT-STATES", "still-waiting", "examples.readings.dmpr:WaitingDequeueStillWaits"),
]

_M = "sender:examples.readings.mqqb"
MQQB_READINGS: list[tuple[str, str, str]] = [
    # acceptor side: the simulated peer's reading behaviours
    ("MQQB-2.2.1-CS-NULL-SERVERGUID", "null-refused", "reference?peer=null-refused"),
    # at-least-one is the boundary behaviour window-min (WindowSize 1 in every packet)
    ("MQQB-2.2.2.1-WINDOWSIZE-ZERO", "zero-valid", "reference?peer=zero-valid"),
    ("MQQB-2.2.7-FLAG-BITS", "high-bits", "reference?peer=high-bits"),
    ("MQQB-3.1.5.1.2-SIGNATURE-BYTE-ORDER", "big-endian", "reference?peer=big-endian"),
    ("MQQB-3.1.6.4-RECOVERABLE-ACK-BASE", "zero-base", "reference?peer=zero-base"),
    ("MQQB-3.1.6.4-RECOVERABLE-ACK-BASE", "zero-with-offset-bits", "reference?peer=zero-with-offset-bits"),
    ("MQQB-2.2.2.1-recoverable-ack-timeout", "range-informative", "reference?peer=range-informative"),
    ("MQQB-2.2.2.1-ack-timeout", "range-informative", "reference?peer=range-informative"),
    ("MQQB-3.1.1.6.1-sender-ack-fields", "zero-base", "reference?peer=zero-base"),
    ("MQQB-3.1.1.6.1-sender-ack-fields", "zero-with-offset-bits", "reference?peer=zero-with-offset-bits"),
    ("MQQB-3.1.5.7-final-ack-unknown", "any-session", "reference?peer=any-session"),
    # sender side: OutgoingQueueProcessing subclasses behind the reference adapter
    ("MQQB-3.1.1.6.1-ACK-COUNT", "sooner", f"{_M}:AcknowledgesEachMessage"),
    ("MQQB-3.1.5.1.3-BAD-PADDING", "malformed", f"{_M}:BadPaddingMalformed"),
    ("MQQB-3.1.5.2-ENTRY-AFTER-ESTABLISH-STEPS", "no-entry", f"{_M}:NoEntryAfterEstablishSteps"),
    ("MQQB-3.1.5.2-RETRY-AFTER-CONNECT-FAILURE", "no-retry", f"{_M}:NoRetryAfterConnectFailure"),
    ("MQQB-3.1.5.2.1-RESOLVE-FAILURE", "entry-only", f"{_M}:ResolveFailureEntryOnly"),
    ("MQQB-3.1.5.2.2-NO-PING-ON-RETRY", "ping-on-retry", f"{_M}:PingOnRetry"),
    ("MQQB-3.1.7.1-PEER-WINDOW", "own-window", f"{_M}:OwnWindowOnly"),
    ("MQQB-3.1.7.12-NO-CONNECT", "may-connect", f"{_M}:ConnectsAgainWhileAwaitingEstablishConnection"),
    ("MQQB-3.1.7.12-NO-CONNECT", "may-connect", f"{_M}:ConnectsAgainWhileOpen"),
    ("MQQB-3.1.7.12-NO-CONNECT", "may-connect", f"{_M}:ConnectsAgainWhileAwaitingReconnect"),
    ("MQQB-3.1.5.8.1-duplicate", "redispatch", f"{_M}:RedispatchesUncovered"),
    ("MQQB-3.1.5.9-closed-early", "own-reasons", f"{_M}:GivesUpSlowEstablishment"),
]
"""[MS-MQQB] readings the reference does not take, and how each runs (see the module docstring)."""
