"""Conformant readings the reference does not take: where [MS-MQDMPR] is silent or contradicts
itself, an ``interpretation`` requirement of cases/requirements.yaml names the readings a
conformant implementation may take.  Each class here is the reference queue manager with exactly
one other reading; tests/cases/test_readings.py runs the corpus against each and proves that it
is never failed, only graded non-strict on the expectations of that interpretation.

:data:`READINGS`: (requirement id, alternative name, ``plugin:`` class path).
"""

READINGS: list[tuple[str, str, str]] = [
    ("DMPR-3.1.7.3.2-BWD-START", "returns-end", "examples.readings.dmpr:BackwardMissReturnsEnd"),
    ("DMPR-3.1.7.3.1-FAILED-STATUS", "other-error", "examples.readings.dmpr:FailedWaitNotFound"),
]
