"""[MS-MQMQ] 2.1 format names (packets.formatname): every kind of the grammar parses and renders
back, keywords are case-insensitive, and a name that does not conform names the offset."""

from __future__ import annotations

import uuid

import pytest

from packets.formatname import (
    FormatNameError,
    direct_machine,
    format_name_kind,
    is_direct_http,
    parse_format_name,
    parse_format_names,
)

G = "{6B29FC40-CA47-1067-B31D-00DD010662DA}"


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        (
            "DIRECT=TCP:10.0.0.1\\private$\\orders",
            "DIRECT",
            {"protocol": "TCP", "address": "10.0.0.1", "queue": "private$\\orders"},
        ),
        ("DIRECT=OS:host.example\\pub", "DIRECT", {"protocol": "OS", "address": "host.example", "queue": "pub"}),
        (
            "DIRECT=HTTPS://host/msmq/private$/q",
            "DIRECT",
            {"protocol": "HTTPS", "address": "host", "queue": "msmq/private$/q"},
        ),
        ("DIRECT=TCP:10.0.0.1\\SYSTEM$;DEADXACT", "DIRECT", {"queue": "SYSTEM$", "suffix": "DEADXACT"}),
        ("DIRECT=OS:m\\private$\\q;JOURNAL", "DIRECT", {"suffix": "JOURNAL"}),
        (f"PUBLIC={G}", "PUBLIC", {"guid": uuid.UUID(G.strip("{}"))}),
        (f"PRIVATE={G}\\0000000a", "PRIVATE", {"number": 10, "guid": uuid.UUID(G.strip("{}"))}),
        (f"DL={G}@example.com", "DL", {"domain": "example.com"}),
        (f"MACHINE={G};DEADLETTER", "MACHINE", {"suffix": "DEADLETTER"}),
        (f"CONNECTOR={G}", "CONNECTOR", {}),
        ("MULTICAST=234.1.1.1:8001", "MULTICAST", {"address": "234.1.1.1", "port": 8001}),
    ],
)
def test_every_kind_parses_and_renders_back(text: str, kind: str, fields: dict) -> None:
    name = parse_format_name(text)
    assert name.kind == kind
    for key, value in fields.items():
        assert getattr(name, key) == value
    assert parse_format_name(str(name)) == name
    assert str(name).upper() == text.upper() or kind in ("PRIVATE",)


def test_keywords_are_case_insensitive_and_helpers_agree() -> None:
    assert parse_format_name("direct=tcp:h\\q").protocol == "TCP"
    assert is_direct_http("DIRECT=http://h/msmq/q") and not is_direct_http("DIRECT=TCP:h\\q")
    assert direct_machine("DIRECT=TCP:10.1.2.3\\private$\\q") == "10.1.2.3" and direct_machine(f"PUBLIC={G}") == ""
    assert format_name_kind(" dl = x") == "DL" and format_name_kind("nothing") == ""
    assert parse_format_name("DIRECT=TCP:10.0.0.1\\private$\\q").private


def test_a_multiple_element_name_lists_its_elements() -> None:
    names = parse_format_names(f"DIRECT=TCP:h\\q, PUBLIC={G},DL={G}")
    assert [n.kind for n in names] == ["DIRECT", "PUBLIC", "DL"]


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ("QUEUE=x", 0),
        ("DIRECT=FTP:h\\q", 7),
        ("DIRECT=TCP:h", 12),
        ("DIRECT=TCP:\\q", 11),
        ("DIRECT=HTTP:h/q", 12),
        (f"PRIVATE={G}", 46),
        (f"PRIVATE={G}\\xyz", 47),
        ("PUBLIC=not-a-guid", 7),
        ("MULTICAST=10.0.0.1:80", 10),
        ("MULTICAST=234.1.1.1:99999", 10),
        ("DIRECT=TCP:h\\q;bad,name", 15),
    ],
)
def test_a_name_that_does_not_conform_names_the_offset(text: str, offset: int) -> None:
    with pytest.raises(FormatNameError) as e:
        parse_format_name(text)
    assert e.value.offset == offset, str(e.value)
    assert "[MS-MQMQ 2.1]" in str(e.value)


def test_an_error_in_a_later_element_counts_from_the_whole_name() -> None:
    with pytest.raises(FormatNameError) as e:
        parse_format_names("DIRECT=TCP:h\\q,PUBLIC=nope")
    assert e.value.offset == len("DIRECT=TCP:h\\q,PUBLIC=")
