"""A ``cmd:`` adapter the wire tests put in front of examples/reference_adapter.py: a proxy
script that passes each request on and may change a request's timing or a reply, and the
reference sender with its Session Retry Connect Timer ([MS-MQQB] 3.1.2.3) set to a duration of
the test's.  Test modules import them from here, never from one another.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# started with the folder it is written in on the adapter's path, so that --sender finds a module
# written beside it; DELAY and EDIT (see proxy_target) are set in the lines written before it
_PROXY = r"""
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
adapter = subprocess.Popen(
    [sys.executable, sys.argv[1] + "/examples/reference_adapter.py", *sys.argv[2:]],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
    env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)},
)
for line in sys.stdin:
    request = json.loads(line)
    if request.get("op") == "control" and request.get("control") in DELAY:
        time.sleep(DELAY[request["control"]])
    adapter.stdin.write(line)
    adapter.stdin.flush()
    if request.get("op") == "bye":
        break
    reply = json.loads(adapter.stdout.readline())
    if request.get("op") == "control" and request.get("control") in EDIT and reply.get("ok"):
        for key, value in EDIT[request["control"]].items():
            reply["result"][key] = {**(reply["result"].get(key) or {}), **value}
    print(json.dumps(reply), flush=True)
adapter.stdin.close()
adapter.wait(timeout=10)
"""

_RETRY_SENDER = r"""
import dataclasses
from harness.session.outgoing import OutgoingQueueProcessing

class Sender(OutgoingQueueProcessing):
    def __init__(self, qm, **kwargs):
        if kwargs.get("config") is not None:
            kwargs["config"] = dataclasses.replace(kwargs["config"], session_retry_connect=RETRY)
        super().__init__(qm, **kwargs)
"""


def proxy_target(
    folder: Path,
    *,
    retry: float | None = None,
    sender: str | None = None,
    delay: dict[str, float] | None = None,
    edit: dict[str, dict[str, dict[str, object]]] | None = None,
) -> str:
    """The ``cmd:`` target of a proxy written in ``folder``: the reference sender (with its Session
    Retry Connect Timer at ``retry`` seconds, when given), or the sender class ``sender``
    (``pkg.mod:Class``), each control operation named in ``delay`` passed on that many seconds
    late, and each object of a reply's result named in ``edit`` (per control operation) updated
    with the entries given."""
    script = folder / "proxy.py"
    script.write_text(f"DELAY, EDIT = {delay or {}!r}, {edit or {}!r}\n{_PROXY}", encoding="utf-8")
    if retry is not None:
        (folder / "retry_sender.py").write_text(f"RETRY = {retry!r}\n{_RETRY_SENDER}", encoding="utf-8")
        sender = "retry_sender:Sender"
    return f"cmd:{sys.executable} {script} {ROOT}" + (f" --sender {sender}" if sender else "")


def case_results(folder: Path, target: str, case_file: str, case: str) -> list[dict[str, Any]]:
    """The results (as ``run --json`` writes them) of the variants of ``case`` in ``case_file``
    (from the checkout's root) run against ``target``; the report is written in ``folder``."""
    out = folder / "out.json"
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", case_file, "-k", case, "--target", target, "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    return [dict(r) for r in json.loads(out.read_text(encoding="utf-8"))["results"]]
