"""The composition root: what the code location holds, with and without a data root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets.spec import load_location
from definitions import build_defs
from genledger.config import Config
from genledger.synth.tree import write_sample_tree

PROJECT = Path(__file__).resolve().parents[1]

# The snapshot: renaming an asset or a check breaks dashboards and alerts, so it must be deliberate.
RESPONSE_CHECKS = [
    "dataset_has_token_counts",
    "files_have_records",
    "files_readable",
    "files_recognised",
    "json_lines_parse",
    "lines_end_with_newline",
    "no_think_tag_leaks",
    "outputs_not_drifting",
    "outputs_not_repeated",
    "outputs_not_truncated",
    "provider_books_agree",
    "record_ids_unique",
    "requests_succeeded",
    "responses_have_nonzero_token_counts",
    "responses_have_valid_token_counts",
    "responses_have_visible_output",
    "responses_report_their_prompt",  # v4 §13a: prompt_missing
    "token_counts_match_output_ids",
    "usage_numbers_agree",
]
TOKENIZED_CHECKS = [
    "files_have_records",
    "files_readable",
    "files_recognised",
    "json_lines_parse",
    "lines_end_with_newline",
    "loss_masks_match_input_ids",
    "prompts_masked",
    "samples_fit_max_seq_len",
    "samples_have_trainable_tokens",
    "tokenized_rows_have_tokens",
]
SNAPSHOT = {
    "A1_pretokenized/tokenized_data": TOKENIZED_CHECKS,
    "clean_chat_then_flat/raw_responses": RESPONSE_CHECKS,
    "error_missing_tokens/raw_responses": RESPONSE_CHECKS,
    "stats_json": ["every_dataset_present", "every_file_recognised"],
    "warn_think_leaks/raw_responses": RESPONSE_CHECKS,
}


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without genledger or Dagster settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENLEDGER_", "DAGSTER_"))}
    return {**env, **extra}


def test_the_sample_tree_gives_the_snapshotted_asset_keys_and_check_names(
    tmp_path: Path,
) -> None:
    root = write_sample_tree(tmp_path / "data", records=4)
    location = load_location(Config(data_root=root), env={"DAGSTER_HOME": str(tmp_path)})
    graph = build_defs(location).resolve_asset_graph()
    checks: dict[str, list[str]] = {}
    for key in graph.asset_check_keys:
        checks.setdefault(key.asset_key.to_user_string(), []).append(key.name)
    keys = sorted(k.to_user_string() for k in graph.get_all_asset_keys())
    assert keys == sorted(SNAPSHOT)
    assert {k: sorted(v) for k, v in checks.items()} == SNAPSHOT


def test_definitions_load_with_the_data_root_unset(tmp_path: Path) -> None:
    defs = build_defs(load_location(env={"DAGSTER_HOME": str(tmp_path)}))
    dg.Definitions.validate_loadable(defs)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    assert keys == {dg.AssetKey("stats_json")}
    assert {s.name for s in defs.schedules or []} == {"refresh_everything"}
    assert {"dataset_files_changed", "genledger_retention"} <= {s.name for s in defs.sensors or []}


def test_importing_the_module_without_a_data_root_logs_one_clear_line(tmp_path: Path) -> None:
    code = "import definitions; print(len(definitions.defs.assets or []))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT,
        env=clean_env(DAGSTER_HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "GENLEDGER_DATA_ROOT is not set" in done.stderr
    assert "Traceback" not in done.stderr


def test_notification_sensors_join_the_definitions_when_their_module_exists(
    tmp_path: Path,
) -> None:
    try:
        from automation.notifications import build_notification_sensors
    except ImportError:
        pytest.skip("automation.notifications is not there yet")
    location = load_location(env={"DAGSTER_HOME": str(tmp_path)})
    names = {s.name for s in build_defs(location).sensors or []}
    assert {s.name for s in build_notification_sensors(location.config)} <= names


@pytest.mark.parametrize("with_root", [True, False], ids=["with_data_root", "without_data_root"])
def test_dagster_definitions_validate_passes(tmp_path: Path, with_root: bool) -> None:
    extra = {"DAGSTER_HOME": str(tmp_path)}
    if with_root:
        extra["GENLEDGER_DATA_ROOT"] = str(write_sample_tree(tmp_path / "data", records=4))
    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=PROJECT,
        env=clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_bad_declared_format_is_named_when_the_location_loads(tmp_path: Path) -> None:
    toml = tmp_path / "genledger.toml"
    toml.write_text('[[formats]]\nname = "mine"\ncompletion_tokens = "a..b"\n')
    env = {"DAGSTER_HOME": str(tmp_path), "GENLEDGER_CONFIG": str(toml)}
    location = load_location(env={**env, "GENLEDGER_DATA_ROOT": str(tmp_path)})
    assert location.problem is not None and "bad path 'a..b'" in location.problem
