"""The stats_json asset's page lists what keeps it fresh: Dagster maps a sensor or a schedule
to the assets its job declares, and the refresh job declares stats_json as the asset it keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.remote_representation.external import RemoteRepository
from dagster._core.remote_representation.external_data import RepositorySnap
from dagster._core.remote_representation.handle import RepositoryHandle
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from assets.naming import STATS_KEY
from assets.refresh_job import REFRESH_JOB, build_refresh_job
from assets.spec import load_location
from automation.schedule import SCHEDULE_NAME
from automation.sensors import SENSOR_NAME, refresh_request
from definitions import build_defs
from genledger.config import ENV_DATA_ROOT, ENV_STATE_DIR, ENV_STATS_PATH, Config
from genledger.synth.tree import write_sample_tree

REPO = Path(__file__).resolve().parents[2]
LOADS = "from definitions import defs"  # the location as `dagster dev` loads it, from the env
TARGETING_QUERY = """
query Targeting($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) { assetKey { path }
    targetingInstigators { __typename ... on Schedule { name } ... on Sensor { name } } } }
"""


def remote_repository(tmp_path: Path) -> RemoteRepository:
    """The location's repository as the webserver sees it (built from its snapshot)."""
    root = write_sample_tree(tmp_path / "data", records=5)
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    defs = build_defs(load_location(config, env={}))
    snap = RepositorySnap.from_def(defs.get_repository_def())
    return RemoteRepository(snap, RepositoryHandle.for_test(), auto_materialize_use_sensors=True)


def test_the_file_sensor_is_listed_on_the_stats_json_asset(tmp_path: Path) -> None:
    remote = remote_repository(tmp_path)
    assert SENSOR_NAME in {s.name for s in remote.get_sensors_targeting(STATS_KEY)}


def test_the_schedule_is_listed_on_the_stats_json_asset(tmp_path: Path) -> None:
    remote = remote_repository(tmp_path)
    assert {s.name for s in remote.get_schedules_targeting(STATS_KEY)} == {SCHEDULE_NAME}


def test_only_stats_json_lists_the_schedule(tmp_path: Path) -> None:
    remote = remote_repository(tmp_path)
    others = [n.asset_key for n in remote.get_asset_node_snaps() if n.asset_key != STATS_KEY]
    assert others, "the sample tree has file assets"
    assert not any(remote.get_schedules_targeting(key) for key in others)


def test_the_refresh_job_stays_an_op_job(tmp_path: Path) -> None:
    """Declaring stats_json adds no asset step: a run is still the one op over the root."""
    root = write_sample_tree(tmp_path / "data", records=5)
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    job = build_refresh_job(load_location(config, env={}))
    assert not job.is_asset_job
    assert [node.name for node in job.graph.nodes] == ["refresh_data_root"]
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance)
        assert result.success
        assert STATS_KEY in {e.asset_key for e in result.get_asset_materialization_events()}


def test_the_asset_page_of_a_real_instance_names_the_sensor_and_the_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The webserver's own GraphQL (`targetingInstigators`, what the asset page's automations
    list shows) over a code server process loading this location."""
    root = write_sample_tree(tmp_path / "data", records=5)
    monkeypatch.setenv(ENV_DATA_ROOT, str(root))
    monkeypatch.setenv(ENV_STATS_PATH, str(tmp_path / "stats.json"))
    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path / "state"))
    module = tmp_path / "location.py"
    # the location as `dagster dev` loads it: `definitions.defs`, configured by the env
    module.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\nfrom definitions import *\n")
    (tmp_path / "home").mkdir()
    with (
        dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance,
        define_out_of_process_context(str(module), "defs", instance) as context,
    ):
        result = execute_dagster_graphql(
            context, TARGETING_QUERY, variables={"keys": [{"path": STATS_KEY.path}]}
        )
    (node,) = result.data["assetNodes"]
    listed: set[tuple[str, Any]] = {
        (i["__typename"], i["name"]) for i in node["targetingInstigators"]
    }
    assert ("Schedule", SCHEDULE_NAME) in listed
    assert ("Sensor", SENSOR_NAME) in listed


def test_every_run_the_sensor_requests_is_the_refresh_jobs() -> None:
    assert refresh_request("k").job_name == REFRESH_JOB
