"""Tokenized training samples (SpecForge / EAGLE-3 style): token and loss-mask facts."""

from __future__ import annotations

from typing import Any

from genledger.parse.schema import TOKENIZED, Facts


def unwrap(value: Any) -> list[Any] | None:
    """A list of ids, with one level of `[[...]]` nesting (a saved [1, L] tensor) flattened."""
    if not isinstance(value, list):
        return None
    if value and all(isinstance(row, list) for row in value):
        return [item for row in value for item in row]
    return value


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # what a count column (Int64) can hold


def mask_sum(mask: list[Any]) -> int | None:
    """Sum of a loss mask; the 0/1 case is counted in C, anything else summed numerically.
    None when the sum is no 64-bit count (values far from 0/1): the table could not hold it."""
    ones = mask.count(1)
    if ones + mask.count(0) == len(mask):
        return ones
    total = int(sum(v for v in mask if isinstance(v, int | float) and not isinstance(v, bool)))
    return total if INT64_MIN <= total <= INT64_MAX else None


def tokenized_facts(obj: dict[str, Any]) -> Facts:
    """Lengths and trainable-token count of one tokenized record."""
    ids = unwrap(obj.get("input_ids"))
    mask = unwrap(obj.get("loss_mask"))
    return TOKENIZED.make(  # type: ignore[no-any-return]
        n_tokens=None if ids is None else len(ids),
        loss_len=None if mask is None else len(mask),
        loss_sum=None if mask is None else mask_sum(mask),
    )
