"""The stats_json asset's page lists what keeps it fresh: Dagster maps a sensor to the
assets of its jobs, and the file sensor names stats_json's own job beside the refresh job."""

from __future__ import annotations

from pathlib import Path

from dagster._core.remote_representation.external import RemoteRepository
from dagster._core.remote_representation.external_data import RepositorySnap
from dagster._core.remote_representation.handle import RepositoryHandle

from assets.naming import STATS_KEY
from assets.refresh_job import REFRESH_JOB
from assets.spec import load_location
from automation.sensors import SENSOR_NAME, refresh_request
from definitions import build_defs
from genledger.config import Config
from genledger.synth.tree import write_sample_tree


def test_the_file_sensor_is_listed_on_the_stats_json_asset(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data", records=5)
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    defs = build_defs(load_location(config, env={}))
    snap = RepositorySnap.from_def(defs.get_repository_def())
    remote = RemoteRepository(snap, RepositoryHandle.for_test(), auto_materialize_use_sensors=True)
    assert SENSOR_NAME in {s.name for s in remote.get_sensors_targeting(STATS_KEY)}


def test_every_run_the_sensor_requests_is_the_refresh_jobs() -> None:
    assert refresh_request("k").job_name == REFRESH_JOB
