"""The books: the compiled one-pass function equals reading the entries one by one, the array
version equals the row pass, and every key and stat comes from the one list."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.ledger import books
from genledger.ledger.books import BOOKS, Count, Hashes, Ids, Quantile, Sum, Tally, account
from genledger.ledger.tally import FileTally
from genledger.parse.line import facts_of_line
from genledger.parse.schema import TABLES, TOKENIZED
from genledger.parse.table import TableBuilder
from genledger.rules.catalogue import Table
from genledger.rules.expr import condition_function
from genledger.rules.rows import failing_rules

from ..hard_lines import (
    RESPONSE_LINES,
    TOKENIZED_LINES,
)
from ..rules.test_audit import builder_of, drawn_table


def read_entry_by_entry(role: str, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """The books read the slow, obvious way: each entry's condition as its own function, each
    row visited once per entry (the compiled pass fuses them)."""
    names = TABLES[role].names
    sums: Counter[str] = Counter()
    counters: dict[str, Counter[str]] = {}
    ids: dict[str, list[tuple[int, Any]]] = {}
    values: dict[str, list[int]] = {}
    for entry in BOOKS[role]:
        if not isinstance(entry, Count | Sum | Tally | Ids | Hashes | Quantile):
            continue
        holds = condition_function(entry.when, names)
        for row in rows:
            if not holds(row):
                continue
            value = row[names.index(entry.column)] if not isinstance(entry, Count) else None
            if isinstance(entry, Count):
                sums[entry.key] += 1
            elif isinstance(entry, Sum):
                sums[entry.key] += value
                if entry.known:
                    sums[entry.known] += 1
            elif isinstance(entry, Ids | Hashes):
                if value is not None:
                    ids.setdefault(entry.key, []).append((row[names.index("line")], value))
            elif isinstance(entry, Quantile):
                values.setdefault(entry.key, []).append(value)
            else:
                found = counters.setdefault(entry.key, Counter())
                if entry.label is not None:
                    found[entry.label(value)] += 1
                elif entry.split is not None and isinstance(value, str):
                    found.update(value.split(entry.split))
                elif entry.split is None and isinstance(value, str):
                    found[value] += 1
    return {
        "sums": {k: n for k, n in sums.items() if n},
        "counters": {k: dict(c) for k, c in counters.items() if c},
        "ids": {k: sorted(v) for k, v in ids.items()},
        "values": {k: sorted(v) for k, v in values.items()},
    }


def read_compiled(role: str, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    done = account(role)(rows)
    lists = {"ids": done.ids, **done.lists, **done.hashes}
    return {
        "sums": {k: n for k, n in done.sums.items() if n},
        "counters": {k: c for k, c in done.counters.items() if c},
        "ids": {k: sorted(v) for k, v in lists.items() if len(v)},
        "values": {k: sorted(v) for k, v in done.values.items() if len(v)},
    }


def test_the_compiled_pass_reads_the_hard_lines_as_the_entries_say() -> None:
    for role, lines in (("responses", RESPONSE_LINES), ("tokenized", TOKENIZED_LINES)):
        builder = builder_of(lines * 2, role)
        assert read_compiled(role, builder.rows) == read_entry_by_entry(role, builder.rows)
        assert read_compiled(role, builder.rows)["sums"]  # something was counted at all


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_the_compiled_pass_reads_generated_tables_as_the_entries_say(data: st.DataObject) -> None:
    builder = drawn_table(data)
    role = builder.role
    assert read_compiled(role, builder.rows) == read_entry_by_entry(role, builder.rows)


MASKS = st.lists(st.sampled_from([0, 1]), max_size=9)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.none() | st.integers(0, 40),  # n_tokens
            st.none() | MASKS,  # the mask, or none
        ),
        min_size=1,
        max_size=20,
    )
)
def test_array_sums_equal_the_row_pass_over_rows_that_fail_no_rule(
    rows: list[tuple[int | None, list[int] | None]],
) -> None:
    facts = [
        TOKENIZED.facts_type(n, None if m is None else len(m), None if m is None else sum(m))
        for n, m in rows
    ]
    builder = TableBuilder("tokenized", "t.parquet")
    for line, fact in enumerate(facts, start=1):
        builder.add(line, line - 1, 0, fact)

    def column(index: int) -> tuple[Any, Any]:
        values = [f[index] for f in facts]
        present = np.array([v is not None for v in values])
        return np.array([v or 0 for v in values], np.int64), present

    arrays = {name: column(i) for i, name in enumerate(TOKENIZED.fields)}
    failing = books.failing_rows("tokenized", arrays, len(facts))
    assert failing is not None
    failed_of = failing_rules(Table.TOKENIZED)
    assert failing.tolist() == [bool(failed_of(row)) for row in builder.rows]
    clean = [row for row, bad in zip(builder.rows, failing, strict=True) if not bad]
    summed = books.array_sums("tokenized", arrays, ~failing)
    assert summed == {
        k: v
        for k, v in FileTally.accounted(account("tokenized")(clean)).sums.items()
        if k in summed
    }


def test_every_sum_key_and_stat_comes_from_the_books() -> None:
    stats = [e.stat for entries in BOOKS.values() for e in entries if getattr(e, "stat", None)]
    assert len(stats) == len(set(stats))  # one entry states each stat
    assert set(FileTally().sums) == set(books.SUM_KEYS)
    for key in books.SUM_KEYS:
        assert any(key in (getattr(e, "key", None), getattr(e, "known", None))
                   for entries in BOOKS.values() for e in entries)  # fmt: skip


def test_a_line_of_every_role_counts_into_its_own_keys() -> None:
    first = builder_of(RESPONSE_LINES[:1], "responses")
    response = FileTally.accounted(account("responses")(first.rows))
    line = TOKENIZED_LINES[0]
    tokenized = builder_of([line], "tokenized")
    assert facts_of_line(line, "tokenized")
    tally = FileTally.accounted(account("tokenized")(tokenized.rows))
    assert response["records"] == 1 and response["tokenized_records"] == 0
    assert tally["tokenized_records"] == 1 and tally["records"] == 0
