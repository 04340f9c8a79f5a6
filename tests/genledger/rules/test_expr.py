"""A rule's one condition gives the same answer row by row and over pandas columns."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.parse.schema import RESPONSES
from genledger.parse.table import TableBuilder
from genledger.rules.catalogue import DERIVED, RULES, TABLE_COLUMNS, Table, rules_of
from genledger.rules.expr import Expr, col, condition_function, evaluate, row_function
from genledger.rules.models import derive

INTS = st.one_of(st.none(), st.integers(-3, 3), st.integers(-(2**63), 2**63 - 1))
WORDS = st.one_of(st.none(), st.sampled_from(["int", "float", "derived", "flat", "x"]))

# Small typed tables: a nullable int column, another, a nullable string, a bool.
SCHEMA = {"a": "Int64", "b": "Int64", "s": object, "f": "bool"}
ROW = st.tuples(INTS, INTS, WORDS, st.booleans())


def _frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(SCHEMA)
    return pd.DataFrame(
        {
            name: pd.array(values, dtype=dtype)
            for (name, dtype), values in zip(SCHEMA.items(), columns, strict=True)
        }
    )


def _values() -> st.SearchStrategy[Expr]:
    ints = st.sampled_from([col("a"), col("b")])
    literals = st.integers(-2, 2).map(lambda n: n)
    return st.one_of(
        ints,
        st.tuples(ints, ints).map(lambda p: (p[0] - p[1]).abs()),
        st.tuples(ints, literals).map(lambda p: p[0] - p[1]),
    )


def _comparisons() -> st.SearchStrategy[Expr]:
    ops = ["__eq__", "__ne__", "__gt__", "__ge__", "__lt__", "__le__"]
    numeric = st.tuples(_values(), st.sampled_from(ops), st.one_of(_values(), st.integers(-2, 2)))
    text = st.tuples(st.just(col("s")), st.sampled_from(["__eq__", "__ne__"]), WORDS.filter(bool))
    return st.one_of(numeric, text).map(lambda t: getattr(t[0], t[1])(t[2]))


def _leaves() -> st.SearchStrategy[Expr]:
    nulls = st.sampled_from(["a", "b", "s"]).map(col)
    return st.one_of(
        _comparisons(),
        st.just(col("f")),
        nulls.map(lambda c: c.is_null()),
        nulls.map(lambda c: c.not_null()),
    )


CONDITIONS = st.recursive(
    _leaves(),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: p[0] & p[1]),
        st.tuples(inner, inner).map(lambda p: p[0] | p[1]),
        inner.map(lambda e: ~e),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(CONDITIONS, st.lists(ROW, max_size=8))
def test_any_condition_agrees_row_by_row_and_over_columns(
    expr: Expr, rows: list[tuple[Any, ...]]
) -> None:
    by_row = [condition_function(expr, tuple(SCHEMA))(row) for row in rows]
    over_columns = evaluate(expr, _frame(rows)).tolist()
    assert by_row == over_columns


# Values the rule conditions compare some columns with; every other column by its kind.
SPECIAL = {
    "format": st.one_of(st.none(), st.sampled_from(["flat", "derived", "openai_chat"])),
    "count_type": st.one_of(st.none(), st.sampled_from(["int", "bigint", "bool", "float"])),
    "output_len": st.one_of(st.none(), st.integers(0, 5)),
    "n_samples": st.integers(0, 4),
}
BY_KIND = {
    "count": INTS,
    "int": st.integers(0, 4),
    "bool": st.booleans(),
    "str": st.one_of(st.none(), st.text(max_size=3), st.just("stop")),
}


def _response_rows() -> st.SearchStrategy[tuple[Any, ...]]:
    """Rows of every column of the facts schema (a new column is generated too)."""
    return st.builds(
        RESPONSES.facts_type,
        **{c.name: SPECIAL.get(c.name, BY_KIND[c.kind]) for c in RESPONSES.facts},
    )


def _tokenized_rows() -> st.SearchStrategy[tuple[Any, ...]]:
    lengths = st.one_of(st.none(), st.integers(0, 4))
    return st.tuples(lengths, lengths, lengths)


def _table(role: str, data: st.DataObject) -> TableBuilder:
    builder = TableBuilder(role, "f.jsonl")
    facts = _response_rows() if role == "responses" else _tokenized_rows()
    for line in range(1, data.draw(st.integers(0, 8)) + 1):
        if data.draw(st.booleans()):
            builder.add(line, line * 10, 0, data.draw(facts))
        else:
            builder.add_malformed(line, line * 10, "not JSON")
    return builder


@pytest.mark.parametrize("role, table", [("responses", Table.RESPONSES),
                                         ("tokenized", Table.TOKENIZED)])  # fmt: skip
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_catalogue_rule_agrees_on_generated_token_tables(
    role: str, table: Table, data: st.DataObject
) -> None:
    builder = _table(role, data)
    frame = derive(table, builder.frame())
    conditions = [(r.name, r.when) for r in rules_of(table) if r.when is not None]
    failed = row_function(conditions, TABLE_COLUMNS[table])
    for position, values in enumerate(builder.rows):
        expected = [name for name, _ in conditions if frame[name].iloc[position]]
        assert failed(values) == expected
    for name, expr in DERIVED.get(table, {}).items():
        check = condition_function(expr, TABLE_COLUMNS[table])
        assert [check(v) for v in builder.rows] == frame[name].tolist()


def test_every_rule_but_the_duplicates_and_drift_has_one_condition() -> None:
    # The documented exceptions: "seen before" depends on earlier rows, not on one row, and
    # drift compares two windows of records.
    assert [r.name for r in RULES if r.when is None] == [
        "duplicate_ids",
        "duplicate_prompt_ids",
        "duplicate_outputs",
        "output_drift",
    ]


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=8), st.integers(0, 5))
def test_a_parameter_reads_like_a_column_and_unset_compares_false(
    values: list[int | None], limit: int
) -> None:
    from genledger.rules.expr import param

    expr = col("a") > param("limit")
    frame = pd.DataFrame({"a": pd.array(values, dtype="Int64")})
    rows = [(v,) for v in values]
    for bound in ({"limit": limit}, {}):
        by_row = condition_function(expr, ["a"], bound)
        expected = [v is not None and "limit" in bound and v > limit for v in values]
        assert [by_row(r) for r in rows] == expected
        assert evaluate(expr, frame, bound).tolist() == expected


def test_a_condition_reads_only_its_tables_columns() -> None:
    for rule in RULES:
        if rule.when is not None:
            for table in rule.tables:
                assert rule.when.columns() <= set(TABLE_COLUMNS[table]), (rule.name, table)


def test_comparing_with_none_is_refused_in_favour_of_is_null() -> None:
    with pytest.raises(TypeError, match="is_null"):
        row_function([("r", col("a") == None)], ("a",))  # noqa: E711
