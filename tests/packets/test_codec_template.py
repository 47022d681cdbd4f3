"""Encoding by template (packets.codec.UserMessageTemplate): a UserMessage Packet ([MS-MQMQ] 2.2.20)
re-encoded for another UserHeader.MessageID (2.2.19.2) and MessagePropertiesHeader.MessageBody
(2.2.19.3) is byte for byte what ``packets.build`` writes for the headers with those fields
replaced and MessageSize, AllocationBodySize and BaseHeader.PacketSize (2.2.19.1) computed."""

from __future__ import annotations

import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import packets
from harness.session import user_message
from packets import session as sp
from packets.codec import UserMessageTemplate, _with_body
from packets.errors import PacketError
from tests.packets import strategies_user as S

CLIENT = "{11111111-2222-3333-4444-555555555555}"
SERVER = "{AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE}"
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(S.user_messages(), st.integers(0, 0xFFFFFFFF), st.binary(max_size=70))
def test_template_builds_what_build_builds(headers: Container, message_id: int, body: bytes) -> None:
    headers.MessagePropertiesHeader.MessageSize = None  # follows the body
    headers.MessagePropertiesHeader.AllocationBodySize = None
    template = UserMessageTemplate(headers)
    assert template.build(message_id, body) == packets.build(_with_body(headers, message_id, body))
    packet = packets.parse(template.build(message_id, body))
    assert packet.UserHeader.MessageID == message_id
    assert packet.MessagePropertiesHeader.MessageBody == body


def test_template_of_a_plain_user_message() -> None:
    headers = user_message(CLIENT, SERVER, b"first")
    template = UserMessageTemplate(headers)
    for n, body in enumerate((b"", b"x", b"ab", b"abc", b"abcd", bytes(range(256)) * 40)):
        assert template.build(n + 1, body) == packets.build(user_message(CLIENT, SERVER, body, message_id=n + 1))
    assert template.at == {  # the codec's offsets of the patched fields, not written by hand
        path: packets.field_offset(packets.build(headers), path, "UserMessage")[0]  # type: ignore[index]
        for path in template.at
    }


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h.MessagePropertiesHeader.update({"MessageSize": 3}),  # a MessageSize the body does not give
        lambda h: h.MessagePropertiesHeader.update({"AllocationBodySize": 4096}),
        lambda h: h.BaseHeader.update({"PacketSize": 4096}),
        lambda h: h.MessagePropertiesHeader.update({"MessageBody": None}),
        lambda h: h.pop("MessagePropertiesHeader"),
    ],
)
def test_template_refuses_headers_a_new_body_would_contradict(change: object) -> None:
    headers = user_message(CLIENT, SERVER, b"body")
    change(headers)  # type: ignore[operator]
    with pytest.raises(PacketError):
        UserMessageTemplate(headers)


def test_template_refuses_an_internal_packet() -> None:
    with pytest.raises(PacketError):
        UserMessageTemplate(sp.session_ack())
