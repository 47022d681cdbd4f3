"""[MS-MQMQ] 2.1 queue names (packets.formatname): the names 2.1 and the MSMQ documentation give
as examples parse and render back, keywords are case-insensitive, what the ABNF excludes is
refused with the offset named, and any text either parses or raises FormatNameError."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packets.formatname import (
    DirectProtocol,
    FormatName,
    FormatNameError,
    FormatNameKind,
    PathName,
    QueueFormatType,
    QueueSuffixType,
    direct_machine,
    format_name_kind,
    is_direct_http,
    parse_format_name,
    parse_format_names,
    parse_path_name,
)

G = "6B29FC40-CA47-1067-B31D-00DD010662DA"
MACHINE_GUID = "308FB580-1EB2-11CA-923B-08002B1075A7"  # the machine format name examples of MSMQ's docs

# (text, kind, fields, QUEUE_FORMAT_TYPE, QUEUE_SUFFIX_TYPE)
EXAMPLES = [
    # 2.1.2 PrivateQueuePath / PublicQueuePath / MachineQueuePath, one per Protocol
    ("DIRECT=TCP:192.168.100.100\\private$\\privateqnxa", "DIRECT",
     {"protocol": "TCP", "address": "192.168.100.100", "private": True, "queue_name": "privateqnxa"}, 3, 0),
    ("DIRECT=OS:mypc-gx600\\testmsmq", "DIRECT",
     {"protocol": "OS", "address": "mypc-gx600", "private": False, "queue_name": "testmsmq"}, 3, 0),
    ("DIRECT=OS:mypc-gx600\\private$\\privateqnxa;JOURNAL", "DIRECT", {"suffix": "JOURNAL"}, 3, 1),
    ("DIRECT=TCP:10.0.0.1\\SYSTEM$;DEADXACT", "DIRECT", {"system": True, "suffix": "DEADXACT"}, 3, 3),
    ("DIRECT=OS:host\\SYSTEM$;DEADLETTER", "DIRECT", {"system": True, "suffix": "DEADLETTER"}, 3, 2),
    ("DIRECT=OS:host\\SYSTEM$;JOURNAL", "DIRECT", {"system": True, "suffix": "JOURNAL"}, 3, 1),
    ("DIRECT=IPX:00000001:00A0C9123456\\q", "DIRECT", {"protocol": "IPX", "address": "00000001:00A0C9123456"}, 3, 0),
    ("DIRECT=TCP:2001:db8::1\\private$\\q", "DIRECT", {"address": "2001:db8::1"}, 3, 0),
    ("DIRECT=HTTP://mypc-gx600/msmq/testmsmq", "DIRECT",
     {"protocol": "HTTP", "address": "mypc-gx600", "port": None, "queue_name": "testmsmq", "separator": "/"}, 3, 0),
    ("DIRECT=HTTP://URLAddressSpecification/msmq/private$/myQueue", "DIRECT",
     {"private": True, "queue_name": "myQueue", "separator": "/"}, 3, 0),
    ("DIRECT=HTTP://URLAddressSpecification/msmq\\private$\\myQueue", "DIRECT",
     {"private": True, "queue_name": "myQueue", "separator": "\\"}, 3, 0),
    ("DIRECT=HTTPS://host:8443/MSMQ\\PRIVATE$\\q", "DIRECT",
     {"protocol": "HTTPS", "address": "host", "port": 8443}, 3, 0),
    # MSMQ 4.0 QueueName [";" Subqueue] (2.1.1), QUEUE_FORMAT_TYPE_SUBQUEUE (2.2.6)
    ("DIRECT=OS:host\\private$\\orders;poison", "DIRECT", {"suffix": "poison", "subqueue": "poison"}, 8, 5),
    # 2.1.3, 2.1.4, 2.1.5, 2.1.6 (suffixes as 2.2.7 allows them)
    (f"PUBLIC={G}", "PUBLIC", {"guid": uuid.UUID(G)}, 1, 0),
    (f"PUBLIC={G};JOURNAL", "PUBLIC", {"suffix": "JOURNAL"}, 1, 1),
    (f"PRIVATE={G}\\0000000a", "PRIVATE", {"number": 10, "guid": uuid.UUID(G), "private": True}, 2, 0),
    (f"PRIVATE={G}\\0000001a;JOURNAL", "PRIVATE", {"number": 0x1A}, 2, 1),
    (f"DL={G}", "DL", {"domain": ""}, 6, 0),
    (f"DL={G}@example.com", "DL", {"domain": "example.com"}, 6, 0),
    (f"MACHINE={MACHINE_GUID};JOURNAL", "MACHINE", {"guid": uuid.UUID(MACHINE_GUID)}, 4, 1),
    (f"MACHINE={MACHINE_GUID};DEADLETTER", "MACHINE", {}, 4, 2),
    (f"MACHINE={MACHINE_GUID};DEADXACT", "MACHINE", {}, 4, 3),
    (f"CONNECTOR={G}", "CONNECTOR", {}, 5, 0),
    (f"CONNECTOR={G};XACTONLY", "CONNECTOR", {}, 5, 4),
    ("MULTICAST=234.1.1.1:8001", "MULTICAST", {"address": "234.1.1.1", "port": 8001}, 7, 0),
    ("MULTICAST=224.0.0.0:0", "MULTICAST", {"port": 0}, 7, 0),
    ("MULTICAST=239.255.255.255:65535", "MULTICAST", {"port": 65535}, 7, 0),
]


@pytest.mark.parametrize(("text", "kind", "fields", "format_type", "suffix_type"), EXAMPLES)
def test_every_example_parses_and_renders_back(
    text: str, kind: str, fields: dict, format_type: int, suffix_type: int
) -> None:
    name = parse_format_name(text)
    assert name.kind is FormatNameKind(kind)
    for key, value in fields.items():
        assert getattr(name, key) == value, key
    assert name.format_type is QueueFormatType(format_type)
    assert name.suffix_type is QueueSuffixType(suffix_type)
    assert parse_format_name(str(name)) == name
    assert str(name).upper() == text.upper()


def test_keywords_are_case_insensitive() -> None:
    lower = parse_format_name("direct=tcp:10.0.0.1\\PRIVATE$\\q;journal")
    assert lower == parse_format_name("DIRECT=TCP:10.0.0.1\\private$\\q;JOURNAL")
    assert lower.protocol is DirectProtocol.TCP and lower.private and lower.suffix == "JOURNAL"
    assert parse_format_name(f"public={G.lower()}").guid == uuid.UUID(G)
    assert parse_format_name("direct=https://h/msmq/q").is_http
    assert parse_format_name("Direct=Os:h\\System$;DeadXact").suffix == "DEADXACT"


def test_helpers_the_callers_use() -> None:
    assert is_direct_http("DIRECT=http://h/msmq/q") and not is_direct_http("DIRECT=TCP:10.0.0.1\\q")
    assert not is_direct_http("DIRECT=HTTP:h\\q")  # does not conform: not a direct HTTP name
    assert direct_machine("DIRECT=TCP:10.1.2.3\\private$\\q") == "10.1.2.3"
    assert direct_machine("DIRECT=OS:msmq-harness.invalid\\private$\\out") == "msmq-harness.invalid"
    assert direct_machine(f"PUBLIC={G}") == "" and direct_machine("nothing") == ""
    assert format_name_kind(" dl = x") == "DL" and format_name_kind("nothing") == ""
    name = parse_format_name("DIRECT=OS:host\\private$\\q;sub")
    assert name.queue_path == "private$\\q" and name.direct_name == "OS:host\\PRIVATE$\\q;sub"
    assert parse_format_name("DIRECT=OS:host\\SYSTEM$;JOURNAL").queue_path == "system$"
    assert parse_format_name(f"PUBLIC={G}").queue_path == "" and parse_format_name(f"PUBLIC={G}").machine == ""


def test_path_names_and_their_direct_format_names() -> None:
    """2.1.1: Computer "\\" QueueName, "\\private$\\" QueueName, "\\system$;" QueueName."""
    assert parse_path_name("ComputerName\\QueueName") == PathName("ComputerName", "QueueName")
    assert parse_path_name("ComputerName\\private$\\QueueName") == PathName("ComputerName", "QueueName", private=True)
    assert parse_path_name("ComputerName\\system$;QueueName") == PathName("ComputerName", "QueueName", system=True)
    assert parse_path_name("c\\private$\\q;sub").subqueue == "sub"
    for text in ("ComputerName\\QueueName", "c\\private$\\q;sub", "c\\system$;DEADXACT"):
        assert str(parse_path_name(text)) == text
    assert str(FormatName.direct("LOCALHOST\\private$\\q")) == "DIRECT=OS:LOCALHOST\\PRIVATE$\\q"
    assert FormatName.direct("m\\system$;deadletter").suffix_type is QueueSuffixType.DEADLETTER
    assert FormatName.direct("m\\private$\\q;journal", DirectProtocol.TCP).suffix_type is QueueSuffixType.JOURNAL
    with pytest.raises(FormatNameError):
        FormatName.direct("m\\system$;orders")
    for bad, offset in (("nobackslash", 11), ("c\\", 2), ("c\\q q", 3), ("c\\private$\\", 11)):
        with pytest.raises(FormatNameError) as e:
            parse_path_name(bad)
        assert e.value.offset == offset, str(e.value)


def test_a_multiple_element_name_lists_its_elements() -> None:
    """2.1.7's example (its DIRECT element completed with a Protocol)."""
    names = parse_format_names(f"DIRECT=OS:ComputerAddress\\QueueName,PUBLIC={G},DL={G}")
    assert [n.kind for n in names] == ["DIRECT", "PUBLIC", "DL"]
    assert [n.kind for n in parse_format_names(f"MACHINE={G};JOURNAL")] == ["MACHINE"]  # single element
    assert len(parse_format_names("MULTICAST=234.1.1.1:1,CONNECTOR=" + G + f",PRIVATE={G}\\1")) == 3


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("DIRECT=OS:h\\q,MACHINE=" + G, 14),  # FormatName of 2.1.7 has no Machine
        (f"PUBLIC={G},DIRECT=OS:h\\q;JOURNAL", 44),  # nor a read-only queue
        (f"DIRECT=OS:h\\q,MACHINE={G};DEADLETTER", 14),
        ("DIRECT=OS:h\\SYSTEM$;DEADXACT,DIRECT=OS:h\\q", 0),
    ],
)
def test_a_multiple_element_name_admits_no_machine_and_no_read_only_queue(text: str, offset: int) -> None:
    with pytest.raises(FormatNameError) as e:
        parse_format_names(text)
    assert e.value.offset == offset, str(e.value)


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("QUEUE=x", 0, "DIRECT="),
        (" DIRECT=OS:h\\q", 0, "DIRECT="),
        ("DIRECT=FTP:h\\q", 7, "Protocol"),
        ("DIRECT=SPX:h\\q", 7, "Protocol"),
        ("DIRECT=TCP:host\\q", 11, "IP address"),
        ("DIRECT=TCP:10.0.0.1", 19, "'\\'"),
        ("DIRECT=TCP:\\q", 11, "ProtocolAddressSpecification"),
        ("DIRECT=OS:h\\", 12, "QueueName"),
        ("DIRECT=OS:h\\q q", 13, "end of the name"),
        ("DIRECT=OS:h\\q+1", 13, "end of the name"),
        ("DIRECT=OS:h\\" + "q" * 125, 136, "end of the name"),
        ("DIRECT=OS:h\\q;" + "s" * 33, 46, "end of the name"),
        ("DIRECT=OS:h\\q;", 14, "Subqueue"),
        ("DIRECT=OS:h\\SYSTEM$;ORDERS", 20, "DEADLETTER"),
        ("DIRECT=IPX:host\\q", 11, "IPX"),
        ("DIRECT=HTTP:h/q", 12, "'//'"),
        ("DIRECT=HTTP://h/q", 15, "/MSMQ"),
        ("DIRECT=HTTP://h/msmq", 20, "'\\'"),
        ("DIRECT=HTTP://h/msmq/private$/a/b", 31, "'/'"),
        (f"PUBLIC={{{G}}}", 7, "GUID"),
        ("PUBLIC=not-a-guid", 7, "GUID"),
        (f"PUBLIC={G};DEADLETTER", 44, "JOURNAL"),
        (f"PRIVATE={G}", 44, "QueueNumber"),
        (f"PRIVATE={G}\\xyz", 45, "QueueNumber"),
        (f"PRIVATE={G}\\123456789", 45, "QueueNumber"),
        (f"PRIVATE={G}\\1;DEADXACT", 47, "JOURNAL"),
        (f"DL={G};JOURNAL", 39, "end of the name"),
        (f"DL={G}@", 40, "DomainName"),
        (f"MACHINE={G};XACTONLY", 45, "DEADLETTER"),
        (f"CONNECTOR={G};JOURNAL", 47, "XACTONLY"),
        ("MULTICAST=10.0.0.1:80", 10, "dec-octet1"),
        ("MULTICAST=240.0.0.1:80", 10, "dec-octet1"),
        ("MULTICAST=234.1.256.1:80", 16, "dec-octet"),
        ("MULTICAST=234.01.1.1:80", 14, "dec-octet"),
        ("MULTICAST=234.1.1.1", 19, "Port"),
        ("MULTICAST=234.1.1.1:99999", 20, "Port"),
        ("MULTICAST=234.1.1.1:080", 21, "end of the name"),
        ("DIRECT=OS:h\\q;bad,name", 17, "end of the name"),
    ],
)
def test_a_name_that_does_not_conform_names_the_offset_and_what_was_expected(
    text: str, offset: int, expected: str
) -> None:
    with pytest.raises(FormatNameError) as e:
        parse_format_name(text)
    assert e.value.offset == offset, str(e.value)
    assert expected in e.value.reason, str(e.value)
    assert "[MS-MQMQ 2.1]" in str(e.value) and repr(text) in str(e.value)


