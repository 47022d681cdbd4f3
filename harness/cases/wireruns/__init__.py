"""Wire runs: one [MS-MQQB] wire case against one implementation, one module per side under test.

:class:`InitiatorRun` judges a sender driven through control operations, the harness accepting;
:class:`AcceptorRun` judges an acceptor, the harness initiating.  Both declare the case actions
they execute (harness.cases.actions) and share the timer bounds and checks of :mod:`.base`.
"""

from harness.cases.wireruns.acceptor import AcceptorRun
from harness.cases.wireruns.base import WireCaseError, WireRun
from harness.cases.wireruns.initiator import ADM, InitiatorRun, NotApplicable

__all__ = ["ADM", "AcceptorRun", "InitiatorRun", "NotApplicable", "WireCaseError", "WireRun"]
