"""The stats JSON as OpenMetrics text (docs/metrics.md), for Prometheus and node_exporter's
textfile collector: every value read from a written stats document, never counted again.

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

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

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
UP_FAMILY = Family(
    "genledger_stats_generated_timestamp_seconds", "When the stats were written", (), "generated_at"
)


def family_names() -> list[str]:
    """Every family name the writer can emit (the Grafana dashboard's queries use these)."""
    every = (
        *MODEL_FAMILIES,
        *DATASET_FAMILIES,
        *TOKENIZED_FAMILIES,
        *RUN_FAMILIES,
        HEALTH_FAMILY,
        CHECK_FAMILY,
        UP_FAMILY,
    )
    return [f.name for f in every]


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


class StatsCollector(Collector):
    """A prometheus_client collector over one stats document."""

    def __init__(self, stats: Mapping[str, Any], max_models: int = DEFAULT_MAX_MODELS) -> None:
        self.stats = stats
        self.max_models = max_models

    def collect(self) -> Iterator[Metric]:
        """One gauge family per declared family, in declaration order."""
        datasets: Mapping[str, Any] = self.stats.get("datasets") or {}
        for family in MODEL_FAMILIES:
            gauge = _gauge(family)
            for name, block in datasets.items():
                for model, entry in folded_models(
                    block.get("models") or {}, self.max_models
                ).items():
                    _add(gauge, [name, model], value_at(entry, family.stat))
            yield gauge
        for family in (*DATASET_FAMILIES, *TOKENIZED_FAMILIES):
            gauge = _gauge(family)
            for name, block in datasets.items():
                _add(gauge, [name], value_at(block, family.stat))
            yield gauge
        for family in RUN_FAMILIES:
            gauge = _gauge(family)
            _add(gauge, [], value_at(self.stats.get("totals"), family.stat))
            yield gauge
        yield self._health(datasets)
        yield self._checks(datasets)
        yield self._generated()

    def _generated(self) -> Metric:
        gauge = _gauge(UP_FAMILY)
        text = self.stats.get("generated_at")
        if isinstance(text, str):
            _add(gauge, [], datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())
        return gauge

    def _health(self, datasets: Mapping[str, Any]) -> Metric:
        gauge = _gauge(HEALTH_FAMILY)
        for name, block in datasets.items():
            for share, path in HEALTH_SHARES:
                _add(gauge, [name, share], value_at(block, path))
        return gauge

    def _checks(self, datasets: Mapping[str, Any]) -> Metric:
        gauge = _gauge(CHECK_FAMILY)
        for name, block in datasets.items():
            quality = block.get("quality") or {}
            for check in COUNTER_NAMES:
                severity = str(RULES_BY_NAME[check].severity)
                _add(gauge, [name, check, severity], value_at(quality, check))
        return gauge


def _gauge(family: Family) -> GaugeMetricFamily:
    return GaugeMetricFamily(family.name, family.help, labels=list(family.labels))


def _add(gauge: GaugeMetricFamily, labels: list[str], value: float | None) -> None:
    if value is not None:
        gauge.add_metric(labels, value)


def exposition(stats: Mapping[str, Any], max_models: int = DEFAULT_MAX_MODELS) -> bytes:
    """The OpenMetrics text of a stats document (ends with `# EOF`)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(stats, max_models))
    return generate_latest(registry)
