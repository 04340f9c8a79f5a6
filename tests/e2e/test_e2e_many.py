"""End to end: thirty datasets growing at once; a bad record still reaches the webhook at once.

A live `dagster dev` with the default settings (the project's dagster.yaml, the file sensor's
5 s) watches a data root whose every dataset gains records every 3 s. One refresh run at a time
covers them all: the run that carries the alert is the one that first read the bad records,
however many other datasets grew meanwhile, and Dagster's runs do not multiply with them.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from typing import Any

import pytest

from .conftest import MANY_DATASETS
from .dagster_api import DagsterApi
from .harness import REFRESH_JOB, Growing, Received, WebhookReceiver, read_stats, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(900),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:gql"),
]

TIME_TO_SIGNAL_S = 30.0
SENSOR_INTERVAL_S = 5.0  # the default file-sensor interval
BROKEN = "ds_017"
BAD_RECORDS = 20
CHECK = "responses_have_valid_token_counts"
STARTUP_S = 300.0


def _alert_for(dataset: str, since: float) -> Any:
    def matches(post: Received) -> bool:
        text = post.text()
        return post.at >= since and f'"{dataset}"' in text and '"alert"' in text

    return matches


def _finished_refresh_runs(api: DagsterApi) -> list[dict[str, Any]]:
    return [r for r in api.runs() if r["status"] == "SUCCESS"]


def _states_of_a_finished_record(api: DagsterApi, key: tuple[str, str]) -> dict[str, str | None]:
    """The key's check states for its latest materialization, read once the run that wrote it
    has ended: a run still recording has written the materialization but not yet its checks."""
    for _ in range(20):
        run_id = api.latest_materialization_runs([key])[key]
        if api.wait_for_run(run_id) != "SUCCESS":
            raise AssertionError(f"{key}: the run that recorded it, {run_id}, did not succeed")
        states = api.latest_check_states(key)
        if api.latest_materialization_runs([key])[key] == run_id:
            return states
    raise AssertionError(f"{key}: recorded again by every run while reading its checks")


def test_a_bad_append_among_thirty_growing_datasets_is_signalled_by_the_next_refresh(
    many: Growing, many_api: DagsterApi, many_webhook: WebhookReceiver
) -> None:
    assert len(many.names) == MANY_DATASETS
    wait_for(lambda: _finished_refresh_runs(many_api), STARTUP_S, "a first refresh run")
    time.sleep(random.Random(9).uniform(0, SENSOR_INTERVAL_S))  # any phase of the sensors
    wall = time.time()
    appended = many.writer.break_dataset(BROKEN, BAD_RECORDS)
    alert = many_webhook.wait_for(_alert_for(BROKEN, appended), 4 * TIME_TO_SIGNAL_S)
    latency = alert.at - appended
    run_id = json.loads(alert.body)["run_id"]
    runs = many_api.runs()
    running = {
        r["runId"]
        for r in runs
        if r["startTime"] and r["startTime"] < wall and (r["endTime"] or wall) >= wall
    }
    later = sorted((r for r in runs if (r["startTime"] or 0) >= wall), key=lambda r: r["startTime"])
    # One refresh cycle: the run going when the records landed, or the first one after it.
    assert run_id in running | {later[0]["runId"]}, (run_id, running, later[:2])
    results = [r for r in many_api.check_results(run_id) if r.asset == (BROKEN, "raw_responses")]
    failed = {r.check: r.metadata["failure_count"] for r in results if not r.passed}
    assert failed.get(CHECK) == BAD_RECORDS, failed
    print(f"{MANY_DATASETS} growing datasets: bad append -> webhook in {latency:.1f}s")
    assert latency <= TIME_TO_SIGNAL_S


def test_growing_datasets_are_recorded_in_turn_and_their_checks_agree_with_the_stats(
    many: Growing, many_api: DagsterApi
) -> None:
    keys = [(name, "raw_responses") for name in many.names]

    def half_recorded() -> bool:
        return len(many_api.latest_materialization_runs(keys)) >= len(keys) // 2

    wait_for(half_recorded, STARTUP_S, "half the growing datasets recorded")
    # In turn: a run records a dataset again (not as news) only once every other has been.
    others = set(many.names) - {BROKEN}
    seen: set[str] = set()
    for run in sorted(_finished_refresh_runs(many_api), key=lambda r: r["creationTime"]):
        recorded = {k[0] for k in many_api.materialized(run["runId"]) if len(k) > 1} - {BROKEN}
        again = recorded & seen
        assert not again or others <= seen | recorded, (run["runId"], sorted(again))
        seen |= recorded
    stats = read_stats(many.dev.stats_path)
    assert stats is not None
    latest = many_api.latest_materialization_runs(keys)
    assert (BROKEN, "raw_responses") in latest, "the broken dataset was recorded as news"
    for name, key in zip(many.names, keys, strict=True):
        if key not in latest:
            continue  # not recorded yet: no result of an older state either
        states = _states_of_a_finished_record(many_api, key)
        missing = sorted(check for check, state in states.items() if state is None)
        assert not missing, f"{name}: the UI shows 'not evaluated' for {missing}"
        failed = {check for check, state in states.items() if state == "FAILED"}
        status = stats["datasets"][name]["quality"]["status"]
        assert bool(failed) == (status != "ok"), (name, status, failed)
        assert (name == BROKEN) == bool(failed), (name, failed)


def test_one_refresh_run_at_a_time_however_many_datasets_grow(many_api: DagsterApi) -> None:
    runs = sorted(many_api.runs(), key=lambda r: r["creationTime"])
    assert len(runs) >= 3, "too few runs to tell"
    for run in runs:
        assert run["jobName"] == REFRESH_JOB, "every run is a run of the refresh job"
    span = runs[-1]["creationTime"] - runs[0]["creationTime"]
    assert len(runs) - 1 <= span / SENSOR_INTERVAL_S + 1, "more than one run per sensor tick"
    spans = sorted((r["startTime"], r["endTime"] or time.time()) for r in runs if r["startTime"])
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, "two refresh runs overlapped"
