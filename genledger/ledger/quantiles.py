"""Output-length quantiles, mergeable like every other count: Apache DataSketches' KLL sketch.

Chosen by measurement over two t-digests (benchmarks/sketches.py, docs/performance.md): KLL
states its error (a normalised rank error of 1.33 % at k = 200, with 99 % confidence, for
any data and any order of merges), keeps the exact minimum and maximum, answers with values
it saw, serialises to ~5 kB at a million values and merges in microseconds.

Importing `datasketches` loads numpy (~0.1 s): more than a small refresh costs in all. So a
`Quantiles` keeps up to `PENDING_MAX` values exactly (`pending`) and its sketches serialised
(`parts`); values become a sketch, and parts one sketch, only when a file's summary holds too
many to keep (a big scan, which has loaded numpy anyway). Summaries read together (a
dataset's files, every dataset's) stand side by side (`union`), never compacted. Quantiles
are read from the parts' serialised items (the library's documented format: the items of
level `i` weigh `2**i`) plus the pending values, without the library: a weighted union of
sketches is within the largest of their rank errors, and pending values add none.
"""

from __future__ import annotations

import bisect
import itertools
import struct
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pybase64

K = 200  # the sketch's size parameter: rank error 1.33 % (99 % confidence)
RANK_ERROR = 0.0133  # kll_doubles_sketch.get_normalized_rank_error(200, False), rounded up
PENDING_MAX = 8192  # exact values kept before they become a sketch
PARTS_MAX = 8  # serialised sketches kept before they are merged into one
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}

_EMPTY, _SINGLE = 1, 4  # flag bits of the serialised form
_PREAMBLE_FULL = 5


def _library() -> Any:
    import datasketches

    return datasketches


def load() -> None:
    """Import the library (and numpy) now: before forking workers that will sketch, so that
    they share one import."""
    _library()


