"""Tokenized samples: input_ids and loss_mask, [[...]] unwrapped once (docs/formats.md)."""

from __future__ import annotations

from typing import Any

import pytest

from genledger.parse.tokenized import mask_sum, tokenized_facts, unwrap


def test_flat_lists_are_kept_and_one_nesting_level_is_unwrapped() -> None:
    assert unwrap([1, 2, 3]) == [1, 2, 3]
    assert unwrap([[1, 2, 3]]) == [1, 2, 3]
    assert unwrap([[]]) == []
    assert unwrap([]) == []


def test_values_that_are_not_lists_give_nothing() -> None:
    assert unwrap(None) is None
    assert unwrap("1 2 3") is None
    assert unwrap(7) is None


def test_loss_mask_sum_counts_the_ones() -> None:
    assert mask_sum([0, 0, 1, 1, 1]) == 3
    assert mask_sum([0, 0]) == 0
    assert mask_sum([]) == 0


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"input_ids": [5, 6, 7, 8], "loss_mask": [0, 0, 1, 1]}, (4, 4, 2)),
        ({"input_ids": [[5, 6, 7, 8]], "loss_mask": [[0, 1, 1, 1]]}, (4, 4, 3)),
        ({"input_ids": [[5, 6, 7]], "loss_mask": [0, 1, 1]}, (3, 3, 2)),
        ({"input_ids": [5, 6, 7]}, (3, None, None)),
        ({"loss_mask": [1, 1]}, (None, 2, 2)),
        ({"input_ids": None, "loss_mask": None}, (None, None, None)),
        ({"input_ids": []}, (0, None, None)),
        ({"input_ids": [[]], "loss_mask": [[]]}, (0, 0, 0)),
        ({"input_ids": [1, 2, 3], "loss_mask": [0, 1]}, (3, 2, 1)),
    ],
)
def test_tokenized_facts_are_lengths_and_trainable_tokens(
    record: dict[str, Any], expected: tuple[int | None, ...]
) -> None:
    facts = tokenized_facts(record)
    assert (facts.n_tokens, facts.loss_len, facts.loss_sum) == expected
