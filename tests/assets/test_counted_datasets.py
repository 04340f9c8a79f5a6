"""What was counted is remembered: a dataset folder deleted (or unmounted) after it was counted
keeps its assets, which fail, and `every_dataset_present` names it — even after the code
location reloads and discovers the root afresh. And dataset keys never collide, even with a
folder literally named like another's hashed key."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import dagster as dg

from assets.naming import sanitize
from definitions import build_defs
from genledger.synth.records import line
from genledger.synth.tree import write_sample_tree

from .conftest import location_for, materialize_all

GONE = "warn_think_leaks"
STATS = dg.AssetKey("stats_json")


def test_a_deleted_dataset_folder_fails_its_file_asset_and_every_dataset_present(
    tmp_path: Path,
) -> None:
    root = write_sample_tree(tmp_path / "data", records=6)
    first = materialize_all(location_for(root, tmp_path / "dagster"))
    assert first.success
    shutil.rmtree(root / GONE)
    reloaded = location_for(root, tmp_path / "dagster")  # each run loads the location afresh
    assert GONE in {spec.name for spec in reloaded.specs}
    run = materialize_all(reloaded)
    evaluations = run.get_asset_check_evaluations()
    [present] = [e for e in evaluations if e.check_name == "every_dataset_present"]
    assert not present.passed and present.severity == dg.AssetCheckSeverity.ERROR
    assert GONE in str(present.description)
    mine = [e for e in evaluations if e.asset_key == dg.AssetKey([GONE, "raw_responses"])]
    failing = {e.check_name: e.severity for e in mine if not e.passed}
    assert failing.get("files_readable") == dg.AssetCheckSeverity.ERROR
    others = [e for e in evaluations if e.asset_key.path[0] == "clean_chat_then_flat"]
    assert others and all(e.passed for e in others)


def test_a_dataset_never_counted_is_not_invented(tmp_path: Path) -> None:
    root = write_sample_tree(tmp_path / "data", records=6)
    location = location_for(root, tmp_path / "dagster")  # nothing counted yet
    assert {spec.name for spec in location.specs} == {p.name for p in root.iterdir()}


def test_a_folder_named_like_a_hashed_key_loads_beside_the_names_it_mimics(tmp_path: Path) -> None:
    digest = hashlib.blake2b(b"a-b", digest_size=3).hexdigest()  # the hash the keys append
    names = ["a-b", "a_b", f"a_b_{digest}"]
    root = tmp_path / "data"
    for i, name in enumerate(names):
        (root / name).mkdir(parents=True)
        record = {"id": f"r{i}", "text": "hi", "meta_info": {"completion_tokens": 3 + i}}
        (root / name / "raw_responses.jsonl").write_bytes(line(record))
    location = location_for(root, tmp_path / "dagster")
    keys = {spec.name: spec.key for spec in location.specs}
    assert sorted(keys) == sorted(names)
    assert len(set(keys.values())) == 3
    assert keys["a_b"] == "a_b" and keys[f"a_b_{digest}"] == f"a_b_{digest}"
    assert sanitize(keys["a-b"]) == keys["a-b"]
    defs = build_defs(location)
    dg.Definitions.validate_loadable(defs)
    run = materialize_all(location)
    assert run.success
    recorded = {e.asset_key.path[0] for e in run.get_asset_materialization_events()}
    assert set(keys.values()) <= recorded


def test_the_refresh_job_records_a_deleted_dataset_as_failing_after_a_reload(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from assets.refresh_job import build_refresh_job
    from genledger.config import DagsterSettings

    root = write_sample_tree(tmp_path / "data", records=6)
    location = location_for(root, tmp_path / "dagster")
    location = replace(
        location, config=replace(location.config, dagster=DagsterSettings(record_seconds=600))
    )
    with dg.instance_for_test() as instance:
        assert build_refresh_job(location).execute_in_process(instance=instance).success
        shutil.rmtree(root / GONE)
        reloaded = location_for(root, tmp_path / "dagster")
        reloaded = replace(reloaded, config=location.config)
        result = build_refresh_job(reloaded).execute_in_process(instance=instance)
        assert result.success
        evaluations = result.get_asset_check_evaluations()
    [present] = [e for e in evaluations if e.check_name == "every_dataset_present"]
    assert not present.passed and GONE in str(present.description)
    mine = [e for e in evaluations if e.asset_key == dg.AssetKey([GONE, "raw_responses"])]
    failing = {e.check_name: e.severity for e in mine if not e.passed}
    assert failing.get("files_readable") == dg.AssetCheckSeverity.ERROR
