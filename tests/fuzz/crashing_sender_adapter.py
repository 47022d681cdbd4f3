"""The reference adapter (examples/reference_adapter.py) with a sender that crashes: the process
exits at once when its session receives an EstablishConnection response whose Padding is not
every byte 0x5A ([MS-MQQB] 2.2.3.1; a conformant sender discards it and closes, 3.1.5.1.3).
A faulty implementation for tests/fuzz/test_fuzz_sender.py to find."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.session import initiator

_receive = initiator.Initiator.receive_data


def _crashing(self: Any, data: bytes) -> Any:
    is_ec = len(data) >= 572 and struct.unpack_from("<H", data, 2)[0] & 0x0008 and data[18] & 0x0F == 2
    if is_ec and data[60:572] != b"\x5a" * 512:
        os._exit(70)
    return _receive(self, data)


initiator.Initiator.receive_data = _crashing  # type: ignore[method-assign]

from examples.reference_adapter import main  # noqa: E402

sys.exit(main())
