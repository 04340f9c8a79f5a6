"""A dataset's first and latest windows of records, and what drifted between them.

Each record of a window is kept as (flags, output tokens, finish reason): the flags are the
bits of the books' trail conditions (truncated, empty, failed, refusal; `ledger.books`),
the output tokens -1 where the record has no valid count. A pass over rows keeps the first
and the last `limit` records (`Ends`, mergeable in file order); a dataset's record keeps its
first window (filled from the first records counted, then frozen) and its latest window
(the last `limit` records counted), across refreshes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

FLAGS = ("truncated", "empty", "failed", "refusal")  # bit i: the books' trail flag i
Item = tuple[int, int, Any]  # (flags, output tokens or -1, finish reason or None)
# output_drift: a share at least doubles and rises by at least 5 points, or the median
# output moves by at least 30 %
SHARE_FACTOR, SHARE_POINTS, MEDIAN_MOVE = 2.0, 0.05, 0.30


@dataclass
class Ends:
    """The first and last `limit` records of some rows (`tail` None: all are in `head`)."""

    limit: int = 1000
    head: list[Item] = field(default_factory=list)
    tail: list[Item] | None = None

    @property
    def last(self) -> list[Item]:
        """The last `limit` records."""
        return self.head if self.tail is None else self.tail

    def __add__(self, other: Ends) -> Ends:
        if not other.head:
            return self
        if not self.head:
            return other
        head = (self.head + other.head)[: self.limit]
        last = (self.last + other.last)[-self.limit :]
        whole = (
            self.tail is None
            and other.tail is None
            and len(head) == len(self.head) + len(other.head)
        )
        return Ends(self.limit, head, None if whole else last)


@dataclass
class Windows:
    """A dataset's first window (frozen once full) and its latest one."""

    limit: int = 1000
    first: list[Item] = field(default_factory=list)
    latest: list[Item] = field(default_factory=list)
    # the first window's block once it is full (frozen), kept with it in the record: a
    # refresh that counts more records does not work it out again (`first_block`)
    frozen: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def counted(self, ends: Ends) -> None:
        """Records counted after all those before, in order."""
        if len(self.first) < self.limit:
            self.first += ends.head[: self.limit - len(self.first)]
            self.frozen = None
        self.latest = (self.latest + ends.last)[-self.limit :]

    def first_block(self) -> dict[str, Any] | None:
        """`window_block` of the first window, kept once the window is full."""
        if self.frozen is not None and len(self.first) >= self.limit:
            return self.frozen
        block = window_block(self.first)
        self.frozen = block if len(self.first) >= self.limit else None
        return block

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (with the first window's block once it is full)."""
        stored = {"limit": self.limit, "first": self.first, "latest": self.latest}
        if len(self.first) >= self.limit:
            stored["first_block"] = self.first_block()
        return stored

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Windows:
        """Inverse of `to_dict`; raises on a damaged form."""

        def items(rows: Any) -> list[Item]:
            return [(int(f), int(v), None if r is None else str(r)) for f, v, r in rows]

        return cls(int(data["limit"]), items(data["first"]), items(data["latest"]))


BLOCK_KEYS = ("records", *(f"{name}_share" for name in FLAGS), "median_output_tokens",
              "finish_reasons")  # fmt: skip


def kept_block(block: Any, first: list[Item], limit: int) -> dict[str, Any] | None:
    """A stored first-window block, when it has `window_block`'s keys and types and the
    window is full; else None (it is then worked out again: it is only a saving)."""
    if len(first) < limit or type(block) is not dict or tuple(block) != BLOCK_KEYS:
        return None
    shares = [block[f"{name}_share"] for name in FLAGS]
    median, reasons = block["median_output_tokens"], block["finish_reasons"]
    if (
        block["records"] != len(first)
        or type(block["records"]) is not int
        or not all(type(share) is float for share in shares)
        or not (median is None or type(median) is int)
        or type(reasons) is not dict
        or not all(type(k) is str and type(v) is float for k, v in reasons.items())
    ):
        return None
    return block


def window_block(items: list[Item]) -> dict[str, Any] | None:
    """The shares, median output and finish-reason mix of one window (None: no record)."""
    if not items:
        return None
    n = len(items)
    block: dict[str, Any] = {"records": n}
    # each column counted or sorted by one C call (a window is 1,000 records, made twice a
    # dataset at every counting refresh): few distinct flags and reasons
    flags = Counter(map(_FLAGS, items))
    for bit, name in enumerate(FLAGS):
        block[f"{name}_share"] = sum(c for f, c in flags.items() if f >> bit & 1) / n
    outputs = sorted(map(_OUTPUT, items))
    valid = outputs[bisect_left(outputs, 0) :]  # -1: no valid count
    block["median_output_tokens"] = valid[(len(valid) - 1) // 2] if valid else None  # median_low
    reasons = Counter(map(_REASON, items))
    if None in reasons:
        reasons[NO_REASON] += reasons.pop(None)
    block["finish_reasons"] = {r: c / n for r, c in sorted(reasons.items())}
    return block


_FLAGS, _OUTPUT, _REASON = itemgetter(0), itemgetter(1), itemgetter(2)
NO_REASON = "no finish reason"  # how a record without one is named in the mix


def drift(first: dict[str, Any] | None, latest: dict[str, Any] | None) -> list[str]:
    """What moved from the first window to the latest, one phrase each (`output_drift`)."""
    if first is None or latest is None:
        return []
    moved = []
    for name in FLAGS:
        key = f"{name}_share"
        if _share_moved(first[key], latest[key]):
            moved.append(f"{name} share {_pct(first[key])} → {_pct(latest[key])}")
    a, b = first["median_output_tokens"], latest["median_output_tokens"]
    if a and b is not None and abs(b - a) / a >= MEDIAN_MOVE:
        moved.append(f"median output {a:,} → {b:,} tokens")
    for reason in sorted(set(first["finish_reasons"]) | set(latest["finish_reasons"])):
        was, now = (
            first["finish_reasons"].get(reason, 0.0),
            latest["finish_reasons"].get(reason, 0.0),
        )
        if _share_moved(was, now):
            moved.append(f"finish {reason} {_pct(was)} → {_pct(now)}")
    return moved


def _share_moved(was: float, now: float) -> bool:
    return now >= SHARE_FACTOR * was and now - was >= SHARE_POINTS - 1e-12


def _pct(share: float) -> str:
    return f"{share:.1%}"
