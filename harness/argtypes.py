"""Types of command-line options, checked when the command line is parsed.

Every option that takes a port, a count, a duration or a name is given one of these as its
argparse ``type``: a value out of range is a usage error (argparse prints the usage line and the
reason, exit 2) before anything runs -- never a traceback, never a value silently accepted and
misread later.  Each function raises :class:`argparse.ArgumentTypeError` with the reason, which
argparse prints as ``argument --ports: 70000 is not a TCP port (1-65535)``.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

__all__ = ["count", "port", "port_list", "seconds"]

MAX_SECONDS = 86_400.0  # a day: longer than any step, run or timeout an option of the harness takes


def port(text: str) -> int:
    """A TCP or UDP port, 1-65535 (port 0 is no port a connection uses)."""
    word = text.strip()
    if not re.fullmatch(r"[0-9]+", word):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (a number 1-65535)")
    if not 1 <= int(word) <= 65535:
        raise argparse.ArgumentTypeError(f"{word} is not a port (1-65535)")
    return int(word)


def port_list(text: str) -> frozenset[int]:
    """``1801`` or ``1801,2101``: TCP ports, each 1-65535 (port 0 is no port a connection uses)."""
    ports: set[int] = set()
    for word in text.split(","):
        word = word.strip()
        if not word:
            raise argparse.ArgumentTypeError(f"{text!r}: an empty port (expected ports like 1801 or 1801,2101)")
        if not re.fullmatch(r"[0-9]+", word):
            raise argparse.ArgumentTypeError(f"{word!r} is not a TCP port (a number 1-65535)")
        number = int(word)
        if not 1 <= number <= 65535:
            raise argparse.ArgumentTypeError(f"{word} is not a TCP port (1-65535)")
        ports.add(number)
    return frozenset(ports)


def count(minimum: int = 0, maximum: int | None = None, *, meaning: str = "") -> Callable[[str], int]:
    """An integer in ``[minimum, maximum]``; ``meaning`` says what the smallest allowed value
    means, when it is special (``0: two per core``)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            note = f"; {meaning}" if meaning else ""
            raise argparse.ArgumentTypeError(f"{value}: expected a whole number of at least {minimum}{upper}{note}")
        return value

    parse.__name__ = "count"
    return parse


def seconds(*, allow_zero: bool = False, maximum: float = MAX_SECONDS) -> Callable[[str], float]:
    """A finite number of seconds, above 0 (or at least 0 with ``allow_zero``) and at most
    ``maximum``: ``nan``, ``inf`` and negative durations are refused."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        low = "at least 0" if allow_zero else "above 0"
        if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero) or value > maximum:
            raise argparse.ArgumentTypeError(f"{text}: expected a number of seconds {low} and at most {maximum:g}")
        return value

    parse.__name__ = "seconds"
    return parse
