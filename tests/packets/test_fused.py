"""The whole-packet functions (packets.fused) against the construct definitions' diagnostic path
([MS-MQMQ] 2.2.19-2.2.20, [MS-MQRR] 2.2.5, [MS-MQQB] 2.2): over generated packets of every kind,
valid and not, and over the malformed corpus (the fuzzer's seeds, their mutations, truncations
and bit flips), a packet the function returns is exactly what the diagnostic path returns
(kind, headers with their types and padding, size, no violation); where it returns None, or
raises, the codec's usual path decides.  And ``packets.parse`` with the functions made gives
the same packet, or the same error (field path, byte offset, reason), as the diagnostic path.
"""

from __future__ import annotations

import random
from typing import Any

from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import packets
from fuzz.seeds import seed_corpus
from packets import fused
from packets.codec import Walk, _parse_diagnosed, _spec, fused_function
from packets.layout import PacketKind
from tests.packets import strategies_session as ss
from tests.packets import strategies_user as su
from tests.packets.messagekit import mutated_inputs

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SESSION_KINDS = [PacketKind.EstablishConnection, PacketKind.ConnectionParameters, PacketKind.SessionAck]


def _diagnosed(data: bytes, strict: bool) -> Any:
    try:
        return _parse_diagnosed(data, strict, Walk(data), False)
    except packets.PacketError as e:
        return e


def _shown(packet: packets.Packet) -> dict[str, str]:
    """Each header of ``packet`` as repr shows it: its types and its "_" keys too."""
    return {name: repr(value) for name, value in packet.headers.items()}


def _same_packet(
    got: packets.Packet, expected: packets.Packet, data: bytes, shown: dict[str, str] | None = None
) -> None:
    """``got`` is ``expected``; ``shown``: :func:`_shown` of ``expected``, when the caller compares
    many packets with the same one."""
    assert got == expected and got.kind is expected.kind, data.hex()
    assert (got.size, got.body, got.violations) == (expected.size, expected.body, expected.violations), data.hex()
    assert list(got.headers) == list(expected.headers), data.hex()
    shown = _shown(expected) if shown is None else shown
    for name, value in expected.headers.items():
        assert repr(got.headers[name]) == shown[name], (name, data.hex())
        assert type(got.headers[name]) is type(value), name


def _fused(data: bytes) -> packets.Packet | None:
    """The whole-packet function's answer for ``data`` (made now), None when it has none."""
    fn = fused_function(data, force=True)
    if fn is None:
        return None
    try:
        result: packets.Packet | None = fn(data)
    except Exception:
        return None
    return result


def _agrees(data: bytes) -> bool:
    """Whether the whole-packet function decoded ``data``; if so, it agrees with the
    diagnostic path."""
    got = _fused(data)
    if got is None:
        return False
    expected = _diagnosed(data, False)
    assert isinstance(expected, packets.Packet) and not expected.violations, data.hex()
    _same_packet(got, expected, data)
    return True


@PROPERTY
@given(
    st.one_of(
        su.user_messages(),
        su.user_messages(present=frozenset(su.OPTIONAL_NAMES)),
        st.sampled_from(_SESSION_KINDS).flatmap(lambda kind: ss.internal_packet(kind, True)),
    )
)
def test_valid_packets_take_the_whole_packet_function(headers: Container) -> None:
    data = packets.build(headers)
    expected = _diagnosed(data, False)
    decoded = _agrees(data)
    if isinstance(expected, packets.Packet) and not expected.violations and "ExtensionHeader" not in expected.headers:
        assert decoded, data.hex()


@PROPERTY
@given(st.sampled_from([PacketKind.OrderAck, PacketKind.FinalAck]).flatmap(ss.transactional_ack_packet))
def test_valid_transactional_acks_take_the_whole_packet_function(headers: Container) -> None:
    """An OrderAck or a FinalAck ([MS-MQQB] 2.2.4, 2.2.5) is decoded by the function of its
    UserMessage shape, identified with its body, as the diagnostic path decodes it; and
    ``packets.parse`` sights it, so the function is made once its shape repeats."""
    data = packets.build(headers)
    expected = _diagnosed(data, False)
    assert isinstance(expected, packets.Packet) and expected.kind in (PacketKind.OrderAck, PacketKind.FinalAck)
    if expected.violations:  # a FinalAck whose TxPreviousSequenceNumber the strategy drew as it liked
        assert _fused(data) is None
        return
    assert _agrees(data) and expected.body is not None, data.hex()
    for parsers in (_spec().user_fused, _spec().internal_fused):
        parsers.functions.clear()
        parsers.seen.clear()
    shown = _shown(expected)
    for _ in range(fused.FUSE_AFTER):
        _same_packet(packets.parse(data), expected, data, shown)
    assert fused_function(data) is not None


@PROPERTY
@given(
    st.one_of(
        st.sampled_from(_SESSION_KINDS).flatmap(lambda kind: ss.internal_packet(kind, False)),
        ss.undefined_pt_packet(),
        st.sampled_from([PacketKind.OrderAck, PacketKind.FinalAck]).flatmap(ss.transactional_ack_packet),
    ),
    st.randoms(use_true_random=False),
)
def test_other_packets_agree_or_take_the_usual_path(headers: Container, rng: random.Random) -> None:
    data = packets.build(headers)
    _agrees(data)
    flipped = bytearray(data)
    flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    _agrees(bytes(flipped))


def test_the_malformed_corpus_agrees() -> None:
    decoded = 0
    for data in mutated_inputs(11, 3000):
        decoded += _agrees(bytes(data))
    assert decoded > 200  # the valid seeds and the harmless mutations


def test_parse_with_the_functions_made_words_the_same_errors() -> None:
    """Every input's function made first: parse then returns what the diagnostic path returns,
    packet or PacketError (path, offset, reason)."""
    inputs = [bytes(d) for d in mutated_inputs(5, 2000)] + seed_corpus()
    for data in inputs:
        _fused(data)
    for data in inputs:
        for strict in (False, True):
            expected = _diagnosed(data, strict)
            try:
                got: Any = packets.parse(data, strict=strict)
            except packets.PacketError as e:
                got = e
            if isinstance(expected, packets.PacketError):
                assert isinstance(got, packets.PacketError), data.hex()
                assert (got.field_path, got.offset, got.reason) == (
                    expected.field_path,
                    expected.offset,
                    expected.reason,
                ), data.hex()
            else:
                assert isinstance(got, packets.Packet), f"{got} for {data.hex()}"
                if not expected.violations:
                    _same_packet(got, expected, data)
                assert [(v.field_path, v.offset, v.reason) for v in got.violations] == [
                    (v.field_path, v.offset, v.reason) for v in expected.violations
                ], data.hex()


def test_a_function_is_made_once_a_shape_repeats() -> None:
    data = seed_corpus()[0]
    for parsers in (_spec().user_fused, _spec().internal_fused):
        parsers.functions.clear()
        parsers.seen.clear()
    first = packets.parse(data)
    assert fused_function(data) is None  # seen once: the usual path
    for _ in range(fused.FUSE_AFTER):
        _same_packet(packets.parse(data), first, data)
    made = fused_function(data)
    assert made is not None
    _same_packet(made(data), first, data)
