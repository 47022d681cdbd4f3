"""The indexed MessagePositionList of [MS-MQDMPR] 3.1.1.2, and the readings of 3.1.1.11 it takes.

Renders the Queue.MessagePositionList attribute (3.1.1.2: ascending order by arrival time within
priority, the special Head, Tail, Start and End locations) with bitset-tree indices:
``IndexedMessagePositionList``, used by the reference model.  The MessagePosition ADM element
(3.1.1.11) and the list's interface live in ``messages.py`` (a Message and its position reference
each other), imported from there; ``LinkedMessagePositionList`` in ``literal.py`` is the plain linked
list the spec describes, used as the test oracle.

Readings taken where the spec is silent or contradicts itself (each an ``interpretation``
requirement of cases/requirements.yaml, with the alternatives a conformant implementation may
take):
- DMPR-3.1.1.11-REMOVED-NEXT, reading keeps-place: a position removed from the list
  (3.1.7.2.1, 3.1.4.5) keeps its place in the order: its Next is the first position still in the
  list that follows it, its Previous the last one before it. This is what keeping it linked and
  skipping it would give, and lets a cursor that references a removed position keep iterating
  (3.2.7.3, 3.2.7.4).
- DMPR-3.1.1.2-END-NEXT, reading end-is-end: End.Next is End, so a forward seek from End (a
  cursor left there by Wait Time Expired, 3.2.7.6) returns End, even when messages arrived later.
- DMPR-3.1.1.2-START-PREVIOUS, reading start-is-start: Start.Previous is Start.
- DMPR-3.1.7.3.2-BWD-START, reading returns-start: the first position's Previous is Start
  (3.1.1.11 says "Head"; Start is what the backward walk of 3.1.7.3.2 terminates on), so a
  backward seek that finds nothing returns Start (its Return Value would say End); the Tail of
  an empty list is Start.
- Start.Next is Head and End.Previous is Tail (3.1.7.3.2 says so for the walks).
"""

from __future__ import annotations

from collections.abc import Iterator

from harness.model.bittree import BitTree
from harness.model.enums import MessagePositionState
from harness.model.messages import RANKS, MessagePosition, MessagePositionList, PositionQueue, priority_rank

__all__ = ["IndexedMessagePositionList"]

_AVAILABLE = MessagePositionState.Available
_LOCKED = MessagePositionState.Locked


class _Level:
    """Positions of one priority rank in arrival order (append-only, compacted at the front)."""

    __slots__ = ("arr", "avail", "base", "live", "lpeek", "removed")

    def __init__(self) -> None:
        self.arr: list[MessagePosition] = []
        self.base = 0
        self.live = BitTree()
        self.avail = BitTree()
        self.lpeek = BitTree()
        self.removed = 0


_COMPACT_EVERY = 1 << 14


