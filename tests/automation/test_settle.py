"""Following up: once runs are idle, one more refresh run records what is left or unsettled."""

from __future__ import annotations

import uuid
from dataclasses import replace

import dagster as dg
import pytest

from assets.naming import SCOPE_TAG, STATS_KEY
from assets.refresh_job import build_refresh_job
from assets.spec import Location
from automation.sensors import build_file_sensor, left_due
from automation.settle import STATS_OWNER, unsettled
from definitions import build_defs
from genledger.config import DagsterSettings


@pytest.fixture
def instance():
    """A temporary Dagster instance."""
    with dg.instance_for_test() as inst:
        yield inst


def refresh(location: Location, instance: dg.DagsterInstance) -> None:
    """One run of the refresh job, as the file sensor requests it."""
    assert build_refresh_job(location).execute_in_process(instance=instance).success


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
    assert unsettled(instance, sample_location.specs) == []


def test_a_materialization_without_its_checks_gets_one_more_refresh_run(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor  # baseline of the files
    materialize_all(sample_location, instance)
    spec = sample_location.specs[0]
    # What a run that planned its checks before another one, but executed after it, leaves:
    # a latest materialization whose checks' latest executions belong to another run.
    instance.report_runless_asset_event(dg.AssetMaterialization(spec.asset_keys[0]))
    assert unsettled(instance, sample_location.specs) == [spec.key]
    result = tick(sample_location, instance, cursor)
    (request,) = result.run_requests or []
    assert request.asset_selection is None and request.tags == {SCOPE_TAG: "all"}
    assert request.run_key and request.run_key.startswith("settle:")
    # Nothing new ran since: the next tick does not look again.
    assert not tick(sample_location, instance, result.cursor).run_requests


def test_the_stats_json_check_settles_on_its_own(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    materialize_all(sample_location, instance)
    instance.report_runless_asset_event(dg.AssetMaterialization(STATS_KEY))
    assert unsettled(instance, sample_location.specs) == [STATS_OWNER]


def test_nothing_is_followed_up_while_a_run_is_in_progress(
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


def test_datasets_a_refresh_left_unrecorded_get_refresh_runs_until_none_is_left(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    hurried = replace(
        sample_location,
        config=replace(sample_location.config, dagster=DagsterSettings(record_seconds=0)),
    )
    refresh(hurried, instance)  # news only: the two passing datasets are left
    assert left_due(instance) == 2
    result = tick(sample_location, instance, cursor)
    (request,) = result.run_requests or []
    assert request.run_key and request.run_key.startswith("settle:")
    refresh(sample_location, instance)  # with time to record them
    assert left_due(instance) == 0
    assert not tick(sample_location, instance, result.cursor).run_requests


def test_a_failed_run_is_not_followed_up_in_a_loop(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    quick = DagsterSettings(record_seconds=0)
    hurried = replace(sample_location, config=replace(sample_location.config, dagster=quick))
    refresh(hurried, instance)
    assert left_due(instance) == 2
    failed = dg.DagsterRun(
        job_name="genledger_refresh", run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.FAILURE
    )
    instance.add_run(failed)
    assert not tick(sample_location, instance, cursor).run_requests
