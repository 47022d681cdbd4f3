"""A 64-ary bitset tree: the position index behind the MessagePositionList of [MS-MQDMPR] 3.1.1.2.

Python-only helper (no spec section of its own). Seek Available Message Position (3.1.7.3.2)
walks a queue's positions until it meets one that is Available (or, for a peek, Locked with
AllowPeekWhenLocked). The indexed MessagePositionList keeps one tree per state class so that
"the first Available position after this one" is found in O(log64 n) word operations,
whatever the number of Locked, Deleted or PurgePending positions in between.
"""

from __future__ import annotations


class BitTree:
    """Set of non-negative integers with O(log64 n) add, discard, next_set and prev_set.

    Level 0 holds one bit per index; level k+1 holds one bit per non-zero word of level k;
    the top level is a single word.
    """

    __slots__ = ("_levels",)

    def __init__(self) -> None:
        self._levels: list[list[int]] = [[]]

    def _build_upper(self) -> None:
        levels = self._levels
        del levels[1:]
        level = levels[0]
        while len(level) > 1:
            up = [0] * ((len(level) + 63) >> 6)
            for j, w in enumerate(level):
                if w:
                    up[j >> 6] |= 1 << (j & 63)
            levels.append(up)
            level = up

    def _grow(self, nbits: int) -> None:
        levels = self._levels
        n = max(1, (nbits + 63) >> 6)
        k = 0
        while True:
            level = levels[k]
            if len(level) < n:
                level.extend([0] * (n - len(level)))
            n = (len(level) + 63) >> 6
            if k + 1 == len(levels):
                if len(level) <= 1:
                    return
                up = [0] * n
                for j, w in enumerate(level):
                    if w:
                        up[j >> 6] |= 1 << (j & 63)
                levels.append(up)
            k += 1

    def add(self, i: int) -> None:
        """Insert index ``i``."""
        levels = self._levels
        if (i >> 6) >= len(levels[0]):
            self._grow(i + 1)
        for level in levels:
            w = i >> 6
            old = level[w]
            level[w] = old | (1 << (i & 63))
            if old:
                return
            i = w

    def discard(self, i: int) -> None:
        """Remove index ``i`` if present (idempotent)."""
        levels = self._levels
        if (i >> 6) >= len(levels[0]):
            return
        for level in levels:
            w = i >> 6
            new = level[w] & ~(1 << (i & 63))
            level[w] = new
            if new:
                return
            i = w

    def __contains__(self, i: int) -> bool:
        level = self._levels[0]
        w = i >> 6
        return 0 <= w < len(level) and bool((level[w] >> (i & 63)) & 1)

    def next_set(self, i: int) -> int:
        """Smallest member >= ``i``, or -1."""
        levels = self._levels
        if i < 0:
            i = 0
        k = 0
        depth = len(levels)
        while k < depth:
            level = levels[k]
            w = i >> 6
            if w >= len(level):
                return -1
            x = level[w] >> (i & 63)
            if x:
                i = i + (x & -x).bit_length() - 1
                while k:
                    k -= 1
                    x = levels[k][i]
                    i = (i << 6) + (x & -x).bit_length() - 1
                return i
            i = w + 1
            k += 1
        return -1

    def prev_set(self, i: int) -> int:
        """Largest member <= ``i``, or -1."""
        levels = self._levels
        if i < 0:
            return -1
        cap = len(levels[0]) << 6
        if i >= cap:
            i = cap - 1
            if i < 0:
                return -1
        k = 0
        depth = len(levels)
        while k < depth:
            level = levels[k]
            w = i >> 6
            x = level[w] & ((2 << (i & 63)) - 1)
            if x:
                i = (w << 6) + x.bit_length() - 1
                while k:
                    k -= 1
                    x = levels[k][i]
                    i = (i << 6) + x.bit_length() - 1
                return i
            if w == 0:
                return -1
            i = w - 1
            k += 1
        return -1

    def drop_words(self, d: int) -> None:
        """Drop the first ``d`` words (64*d indices); remaining indices shift down by 64*d."""
        self._levels[0] = self._levels[0][d:]
        self._build_upper()
