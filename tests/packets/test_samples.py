"""packets.session.SAMPLES: one packet of each [MS-MQQB] session kind built with neutral values,
which [MS-MQQB] 3.1.5.1.1 identifies as its kind and the codec finds conformant -- the packet a
wire case's client and the fuzzer fall back on for a kind with no builder or template of its own
(docs/extending.md, "A new MS-MQQB packet kind")."""

from __future__ import annotations

import pytest

import packets
from packets import session as sp
from packets.layout import SESSION_KINDS, PacketKind


def test_every_session_kind_has_one_sample_in_the_order_of_the_kinds() -> None:
    assert tuple(sp.SAMPLES) == SESSION_KINDS
    assert PacketKind.Ping not in sp.SAMPLES and PacketKind.Unknown not in sp.SAMPLES


@pytest.mark.parametrize("kind", SESSION_KINDS)
def test_a_sample_is_a_conformant_packet_identified_as_its_kind(kind: PacketKind) -> None:
    data = packets.build(sp.SAMPLES[kind]())
    parsed = packets.parse(data, strict=True)
    assert parsed.kind is kind
    assert parsed.violations == []
    assert sp.identify(parsed.headers)[0] is kind


@pytest.mark.parametrize("kind", SESSION_KINDS)
def test_each_call_builds_a_new_packet(kind: PacketKind) -> None:
    """A caller overrides fields of its sample (a wire case's ``fields``, a fuzz mutation): the
    next sample of the kind is as neutral as the first."""
    first = sp.SAMPLES[kind]()
    first.BaseHeader.TimeToReachQueue = 7
    assert sp.SAMPLES[kind]().BaseHeader.TimeToReachQueue != 7
    assert packets.build(sp.SAMPLES[kind]()) == packets.build(sp.SAMPLES[kind]())
