"""A stats_json run records the file assets: news at once, other changes in turn, never half."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.naming import STATS_KEY
from assets.recording import (
    LEFT_DUE,
    Plan,
    Recorded,
    Verdict,
    is_news,
    plan,
    record,
    recorded_state,
)
from assets.refresh_job import build_refresh_job
from assets.results import RoleResult
from assets.signature import SIGNATURE_KEY
from assets.spec import Location
from definitions import build_defs
from genledger.config import DagsterSettings
from genledger.synth.records import line
from genledger.synth.tree import write_sample_tree

from .conftest import location_for

FAILING = {"error_missing_tokens", "warn_think_leaks"}
PASSING = {"clean_chat_then_flat", "A1_pretokenized"}


def with_record_seconds(location: Location, seconds: float) -> Location:
    """The location with `dagster.record_seconds` set."""
    dagster = DagsterSettings(record_seconds=seconds)
    return replace(location, config=replace(location.config, dagster=dagster))


def run_stats(location: Location, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """One run of the refresh job, as the file sensor requests it."""
    result = build_refresh_job(location).execute_in_process(instance=instance)
    assert result.success
    return result


def recorded_datasets(result: dg.ExecuteInProcessResult) -> set[str]:
    """The datasets whose file assets a run materialized."""
    return {
        e.asset_key.path[0]
        for e in result.get_asset_materialization_events()
        if e.asset_key != STATS_KEY
    }


def stats_metadata(result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    """The stats_json materialization's metadata values."""
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == STATS_KEY]
    return {k: v.value for k, v in event.materialization.metadata.items()}


@pytest.fixture
def location(tmp_path: Path) -> Location:
    """A location over a fresh four-dataset sample tree (two failing, two passing), with time
    to record every changed dataset (a busy machine must not make a test flaky)."""
    root = write_sample_tree(tmp_path / "data", records=6)
    return with_record_seconds(location_for(root, tmp_path / "dagster"), 600)


@pytest.fixture
def instance():
    """A temporary Dagster instance."""
    with dg.instance_for_test() as inst:
        yield inst


def test_failing_datasets_are_recorded_as_news_even_without_time_for_the_rest(
    location: Location, instance: dg.DagsterInstance
) -> None:
    result = run_stats(with_record_seconds(location, 0), instance)
    assert recorded_datasets(result) == FAILING
    meta = stats_metadata(result)
    assert (meta["recorded_news"], meta["recorded_due"], meta[LEFT_DUE]) == (2, 0, 2)
    failed = {e.asset_key.path[0] for e in result.get_asset_check_evaluations() if not e.passed}
    assert failed == FAILING


def test_with_time_every_changed_dataset_is_recorded_with_all_its_checks(
    location: Location, instance: dg.DagsterInstance
) -> None:
    result = run_stats(location, instance)
    assert recorded_datasets(result) == FAILING | PASSING
    assert stats_metadata(result)[LEFT_DUE] == 0
    state = recorded_state(instance, location.specs)
    assert all(s.settled for s in state.values())
    assert all(len(s.signatures) == 1 and None not in s.signatures for s in state.values())


def test_a_refresh_with_nothing_changed_records_nothing(
    location: Location, instance: dg.DagsterInstance
) -> None:
    run_stats(location, instance)
    again = run_stats(location, instance)
    assert recorded_datasets(again) == set()
    meta = stats_metadata(again)
    assert (meta["recorded_news"], meta["recorded_due"], meta[LEFT_DUE]) == (0, 0, 0)


