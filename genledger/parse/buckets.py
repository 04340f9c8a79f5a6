"""The usage buckets, stated once (docs/formats.md, "Usage buckets").

A record's usage is two wholes (`SIDES`: every input token, every output token) and the
buckets inside them (`BUCKETS`), which never overlap: a side's *declared* buckets are read from
the paths a format declaration gives under their column's name, and its one *rest* bucket is
what its whole leaves over. Each row says everything the rest of genledger needs of a bucket:
its facts column (`parse.schema`), how the audit names it (`parse.usage`), how a stream's
events combine it (`parse.streams`), the stats JSON fields that sum it (`ledger.books`, then
`ledger.stats` and `ledger.schema`), its genai-prices usage key and the user's price of it
(`ledger.usage`, `ledger.prices`), its OpenTelemetry GenAI metric (`ledger.metrics`), whether
the per-model block splits it (`ledger.cost`) and its Dagster metadata label
(`assets/metadata.py`). Adding a bucket is a row here and its paths in the declarations.

This module imports nothing of genledger: the facts schema is built from it.
"""

from __future__ import annotations

from dataclasses import dataclass

# How a stream's events combine a count: the running total's last value, or the sum of deltas.
MERGES = ("last", "sum")


@dataclass(frozen=True)
class Side:
    """A whole: every input or every output token of a record."""

    name: str  # "input" | "output"
    column: str  # the declared facts column holding the whole
    audit: str  # how the audit names the whole in a finding
    stat: str  # the stats JSON field summing it
    price: str  # genai-prices' usage key
    user_price: str  # the field of a user's `[prices."MODEL"]` entry pricing it
    metric: str  # OpenTelemetry GenAI metric (as OpenMetrics names it)
    metric_help: str
    merge: str = "last"  # every provider's stream reports running totals (docs/formats.md)
    merge_by_family: tuple[tuple[str, str], ...] = ()  # (stream family, merge) where it differs


@dataclass(frozen=True)
class Bucket:
    """One usage bucket: a part of a side's whole, never overlapping another."""

    name: str
    meaning: str
    side: str  # the `Side` whose whole holds it
    column: str  # the facts column holding it
    declared: bool  # read from a format's field (else: the side's rest, whole - declared parts)
    audit: str  # how the audit names it in a finding
    stat: str  # the stats JSON field summing it over the records that report it
    known: str  # the tally key counting those records (the stat is null when none does)
    label: str  # the Dagster metadata label its sum is plotted under, beside the others
    price: str | None = None  # genai-prices' usage key, where priced apart from its whole
    user_price: str | None = None  # the field of a user's price entry pricing it
    metric: str | None = None  # OpenTelemetry GenAI metric (as OpenMetrics names it)
    metric_help: str = ""
    by_model: bool = False  # the per-model block (and its metric) splits it
    unitemised: bool = False  # a reported total above the itemised counts is counted here
    merge: str = "last"  # how a stream's events combine it (`MERGES`)
    merge_by_family: tuple[tuple[str, str], ...] = ()  # (stream family, merge) where it differs


SIDES: tuple[Side, ...] = (
    Side("input", "prompt_tokens", "prompt", "total_prompt", "input_tokens", "input",
         "gen_ai_usage_input_tokens", "Input (prompt) tokens"),
    Side("output", "completion_tokens", "completion", "total_comp", "output_tokens", "output",
         "gen_ai_usage_output_tokens", "Output tokens, reasoning included"),
)  # fmt: skip

