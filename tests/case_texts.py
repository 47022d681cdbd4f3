"""Case files shared by tests: the acceptor case that sends an EstablishConnection and receives
the answer ([MS-MQQB] 3.1.5.4.1), under any id and title, with steps added after it."""

from __future__ import annotations

__all__ = ["ESTABLISH_STEPS", "establish_case"]

#: an acceptor case's spec, peer and first two steps: EstablishConnection sent and answered
ESTABLISH_STEPS = """\
spec:
  - {section: MS-MQQB 3.1.5.4.1, requirement: MQQB-3.1.5.4.1-CP-RESPONSE}
given:
  peer: {under_test: acceptor}
when:
  - action: send
    args: {packet: EstablishConnection}
  - action: receive
    args: {packet: EstablishConnection, within: SessionInitialization}
"""


def establish_case(case_id: str, title: str, *, head: str = "", steps: str = "") -> str:
    """The YAML of an acceptor case ``case_id``: ``head`` (lines after the title, e.g. a matrix),
    then :data:`ESTABLISH_STEPS`, then ``steps`` (further items of ``when``)."""
    return f"id: {case_id}\ntitle: {title}\n{head}{ESTABLISH_STEPS}{steps}"
