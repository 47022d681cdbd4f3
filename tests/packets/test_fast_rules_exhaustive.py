"""The fast forms of the rules agree with the rules on every value of the flag words and of the
enumerated fields they read ([MS-MQMQ] 2.2.19.1-2.2.19.3, 2.2.20, 2.2.20.4, 2.2.20.5, [MS-MQQB]
2.2).

Complements the random perturbations of test_fast_rules.py: here each fast form is compared
with its check over the whole grid of the values it branches on — every BaseHeader.Flags word,
every combination of the UserHeader.Flags sub-fields with the queue manager address NULL or
not and each queue present or absent, every LabelLength with labels that fit it or not, every
WindowSize, every InternalHeader packet type — with the other fields of a decoded packet.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from construct import Container

import packets
from benchmarks.messages import connection_parameters, session_ack, typical_user_message
from packets import base, message, optional, properties, session, user
from packets.fields import GUID, Fields
from packets.layout import fast_form

Check = Callable[[Any], Iterable[Any]]


OUTCOMES: Counter[str] = Counter()


def _agree(check: Check, holds: Callable[[Any], bool], headers: Any) -> None:
    try:
        found = list(check(headers))
    except Exception:
        OUTCOMES["unevaluable"] += 1
        try:
            result = holds(headers)
        except Exception:
            return
        assert not result, f"{check.__name__} cannot be evaluated but its fast form holds: {headers!r}"
        return
    try:
        result = holds(headers)
    except Exception:
        OUTCOMES["fast form raised"] += 1
        return  # the packet then takes the checks' path
    assert result == (not found), f"{check.__name__}: fast form {result}, check found {found} for {headers!r}"
    OUTCOMES["broken" if found else "held"] += 1


@pytest.fixture(autouse=True)
def _both_outcomes() -> Iterator[None]:
    """Every grid meets packets the rules accept and packets they reject, and nothing else."""
    OUTCOMES.clear()
    yield
    assert OUTCOMES["held"] > 10 and OUTCOMES["broken"] > 10, OUTCOMES
    assert OUTCOMES["unevaluable"] == OUTCOMES["fast form raised"] == 0, OUTCOMES


def _with(headers: Container, name: str, **fields: Any) -> Fields:
    out = Fields(headers)
    out[name] = Fields(headers[name])
    out[name].update(fields)
    return out


USER = packets.parse(typical_user_message(True)).headers
PLAIN = packets.parse(typical_user_message(False)).headers


def test_base_header_every_flags_word() -> None:
    holds = fast_form(base.check_base_header)
    for flags in range(1 << 16):
        for version, signature, size in ((0x10, base.SIGNATURE, 1200), (0x11, base.SIGNATURE, 15), (0x10, 0, 1 << 23)):
            headers = _with(
                PLAIN,
                "BaseHeader",
                Flags=base.BaseHeaderFlags(flags),
                VersionNumber=version,
                Signature=signature,
                PacketSize=size,
            )
            _agree(base.check_base_header, holds, headers)


def test_user_header_every_flag_combination() -> None:
    holds = fast_form(user.check_user_header)
    direct = Fields(Count=2 * len("TCP:a\\q") + 2, DirectFormatName="TCP:a\\q", _pad=b"")
    bad_direct = Fields(Count=7, DirectFormatName="x\0y", _pad=b"")
    private = Fields(PrivateQueueIdentifier=4)
    grid = itertools.product(
        (0, 0x1D, 0x1E),  # RC
        range(4),  # DM
        range(8),  # DQ
        range(8),  # AQ
        range(8),  # RQ
        range(16),  # TH, MP, CQ, AH
    )
    named, null = GUID(bytes(range(1, 17))), GUID()
    compared = 0
    for rc, dm, dq, aq, rq, bits in grid:
        word = rc | dm << 5 | dq << 10 | aq << 13 | rq << 16
        word |= (bits & 1) << 20 | (bits >> 1 & 1) << 21 | (bits >> 2 & 1) << 22 | (bits >> 3 & 1) << 25
        flags = user.UserHeaderFlags(word)
        queue = direct if (dq + aq + rq) % 3 else bad_direct
        variants = (
            # the queues the selectors announce (as parse leaves them), with each NULL-ness of QM
            dict(
                QueueManagerAddress=named if (aq + rq) % 2 else null,
                DestinationQueue=queue if dq == 7 else private if dq else None,
                AdminQueue=queue if aq == 7 else private if aq else None,
                ResponseQueue=queue if rq == 7 else None,
                ConnectorType=GUID() if bits & 4 else None,
            ),
            # a queue or connector given against its selector
            dict(
                QueueManagerAddress=null if (aq + rq) % 2 else named,
                DestinationQueue=None if dq else direct,
                AdminQueue=direct,
                ResponseQueue=private if rq else None,
                ConnectorType=None if bits & 4 else GUID(),
            ),
        )
        for fields in variants:
            _agree(user.check_user_header, holds, _with(USER, "UserHeader", Flags=flags, **fields))
            compared += 1
    assert compared == 3 * 4 * 8 * 8 * 8 * 16 * 2


def test_message_properties_every_label_length_class_and_algorithm() -> None:
    holds = fast_form(properties.check_message_properties)
    classes = sorted({*user.MessageClass._value2member_map_, 0x0001 << 9, 0x1E00, 0xE1FF, 0x0200, 0xFFFF, 3})
    for length in range(256):
        for label in (None, "a" * max(length - 1, 0), "é" * max(length - 1, 0), "a\0"[: max(length - 1, 0)], "x"):
            headers = _with(USER, "MessagePropertiesHeader", LabelLength=length, Label=label)
            _agree(properties.check_message_properties, holds, headers)
    levels = sorted({*properties.PRIVACY_LEVELS, 2, 4, 6, 0xFFFFFFFF})
    algorithms = sorted({a for s in properties.ALLOWED_BY_PRIVACY_LEVEL.values() for a in s} | {0, 0x6610, 0x1234})
    for message_class, level, algorithm in itertools.product(classes, levels, algorithms):
        for body, size in ((b"ab", 2), (b"ab", 3), (None, 0)):
            headers = _with(
                USER,
                "MessagePropertiesHeader",
                MessageClass=message_class,
                PrivacyLevel=level,
                EncryptionAlgorithm=algorithm,
                MessageBody=body,
                MessageSize=size,
            )
            _agree(properties.check_message_properties, holds, headers)


def test_admin_queue_every_acknowledgment_flags_and_aq() -> None:
    holds = fast_form(properties.check_admin_queue)
    for mph_flags in range(256):
        for aq in range(8):
            word = (int(USER.UserHeader.Flags) & ~(7 << 13)) | aq << 13
            headers = _with(USER, "UserHeader", Flags=user.UserHeaderFlags(word))
            headers["MessagePropertiesHeader"] = Fields(
                USER.MessagePropertiesHeader, Flags=properties.MessagePropertiesFlags(mph_flags)
            )
            _agree(properties.check_admin_queue, holds, headers)


def test_transaction_and_session_headers_every_flags_and_window() -> None:
    holds = fast_form(optional.check_transaction_header)
    for flags in range(256):
        for number, previous, guid in itertools.product((0, 1, 7), (0, 6, 0xFFFFFFFF), (None, GUID())):
            headers = _with(
                USER,
                "TransactionHeader",
                Flags=optional.TransactionHeaderFlags(flags),
                TxSequenceNumber=number,
                PreviousTxSequenceNumber=previous,
                ConnectorQMGuid=guid,
            )
            _agree(optional.check_transaction_header, holds, headers)
    holds = fast_form(optional.check_session_header)
    for window in range(1 << 16):
        _agree(optional.check_session_header, holds, _with(USER, "SessionHeader", WindowSize=window))


def test_user_message_and_internal_packet_every_flags_word() -> None:
    internal = [packets.parse(data).headers for data in (session_ack(), connection_parameters())]
    for flags in range(1 << 16):
        base_flags = base.BaseHeaderFlags(flags)
        for th in (0, 1):
            word = (int(USER.UserHeader.Flags) & ~(1 << 20)) | th << 20
            headers = _with(USER, "BaseHeader", Flags=base_flags)
            headers["UserHeader"] = Fields(USER.UserHeader, Flags=user.UserHeaderFlags(word))
            _agree(lambda h: message.check_user_message(h, False), message.user_message_holds, headers)
        for decoded in internal:
            for ttrq in (0xFFFFFFFF, 0):
                headers = _with(decoded, "BaseHeader", Flags=base_flags, TimeToReachQueue=ttrq)
                _agree(session.check_internal_packet, session.internal_packet_holds, headers)
    for decoded in internal:
        for pt in range(16):
            for flags in (0x000B, 0x001B, 0x002B, 0x003B):
                headers = _with(decoded, "BaseHeader", Flags=base.BaseHeaderFlags(flags))
                word = (int(decoded.InternalHeader.Flags) & ~0xF) | pt
                headers["InternalHeader"] = Fields(
                    decoded.InternalHeader, Flags=type(decoded.InternalHeader.Flags)(word)
                )
                _agree(session.check_internal_packet, session.internal_packet_holds, headers)
