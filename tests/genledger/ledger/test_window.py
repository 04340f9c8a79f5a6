"""The first and latest windows: ends merged in file order equal the ends of the whole, the
first window freezes once full, and drift names what moved from what to what."""

from __future__ import annotations

import itertools
from collections import Counter
from statistics import median_low
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from genledger.ledger.window import Ends, Windows, drift, window_block

ITEM = st.tuples(st.integers(0, 15), st.integers(-1, 50), st.sampled_from([None, "stop", "length"]))
# reasons as records write them, the name of a missing one among them
REASON = st.sampled_from([None, "stop", "length", "no finish reason", "tool_calls"])


def walked_block(items: list[Any]) -> dict[str, Any] | None:
    """The window block by its definition (docs/stats-json.md): each share a count of the
    records whose flag bit is set, the low median of the valid output counts, the reasons'
    shares, a missing reason named "no finish reason"."""
    if not items:
        return None
    n = len(items)
    block: dict[str, Any] = {"records": n}
    for bit, name in enumerate(("truncated", "empty", "failed", "refusal")):
        block[f"{name}_share"] = sum(1 for f, _, _ in items if f >> bit & 1) / n
    outputs = [v for _, v, _ in items if v >= 0]
    block["median_output_tokens"] = median_low(outputs) if outputs else None
    reasons = Counter("no finish reason" if r is None else r for _, _, r in items)
    block["finish_reasons"] = {r: c / n for r, c in sorted(reasons.items())}
    return block


@given(st.lists(st.tuples(st.integers(0, 15), st.integers(-1, 10**6), REASON), max_size=60))
def test_a_windows_block_is_its_definitions(items: list[Any]) -> None:
    assert window_block(items) == walked_block(items)


def ends_of(items: list, limit: int) -> Ends:
    head = items[:limit]
    return Ends(limit, head, None if len(items) <= limit else items[-limit:])


@given(st.lists(ITEM, max_size=40), st.lists(st.integers(0, 40), max_size=5), st.integers(1, 8))
def test_ends_merged_in_order_equal_the_ends_of_the_whole(items, cuts, limit) -> None:
    bounds = sorted({0, len(items), *(c % (len(items) + 1) for c in cuts)})
    total = Ends(limit)
    for a, b in itertools.pairwise(bounds):
        total = total + ends_of(items[a:b], limit)
    whole = ends_of(items, limit)
    assert total.head == whole.head and total.last == whole.last


def test_the_first_window_freezes_once_full_and_the_latest_follows_the_run() -> None:
    windows = Windows(3)
    windows.counted(ends_of([(0, 1, "a"), (0, 2, "b")], 3))
    windows.counted(ends_of([(0, 3, "c"), (0, 4, "d"), (0, 5, "e")], 3))
    assert [v for _, v, _ in windows.first] == [1, 2, 3]
    assert [v for _, v, _ in windows.latest] == [3, 4, 5]
    windows.counted(ends_of([(0, 6, "f")], 3))
    assert [v for _, v, _ in windows.first] == [1, 2, 3]
    assert [v for _, v, _ in windows.latest] == [4, 5, 6]
    assert Windows.from_dict(windows.to_dict()) == windows


def block(truncated: int, n: int = 100, median: int = 500) -> dict:
    items = [(1 if i < truncated else 0, median, "length" if i < truncated else "stop")
             for i in range(n)]  # fmt: skip
    found = window_block(items)
    assert found is not None
    return found


def test_a_share_that_doubles_and_rises_five_points_is_drift() -> None:
    assert drift(block(2), block(31)) == [
        "truncated share 2.0% → 31.0%",
        "finish length 2.0% → 31.0%",
    ]


def test_a_share_that_doubles_by_less_than_five_points_or_rises_without_doubling_is_not() -> None:
    assert drift(block(1), block(4)) == []  # doubled, +3 points
    assert drift(block(10), block(18)) == []  # +8 points, not doubled


def test_a_median_output_that_moves_by_thirty_percent_is_drift() -> None:
    assert drift(block(0, median=600), block(0, median=420)) == ["median output 600 → 420 tokens"]
    assert drift(block(0, median=600), block(0, median=430)) == []
