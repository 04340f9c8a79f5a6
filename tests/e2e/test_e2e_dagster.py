"""End to end: a live `dagster dev` materialises, senses appends, schedules and notifies.

Tests run in file order against one session-wide `dagster dev`; the later ones change the data
root (append, then fix a broken file), so the read-only assertions come first.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from automation.ticks import tick_every

from .dagster_api import DagsterApi, Materialized
from .expect import (
    STATS_KEY,
    by_dataset,
    engine_stats,
    expected_failures,
    names,
    overlapping_runs,
    stats_now,
)
from .harness import (
    BUDGET_DATASET,
    CLEAN_DATASET,
    DATASET_TAG,
    FIXABLE_DATASET,
    ODD_ERROR_DATASET,
    REFRESH_JOB,
    SCHEDULE_CRON,
    SCOPE_TAG,
    SENSOR_INTERVAL_S,
    SENSOR_TAG,
    SENSOR_TIMEOUT_S,
    WEBHOOK_SECRET,
    Received,
    SimulatedWriter,
    WebhookReceiver,
    ds_key,
    read_stats,
    wait_for,
    write_budget_records,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    # dagster_graphql's client calls gql in a way gql 4 deprecates; not ours to fix.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:gql"),
]

FILE_SENSOR = "dataset_files_changed"
NOTIFY_TIMEOUT_S = 180.0
BUDGET_CHECK = "cost_within_budget"


def test_every_dataset_file_becomes_an_asset_in_its_own_group(dagster_api: DagsterApi) -> None:
    groups = dagster_api.asset_groups()
    names = [p.name for p in dagster_api.dev.data_root.iterdir() if p.is_dir()]
    expected = {STATS_KEY}
    for name in names:
        for role in ("raw_responses", "tokenized_data"):
            if any((dagster_api.dev.data_root / name).glob(f"{role}*.jsonl")):
                expected.add((ds_key(name), role))
    assert set(groups) == expected
    for key, group in groups.items():
        if key != STATS_KEY:
            assert group == key[0]


def test_materializing_everything_succeeds_and_writes_every_asset(
    dagster_api: DagsterApi, materialized: Materialized
) -> None:
    assert materialized.status == "SUCCESS", "failed checks must not fail the run"
    assert dagster_api.materialized(materialized.run_id) == set(materialized.keys)


def test_check_results_match_each_datasets_defects(
    dagster_api: DagsterApi, materialized: Materialized, tmp_path: Path
) -> None:
    engine = engine_stats(dagster_api.dev.data_root, tmp_path)["datasets"]
    results = by_dataset(materialized.checks)
    assert set(results) == {ds_key(name) for name in engine}
    for name, stats in engine.items():
        checks = results[ds_key(name)]
        failed = {r.check: r.severity for r in checks if not r.passed}
        status = stats["quality"]["status"]
        if status == "error":
            assert "ERROR" in failed.values(), f"{name}: no failed ERROR check in {failed}"
        elif status == "warn":
            assert failed, f"{name}: no failed check"
            assert set(failed.values()) == {"WARN"}, f"{name}: {failed}"
        else:
            assert not failed, f"{name} is clean but failed {failed}"
            assert checks, f"{name}: no check ran"
        expected = expected_failures(stats)
        assert failed == {family: sev for family, (sev, _) in expected.items()}, name
        for result in checks:
            if not result.passed:
                assert result.metadata["failure_count"] == expected[result.check][1], result


def test_every_check_result_carries_the_contract_metadata(materialized: Materialized) -> None:
    names = {ds_key(n): n for n in (CLEAN_DATASET, FIXABLE_DATASET, ODD_ERROR_DATASET)}
    file_results = [r for r in materialized.checks if r.asset != STATS_KEY]
    assert file_results
    for result in file_results:
        meta = result.metadata
        assert isinstance(meta["failure_count"], int), result
        assert isinstance(meta["rows_checked"], int), result
        assert isinstance(meta["rules"], dict), result
        if result.asset[0] in names:
            assert meta["dataset"] == names[result.asset[0]]
        if not result.passed:
            examples = [line for line in meta["examples"].splitlines() if line.strip()]
            assert 1 <= len(examples) <= 5, result
            assert all(":" in line for line in examples), examples


def test_stats_json_check_passes_and_stats_match_the_engine(
    dagster_api: DagsterApi, materialized: Materialized, tmp_path: Path
) -> None:
    stats_checks = {r.check: r.passed for r in materialized.checks if r.asset == STATS_KEY}
    assert stats_checks.get("every_dataset_present") is True
    engine = engine_stats(dagster_api.dev.data_root, tmp_path)
    written = stats_now(dagster_api)
    assert written["schema_version"] == 1
    assert set(written["datasets"]) == set(engine["datasets"])
    for name, expected in engine["datasets"].items():
        got = written["datasets"][name]
        for field in ("n_done", "n_counted", "total_comp", "n_tokenized", "total_tokens"):
            assert got[field] == expected[field], (name, field)
        assert got["quality"]["status"] == expected["quality"]["status"], name


def test_the_ui_shows_each_checks_result_for_the_latest_materialization(
    dagster_api: DagsterApi, materialized: Materialized, tmp_path: Path
) -> None:
    # The runs the sensor starts for every new dataset overlap the run of everything; once all
    # are done, each check must still show a result (not "Not evaluated") in the UI.
    dagster_api.wait_until_idle()
    engine = engine_stats(dagster_api.dev.data_root, tmp_path)["datasets"]
    keys = {ds_key(name): name for name in engine}
    for key in dagster_api.asset_groups():
        if key == STATS_KEY:
            continue
        states = dagster_api.latest_check_states(key)
        missing = sorted(name for name, status in states.items() if status is None)
        assert not missing, f"{key}: UI shows 'not evaluated' for {missing}"
        failed = {name for name, status in states.items() if status == "FAILED"}
        assert failed <= set(expected_failures(engine[keys[key[0]]])), key


def test_the_schedule_and_every_sensor_are_registered_and_running(
    dagster_api: DagsterApi,
) -> None:
    schedules, sensors = dagster_api.instigators()
    assert schedules, "no schedule registered"
    for schedule in schedules.values():
        assert schedule["scheduleState"]["status"] == "RUNNING", schedule
    assert SCHEDULE_CRON in {s["cronSchedule"] for s in schedules.values()}
    assert FILE_SENSOR in sensors
    # the configured interval, asked of Dagster's 5-s daemon loop as automation/ticks.py does
    assert sensors[FILE_SENSOR]["minIntervalSeconds"] == tick_every(SENSOR_INTERVAL_S)
    for sensor in sensors.values():
        assert sensor["sensorState"]["status"] == "RUNNING", sensor["name"]


def test_the_webhook_gets_alerts_naming_each_error_dataset_and_no_clean_one(
    dagster_api: DagsterApi, materialized: Materialized, webhook: WebhookReceiver, tmp_path: Path
) -> None:
    engine = engine_stats(dagster_api.dev.data_root, tmp_path)["datasets"]
    errors = [n for n, d in engine.items() if d["quality"]["status"] == "error"]
    clean = [n for n, d in engine.items() if d["quality"]["status"] == "ok"]
    assert ODD_ERROR_DATASET in errors and FIXABLE_DATASET in errors
    for name in errors:
        webhook.wait_for(partial(names, name), NOTIFY_TIMEOUT_S)
    posts = webhook.snapshot()
    for name in clean:
        assert not [p for p in posts if name in p.text()], f"clean dataset {name} was alerted"
    assert not [p for p in posts if WEBHOOK_SECRET in p.text()], "webhook secret in a message"


def _file_sensor_idle(api: DagsterApi, since: float) -> bool:
    """True once the file sensor skipped a tick after `since` (it has seen the current tree)."""
    _, sensors = api.instigators()
    ticks = sensors[FILE_SENSOR]["sensorState"]["ticks"]
    return any(t["status"] == "SKIPPED" and t["timestamp"] > since for t in ticks)


def test_an_append_makes_one_sensor_refresh_run_record_that_dataset_and_the_stats(
    dagster_api: DagsterApi, materialized: Materialized, writer: SimulatedWriter
) -> None:
    settled = time.time()
    wait_for(lambda: _file_sensor_idle(dagster_api, settled), 120, "an idle file-sensor tick")
    before = stats_now(dagster_api)["datasets"]
    started = time.time()
    added = writer.append(CLEAN_DATASET, 25)
    appended_at = time.monotonic()

    def refreshed() -> dict[str, Any] | None:
        stats = read_stats(dagster_api.dev.stats_path) or {"datasets": {}}
        got = stats["datasets"].get(CLEAN_DATASET, {})
        want = before[CLEAN_DATASET]["n_done"] + added.records
        return stats if got.get("n_done") == want else None

    stats = wait_for(refreshed, SENSOR_TIMEOUT_S, "the stats JSON to count the appended records")
    latency = time.monotonic() - appended_at
    got = stats["datasets"][CLEAN_DATASET]
    assert got["total_comp"] == before[CLEAN_DATASET]["total_comp"] + added.completion_tokens
    assert got["n_counted"] == before[CLEAN_DATASET]["n_counted"] + added.records
    for name, old in before.items():
        if name != CLEAN_DATASET:
            assert stats["datasets"][name]["n_done"] == old["n_done"], name

    key = ds_key(CLEAN_DATASET)
    groups = dagster_api.asset_groups()
    grown = {k for k, g in groups.items() if g == key}

    def sensor_runs() -> list[dict[str, Any]]:
        return [
            r
            for r in dagster_api.runs()
            if SENSOR_TAG in r["tagmap"] and r["creationTime"] >= started and r["endTime"]
        ]

    runs = wait_for(sensor_runs, SENSOR_TIMEOUT_S, "a finished sensor run")
    recorded: set[tuple[str, ...]] = set()
    for run in runs:
        assert run["jobName"] == REFRESH_JOB, "a sensor run is one run of the refresh job"
        assert run["tagmap"].get(SCOPE_TAG) == "all", run["tagmap"]
        recorded |= dagster_api.materialized(run["runId"])
    # Only the grown dataset changed since everything was materialized: only it is recorded.
    assert recorded == grown | {STATS_KEY}, recorded
    print(f"append -> stats JSON updated in {latency:.1f}s by {len(runs)} sensor run(s)")


def test_fixing_the_broken_file_passes_its_checks_and_sends_resolved(
    dagster_api: DagsterApi,
    materialized: Materialized,
    webhook: WebhookReceiver,
    writer: SimulatedWriter,
) -> None:
    key = ds_key(FIXABLE_DATASET)
    webhook.wait_for(partial(names, FIXABLE_DATASET), NOTIFY_TIMEOUT_S)
    added = writer.replace_with_clean(FIXABLE_DATASET, 30)
    groups = dagster_api.asset_groups()
    keys = [*sorted(k for k, g in groups.items() if g == key), STATS_KEY]
    run_id = dagster_api.launch(keys, tags={DATASET_TAG: key})
    assert dagster_api.wait_for_run(run_id) == "SUCCESS"
    results = by_dataset(dagster_api.check_results(run_id))[key]
    assert results and all(r.passed for r in results), [r for r in results if not r.passed]
    fixed = stats_now(dagster_api)["datasets"][FIXABLE_DATASET]
    assert fixed["quality"]["status"] == "ok"
    assert (fixed["n_done"], fixed["total_comp"]) == (added.records, added.completion_tokens)

    def resolved(post: Received) -> bool:
        text = post.text()
        return FIXABLE_DATASET in text and "resolved" in text.lower()

    webhook.wait_for(resolved, NOTIFY_TIMEOUT_S)


def _budget_alerts(webhook: WebhookReceiver) -> list[tuple[str, str]]:
    """(kind, severity) of every budget alert posted for the budget dataset, in order."""
    found = []
    for post in webhook.snapshot():
        body = json.loads(post.body)
        for alert in body.get("alerts", []):
            if (alert.get("dataset"), alert.get("check")) == (BUDGET_DATASET, BUDGET_CHECK):
                found.append((alert["kind"], alert["severity"]))
    return found


def test_a_budget_warns_once_on_the_projection_then_errs_once_on_the_spending(
    dagster_api: DagsterApi, materialized: Materialized, webhook: WebhookReceiver
) -> None:
    root = dagster_api.dev.data_root
    write_budget_records(root, 0, 2)  # 2 of 10 spent: the projection is 10 records' worth
    assert dagster_api.wait_for_run(dagster_api.launch([STATS_KEY])) == "SUCCESS"
    warned = wait_for(
        lambda: ("projected_over_budget", "warn") in _budget_alerts(webhook),
        NOTIFY_TIMEOUT_S,
        "the projected-over-budget warning",
    )
    assert warned and _budget_alerts(webhook) == [("projected_over_budget", "warn")]
    write_budget_records(root, 2, 4)  # 6 records spent: over the 5.5 records' budget
    assert dagster_api.wait_for_run(dagster_api.launch([STATS_KEY])) == "SUCCESS"
    wait_for(
        lambda: ("over_budget", "error") in _budget_alerts(webhook),
        NOTIFY_TIMEOUT_S,
        "the over-budget error",
    )
    time.sleep(3 * SENSOR_INTERVAL_S)  # more ticks of the budget sensor: nothing new to say
    assert _budget_alerts(webhook) == [("projected_over_budget", "warn"), ("over_budget", "error")]
    stats = stats_now(dagster_api)["datasets"][BUDGET_DATASET]
    assert stats["cost_usd"] > 0 and stats["cost_unpriced"]["n_records"] == 0
    error = [p for p in webhook.snapshot() if "over_budget" in p.text()][-1]
    assert "spent $" in error.text() and "budget $" in error.text()


def test_no_two_runs_for_one_dataset_ever_overlap(dagster_api: DagsterApi) -> None:
    # Whoever launched them (sensor, schedule, a user's "Materialize all"): two runs that
    # overlap on a dataset can leave its checks "Not evaluated" in the UI (the later-started
    # run's checks are the latest, the earlier-started run's materialization is).
    overlaps = overlapping_runs(dagster_api)
    assert not overlaps, "\n".join(overlaps)


def test_no_secret_reaches_the_logs_or_the_stats(dagster_api: DagsterApi) -> None:
    assert WEBHOOK_SECRET not in dagster_api.dev.log_text()
    assert WEBHOOK_SECRET not in dagster_api.dev.stats_path.read_text()
