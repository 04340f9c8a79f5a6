"""What the OpenMetrics text of a stats document holds (docs/metrics.md): the families and the
samples, every value read from a written stats document, never counted again. Rendering the
samples is prometheus_client's (`genledger.ledger.openmetrics`); this module does not import
it, so a refresh can tell whether the numbers changed without paying its import.

Token families take OpenTelemetry's GenAI names (`gen_ai.usage.input_tokens` becomes
`gen_ai_usage_input_tokens`) with `dataset` and `model` labels; the rest is `genledger_*`.
Every family is a gauge: a `--full` refresh or a replaced file may lower a count, which a
counter must never do. A value the stats JSON holds as null (unknown) has no sample: a
missing series, never a zero.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from genledger.parse.buckets import BUCKETS, SIDES
from genledger.rules.catalogue import COUNTER_NAMES, RULES_BY_NAME

DEFAULT_MAX_MODELS = 20  # model labels per dataset before the rest fold into `other`
OTHER_MODEL = "other"


@dataclass(frozen=True)
class Family:
    """One exported family: its name, help text, labels and where its value lies."""

    name: str
    help: str
    labels: tuple[str, ...]
    stat: str  # a key of a block, or a dotted path into it


BY_MODEL = ("dataset", "model")
# The usage families, by the GenAI conventions' names (`parse.buckets`): each side's whole and
# the buckets the per-model block splits, per model; the other buckets named, per dataset.
USAGE_BY_MODEL = (
    *(Family(s.metric, s.metric_help, BY_MODEL, s.stat) for s in SIDES),
    *(
        Family(b.metric, b.metric_help, BY_MODEL, b.stat)
        for b in BUCKETS
        if b.metric and b.by_model
    ),
)
USAGE_BY_DATASET = tuple(
    Family(b.metric, b.metric_help, ("dataset",), b.stat)
    for b in BUCKETS
    if b.metric and not b.by_model
)
# Per model of a dataset (the `models` block).
MODEL_FAMILIES = (
    *USAGE_BY_MODEL,
    Family("genledger_model_records_done", "Records counted, by model", BY_MODEL, "n_done"),
    Family("genledger_model_cost_usd", "Cost so far in USD, by model", BY_MODEL, "cost_usd"),
)
# Per dataset: the dataset block's own stats (the models block splits no cache writes).
DATASET_FAMILIES = (
    *USAGE_BY_DATASET,
    Family(
        "genledger_records_done", "Records counted (responses or samples)", ("dataset",), "n_done"
    ),
    Family(
        "genledger_records_expected", "Records expected (prompt lines)", ("dataset",), "n_prompts"
    ),
    Family(
        "genledger_progress_ratio", "Records done over records expected", ("dataset",), "progress"
    ),
    Family("genledger_cost_usd", "Cost so far in USD", ("dataset",), "cost_usd"),
    Family(
        "genledger_cost_projected_usd",
        "Cost in USD once every expected record is done",
        ("dataset",),
        "cost_projected_usd",
    ),
    Family(
        "genledger_output_tokens_per_second",
        "Output tokens per second over the recent window",
        ("dataset",),
        "rate.comp_tokens_per_s",
    ),
    Family(
        "genledger_records_per_second",
        "Records per second over the recent window",
        ("dataset",),
        "rate.records_per_s",
    ),
    Family(
        "genledger_eta_seconds",
        "Seconds until every expected record is done",
        ("dataset",),
        "rate.eta_s",
    ),
)
# Per dataset: its tokenized samples (training data: no model, no usage).
TOKENIZED_FAMILIES = (
    Family("genledger_tokenized_samples", "Tokenized samples", ("dataset",), "n_tokenized"),
    Family(
        "genledger_tokenized_tokens",
        "Tokens of the tokenized samples",
        ("dataset",),
        "total_tokens",
    ),
    Family(
        "genledger_tokenized_loss_tokens",
        "Tokens trained on (loss_mask 1)",
        ("dataset",),
        "total_loss_tokens",
    ),
    Family(
        "genledger_tokenized_supervised_ratio",
        "Tokens trained on over all tokens",
        ("dataset",),
        "supervised_share",
    ),
)
# Over the whole run (ratios and ETAs do not add up over datasets).
RUN_FAMILIES = (
    Family("genledger_run_progress_ratio", "Records done over expected, whole run", (), "progress"),
    Family("genledger_run_eta_seconds", "Seconds until the whole run is done", (), "rate.eta_s"),
    Family("genledger_run_cost_usd", "Cost so far in USD, whole run", (), "cost_usd"),
)
# Run-health shares of a dataset: (label, dotted path in its block).
HEALTH_SHARES = (
    ("truncated", "health.truncated_share"),
    ("duplicate", "health.duplicate_share"),
    ("latest_empty", "health.latest_window.empty_share"),
    ("latest_failed", "health.latest_window.failed_share"),
    ("latest_refusal", "health.latest_window.refusal_share"),
)
HEALTH_FAMILY = Family(
    "genledger_health_share", "Run-health shares of a dataset", ("dataset", "share"), "health"
)
CHECK_FAMILY = Family(
    "genledger_check_failures",
    "Records or files failing a check (0 when clean)",
    ("dataset", "check", "severity"),
    "quality",
)
# Not `generated_at` of every refresh: a refresh that changes no number keeps the previous
# text (`genledger.refresh.metrics`), so the file stays the same and its import is not paid.
CHANGED_FAMILY = Family(
    "genledger_stats_changed_timestamp_seconds",
    "When a refresh last changed an exported number (that refresh's generated_at)",
    (),
    "generated_at",
)


Sample = tuple[str, tuple[str, ...], float]  # (family name, label values, value)


def families() -> tuple[Family, ...]:
    """Every family the writer emits, in the order of the text."""
    return (
        *MODEL_FAMILIES,
        *DATASET_FAMILIES,
        *TOKENIZED_FAMILIES,
        *RUN_FAMILIES,
        HEALTH_FAMILY,
        CHECK_FAMILY,
        CHANGED_FAMILY,
    )


def family_names() -> list[str]:
    """Every family name the writer can emit (the Grafana dashboard's queries use these)."""
    return [f.name for f in families()]


def value_at(block: Mapping[str, Any] | None, path: str) -> float | None:
    """The number at a dotted path of a block; None where any step is missing or null."""
    value: Any = block
    for step in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def folded_models(models: Mapping[str, Any], limit: int) -> dict[str, dict[str, Any]]:
    """At most `limit` models by records done (then name); the rest summed as `other`
    (a stat stays null only when it is null in every folded model)."""
    ranked = sorted(models, key=lambda m: (-(value_at(models[m], "n_done") or 0), m))
    kept = {m: dict(models[m]) for m in ranked[:limit]}
    rest = ranked[limit:]
    if rest:
        other = kept.setdefault(OTHER_MODEL, {})  # a model named "other" absorbs the rest
        for family in MODEL_FAMILIES:
            values = [value_at(entry, family.stat) for entry in (other, *map(models.get, rest))]
            known = [v for v in values if v is not None]
            other[family.stat] = sum(known) if known else None
    return kept


def samples(stats: Mapping[str, Any], max_models: int = DEFAULT_MAX_MODELS) -> list[Sample]:
    """Every sample of the numbers, family by family in declaration order, the changed-at
    time apart (the stats say when they were made, not when the numbers last changed); a null
    stat has none."""
    return list(_all(stats, max_models))


def _all(stats: Mapping[str, Any], max_models: int) -> Iterator[Sample]:
    datasets: Mapping[str, Any] = stats.get("datasets") or {}
    for family in MODEL_FAMILIES:
        for name, block in datasets.items():
            for model, entry in folded_models(block.get("models") or {}, max_models).items():
                yield from _one(family, (name, model), value_at(entry, family.stat))
    for family in (*DATASET_FAMILIES, *TOKENIZED_FAMILIES):
        for name, block in datasets.items():
            yield from _one(family, (name,), value_at(block, family.stat))
    for family in RUN_FAMILIES:
        yield from _one(family, (), value_at(stats.get("totals"), family.stat))
    for name, block in datasets.items():
        for share, path in HEALTH_SHARES:
            yield from _one(HEALTH_FAMILY, (name, share), value_at(block, path))
    for name, block in datasets.items():
        quality = block.get("quality") or {}
        for check in COUNTER_NAMES:
            severity = str(RULES_BY_NAME[check].severity)
            yield from _one(CHECK_FAMILY, (name, check, severity), value_at(quality, check))


def _one(family: Family, labels: tuple[str, ...], value: float | None) -> Iterator[Sample]:
    if value is not None:
        yield family.name, labels, value


def generated_seconds(stats: Mapping[str, Any]) -> float | None:
    """A stats document's generated_at in seconds since the epoch (None without one)."""
    text = stats.get("generated_at")
    if not isinstance(text, str):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
