"""The per-dataset file assets and their checks, materialised on a real instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from assets.naming import dataset_key
from checks.asset_checks import families_for
from definitions import build_defs
from genledger.rules.catalogue import RULES_BY_NAME
from genledger.synth.records import line
from genledger.synth.tree import write_sample_tree

from .conftest import Materialized, location_for, materialize_all

SEVERITIES = {"error": dg.AssetCheckSeverity.ERROR, "warn": dg.AssetCheckSeverity.WARN}


def expected_families(block: dict[str, Any]) -> dict[str, tuple[dg.AssetCheckSeverity, int]]:
    """Check family -> (severity, failure count) implied by the engine's failures of a dataset."""
    out: dict[str, tuple[dg.AssetCheckSeverity, int]] = {}
    for failure in block["quality"]["failures"]:
        family = RULES_BY_NAME[failure["check"]].family
        severity, count = out.get(family, (dg.AssetCheckSeverity.WARN, 0))
        if failure["severity"] == "error":
            severity = dg.AssetCheckSeverity.ERROR
        out[family] = (severity, count + failure["count"])
    return out


def failed(run: Materialized, dataset: str) -> dict[str, tuple[dg.AssetCheckSeverity, int]]:
    """Family -> (severity, failure_count) of the failed checks on one dataset's assets."""
    prefix = dataset_key(dataset) + "/"
    return {
        name: (e.severity, int(e.metadata["failure_count"].value))
        for (asset, name), e in run.checks().items()
        if asset.startswith(prefix) and not e.passed
    }


def test_every_asset_of_the_sample_tree_materializes(sample_run: Materialized) -> None:
    assert sample_run.result.success
    asset = {"pretokenized": "tokenized_data", "inference": "raw_responses"}
    expected = {"stats_json"} | {
        f"{dataset_key(name)}/{asset[block['kind']]}"
        for name, block in sample_run.engine["datasets"].items()
    }
    assert set(sample_run.materializations()) == expected


def test_every_check_of_every_file_asset_is_evaluated(sample_run: Materialized) -> None:
    evaluated = set(sample_run.checks())
    for spec in sample_run.location.specs:
        for role in spec.roles:
            key = spec.asset_key(role).to_user_string()
            assert {(key, family) for family in families_for(role)} <= evaluated
    assert ("stats_json", "every_dataset_present") in evaluated


def test_the_clean_datasets_pass_every_check(sample_run: Materialized) -> None:
    for name in ("clean_chat_then_flat", "A1_pretokenized"):
        assert sample_run.engine["datasets"][name]["quality"]["status"] == "ok"
        assert failed(sample_run, name) == {}


def test_the_warn_dataset_fails_only_warn_checks_with_the_engines_counts(
    sample_run: Materialized,
) -> None:
    block = sample_run.engine["datasets"]["warn_think_leaks"]
    assert block["quality"]["status"] == "warn"
    got = failed(sample_run, "warn_think_leaks")
    assert got == expected_families(block)
    assert {severity for severity, _ in got.values()} == {dg.AssetCheckSeverity.WARN}
    assert got["no_think_tag_leaks"][1] == block["quality"]["think_tag_leaks"]


def test_the_error_dataset_fails_error_checks_with_the_engines_counts(
    sample_run: Materialized,
) -> None:
    block = sample_run.engine["datasets"]["error_missing_tokens"]
    got = failed(sample_run, "error_missing_tokens")
    assert got == expected_families(block)
    assert got["responses_have_valid_token_counts"] == (
        dg.AssetCheckSeverity.ERROR,
        block["quality"]["missing_tokens"],
    )
    assert got["dataset_has_token_counts"][0] == dg.AssetCheckSeverity.ERROR


