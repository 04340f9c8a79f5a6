"""The refresh job (what the file sensor and the schedule run) writes the metrics beside the
stats JSON, from the same document."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import orjson
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from assets.refresh_job import build_refresh_job
from assets.spec import METRICS_NAME
from genledger.synth.tree import write_sample_tree

from .conftest import location_for


def test_the_refresh_job_writes_the_metrics_beside_the_stats_json(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data", records=12)
    location = location_for(root, tmp_path / "out")
    stats_path = location.config.stats_path
    assert stats_path is not None
    metrics = stats_path.parent / METRICS_NAME
    assert location.config.metrics_path == metrics
    with dg.instance_for_test() as instance:
        assert build_refresh_job(location).execute_in_process(instance=instance).success
    stats = orjson.loads(stats_path.read_bytes())
    done = {
        sample.labels["dataset"]: sample.value
        for family in text_string_to_metric_families(metrics.read_text())
        if family.name == "genledger_records_done"
        for sample in family.samples
    }
    assert done == {name: block["n_done"] for name, block in stats["datasets"].items()}
