"""Presenting decoded packets: an indented field tree (like ``tshark -V``) and plain JSON.

Field names are the spec's ([MS-MQMQ] 2.2.18-2.2.20, [MS-MQQB] 2.2); flags are shown with
their sub-fields by the spec's abbreviations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packets.codec import Packet
from packets.fields import GUID, BitFlags, Elements

__all__ = ["render_tree", "to_jsonable"]

_BYTES_SHOWN = 32


def to_jsonable(value: Any) -> Any:
    """Plain JSON values: GUIDs as text, flags as {"value", sub-fields}, bytes as hex."""
    if isinstance(value, Packet):
        out: dict[str, Any] = {"kind": str(value.kind), "size": value.size}
        out.update({k: to_jsonable(v) for k, v in value.headers.items() if not k.startswith("_")})
        if value.body is not None:
            out["body"] = to_jsonable(value.body)
        if value.violations:
            out["violations"] = [
                {"field": v.field_path, "offset": v.offset, "reason": v.reason, "section": v.section}
                for v in value.violations
            ]
        return out
    if isinstance(value, GUID):
        return str(value)
    if isinstance(value, BitFlags):
        return {"value": int(value), **value.as_dict()}
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list | tuple | Elements):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def _scalar(value: Any) -> str:
    if isinstance(value, GUID):
        return str(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value} (0x{value:X})"
    if isinstance(value, bytes | bytearray):
        shown = bytes(value[:_BYTES_SHOWN]).hex(" ")
        more = f" ... ({len(value)} bytes)" if len(value) > _BYTES_SHOWN else f" ({len(value)} bytes)"
        return (shown + more) if value else "(empty)"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _lines(name: str, value: Any, depth: int, out: list[str]) -> None:
    pad = "    " * depth
    if isinstance(value, BitFlags):
        out.append(f"{pad}{name}: 0x{int(value):0{value._width_ // 4}X}")
        for sub, v in value.as_dict().items():
            out.append(f"{pad}    {sub}: {v}")
    elif isinstance(value, Mapping):
        out.append(f"{pad}{name}")
        for k, v in value.items():
            if not str(k).startswith("_"):
                _lines(str(k), v, depth + 1, out)
    elif isinstance(value, list | tuple | Elements):
        out.append(f"{pad}{name} ({len(value)} items)")
        for i, v in enumerate(value):
            _lines(f"[{i}]", v, depth + 1, out)
    else:
        out.append(f"{pad}{name}: {_scalar(value)}")


def render_tree(packet: Packet, title: str = "") -> str:
    """The packet as an indented tree, violations last."""
    out = [f"{title}{packet.kind} ({packet.size} bytes)"]
    for name, header in packet.headers.items():
        if not str(name).startswith("_"):
            _lines(str(name), header, 1, out)
    if packet.body is not None:
        _lines("Body", packet.body, 1, out)
    for v in packet.violations:
        out.append(f"    !! {v}")
    return "\n".join(out)
