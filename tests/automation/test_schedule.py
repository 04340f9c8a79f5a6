"""The refresh schedule: every five minutes by default, running, one run of everything."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import dagster as dg

from assets.naming import SCOPE_TAG
from assets.spec import Location, load_location
from automation.schedule import build_refresh_schedule
from genledger.config import DagsterSettings


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


def test_a_tick_requests_one_run_of_everything_tagged_as_such(
    sample_location: Location,
) -> None:
    schedule = build_refresh_schedule(sample_location)
    with dg.instance_for_test() as instance:
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
    (request,) = data.run_requests or []
    assert request.tags[SCOPE_TAG] == "all"


def test_without_a_data_root_the_schedule_skips_naming_the_variable(tmp_path: Path) -> None:
    schedule = build_refresh_schedule(load_location(env={"DAGSTER_HOME": str(tmp_path)}))
    with dg.instance_for_test() as instance:
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
    assert not data.run_requests
    assert "GENLEDGER_DATA_ROOT" in (data.skip_message or "")