class IndexedMessagePositionList(MessagePositionList):
    """MessagePositionList with bitset-tree indices of live, Available and peekable positions.

    Every position has the order key (priority rank, arrival index within the rank). For each
    rank three BitTrees hold the positions in the list (``live``), those Available
    (``avail``) and those Locked whose message allows peeking while locked (``lpeek``), so
    Head, Tail, Next, Previous and the seeks of 3.1.7.3.2 cost O(8 * log64 n).
    """

    def __init__(self, queue: PositionQueue | None) -> None:
        super().__init__(queue)
        self._levels = [_Level() for _ in range(RANKS)]
        self._count = 0
        self._live_mask = 0  # bit r set when rank r has positions in the list
        self._by_lookup: dict[int, MessagePosition] = {}

    # --- order queries --------------------------------------------------------------------
    def _first_after(self, rank: int, idx: int, which: int) -> MessagePosition | None:
        """First position with key > (rank, idx) in tree ``which`` (0 live, 1 avail, 2 lpeek)."""
        levels = self._levels
        mask = self._live_mask >> (rank if rank > 0 else 0)
        r = rank if rank > 0 else 0
        while mask:
            if mask & 1:
                lvl = levels[r]
                tree = lvl.live if which == 0 else lvl.avail if which == 1 else lvl.lpeek
                start = idx - lvl.base + 1 if r == rank else 0
                j = tree.next_set(start)
                if j >= 0:
                    return lvl.arr[j]
            mask >>= 1
            r += 1
        return None

    def _last_before(self, rank: int, idx: int, which: int) -> MessagePosition | None:
        """Last position with key < (rank, idx) in tree ``which``."""
        levels = self._levels
        r = rank if rank < RANKS else RANKS - 1
        mask = self._live_mask
        while r >= 0:
            if (mask >> r) & 1:
                lvl = levels[r]
                tree = lvl.live if which == 0 else lvl.avail if which == 1 else lvl.lpeek
                end = idx - lvl.base - 1 if r == rank else len(lvl.arr) - 1
                j = tree.prev_set(end)
                if j >= 0:
                    return lvl.arr[j]
            r -= 1
        return None

    @property
    def Head(self) -> MessagePosition:
        p = self._first_after(-1, 0, 0)
        return self.End if p is None else p

    @property
    def Tail(self) -> MessagePosition:
        # Tail of an empty list: Start (DMPR-3.1.7.3.2-BWD-START, reading returns-start).
        p = self._last_before(RANKS, 0, 0)
        return self.Start if p is None else p

    def next_of(self, position: MessagePosition) -> MessagePosition:
        # End.Next is End (DMPR-3.1.1.2-END-NEXT, end-is-end); a removed position keeps its
        # place (DMPR-3.1.1.11-REMOVED-NEXT, keeps-place).
        if position._special:
            return self.Head if position is self.Start else self.End
        p = self._first_after(position._rank, position._idx, 0)
        return self.End if p is None else p

    def previous_of(self, position: MessagePosition) -> MessagePosition:
        # Start.Previous is Start (DMPR-3.1.1.2-START-PREVIOUS, start-is-start); the first
        # position's Previous is Start (DMPR-3.1.7.3.2-BWD-START, returns-start).
        if position._special:
            return self.Tail if position is self.End else self.Start
        p = self._last_before(position._rank, position._idx, 0)
        return self.Start if p is None else p

    def seek(self, initial: MessagePosition, peek: bool, forward: bool) -> MessagePosition:
        """Index form of the walk of 3.1.7.3.2; returns exactly the position the walk returns.

        Forward: the first position after ``initial`` (after Start: from Head; End.Next is End,
        DMPR-3.1.1.2-END-NEXT, reading end-is-end) that is Available, or Locked with
        AllowPeekWhenLocked when ``peek``; End if none. Backward: the last such position before
        ``initial`` (before End: from Tail; Start.Previous is Start, DMPR-3.1.1.2-START-PREVIOUS,
        reading start-is-start); Start if none (the walk stops on Start:
        DMPR-3.1.7.3.2-BWD-START, reading returns-start).
        """
        if forward:
            if initial is self.End:
                return self.End
            rank, idx = initial._rank, initial._idx
            a = self._first_after(rank, idx, 1)
            if peek:
                b = self._first_after(rank, idx, 2)
                if b is not None and (a is None or (b._rank, b._idx) < (a._rank, a._idx)):
                    a = b
            return self.End if a is None else a
        if initial is self.Start:
            return self.Start
        rank, idx = initial._rank, initial._idx
        a = self._last_before(rank, idx, 1)
        if peek:
            b = self._last_before(rank, idx, 2)
            if b is not None and (a is None or (b._rank, b._idx) > (a._rank, a._idx)):
                a = b
        return self.Start if a is None else a

    # --- structure ------------------------------------------------------------------------
    def insert(self, position: MessagePosition) -> None:
        message = position.MessageReference
        assert message is not None
        rank = priority_rank(message)
        lvl = self._levels[rank]
        rel = len(lvl.arr)
        lvl.arr.append(position)
        position._rank = rank
        position._idx = lvl.base + rel
        position._in_list = True
        lvl.live.add(rel)
        self._live_mask |= 1 << rank
        self._count += 1
        self._by_lookup[message.LookupIdentifier] = position
        state = position._state
        if state is _AVAILABLE:
            lvl.avail.add(rel)
        elif state is _LOCKED and message.AllowPeekWhenLocked:
            lvl.lpeek.add(rel)

    def remove(self, position: MessagePosition) -> None:
        if not position._in_list:
            return
        lvl = self._levels[position._rank]
        rel = position._idx - lvl.base
        state = position._state
        if state is _AVAILABLE:
            lvl.avail.discard(rel)
        elif state is _LOCKED:
            lvl.lpeek.discard(rel)
        lvl.live.discard(rel)
        position._in_list = False
        self._count -= 1
        message = position.MessageReference
        if message is not None and self._by_lookup.get(message.LookupIdentifier) is position:
            del self._by_lookup[message.LookupIdentifier]
        lvl.removed += 1
        if lvl.removed >= _COMPACT_EVERY:
            self._compact(position._rank)

    def _compact(self, rank: int) -> None:
        """Drop the leading run of removed positions of a rank (they stay valid objects)."""
        lvl = self._levels[rank]
        lvl.removed = 0
        first = lvl.live.next_set(0)
        if first < 0:
            first = len(lvl.arr)
            self._live_mask &= ~(1 << rank)
        d = first >> 6
        if d == 0 or (d << 6) < len(lvl.arr) // 2:
            return
        lvl.live.drop_words(d)
        lvl.avail.drop_words(d)
        lvl.lpeek.drop_words(d)
        del lvl.arr[: d << 6]
        lvl.base += d << 6

    def _state_changed(
        self,
        position: MessagePosition,
        old: MessagePositionState | None,
        new: MessagePositionState | None,
    ) -> None:
        lvl = self._levels[position._rank]
        rel = position._idx - lvl.base
        if old is _AVAILABLE:
            lvl.avail.discard(rel)
        elif old is _LOCKED:
            lvl.lpeek.discard(rel)
        if new is _AVAILABLE:
            lvl.avail.add(rel)
        elif new is _LOCKED:
            message = position.MessageReference
            if message is not None and message.AllowPeekWhenLocked:
                lvl.lpeek.add(rel)

    def find_by_lookup_identifier(self, lookup_id: int) -> MessagePosition | None:
        return self._by_lookup.get(lookup_id)

    def __iter__(self) -> Iterator[MessagePosition]:
        for lvl in self._levels:
            live = lvl.live
            j = live.next_set(0)
            while j >= 0:
                yield lvl.arr[j]
                j = live.next_set(j + 1)

    def __len__(self) -> int:
        return self._count
