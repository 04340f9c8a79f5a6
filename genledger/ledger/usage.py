"""What a record is billed for, and what else its price depends on (docs/cost.md).

A record's price is linear in its usage within one price: its model, its provider and whether
it went through a batch API (its format), its date and time of day (price history, peak and
off-peak hours), and its tier (providers price a whole request at a higher rate once its input
passes a threshold: a 300k-token Claude prompt). The books (`genledger.ledger.books`) keep a
file's sums per (model, format, tier band, half-hour slot); records that share such a key
share a price, so pricing the key's summed usage once equals pricing each record.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

# genai-prices' usage keys, in the order `priced_usage` gives them. `input_tokens` is every
# prompt token (cache reads and writes included: they are its more specific parts), and
# `output_tokens` every generated one (reasoning included).
USAGE_KEYS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "output_reasoning_tokens",
)
# The books' sums `priced_usage` reads (`genledger.ledger.books`: each sums a fact over the
# records that report a valid value), and the fact whose own value picks a record's tier.
USAGE_SUMS = (
    "total_prompt",
    "total_cached_prompt",
    "total_cache_write",
    "total_comp",
    "total_reasoning",
)
TIER_FACT = "prompt_tokens"


def priced_usage(sums: Mapping[str, int]) -> tuple[int, int, int, int, int]:
    """The one map from what the books sum of some records to what they are billed for
    (`USAGE_KEYS`): today's prompt count holds its cached and cache-written tokens and the
    completion count its reasoning, as genai-prices' input and output do. It is linear, so
    it gives the same whether it maps each record or the records' sums."""
    return (
        sums["total_prompt"],
        sums["total_cached_prompt"],
        sums["total_cache_write"],
        sums["total_comp"],
        sums["total_reasoning"],
    )


# Every input size at which some price of the table changes tier (a request whose input is
# *above* a start pays that tier's rate on all its tokens). A record's band is how many starts
# its input is above; a model whose tiers start elsewhere is not priced (tests check the table).
TIER_STARTS = (32_000, 100_000, 128_000, 199_999, 200_000, 256_000, 272_000, 512_000, 524_288)
# Prices change at dates (UTC) and, for off-peak pricing, at times of day on the half hour.
SLOT_S = 1800
DAY_S = 86_400


def band(input_tokens: int) -> int:
    """The tier band of a request with this many input tokens."""
    return bisect_left(TIER_STARTS, input_tokens)


def band_input(which: int) -> int:
    """An input size inside band `which` (the band's smallest; 0 for the first)."""
    return 0 if which <= 0 else TIER_STARTS[which - 1] + 1


def slot(seconds: int | float) -> int:
    """The half-hour slot (since the epoch, UTC) of a POSIX time."""
    return int(seconds // SLOT_S)
