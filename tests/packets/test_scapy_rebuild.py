"""A dissected frame carrying MSMQ builds back byte for byte through scapy's implicit build
(which clones every layer), also after a lower layer's checksums are deleted for recomputation."""

from __future__ import annotations

from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.utils import rdpcap

import packets.scapy_layers  # noqa: F401  (binds MSMQ to TCP 1801)
from harness.pipeline.synth import synthesize


def test_frames_of_a_synthetic_capture_rebuild_after_their_checksums_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / "s.pcap"
    synthesize(path, 4, 0.5, seed=2)
    frames = rdpcap(str(path))
    msmq = 0
    for frame in frames:
        wire = bytes(frame)
        rebuilt = frame.__class__(wire)
        msmq += type(rebuilt[TCP].payload).__name__ == "MSMQ"
        del rebuilt[IP].chksum
        del rebuilt[TCP].chksum
        assert bytes(rebuilt) == wire, rebuilt.summary()
    assert msmq > 20
