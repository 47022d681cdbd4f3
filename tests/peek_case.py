"""One case that passes against the reference (a peek at the only message), for tests that need a
case and nothing particular about it."""

from __future__ import annotations


def peek_case(case_id: str) -> str:
    """The case's YAML text, under ``case_id``."""
    return f"""\
id: {case_id}
title: t
spec: [{{section: MS-MQDMPR 3.2.7.2, requirement: DMPR-3.2.7.2-UNREAD-SUCCEEDED}}]
given:
  queues: [{{name: q, messages: [{{id: m1}}]}}]
  open: [{{name: h, queue: q}}]
  cursors: [{{name: c, open: h}}]
when:
  - event: get_message_for_peek
    args: {{cursor: c}}
    expect: {{rStatus: Succeeded, rPosition: m1}}
"""
