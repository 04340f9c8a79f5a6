"""Asset-check results built from rule tallies: severity, counts and metadata."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from checks.asset_checks import (
    EVERY_DATASET_PRESENT,
    Rows,
    check_specs,
    every_dataset_present,
    families_for,
    family_result,
    role_failures,
)
from genledger.ledger.records import DatasetRecord, DatasetState, FileState
from genledger.ledger.tally import FileTally
from genledger.rules.catalogue import FAMILIES, RULES, Table
from genledger.rules.result import RuleTally

KEY = dg.AssetKey(["ds", "raw_responses"])
ROWS = Rows(lines=10, records=10, files=1)


def example(line: int) -> dict[str, object]:
    """One failing-row example."""
    return {"file": "raw_responses.jsonl", "line": line, "reason": "because"}


def test_every_family_is_checked_on_some_file_asset_or_on_stats_json() -> None:
    on_files = set(families_for("responses")) | set(families_for("tokenized"))
    assert on_files | {EVERY_DATASET_PRESENT} == set(FAMILIES)
    assert {r.family for r in RULES if Table.ROOT in r.tables} == {EVERY_DATASET_PRESENT}


def test_tokenized_assets_get_no_response_checks() -> None:
    response_only = {r.family for r in RULES if r.tables == (Table.RESPONSES,)}
    assert not response_only & set(families_for("tokenized"))


def test_check_specs_are_one_per_family_and_never_blocking() -> None:
    specs = check_specs(KEY, "responses")
    assert [s.name for s in specs] == list(families_for("responses"))
    assert not any(s.blocking for s in specs)


def test_a_family_with_an_error_rule_failing_fails_with_error() -> None:
    failures = {"missing_tokens": RuleTally(3, [example(1), example(2), example(3)])}
    result = family_result(
        KEY, "responses", "responses_have_valid_token_counts", failures, "ds", ROWS
    )
    assert not result.passed and result.severity == dg.AssetCheckSeverity.ERROR
    assert result.metadata["failure_count"].value == 3
    assert result.metadata["rules"].value == {"missing_tokens": 3, "invalid_tokens": 0}
    assert result.metadata["examples"].value.count("raw_responses.jsonl:") == 3


def test_records_whose_usage_numbers_disagree_fail_a_warn_check_with_their_numbers() -> None:
    reason = "openai_chat: total_tokens 109 ≠ prompt 35 + completion 12"
    failures = {"usage_inconsistent": RuleTally(1, [{**example(7), "reason": reason}])}
    result = family_result(KEY, "responses", "usage_numbers_agree", failures, "ds", ROWS)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["rules"].value == {"usage_inconsistent": 1}
    assert reason in result.metadata["examples"].value


def test_a_family_with_only_warn_rules_failing_fails_with_warn() -> None:
    failures = {"think_tag_leaks": RuleTally(2, [example(4), example(9)])}
    result = family_result(KEY, "responses", "no_think_tag_leaks", failures, "ds", ROWS)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["rows_checked"].value == ROWS.records


def test_a_family_without_failures_passes_with_metadata() -> None:
    result = family_result(KEY, "responses", "record_ids_unique", {}, "ds", ROWS)
    assert result.passed
    assert result.metadata["failure_count"].value == 0
    assert result.metadata["dataset"].value == "ds"


def test_role_failures_split_file_rules_by_the_role_of_the_file() -> None:
    broken = FileState("ds", "raw_responses.jsonl", "responses")
    broken.tally = FileTally.of(records=2)
    broken.tally.failures = {"malformed_lines": RuleTally(1, [example(3)])}
    empty = FileState("ds", "tokenized_data.jsonl", "tokenized")
    rules = DatasetState("sig", {"duplicate_ids": RuleTally(1, [example(2)])})
    record = DatasetRecord("ds", "/root", {f.name: f for f in (broken, empty)}, rules)
    responses, tokenized = role_failures(record, "responses"), role_failures(record, "tokenized")
    assert {k: v.count for k, v in responses.items()} == {"malformed_lines": 1, "duplicate_ids": 1}
    assert {k: v.count for k, v in tokenized.items()} == {"empty_files": 1}


def test_every_dataset_present_names_the_missing_dataset() -> None:
    result = every_dataset_present({"datasets": {"a": {}}}, ["a", "b c"])
    assert not result.passed and result.severity == dg.AssetCheckSeverity.ERROR
    assert result.metadata["missing"].value == ["b c"]
    assert every_dataset_present({"datasets": {"a": {}}}, ["a"]).passed


def test_failed_requests_and_empty_outputs_carry_their_reasons_in_the_check_metadata() -> None:
    failures = {"failed_requests": RuleTally(4, [example(1)])}
    reasons = {"failed_requests": {"errored": 3, "expired": 1}, "empty_outputs": {"length": 2}}
    result = family_result(KEY, "responses", "requests_succeeded", failures, "ds", ROWS, reasons)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["reasons"].value == {"failed_requests": {"errored": 3, "expired": 1}}
    empty = {"empty_outputs": RuleTally(2, [example(5)])}
    family = "responses_have_visible_output"
    result = family_result(KEY, "responses", family, empty, "ds", ROWS, reasons)
    assert result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["reasons"].value == {"empty_outputs": {"length": 2}}


def test_the_weighed_health_rules_take_the_stats_blocks_verdict() -> None:
    raw = FileTally(failures={"truncated_outputs": RuleTally(3, [example(2)])})
    record = DatasetRecord(
        "ds",
        "/r",
        {"raw_responses.jsonl": FileState("ds", "raw_responses.jsonl", "responses", tally=raw)},
    )
    under = {"quality": {"failures": []}}
    assert "truncated_outputs" not in role_failures(record, "responses", under)
    drift = {"check": "output_drift", "count": 2, "examples": [example(0)]}
    over = {"quality": {"failures": [
        {"check": "truncated_outputs", "count": 3, "examples": [example(2)]}, drift]}}  # fmt: skip
    found = role_failures(record, "responses", over)
    assert found["truncated_outputs"].count == 3 and found["output_drift"].count == 2


def test_a_failing_health_check_carries_its_detail_line() -> None:
    failures = {"duplicate_outputs": RuleTally(52, [example(9)])}
    said = "52 of 1,000 answers (5.2%) repeat an earlier one; threshold 1.0%"
    family = "outputs_not_repeated"
    result = family_result(KEY, "responses", family, failures, "ds", ROWS, None, (), said)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["detail"].value == said
    assert {"outputs_not_truncated", "outputs_not_drifting"} <= set(families_for("responses"))
    assert {"prompts_masked", "samples_fit_max_seq_len"} <= set(families_for("tokenized"))


def test_the_provider_books_check_takes_the_stats_blocks_verdict() -> None:
    record = DatasetRecord(
        "ds", "/r", {"raw_responses.jsonl": FileState("ds", "raw_responses.jsonl", "responses")}
    )
    assert "provider_mismatch" not in role_failures(
        record, "responses", {"quality": {"failures": []}}
    )
    mismatch = {"check": "provider_mismatch", "count": 1, "examples": [example(0)]}
    found = role_failures(record, "responses", {"quality": {"failures": [mismatch]}})
    assert found["provider_mismatch"].count == 1
    result = family_result(KEY, "responses", "provider_books_agree", found, "ds", ROWS, None)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN


def test_a_dataset_counted_then_deleted_is_missing_even_from_a_fresh_discovery(
    tmp_path: Path,
) -> None:
    import shutil

    from genledger.config import Config
    from genledger.refresh.collect import refresh
    from genledger.synth.tree import write_sample_tree
    from genledger.tail.discovery import discover

    root = write_sample_tree(tmp_path / "data", records=6)
    config = Config(data_root=root, stats_path=tmp_path / "s.json", state_dir=tmp_path / "st")
    assert every_dataset_present(
        refresh(config).stats, [d.name for d in discover(root, config)]
    ).passed
    shutil.rmtree(root / "warn_think_leaks")
    stats = refresh(config).stats
    fresh = [d.name for d in discover(root, config)]  # what a reloaded location would see
    result = every_dataset_present(stats, fresh)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.ERROR
    assert result.metadata["missing"].value == ["warn_think_leaks"]