def test_an_error_in_a_later_element_counts_from_the_whole_name() -> None:
    with pytest.raises(FormatNameError) as e:
        parse_format_names("DIRECT=OS:h\\q,PUBLIC=nope")
    assert e.value.offset == len("DIRECT=OS:h\\q,PUBLIC=")
    assert e.value.text == "DIRECT=OS:h\\q,PUBLIC=nope"


_queue_names = st.text(st.sampled_from("abcXYZ019-_.$!#&()*:<=>?@[]^`{|}~"), min_size=1, max_size=12)
_guids = st.uuids()
_names = st.one_of(
    st.builds(
        lambda proto, addr, private, q, sub: FormatName(
            FormatNameKind.DIRECT, proto, addr, private=private, queue_name=q, suffix=sub
        ),
        st.sampled_from([DirectProtocol.OS]),
        st.sampled_from(["h", "host.example", "MSMQ-1"]),
        st.booleans(),
        _queue_names,
        st.sampled_from(["", "JOURNAL", "poison", "retry-1"]),
    ),
    st.builds(
        lambda addr, q: FormatName(FormatNameKind.DIRECT, DirectProtocol.TCP, addr, private=True, queue_name=q),
        st.ip_addresses().map(str),
        _queue_names,
    ),
    st.builds(
        lambda g, s: FormatName(FormatNameKind.PUBLIC, guid=g, suffix=s), _guids, st.sampled_from(["", "JOURNAL"])
    ),
    st.builds(
        lambda g, n: FormatName(FormatNameKind.PRIVATE, private=True, guid=g, number=n),
        _guids,
        st.integers(0, 0xFFFFFFFF),
    ),
    st.builds(
        lambda g, s: FormatName(FormatNameKind.MACHINE, guid=g, suffix=s),
        _guids,
        st.sampled_from(["", "JOURNAL", "DEADLETTER", "DEADXACT"]),
    ),
    st.builds(
        lambda a, b, c, d, p: FormatName(FormatNameKind.MULTICAST, address=f"{a}.{b}.{c}.{d}", port=p),
        st.integers(224, 239),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 65535),
    ),
)


@given(_names)
def test_what_is_rendered_parses_back_to_the_same_name(name: FormatName) -> None:
    assert parse_format_name(str(name)) == name


@given(st.text(max_size=60) | st.lists(st.sampled_from(["DIRECT=", "OS:", "TCP:", "HTTP://", "h", "\\", "/MSMQ", "/",
                                                     "PRIVATE$", "SYSTEM$;", ";", ",", "PUBLIC=", G, ":", "1"]),
                                      max_size=10).map("".join))
def test_any_text_parses_or_raises_a_format_name_error(text: str) -> None:
    try:
        names = parse_format_names(text)
    except FormatNameError as e:
        assert 0 <= e.offset <= len(text)
    else:
        assert ",".join(str(n) for n in names).upper().count(",") == text.count(",")
