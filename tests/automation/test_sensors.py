"""The file sensor: runs only for datasets whose files changed, never on top of a running one."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets.naming import DATASET_TAG, SCOPE_TAG, STATS_KEY, dataset_key
from assets.spec import Location, load_location
from automation.sensors import build_file_sensor
from genledger.synth.records import line


def tick(location: Location, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    """Evaluate the sensor once with `cursor`."""
    sensor = build_file_sensor(location)
    result = sensor(dg.build_sensor_context(instance=instance, cursor=cursor))
    assert isinstance(result, dg.SensorResult)
    return result


def requested(result: dg.SensorResult) -> set[str]:
    """The dataset tags of the requested runs."""
    return {r.tags[DATASET_TAG] for r in result.run_requests or []}


def responses(location: Location, name: str) -> Path:
    """The responses file of dataset `name`."""
    spec = next(s for s in location.specs if s.name == name)
    return spec.dataset.of_role("responses")[0].path


@pytest.fixture
def instance():
    """A temporary Dagster instance."""
    with dg.instance_for_test() as inst:
        yield inst


def test_the_first_tick_refreshes_everything_in_one_run(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    result = tick(sample_location, instance, None)
    assert len(result.run_requests or []) == 1
    (request,) = result.run_requests or []
    assert request.tags == {SCOPE_TAG: "all"} and request.asset_selection is None
    assert result.cursor and all(
        dataset_key(s.name) in result.cursor for s in sample_location.specs
    )


def test_nothing_is_requested_when_nothing_changed(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    first = tick(sample_location, instance, None)
    second = tick(sample_location, instance, first.cursor)
    assert not second.run_requests
    assert second.skip_reason is not None
    assert "nothing changed" in (second.skip_reason.skip_message or "")
    assert "4 datasets" in (second.skip_reason.skip_message or "")


def test_exactly_the_grown_dataset_is_requested_after_an_append(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    with responses(sample_location, "warn_think_leaks").open("ab") as handle:
        handle.write(line({"id": "x", "completion_tokens": 3}))
    result = tick(sample_location, instance, cursor)
    assert requested(result) == {dataset_key("warn_think_leaks")}
    (request,) = result.run_requests or []
    spec = next(s for s in sample_location.specs if s.name == "warn_think_leaks")
    assert set(request.asset_selection or []) == {*spec.asset_keys, STATS_KEY}


def test_a_torn_write_counts_as_growth(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    with responses(sample_location, "clean_chat_then_flat").open("ab") as handle:
        handle.write(b'{"id": "half')
    assert requested(tick(sample_location, instance, cursor)) == {
        dataset_key("clean_chat_then_flat")
    }


def test_a_replaced_file_is_requested(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    path = responses(sample_location, "error_missing_tokens")
    replacement = path.with_suffix(".new")
    replacement.write_bytes(path.read_bytes()[::-1].strip() + b"\n")
    os.replace(replacement, path)
    assert requested(tick(sample_location, instance, cursor)) == {
        dataset_key("error_missing_tokens")
    }


def test_a_dataset_with_a_run_in_progress_is_not_requested_until_it_finishes(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    busy, idle = dataset_key("warn_think_leaks"), dataset_key("clean_chat_then_flat")
    for name in ("warn_think_leaks", "clean_chat_then_flat"):
        with responses(sample_location, name).open("ab") as handle:
            handle.write(line({"id": "y", "completion_tokens": 4}))
    run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED,
        tags={DATASET_TAG: busy},
    )
    instance.add_run(run)
    result = tick(sample_location, instance, cursor)
    assert requested(result) == {idle}
    instance.handle_run_event(
        run.run_id,
        dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name
        ),
    )
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.SUCCESS
    assert requested(tick(sample_location, instance, result.cursor)) == {busy}


def test_without_a_data_root_the_sensor_skips_naming_the_variable(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    location = load_location(env={"DAGSTER_HOME": str(tmp_path)})
    result = tick(location, instance, None)
    assert not result.run_requests
    assert "GENLEDGER_DATA_ROOT" in (result.skip_reason.skip_message or "")


def test_a_rewritten_sealed_shard_and_a_new_nested_shard_are_noticed(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    from genledger.config import Config

    from ..genledger.shards import encode, write

    root = tmp_path / "data"
    records = [{"id": f"r{i}", "completion_tokens": 3} for i in range(5)]
    write(root / "sealed" / "part-00000" / "raw_responses.jsonl.gz", encode(records, "jsonl.gz"))
    write(root / "nested" / "part-00000" / "raw_responses.parquet", encode(records, "parquet"))
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    location = load_location(config, env={})
    cursor = tick(location, instance, None).cursor
    assert not tick(location, instance, cursor).run_requests
    write(
        root / "sealed" / "part-00000" / "raw_responses.jsonl.gz", encode(records * 2, "jsonl.gz")
    )
    result = tick(location, instance, cursor)
    assert requested(result) == {dataset_key("sealed")}
    write(root / "nested" / "part-00001" / "raw_responses.parquet", encode(records, "parquet"))
    result = tick(location, instance, result.cursor)
    assert requested(result) == {dataset_key("nested")}


def test_a_new_unrecognised_file_in_a_dataset_is_a_change(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    folder = responses(sample_location, "warn_think_leaks").parent
    (folder / "outputs.jsonl").write_bytes(b"{}\n")
    result = tick(sample_location, instance, cursor)
    assert requested(result) == {dataset_key("warn_think_leaks")}
