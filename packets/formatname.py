"""[MS-MQMQ] 2.1 format names: one parser for the whole harness.

Renders the ABNF of [MS-MQMQ] 2.1.2 Direct Format Names (``DIRECT=`` Protocol ``:``
ProtocolAddressSpecification ``\\`` [``PRIVATE$\\``] QueueName, or ``SYSTEM$;`` JOURNAL /
DEADLETTER / DEADXACT; Protocol TCP, OS, HTTP, HTTPS, IPX; for HTTP and HTTPS the address is a URL
``//host/path``), 2.1.3 Public (``PUBLIC=`` QueueGuid), 2.1.4 Private (``PRIVATE=`` MachineGuid
``\\`` QueueNumber, hexadecimal), 2.1.5 Distribution List (``DL=`` Guid [``@`` DomainName]),
2.1.6 Machine, Connector and Multicast (``MACHINE=`` Guid, ``CONNECTOR=`` Guid, ``MULTICAST=``
IPv4 address in 224.0.0.0-239.255.255.255 ``:`` Port) and 2.1.7 Multiple-Element Format Names
(elements separated by commas).  Keywords are case-insensitive; a name may end in a suffix
``;JOURNAL``, ``;DEADLETTER``, ``;DEADXACT``, ``;XACTONLY`` or a subqueue name.  A name that does not
conform raises :class:`FormatNameError`, which names the offset and what was expected.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

__all__ = [
    "FormatName",
    "FormatNameError",
    "direct_machine",
    "format_name_kind",
    "is_direct_http",
    "parse_format_name",
    "parse_format_names",
    "try_parse_format_name",
]

KINDS = ("DIRECT", "PUBLIC", "PRIVATE", "DL", "MACHINE", "CONNECTOR", "MULTICAST")
PROTOCOLS = ("TCP", "OS", "HTTP", "HTTPS", "IPX")
_SUBQUEUE = re.compile(r"[\x21\x23-\x2a\x2d-\x3a\x3c-\x5b\x5d-\x7f]{1,32}")  # 2.1.2 Subqueue
_MULTICAST = re.compile(r"(22[4-9]|23\d)\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d{1,5})")


class FormatNameError(ValueError):
    """A format name that does not conform to [MS-MQMQ] 2.1: where (character offset) and why."""

    def __init__(self, text: str, offset: int, reason: str) -> None:
        super().__init__(f"format name {text!r} at offset {offset}: {reason} [MS-MQMQ 2.1]")
        self.text = text
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True)
class FormatName:
    """One single-element format name.  ``kind`` is the keyword (upper case); the other fields are
    those its grammar has: ``protocol`` and ``address`` (the ProtocolAddressSpecification: a
    machine name or address; for HTTP/HTTPS the host) and ``queue`` (the rest of the path: a
    QueueName, ``PRIVATE$\\``QueueName, ``SYSTEM$``, or the URL path) of a direct name; ``guid``
    of a public, private (the machine's), distribution list, machine or connector name; ``number``
    of a private name; ``port`` of a multicast one (its address in ``address``); ``domain`` of a
    distribution list; ``suffix`` what follows ``;`` (JOURNAL, DEADLETTER, a subqueue, ...)."""

    kind: str
    protocol: str = ""
    address: str = ""
    queue: str = ""
    guid: uuid.UUID | None = None
    number: int | None = None
    port: int | None = None
    domain: str = ""
    suffix: str = ""

    @property
    def machine(self) -> str:
        """The machine a direct name names (its address), "" for any other kind."""
        return self.address if self.kind == "DIRECT" else ""

    @property
    def is_http(self) -> bool:
        """A direct name that specifies the HTTP or HTTPS protocol."""
        return self.kind == "DIRECT" and self.protocol in ("HTTP", "HTTPS")

    @property
    def private(self) -> bool:
        """It names a private queue: a private name, or a direct name whose path is PRIVATE$\\."""
        return self.kind == "PRIVATE" or (self.kind == "DIRECT" and self.queue.upper().startswith("PRIVATE$\\"))

    def __str__(self) -> str:
        suffix = f";{self.suffix}" if self.suffix else ""
        if self.kind == "DIRECT":
            if self.is_http:
                return f"DIRECT={self.protocol}://{self.address}/{self.queue}{suffix}"
            return f"DIRECT={self.protocol}:{self.address}\\{self.queue}{suffix}"
        if self.kind == "PRIVATE":
            return f"PRIVATE={_guid_text(self.guid)}\\{self.number or 0:08x}{suffix}"
        if self.kind == "MULTICAST":
            return f"MULTICAST={self.address}:{self.port}"
        if self.kind == "DL":
            return f"DL={_guid_text(self.guid)}" + (f"@{self.domain}" if self.domain else "")
        return f"{self.kind}={_guid_text(self.guid)}{suffix}"


def _guid_text(guid: uuid.UUID | None) -> str:
    return "{" + str(guid or uuid.UUID(int=0)).upper() + "}"


def _guid(text: str, at: int, whole: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip().strip("{}"))
    except ValueError:
        raise FormatNameError(whole, at, f"{text!r} is not a GUID") from None


def _split_suffix(rest: str, at: int, whole: str) -> tuple[str, str]:
    body, sep, suffix = rest.partition(";")
    if sep and not _SUBQUEUE.fullmatch(suffix):
        raise FormatNameError(whole, at + len(body) + 1, f"{suffix!r} is not a suffix or subqueue name")
    return body, suffix


def parse_format_name(text: str, *, _offset: int = 0, _whole: str | None = None) -> FormatName:
    """One single-element format name ([MS-MQMQ] 2.1.2-2.1.6)."""
    whole = text if _whole is None else _whole
    keyword, eq, rest = text.partition("=")
    kind = keyword.strip().upper()
    if not eq or kind not in KINDS:
        raise FormatNameError(whole, _offset, f"expected one of {', '.join(k + '=' for k in KINDS)}")
    at = _offset + len(keyword) + 1
    if kind == "DIRECT":
        return _direct(rest, at, whole)
    if kind == "MULTICAST":
        m = _MULTICAST.fullmatch(rest.strip())
        if m is None or any(int(o) > 255 for o in m.groups()[1:4]) or int(m.group(5)) > 65535:
            raise FormatNameError(whole, at, "expected an IPv4 multicast address 224.0.0.0-239.255.255.255 and :Port")
        address, _, port = rest.strip().rpartition(":")
        return FormatName("MULTICAST", address=address, port=int(port))
    body, suffix = _split_suffix(rest, at, whole)
    if kind == "PRIVATE":
        machine, sep, number = body.partition("\\")
        if not sep:
            raise FormatNameError(whole, at + len(body), "expected \\QueueNumber after the machine GUID")
        try:
            value = int(number, 16)
        except ValueError:
            raise FormatNameError(
                whole, at + len(machine) + 1, f"{number!r} is not a hexadecimal queue number"
            ) from None
        return FormatName("PRIVATE", guid=_guid(machine, at, whole), number=value, suffix=suffix)
    if kind == "DL":
        guid, _, domain = body.partition("@")
        return FormatName("DL", guid=_guid(guid, at, whole), domain=domain)
    return FormatName(kind, guid=_guid(body, at, whole), suffix=suffix)


def _direct(rest: str, at: int, whole: str) -> FormatName:
    protocol_text, colon, spec = rest.partition(":")
    protocol = protocol_text.strip().upper()
    if not colon or protocol not in PROTOCOLS:
        raise FormatNameError(whole, at, f"expected a protocol ({', '.join(PROTOCOLS)}) and ':'")
    at += len(protocol_text) + 1
    if protocol in ("HTTP", "HTTPS"):
        if not spec.startswith("//"):
            raise FormatNameError(whole, at, "expected //host/path after an HTTP or HTTPS protocol")
        body, suffix = _split_suffix(spec[2:], at + 2, whole)
        host, _, path = body.partition("/")
        if not host:
            raise FormatNameError(whole, at + 2, "expected a host name")
        return FormatName("DIRECT", protocol, host, path, suffix=suffix)
    body, suffix = _split_suffix(spec, at, whole)
    machine, sep, queue = body.partition("\\")
    if not machine:
        raise FormatNameError(whole, at, "expected a machine name or address")
    if not sep or not queue:
        raise FormatNameError(whole, at + len(machine), "expected \\QueueName after the machine")
    return FormatName("DIRECT", protocol, machine, queue, suffix=suffix)


def parse_format_names(text: str) -> list[FormatName]:
    """A multiple-element format name ([MS-MQMQ] 2.1.7): its elements, in order."""
    out: list[FormatName] = []
    offset = 0
    for element in text.split(","):
        lead = len(element) - len(element.lstrip())
        out.append(parse_format_name(element.strip(), _offset=offset + lead, _whole=text))
        offset += len(element) + 1
    return out


def format_name_kind(text: str) -> str:
    """The keyword of a format name (DIRECT, PUBLIC, ...) in upper case, whether or not the rest
    conforms; "" when it has none."""
    keyword, eq, _ = text.partition("=")
    return keyword.strip().upper() if eq else ""


def try_parse_format_name(text: str) -> FormatName | None:
    """:func:`parse_format_name`, or None for a name that does not conform."""
    try:
        return parse_format_name(text)
    except FormatNameError:
        return None


def direct_machine(text: str) -> str:
    """The machine of a direct format name; "" for any other name, or one that does not parse."""
    parsed = try_parse_format_name(text)
    return parsed.machine if parsed is not None else ""


def is_direct_http(text: str) -> bool:
    """A direct format name that specifies the HTTP or HTTPS protocol ([MS-MQMQ] 2.1.2)."""
    parsed = try_parse_format_name(text)
    return parsed is not None and parsed.is_http
