"""The rule catalogue: stats JSON counter names, severities, the shared check families."""

from __future__ import annotations

import pandas as pd
import pytest

from genledger.rules.catalogue import (
    COUNTER_NAMES,
    FAMILIES,
    RULES,
    RULES_BY_NAME,
    Severity,
    Table,
    rules_of,
    worst,
)

DESIGN_COUNTERS = (
    "malformed_lines",
    "missing_tokens",
    "zero_tokens",
    "invalid_tokens",
    "count_mismatch",
    "usage_inconsistent",  # v3 (docs/formats.md, docs/checks.md)
    "failed_requests",
    "empty_outputs",
    "duplicate_ids",
    "think_tag_leaks",
    "tokenized_missing_tokens",
    "tokenized_zero_tokens",
    "loss_mask_mismatch",
    "no_trainable_tokens",
    # v3: run health, all warnings
    "truncated_outputs",
    "output_drift",
    "duplicate_outputs",
    "prompt_not_masked",
    "over_length",
)
# docs/checks.md: ERROR for missing/zero/invalid/malformed/mismatched-loss-mask/aggregate zero.
DESIGN_ERRORS = {
    "malformed_lines",
    "missing_tokens",
    "zero_tokens",
    "invalid_tokens",
    "tokenized_missing_tokens",
    "tokenized_zero_tokens",
    "loss_mask_mismatch",
    "all_tokens_zero_or_missing",
}
CONTRACT_FAMILIES = {
    "json_lines_parse",
    "responses_have_valid_token_counts",
    "responses_have_nonzero_token_counts",
    "token_counts_match_output_ids",
    "usage_numbers_agree",
    "responses_report_their_prompt",  # v4 §13a: prompt_missing
    "provider_books_agree",  # v4 §13c: provider_mismatch
    "requests_succeeded",
    "responses_have_visible_output",
    "record_ids_unique",
    "no_think_tag_leaks",
    "tokenized_rows_have_tokens",
    "loss_masks_match_input_ids",
    "samples_have_trainable_tokens",
    "files_readable",
    "files_have_records",
    "files_recognised",
    "dataset_has_token_counts",
    "lines_end_with_newline",
    "every_dataset_present",
    "outputs_not_truncated",
    "outputs_not_repeated",
    "outputs_not_drifting",
    "prompts_masked",
    "samples_fit_max_seq_len",
}


def test_every_design_counter_is_a_rule_and_names_are_unique() -> None:
    assert set(DESIGN_COUNTERS) <= set(COUNTER_NAMES)
    assert len(COUNTER_NAMES) == len(set(COUNTER_NAMES))
    assert {"unreadable_files", "empty_files", "all_tokens_zero_or_missing"} <= set(COUNTER_NAMES)


def test_design_error_rules_are_errors_and_design_warn_rules_are_warnings() -> None:
    for name in (*DESIGN_COUNTERS, "all_tokens_zero_or_missing"):
        expected = Severity.ERROR if name in DESIGN_ERRORS else Severity.WARN
        assert RULES_BY_NAME[name].severity is expected, name


def test_families_are_exactly_the_shared_asset_check_names() -> None:
    assert set(FAMILIES) == CONTRACT_FAMILIES


def test_malformed_lines_are_checked_on_both_file_tables() -> None:
    assert RULES_BY_NAME["malformed_lines"] in rules_of(Table.RESPONSES)
    assert RULES_BY_NAME["malformed_lines"] in rules_of(Table.TOKENIZED)
    assert RULES_BY_NAME["duplicate_ids"] in rules_of(Table.IDS)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_reason_is_a_sentence_even_on_a_row_of_nulls(rule) -> None:
    row = {
        "file": "raw_responses.jsonl",
        "line": 3,
        "offset": 40,
        "format": pd.NA,
        "completion_tokens": pd.NA,
        "count_raw": None,
        "output_len": pd.NA,
        "n_tokens": pd.NA,
        "loss_len": pd.NA,
        "record_id": None,
        "request_detail": None,
        "parse_error": None,
        "error": None,
        "n_done": 0,
    }
    reason = rule.reason(row)
    assert isinstance(reason, str) and reason.strip()


def test_invalid_and_mismatch_reasons_quote_the_values() -> None:
    invalid = RULES_BY_NAME["invalid_tokens"].reason(
        {"format": "flat", "count_raw": "'1577'", "count_type": "string"}
    )
    assert "'1577'" in invalid and "string" in invalid
    mismatch = RULES_BY_NAME["count_mismatch"].reason(
        {"format": "flat", "completion_tokens": 9, "output_len": 3}
    )
    assert "9" in mismatch and "3" in mismatch


def test_worst_status_is_error_then_warn_then_ok() -> None:
    assert worst([]) == "ok"
    assert worst([Severity.WARN]) == "warn"
    assert worst([Severity.WARN, Severity.ERROR]) == "error"


def test_a_string_id_that_reads_nan_is_quoted_as_is() -> None:
    assert "'nan'" in RULES_BY_NAME["duplicate_ids"].reason({"record_id": "nan"})
    assert "None" in RULES_BY_NAME["duplicate_ids"].reason({"record_id": float("nan")})
