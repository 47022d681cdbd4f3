"""Packet fields of a wire case by spec path, and the hex dump that shows them.

:func:`field_value` reads a field of a decoded packet by the path the spec names it by
(``EstablishConnectionHeader.ServerGuid``, ``BaseHeader.Flags.SH``; packets.paths), in the form a
case writes it (harness.cases.wirematch.normalise); :func:`field_span` finds its bytes in the
encoded packet ([MS-MQQB] 2.2, [MS-MQMQ] 2.2.18-2.2.20 layouts) and :func:`hexdump` shows them
marked in a failure's evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.cases.wirematch import normalise
from packets.paths import field_offset, get_field

__all__ = ["field_span", "field_value", "hexdump"]


def field_value(packet: Any, path: str) -> tuple[bool, Any]:
    """(present, value as a case writes it) of a field of a decoded packet by spec path
    (packets.paths.get_field)."""
    present, value = get_field(packet, path)
    return present, normalise(value) if present else None


def field_span(data: bytes, path: str, kind: str) -> tuple[int, int] | None:
    """Byte range [start, end) of a field in an encoded packet (packets.paths.field_offset)."""
    return field_offset(data, path, kind)


def hexdump(data: bytes, span: tuple[int, int] | None = None, context: int = 2, width: int = 16) -> str:
    """Offset, hex and ASCII lines; bytes of ``span`` are bracketed and marked with ``^^`` below.

    Only the lines around the span (``context`` lines each side) are shown for long packets."""
    rows = range(0, len(data), width)
    shown: Iterable[int] = rows
    if span is not None and len(data) > width * (2 * context + 3):
        first, last = span[0] // width, (span[1] - 1) // width
        shown = [
            r
            for r in rows
            if first - context <= r // width <= last + context
            and (last - first < 4 or r // width <= first + 1 or r // width >= last)  # a long field: its ends
        ]
    out: list[str] = []
    previous = -1
    for r in shown:
        if previous >= 0 and r != previous + width:
            out.append("        ...")
        previous = r
        chunk = data[r : r + width]
        cells, marks = [], []
        for i, b in enumerate(chunk):
            hit = span is not None and span[0] <= r + i < span[1]
            cells.append(f"[{b:02X}]" if hit else f" {b:02X} ")
            marks.append(" ^^ " if hit else "    ")
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        out.append(f"{r:06X}  {''.join(cells):<{width * 4}}  {text}")
        if any(m.strip() for m in marks):
            out.append("        " + "".join(marks).rstrip())
    if span is not None:
        out.append(f"field at bytes {span[0]}..{span[1] - 1} (0x{span[0]:X}..0x{span[1] - 1:X}) of {len(data)}")
    return "\n".join(out)
