"""Targets a conformance run can validate (docs/cases.md, "Targets").

``make_target`` renders the ``--target`` values: ``reference`` (the embedded [MS-MQDMPR] model,
:class:`ReferenceTarget`), ``plugin:pkg.mod:Class`` (:class:`PluginTarget`: a QueueManager
subclass behind the reference target, or any class implementing the Target protocol) and
``cmd:<command>`` (:class:`CommandTarget`: a subprocess speaking the JSON-lines protocol).
The reference target's pseudo-events (clock, blocked reads, queue attributes) are registered
with the case loader so that case files may use them.
"""

from __future__ import annotations

from harness.cases.target import Target
from harness.cases.targets.command import CommandTarget
from harness.cases.targets.plugin import PluginTarget
from harness.cases.targets.reference import PSEUDO_EVENTS, ReferenceTarget

__all__ = ["CommandTarget", "PluginTarget", "ReferenceTarget", "make_target"]

try:  # the loader accepts the reference target's pseudo-events as events
    from harness.cases.schema import register_events
except ImportError:  # pragma: no cover - the loader is not there
    pass
else:
    register_events(*PSEUDO_EVENTS)


def make_target(spec: str, *, timeout: float = 10.0) -> Target:
    """``"reference"`` | ``"plugin:pkg.mod:Class"`` | ``"cmd:<shell command>"`` -> a Target.

    ``timeout`` is the cmd target's per-request timeout (in-process targets are timed by the
    runner).
    """
    if spec == "reference":
        return ReferenceTarget()
    if spec.startswith("reference?"):  # wire options: reference?peer=BEHAVIOUR&scale=S
        from harness.cases.targets.wire import reference_target

        return reference_target(spec)
    if spec.startswith("plugin:"):
        return PluginTarget(spec[len("plugin:") :])
    if spec.startswith("cmd:"):
        return CommandTarget(spec[len("cmd:") :], timeout=timeout)
    if spec.startswith("mqqb://"):  # a live [MS-MQQB] acceptor, for wire cases
        from harness.cases.targets.wire import LiveWireTarget

        return LiveWireTarget(spec)
    raise ValueError(
        f"unknown target {spec!r}: expected reference, plugin:pkg.mod:Class, cmd:<command> or mqqb://host:port"
    )
