"""The samples of a stats document (`genledger.ledger.metrics`) rendered as OpenMetrics text
by prometheus_client, for Prometheus and node_exporter's textfile collector.

Every family is a gauge: a `--full` refresh or a replaced file may lower a count, which a
counter must never do. Every declared family is in the text, with no sample when the stats
hold none. Imported only by a refresh that writes metrics and whose numbers changed: the
package's import (its HTTP server, urllib) costs more than the rendering.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from genledger.ledger.metrics import (
    CHANGED_FAMILY,
    DEFAULT_MAX_MODELS,
    Sample,
    families,
    generated_seconds,
    samples,
)


class SamplesCollector(Collector):
    """A prometheus_client collector over a list of samples: one gauge per declared family."""

    def __init__(self, rows: Sequence[Sample]) -> None:
        self.rows = rows

    def collect(self) -> Iterator[Metric]:
        """The gauges in declaration order, each with its samples in list order."""
        gauges = {
            f.name: GaugeMetricFamily(f.name, f.help, labels=list(f.labels)) for f in families()
        }
        for name, labels, value in self.rows:
            gauges[name].add_metric(list(labels), value)
        yield from gauges.values()


def render(rows: Sequence[Sample]) -> bytes:
    """The OpenMetrics text of samples (ends with `# EOF`)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SamplesCollector(rows))
    return generate_latest(registry)


def exposition(
    stats: Mapping[str, Any], max_models: int = DEFAULT_MAX_MODELS, changed: float | None = None
) -> bytes:
    """The OpenMetrics text of a stats document; `changed`: when a refresh last changed one of
    its numbers (seconds since the epoch), by default the document's own generated_at."""
    when = generated_seconds(stats) if changed is None else changed
    rows = samples(stats, max_models)
    return render([*rows, (CHANGED_FAMILY.name, (), when)] if when is not None else rows)
