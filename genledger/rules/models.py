"""Pandera schemas generated from the catalogue: one per table, each rule a derived column.

A table's schema is its columns (from the facts schema, or the catalogue's small tables) with
their types and bounds — the column schema the Dagster UI shows — plus a parser that derives
each rule column from the rule's one condition (`rules.expr.evaluate`), checked to be False
on every row: a True is a failure case. Validating lazily collects them all; the audit
(`rules.audit`) compares them with the books' pass.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pandas as pd
import pandera.pandas as pa

from genledger.parse.schema import Column
from genledger.rules.catalogue import DERIVED, TABLE_SCHEMAS, Rule, Table, rules_of
from genledger.rules.expr import evaluate

DTYPES: dict[str, Any] = {"str": str, "int": "int64", "count": pd.Int64Dtype(), "bool": bool}
DERIVED_TEXT = {
    "counted": "The completion count is valid and summed.",
    "has_tokens": "input_ids is a list (its length counts).",
}


def _checks(column: Column) -> list[pa.Check]:
    found = []
    if "ge" in column.checks:
        found.append(pa.Check.ge(column.checks["ge"]))
    if "isin" in column.checks:
        found.append(pa.Check.isin(list(column.checks["isin"])))
    return found


def _column(column: Column) -> pa.Column:
    return pa.Column(
        DTYPES[column.kind], _checks(column), nullable=column.nullable, description=column.doc
    )


def _rule_column(rule: Rule) -> pa.Column:
    """A derived rule column: False on every row, or the row fails the rule."""
    return pa.Column(bool, pa.Check.eq(False), description=rule.description)


def derive(table: Table, df: pd.DataFrame, params: Params = ()) -> pd.DataFrame:
    """`df` with the table's derived and rule columns, each from its catalogue condition (the
    duplicate rules, which depend on earlier rows: an id or an answer already seen; drift,
    which compares two windows: the `moved` column)."""
    bound = dict(params)
    derived = {name: evaluate(expr, df, bound) for name, expr in DERIVED.get(table, {}).items()}
    rules = {r.name: evaluate(r.when, df, bound) for r in rules_of(table) if r.when is not None}
    if table is Table.IDS:
        rules["duplicate_ids"] = df["record_id"].duplicated(keep="first")
    if table is Table.PROMPTS:
        named = df["prompt_id"].notna()
        rules["duplicate_prompt_ids"] = named & df["prompt_id"].where(named).duplicated()
    if table is Table.ANSWERS:
        rules["duplicate_outputs"] = df["answer_hash"].duplicated(keep="first")
    if table is Table.WINDOWS:
        rules["output_drift"] = df["moved"].astype(bool)
    return df.assign(**derived, **rules)


Params = tuple[tuple[str, Any], ...]


@cache
def schema_of(table: Table, params: Params = ()) -> pa.DataFrameSchema:
    """The generated schema of one table (`params`: the values its conditions read)."""
    columns = {c.name: _column(c) for c in TABLE_SCHEMAS[table]}
    columns.update(
        {name: pa.Column(bool, description=DERIVED_TEXT[name]) for name in DERIVED.get(table, {})}
    )
    columns.update({r.name: _rule_column(r) for r in rules_of(table)})
    return pa.DataFrameSchema(
        columns,
        parsers=pa.Parser(lambda df: derive(table, df, params)),
        strict=True,
        name=f"{table.value}_table",
    )