def test_check_results_carry_the_contracts_metadata(sample_run: Materialized) -> None:
    key = f"{dataset_key('warn_think_leaks')}/raw_responses"
    leak = sample_run.checks()[(key, "no_think_tag_leaks")]
    metadata = {k: v.value for k, v in leak.metadata.items()}
    block = sample_run.engine["datasets"]["warn_think_leaks"]
    assert metadata["dataset"] == "warn_think_leaks"
    assert metadata["rows_checked"] == block["n_done"]
    assert metadata["rules"] == {"think_tag_leaks": block["quality"]["think_tag_leaks"]}
    examples = next(f for f in block["quality"]["failures"] if f["check"] == "think_tag_leaks")
    lines = str(metadata["examples"]).splitlines()
    assert len(lines) == len(examples["examples"])
    assert all(
        f"raw_responses.jsonl:{e['line']}" in line
        for e, line in zip(examples["examples"], lines, strict=True)
    )
    passed = sample_run.checks()[(key, "record_ids_unique")]
    assert passed.passed and passed.metadata["failure_count"].value == 0


def test_materializations_carry_numbers_the_ui_can_plot(sample_run: Materialized) -> None:
    block = sample_run.engine["datasets"]["clean_chat_then_flat"]
    got = sample_run.materializations()[f"{dataset_key('clean_chat_then_flat')}/raw_responses"]
    assert got["dataset"] == "clean_chat_then_flat"
    assert got["records"] == got["dagster/row_count"] == block["n_done"]
    assert got["total_comp"] == block["total_comp"]
    assert got["avg_comp"] == block["avg_comp"]
    assert got["bytes"] == block["files"]["raw_responses.jsonl"]["bytes"]
    assert got["pending_bytes"] == 0
    assert {k: v for k, v in got.items() if k.startswith("format/")} == {
        f"format/{fmt}": n for fmt, n in block["formats"].items()
    }
    pre = sample_run.materializations()[f"{dataset_key('A1_pretokenized')}/tokenized_data"]
    assert pre["total_tokens"] == sample_run.engine["datasets"]["A1_pretokenized"]["total_tokens"]


def test_the_column_schema_is_stated_by_the_asset_not_by_each_materialization(
    sample_run: Materialized,
) -> None:
    defs = build_defs(sample_run.location)
    for role, column in (("raw_responses", "missing_tokens"), ("tokenized_data", "n_tokens")):
        name = "clean_chat_then_flat" if role == "raw_responses" else "A1_pretokenized"
        key = dg.AssetKey([dataset_key(name), role])
        schema = defs.resolve_assets_def(key).specs_by_key[key].metadata["dagster/column_schema"]
        assert column in [c.name for c in schema.columns]
        assert "dagster/column_schema" not in sample_run.materializations()[key.to_user_string()]


def test_an_empty_file_fails_files_have_records_as_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "just started").mkdir(parents=True)
    (root / "just started" / "raw_responses.jsonl").write_bytes(b"")
    run = materialize_all(location_for(root, tmp_path / "dagster"))
    evaluations = {e.check_name: e for e in run.get_asset_check_evaluations()}
    empty = evaluations["files_have_records"]
    assert not empty.passed and empty.severity == dg.AssetCheckSeverity.WARN
    assert "no records yet" in str(empty.metadata["examples"].value)
    others = [e for name, e in evaluations.items() if name != "files_have_records"]
    assert all(e.passed for e in others if e.asset_key != dg.AssetKey("stats_json"))
    assert "no records yet" in str(evaluations["no_think_tag_leaks"].metadata["note"].value)


def test_a_dataset_folder_name_with_spaces_dots_and_dashes_gets_a_valid_key(
    tmp_path: Path,
) -> None:
    root = write_sample_tree(tmp_path / "data", records=6)
    (root / "clean_chat_then_flat").rename(root / "B2 open-code.v1")
    run = materialize_all(location_for(root, tmp_path / "dagster"))
    assert run.success
    events = {
        e.asset_key: e.materialization.metadata for e in run.get_asset_materialization_events()
    }
    metadata = events[dg.AssetKey(["B2_open_code_v1", "raw_responses"])]
    assert metadata["dataset"].value == "B2 open-code.v1"


