"""Retention: old finished runs go with their events, what the UI shows as current stays."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

from assets.recording import recorded_state
from assets.refresh_job import build_refresh_job
from assets.spec import Location
from automation.retention import DAY_S, prune, runs_in_use
from genledger.synth.records import line

LATER = time.time() + 3 * DAY_S  # "now" three days on: every run made here is old


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A DAGSTER_HOME with default (SQLite) storage."""
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return folder


def refresh(location: Location, instance: dg.DagsterInstance) -> str:
    """One run of the refresh job, as the file sensor requests it; its run id."""
    result = build_refresh_job(location).execute_in_process(instance=instance)
    assert result.success
    return result.run_id


def grow(location: Location, name: str) -> None:
    """Append a record to one dataset."""
    spec = next(s for s in location.specs if s.name == name)
    with spec.dataset.of_role("responses")[0].path.open("ab") as handle:
        handle.write(line({"id": "more", "completion_tokens": 3}))


def test_old_runs_are_deleted_but_those_holding_the_current_state_are_kept(
    sample_location: Location, home: Path
) -> None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        first = refresh(sample_location, instance)  # records all four datasets
        grow(sample_location, "warn_think_leaks")
        second = refresh(sample_location, instance)  # records that one again
        idle = refresh(sample_location, instance)  # records nothing: only stats_json
        grow(sample_location, "warn_think_leaks")
        last = refresh(sample_location, instance)  # the latest stats_json and warn dataset
        before = recorded_state(instance, sample_location.specs)
        assert runs_in_use(instance, sample_location.specs) == {first, last}
        note = prune(instance, sample_location.specs, keep_days=2, now=LATER)
        left = {r.run_id for r in instance.get_runs()}
        assert left == {first, last}, note
        assert "deleted 2 run(s)" in note
        assert instance.get_run_by_id(second) is None and instance.get_run_by_id(idle) is None
        warn = next(s for s in sample_location.specs if s.name == "warn_think_leaks")
        history = instance.fetch_materializations(warn.asset_keys[0], limit=10).records
        assert {r.event_log_entry.run_id for r in history} == {first, last}
        storage = instance.event_log_storage
        for run_id in (second, idle):
            shard = Path(storage.path_for_shard(run_id))  # type: ignore[attr-defined]
            assert not shard.exists(), "SQLite keeps a deleted run's file unless we remove it"
        after = recorded_state(instance, sample_location.specs)
        assert after == before, "the UI's current state does not change"


def test_runs_inside_the_window_are_kept(sample_location: Location, home: Path) -> None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        refresh(sample_location, instance)
        refresh(sample_location, instance)
        note = prune(instance, sample_location.specs, keep_days=2, now=time.time())
        assert len(instance.get_runs()) == 2
        assert "no finished run older than 2 days" in note


def test_a_window_of_zero_days_keeps_every_run(sample_location: Location, home: Path) -> None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        refresh(sample_location, instance)
        refresh(sample_location, instance)
        prune(instance, sample_location.specs, keep_days=0, now=LATER)
        assert len(instance.get_runs()) == 2


def test_a_tick_stops_when_its_time_is_spent(sample_location: Location, home: Path) -> None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for _ in range(4):  # the first and the last hold the current state
            refresh(sample_location, instance)
        ticks = iter([0.0, 0.0, 0.0, 10.0])  # started; before the 1st, 2nd and 3rd run
        note = prune(instance, sample_location.specs, 2, LATER, clock=lambda: next(ticks))
        assert "deleted 1 run(s)" in note
        assert len(instance.get_runs()) == 3


def test_old_runs_holding_the_current_state_do_not_keep_newer_old_runs(
    sample_location: Location, home: Path
) -> None:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        first = refresh(sample_location, instance)  # holds the quiet datasets' records
        second = refresh(sample_location, instance)
        refresh(sample_location, instance)  # the latest stats_json
        note = prune(instance, sample_location.specs, keep_days=2, now=LATER, batch=1)
        assert instance.get_run_by_id(second) is None, note
        assert instance.get_run_by_id(first) is not None
