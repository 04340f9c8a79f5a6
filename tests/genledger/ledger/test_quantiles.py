"""Output-length quantiles: merged in any split, they equal a full scan within KLL's stated
error (exactly, while the values are few), and small refreshes never load the library."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.quantiles import QUANTILES, RANK_ERROR, Quantiles


def exact(values: list[int]) -> dict[str, int]:
    """The quantiles by numpy's inverted CDF (the smallest value whose rank reaches q)."""
    data = np.asarray(values)
    out = {k: int(np.quantile(data, q, method="inverted_cdf")) for k, q in QUANTILES.items()}
    return {**out, "max": int(data.max())}


def rank_error(values: list[int], found: int, q: float) -> float:
    """How far the rank of `found` is from q (0 when some rank of its equal values is q)."""
    ordered = np.sort(np.asarray(values))
    low = np.searchsorted(ordered, found, "left") / len(ordered)
    high = np.searchsorted(ordered, found, "right") / len(ordered)
    return 0.0 if low <= q <= high else min(abs(low - q), abs(high - q))


def merged(values: list[int], cuts: list[int], compact: list[bool]) -> Quantiles:
    """The values cut into parts (files, pieces, refreshes), some made sketches, added up."""
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    total = Quantiles()
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        part = Quantiles.of(values[a:b])
        if compact[i % len(compact)]:
            part = part.compacted()
        total = total + part
    return total


VALUES = st.lists(st.integers(0, 5000), min_size=1, max_size=400)


@given(VALUES, st.lists(st.integers(0, 400), max_size=6))
def test_exact_values_merged_in_any_split_equal_a_full_scan(
    values: list[int], cuts: list[int]
) -> None:
    assert merged(values, cuts, [False]).summary() == exact(values)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 4096), min_size=1, max_size=3000),
    st.lists(st.integers(0, 3000), max_size=8),
    st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_sketches_merged_in_any_split_are_within_the_stated_rank_error(
    values: list[int], cuts: list[int], compact: list[bool]
) -> None:
    found = merged(values, cuts, compact).summary()
    assert found is not None and found["max"] == max(values)  # the maximum is exact
    for name, q in QUANTILES.items():
        # the bound holds with 99 % confidence per quantile; twice it, all but never fails
        assert rank_error(values, found[name], q) <= 2 * RANK_ERROR, name


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.one_of(st.integers(0, 60), st.integers(0, 90_000)), max_size=1500),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_the_bisected_summary_is_the_walked_one(parts: list[tuple[list[int], bool]]) -> None:
    # Exact values and sketches side by side (a union, as the totals read them): the
    # bisection finds what the walk of every (value, weight) finds, ties included.
    summaries = [Quantiles.of(v).compacted() if sketch else Quantiles.of(v) for v, sketch in parts]
    union = Quantiles.union(summaries)
    assert union.summary() == union.walked_summary()


def test_a_million_values_merged_from_64_sketches_are_within_the_rank_error() -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(0, 20_000, 1_000_000).tolist()
    parts = [Quantiles.of(values[i::64]).compacted() for i in range(64)]
    total = Quantiles()
    for part in parts:
        total = total + part
    found = total.compacted().summary()
    assert found is not None and found["max"] == max(values)
    for name, q in QUANTILES.items():
        assert rank_error(values, found[name], q) <= RANK_ERROR, name


def test_the_serialised_form_round_trips_and_a_damaged_one_is_refused() -> None:
    summary = Quantiles.of(range(10_000)).compacted() + Quantiles.of([7, 8])
    again = Quantiles.from_dict(summary.to_dict())
    assert again == summary and again.summary() == summary.summary()
    broken = summary.to_dict()
    broken["parts"] = ["AAAA"]
    with pytest.raises(ValueError):
        Quantiles.from_dict(broken)


def test_an_empty_summary_has_no_quantiles() -> None:
    assert Quantiles().summary() is None
    assert (Quantiles() + Quantiles()).n == 0


def test_small_summaries_are_added_and_read_without_loading_the_library() -> None:
    code = (
        "import sys\n"
        "from genledger.ledger.quantiles import Quantiles\n"
        "q = Quantiles.of(range(500)) + Quantiles.of(range(300))\n"
        "assert q.summary()['max'] == 499\n"
        "print('datasketches' in sys.modules, 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_union_of_many_datasets_summaries_is_read_without_loading_the_library() -> None:
    # A no-op refresh reads the totals' quantiles over every dataset (more parts than
    # PARTS_MAX): the union keeps them side by side and reads them as they are.
    values = np.random.default_rng(9).integers(0, 20_000, 200_000).tolist()
    blobs = [Quantiles.of(values[i::20]).compacted().to_dict() for i in range(20)]
    code = (
        "import json, sys\n"
        "from genledger.ledger.quantiles import Quantiles\n"
        "parts = [Quantiles.from_dict(d) for d in json.loads(sys.stdin.read())]\n"
        "found = Quantiles.union([*parts, Quantiles.of([3, 4])]).summary()\n"
        "print(json.dumps([found, 'datasketches' in sys.modules, 'numpy' in sys.modules]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(blobs), capture_output=True, text=True
    )
    found, sketches, numpy = json.loads(run.stdout or run.stderr)
    assert (sketches, numpy) == (False, False)
    values += [3, 4]
    assert found["max"] == max(values)
    for name, q in QUANTILES.items():
        assert rank_error(values, found[name], q) <= RANK_ERROR, name
