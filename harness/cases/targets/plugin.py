"""``plugin:pkg.mod:Class`` targets: an implementation under test loaded into the harness.

Renders the plugin row of the targets table of docs/cases.md: ``Class`` is a subclass of the
reference ``harness.model.QueueManager`` ([MS-MQDMPR] 3.1.1.1, overriding some of its event
methods; it runs behind :class:`~harness.cases.targets.reference.ReferenceTarget`, which calls an
override with the arguments typed as the spec event declares them, ``iSeekDirection`` a
``SeekDirection``, whatever the override annotates: harness.cases.events), a subclass
of the reference sender ``harness.session.OutgoingQueueProcessing`` ([MS-MQQB] 3.1.7.12; the
initiator wire cases run it in place of the reference's, against the simulated peer), or any
class implementing the ``harness.cases.target.Target`` protocol, constructed without arguments.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from harness.cases.target import Target, TargetInfo
from harness.cases.targets.kind import target_kind
from harness.cases.targets.reference import ReferenceTarget
from harness.model import QueueManager
from harness.session import OutgoingQueueProcessing

__all__ = ["PluginTarget", "load_plugin_class"]


def load_plugin_class(path: str) -> type:
    """``"pkg.mod:Class"`` (or ``"pkg.mod.Class"``) -> the class."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"plugin target {path!r}: expected pkg.mod:Class")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(f"plugin target {path!r} is not a class")
    return obj


class PluginTarget:
    """A plugin class as a Target (delegates every call to the wrapped target)."""

    def __init__(self, path: str) -> None:
        self.path = path
        cls = load_plugin_class(path)

        if issubclass(cls, QueueManager):
            self.inner: Target = ReferenceTarget(queue_manager_class=cls, name=f"plugin:{path}")
        elif issubclass(cls, OutgoingQueueProcessing):
            self.inner = ReferenceTarget(name=f"plugin:{path}", sender_class=cls)
        else:
            inner = cls()
            methods = ("hello", "setup", "event", "observe", "close")
            missing = [m for m in methods if not callable(getattr(inner, m, None))]
            if missing:
                raise TypeError(f"plugin target {path!r} is neither a QueueManager nor a Target (lacks {missing})")
            self.inner = cast(Target, inner)

    @property
    def handles_timeout(self) -> bool:
        return bool(getattr(self.inner, "handles_timeout", False))

    def hello(self) -> TargetInfo:
        return self.inner.hello()

    def setup(self, given: dict[str, Any]) -> None:
        self.inner.setup(given)

    def event(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return self.inner.event(name, args)

    def observe(self, queues: list[str], cursors: list[str]) -> dict[str, Any]:
        return self.inner.observe(queues, cursors)

    def control(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        return cast(Any, self.inner).control(op, args)

    def acceptor(self) -> Any:
        return cast(Any, self.inner).acceptor()

    @property
    def wire_options(self) -> Any:
        return getattr(self.inner, "wire_options", None)

    def close(self) -> None:
        self.inner.close()


@target_kind(
    "plugin:",
    "plugin:pkg.mod:Class",
    "a QueueManager subclass (the model), an OutgoingQueueProcessing subclass (the sender) "
    "or a Target class, in process",
)
def _make(spec: str, timeout: float) -> PluginTarget:
    return PluginTarget(spec[len("plugin:") :])