def test_a_bad_append_to_a_clean_dataset_is_news_at_once(
    location: Location, instance: dg.DagsterInstance
) -> None:
    run_stats(location, instance)
    quiet = with_record_seconds(location, 0)
    spec = next(s for s in location.specs if s.name == "clean_chat_then_flat")
    grown = next(s for s in location.specs if s.name == "warn_think_leaks")
    with grown.dataset.of_role("responses")[0].path.open("ab") as handle:
        handle.write(line({"id": "more", "completion_tokens": 3}))
    with spec.dataset.of_role("responses")[0].path.open("ab") as handle:
        handle.write(line({"id": "bad", "text": "no usage at all"}))
    result = run_stats(quiet, instance)
    assert recorded_datasets(result) == {spec.key}, "growth without news waits its turn"
    failed = [e for e in result.get_asset_check_evaluations() if not e.passed]
    assert {(e.asset_key, e.check_name) for e in failed} >= {
        (spec.asset_key("responses"), "responses_have_valid_token_counts")
    }
    assert stats_metadata(result)[LEFT_DUE] == 1


def test_a_recorded_dataset_equals_a_run_of_its_own_step(
    location: Location, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    recorded = run_stats(location, instance)
    twin = location_for(write_sample_tree(tmp_path / "twin", records=6), tmp_path / "twin_dagster")
    with dg.instance_for_test() as other:
        job = build_defs(twin).resolve_implicit_global_asset_job_def()
        own = job.execute_in_process(instance=other)

    def results(run: dg.ExecuteInProcessResult) -> dict[Any, Any]:
        checks = {
            (e.asset_key, e.check_name): (e.passed, e.severity, _values(e.metadata))
            for e in run.get_asset_check_evaluations()
            if e.asset_key != STATS_KEY
        }
        materializations = {
            e.asset_key: _values(e.materialization.metadata)
            for e in run.get_asset_materialization_events()
            if e.asset_key != STATS_KEY
        }
        return {"checks": checks, "materializations": materializations}

    assert results(recorded) == results(own)


def _values(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values that do not depend on where the tree lives (paths, inodes, mtimes)."""
    placed = {"path", "paths", SIGNATURE_KEY}
    return {k: getattr(v, "value", v) for k, v in metadata.items() if k not in placed}


def test_a_run_of_stats_json_by_hand_records_like_a_refresh_run(
    location: Location, instance: dg.DagsterInstance
) -> None:
    job = build_defs(with_record_seconds(location, 0)).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, asset_selection=[STATS_KEY])
    assert recorded_datasets(result) == FAILING
    assert stats_metadata(result)[LEFT_DUE] == 2
    checks = {(e.asset_key, e.check_name) for e in result.get_asset_check_evaluations()}
    assert (STATS_KEY, "every_dataset_present") in checks


def test_the_refresh_job_records_stats_json_and_its_checks(
    location: Location, instance: dg.DagsterInstance
) -> None:
    result = run_stats(location, instance)
    stats = {
        e.check_name: e for e in result.get_asset_check_evaluations() if e.asset_key == STATS_KEY
    }
    assert set(stats) == {"every_dataset_present", "every_file_recognised"}
    assert stats["every_dataset_present"].passed
    assert stats_metadata(result)["datasets"] == 4
    state = recorded_state(instance, location.specs)
    assert all(s.settled for s in state.values())


def test_datasets_materialized_by_their_own_step_are_left_to_it(
    location: Location, instance: dg.DagsterInstance
) -> None:
    spec = next(s for s in location.specs if s.name == "warn_think_leaks")
    job = build_defs(location).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance, asset_selection=[*spec.asset_keys, STATS_KEY]
    )
    counts: dict[dg.AssetKey, int] = {}
    for event in result.get_asset_materialization_events():
        counts[event.asset_key] = counts.get(event.asset_key, 0) + 1
    assert counts[spec.asset_key("responses")] == 1
    assert {k.path[0] for k in counts if k != STATS_KEY} == FAILING | PASSING


def test_a_materialization_left_without_its_checks_is_recorded_again(
    location: Location, instance: dg.DagsterInstance
) -> None:
    run_stats(location, instance)
    spec = location.specs[0]
    # What a run that planned its checks before another one, but executed after it, leaves:
    # a latest materialization whose checks' latest results belong to another run.
    instance.report_runless_asset_event(dg.AssetMaterialization(spec.asset_keys[0]))
    assert not recorded_state(instance, location.specs)[spec.key].settled
    result = run_stats(location, instance)
    assert recorded_datasets(result) == {spec.key}
    assert recorded_state(instance, location.specs)[spec.key].settled


# --- the plan, on verdicts made up in the test ---------------------------------------------

KEY = dg.AssetKey(["ds", "raw_responses"])


def role(passed: bool, severity: str = "ERROR", count: int = 0, items: tuple[str, ...] = ()):
    """One file asset with one check of the given verdict."""
    metadata: dict[str, Any] = {"failure_count": count}
    if items:
        metadata["items"] = list(items)
    check = dg.AssetCheckResult(
        asset_key=KEY,
        check_name="c",
        passed=passed,
        severity=dg.AssetCheckSeverity(severity),
        metadata=metadata,
    )
    return [RoleResult(KEY, {}, [check])]


def recorded(before: Verdict | None, signature: str = "s", at: float = 1.0) -> Recorded:
    """What an instance holds: one materialization with that signature and verdict."""
    verdicts = {dg.AssetCheckKey(KEY, "c"): before} if before else {}
    return Recorded(signatures={signature}, times=[at], verdicts=verdicts)


@pytest.mark.parametrize(
    ("now", "before", "news"),
    [
        (role(True), None, False),  # a passing check never recorded: due, not news
        (role(False, count=3), None, True),  # a failing one never recorded
        (role(False, count=3), Verdict(True, "ERROR", 0), True),  # starts failing
        (role(True), Verdict(False, "ERROR", 3), True),  # resolved
        (role(False, "ERROR", 3), Verdict(False, "WARN", 3), True),  # severity changed
        (role(False, count=5), Verdict(False, "ERROR", 3), False),  # grew, but not 2x
        (role(False, count=6), Verdict(False, "ERROR", 3), True),  # twice the recorded count
        (role(False, count=2), Verdict(False, "ERROR", 3), False),  # fewer
        (role(False, "WARN", 1, ("a", "b")), Verdict(False, "WARN", 1, frozenset("a")), True),
        (role(True), Verdict(True, "ERROR", 0), False),  # still passing
    ],
)
def test_news_is_what_the_notifications_would_call_news(
    now: list[RoleResult], before: Verdict | None, news: bool
) -> None:
    assert is_news(now, recorded(before), worse_factor=2.0) is news


def test_due_datasets_are_ordered_unsettled_then_never_then_least_recently_recorded() -> None:
    results = {k: role(True) for k in ("old", "new", "never", "unsettled", "same")}
    passed = Verdict(True, "ERROR", 0)
    state = {
        "old": recorded(passed, "x", at=10.0),
        "new": recorded(passed, "x", at=20.0),
        "never": Recorded(signatures={None}, times=[0.0]),
        "unsettled": replace(recorded(passed, "s", at=30.0), settled=False),
        "same": recorded(passed, "s", at=5.0),
    }
    got = plan(results, dict.fromkeys(results, "s"), state, worse_factor=2.0)
    assert got == Plan(news=[], due=["unsettled", "never", "old", "new"])


def test_recording_stops_when_its_time_is_spent_but_never_skips_news() -> None:
    results = {k: role(False, count=1) for k in ("n1", "d1", "d2", "d3")}
    ticks = iter([0.0, 0.0, 1.0, 2.5])  # started, before d1, before d2, before d3
    events = record(Plan(["n1"], ["d1", "d2", "d3"]), results, 2.0, clock=lambda: next(ticks))
    written = []
    try:
        while True:
            written.append(next(events))
    except StopIteration as stop:
        done = stop.value
    assert done == 2
    assert len(written) == 3 * 2  # n1, d1, d2: a materialization and one check result each
