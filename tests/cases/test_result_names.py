"""One table of result names (harness.cases.events): the name of an event's second value, the
names the loader checks as positions, and the reference's replies all come from the return types
the reference model declares ([MS-MQDMPR] 3.1.7, 3.2.7)."""

from __future__ import annotations

import pytest

from harness.cases.events import RESULT_KINDS, event_results, second_result, spec_events
from harness.cases.lines import CaseError
from harness.cases.loader import load_text


def test_the_second_value_of_each_tuple_is_named_by_the_declared_return_type() -> None:
    assert second_result("open_queue") == "rOpenQueueDescriptor"
    assert second_result("create_queue") == "rQueue"
    assert second_result("get_next_message_for_peek") == "rPosition"
    assert second_result("seek_available_message_position_with_id") == "rMessagePosition"
    for event in spec_events():
        results = event_results(event)
        if "rStatus" in results and len(results) == 2:
            assert second_result(event) in results
            assert set(results) <= set(RESULT_KINDS)


CASE = """\
id: r.names
title: t
spec: [{section: MS-MQDMPR 3.2.7.2, requirement: DMPR-3.2.7.2-UNREAD-SUCCEEDED}]
given:
  queues: [{name: q, messages: [{id: m1}]}]
  open: [{name: h, queue: q}]
  cursors: [{name: c, open: h}]
when:
  - event: get_message_for_peek
    args: {cursor: c}
    expect: {rStatus: Succeeded, rPosition: %s, rMessage: %s}
"""


def test_a_position_or_message_result_names_a_message_of_the_case() -> None:
    load_text(CASE % ("m1", "m1"), "names.yaml")
    for wrong in (("m9", "m1"), ("m1", "m9")):
        with pytest.raises(CaseError, match="m9"):
            load_text(CASE % wrong, "names.yaml")
