"""Link layer to TCP segment: renders Ethernet II (IEEE 802.3 framing with 802.1Q / 802.1ad
QinQ tags), Linux cooked capture v1 (LINKTYPE_LINUX_SLL, 113) and v2 (LINKTYPE_LINUX_SLL2, 276),
raw IP (LINKTYPE_RAW 101, LINKTYPE_IPV4 228, LINKTYPE_IPV6 229), BSD loopback/null (0) and
OpenBSD loop (108) as listed by the tcpdump.org link-layer header types registry; IPv4 (RFC 791:
header options, fragments), IPv6 (RFC 8200: hop-by-hop, routing and destination-options extension
headers and AH are skipped, a fragment header makes the packet not decodable) and the TCP header
(RFC 9293 section 3.1: data offset, flags, sequence and acknowledgment numbers). The TCP payload is
bounded by the IP length fields, never by the captured length, so Ethernet padding is not taken
for data; a payload cut short by the snapshot length is returned with ``truncated`` > 0.
Fragments are reported as :class:`FrameProblem`, never guessed.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import NamedTuple

__all__ = [
    "ACK",
    "ENDPOINTS4_SEEN",
    "ETH_IPV4_ENDPOINTS",
    "ETH_IPV4_TCP",
    "FIN",
    "PSH",
    "RST",
    "SYN",
    "TCP_HEADER",
    "URG",
    "FrameProblem",
    "TcpSegment",
    "addr4",
    "decode_tcp",
    "decode_tcp_view",
    "endpoints4",
]

FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


class TcpSegment(NamedTuple):
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int  #: the TCP flag bits (FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10 ...)
    payload: bytes
    truncated: int = 0  #: payload bytes announced by the IP length but not captured


_new_segment = tuple.__new__  # a TcpSegment of all its fields without NamedTuple's Python-level __new__


class FrameProblem(NamedTuple):
    """A frame that is TCP (or may be) but cannot be decoded; ``offset`` is within the frame."""

    reason: str
    offset: int = 0


_H = struct.Struct("!H")
_IPV4 = struct.Struct("!BxHxxHxB2x4s4s")  # ver_ihl, total_len, frag, proto, src, dst
_IPV6 = struct.Struct("!4xHBx16s16s")  # payload_len, next_header, src, dst
#: the TCP fixed header as far as the data offset: sport, dport, seq, ack, offset_flags
TCP_HEADER = struct.Struct("!HHIIH")
#: untagged Ethernet II + IPv4 fixed header: ethertype, ver_ihl, total_len, frag, proto, src, dst
#: (the fast path of decode_tcp, and of the light first reading in harness.capture.streams)
ETH_IPV4_TCP = struct.Struct("!12xHBxHxxHxB2x4s4s")
#: the same with the endpoints as one field: the IPv4 source and destination and the TCP source
#: and destination ports, 12 contiguous bytes (read through :func:`endpoints4`)
ETH_IPV4_ENDPOINTS = struct.Struct("!12xHBxHxxHxB2x12s")
#: the TCP fixed header after the ports: seq, ack, offset_flags
_TCP_AFTER_PORTS = struct.Struct("!IIH")
_ENDPOINTS4 = struct.Struct("!4s4sHH")
_U32LE = struct.Struct("<I")
_U32BE = struct.Struct(">I")

_VLAN_TYPES = frozenset({0x8100, 0x88A8, 0x9100, 0x9200})
_AF_INET6 = frozenset({10, 24, 28, 30})  # Linux, NetBSD/OpenBSD, FreeBSD/DragonFly, Darwin
_IPV6_SKIP = frozenset({0, 43, 60, 51})  # hop-by-hop, routing, destination options, AH

_ntoa = socket.inet_ntoa
_addr4_cache: dict[bytes, str] = {}
_addr6_cache: dict[bytes, str] = {}


def addr4(b: bytes) -> str:
    """The dotted-quad text of a 4-byte IPv4 address (cached: a capture names few hosts)."""
    s = _addr4_cache.get(b)
    if s is None:
        s = _ntoa(b)
        if len(_addr4_cache) < 65536:
            _addr4_cache[b] = s
    return s


#: 12 bytes of endpoints (:data:`ETH_IPV4_ENDPOINTS`) -> what :func:`endpoints4` gave for them (read
#: in place by the per-frame loops: ``ENDPOINTS4_SEEN.get(raw) or endpoints4(raw)``)
ENDPOINTS4_SEEN: dict[bytes, tuple[str, int, str, int, tuple[tuple[str, int], tuple[str, int]]]] = {}


def endpoints4(raw: bytes) -> tuple[str, int, str, int, tuple[tuple[str, int], tuple[str, int]]]:
    """Source address, source port, destination address, destination port of the 12 bytes of
    :data:`ETH_IPV4_ENDPOINTS`, and the TCP connection they belong to (its two endpoints in sorted
    order, as :func:`harness.capture.streams.segment_connection` names it); cached: a capture
    holds few connections, each of many frames."""
    found = ENDPOINTS4_SEEN.get(raw)
    if found is None:
        src, dst, sport, dport = _ENDPOINTS4.unpack(raw)
        a, b = (addr4(src), sport), (addr4(dst), dport)
        found = (a[0], sport, b[0], dport, (a, b) if a <= b else (b, a))
        if len(ENDPOINTS4_SEEN) >= 65536:
            ENDPOINTS4_SEEN.clear()
        ENDPOINTS4_SEEN[raw] = found
    return found


def _addr6(b: bytes) -> str:
    s = _addr6_cache.get(b)
    if s is None:
        s = socket.inet_ntop(socket.AF_INET6, b)
        if len(_addr6_cache) < 65536:
            _addr6_cache[b] = s
    return s


def _tcp(data: bytes, p: int, end: int, src: str, dst: str) -> TcpSegment | FrameProblem:
    """TCP header at ``p``; the segment (header + payload) ends at ``end`` per the IP header."""
    n = len(data)
    if p + 20 > n:
        return FrameProblem("truncated TCP header", p)
    sport, dport, seq, ack, offl = TCP_HEADER.unpack_from(data, p)
    hl = (offl >> 12) * 4
    if hl < 20:
        return FrameProblem(f"TCP data offset {hl} below 20", p)
    if p + hl > end:
        return FrameProblem(f"TCP header ({hl} bytes) beyond the IP payload", p)
    if p + hl > n:
        return FrameProblem("truncated TCP options", p)
    truncated = 0
    if end > n:
        truncated = end - n
        end = n
    return TcpSegment(src, sport, dst, dport, seq, ack, offl & 0x1FF, data[p + hl : end], truncated)


def _ipv4(data: bytes, p: int) -> TcpSegment | FrameProblem | None:
    if p + 20 > len(data):
        return FrameProblem("truncated IPv4 header", p)
    vihl, total, frag, proto, src, dst = _IPV4.unpack_from(data, p)
    if vihl >> 4 != 4:
        return FrameProblem(f"IP version {vihl >> 4} in an IPv4 frame", p)
    ihl = (vihl & 0x0F) * 4
    if ihl < 20:
        return FrameProblem(f"IPv4 header length {ihl} below 20", p)
    if proto != 6:
        return None
    if frag & 0x3FFF:
        if frag & 0x1FFF:
            return FrameProblem(f"IPv4 non-first fragment (offset {(frag & 0x1FFF) * 8}), not decodable", p)
        return FrameProblem("IPv4 first fragment of a fragmented datagram, not decodable", p)
    if total == 0:  # TSO/LSO captures leave the length 0: the datagram is what was captured
        total = len(data) - p
    elif total < ihl:
        return FrameProblem(f"IPv4 total length {total} below header length {ihl}", p)
    return _tcp(data, p + ihl, p + total, addr4(src), addr4(dst))


def _ipv6(data: bytes, p: int) -> TcpSegment | FrameProblem | None:
    if p + 40 > len(data):
        return FrameProblem("truncated IPv6 header", p)
    if data[p] >> 4 != 6:
        return FrameProblem(f"IP version {data[p] >> 4} in an IPv6 frame", p)
    plen, nh, src, dst = _IPV6.unpack_from(data, p)
    end = p + 40 + plen if plen else len(data)  # 0: jumbogram (hop-by-hop option) or TSO
    q = p + 40
    while nh in _IPV6_SKIP:
        if q + 8 > len(data):
            return FrameProblem("truncated IPv6 extension header", q)
        # RFC 8200 4.3-4.6: length in 8-octet units beyond the first; AH (RFC 4302) in 4-octet units
        nh, q = data[q], q + ((data[q + 1] + 2) * 4 if nh == 51 else (data[q + 1] + 1) * 8)
    if nh == 44:
        return FrameProblem("IPv6 fragment header, not decodable", q)
    if nh != 6:
        return None
    if q > end:
        return FrameProblem("IPv6 extension headers beyond the payload length", q)
    return _tcp(data, q, end, _addr6(src), _addr6(dst))


def _ip(data: bytes, p: int) -> TcpSegment | FrameProblem | None:
    if p >= len(data):
        return FrameProblem("no IP header", p)
    v = data[p] >> 4
    if v == 4:
        return _ipv4(data, p)
    if v == 6:
        return _ipv6(data, p)
    return None


def _ethertype(data: bytes, etype: int, p: int) -> TcpSegment | FrameProblem | None:
    while etype in _VLAN_TYPES:
        if p + 4 > len(data):
            return FrameProblem("truncated VLAN tag", p)
        etype = _H.unpack_from(data, p + 2)[0]
        p += 4
    if etype == 0x0800:
        return _ipv4(data, p)
    if etype == 0x86DD:
        return _ipv6(data, p)
    return None


def _ethernet(data: bytes) -> TcpSegment | FrameProblem | None:
    """Ethernet II (LINKTYPE_ETHERNET 1), 802.1Q / 802.1ad tags skipped."""
    if len(data) < 14:
        return FrameProblem("truncated Ethernet header", 0)
    return _ethertype(data, _H.unpack_from(data, 12)[0], 14)


def _raw_ip(data: bytes) -> TcpSegment | FrameProblem | None:
    """Raw IP (LINKTYPE_RAW 101, and DLT 12 / 14 of some systems): the version nibble decides."""
    return _ip(data, 0)


def _raw_ipv4(data: bytes) -> TcpSegment | FrameProblem | None:
    """LINKTYPE_IPV4 (228)."""
    return _ipv4(data, 0)


def _raw_ipv6(data: bytes) -> TcpSegment | FrameProblem | None:
    """LINKTYPE_IPV6 (229)."""
    return _ipv6(data, 0)


def _linux_sll(data: bytes) -> TcpSegment | FrameProblem | None:
    """Linux cooked capture v1 (LINKTYPE_LINUX_SLL 113): the protocol type at bytes 14-15."""
    if len(data) < 16:
        return FrameProblem("truncated Linux cooked (SLL) header", 0)
    return _ethertype(data, _H.unpack_from(data, 14)[0], 16)


def _linux_sll2(data: bytes) -> TcpSegment | FrameProblem | None:
    """Linux cooked capture v2 (LINKTYPE_LINUX_SLL2 276): the protocol type at bytes 0-1."""
    if len(data) < 20:
        return FrameProblem("truncated Linux cooked v2 (SLL2) header", 0)
    return _ethertype(data, _H.unpack_from(data, 0)[0], 20)


def _loopback(af: int, data: bytes) -> TcpSegment | FrameProblem | None:
    """The IP packet after a 4-byte loopback header holding the address family ``af``."""
    if af == 2:
        return _ipv4(data, 4)
    if af in _AF_INET6:
        return _ipv6(data, 4)
    return None


def _null(data: bytes) -> TcpSegment | FrameProblem | None:
    """BSD loopback (LINKTYPE_NULL 0): the address family in the host byte order of the capturing
    machine; AF values are small, so the order is picked by the value."""
    if len(data) < 4:
        return FrameProblem("truncated loopback header", 0)
    af = _U32LE.unpack_from(data, 0)[0]
    if af > 0xFFFF:
        af = _U32BE.unpack_from(data, 0)[0]
    return _loopback(af, data)


def _openbsd_loop(data: bytes) -> TcpSegment | FrameProblem | None:
    """OpenBSD loopback (LINKTYPE_LOOP 108): the address family in network byte order."""
    if len(data) < 4:
        return FrameProblem("truncated loopback header", 0)
    return _loopback(_U32BE.unpack_from(data, 0)[0], data)


#: the link layers read, by LINKTYPE_* value (the tcpdump.org registry); every other is not TCP
_LINK_LAYERS: dict[int, Callable[[bytes], TcpSegment | FrameProblem | None]] = {
    1: _ethernet,
    101: _raw_ip,
    12: _raw_ip,
    14: _raw_ip,
    228: _raw_ipv4,
    229: _raw_ipv6,
    113: _linux_sll,
    276: _linux_sll2,
    0: _null,
    108: _openbsd_loop,
}


def decode_tcp(linktype: int, data: bytes) -> TcpSegment | FrameProblem | None:
    """Decode one captured frame down to its TCP segment.

    Returns None for frames that are not TCP over IPv4/IPv6 (ARP, UDP, unknown link types, ...),
    and a :class:`FrameProblem` for frames that are (or may be) TCP but cannot be decoded.  The
    common frame -- untagged Ethernet II + IPv4 + TCP, no fragments -- is read in place; every
    other goes to its link layer's reader (:data:`_LINK_LAYERS`).
    """
    if linktype == 1 and len(data) >= 54:
        etype, vihl, total, frag, proto, src, dst = ETH_IPV4_TCP.unpack_from(data, 0)
        if etype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF and total >= 40:
            end = 14 + total
            sport, dport, seq, ack, offl = TCP_HEADER.unpack_from(data, 34)
            hl = (offl >> 12) * 4
            n = len(data)
            if hl >= 20 and 34 + hl <= end and 34 + hl <= n:
                if end <= n:
                    return _new_segment(
                        TcpSegment,
                        (addr4(src), sport, addr4(dst), dport, seq, ack, offl & 0x1FF, data[34 + hl : end], 0),
                    )
                return TcpSegment(
                    addr4(src), sport, addr4(dst), dport, seq, ack, offl & 0x1FF, data[34 + hl :], end - n
                )
    link_layer = _LINK_LAYERS.get(linktype)
    return link_layer(data) if link_layer is not None else None


def decode_tcp_view(linktype: int, buf: bytes, start: int, stop: int) -> TcpSegment | FrameProblem | None:
    """:func:`decode_tcp` of the frame ``buf[start:stop]`` (a record read in place,
    :data:`harness.capture.pcapcommon.RecordView`) without copying the frame: the common frame's
    payload is the one copy made, from ``buf``; every other frame is copied out and decoded."""
    if linktype == 1 and stop - start >= 54:
        etype, vihl, total, frag, proto, ends = ETH_IPV4_ENDPOINTS.unpack_from(buf, start)
        if etype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF and total >= 40:
            end = 14 + total
            seq, ack, offl = _TCP_AFTER_PORTS.unpack_from(buf, start + 38)
            hl = (offl >> 12) * 4
            n = stop - start
            if hl >= 20 and 34 + hl <= end and 34 + hl <= n and end <= n:
                payload = buf[start + 34 + hl : start + end]
                e = ENDPOINTS4_SEEN.get(ends) or endpoints4(ends)
                fields = (e[0], e[1], e[2], e[3], seq, ack, offl & 0x1FF, payload, 0)
                return _new_segment(TcpSegment, fields)
    return decode_tcp(linktype, buf[start:stop])
