"""The catalogue of quality rules: each rule's condition, stated once, with its name,
severity, check family and how to explain a failing row.

A condition is a column expression (`genledger.rules.expr`) over one table's columns; the
refresh evaluates it row by row (`rules.rows`) and the pandera models (`rules.models`) derive
their rule columns from the same expression. Names are the stats JSON's quality counters
(docs/stats-json.md); severities: docs/checks.md. The one rule with no row condition is
`duplicate_ids`: whether an id was seen before depends on the rows before it, so both
evaluations state it as "an id already seen in the dataset" (a set, and `duplicated()`);
`duplicate_prompt_ids` is the same rule over the prompts' ids.
This module imports neither pandas nor Dagster, so the cheap no-op refresh can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from genledger.parse.declarations import BUILT_IN, SELF_HOSTED, inner_candidates
from genledger.parse.formats import FINISH_SEPARATOR
from genledger.parse.schema import RESPONSES, TOKENIZED, Column
from genledger.rules.expr import Expr, col, param


class Severity(StrEnum):
    """How bad a failing rule is; the stats JSON spells these in lower case."""

    ERROR = "error"
    WARN = "warn"


class Table(StrEnum):
    """Which table a rule is checked on."""

    RESPONSES = "responses"
    TOKENIZED = "tokenized"
    IDS = "ids"
    PROMPTS = "prompts"
    FILES = "files"
    FOLDER = "folder"
    DATASET = "dataset"
    ROOT = "root"
    ANSWERS = "answers"
    WINDOWS = "windows"
    PROVIDER = "provider"


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
    when: Expr | None  # the row condition under which the rule fails (None: duplicate_ids)


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


def _empty_reason(row: Row) -> str:
    reasoning = _value(row, "reasoning_tokens")
    hidden = f" ({reasoning} of them reasoning)" if reasoning is not None else ""
    return (
        f"{_value(row, 'format')}: {_value(row, 'completion_tokens')} completion tokens"
        f"{hidden}, finish {_value(row, 'finish_reason')}, and no visible answer"
    )


# Named conditions the rules (and the tallies) share.
PARSED = col("parse_error").is_null()
FOUND = col("count_type").not_null()
COUNT = col("completion_tokens")
COUNTED = (col("count_type") == "int") & (COUNT >= 0)  # a valid count: summed
FAILED = col("failed_request")  # a failed request: its 0 or missing count is its failure
CHUNK = col("stream_chunk")  # a streamed fragment: not a record
# The built-in formats of hosted APIs, which report input tokens on every reply (a pipeline's
# own records and self-hosted servers may leave them out)
PROMPT_FORMATS = tuple(
    dict.fromkeys(
        d.name
        for d in BUILT_IN
        if d.provider not in (None, SELF_HOSTED)
        and any(x.count("prompt_tokens") for x in (d, *inner_candidates(d.inner_formats)))
    )
)
# Tokens generated, nothing visible to train on (the reasoning budget ran out).
EMPTY_OUTPUT = COUNTED & (COUNT > 0) & col("empty_output") & ~FAILED
# Finish reasons that mean the token limit, in every built-in format's spelling (and the
# sources' documented ones: Ollama, Bedrock, Mistral, llama.cpp), and those that mean a
# refusal or a content filter.
LIMIT_REASONS = (
    "length", "max_tokens", "MAX_TOKENS", "max_output_tokens", "model_length",
    "model_context_window_exceeded", "limit",
)  # fmt: skip
REFUSAL_REASONS = (
    "content_filter", "refusal", "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII",
    "RECITATION", "IMAGE_SAFETY", "ERROR_TOXIC", "content_filtered", "guardrail_intervened",
)  # fmt: skip
# A record stopped at the token limit: its (first sample's) finish reason, or a later one's.
TRUNCATED = col("finish_reason").isin(LIMIT_REASONS) | col("more_finishes").isin(
    LIMIT_REASONS, split=FINISH_SEPARATOR
)
REFUSED = col("finish_reason").isin(REFUSAL_REASONS)
HAS_TOKENS = col("n_tokens").not_null()
HAS_MASK = col("loss_len").not_null()
N_TOKENS = col("n_tokens")
ROLES = ("responses", "tokenized")
FILE_ROLES = (*ROLES, "prompts")  # a prompts file is in the files table too (its own rules)
# The columns of each table the rules read (responses and tokenized: the token table, from the
# facts schema), with their types: the row functions index them, the pandera schemas check them.
TABLE_SCHEMAS: dict[Table, tuple[Column, ...]] = {
    Table.RESPONSES: RESPONSES.columns,
    Table.TOKENIZED: TOKENIZED.columns,
    Table.IDS: (
        Column("file", "str", "the shard's path in its dataset folder", False, ""),
        Column("line", "int", "the record's line", False, 0, checks={"ge": 1}),
        Column("record_id", "str", "the record's id", False, ""),
    ),
    Table.PROMPTS: (
        Column("file", "str", "the prompts file's path in its dataset folder", False, ""),
        Column("line", "int", "the prompt's line", False, 0, checks={"ge": 1}),
        Column("prompt_id", "str", "the prompt's id (null: none, or no JSON object)"),
        Column("parse_error", "str", "why the line is no JSON object (null: it is one)"),
    ),
    Table.FILES: (
        Column("file", "str", "the file's path in its dataset folder", False, ""),
        Column("role", "str", "responses, tokenized or prompts", False, "",
               checks={"isin": FILE_ROLES}),
        Column("records", "int", "records counted in the file (prompts: non-blank lines)",
               False, 0, checks={"ge": 0}),
        Column("error", "str", "why the file cannot be read (null: it can)"),
        Column("pending_bytes", "int", "bytes after the last newline", False, 0,
               checks={"ge": 0}),
        Column("settled", "bool", "unchanged for settle_seconds when read", False, False),
        Column("line", "int", "the number the pending line would get (0: none)", False, 0,
               checks={"ge": 0}),
    ),
    Table.FOLDER: (
        Column("file", "str", "a file's path in the dataset folder", False, ""),
        Column("recognised", "bool", "it matches a data-file pattern", False, False),
    ),
    Table.DATASET: (
        Column("n_done", "int", "response records of the dataset", False, 0, checks={"ge": 0}),
        Column("n_nonzero", "int", "valid non-zero completion counts", False, 0,
               checks={"ge": 0}),
    ),
    Table.ROOT: (
        Column("n_datasets", "int", "datasets the data root holds", False, 0, checks={"ge": 0}),
    ),
    Table.ANSWERS: (
        Column("file", "str", "the shard's path in its dataset folder", False, ""),
        Column("line", "int", "the record's line", False, 0, checks={"ge": 1}),
        Column("answer_hash", "int", "the key of the record's visible answer", False, 0),
    ),
    Table.WINDOWS: (
        Column("measure", "str", "a share, the median output or a finish reason", False, ""),
        Column("first", "str", "its value in the dataset's first window", False, ""),
        Column("latest", "str", "its value in the latest window", False, ""),
        Column("moved", "bool", "it moved enough to count as drift", False, False),
    ),
    Table.PROVIDER: (
        Column("file", "str", "the batch status object's path in the dataset folder", False, ""),
        Column("measure", "str", "requests, failed, input_tokens or output_tokens", False, ""),
        Column("provider", "int", "the provider's own count", False, 0, checks={"ge": 0}),
        Column("genledger", "int", "what genledger counted", False, 0, checks={"ge": 0}),
    ),
}  # fmt: skip
TABLE_COLUMNS: dict[Table, tuple[str, ...]] = {
    table: tuple(c.name for c in columns) for table, columns in TABLE_SCHEMAS.items()
}
# Named derived columns of each table, in the pandera models too.
DERIVED: dict[Table, dict[str, Expr]] = {
    Table.RESPONSES: {"counted": COUNTED},
    Table.TOKENIZED: {"has_tokens": HAS_TOKENS},
}

RULES: tuple[Rule, ...] = (
    Rule(
        "malformed_lines",
        Severity.ERROR,
        (Table.RESPONSES, Table.TOKENIZED),
        "json_lines_parse",
        "Every complete line is a JSON object or an array of objects.",
        lambda r: f"{_value(r, 'parse_error')} (byte offset {_value(r, 'offset')})",
        ~PARSED,
    ),
    Rule(
        "missing_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_valid_token_counts",
        "Every response record (not a failed request, not a stream fragment) carries a "
        "completion-token count where its format's declaration says.",
        _missing_reason,
        PARSED & ~FOUND & ~FAILED & ~CHUNK,
    ),
    Rule(
        "invalid_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_valid_token_counts",
        "Every completion-token count found is a JSON integer >= 0.",
        _invalid_reason,
        FOUND & ~COUNTED,
    ),
    Rule(
        "zero_tokens",
        Severity.ERROR,
        (Table.RESPONSES,),
        "responses_have_nonzero_token_counts",
        "No response reports zero completion tokens (a failed request's 0 is its failure).",
        lambda r: f"{r.get('format')}: completion count is 0",
        COUNTED & (COUNT == 0) & ~FAILED,
    ),
    Rule(
        "count_mismatch",
        Severity.WARN,
        (Table.RESPONSES,),
        "token_counts_match_output_ids",
        "A reported count and len(output_ids) differ by at most 1 (the matched EOS).",
        _mismatch_reason,
        COUNTED & ~(col("format") == "derived") & ((COUNT - col("output_len")).abs() > 1),
    ),
    Rule(
        "usage_inconsistent",
        Severity.WARN,
        (Table.RESPONSES,),
        "usage_numbers_agree",
        "A record's own usage numbers agree under its format's meaning: its total is prompt + "
        "completion, its reasoning is no more than its completion, its cached prompt no more "
        "than its prompt.",
        lambda r: f"{_value(r, 'format')}: {_value(r, 'usage_detail')}",
        col("usage_detail").not_null(),
    ),
    Rule(
        "prompt_missing",
        Severity.WARN,
        (Table.RESPONSES,),
        "responses_report_their_prompt",
        "A counted record of a format that reports input tokens carries its input count "
        "(total_prompt sums only those that do: n_prompt_counted).",
        lambda r: f"{_value(r, 'format')}: no input token count",
        COUNTED
        & ~FAILED
        & ~CHUNK
        & col("prompt_tokens").is_null()
        & col("format").isin(PROMPT_FORMATS),
    ),
    Rule(
        "failed_requests",
        Severity.WARN,
        (Table.RESPONSES,),
        "requests_succeeded",
        "No request failed (batch errors, aborts, blocked prompts, failed responses).",
        lambda r: f"{_value(r, 'format')} request failed: {_value(r, 'request_detail')}",
        FAILED,
    ),
    Rule(
        "empty_outputs",
        Severity.WARN,
        (Table.RESPONSES,),
        "responses_have_visible_output",
        "A response that generated tokens shows a visible answer (not only hidden reasoning).",
        _empty_reason,
        EMPTY_OUTPUT,
    ),
    Rule(
        "duplicate_ids",
        Severity.WARN,
        (Table.IDS,),
        "record_ids_unique",
        "No response id (custom_id, id, meta_info.id) appears twice in a dataset.",
        lambda r: f"id {_value(r, 'record_id')!r} was already seen",
        None,
    ),
    Rule(
        "duplicate_prompt_ids",
        Severity.WARN,
        (Table.PROMPTS,),
        "record_ids_unique",
        "No prompt id appears twice in a dataset's prompts files (the join counts each id once).",
        lambda r: f"prompt id {_value(r, 'prompt_id')!r} was already seen",
        None,
    ),
    Rule(
        "malformed_prompts",
        Severity.ERROR,
        (Table.PROMPTS,),
        "json_lines_parse",
        "Every non-blank line of a prompts file is a JSON value (one that is not cannot be "
        "joined to its responses).",
        lambda r: str(_value(r, "parse_error")),
        col("parse_error").not_null(),
    ),
    Rule(
        "think_tag_leaks",
        Severity.WARN,
        (Table.RESPONSES,),
        "no_think_tag_leaks",
        "No chat message content holds </think> or an unclosed <think> while "
        "reasoning_content/reasoning is null.",
        lambda r: (
            "a think tag (</think>, or <think> of a reply cut inside it) in message "
            "content while reasoning_content/reasoning is null or absent"
        ),
        col("think_leak"),
    ),
    Rule(
        "truncated_outputs",
        Severity.WARN,
        (Table.RESPONSES,),
        "outputs_not_truncated",
        "At most `[health] truncated_share` (default 5 %) of a dataset's records stop at the "
        "token limit (finish length, max_tokens, MAX_TOKENS, max_output_tokens, ...).",
        lambda r: (
            f"{_value(r, 'format')}: finish {_value(r, 'finish_reason')} after "
            f"{_value(r, 'completion_tokens')} completion tokens: cut at the token limit"
        ),
        PARSED & ~CHUNK & TRUNCATED,
    ),
    Rule(
        "duplicate_outputs",
        Severity.WARN,
        (Table.ANSWERS,),
        "outputs_not_repeated",
        "At most `[health] duplicate_share` (default 1 %) of a dataset's records repeat an "
        "earlier record's visible answer (all shards; stripped of whitespace at its ends).",
        lambda r: "the same answer as an earlier record of the dataset",
        None,
    ),
    Rule(
        "output_drift",
        Severity.WARN,
        (Table.WINDOWS,),
        "outputs_not_drifting",
        "The latest window of records is like the first: no truncated, empty, failed or "
        "refusal share (or finish reason) at least doubles and rises by 5 points, and the "
        "median output moves by less than 30 %.",
        lambda r: f"{_value(r, 'measure')} {_value(r, 'first')} → {_value(r, 'latest')}",
        None,
    ),
    Rule(
        "provider_mismatch",
        Severity.WARN,
        (Table.PROVIDER,),
        "provider_books_agree",
        "Where a batch status object lies beside the output (an OpenAI Batch, an Anthropic "
        "Message Batch), its request, failure and token counts equal genledger's.",
        lambda r: (
            f"{_value(r, 'measure')}: the provider reports {_value(r, 'provider')}, "
            f"genledger counted {_value(r, 'genledger')}"
        ),
        col("provider") != col("genledger"),
    ),
    Rule(
        "tokenized_missing_tokens",
        Severity.ERROR,
        (Table.TOKENIZED,),
        "tokenized_rows_have_tokens",
        "Every tokenized record has an input_ids list.",
        lambda r: "input_ids missing or not a list",
        PARSED & ~HAS_TOKENS,
    ),
    Rule(
        "tokenized_zero_tokens",
        Severity.ERROR,
        (Table.TOKENIZED,),
        "tokenized_rows_have_tokens",
        "No tokenized record has an empty input_ids.",
        lambda r: "input_ids is empty",
        N_TOKENS == 0,
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
        HAS_TOKENS & HAS_MASK & (col("loss_len") != N_TOKENS),
    ),
    Rule(
        "no_trainable_tokens",
        Severity.WARN,
        (Table.TOKENIZED,),
        "samples_have_trainable_tokens",
        "A non-empty sample has at least one loss_mask 1.",
        lambda r: f"loss_mask sums to 0 over {_value(r, 'n_tokens')} tokens",
        HAS_MASK & (N_TOKENS > 0) & (col("loss_sum") == 0),
    ),
    Rule(
        "prompt_not_masked",
        Severity.WARN,
        (Table.TOKENIZED,),
        "prompts_masked",
        "A sample's loss_mask is not all 1 (an all-ones mask trains on the prompt too; a "
        "mask of another length is loss_mask_mismatch).",
        lambda r: f"loss_mask is 1 on all {_value(r, 'loss_len')} tokens: the prompt is trained on",
        HAS_MASK & (N_TOKENS > 0) & (col("loss_len") == N_TOKENS) & (col("loss_sum") == N_TOKENS),
    ),
    Rule(
        "over_length",
        Severity.WARN,
        (Table.TOKENIZED,),
        "samples_fit_max_seq_len",
        "No sample has more tokens than `[tokenized] max_seq_len` (when it is set).",
        lambda r: f"{_value(r, 'n_tokens')} tokens, more than max_seq_len",
        HAS_TOKENS & (param("max_seq_len") < N_TOKENS),
    ),
    Rule(
        "unreadable_files",
        Severity.ERROR,
        (Table.FILES,),
        "files_readable",
        "Every dataset file can be opened and read.",
        lambda r: str(_value(r, "error")),
        col("error").not_null(),
    ),
    Rule(
        "empty_files",
        Severity.WARN,
        (Table.FILES,),
        "files_have_records",
        "A data file holds at least one record (a check never passes on no data).",
        lambda r: "no records yet",
        col("error").is_null() & (col("records") == 0),
    ),
    Rule(
        "unterminated_line",
        Severity.WARN,
        (Table.FILES,),
        "lines_end_with_newline",
        "A file unchanged for settle_seconds ends with a newline: bytes after the last one are "
        'a line that is never counted (a file written with "\\n".join reads one short).',
        lambda r: (
            f"{_value(r, 'pending_bytes')} bytes after the last newline, unchanged for "
            "settle_seconds: that line is not counted until it ends with \\n"
        ),
        col("error").is_null() & (col("pending_bytes") > 0) & col("settled"),
    ),
    Rule(
        "unrecognised_files",
        Severity.WARN,
        (Table.FOLDER,),
        "files_recognised",
        "Every file in a dataset folder (not ignored) matches a responses, tokenized or "
        "prompts pattern: nothing is skipped in silence.",
        lambda r: "matches no responses, tokenized or prompts pattern ([files] in genledger.toml)",
        ~col("recognised"),
    ),
    Rule(
        "all_tokens_zero_or_missing",
        Severity.ERROR,
        (Table.DATASET,),
        "dataset_has_token_counts",
        "A dataset with responses has at least one valid non-zero completion count.",
        lambda r: f"{_value(r, 'n_done')} responses and not one valid non-zero completion count",
        (col("n_done") > 0) & (col("n_nonzero") == 0),
    ),
    Rule(
        "no_datasets",
        Severity.WARN,
        (Table.ROOT,),
        "every_dataset_present",  # checked on the stats_json asset (checks/asset_checks.py)
        "The data root holds at least one dataset (an empty root is not a clean one).",
        lambda r: "the data root holds no dataset (no folder with a recognised file)",
        col("n_datasets") == 0,
    ),
)

RULES_BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}
COUNTER_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(rule.family for rule in RULES))


def signature() -> str:
    """A text that changes when a rule's name, severity, tables or condition changes."""
    return repr([(r.name, r.severity, r.tables, r.when) for r in RULES])


def rules_of(table: Table) -> tuple[Rule, ...]:
    """The rules checked on one table."""
    return tuple(rule for rule in RULES if table in rule.tables)


def worst(severities: list[Severity]) -> str:
    """`error` if any error, `warn` if any warning, else `ok`."""
    if Severity.ERROR in severities:
        return "error"
    return "warn" if Severity.WARN in severities else "ok"
