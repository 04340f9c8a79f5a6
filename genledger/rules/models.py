"""Pandera models: one per table, each rule a derived boolean column that must be False.

The models state the tables' columns (types, bounds: the column schema the Dagster UI shows);
their parser derives each rule column from the rule's one condition in
`genledger.rules.catalogue`, evaluated over pandas columns (`rules.expr.evaluate`), and
`Field(eq=False)` turns every `True` into a failure case. Validating with `lazy=True`
collects them all (`rules.validation`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from genledger.rules.catalogue import DERIVED, RULES_BY_NAME, Table, rules_of
from genledger.rules.expr import evaluate

COUNT_TYPES = ("int", "bigint", "bool", "float", "string", "array", "object")
ROLES = ("responses", "tokenized")
FILE_ROLES = (*ROLES, "prompts")


def _rule(name: str) -> Any:
    """A derived rule column: False on every row, or the row fails `name`."""
    return pa.Field(eq=False, description=RULES_BY_NAME[name].description)


def derive(table: Table, df: pd.DataFrame) -> pd.DataFrame:
    """`df` with the table's derived and rule columns, each from its catalogue condition."""
    derived = {name: evaluate(expr, df) for name, expr in DERIVED.get(table, {}).items()}
    rules = {r.name: evaluate(r.when, df) for r in rules_of(table) if r.when is not None}
    return df.assign(**derived, **rules)


class LineRows(pa.DataFrameModel):
    """Where a row comes from: file, line, byte offset, item within an array line, parse error."""

    file: Series[str]
    line: Series[int] = pa.Field(ge=1)
    offset: Series[int] = pa.Field(ge=0)
    item: Series[int] = pa.Field(ge=0)
    parse_error: Series[str] = pa.Field(nullable=True)

    class Config:
        strict = True


class ResponseTable(LineRows):
    """One row per response record of a responses file; a malformed line is a row too."""

    record_id: Series[str] = pa.Field(nullable=True)
    format: Series[str] = pa.Field(nullable=True)  # built-in or user-declared names
    count_type: Series[str] = pa.Field(nullable=True, isin=list(COUNT_TYPES))
    completion_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    count_raw: Series[str] = pa.Field(nullable=True)
    prompt_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    reasoning_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    cached_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    n_samples: Series[int] = pa.Field(ge=0)
    finish_reason: Series[str] = pa.Field(nullable=True)
    more_finishes: Series[str] = pa.Field(nullable=True)
    output_len: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    failed_request: Series[bool]
    request_detail: Series[str] = pa.Field(nullable=True)
    think_leak: Series[bool]
    empty_output: Series[bool]
    stream_chunk: Series[bool]
    missing_detail: Series[str] = pa.Field(nullable=True)
    counted: Series[bool] = pa.Field(description="The completion count is valid and summed.")
    malformed_lines: Series[bool] = _rule("malformed_lines")
    missing_tokens: Series[bool] = _rule("missing_tokens")
    invalid_tokens: Series[bool] = _rule("invalid_tokens")
    zero_tokens: Series[bool] = _rule("zero_tokens")
    count_mismatch: Series[bool] = _rule("count_mismatch")
    failed_requests: Series[bool] = _rule("failed_requests")
    empty_outputs: Series[bool] = _rule("empty_outputs")
    think_tag_leaks: Series[bool] = _rule("think_tag_leaks")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """docs/design.md §3 response rules, from their catalogue conditions."""
        return derive(Table.RESPONSES, df)


class TokenizedTable(LineRows):
    """One row per tokenized record of a tokenized file; a malformed line is a row too."""

    n_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    loss_len: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0)
    loss_sum: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    has_tokens: Series[bool] = pa.Field(description="input_ids is a list (its length counts).")
    malformed_lines: Series[bool] = _rule("malformed_lines")
    tokenized_missing_tokens: Series[bool] = _rule("tokenized_missing_tokens")
    tokenized_zero_tokens: Series[bool] = _rule("tokenized_zero_tokens")
    loss_mask_mismatch: Series[bool] = _rule("loss_mask_mismatch")
    no_trainable_tokens: Series[bool] = _rule("no_trainable_tokens")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """docs/design.md §3 tokenized rules, from their catalogue conditions."""
        return derive(Table.TOKENIZED, df)


class IdTable(pa.DataFrameModel):
    """The ids of a dataset's response records, all shards, in file then line order."""

    file: Series[str]
    line: Series[int] = pa.Field(ge=1)
    record_id: Series[str]
    duplicate_ids: Series[bool] = _rule("duplicate_ids")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """A record whose id was already seen in the dataset is a duplicate."""
        return df.assign(duplicate_ids=df["record_id"].duplicated(keep="first"))


class FileTable(pa.DataFrameModel):
    """One row per data file of a dataset: its records and any read error."""

    file: Series[str]
    role: Series[str] = pa.Field(isin=list(FILE_ROLES))
    records: Series[int] = pa.Field(ge=0)  # a prompts file: its non-blank lines
    error: Series[str] = pa.Field(nullable=True)
    pending_bytes: Series[int] = pa.Field(ge=0)
    settled: Series[bool]
    line: Series[int] = pa.Field(ge=0)
    unreadable_files: Series[bool] = _rule("unreadable_files")
    empty_files: Series[bool] = _rule("empty_files")
    unterminated_line: Series[bool] = _rule("unterminated_line")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """A file that cannot be read is an error; one with no records yet, or a last line
        that never ends, says so."""
        return derive(Table.FILES, df)


class FolderTable(pa.DataFrameModel):
    """One row per file found in a dataset folder (not ignored): is it a data file?"""

    file: Series[str]
    recognised: Series[bool]
    unrecognised_files: Series[bool] = _rule("unrecognised_files")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """A file matching no pattern would be skipped in silence: say so."""
        return derive(Table.FOLDER, df)


class DatasetTable(pa.DataFrameModel):
    """One row per dataset: the aggregate rule of the seed's bug."""

    n_done: Series[int] = pa.Field(ge=0)
    n_nonzero: Series[int] = pa.Field(ge=0)
    all_tokens_zero_or_missing: Series[bool] = _rule("all_tokens_zero_or_missing")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """Responses exist, yet not one valid non-zero completion count: the silent zero."""
        return derive(Table.DATASET, df)


class RootTable(pa.DataFrameModel):
    """One row per data root: how many datasets it holds."""

    n_datasets: Series[int] = pa.Field(ge=0)
    no_datasets: Series[bool] = _rule("no_datasets")

    class Config:
        strict = True

    @pa.dataframe_parser
    @classmethod
    def derive_rules(cls, df: pd.DataFrame) -> pd.DataFrame:
        """An empty root is not a clean one."""
        return derive(Table.ROOT, df)
