"""``msmq-harness dissector`` (or ``python -m harness.dissector_cli``): write the Wireshark Lua
dissector that :func:`packets.dissector.generate_lua` generates from the codec's definitions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from packets.dissector import DEFAULT_TCP_PORT, DEFAULT_UDP_PORT, generate_lua

__all__ = ["add_parser", "main"]


def _arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    parser.add_argument("--tcp-port", type=int, default=DEFAULT_TCP_PORT, help="TCP port of MSMQ sessions (1801)")
    parser.add_argument("--udp-port", type=int, default=DEFAULT_UDP_PORT, help="UDP port of Ping packets (3527)")
    return parser


def _write(args: argparse.Namespace) -> int:
    text = generate_lua(args.tcp_port, args.udp_port)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def add_parser(subparsers: Any) -> None:
    """Register ``dissector`` on a CLI's subparsers (``msmq-harness dissector > msmq.lua``)."""
    sub = subparsers.add_parser("dissector", help="write a Wireshark Lua dissector for MSMQ", description=_DESCRIPTION)
    _arguments(sub).set_defaults(func=_write)


_DESCRIPTION = "Write a Wireshark Lua dissector for MSMQ generated from the codec's definitions."


def main(argv: Sequence[str] | None = None) -> int:
    parser = _arguments(argparse.ArgumentParser(prog="python -m harness.dissector_cli", description=_DESCRIPTION))
    return _write(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
