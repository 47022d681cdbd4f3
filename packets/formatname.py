"""[MS-MQMQ] 2.1 queue names: one parser and renderer of path names and format names.

Renders the ABNF of [MS-MQMQ] 2.1.1 Path Names (``Computer\\QueueName``, ``Computer\\private$\\QueueName``,
``Computer\\system$;QueueName``; QueueName of MSMQ 4.0-6.0 with its optional ``;Subqueue``), 2.1.2 Direct
Format Names (``DIRECT=`` Protocol ``:`` ProtocolAddressSpecification then ``\\PRIVATE$\\`` QueueName,
``\\`` QueueName, each with an optional ``;JOURNAL``, or ``\\SYSTEM$;`` JOURNAL / DEADLETTER / DEADXACT;
Protocol TCP (an IP address), OS (a computer name), IPX (network and host number), HTTP and HTTPS
(``//`` Host [``:`` Port] ``/MSMQ``)), 2.1.3 Public (``PUBLIC=`` Guid, a GUID without braces),
2.1.4 Private (``PRIVATE=`` ComputerGuid ``\\`` 1*8HEXDIG [``;JOURNAL``]), 2.1.5 Distribution List
(``DL=`` Guid [``@`` DomainName]), 2.1.6 Machine, Connector and Multicast (``MACHINE=`` Guid,
``CONNECTOR=`` Guid, ``MULTICAST=`` an IPv4 address in 224.0.0.0-239.255.255.255 ``:`` Port) and
2.1.7 Multiple-Element Format Names (comma-separated; no machine name, no read-only queue).  The
suffixes a name may carry are those of 2.2.11 QUEUE_SUFFIX_TYPE, by kind as 2.2.7 QUEUE_FORMAT
allows them (JOURNAL of a public, private, direct or machine name; DEADLETTER and DEADXACT of a
machine name or a direct SYSTEM$ name; XACTONLY of a connector name; a subqueue of a direct name).

Quoted strings of ABNF are case-insensitive (RFC 5234 2.3), so are the keywords here.  Where the
text of 2.1 and the grammar part ways, the reading taken is named: an HTTP or HTTPS name may
separate the path after ``/MSMQ`` with ``/`` as well as ``\\`` (the form MSMQ itself documents,
``DIRECT=HTTP://host/msmq/private$/q``); the Port of a multicast address is 0-65535 without leading
zeros (the alternatives listed in 2.1.6 are misnumbered).  A name that does not conform raises
:class:`FormatNameError`, which names the character offset and what was expected there.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from dataclasses import dataclass
from enum import IntEnum, StrEnum

__all__ = [
    "DirectProtocol",
    "FormatName",
    "FormatNameError",
    "FormatNameKind",
    "PathName",
    "QueueFormatType",
    "QueueSuffixType",
    "direct_machine",
    "format_name_kind",
    "is_direct_http",
    "parse_format_name",
    "parse_format_names",
    "parse_path_name",
    "try_parse_format_name",
]

SECTION = "MS-MQMQ 2.1"


class FormatNameKind(StrEnum):
    """The keyword before ``=`` ([MS-MQMQ] 2.1.2-2.1.6)."""

    DIRECT = "DIRECT"
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"
    DL = "DL"
    MACHINE = "MACHINE"
    CONNECTOR = "CONNECTOR"
    MULTICAST = "MULTICAST"


class DirectProtocol(StrEnum):
    """Protocol of a direct format name ([MS-MQMQ] 2.1.2); IPX is SPX over IPX."""

    TCP = "TCP"
    OS = "OS"
    HTTP = "HTTP"
    HTTPS = "HTTPS"
    IPX = "IPX"


class QueueFormatType(IntEnum):
    """QUEUE_FORMAT_TYPE ([MS-MQMQ] 2.2.6): QUEUE_FORMAT_TYPE_<member>."""

    UNKNOWN = 0
    PUBLIC = 1
    PRIVATE = 2
    DIRECT = 3
    MACHINE = 4
    CONNECTOR = 5
    DL = 6
    MULTICAST = 7
    SUBQUEUE = 8


class QueueSuffixType(IntEnum):
    """QUEUE_SUFFIX_TYPE ([MS-MQMQ] 2.2.11): QUEUE_SUFFIX_TYPE_<member>."""

    NONE = 0
    JOURNAL = 1
    DEADLETTER = 2
    DEADXACT = 3
    XACTONLY = 4
    SUBQUEUE = 5


# The suffixes 2.2.7 QUEUE_FORMAT allows each kind (m_qft); a subqueue is a direct name's only.
_SUFFIXES: dict[FormatNameKind, tuple[str, ...]] = {
    FormatNameKind.DIRECT: ("JOURNAL",),
    FormatNameKind.PUBLIC: ("JOURNAL",),
    FormatNameKind.PRIVATE: ("JOURNAL",),
    FormatNameKind.MACHINE: ("JOURNAL", "DEADLETTER", "DEADXACT"),
    FormatNameKind.CONNECTOR: ("XACTONLY",),
    FormatNameKind.DL: (),
    FormatNameKind.MULTICAST: (),
}
# 2.1.2 MachineQueuePath; also the read-only queues 2.1.7 keeps out of a multiple-element name.
_SYSTEM_QUEUES = ("JOURNAL", "DEADLETTER", "DEADXACT")

_HEX = "0-9A-Fa-f"
_GUID = re.compile(rf"[{_HEX}]{{8}}-(?:[{_HEX}]{{4}}-){{3}}[{_HEX}]{{12}}")  # 2.1.3 Guid
_QUEUE_CHAR = r"\x21\x23-\x2a\x2d-\x3a\x3c-\x5b\x5d-\x7f"  # 2.1.1 QueueName, MSMQ 2.0-6.0
_QUEUE_NAME = re.compile(rf"[{_QUEUE_CHAR}]{{1,124}}")
_SUBQUEUE = re.compile(rf"[{_QUEUE_CHAR}]{{1,32}}")  # 2.1.1 Subqueue
_COMPUTER = re.compile(r"[\x21-\x5b\x5d-\x7e]{1,256}")  # 2.1.1 Computer (a backslash ends it)
_HOST = re.compile(r"[\x21-\x2e\x30-\x39\x3b-\x5b\x5d-\x7e]+")  # up to ":" "/" or "\"
_IPX = re.compile(rf"[{_HEX}]+:[{_HEX}]+")  # network number ":" host number
_OCTET = re.compile(r"25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d")  # 2.1.6 dec-octet
_OCTET1 = re.compile(r"22[4-9]|23\d")  # 2.1.6 dec-octet1
_PORT = re.compile(r"0|[1-9]\d{0,4}")


class FormatNameError(ValueError):
    """A queue name that does not conform to [MS-MQMQ] 2.1: the whole text, the character offset
    and what was expected there."""

    def __init__(self, text: str, offset: int, reason: str) -> None:
        super().__init__(f"format name {text!r} at offset {offset}: {reason} [{SECTION}]")
        self.text = text
        self.offset = offset
        self.reason = reason


class _Reader:
    """A cursor over one element of ``whole`` starting at ``base``: offsets count from the whole text."""

    def __init__(self, whole: str, start: int, end: int) -> None:
        self.whole, self.pos, self.end = whole, start, end

    def fail(self, reason: str, at: int | None = None) -> FormatNameError:
        return FormatNameError(self.whole, self.pos if at is None else at, reason)

    def at_end(self) -> bool:
        return self.pos >= self.end

    def peek(self, literal: str) -> bool:
        """The text at the cursor is ``literal`` (case-insensitive)."""
        return self.whole[self.pos : self.pos + len(literal)].upper() == literal.upper() and (
            self.pos + len(literal) <= self.end
        )

    def take(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str | None = None) -> None:
        if not self.take(literal):
            raise self.fail(f"expected {what or repr(literal)}")

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        m = pattern.match(self.whole, self.pos, self.end)
        if m is None:
            raise self.fail(f"expected {what}")
        self.pos = m.end()
        return m.group()

    def rest(self) -> str:
        return self.whole[self.pos : self.end]

    def done(self) -> None:
        if not self.at_end():
            raise self.fail(f"unexpected {self.whole[self.pos]!r}: expected the end of the name")


@dataclass(frozen=True)
class PathName:
    """A queue path name ([MS-MQMQ] 2.1.1): ``computer``, whether the queue is ``private``
    (``private$\\``) or a ``system`` queue (``system$;``), its ``queue_name`` and ``subqueue``."""

    computer: str
    queue_name: str
    private: bool = False
    system: bool = False
    subqueue: str = ""

    def __str__(self) -> str:
        if self.system:
            return f"{self.computer}\\system$;{self.queue_name}"
        sub = f";{self.subqueue}" if self.subqueue else ""
        private = "private$\\" if self.private else ""
        return f"{self.computer}\\{private}{self.queue_name}{sub}"


def parse_path_name(text: str) -> PathName:
    """A queue path name ([MS-MQMQ] 2.1.1, the QueueName of MSMQ 4.0-6.0 with its Subqueue)."""
    r = _Reader(text, 0, len(text))
    computer = r.match(_COMPUTER, "a computer name")
    r.expect("\\", "'\\' after the computer name")
    if r.take("system$;"):
        return PathName(computer, r.match(_QUEUE_NAME, "a QueueName after system$;"), system=True)
    private = r.take("private$\\")
    queue = r.match(_QUEUE_NAME, "a QueueName")
    subqueue = r.match(_SUBQUEUE, "a Subqueue name after ';'") if r.take(";") else ""
    r.done()
    return PathName(computer, queue, private=private, subqueue=subqueue)


@dataclass(frozen=True)
class FormatName:
    """One single-element format name ([MS-MQMQ] 2.1.2-2.1.6).

    ``kind`` is its keyword; the other fields are those its grammar has.  A direct name has a
    ``protocol``, an ``address`` (the ProtocolAddressSpecification: IP address, computer name, IPX
    network:host, or the HTTP/HTTPS Host), for HTTP/HTTPS an optional ``port`` and the ``separator``
    it uses after ``/MSMQ``, then ``private`` (``PRIVATE$``) or ``system`` (``SYSTEM$``) and the
    ``queue_name``.  A public, private, distribution list, machine or connector name has a ``guid``
    (for a private name the computer's, with the queue ``number``); a distribution list a ``domain``;
    a multicast name its IPv4 ``address`` and ``port``.  ``suffix`` is what follows ``;``: a
    QUEUE_SUFFIX_TYPE keyword in upper case (JOURNAL, DEADLETTER, DEADXACT, XACTONLY) or a
    subqueue name as written.  ``str()`` renders the name back; parsing it gives an equal object.
    """

    kind: FormatNameKind
    protocol: DirectProtocol | None = None
    address: str = ""
    port: int | None = None
    private: bool = False
    system: bool = False
    queue_name: str = ""
    guid: uuid.UUID | None = None
    number: int | None = None
    domain: str = ""
    suffix: str = ""
    separator: str = "\\"

    @classmethod
    def direct(cls, path: PathName | str, protocol: DirectProtocol = DirectProtocol.OS) -> FormatName:
        """The direct format name of a queue path name (2.1.1, 2.1.2): ``DIRECT=OS:`` path by default."""
        p = parse_path_name(path) if isinstance(path, str) else path
        if p.system:
            if p.queue_name.upper() not in _SYSTEM_QUEUES:
                raise FormatNameError(str(p), len(p.computer) + 9, "expected JOURNAL, DEADLETTER or DEADXACT")
            return cls(FormatNameKind.DIRECT, protocol, p.computer, system=True, suffix=p.queue_name.upper())
        suffix = "JOURNAL" if p.subqueue.upper() == "JOURNAL" else p.subqueue
        return cls(FormatNameKind.DIRECT, protocol, p.computer, private=p.private, queue_name=p.queue_name,
                   suffix=suffix)

    @property
    def machine(self) -> str:
        """The machine a direct name names (its address; the Host of an HTTP/HTTPS name), "" for
        any other kind."""
        return self.address if self.kind is FormatNameKind.DIRECT else ""

    @property
    def is_http(self) -> bool:
        """A direct name that specifies the HTTP or HTTPS protocol."""
        return self.protocol in (DirectProtocol.HTTP, DirectProtocol.HTTPS)

    @property
    def queue_path(self) -> str:
        """The queue part of a direct name's path name (2.1.1), without a suffix:
        ``private$\\QueueName``, ``QueueName`` or ``system$``; "" for any other kind."""
        if self.kind is not FormatNameKind.DIRECT:
            return ""
        if self.system:
            return "system$"
        return ("private$\\" if self.private else "") + self.queue_name

    @property
    def subqueue(self) -> str:
        """The subqueue a direct name names, "" when none."""
        return self.suffix if self.suffix_type is QueueSuffixType.SUBQUEUE else ""

    @property
    def suffix_type(self) -> QueueSuffixType:
        """QUEUE_SUFFIX_TYPE ([MS-MQMQ] 2.2.11) of the suffix."""
        if not self.suffix:
            return QueueSuffixType.NONE
        if self.suffix in QueueSuffixType.__members__ and (self.system or self.suffix in _SUFFIXES[self.kind]):
            return QueueSuffixType[self.suffix]
        return QueueSuffixType.SUBQUEUE

    @property
    def format_type(self) -> QueueFormatType:
        """QUEUE_FORMAT_TYPE ([MS-MQMQ] 2.2.6): SUBQUEUE for a direct name with a subqueue."""
        if self.suffix_type is QueueSuffixType.SUBQUEUE:
            return QueueFormatType.SUBQUEUE
        return QueueFormatType[self.kind.value]

    def __str__(self) -> str:
        suffix = f";{self.suffix}" if self.suffix else ""
        kind = self.kind
        if kind is FormatNameKind.DIRECT:
            return f"DIRECT={self._direct_path()}{suffix if not self.system else ''}"
        if kind is FormatNameKind.MULTICAST:
            return f"MULTICAST={self.address}:{self.port}"
        guid = str(self.guid or uuid.UUID(int=0)).upper()
        if kind is FormatNameKind.PRIVATE:
            return f"PRIVATE={guid}\\{self.number or 0:08x}{suffix}"
        if kind is FormatNameKind.DL:
            return f"DL={guid}" + (f"@{self.domain}" if self.domain else "")
        return f"{kind}={guid}{suffix}"

    def _direct_path(self) -> str:
        sep = self.separator
        if self.is_http:
            port = f":{self.port}" if self.port is not None else ""
            head = f"{self.protocol}://{self.address}{port}/MSMQ{sep}"
        else:
            head = f"{self.protocol}:{self.address}\\"
            sep = "\\"
        if self.system:
            return f"{head}SYSTEM$;{self.suffix}"
        return head + (f"PRIVATE${sep}" if self.private else "") + self.queue_name

    @property
    def direct_name(self) -> str:
        """A direct name without ``DIRECT=`` (the m_pDirectID of [MS-MQMQ] 2.2.7 and the
        DirectFormatName of a UserHeader queue, 2.2.18.1.5.2), suffix included; "" otherwise."""
        return str(self).partition("=")[2] if self.kind is FormatNameKind.DIRECT else ""


def _guid(r: _Reader) -> uuid.UUID:
    return uuid.UUID(r.match(_GUID, "a GUID (8HexDig-4HexDig-4HexDig-4HexDig-12HexDig, no braces)"))


def _suffix(r: _Reader, kind: FormatNameKind) -> str:
    """An optional ``;`` suffix of ``kind``: a QUEUE_SUFFIX_TYPE keyword it allows (2.2.7), or for
    a direct name a subqueue (2.1.1)."""
    if not r.take(";"):
        return ""
    allowed = _SUFFIXES[kind]
    for word in allowed:
        if r.peek(word) and r.pos + len(word) == r.end:
            r.pos += len(word)
            return word
    if kind is FormatNameKind.DIRECT:
        return r.match(_SUBQUEUE, "JOURNAL or a Subqueue name (1-32 characters) after ';'")
    raise r.fail(f"expected {' or '.join(allowed) or 'no suffix'} after ';' of a {kind} format name")


def _direct(r: _Reader) -> FormatName:
    for protocol in (DirectProtocol.HTTPS, DirectProtocol.HTTP, DirectProtocol.TCP, DirectProtocol.OS,
                     DirectProtocol.IPX):
        if r.take(protocol + ":"):
            break
    else:
        raise r.fail(f"expected a Protocol ({', '.join(DirectProtocol)}) and ':'")
    port: int | None = None
    sep = "\\"
    if protocol in (DirectProtocol.HTTP, DirectProtocol.HTTPS):
        r.expect("//", "'//' Host after an HTTP or HTTPS protocol")
        address = r.match(_HOST, "a Host name or IP address")
        if r.take(":"):
            digits = r.match(re.compile(r"\d*"), "a Port")
            port = int(digits) if digits else None
        r.expect("/MSMQ", "'/MSMQ' after the Host [':' Port]")
        if not (r.take("\\") or r.take("/")):
            raise r.fail("expected '\\' (or '/') after /MSMQ")
        sep = r.whole[r.pos - 1]
    else:
        at = r.pos
        address = r.match(_COMPUTER, "a ProtocolAddressSpecification")
        if protocol is DirectProtocol.TCP:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise r.fail(f"{address!r} is not an IP address (TCP takes Internet address notation)", at) from None
        elif protocol is DirectProtocol.IPX and not _IPX.fullmatch(address):
            raise r.fail(f"{address!r} is not an IPX network number ':' host number", at)
        r.expect("\\", "'\\' after the ProtocolAddressSpecification")
    if r.take("SYSTEM$;"):
        for word in _SYSTEM_QUEUES:
            if r.take(word):
                r.done()
                return FormatName(FormatNameKind.DIRECT, protocol, address, port, system=True, suffix=word,
                                  separator=sep)
        raise r.fail("expected JOURNAL, DEADLETTER or DEADXACT after SYSTEM$;")
    private = r.take("PRIVATE$" + sep)
    name = r.match(_QUEUE_NAME, "a QueueName (1-124 characters, no '\\' ';' ',' '+' '\"' or space)")
    if sep == "/" and "/" in name:
        raise r.fail("unexpected '/' in the QueueName", r.pos - len(name) + name.index("/"))
    suffix = _suffix(r, FormatNameKind.DIRECT)
    r.done()
    return FormatName(FormatNameKind.DIRECT, protocol, address, port, private=private, queue_name=name,
                      suffix=suffix, separator=sep)


def _multicast_address(r: _Reader) -> str:
    """dec-octet1 3("." dec-octet) of [MS-MQMQ] 2.1.6, the offending octet named when one is out of range."""
    start = r.pos
    text = r.match(re.compile(r"\d+(?:\.\d+){3}"), "an IPv4 multicast address 224.0.0.0-239.255.255.255")
    at = start
    for i, octet in enumerate(text.split(".")):
        pattern = _OCTET1 if i == 0 else _OCTET
        if not pattern.fullmatch(octet):
            raise r.fail(f"{octet!r} is not a {'dec-octet1 (224-239)' if i == 0 else 'dec-octet (0-255)'}", at)
        at += len(octet) + 1
    return text


def _element(whole: str, start: int, end: int) -> FormatName:
    r = _Reader(whole, start, end)
    for kind in FormatNameKind:
        if r.take(kind + "="):
            break
    else:
        raise r.fail(f"expected one of {', '.join(k + '=' for k in FormatNameKind)}")
    if kind is FormatNameKind.DIRECT:
        return _direct(r)
    if kind is FormatNameKind.MULTICAST:
        address = _multicast_address(r)
        r.expect(":", "':' Port after the multicast address")
        at = r.pos
        port = int(r.match(_PORT, "a Port (0-65535)"))
        if port > 65535:
            raise r.fail(f"{port} is not a Port (0-65535)", at)
        r.done()
        return FormatName(kind, address=address, port=port)
    guid = _guid(r)
    if kind is FormatNameKind.PRIVATE:
        r.expect("\\", "'\\' QueueNumber after the computer GUID")
        number = int(r.match(re.compile(rf"[{_HEX}]{{1,8}}(?![{_HEX}])"), "a QueueNumber (1-8 hexadecimal digits)"), 16)
        suffix = _suffix(r, kind)
        r.done()
        return FormatName(kind, private=True, guid=guid, number=number, suffix=suffix)
    if kind is FormatNameKind.DL:
        domain = r.match(re.compile(r"[\x21-\x7e]{1,255}"), "a DomainName") if r.take("@") else ""
        r.done()
        return FormatName(kind, guid=guid, domain=domain)
    suffix = _suffix(r, kind)
    r.done()
    return FormatName(kind, guid=guid, suffix=suffix)


def parse_format_name(text: str) -> FormatName:
    """One single-element format name ([MS-MQMQ] 2.1.2-2.1.6); :class:`FormatNameError` names the
    offset and what was expected when it does not conform."""
    return _element(text, 0, len(text))


def parse_format_names(text: str) -> list[FormatName]:
    """The elements of a format name, in order: one for a single-element name, each element of a
    multiple-element one ([MS-MQMQ] 2.1.7, which admits no machine name and no read-only queue:
    a journal or dead-letter queue)."""
    out: list[FormatName] = []
    start = 0
    pieces = text.split(",")
    for piece in pieces:
        name = _element(text, start, start + len(piece))
        if len(pieces) > 1 and (name.kind is FormatNameKind.MACHINE or name.suffix_type.name in _SYSTEM_QUEUES):
            raise FormatNameError(text, start, "a multiple-element format name admits no machine name and no "
                                               "journal or dead-letter queue")
        out.append(name)
        start += len(piece) + 1
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
