"""A chain of a file's pieces equals adding them one by one, and lets each go once added."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger.chain import Chain, chained
from genledger.ledger.tally import FileTally

from .test_tally import mixed_records, tally


def pieces(records: list, cuts: list[int]) -> tuple[list[FileTally], list[int]]:
    """The records cut at `cuts`, each piece numbering its lines from 1 (as one read from the
    middle of a file does), and the shifts that number them as the whole file."""
    bounds = [0, *sorted(cuts), len(records)]
    parts = [
        tally(records[a:b], first_line=a + 1, numbered_from=1) if b > a else FileTally()
        for a, b in itertools.pairwise(bounds)
    ]
    return parts, bounds[:-1]


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12),
    seed=st.integers(min_value=0, max_value=5),
)
def test_a_chain_of_pieces_equals_adding_them_one_by_one(cuts: list[int], seed: int) -> None:
    records = mixed_records(60, seed)
    parts, shifts = pieces(records, cuts)
    one_by_one = sum(
        (part.shifted(shift) for part, shift in zip(parts, shifts, strict=True)), FileTally()
    )
    given_ = list(parts)
    joined = chained(given_, list(shifts))
    assert given_ == []  # emptied: each piece can be freed once added
    assert joined == one_by_one
    assert joined.to_dict() == one_by_one.to_dict() == tally(records).to_dict()
    assert joined.trail == one_by_one.trail == tally(records).trail


def test_a_chain_copies_the_lists_and_leaves_the_pieces_as_they_were() -> None:
    records = mixed_records(30, seed=3)
    parts, shifts = pieces(records, [10, 20])
    before = [part.to_dict() for part in parts]
    chain = Chain()
    for part, shift in zip(parts, shifts, strict=True):
        chain.add(part, shift)
    whole = chain.tally()
    assert whole.to_dict() == tally(records).to_dict()
    assert [part.to_dict() for part in parts] == before
    assert all(part.ids.data is not whole.ids.data for part in parts)
