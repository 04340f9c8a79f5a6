"""The file sensor: one refresh run for whatever changed, never a second one waiting to start."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import dagster as dg
import pytest

from assets.naming import SCOPE_TAG, dataset_key
from assets.spec import Location, load_location
from automation.sensors import build_file_sensor, changed_datasets
from genledger.synth.records import line


def tick(location: Location, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    """Evaluate the sensor once with `cursor`."""
    sensor = build_file_sensor(location)
    result = sensor(dg.build_sensor_context(instance=instance, cursor=cursor))
    assert isinstance(result, dg.SensorResult)
    return result


def requested(result: dg.SensorResult) -> list[dg.RunRequest]:
    """The requested runs, each checked to be a run of the refresh job."""
    requests = list(result.run_requests or [])
    for request in requests:
        assert request.asset_selection is None and request.tags[SCOPE_TAG] == "all"
    return requests


def changed(location: Location, before: str | None, after: str | None) -> set[str]:
    """The dataset keys whose entries differ between two cursors."""
    return changed_datasets(location, before, after)


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
    (request,) = requested(result)
    assert request.run_key and request.run_key.startswith("initial:")
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


def test_an_append_to_one_dataset_requests_one_refresh_run_seeing_exactly_that_change(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    with responses(sample_location, "warn_think_leaks").open("ab") as handle:
        handle.write(line({"id": "x", "completion_tokens": 3}))
    result = tick(sample_location, instance, cursor)
    (request,) = requested(result)
    assert request.run_key and request.run_key.startswith("live:")
    assert changed(sample_location, cursor, result.cursor) == {dataset_key("warn_think_leaks")}


def test_one_run_is_requested_however_many_datasets_grew(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    for spec in sample_location.specs:
        for data_file in spec.dataset.files:
            with data_file.path.open("ab") as handle:
                handle.write(line({"id": "grew", "completion_tokens": 3}))
    result = tick(sample_location, instance, cursor)
    assert len(requested(result)) == 1
    assert changed(sample_location, cursor, result.cursor) == {s.key for s in sample_location.specs}


def test_a_torn_write_counts_as_growth(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    with responses(sample_location, "clean_chat_then_flat").open("ab") as handle:
        handle.write(b'{"id": "half')
    result = tick(sample_location, instance, cursor)
    assert len(requested(result)) == 1
    assert changed(sample_location, cursor, result.cursor) == {dataset_key("clean_chat_then_flat")}


def test_a_replaced_file_is_requested(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    path = responses(sample_location, "error_missing_tokens")
    replacement = path.with_suffix(".new")
    replacement.write_bytes(path.read_bytes()[::-1].strip() + b"\n")
    os.replace(replacement, path)
    result = tick(sample_location, instance, cursor)
    assert len(requested(result)) == 1
    assert changed(sample_location, cursor, result.cursor) == {dataset_key("error_missing_tokens")}


def refresh_run(instance: dg.DagsterInstance, status: dg.DagsterRunStatus) -> dg.DagsterRun:
    """A refresh run in the instance, in `status`."""
    run = dg.DagsterRun(
        job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=status, tags={SCOPE_TAG: "all"}
    )
    instance.add_run(run)
    return run


def finish(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """Mark a run finished, as its worker would."""
    instance.handle_run_event(
        run.run_id,
        dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name
        ),
    )


def grow(location: Location, name: str) -> None:
    """Append one record to a dataset's responses file."""
    with responses(location, name).open("ab") as handle:
        handle.write(line({"id": "y", "completion_tokens": 4}))


def test_no_second_refresh_run_is_requested_while_one_waits_to_start(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    waiting = refresh_run(instance, dg.DagsterRunStatus.NOT_STARTED)  # queued, or starting
    grow(sample_location, "warn_think_leaks")
    result = tick(sample_location, instance, cursor)
    assert not requested(result), "the queued run will read the files when it starts"
    assert "waiting refresh run" in (result.skip_reason.skip_message or "")
    finish(instance, waiting)
    grow(sample_location, "clean_chat_then_flat")
    assert len(requested(tick(sample_location, instance, result.cursor))) == 1


def test_a_refresh_run_in_progress_gets_one_successor_for_what_changed_since(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    refresh_run(instance, dg.DagsterRunStatus.STARTED)  # it may have read the files already
    grow(sample_location, "warn_think_leaks")
    assert len(requested(tick(sample_location, instance, cursor))) == 1


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
    assert len(requested(result)) == 1
    assert changed(location, cursor, result.cursor) == {dataset_key("sealed")}
    later = result.cursor
    write(root / "nested" / "part-00001" / "raw_responses.parquet", encode(records, "parquet"))
    result = tick(location, instance, later)
    assert len(requested(result)) == 1
    assert changed(location, later, result.cursor) == {dataset_key("nested")}


def test_a_new_unrecognised_file_in_a_dataset_is_a_change(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    cursor = tick(sample_location, instance, None).cursor
    folder = responses(sample_location, "warn_think_leaks").parent
    (folder / "outputs.jsonl").write_bytes(b"{}\n")
    result = tick(sample_location, instance, cursor)
    assert len(requested(result)) == 1
    assert changed(sample_location, cursor, result.cursor) == {dataset_key("warn_think_leaks")}


def test_a_batch_status_object_rewritten_alone_requests_a_run_that_updates_the_books(
    sample_location: Location, instance: dg.DagsterInstance
) -> None:
    """An OpenAI Batch object polled again (new request_counts, no JSONL change): the sensor
    sees it, the refresh run it requests writes the provider's new side, the schedule agrees."""
    from assets.refresh_job import build_refresh_job
    from automation.schedule import changed_specs
    from tests.genledger.ledger.batch_objects import openai_batch

    status = responses(sample_location, "warn_think_leaks").parent / "batch_output.json"
    status.write_bytes(openai_batch(total=6))
    job = build_refresh_job(sample_location)
    cursor = tick(sample_location, instance, None).cursor
    assert job.execute_in_process(instance=instance).success
    assert not tick(sample_location, instance, cursor).run_requests
    assert changed_specs(sample_location, instance) == []
    before = status.stat().st_mtime_ns
    status.write_bytes(openai_batch(total=9, failed=2))  # same size: only the numbers move
    os.utime(status, ns=(before + 10**9, before + 10**9))  # a poll a second later
    result = tick(sample_location, instance, cursor)
    assert len(requested(result)) == 1
    assert changed(sample_location, cursor, result.cursor) == {dataset_key("warn_think_leaks")}
    assert [s.name for s in changed_specs(sample_location, instance)] == ["warn_think_leaks"]
    assert job.execute_in_process(instance=instance).success
    stats = json.loads(sample_location.config.stats_path.read_bytes())
    books = stats["datasets"]["warn_think_leaks"]["provider_books"]
    assert books["requests"][0] == 9 and books["failed"][0] == 2
    assert not tick(sample_location, instance, result.cursor).run_requests
