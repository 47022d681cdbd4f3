"""harness.capture.frames: every supported link type, written to real capture files by scapy and
read back through the pcap reader, plus VLANs, IP options, IPv6 extension headers, fragments,
Ethernet padding and truncation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from capture_helpers import read_all, write_pcap, write_pcapng
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_RR, fragment
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.ipsec import AH
from scapy.layers.l2 import ARP, CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Ether, Loopback, LoopbackOpenBSD
from scapy.packet import Packet, Raw

from harness.capture.frames import ACK, FIN, PSH, RST, SYN, FrameProblem, TcpSegment, decode_tcp

MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
PAYLOAD = b"MSMQ-like payload \x00\x01\x02" * 3
TCP_L = TCP(sport=49759, dport=1801, seq=0xDEADBEEF, ack=0x01020304, flags="PA") / Raw(PAYLOAD)


def _want(src: str, dst: str, payload: bytes = PAYLOAD) -> TcpSegment:
    return TcpSegment(src, 49759, dst, 1801, 0xDEADBEEF, 0x01020304, PSH | ACK, payload)


V4 = IP(src="10.0.0.1", dst="10.0.0.2") / TCP_L
V6 = IPv6(src="2001:db8::1", dst="fe80::2") / TCP_L
WANT4 = _want("10.0.0.1", "10.0.0.2")
WANT6 = _want("2001:db8::1", "fe80::2")

CASES: list[tuple[str, Packet, int, TcpSegment]] = [
    ("ethernet-v4", Ether(src=MAC1, dst=MAC2) / V4, 1, WANT4),
    ("ethernet-v6", Ether(src=MAC1, dst=MAC2) / V6, 1, WANT6),
    ("vlan", Ether(src=MAC1, dst=MAC2) / Dot1Q(vlan=7) / V4, 1, WANT4),
    ("qinq", Ether(src=MAC1, dst=MAC2) / Dot1AD(vlan=100) / Dot1Q(vlan=7) / V6, 1, WANT6),
    ("sll", CookedLinux(proto=0x0800) / V4, 113, WANT4),
    ("sll2-v6", CookedLinuxV2(proto=0x86DD) / V6, 276, WANT6),
    ("raw-v4", V4, 101, WANT4),
    ("raw-v6", V6, 101, WANT6),
    ("null-v4", Loopback(type=2) / V4, 0, WANT4),
    ("null-v6-darwin", Loopback(type=30) / V6, 0, WANT6),
    ("openbsd-loop", LoopbackOpenBSD(type=2) / V4, 108, WANT4),
    (
        "ip-options",
        Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="10.0.0.2", options=[IPOption_RR()]) / TCP_L,
        1,
        WANT4,
    ),
    (
        "v6-ext-headers",
        Ether(src=MAC1, dst=MAC2)
        / IPv6(src="2001:db8::1", dst="fe80::2")
        / IPv6ExtHdrHopByHop()
        / IPv6ExtHdrDestOpt()
        / TCP_L,
        1,
        WANT6,
    ),
    ("v6-ah", IPv6(src="2001:db8::1", dst="fe80::2") / AH(nh=6, payloadlen=4, icv=b"\x00" * 12) / TCP_L, 229, WANT6),
]


@pytest.mark.parametrize(("name", "pkt", "linktype", "want"), CASES, ids=[c[0] for c in CASES])
def test_decode_each_link_type(name: str, pkt: Packet, linktype: int, want: TcpSegment) -> None:
    assert decode_tcp(linktype, bytes(pkt)) == want


@pytest.mark.parametrize("linktype", [1, 113, 276, 101])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_through_capture_files(tmp_path: Path, fmt: str, linktype: int) -> None:
    """scapy picks the file's link type from the first packet's class; it must round-trip."""
    pkts = [(pkt, want) for _n, pkt, lt, want in CASES if lt == linktype]
    for pkt, _ in pkts:
        pkt.time = 1_700_000_000.5
    want_lt = linktype
    if fmt == "pcapng" and linktype == 101:  # scapy's pcapng writer labels raw IPv4 as LINKTYPE_IPV4
        pkts, want_lt = pkts[:1], 228
    path = tmp_path / f"f.{fmt}"
    if fmt == "pcap":
        data = write_pcap(path, [p for p, _ in pkts], linktype=linktype)
    else:
        data = write_pcapng(path, [p for p, _ in pkts])
    recs, probs = read_all(data)
    assert probs == []
    assert [r.linktype for r in recs] == [want_lt] * len(pkts)
    assert [decode_tcp(r.linktype, r.data) for r in recs] == [w for _, w in pkts]


def test_flags_and_ethernet_padding() -> None:
    syn = Ether(src=MAC1, dst=MAC2) / IP(src="1.2.3.4", dst="5.6.7.8") / TCP(flags="S", seq=5)
    frame = bytes(syn) + b"\xaa" * 6  # padded to the 60-byte Ethernet minimum
    seg = decode_tcp(1, frame)
    assert isinstance(seg, TcpSegment)
    assert seg.flags == SYN and seg.payload == b"" and seg.seq == 5
    for flags, bits in (("F", FIN), ("R", RST), ("FA", FIN | ACK), ("SA", SYN | ACK)):
        s = decode_tcp(101, bytes(IP() / TCP(flags=flags)))
        assert isinstance(s, TcpSegment) and s.flags == bits
    # padding after a payload-bearing IPv6 segment is ignored as well
    s6 = decode_tcp(1, bytes(Ether(src=MAC1, dst=MAC2) / IPv6() / TCP() / Raw(b"abc")) + b"\x00" * 9)
    assert isinstance(s6, TcpSegment) and s6.payload == b"abc"


def test_tcp_options_are_skipped() -> None:
    pkt = IP() / TCP(options=[("MSS", 1460), ("SAckOK", b""), ("WScale", 7)]) / Raw(b"data")
    seg = decode_tcp(101, bytes(pkt))
    assert isinstance(seg, TcpSegment) and seg.payload == b"data"


def test_not_tcp_is_none() -> None:
    assert decode_tcp(1, bytes(Ether(src=MAC1, dst=MAC2) / ARP())) is None
    assert decode_tcp(1, bytes(Ether(src=MAC1, dst=MAC2) / IP() / UDP() / Raw(b"x"))) is None
    assert decode_tcp(101, bytes(IPv6() / UDP())) is None
    assert decode_tcp(1, bytes(Ether(src=MAC1, dst=MAC2) / IP() / ICMP())) is None
    assert decode_tcp(147, bytes(IP() / TCP())) is None  # unknown link type


def test_fragments_are_not_decodable() -> None:
    big = IP(src="10.0.0.1", dst="10.0.0.2") / TCP() / Raw(b"x" * 3000)
    frags = fragment(big, fragsize=1000)
    assert len(frags) >= 3
    first = decode_tcp(101, bytes(frags[0]))
    assert isinstance(first, FrameProblem) and "first fragment" in first.reason
    for f in frags[1:]:
        res = decode_tcp(1, bytes(Ether(src=MAC1, dst=MAC2) / f))
        assert isinstance(res, FrameProblem) and "non-first fragment" in res.reason
    v6 = decode_tcp(229, bytes(IPv6() / IPv6ExtHdrFragment() / TCP()))
    assert isinstance(v6, FrameProblem) and "fragment" in v6.reason and v6.offset == 40


def test_truncation() -> None:
    frame = bytes(Ether(src=MAC1, dst=MAC2) / V4)
    cut = decode_tcp(1, frame[:-10])  # snaplen cut inside the payload
    assert isinstance(cut, TcpSegment) and cut.payload == PAYLOAD[:-10] and cut.truncated == 10
    for n, what in ((10, "Ethernet"), (25, "IPv4"), (40, "TCP header")):
        res = decode_tcp(1, frame[:n])
        assert isinstance(res, FrameProblem) and what in res.reason, (n, res)
    res = decode_tcp(229, bytes(V6)[:30])
    assert isinstance(res, FrameProblem) and "IPv6" in res.reason
    bad_hl = bytearray(bytes(IP() / TCP()))
    bad_hl[32] = 0x30  # TCP data offset 3 words
    res = decode_tcp(101, bytes(bad_hl))
    assert isinstance(res, FrameProblem) and "data offset 12" in res.reason


def test_speed_plain_ethernet_ipv4_tcp() -> None:
    frames = [
        bytes(
            Ether(src=MAC1, dst=MAC2)
            / IP(src=f"10.0.{i % 4}.1", dst="10.0.0.2")
            / TCP(sport=40000 + i % 50, dport=1801, seq=i * 100)
            / Raw(b"p" * 100)
        )
        for i in range(200)
    ]
    n_rounds = 500
    t = time.thread_time()  # CPU time: the decoder's speed, not the time it waited for a core
    for _ in range(n_rounds):
        for f in frames:
            decode_tcp(1, f)
    rate = n_rounds * len(frames) / (time.thread_time() - t)
    print(f"decode_tcp: {rate:,.0f} frames per CPU-second")
    assert rate > 150_000  # target 300k/s on an idle machine; loose bound for a loaded CI runner


@settings(max_examples=300, deadline=None)
@given(linktype=st.sampled_from([0, 1, 101, 108, 113, 228, 229, 276]), data=st.binary(max_size=120))
def test_random_bytes_never_raise(linktype: int, data: bytes) -> None:
    res = decode_tcp(linktype, data)
    assert res is None or isinstance(res, TcpSegment | FrameProblem)
    if isinstance(res, TcpSegment):
        assert len(res.payload) <= len(data)


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 200), idx=st.integers(0, len(CASES) - 1))
def test_every_truncation_of_a_valid_frame_never_raises(cut: int, idx: int) -> None:
    _n, pkt, linktype, want = CASES[idx]
    frame = bytes(pkt)
    res = decode_tcp(linktype, frame[: min(cut, len(frame))])
    if isinstance(res, TcpSegment):
        assert res.payload == want.payload[: len(res.payload)]
        assert res.truncated == len(want.payload) - len(res.payload)
    else:
        assert isinstance(res, FrameProblem)
