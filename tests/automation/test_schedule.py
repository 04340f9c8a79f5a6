"""The refresh schedule: every five minutes by default, running, refreshing what changed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import dagster as dg

from assets.naming import SCOPE_TAG, STATS_KEY
from assets.refresh_job import build_refresh_job
from assets.spec import Location, load_location
from automation.schedule import CHANGED_TAG, SKIPPED_TAG, build_refresh_schedule
from automation.settle import unsettled
from genledger.config import DagsterSettings
from genledger.synth.records import line


def test_the_schedule_runs_every_five_minutes_by_default_and_starts_running(
    sample_location: Location,
) -> None:
    schedule = build_refresh_schedule(sample_location)
    assert schedule.cron_schedule == DagsterSettings().schedule_cron == "*/5 * * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_the_cron_comes_from_the_config(sample_location: Location) -> None:
    config = replace(sample_location.config, dagster=DagsterSettings(schedule_cron="0 * * * *"))
    schedule = build_refresh_schedule(replace(sample_location, config=config))
    assert schedule.cron_schedule == "0 * * * *"


def tick_request(location: Location, instance: dg.DagsterInstance) -> dg.RunRequest:
    """The one run request of a schedule tick."""
    data = build_refresh_schedule(location).evaluate_tick(
        dg.build_schedule_context(instance=instance)
    )
    (request,) = data.run_requests or []
    return request


def materialize(
    location: Location, instance: dg.DagsterInstance, request: dg.RunRequest
) -> set[str]:
    """Execute what a schedule tick requested, in process; return the datasets it recorded."""
    assert request.asset_selection is None, "a run of the refresh job"
    result = build_refresh_job(location).execute_in_process(instance=instance, tags=request.tags)
    assert result.success
    keys = {e.asset_key for e in result.get_asset_materialization_events()}
    assert STATS_KEY in keys, "stats_json always runs"
    return {key.path[0] for key in keys if key != STATS_KEY}


def test_a_first_tick_requests_a_refresh_of_every_dataset_tagged_as_such(
    sample_location: Location,
) -> None:
    with dg.instance_for_test() as instance:
        request = tick_request(sample_location, instance)
        assert request.tags[SCOPE_TAG] == "all"
        assert request.tags[CHANGED_TAG] == str(len(sample_location.specs))
        assert request.tags[SKIPPED_TAG] == "0"
        recorded = materialize(sample_location, instance, request)
    assert recorded == {s.key for s in sample_location.specs}


def test_unchanged_datasets_are_skipped_and_only_the_changed_one_is_refreshed(
    sample_location: Location,
) -> None:
    with dg.instance_for_test() as instance:
        materialize(sample_location, instance, tick_request(sample_location, instance))
        idle = tick_request(sample_location, instance)
        assert idle.tags[SKIPPED_TAG] == str(len(sample_location.specs))
        assert materialize(sample_location, instance, idle) == set()
        spec = next(s for s in sample_location.specs if s.name == "warn_think_leaks")
        with spec.dataset.of_role("responses")[0].path.open("ab") as handle:
            handle.write(line({"id": "x", "completion_tokens": 3}))
        grown = tick_request(sample_location, instance)
        assert (grown.tags[CHANGED_TAG], grown.tags[SKIPPED_TAG]) == ("1", "3")
        assert materialize(sample_location, instance, grown) == {spec.key}
        # The skipped datasets' checks are those of their latest materialization: no rerun due.
        assert not unsettled(instance, sample_location.specs)
        assert tick_request(sample_location, instance).tags[CHANGED_TAG] == "0"


def test_without_a_data_root_the_schedule_skips_naming_the_variable(tmp_path: Path) -> None:
    schedule = build_refresh_schedule(load_location(env={"DAGSTER_HOME": str(tmp_path)}))
    with dg.instance_for_test() as instance:
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
    assert not data.run_requests
    assert "GENLEDGER_DATA_ROOT" in (data.skip_message or "")