def test_a_dataset_with_both_files_reports_each_files_failures_on_its_own_asset(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    folder = root / "both"
    folder.mkdir(parents=True)
    good = line({"id": "a", "completion_tokens": 5, "output_ids": [1, 2, 3, 4, 5]})
    (folder / "raw_responses.jsonl").write_bytes(good + b"{not json\n")
    (folder / "tokenized_data.jsonl").write_bytes(line({"input_ids": [1, 2], "loss_mask": [1]}))
    (root / "not started").mkdir()
    (root / "not started" / "prompts.jsonl").write_bytes(line({"id": 1}))
    run = materialize_all(location_for(root, tmp_path / "dagster"))
    assert run.success
    got = {
        (e.asset_key.to_user_string(), e.check_name): e
        for e in run.get_asset_check_evaluations()
        if not e.passed
    }
    assert set(got) == {
        ("both/raw_responses", "json_lines_parse"),
        ("both/tokenized_data", "loss_masks_match_input_ids"),
    }
    assert all(e.severity == dg.AssetCheckSeverity.ERROR for e in got.values())
    assert got[("both/raw_responses", "json_lines_parse")].metadata["rows_checked"].value == 2


def test_one_file_asset_of_a_dataset_can_be_materialized_alone(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "both").mkdir(parents=True)
    (root / "both" / "raw_responses.jsonl").write_bytes(line({"id": "a", "completion_tokens": 5}))
    (root / "both" / "tokenized_data.jsonl").write_bytes(line({"input_ids": [1], "loss_mask": [1]}))
    defs = build_defs(location_for(root, tmp_path / "dagster"))
    with dg.instance_for_test() as instance:
        run = dg.materialize(
            list(defs.assets or []),
            instance=instance,
            selection=[dg.AssetKey(["both", "raw_responses"])],
        )
    keys = {e.asset_key for e in run.get_asset_materialization_events()}
    assert keys == {dg.AssetKey(["both", "raw_responses"])}
    checked = {e.asset_key for e in run.get_asset_check_evaluations()}
    assert checked == {dg.AssetKey(["both", "raw_responses"])}


def test_sealed_shards_show_their_kinds_and_compression_and_unrecognised_files_warn(
    tmp_path: Path,
) -> None:
    from ..genledger.shards import encode, write

    root = tmp_path / "data"
    records = [{"id": f"r{i}", "completion_tokens": 3} for i in range(5)]
    tokenized = [{"input_ids": [1, 2], "loss_mask": [0, 1]}] * 3
    write(root / "ds" / "part-00000" / "raw_responses.jsonl.gz", encode(records, "jsonl.gz"))
    write(root / "ds" / "part-00001" / "raw_responses.jsonl.zst", encode(records, "jsonl.zst"))
    write(root / "ds" / "tokenized_data.parquet", encode(tokenized, "parquet"))
    write(root / "ds" / "outputs.jsonl", b"{}\n")
    write(root / "stray.txt", b"x")
    location = location_for(root, tmp_path / "dagster")
    defs = build_defs(location)
    graph = defs.resolve_asset_graph()
    key = dataset_key("ds")
    kinds = {
        k.to_user_string(): graph.get(k).kinds
        for k in graph.get_all_asset_keys()
        if k.path[0] == key
    }
    assert kinds == {
        f"{key}/raw_responses": {"jsonl", "pandas"},
        f"{key}/tokenized_data": {"parquet", "pandas"},
    }
    result = materialize_all(location)
    run = Materialized(location, result, {})
    meta = run.materializations()[f"{key}/raw_responses"]
    assert meta["compression"] == "gzip, zstd"
    assert meta["forms"] == {"gzip": 1, "zstd": 1}
    assert meta["records"] == 10
    check = run.checks()[(f"{key}/raw_responses", "files_recognised")]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["items"].value == ["outputs.jsonl"]
    assert run.checks()[(f"{key}/tokenized_data", "files_recognised")].passed
    everything = run.checks()[("stats_json", "every_file_recognised")]
    assert not everything.passed and everything.severity == dg.AssetCheckSeverity.WARN
    assert everything.metadata["items"].value == ["ds/outputs.jsonl", "stray.txt"]
