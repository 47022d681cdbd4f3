"""The fast forms of the rules agree with the rules ([MS-MQMQ] 2.2.19-2.2.20, [MS-MQQB] 2.2).

``packets.parse`` evaluates each check's fast form first and runs the check itself only when a
fast form fails, so a fast form that says "holds" where its check would yield a violation would
hide that violation.  Every registered pair is compared on decoded packets of every kind whose
fields are then set, one to three at a time, to boundary and random values; and the generated
parsers decode exactly what the interpreted ones do.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from construct import Container

import packets
from fuzz.fuzz_codec import mutate
from fuzz.seeds import seed_corpus
from packets import message, session
from packets.codec import Walk, _parse_diagnosed
from packets.fields import GUID, BitFlags
from packets.layout import fast_forms
from tests.packets.messagekit import mutated_inputs

INTS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x1D, 0x1E, 0x24, 0xFA, 0xFB, 0xFF, 0x4000, 0x8000, 0xFFFF, 0xFFFFFFFF)
TEXTS = ("", "a", "a\0", "a\0b", "é", "\U0001f600", "\ud800", "TCP:1.2.3.4\\private$\\order_queue$", "QM Ordering Ack")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _variant(rng: random.Random, old: Any) -> Any:
    if isinstance(old, BitFlags):
        width = old._width_
        choice = rng.random()
        if choice < 0.5:
            return type(old)(int(old) ^ (1 << rng.randrange(width)))
        if choice < 0.7:
            return type(old)(0)
        return type(old)(rng.getrandbits(width))
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice((*INTS, old + 1, max(old - 1, 0), rng.getrandbits(32)))
    if isinstance(old, GUID):
        return rng.choice((GUID(), GUID(bytes(rng.getrandbits(8) for _ in range(16)))))
    if isinstance(old, bytes):
        return rng.choice((b"", old + b"\0", old[:-1], bytes(36), bytes(rng.getrandbits(8) for _ in range(5))))
    if isinstance(old, str):
        return rng.choice((*TEXTS, old + "\0", old[:-1], "\0" + old))
    if old is None:
        return rng.choice((0, "x", GUID(), None))
    return None


def _set(headers: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        headers = headers[key]
    headers[path[-1]] = value


@functools.cache
def _packets() -> tuple[Container, ...]:
    """The decoded headers of the seed corpus and 3,000 mutants of it (the same every time: made
    once per process and only read; each test changes deep copies)."""
    out = []
    rng = random.Random(5)
    seeds = seed_corpus()
    candidates = list(seeds) + [mutate(rng, seeds) for _ in range(3000)]
    for data in candidates:
        decoded = packets.parse(data, strict=False)
        if "BaseHeader" in decoded.headers and len(decoded.headers) > 1:
            out.append(decoded.headers)
    return tuple(out)


def _same(check: Callable[[Any], Any], holds: Callable[[Any], bool], headers: Any) -> None:
    try:
        found = list(check(headers))
    except Exception:
        try:
            assert not holds(headers), "the check cannot be evaluated but its fast form holds"
        except AssertionError:
            raise
        except Exception:
            pass  # both fail: the packet takes the checks' path, which reports it
        return
    try:
        result = holds(headers)
    except Exception:
        return  # the fast form failing sends the packet through the check
    assert result == (not found), f"{getattr(holds, '__name__', holds)}: holds={result}, check found {found}"


PAIRS: list[tuple[Callable[[Any], Any], Callable[[Any], bool]]] = [
    *fast_forms().items(),
    (lambda h: message.check_user_message(h, False), message.user_message_holds),
    (session.check_internal_packet, session.internal_packet_holds),
]


def test_every_fast_form_is_registered() -> None:
    names = {getattr(check, "__name__", "") for check in fast_forms()}
    assert {
        "check_base_header",
        "check_user_header",
        "check_transaction_header",
        "check_message_properties",
        "check_admin_queue",
        "check_session_header",
        "check_connection_parameters_header",
        "check_establish_connection_header",
        "check_transactional_ack",
    } <= names


@pytest.mark.xdist_group("fast-forms")  # one worker decodes _packets() once for the four seeds
@pytest.mark.parametrize("seed", range(4))
def test_fast_forms_agree_with_their_checks(seed: int) -> None:
    rng = random.Random(seed)
    decoded = _packets()
    assert decoded
    compared = 0
    for _ in range(6000):
        headers = copy.deepcopy(rng.choice(decoded))
        paths = list(_paths(headers))
        for _ in range(rng.randint(0, 3)):
            path = rng.choice(paths)
            if len(path) > 1:
                try:
                    old = headers
                    for key in path:
                        old = old[key]
                except (KeyError, IndexError, TypeError):
                    continue
                _set(headers, path, _variant(rng, old))
        for check, holds in PAIRS:
            _same(check, holds, headers)
            compared += 1
    assert compared > 10_000


def _fast_walk(data: bytes) -> Walk | None:
    walk = Walk(data)
    try:
        walk.fast()
    except Exception:
        return None
    return walk


def _diagnosed_walk(data: bytes) -> Walk | None:
    walk = Walk(data)
    try:
        walk.diagnose()
    except packets.PacketError:
        return None
    return walk


@pytest.mark.parametrize("seed", range(2))
def test_generated_parsers_decode_exactly_as_the_interpreted_ones(seed: int) -> None:
    """Where the generated pass decodes a packet, the interpreted pass decodes the same headers
    (padding included), the same slots, consumed and counted bytes; where it does not, the
    interpreted pass fails too (so the PacketError comes from there)."""
    agreed = failed = 0
    for data in mutated_inputs(seed, 4000):
        fast, slow = _fast_walk(data), _diagnosed_walk(data)
        if fast is None:
            failed += 1
            assert slow is None or slow.consumed <= len(data), data.hex()
            continue
        assert slow is not None, f"generated pass decoded what the interpreted one rejects: {data.hex()}"
        assert list(fast.slots) == list(slow.slots)
        assert (fast.consumed, fast.counted) == (slow.consumed, slow.counted)
        assert list(fast.headers) == list(slow.headers)
        for name, value in slow.headers.items():
            assert fast.headers[name] == value, name
            assert repr(fast.headers[name]) == repr(value), name  # "_" keys (padding) and types too
        agreed += 1
    assert agreed > 500 and failed > 500


def test_parse_gives_the_same_packet_as_the_diagnostic_path() -> None:
    """parse() through the generated pass and fast forms returns what the diagnostic path and
    the checks themselves return: kind, headers, violations (path, offset, reason), error."""
    for data in mutated_inputs(7, 3000):
        for strict in (False, True):
            expected: Any
            try:
                expected = _parse_diagnosed(bytes(data), strict, Walk(bytes(data)), False)
            except packets.PacketError as e:
                expected = e
            got: Any
            try:
                got = packets.parse(data, strict=strict)
            except packets.PacketError as e:
                got = e
            if isinstance(expected, packets.PacketError):
                assert isinstance(got, packets.PacketError), data.hex()
                assert (got.field_path, got.offset, got.reason) == (
                    expected.field_path,
                    expected.offset,
                    expected.reason,
                ), data.hex()
                continue
            assert not isinstance(got, packets.PacketError), f"{got} for {data.hex()}"
            assert got == expected and got.size == expected.size and got.body == expected.body, data.hex()
            assert [(v.field_path, v.offset, v.reason, v.section) for v in got.violations] == [
                (v.field_path, v.offset, v.reason, v.section) for v in expected.violations
            ], data.hex()
