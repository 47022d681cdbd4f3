"""``msmq-harness fuzz`` against the simulated peer (real sockets on loopback, timers x0.05).

Each input-triggered fault of the peer (harness.peers.faults), and a rule its replies break (the
``bad-padding`` behaviour: a violation, graded MUST), is found within a bounded budget,
confirmed, and written as a minimal case that fails with ``msmq-harness run`` against the same
peer configuration while the fault is there, and passes against the conformant peer (which
``fuzz --replay`` reports as fixed).  Against the conformant peer a bounded run finds nothing and
reaches every (state x packet kind) pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.fuzz.generate import KINDS
from harness.fuzz.minimise import _server_guid
from harness.fuzz.oracles import Timers
from harness.fuzz.states import STATES
from harness.peers import SimulatedPeer

SCALE = 0.05
ROUND_PACKETS = max(len(s.prefix) for s in STATES) + 2  # the most a round sends: its prefix, the packet, a probe
PAIRS = [(s.name, k) for s in STATES for k in KINDS]  # the (state x packet kind) pairs a run visits
PAIR_PACKETS = 28  # a bounded run's budget per pair: enough to reach the optional headers of a UserMessage


def _target(peer: SimulatedPeer) -> str:
    host, port = peer.address
    return f"mqqb://{host}:{port}?scale={SCALE}"


def _fuzz(peer: SimulatedPeer, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(["fuzz", "--target", _target(peer), "--out", str(out), "--restart-wait", "10", *extra])
    return code, json.loads((out / "report.json").read_text())


@pytest.mark.parametrize(
    ("behaviour", "oracle", "budget", "seed"),
    [
        ("crash-soap-length", "crash", "3000", "1"),
        ("crash-mqf-count", "crash", "3000", "3"),
        ("hang-cp-when-open", "hang", "110", "1"),
        ("bad-padding", "violation", "200", "1"),  # a MUST of 2.2.3.1 broken in its replies
    ],
)
def test_fuzz_finds_confirms_and_minimises_each_fault(
    behaviour: str, oracle: str, budget: str, seed: str, tmp_path: Path
) -> None:
    with SimulatedPeer(behaviour=behaviour, time_scale=SCALE, ping_port=None) as peer:
        code, report = _fuzz(peer, tmp_path / "out", "--seed", seed, "--max-packets", budget)
        assert code == 1
        found = [f for f in report["findings"] if f["oracle"] == oracle]
        assert found, report["stopped"]
        first = found[0]
        assert first["confirmed"] and first["case_outcome"] == "failed"
        if oracle == "crash":  # the run stops at the first confirmed crash
            assert report["stopped"].startswith("the first confirmed crash") and report["findings"][-1] == first
        assert 1 <= len(first["minimal"]) <= len(first["session"])
        assert Path(first["pcap"]).stat().st_size > 24
        case = Path(first["case"])
        assert yaml.safe_load(case.read_text().split("\n", 2)[2])["given"]["peer"] == {"under_test": "acceptor"}
        peer.wait_for(lambda: peer._listener is not None, 5.0)  # a crashed peer is back
        assert main(["run", str(case), "--target", _target(peer)]) == 1  # fails while the fault is there
        peer.wait_for(lambda: peer._listener is not None, 5.0)
        assert main(["fuzz", "--target", _target(peer), "--replay", str(case)]) == 1
    with SimulatedPeer(identifier=_server(first), time_scale=SCALE, ping_port=None) as fixed:
        assert main(["run", str(case), "--target", _target(fixed)]) == 0  # a conformant acceptor passes it
        assert main(["fuzz", "--target", _target(fixed), "--replay", str(case)]) == 0


def _server(finding: dict) -> str | None:
    """The queue manager the finding's packets were addressed to (the restarted peer keeps it)."""
    guid = _server_guid([bytes.fromhex(p) for p in finding["minimal"]])
    return str(guid) if guid is not None else None


