"""docs/scapy.md's walkthrough runs: its ```python blocks, in order, in one namespace (it starts a
SimulatedPeer on 127.0.0.1 port 0 itself and stops it at the end)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "scapy.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_walkthrough_has_its_steps() -> None:
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 5
    joined = "\n".join(blocks)
    for step in ("SimulatedPeer(", "MSMQ(", "ScapySession(", ".send(", ".recv(", "peer.violations", "msmq_layers("):
        assert step in joined


def test_the_walkthrough_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the walkthrough records walkthrough.pcap in the working directory
    namespace: dict[str, Any] = {}
    try:
        for number, block in enumerate(python_blocks(DOC.read_text()), 1):
            exec(compile(block, f"docs/scapy.md block {number}", "exec"), namespace)
    finally:
        for name in ("s", "peer"):
            if name in namespace:
                namespace[name].close()
    assert (tmp_path / "walkthrough.pcap").stat().st_size > 0
    assert namespace["ack"].kind == "SessionAck"
