"""What an endpoint sent on one session -- its MessageIDs, the highest number of each transactional
sequence -- held in memory bounded by a constant.

[MS-MQMQ] 2.2.19.2: a message is identified by UserHeader.SourceQueueManager (the GUID of the
original sender) and UserHeader.MessageID, a 4-byte number the sending queue manager assigns in
sequence to every message it sends (the MessageIdentifier's Ordinal, [MS-MQDMPR] 3.1.1.12); on a
session the MessageIDs of one source therefore come in runs of consecutive numbers (gaps where
its other messages went to other sessions).  Two rules ask whether an identifier was sent on the
session: duplicate detection ([MS-MQQB] 3.1.5.8.1: a non-transactional UserMessage whose
MessageID is in the MessageIDHistoryTable is discarded) and the FinalAck that names a message
([MS-MQQB] 3.1.5.7, 2.2.5.1 SourceGUID and MessageID).

So each source's identifiers are kept as merged ranges of consecutive numbers: a session of a
million sequential messages holds one range, and the answer is exact.  Memory is bounded by
:data:`MAX_RANGES` per source and :data:`MAX_SOURCES` sources: beyond that the lowest (oldest)
ranges of a source are folded into one span whose identifiers may or may not have been sent, and
the least recently used source is forgotten.  An identifier in such a span, or of a source that
may have been forgotten, is neither known sent nor known unsent (:meth:`SentIds.sent` gives None):
no rule is judged on it, so bounding memory never makes a verdict up.

Transactional sequences ([MS-MQQB] 3.1.1.5, 3.1.5.6: an OrderAck names a TxSequenceID and a
TxSequenceNumber that was sent; 3.1.1.6.2: OrderAcks of a sequence come in order) are few on a
session (one per outgoing queue), but a sender may start any number: :class:`Highest` keeps the
highest number of at most :data:`MAX_SEQUENCES` of them, the least recently used forgotten, and a
sequence that may have been forgotten (its TxSequenceID no higher than one forgotten) is unknown
(None): no OrderAck is judged unsent on it.

The engines use the same pieces: the Acceptor's MessageIDs of one session (3.1.5.8.1) are a
:class:`SentIds`, the Initiator's own MessageIDs (3.1.5.7) and TxSequenceIDs (3.1.5.6) are each one
:class:`Ranges` (numbers it assigns in sequence, [MS-MQQB] 3.1.7.1.1, 3.1.1.5), and what is kept per
sending queue manager (the transactional sequences of 3.1.1.5 as a receiver sees them; the
IncomingTransactionalTransferInfo of [MS-MQDMPR] 3.1.1.5) is a :class:`Recent` mapping of at most
:data:`MAX_SOURCES` or :data:`MAX_REMOTE_QUEUE_MANAGERS` keys, the least recently used forgotten: a
sender forgotten is met again as one never seen, and no rule that needs its past is judged on it.
The packets an engine keeps for its caller (the Initiator's FinalAcks and received UserMessages)
are the :data:`PACKETS_KEPT` latest (:class:`Latest`); each was handed out as an action already.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from typing import Any

__all__ = [
    "MAX_RANGES",
    "MAX_REMOTE_QUEUE_MANAGERS",
    "MAX_SEQUENCES",
    "MAX_SOURCES",
    "PACKETS_KEPT",
    "Highest",
    "Latest",
    "Ranges",
    "Recent",
    "SentIds",
]

#: ranges of consecutive MessageIDs kept exactly per source queue manager
MAX_RANGES = 32
#: source queue managers kept per endpoint and session
MAX_SOURCES = 256
#: transactional sequences kept per endpoint and session
MAX_SEQUENCES = 1024
#: remote queue managers whose incoming transactional sequence a receiving queue manager keeps
MAX_REMOTE_QUEUE_MANAGERS = 4096
#: packets an engine keeps of those it received, for its caller to look at (python-only)
PACKETS_KEPT = 1024


class Ranges:
    """The MessageIDs of one source (or any numbers given in sequence): disjoint, non-adjacent
    ranges ``[starts[i], ends[i]]`` in increasing order, and below them the span ``fuzzy`` of
    folded ranges (unknown inside).
    ``partial``: the source may have been forgotten before (what it sent then is not here), so
    an identifier outside the ranges is unknown, not unsent."""

    __slots__ = ("ends", "fuzzy", "partial", "starts")

    def __init__(self, partial: bool = False) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.fuzzy: tuple[int, int] | None = None
        self.partial = partial

    def sent(self, message_id: int) -> bool | None:
        i = bisect_right(self.starts, message_id) - 1
        if i >= 0 and self.ends[i] >= message_id:
            return True
        fuzzy = self.fuzzy
        if self.partial or (fuzzy is not None and fuzzy[0] <= message_id <= fuzzy[1]):
            return None
        return False

    def add(self, message_id: int) -> bool | None:
        """Record ``message_id``; what :meth:`sent` said of it before."""
        starts, ends = self.starts, self.ends
        if ends and ends[-1] == message_id - 1 and (self.fuzzy is None or self.fuzzy[0] != message_id):
            ends[-1] = message_id  # the next of the highest run: the common case
            return None if self.partial else False
        i = bisect_right(starts, message_id) - 1
        if i >= 0 and ends[i] >= message_id:
            return True
        fuzzy = self.fuzzy
        if fuzzy is not None and fuzzy[0] <= message_id <= fuzzy[1]:
            return None
        before = None if self.partial else False
        joins_left = i >= 0 and ends[i] == message_id - 1
        joins_right = i + 1 < len(starts) and starts[i + 1] == message_id + 1
        if joins_left and joins_right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = message_id
        elif joins_right:
            starts[i + 1] = message_id
        else:
            starts.insert(i + 1, message_id)
            ends.insert(i + 1, message_id)
            if len(starts) > MAX_RANGES:
                self._fold()
        return before

    def _fold(self) -> None:
        """The lowest range joins the span of unknowns (with every range that span now covers)."""
        low, high = self.starts[0], self.ends[0]
        if self.fuzzy is not None:
            low, high = min(low, self.fuzzy[0]), max(high, self.fuzzy[1])
        self.fuzzy = (low, high)
        keep = bisect_right(self.starts, high)  # ranges start above the span, or lie inside it
        del self.starts[:keep], self.ends[:keep]

    def size(self) -> int:
        return len(self.starts)


class SentIds:
    """The (SourceQueueManager, MessageID) pairs one endpoint sent on a session."""

    __slots__ = ("_sources", "forgot")

    def __init__(self) -> None:
        self._sources: OrderedDict[bytes, Ranges] = OrderedDict()
        self.forgot = False  #: a source was forgotten: an unknown source may have been sent before

    def add(self, source: bytes, message_id: int) -> bool | None:
        """Record that ``message_id`` of ``source`` was sent; whether it was sent before: True
        (exactly), False (exactly), None (cannot be told any more)."""
        sources = self._sources
        ranges = sources.get(source)
        if ranges is None:
            ranges = sources[source] = Ranges(self.forgot)
            if len(sources) > MAX_SOURCES:
                sources.popitem(last=False)
                self.forgot = True
        else:
            sources.move_to_end(source)
        return ranges.add(message_id)

    def sent(self, source: bytes, message_id: int) -> bool | None:
        """Was ``message_id`` of ``source`` sent: True, False, or None when that cannot be told."""
        ranges = self._sources.get(source)
        if ranges is None:
            return None if self.forgot else False
        return ranges.sent(message_id)

    def ranges(self) -> int:
        """Ranges held, over every source (what the memory is proportional to)."""
        return sum(r.size() for r in self._sources.values())

    def __len__(self) -> int:
        return len(self._sources)


class Highest:
    """Per key (a TxSequenceID) a number -- the highest noted (:meth:`note`) or the last set
    (:meth:`set`) -- for at most :data:`MAX_SEQUENCES` keys, the least recently used forgotten.
    A sender's new sequences have higher TxSequenceIDs ([MS-MQQB] 3.1.1.5), so the keys
    forgotten are the old ones, and a key above every key forgotten is known exactly."""

    __slots__ = ("_seen", "forgot_to")

    def __init__(self) -> None:
        self._seen: OrderedDict[int, int] = OrderedDict()
        self.forgot_to: int | None = None  #: the highest key forgotten (None: none was)

    def _unsure(self, key: int) -> bool:
        return self.forgot_to is not None and key <= self.forgot_to

    def highest(self, key: int) -> int | None:
        """The highest number noted for ``key``: 0 when none was, None when that cannot be told
        (numbers of ``key`` may have been forgotten)."""
        if self._unsure(key):
            return None
        return self._seen.get(key, 0)

    def last(self, key: int) -> int:
        """The number set last for ``key`` that is still known (0: none)."""
        return self._seen.get(key, 0)

    def note(self, key: int, number: int) -> None:
        """``number`` for ``key``, kept when it is the highest noted."""
        self.set(key, max(self._seen.get(key, number), number))

    def set(self, key: int, number: int) -> None:
        """``number`` is now the number of ``key``."""
        seen = self._seen
        if key in seen:
            seen.move_to_end(key)
        seen[key] = number
        if len(seen) > MAX_SEQUENCES:
            gone, _number = seen.popitem(last=False)
            self.forgot_to = gone if self.forgot_to is None else max(self.forgot_to, gone)

    def __len__(self) -> int:
        return len(self._seen)


class Recent(OrderedDict[Any, Any]):
    """A mapping of at most ``limit`` keys: setting a key, or :meth:`setdefault` on one, makes it
    the most recent, and beyond ``limit`` the least recent is forgotten (``forgot`` becomes True).
    A reader treats a key it does not find as never seen, so what it judges on a forgotten key is
    only what a first meeting allows."""

    def __init__(self, limit: int = MAX_SOURCES) -> None:
        super().__init__()
        self.limit = limit
        self.forgot = False

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        if len(self) > self.limit:
            self.popitem(last=False)
            self.forgot = True

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        self[key] = default
        return default

    def copy(self) -> Recent:
        new = type(self)(self.limit)
        new.update(self)
        new.forgot = self.forgot
        return new

    def __reduce__(self) -> Any:  # the limit before the items (OrderedDict's gives the items first)
        return (type(self), (self.limit,), {"forgot": self.forgot}, None, iter(self.items()))


class Latest(list[Any]):
    """A list that keeps only the ``limit`` items appended last (a list still: it compares equal to
    one)."""

    def __init__(self, limit: int = PACKETS_KEPT) -> None:
        super().__init__()
        self.limit = limit

    def append(self, item: Any) -> None:
        super().append(item)
        if len(self) > self.limit:
            del self[0]