def test_conformant_peer_bounded_run_finds_nothing_and_covers_every_pair(tmp_path: Path) -> None:
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        code, report = _fuzz(peer, tmp_path / "out", "--seed", "3", "--max-packets", str(PAIR_PACKETS * len(PAIRS)))
    assert code == 0 and report["findings"] == []
    pairs = {tuple(p) for p in report["pairs_reached"]}
    assert pairs == set(PAIRS)
    fields = {c["field"] for c in report["coverage"]}
    assert len(fields) > 15 and any(
        f.startswith(("SoapHeader.", "SecurityHeader.", "MultiQueueFormatHeader.")) for f in fields
    )
    assert (tmp_path / "out" / "report.html").read_text().count("<tr>") > 15


def test_the_same_seed_makes_the_same_run(tmp_path: Path) -> None:
    """What the seed determines (docs/fuzz.md "Seeds"), the budget ending both runs: --duration,
    the wall clock, does not."""
    budget = ("--max-packets", "300", "--duration", "600")
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        _, a = _fuzz(peer, tmp_path / "a", "--seed", "11", *budget)
        _, b = _fuzz(peer, tmp_path / "b", "--seed", "11", *budget)
        _, c = _fuzz(peer, tmp_path / "c", "--seed", "12", *budget)
    assert a["stopped"] == b["stopped"] == c["stopped"] == "--max-packets 300 sent"
    assert a["findings"] == b["findings"] == []
    assert (a["rounds"], a["packets"]) == (b["rounds"], b["packets"])
    assert a["coverage"] == b["coverage"]
    assert a["coverage"] != c["coverage"]


def test_safe_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # not loopback and not allowed: refused before anything is sent (192.0.2.0/24 is TEST-NET-1)
    assert main(["fuzz", "--target", "mqqb://192.0.2.1:1801", "--out", str(tmp_path)]) == 2
    assert "--allow 192.0.2.1" in capsys.readouterr().err
    assert main(["fuzz", "--target", "mqqb://127.0.0.1:1801", "--kind", "Ping", "--out", str(tmp_path)]) == 2
    assert "--kind Ping" in capsys.readouterr().err
    with SimulatedPeer(time_scale=SCALE, ping_port=None) as peer:
        _, report = _fuzz(peer, tmp_path / "d", "--seed", "1", "--duration", "1")
        # checked between rounds: it ran 1 s, and then at most one round, whose waits are bounded
        assert report["stopped"] == "--duration 1 s elapsed" and report["findings"] == []
        assert 1.0 <= report["seconds"] < 1.0 + Timers(SCALE).round() + ROUND_PACKETS / 500
        _, report = _fuzz(peer, tmp_path / "r", "--seed", "1", "--max-packets", "100", "--rate", "100")
        # paced: 100 packets a second, the last round's sent at most ROUND_PACKETS beyond the budget
        assert 100 <= report["packets"] < 100 + ROUND_PACKETS and report["seconds"] >= report["packets"] / 100
    assert main(["fuzz", "--target", "mqqb://127.0.0.1:1", "--out", str(tmp_path / "x"), "--max-packets", "5"]) == 2


def test_resource_growth_of_a_local_target_is_found(tmp_path: Path) -> None:
    """The peer runs in this process: the fuzzer finds it listening and reads its descriptors."""
    with SimulatedPeer(behaviour="leak-fd-on-malformed", time_scale=SCALE, ping_port=None) as peer:
        code, report = _fuzz(peer, tmp_path / "out", "--seed", "1", "--max-packets", "1600")
    assert code == 1
    (growth,) = [f for f in report["findings"] if f["oracle"] == "resource-growth"]
    assert growth["confirmed"] and "open descriptors" in growth["why"]
    assert growth["minimal"] and Path(growth["pcap"]).is_file()


def test_continue_goes_on_after_a_confirmed_crash(tmp_path: Path) -> None:
    with SimulatedPeer(behaviour="crash-soap-length", time_scale=SCALE, ping_port=None) as peer:
        code, report = _fuzz(peer, tmp_path / "out", "--seed", "1", "--max-packets", "1500", "--continue")
    assert code == 1 and report["stopped"] == "--max-packets 1500 sent"
    assert [f["oracle"] for f in report["findings"]] == ["crash"]  # the same crash again is one finding