@dataclass(eq=False)
class Quantiles:
    """A mergeable summary of non-negative integers (output tokens per record)."""

    parts: tuple[bytes, ...] = ()
    pending: array[int] = field(default_factory=lambda: array("q"))

    @classmethod
    def of(cls, values: Iterable[int]) -> Quantiles:
        """The summary of `values`."""
        return cls((), array("q", values))._settled()

    @property
    def n(self) -> int:
        """How many values it summarises."""
        return len(self.pending) + sum(_count(p) for p in self.parts)

    def __add__(self, other: Quantiles) -> Quantiles:
        if not other.parts and not other.pending:
            return self
        if not self.parts and not self.pending:
            return other
        return Quantiles(self.parts + other.parts, self.pending + other.pending)._settled()

    @classmethod
    def union(cls, summaries: Iterable[Quantiles]) -> Quantiles:
        """Every summary's sketches and values side by side, never compacted: read for its
        `summary` alone (a weighted union is within the largest of its parts' rank errors),
        so a refresh that merges many datasets' summaries never loads the library."""
        parts: list[bytes] = []
        pending = array("q")
        for summary in summaries:
            parts += summary.parts
            pending += summary.pending
        return cls(tuple(parts), pending)

    def _settled(self) -> Quantiles:
        # Exact while few (a small file's summary equals a full scan's, bit for bit); a
        # sketch once there are many values or parts (a big scan: numpy is loaded by then).
        if len(self.pending) > PENDING_MAX or len(self.parts) > PARTS_MAX:
            return self.compacted()
        return self

    def compacted(self) -> Quantiles:
        """The same summary as one sketch (through the library)."""
        if not self.pending and len(self.parts) <= 1:
            return self
        lib = _library()
        sketch = lib.kll_doubles_sketch(K)
        for blob in self.parts:
            sketch.merge(lib.kll_doubles_sketch.deserialize(blob))
        if self.pending:
            import numpy as np

            sketch.update(np.frombuffer(self.pending, dtype=np.int64).astype(np.float64))
        return Quantiles((bytes(sketch.serialize()),), array("q"))

    def __eq__(self, other: object) -> bool:
        """The same sketches and the same exact values (in any order: merges reorder them)."""
        if not isinstance(other, Quantiles):
            return NotImplemented
        return self.parts == other.parts and sorted(self.pending) == sorted(other.pending)

    __hash__ = None  # type: ignore[assignment]

    def weighted(self) -> list[tuple[float, int]]:
        """Every retained value with its weight, sorted by value."""
        items = [(float(v), 1) for v in self.pending]
        for blob in self.parts:
            items += _items(blob)
        items.sort()
        return items

    def walked_summary(self) -> dict[str, int] | None:
        """`{p50, p90, p99, max}`: the smallest value whose rank reaches each fraction (the
        inclusive rank, as numpy's `inverted_cdf`), and the largest; None when empty. The
        definition: a walk of every value with its weight (`summary` finds the same)."""
        items = self.weighted()
        if not items:
            return None
        total = sum(w for _, w in items)
        out: dict[str, int] = {}
        for name, q in QUANTILES.items():
            out[name] = int(_rank_value(items, q * total))
        out["max"] = int(max([*self.pending, *(_maximum(p) for p in self.parts)]))
        return out

    def summary(self) -> dict[str, int] | None:
        """`walked_summary`, found by bisection: the exact values sorted by one C sort and
        the sketches' few items apart, never a (value, weight) pair per exact value (a no-op
        refresh reads ~100,000 of them over every dataset)."""
        exact = sorted(self.pending)
        kept = sorted(item for blob in self.parts for item in _items(blob))
        if not exact and not kept:
            return None
        sketch = [value for value, _ in kept]
        below = list(itertools.accumulate(weight for _, weight in kept))
        total = len(exact) + (below[-1] if below else 0)

        def rank(value: float) -> int:  # how many values are at most `value`, weighted
            at = bisect.bisect_right(sketch, value)
            return bisect.bisect_right(exact, value) + (below[at - 1] if at else 0)

        out: dict[str, int] = {}
        for name, q in QUANTILES.items():
            found = (_first(exact, rank, q * total), _first(sketch, rank, q * total))
            out[name] = int(min(v for v in found if v is not None))
        out["max"] = int(max([*exact[-1:], *(_maximum(p) for p in self.parts)]))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: serialised sketches and the pending values, base64. The values are
        written sorted (a merge of the runs loaded and added: linear in C), so a summary of
        many of them (a no-op's totals) sorts runs, not values (8.3 → 2.5 ms at 70,000)."""
        return {
            "parts": [pybase64.b64encode(p).decode() for p in self.parts],
            "pending": pybase64.b64encode(array("q", sorted(self.pending)).tobytes()).decode(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Quantiles:
        """Inverse of `to_dict`; raises ValueError on a damaged form."""
        parts = tuple(pybase64.b64decode(p, validate=True) for p in data["parts"])
        for blob in parts:
            _items(blob)  # a damaged sketch fails here, not in a later refresh
        pending = array("q")
        pending.frombytes(pybase64.b64decode(data["pending"], validate=True))
        return cls(parts, pending)


def _first(values: list[Any], rank: Callable[[float], int], reach: float) -> float | None:
    """The smallest of sorted `values` whose weighted rank reaches `reach` (None: none)."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if rank(values[mid]) >= reach:
            hi = mid
        else:
            lo = mid + 1
    return values[lo] if lo < len(values) else None


def _rank_value(items: list[tuple[float, int]], rank: float) -> float:
    seen = 0
    for value, weight in items:
        seen += weight
        if seen >= rank:
            return value
    return items[-1][0]


def _count(blob: bytes) -> int:
    """How many values a serialised sketch summarises."""
    if len(blob) < 8:
        raise ValueError("damaged sketch")
    flags = blob[3]
    if flags & _EMPTY:
        return 0
    if flags & _SINGLE:
        return 1
    return int(struct.unpack_from("<Q", blob, 8)[0])


def _maximum(blob: bytes) -> float:
    """The exact largest value a serialised sketch summarises (-inf when empty)."""
    flags = blob[3]
    if flags & _EMPTY:
        return float("-inf")
    if flags & _SINGLE:
        return float(struct.unpack_from("<d", blob, 8)[0])
    levels_n = blob[18]
    return float(struct.unpack_from("<d", blob, 20 + 4 * levels_n + 8)[0])


def _items(blob: bytes) -> list[tuple[float, int]]:
    """(value, weight) of each item a serialised `kll_doubles_sketch` retains."""
    if len(blob) < 8 or blob[2] != 15:  # the KLL family id
        raise ValueError("damaged sketch")
    flags = blob[3]
    if flags & _EMPTY:
        return []
    if flags & _SINGLE:
        return [(struct.unpack_from("<d", blob, 8)[0], 1)]
    if blob[0] != _PREAMBLE_FULL:
        raise ValueError("damaged sketch")
    levels_n = blob[18]
    levels = list(struct.unpack_from(f"<{levels_n}I", blob, 20))
    start = 20 + 4 * levels_n + 16  # after the levels, the minimum and the maximum
    count = (len(blob) - start) // 8
    values = struct.unpack_from(f"<{count}d", blob, start)
    bounds = [*levels, levels[0] + count]
    items = []
    for level in range(levels_n):
        weight = 1 << level
        lo, hi = bounds[level] - levels[0], bounds[level + 1] - levels[0]
        items += [(v, weight) for v in values[lo:hi]]
    return items
