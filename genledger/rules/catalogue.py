"""The catalogue of quality rules: name, severity, family and how to explain a failing row.

Names are the stats JSON's quality counters (DESIGN §5); severities follow DESIGN §6. This
module imports neither pandas nor Dagster, so the cheap no-op refresh can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How bad a failing rule is; the stats JSON spells these in lower case."""

    ERROR = "error"
    WARN = "warn"


class Table(StrEnum):
    """Which table a rule is checked on."""

    RESPONSES = "responses"
    TOKENIZED = "tokenized"
    IDS = "ids"
    FILES = "files"
    DATASET = "dataset"


Row = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """One named invariant: its stats counter, severity, Dagster check family and wording."""

    name: str
    severity: Severity
    tables: tuple[Table, ...]
    family: str
    description: str
    reason: Callable[[Row], str]


def _value(row: Row, key: str) -> Any:
    """A row value with pandas' missing markers turned into None."""
    value = row.get(key)
    # pd.NA has no truth value and NaN is not equal to itself: test those before comparing.
    if value is None or (not isinstance(value, str) and str(value) in ("<NA>", "nan", "NaT")):
        return None
    return value


def _invalid_reason(row: Row) -> str:
    raw = _value(row, "count_raw")
    kind = _value(row, "count_type")
    if raw is None:  # a negative int keeps its value in completion_tokens
        raw, kind = _value(row, "completion_tokens"), "negative int"
    return f"{_value(row, 'format')}: completion count {raw} is a {kind}, not an int >= 0"


def _mismatch_reason(row: Row) -> str:
    return (
        f"{row.get('format')}: reported {_value(row, 'completion_tokens')} completion tokens "
        f"but len(output_ids) is {_value(row, 'output_len')}"
    )


def _missing_reason(row: Row) -> str:
    """What was looked for and which keys the record has, so a user can declare it."""
    detail = _value(row, "missing_detail") or "no completion-token field in any known format"
    fmt = _value(row, "format")
    return f"{fmt}: {detail}" if fmt else detail


RULES: tuple[Rule, ...] = (
    Rule(
        "malformed_lines",
        Severity.ERROR,
        (Table.RESPONSES, Table.TOKENIZED),
        "json_lines_parse",
        "Every complete line is a JSON object or an array of objects.",
        lambda r: f"{_value(r, 'parse_error')} (byte offset {_value(r, 'offset')})",
    ),
    Rule(
        "missing_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_valid_token_counts",
        "Every response record (not a failed request, not a stream fragment) carries a "
        "completion-token count in a declared place.",
        _missing_reason,
    ),
    Rule(
        "invalid_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_valid_token_counts",
        "Every completion-token count found is a JSON integer >= 0.",
        _invalid_reason,
    ),
    Rule(
        "zero_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_nonzero_token_counts",
        "No response reports zero completion tokens (a failed request's 0 is its failure).",
        lambda r: f"{r.get('format')}: completion count is 0",
    ),
    Rule(
        "count_mismatch",
        Severity.WARN,
        (Table.RESPONSES,),
        "token_counts_match_output_ids",
        "A reported count and len(output_ids) differ by at most 1 (the matched EOS).",
        _mismatch_reason,
    ),
    Rule(
        "failed_requests",
        Severity.WARN,
        (Table.RESPONSES,),
        "requests_succeeded",
        "No request failed (batch errors, aborts, blocked prompts, failed responses).",
        lambda r: f"{_value(r, 'format')} request failed: {_value(r, 'request_detail')}",
    ),
    Rule(
        "empty_outputs",
        Severity.WARN,
        (Table.RESPONSES,),
        "responses_have_visible_output",
        "A response that generated tokens shows a visible answer (not only hidden reasoning).",
        lambda r: (
            f"{_value(r, 'format')}: {_value(r, 'completion_tokens')} completion tokens "
            f"({_value(r, 'reasoning_tokens') or 'unknown'} reasoning), finish "
            f"{_value(r, 'finish_reason')}, and no visible answer"
        ),
    ),
    Rule(
        "duplicate_ids",
        Severity.WARN,
        (Table.IDS,),
        "record_ids_unique",
        "No response id (custom_id, id, meta_info.id) appears twice in a dataset.",
        lambda r: f"id {_value(r, 'record_id')!r} was already seen",
    ),
    Rule(
        "think_tag_leaks",
        Severity.WARN,
        (Table.RESPONSES,),
        "no_think_tag_leaks",
        "No chat message content holds </think> while reasoning_content/reasoning is null.",
        lambda r: "</think> in message content while reasoning_content/reasoning is null or absent",
    ),
    Rule(
        "tokenized_missing_tokens",
        Severity.ERROR,
        (Table.TOKENIZED,),
        "tokenized_rows_have_tokens",
        "Every tokenized record has an input_ids list.",
        lambda r: "input_ids missing or not a list",
    ),
    Rule(
        "tokenized_zero_tokens",
        Severity.ERROR,
        (Table.TOKENIZED,),
        "tokenized_rows_have_tokens",
        "No tokenized record has an empty input_ids.",
        lambda r: "input_ids is empty",
    ),
    Rule(
        "loss_mask_mismatch",
        Severity.ERROR,
        (Table.TOKENIZED,),
        "loss_masks_match_input_ids",
        "loss_mask, when present, is as long as input_ids.",
        lambda r: (
            f"len(input_ids) {_value(r, 'n_tokens')} != len(loss_mask) {_value(r, 'loss_len')}"
        ),
    ),
    Rule(
        "no_trainable_tokens",
        Severity.WARN,
        (Table.TOKENIZED,),
        "samples_have_trainable_tokens",
        "A non-empty sample has at least one loss_mask 1.",
        lambda r: f"loss_mask sums to 0 over {_value(r, 'n_tokens')} tokens",
    ),
    Rule(
        "unreadable_files",
        Severity.ERROR,
        (Table.FILES,),
        "files_readable",
        "Every dataset file can be opened and read.",
        lambda r: str(_value(r, "error")),
    ),
    Rule(
        "empty_files",
        Severity.WARN,
        (Table.FILES,),
        "files_have_records",
        "A data file holds at least one record (a check never passes on no data).",
        lambda r: "no records yet",
    ),
    Rule(
        "all_tokens_zero_or_missing",
        Severity.ERROR,
        (Table.DATASET,),
        "dataset_has_token_counts",
        "A dataset with responses has at least one valid non-zero completion count.",
        lambda r: f"{_value(r, 'n_done')} responses and not one valid non-zero completion count",
    ),
)

RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}
COUNTER_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(rule.family for rule in RULES))


def rules_of(table: Table) -> tuple[Rule, ...]:
    """The rules checked on one table."""
    return tuple(rule for rule in RULES if table in rule.tables)


def worst(severities: list[Severity]) -> str:
    """`error` if any error, `warn` if any warning, else `ok`."""
    if Severity.ERROR in severities:
        return "error"
    return "warn" if Severity.WARN in severities else "ok"
