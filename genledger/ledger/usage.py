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

from genledger.parse.buckets import SIDE, SIDES, parts_of

# What a record is billed for, in genai-prices' usage keys: each side's whole (`input_tokens`
# every prompt token, cache reads and writes included: they are its more specific parts;
# `output_tokens` every generated one, reasoning included), then the buckets priced apart
# inside it (`parse.buckets`). Per key: the books' sum `priced_usage` reads (each sums a fact
# over the records that report a valid value), the position of its whole (None: a whole), and
# the field of a user's `[prices."MODEL"]` entry that prices it.
_PRICED = tuple(
    row
    for side in SIDES
    for row in (
        (side.price, side.stat, None, side.user_price),
        *((b.price, b.stat, side.name, b.user_price) for b in parts_of(side) if b.price),
    )
)
USAGE_KEYS: tuple[str, ...] = tuple(key for key, _, _, _ in _PRICED)
USAGE_SUMS: tuple[str, ...] = tuple(stat for _, stat, _, _ in _PRICED)
USER_FIELDS: tuple[str | None, ...] = tuple(user for _, _, _, user in _PRICED)
_WHOLE_AT = {side.name: USAGE_KEYS.index(side.price) for side in SIDES}
WHOLE_OF: tuple[int | None, ...] = tuple(
    None if side is None else _WHOLE_AT[side] for _, _, side, _ in _PRICED
)
WHOLES: tuple[int, ...] = tuple(_WHOLE_AT.values())
TIER_FACT = SIDE["input"].column  # the fact whose own value picks a record's tier


def priced_usage(sums: Mapping[str, int]) -> tuple[int, ...]:
    """The one map from what the books sum of some records to what they are billed for
    (`USAGE_KEYS`): today's prompt count holds its cached and cache-written tokens and the
    completion count its reasoning, as genai-prices' input and output do. It is linear, so
    it gives the same whether it maps each record or the records' sums."""
    return tuple(sums[stat] for stat in USAGE_SUMS)


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