# In the order the facts schema and the stats JSON list them: the declared ones, then the rests.
BUCKETS: tuple[Bucket, ...] = (
    Bucket(
        "output_reasoning", "reasoning tokens (a part of completion), where reported",
        side="output", column="reasoning_tokens", declared=True, audit="reasoning_tokens",
        stat="total_reasoning", known="n_reasoning", label="bucket/output_reasoning",
        price="output_reasoning_tokens", metric="gen_ai_usage_reasoning_output_tokens",
        metric_help="Output tokens spent on reasoning", by_model=True, unitemised=True,
    ),
    Bucket(
        "input_cache_read", "prompt tokens read from a cache (a part of prompt), where reported",
        side="input", column="cached_tokens", declared=True, audit="cached",
        stat="total_cached_prompt", known="n_cached", label="bucket/input_cache_read",
        price="cache_read_tokens", user_price="cache_read",
        metric="gen_ai_usage_cache_read_input_tokens",
        metric_help="Input tokens read from the provider's cache", by_model=True,
    ),
    Bucket(
        "input_cache_write", "prompt tokens written to a cache (a part of prompt), where "
        "reported", side="input", column="cache_write_tokens", declared=True,
        audit="cache_write", stat="total_cache_write", known="n_cache_write",
        label="bucket/input_cache_write", price="cache_write_tokens", user_price="cache_write",
        metric="gen_ai_usage_cache_creation_input_tokens",
        metric_help="Input tokens written to the provider's cache",
    ),
    Bucket(
        "input_uncached", "prompt tokens neither read from nor written to a cache (prompt - "
        "cached - cache_write)", side="input", column="input_uncached", declared=False,
        audit="uncached", stat="total_input_uncached", known="n_input_uncached",
        label="bucket/input_uncached",
    ),
    Bucket(
        "output_visible", "output tokens not reported as reasoning (completion - reasoning)",
        side="output", column="output_visible", declared=False, audit="visible",
        stat="total_output_visible", known="n_output_visible", label="bucket/output_visible",
    ),
)  # fmt: skip

SIDE = {side.name: side for side in SIDES}
DECLARED: tuple[Bucket, ...] = tuple(b for b in BUCKETS if b.declared)
RESTS: tuple[Bucket, ...] = tuple(b for b in BUCKETS if not b.declared)
UNITEMISED: Bucket = next(b for b in BUCKETS if b.unitemised)
# The counts of a record's usage the stream merge, the audit and the books read: wholes first.
USAGE_COLUMNS: tuple[str, ...] = (*(s.column for s in SIDES), *(b.column for b in BUCKETS))


def merge_in(row: Side | Bucket, family: str) -> str:
    """How a stream of `family` combines a whole's or a bucket's count."""
    return dict(row.merge_by_family).get(family, row.merge)


def parts_of(side: Side) -> tuple[Bucket, ...]:
    """The declared buckets inside a side's whole."""
    return tuple(b for b in DECLARED if b.side == side.name)


def rest_of(side: Side) -> Bucket:
    """The side's rest bucket: its whole less its declared parts."""
    return next(b for b in RESTS if b.side == side.name)


def check() -> None:
    """The table is whole: each side has one rest, one bucket takes the unitemised output, a
    merge is one of `MERGES`, names are unique."""
    for side in SIDES:
        if sum(1 for b in RESTS if b.side == side.name) != 1:
            raise ValueError(f"side {side.name}: exactly one rest bucket")
    if sum(1 for b in BUCKETS if b.unitemised) != 1 or not UNITEMISED.declared:
        raise ValueError("exactly one declared bucket takes the unitemised output")
    for name in ("name", "column", "stat", "known", "label", "audit"):
        values = [getattr(b, name) for b in BUCKETS]
        if len(set(values)) != len(values):
            raise ValueError(f"buckets: a {name} is used twice")
    for bucket in BUCKETS:
        if bucket.side not in SIDE:
            raise ValueError(f"bucket {bucket.name}: no side {bucket.side!r}")
    rows: tuple[Side | Bucket, ...] = (*SIDES, *BUCKETS)
    for row in rows:
        if any(m not in MERGES for m in (row.merge, *(m for _, m in row.merge_by_family))):
            raise ValueError(f"{row.name}: a merge is none of {MERGES}")


check()
