"""``msmq-harness dissector`` (or ``python -m harness.dissector_cli``): write the Wireshark Lua
dissector that :func:`packets.dissector.generate_lua` generates from the codec's definitions for
MSMQ sessions on a TCP port ([MS-MQQB] 2.1.1: 1801) and Ping packets on a UDP port ([MS-MQQB]
2.1.2: 3527).  The ports are checked when parsed (:func:`harness.argtypes.port`: 1-65535, else a
usage error, exit 2); ``--output`` is written whole or not at all (a folder or an unwritable
place: exit 2 naming it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from harness.argtypes import port
from harness.outdir import write_file_atomically
from packets.dissector import DEFAULT_TCP_PORT, DEFAULT_UDP_PORT, generate_lua

__all__ = ["add_parser", "main"]


def _arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    parser.add_argument("--tcp-port", type=port, default=DEFAULT_TCP_PORT, help="TCP port of MSMQ sessions (1801)")
    parser.add_argument("--udp-port", type=port, default=DEFAULT_UDP_PORT, help="UDP port of Ping packets (3527)")
    return parser


def _write(args: argparse.Namespace) -> int:
    text = generate_lua(args.tcp_port, args.udp_port)
    if args.output:
        try:
            write_file_atomically(args.output, text)
        except OSError as e:
            print(f"msmq-harness dissector: --output {args.output}: {e.strerror or e}", file=sys.stderr)
            return 2
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
