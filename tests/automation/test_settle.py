"""Settling: a dataset whose latest materialization lacks its check results is run once more."""

from __future__ import annotations

import dagster as dg
import pytest

from assets.naming import DATASET_TAG, STATS_KEY
from assets.spec import Location
from automation.sensors import build_file_sensor
from automation.settle import STATS_OWNER, unsettled
from definitions import build_defs


@pytest.fixture
def instance():
    """A temporary Dagster instance."""
    with dg.instance_for_test() as inst:
        yield inst


def materialize_all(location: Location, instance: dg.DagsterInstance) -> None:
    """One run of every asset and check."""
    job = build_defs(location).resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(instance=instance).success


def tick(location: Location, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    result = build_file_sensor(location)(dg.build_sensor_context(instance=instance, cursor=cursor))
    assert isinstance(result, dg.SensorResult)
    return result


def test_after_one_run_of_everything_nothing_is_unsettled(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    materialize_all(sample_location, instance)
    assert unsettled(instance, sample_location.specs) == {}


def test_a_materialization_without_its_checks_is_unsettled_and_rerun_once(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor  # baseline of the files
    materialize_all(sample_location, instance)
    spec = sample_location.specs[0]
    # What a run that planned its checks before another one, but executed after it, leaves:
    # a latest materialization whose checks' latest executions belong to another run.
    instance.report_runless_asset_event(dg.AssetMaterialization(spec.asset_keys[0]))
    assert set(unsettled(instance, sample_location.specs)) == {spec.key}
    result = tick(sample_location, instance, cursor)
    (request,) = result.run_requests or []
    assert request.tags == {DATASET_TAG: spec.key}
    assert set(request.asset_selection or []) == {*spec.asset_keys, STATS_KEY}
    assert request.run_key and request.run_key.startswith(f"settle:{spec.key}:")
    # Nothing new ran since: the next tick does not look again.
    again = tick(sample_location, instance, result.cursor)
    assert not again.run_requests


def test_the_stats_json_check_settles_on_its_own(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    materialize_all(sample_location, instance)
    instance.report_runless_asset_event(dg.AssetMaterialization(STATS_KEY))
    assert set(unsettled(instance, sample_location.specs)) == {STATS_OWNER}


def test_nothing_is_settled_while_a_run_is_in_progress(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    materialize_all(sample_location, instance)
    instance.report_runless_asset_event(
        dg.AssetMaterialization(sample_location.specs[0].asset_keys[0])
    )
    job = build_defs(sample_location).resolve_implicit_global_asset_job_def()
    run = instance.create_run_for_job(job, status=dg.DagsterRunStatus.STARTED)
    assert not tick(sample_location, instance, cursor).run_requests
    instance.report_run_canceled(run)
    assert tick(sample_location, instance, cursor).run_requests
