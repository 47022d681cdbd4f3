"""First-in first-out queues whose memory is bounded: items beyond a budget wait in a temporary file.

A :class:`SpillPool` holds the budget (bytes, as the queues weigh their items) shared by its
queues and one temporary file, opened on the first spill; a :class:`SpillFifo` keeps the block
being filled in memory and writes it out, pickled, when it reaches :attr:`SpillPool.block` bytes
or when the pool is over its budget (and the block holds at least :attr:`SpillPool.least`), so a
queue's memory is one block being filled and one being read back, whatever its length.  An item
may be stripped of what is costly to pickle and rebuilt when read back (a parsed packet: its bytes
are kept and parsed again).  The file grows while blocks are out and is emptied when none is.
A :class:`SpillFile` is the plain form: lists of items written to a temporary file and read back
by where they were written.
"""

from __future__ import annotations

import pickle
import tempfile
from collections import deque
from collections.abc import Callable
from typing import IO, Any, Generic, TypeVar

__all__ = ["SpillFifo", "SpillFile", "SpillPool"]

T = TypeVar("T")

#: bytes of items the queues of a pool hold in memory together before they write blocks out
BUDGET = 32 << 20
#: bytes of a block written out whatever the pool holds
BLOCK = 1 << 20
#: the least bytes of a block written out when the pool is over its budget
LEAST = 64 << 10


class SpillFile:
    """Lists of items pickled to a temporary file (opened on the first :meth:`put`), each read back by
    where :meth:`put` wrote it: the blocks of a :class:`SpillPool`, finished connections waiting for
    their turn (harness.capture.streams), packets held for capture order (harness.decoding), sorted
    runs of segments (harness.pipeline.tasks)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None

    def put(self, items: list[Any]) -> tuple[int, int]:
        """Write ``items`` at the end of the file; where they are: (offset, length)."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="msmq-harness-")  # noqa: SIM115 (closed by close())
        self._file.seek(0, 2)
        at = self._file.tell()
        pickle.dump(items, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        return at, self._file.tell() - at

    def get(self, where: tuple[int, int]) -> list[Any]:
        """The items :meth:`put` wrote at ``where``."""
        assert self._file is not None
        self._file.seek(where[0])
        items: list[Any] = pickle.loads(self._file.read(where[1]))
        return items

    def clear(self) -> None:
        """Nothing written is to be read back: the file starts again empty."""
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class SpillPool:
    """The memory budget and the temporary file of a set of :class:`SpillFifo`."""

    def __init__(self, budget: int | None = None, block: int | None = None, least: int | None = None) -> None:
        self.budget = BUDGET if budget is None else budget
        self.block = max(1, BLOCK if block is None else block)
        self.least = max(1, min(LEAST if least is None else least, self.block))
        self.held = 0  #: bytes (by weight) in memory in the queues of this pool
        self.spilled = 0  #: blocks written out and not yet read back
        self.written = 0  #: blocks written out in all
        self._file = SpillFile()

    def put(self, items: list[Any]) -> tuple[int, int]:
        where = self._file.put(items)
        self.spilled += 1
        self.written += 1
        return where

    def get(self, where: tuple[int, int]) -> list[Any]:
        items = self._file.get(where)
        self.drop(1)
        return items

    def drop(self, blocks: int) -> None:
        """``blocks`` written out will not be read back."""
        self.spilled -= blocks
        if not self.spilled:  # nothing out: the file starts again empty
            self._file.clear()

    def close(self) -> None:
        self._file.close()


class SpillFifo(Generic[T]):
    """A first-in first-out queue of a :class:`SpillPool`: ``weight`` gives an item's bytes in
    memory; ``strip`` what is written out of it, ``restore`` the item again from that."""

    def __init__(
        self,
        pool: SpillPool,
        weight: Callable[[T], int],
        strip: Callable[[T], Any] | None = None,
        restore: Callable[[Any], T] | None = None,
    ) -> None:
        self.pool = pool
        self.weight = weight
        self.strip = strip
        self.restore = restore
        self._head: deque[T] = deque()  # read from here
        self._middle: deque[tuple[int, int]] = deque()  # blocks written out, in order
        self._tail: list[T] = []  # the block being filled
        self._tail_weight = 0
        self._head_weight = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def push(self, item: T) -> None:
        w = self.weight(item)
        self._count += 1
        pool = self.pool
        pool.held += w
        if not self._middle and not self._tail and self._head_weight + w <= pool.least:
            self._head.append(item)  # a short queue stays one deque
            self._head_weight += w
            return
        self._tail.append(item)
        self._tail_weight += w
        if self._tail_weight >= pool.block or (pool.held > pool.budget and self._tail_weight >= pool.least):
            self._write_tail()

    def _write_tail(self) -> None:
        strip = self.strip
        block = [strip(i) for i in self._tail] if strip is not None else self._tail
        self._middle.append(self.pool.put(block))
        self.pool.held -= self._tail_weight
        self._tail, self._tail_weight = [], 0

    def _fill(self) -> bool:
        if self._head:
            return True
        if self._middle:
            items = self.pool.get(self._middle.popleft())
            restore = self.restore
            self._head = deque(restore(i) for i in items) if restore is not None else deque(items)
            self._head_weight = sum(self.weight(i) for i in self._head)
            self.pool.held += self._head_weight
            return True
        if self._tail:
            self._head = deque(self._tail)
            self._head_weight = self._tail_weight
            self._tail, self._tail_weight = [], 0
            return True
        return False

    def peek(self) -> T | None:
        if self._head:
            return self._head[0]
        return self._head[0] if self._fill() else None

    def pop(self) -> T:
        if not self._head and not self._fill():
            raise IndexError("pop from an empty SpillFifo")
        item = self._head.popleft()
        w = self.weight(item)
        self._head_weight -= w
        self.pool.held -= w
        self._count -= 1
        return item

    def clear(self) -> None:
        self.pool.drop(len(self._middle))
        self._middle.clear()
        self.pool.held -= self._head_weight + self._tail_weight
        self._head, self._tail = deque(), []
        self._head_weight = self._tail_weight = self._count = 0
