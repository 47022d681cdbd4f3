"""``msmq-harness fuzz --target "cmd:..."``: the sender behind an adapter is fuzzed, the fuzzer acting
as its acceptor.  The reference sender (examples/reference_adapter.py) gives no finding in a bounded
run that reaches every (state x kind) pair; a sender that crashes on an EstablishConnection response
whose Padding is not 0x5A (tests/fuzz/crashing_sender_adapter.py), and one that hangs on a SessionAck
that does not decode (tests/fuzz/hanging_sender_adapter.py), are found, confirmed, and written as an
initiator wire case whose simulated acceptor replies with the fuzzed packet (given.peer.replies),
with a pcap: ``msmq-harness run`` and ``fuzz --replay`` fail the case against the faulty sender and
pass it against the reference sender."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from harness.cli import main
from harness.fuzz.generate import KINDS
from harness.fuzz.states import SENDER_STATES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


REFERENCE = ROOT / "examples" / "reference_adapter.py"


def _cmd(adapter: Path) -> str:
    return f"cmd:{sys.executable} {adapter}"


def _fuzz(adapter: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(["fuzz", "--target", _cmd(adapter), "--seed", "1", "--out", str(out), *extra])
    return code, json.loads((out / "report.json").read_text())


def _case(finding: dict) -> dict:
    return yaml.safe_load(Path(finding["case"]).read_text(encoding="utf-8"))


def _fails_with_the_fault_passes_without(case: Path, faulty: Path) -> None:
    """``run`` and ``fuzz --replay`` fail the case against the faulty sender, pass it against the reference."""
    assert main(["run", str(case), "--target", _cmd(faulty)]) == 1
    assert main(["fuzz", "--replay", str(case), "--target", _cmd(faulty)]) == 1
    assert main(["run", str(case), "--target", _cmd(REFERENCE)]) == 0
    assert main(["fuzz", "--replay", str(case), "--target", _cmd(REFERENCE)]) == 0


def test_the_reference_sender_gives_no_finding(tmp_path: Path) -> None:
    code, report = _fuzz(REFERENCE, tmp_path, "--max-packets", "40")
    assert code == 0 and report["findings"] == []
    assert {tuple(p) for p in report["pairs_reached"]} == {(s.name, k) for s in SENDER_STATES for k in KINDS}


def test_a_crashing_sender_is_found_confirmed_and_written_as_a_case(tmp_path: Path) -> None:
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
    # the case: the simulated acceptor answers the EstablishConnection request with the fuzzed response,
    # the ClientGuid and TimeStamp echoed from the request (the sender's QueueManager.Identifier differs)
    (reply,) = _case(crash)["given"]["peer"]["replies"]
    assert reply["to"] == "EstablishConnection" and reply["echo"] == [
        "EstablishConnectionHeader.ClientGuid",
        "EstablishConnectionHeader.TimeStamp",
    ]
    assert bytes.fromhex("".join(reply["raw"].split()))[60:572] == bytes.fromhex(crash["minimal"][-1])[60:572]
    # a crash ends its case in error, naming the adapter's exit status, whether it comes before the reply
    # to the enqueue or after it (then the control operation after the sync wait sees it): never a failed
    # wait, as it was when the wire showed the crash first (harness.fuzz.sendercase)
    assert crash["case_outcome"].startswith("error: ") and "exit status 70" in crash["case_outcome"]
    for n in range(3):
        report_path = tmp_path / f"run{n}.json"
        assert main(["run", crash["case"], "--target", _cmd(HERE / "crashing_sender_adapter.py"), "--json",
                     str(report_path)]) == 1
        (result,) = json.loads(report_path.read_text())["results"]
        assert result["outcome"] == "error" and "exit status 70" in result["detail"], result["detail"]
    _fails_with_the_fault_passes_without(Path(crash["case"]), HERE / "crashing_sender_adapter.py")


def test_a_hanging_sender_is_found_minimised_to_an_earlier_state_and_written_as_a_case(tmp_path: Path) -> None:
    code, report = _fuzz(
        HERE / "hanging_sender_adapter.py",
        tmp_path,
        "--max-packets",
        "3",
        "--state",
        "WAITING_CPR_MSG",
        "--kind",
        "SessionAck",
    )
    assert code == 1
    hang = report["findings"][0]
    assert hang["oracle"] == "hang" and hang["confirmed"] and hang["state"] == "WAITING_CPR_MSG"
    assert hang["case_outcome"] == "failed"
    case = _case(hang)
    # ddmin dropped the conformant EstablishConnection response: the SessionAck answers the request itself
    (reply,) = case["given"]["peer"]["replies"]
    assert reply["to"] == "EstablishConnection" and "echo" not in reply
    assert [s["action"] for s in case["when"]][-1] == "wait_for"
    assert case["when"][-1]["args"] == {"closed": 1, "by": "initiator", "within": "SessionInitialization"}
    assert case["when"][-1]["requirement"] == "MQQB-3.1.5.1.3-DISCARD-CLOSE"
    assert Path(hang["pcap"]).stat().st_size > 24
    _fails_with_the_fault_passes_without(Path(hang["case"]), HERE / "hanging_sender_adapter.py")
