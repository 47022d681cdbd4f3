"""Conformant readings the reference does not take: where [MS-MQDMPR] is silent or contradicts
itself, an ``interpretation`` requirement of cases/requirements.yaml names the readings a
conformant implementation may take.  Each class here is the reference queue manager with exactly
one other reading; tests/cases/test_readings.py runs the corpus against each and proves that it
is never failed, only graded non-strict on the expectations of that interpretation.

:data:`READINGS`: (requirement id, alternative name, ``plugin:`` class path).
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
