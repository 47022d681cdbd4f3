"""harness.fuzz.shrink: the injected packet's optional headers ([MS-MQMQ] 2.2.20) the finding does not
need are removed, their flags cleared and PacketSize computed again, the mutated field kept as
mutated; the group holding the mutated field, and a packet its mutation damaged, are left whole.
Judged by the codec's own strict decoding, as a decoder fault would be: the same field still fails."""

from __future__ import annotations

import random

import packets
from harness.fuzz.generate import Context, Mutation, template
from harness.fuzz.shrink import droppable, shrink, shrink_last, without
from packets import GUID


def _packet(name: str, field: str, op: str) -> bytes:
    ctx = Context(GUID(bytes(range(1, 17))), GUID(bytes(range(16))))
    return Mutation(name, field, op).apply(template(name).build(ctx), random.Random(0))


def _failing_field(data: bytes) -> str:
    """The field the codec's strict decoding names (\"\" when the packet decodes)."""
    try:
        packets.parse(data, strict=True)
    except packets.PacketError as e:
        return str(e).split(" at byte", 1)[0]
    return ""


LABEL = "MessagePropertiesHeader.Label"


def test_a_header_the_finding_does_not_need_is_removed_with_its_flag() -> None:
    data = _packet("UserMessage[security]", LABEL, "beyond-max")  # a Label of 251 WCHARs: LabelLength > 0xFA
    assert _failing_field(data) == "MessagePropertiesHeader.LabelLength"
    assert droppable(data, LABEL) == ["SecurityHeader"]
    budget = iter(range(10))
    removed = shrink(data, LABEL, lambda gs: _failing_field(without(data, gs, LABEL) or b"") == _failing_field(data),
                     lambda: next(budget, None) is not None)  # fmt: skip
    assert removed == ("SecurityHeader",)
    smaller = without(data, removed, LABEL)
    assert smaller is not None and len(smaller) < len(data)
    headers = packets.parse(smaller, strict=False).headers
    assert "SecurityHeader" not in headers and not headers.UserHeader.Flags.SH
    assert headers.BaseHeader.PacketSize == len(smaller)  # computed again
    assert str(headers.MessagePropertiesHeader.Label) == str(
        packets.parse(data, strict=False).headers[LABEL.split(".")[0]].Label
    )


def test_shrink_last_keeps_a_removal_only_while_the_finding_holds() -> None:
    data = _packet("UserMessage[soap]", "BaseHeader.PacketSize", "one-beyond")
    assert droppable(data, "BaseHeader.PacketSize") == ["SoapHeader"]
    kept = shrink_last([b"first", data], "BaseHeader.PacketSize", lambda us: False, lambda: True)
    assert kept == [b"first", data]  # the removal does not reproduce: the packet stays whole
    smaller = shrink_last([b"first", data], "BaseHeader.PacketSize", lambda us: True, lambda: True)
    assert smaller[0] == b"first" and len(smaller[1]) < len(data)
    size = packets.parse(data, strict=False).headers.BaseHeader.PacketSize
    assert packets.parse(smaller[1], strict=False).headers.BaseHeader.PacketSize == size  # the mutated field kept


def test_the_group_of_the_mutated_field_and_a_damaged_packet_are_left_whole() -> None:
    soap = _packet("UserMessage[soap]", "SoapHeader.HeaderDataLength", "one-beyond")
    assert droppable(soap, "SoapHeader.HeaderDataLength") == []
    damaged = _packet("UserMessage[security]", "MessagePropertiesHeader.LabelLength", "max")
    assert droppable(damaged, "MessagePropertiesHeader.LabelLength") == []
    assert without(damaged, ("SecurityHeader",), "MessagePropertiesHeader.LabelLength") is None
