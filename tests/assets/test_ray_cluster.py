"""The refresh op scans on a Ray cluster when `[engine] ray` is set, with its progress in the
run's log, and writes the stats JSON a local refresh writes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import dagster as dg
import orjson
import pytest

from assets.ray_cluster import RayCluster
from assets.refresh_job import build_refresh_job
from genledger.config import Config, EngineSettings
from genledger.refresh.collect import refresh
from genledger.synth.tree import write_sample_tree

from ..genledger.refresh.ray_nodes import Cluster, ray_cluster
from ..genledger.refresh.test_ray_engine import without_timing
from .conftest import location_for

pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with ray_cluster(workers=1) as running:
        yield running


def test_the_refresh_op_scans_on_the_configured_cluster_and_logs_its_progress(
    cluster: Cluster, tmp_path: Path
) -> None:
    root = write_sample_tree(tmp_path / "data", records=400)
    location = location_for(root, tmp_path / "dagster")
    engine = EngineSettings(ray=cluster.address)
    location = replace(location, config=replace(location.config, engine=engine))
    with dg.instance_for_test() as instance:
        result = build_refresh_job(location).execute_in_process(instance=instance)
        assert result.success
        logged = [e.user_message for e in instance.all_logs(result.run_id)]
    progress = [m for m in logged if m.startswith(f"Ray scan on {cluster.address}:")]
    assert progress, logged
    done, total = progress[-1].split(": ")[1].split()[0].split("/")
    assert done == total and int(total) >= 4
    local = Config(data_root=root, stats_path=tmp_path / "l" / "s.json", state_dir=tmp_path / "l")
    assert location.config.stats_path is not None
    written = orjson.loads(location.config.stats_path.read_bytes())
    assert without_timing(written) == without_timing(refresh(local).stats)


def test_without_an_address_the_op_scans_on_this_machine() -> None:
    config = Config()
    none = RayCluster()
    assert none.configured(config) is config
    assert none.progress(dg.get_dagster_logger()) is None  # type: ignore[arg-type]
    assert RayCluster(address="auto").configured(config).engine.ray == "auto"
