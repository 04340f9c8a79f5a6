"""The first and latest windows: ends merged in file order equal the ends of the whole, the
first window freezes once full, and drift names what moved from what to what."""

from __future__ import annotations

import itertools
from collections import Counter
from statistics import median_low
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from genledger.ledger.records import DatasetRecord
from genledger.ledger.window import BLOCK_KEYS, Ends, Windows, drift, window_block

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


@given(st.lists(st.lists(ITEM, max_size=8), max_size=6), st.integers(1, 8))
def test_the_first_blocks_kept_equal_the_blocks_of_the_first_window(batches, limit) -> None:
    # counted batch by batch, and through the stored record between batches (the block kept
    # once the window is full): always the block of the first window as it then stands
    windows = Windows(limit)
    for batch in batches:
        windows.counted(ends_of(batch, limit))
        assert windows.first_block() == walked_block(windows.first)
        stored = windows.to_dict()
        assert ("first_block" in stored) == (len(windows.first) >= limit)
        windows = stored_and_read(windows)
        assert windows.first_block() == walked_block(windows.first)


def stored_and_read(windows: Windows) -> Windows:
    """`windows` written into a state record and read back, as a refresh does."""
    record = DatasetRecord("ds", "/data", signature="sig", windows=windows)
    return DatasetRecord.from_bytes(record.to_bytes(), "ds", "/data", "sig").windows


INT = st.integers(-(2**63), 2**63 - 1)  # what orjson writes
DAMAGE = st.one_of(
    st.none(), INT, st.floats(allow_nan=False), st.text(max_size=4), st.lists(INT, max_size=2),
    st.dictionaries(st.sampled_from(["records", "truncated_share", "finish_reasons", "x"]),
                    st.one_of(INT, st.floats(allow_nan=False), st.none()), max_size=3),
)  # fmt: skip


def well_typed(key: str, value: Any) -> bool:
    """A value of the type a block holds at `key` (such damage is trusted, as a damaged
    window's items of the right types are)."""
    if key == "records":
        return type(value) is int
    if key == "median_output_tokens":
        return value is None or type(value) is int
    if key == "finish_reasons":
        return type(value) is dict and all(type(v) is float for v in value.values())
    return type(value) is float


@given(st.lists(ITEM, min_size=3, max_size=6), DAMAGE, st.sampled_from(list(BLOCK_KEYS)))
def test_a_stored_block_of_the_wrong_shape_is_worked_out_again(items, damage, key) -> None:
    windows = Windows(3)
    windows.counted(ends_of(items, 3))
    whole = orjson.loads(DatasetRecord("ds", "/d", signature="s", windows=windows).to_bytes())
    spoilt = [damage, {k: v for k, v in whole["windows"]["first_block"].items() if k != key}]
    if not well_typed(key, damage):
        spoilt.append({**whole["windows"]["first_block"], key: damage})
    for block_ in spoilt:
        whole["windows"]["first_block"] = block_
        read = DatasetRecord.from_bytes(orjson.dumps(whole), "ds", "/d", "s").windows
        assert read.first == windows.first
        assert read.first_block() == walked_block(windows.first)
