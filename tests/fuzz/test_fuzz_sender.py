"""``msmq-harness fuzz --target "cmd:..."``: the sender behind an adapter is fuzzed, the fuzzer acting
as its acceptor.  The reference sender (examples/reference_adapter.py) gives no finding in a bounded
run that reaches every (state x kind) pair; a sender that crashes on an EstablishConnection response
whose Padding is not 0x5A (tests/fuzz/crashing_sender_adapter.py) is found, confirmed, with a pcap."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.cli import main
from harness.fuzz.generate import KINDS
from harness.fuzz.sender import SENDER_STATES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _fuzz(adapter: Path, out: Path, *extra: str) -> tuple[int, dict]:
    target = f"cmd:{sys.executable} {adapter}"
    code = main(["fuzz", "--target", target, "--seed", "1", "--out", str(out), *extra])
    return code, json.loads((out / "report.json").read_text())


def test_the_reference_sender_gives_no_finding(tmp_path: Path) -> None:
    code, report = _fuzz(ROOT / "examples" / "reference_adapter.py", tmp_path, "--max-packets", "40")
    assert code == 0 and report["findings"] == []
    assert {tuple(p) for p in report["pairs_reached"]} == {(s.name, k) for s in SENDER_STATES for k in KINDS}


def test_a_crashing_sender_is_found_and_confirmed(tmp_path: Path) -> None:
    code, report = _fuzz(
        HERE / "crashing_sender_adapter.py",
        tmp_path,
        "--max-packets",
        "200",
        "--state",
        "WAITING_ECR_MSG",
        "--kind",
        "EstablishConnection",
    )
    assert code == 1
    (crash,) = report["findings"]
    assert crash["oracle"] == "crash" and crash["confirmed"] and "exit status 70" in crash["why"]
    assert crash["field"] == "EstablishConnectionHeader.Padding"
    assert Path(crash["pcap"]).stat().st_size > 600  # the session, the 572-byte response among it
