"""The stats_json asset: same numbers as `genledger collect`, never blocked by failed checks."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import dagster as dg

from assets.spec import load_location
from genledger.ledger import jsonio
from genledger.synth.tree import write_sample_tree

from .conftest import Materialized, location_for, materialize_all


def comparable(stats: dict[str, Any]) -> dict[str, Any]:
    """The stats JSON minus what depends on when it was computed (time, rates)."""
    out: dict[str, Any] = jsonio.loads(jsonio.dumps(stats))
    out.pop("generated_at")
    out["totals"].pop("rate", None)
    for block in out["datasets"].values():
        block.pop("rate", None)
    return out


def test_the_stats_json_asset_writes_the_same_numbers_as_collect(
    sample_run: Materialized,
) -> None:
    assert comparable(sample_run.written_stats()) == comparable(sample_run.engine)


def test_the_stats_are_written_although_error_checks_failed(sample_run: Materialized) -> None:
    failed_errors = [
        e
        for e in sample_run.result.get_asset_check_evaluations()
        if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR
    ]
    assert failed_errors
    assert sample_run.written_stats()["totals"]["quality"]["status"] == "error"


def test_the_stats_json_metadata_counts_datasets_by_status(sample_run: Materialized) -> None:
    metadata = sample_run.materializations()["stats_json"]
    statuses = [b["quality"]["status"] for b in sample_run.engine["datasets"].values()]
    for status in ("ok", "warn", "error"):
        assert metadata[f"datasets_{status}"] == statuses.count(status)
    assert metadata["total_comp"] == sample_run.engine["totals"]["total_comp"]
    assert metadata["path"] == str(sample_run.location.config.stats_path)


def test_every_dataset_present_passes_on_the_sample_tree(sample_run: Materialized) -> None:
    check = sample_run.checks()[("stats_json", "every_dataset_present")]
    assert check.passed
    assert check.metadata["datasets_present"].value == len(sample_run.engine["datasets"])


def test_every_dataset_present_fails_when_a_loaded_dataset_vanished(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data", records=4)
    location = location_for(root, tmp_path / "dagster")
    shutil.rmtree(root / "warn_think_leaks")
    run = materialize_all(location)
    check = next(
        e for e in run.get_asset_check_evaluations() if e.check_name == "every_dataset_present"
    )
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["missing"].value == ["warn_think_leaks"]


def test_without_a_data_root_stats_json_fails_naming_the_variable(tmp_path: Path) -> None:
    location = load_location(env={"DAGSTER_HOME": str(tmp_path)})
    assert location.specs == []
    run = materialize_all(location)
    assert not run.success
    failure = next(e for e in run.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE)
    assert "GENLEDGER_DATA_ROOT is not set" in str(failure.step_failure_data.error)


def test_a_missing_data_root_is_named_in_the_load_problem(tmp_path: Path) -> None:
    location = load_location(env={"GENLEDGER_DATA_ROOT": str(tmp_path / "nowhere")})
    assert location.problem is not None
    assert "GENLEDGER_DATA_ROOT" in location.problem and "does not exist" in location.problem
