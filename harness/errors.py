"""The root of the harness's own exceptions.

Every error the harness raises on purpose derives from :class:`HarnessError`, so that a caller
(the CLI, the pytest plugin, an embedding program) can tell "the harness refused or could not do
this, and says why" from a crash with one ``except``.  The codec's :class:`packets.PacketError`
(a field of [MS-MQQB] 2.2 / [MS-MQMQ] 2.2 that does not decode) is the parser's public API and
stays a ``ValueError`` of its own package.

This module imports nothing of the harness: every layer, the sans-IO cores included, may derive
from it.
"""

from __future__ import annotations

__all__ = ["HarnessError"]


class HarnessError(Exception):
    """An error the harness raises on purpose, with a message that names what is wrong."""
