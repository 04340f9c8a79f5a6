"""Each pandera rule on tiny frames: succeeding, failing, failing with nulls (pandera habit)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pandera.pandas as pa
import pytest

from genledger.parse.schema import RESPONSES, TOKENIZED, Facts
from genledger.parse.table import TableBuilder
from genledger.rules.audit import validate
from genledger.rules.catalogue import Table


def response(**facts: Any) -> Facts:
    """A response row: no path, no flags, with `facts` set."""
    return RESPONSES.make(**facts)


def counted(n: int | None, fmt: str = "flat", **facts: Any) -> Facts:
    """A response whose count path matched with an int (or null completion for non-int)."""
    return response(**{"format": fmt, "count_type": "int", "completion_tokens": n, **facts})


def response_frame(*rows: Facts | str) -> pd.DataFrame:
    """A responses table; a string row is a malformed line with that parse error."""
    builder = TableBuilder("responses", "raw_responses.jsonl")
    for line, row in enumerate(rows, start=1):
        if isinstance(row, str):
            builder.add_malformed(line, line * 10, row)
        else:
            builder.add(line, line * 10, 0, row)
    return builder.frame()


def tokenized_frame(*rows: Facts | str) -> pd.DataFrame:
    """A tokenized table; a string row is a malformed line."""
    builder = TableBuilder("tokenized", "tokenized_data.jsonl")
    for line, row in enumerate(rows, start=1):
        if isinstance(row, str):
            builder.add_malformed(line, 0, row)
        else:
            builder.add(line, 0, 0, row)
    return builder.frame()


def failing_rows(table: Table, frame: pd.DataFrame, rule: str) -> list[int]:
    """Row positions failing `rule` after lazy validation."""
    return validate(table, frame).failing.get(rule, pd.Series([], dtype=int)).tolist()


RESPONSE_CASES = {
    # rule: (passing rows, failing rows, failing rows with nulls around)
    "missing_tokens": (
        [counted(3), response(failed_request=True, request_detail="no response")],
        [response(record_id="a")],
        [response(finish_reason=None, prompt_tokens=None, output_len=None)],
    ),
    "invalid_tokens": (
        [counted(0), counted(7), response()],
        [
            response(format="flat", count_type="string", count_raw="'1577'"),
            response(format="flat", count_type="float", count_raw="1577.0"),
            response(format="flat", count_type="bool", count_raw="True"),
        ],
        [counted(-1, prompt_tokens=None)],
    ),
    "zero_tokens": (
        [counted(1), counted(None, count_type="string"), response()],
        [counted(0)],
        [counted(0, fmt="derived", output_len=None)],
    ),
    "count_mismatch": (
        [
            counted(5, output_len=4),
            counted(5, output_len=6),
            counted(5, output_len=5),
            counted(5, output_len=None),
            counted(9, fmt="derived", output_len=9),
        ],
        [counted(5, output_len=3), counted(5, output_len=7, fmt="sglang_generate")],
        [counted(0, output_len=2, prompt_tokens=None, finish_reason=None)],
    ),
    "failed_requests": (
        [counted(1), response()],
        [response(failed_request=True, request_detail="status_code 500")],
        [response(failed_request=True, request_detail=None, record_id=None)],
    ),
    "think_tag_leaks": (
        [counted(1), response()],
        [counted(1, think_leak=True)],
        [response(think_leak=True)],
    ),
    "malformed_lines": (
        [counted(1), response()],
        ["invalid JSON: x"],
        ["not a JSON object (a NoneType)"],
    ),
}


@pytest.mark.parametrize("rule", sorted(RESPONSE_CASES))
def test_each_response_rule_passes_fails_and_fails_with_nulls(rule: str) -> None:
    passing, failing, with_nulls = RESPONSE_CASES[rule]
    assert failing_rows(Table.RESPONSES, response_frame(*passing), rule) == []
    frame = response_frame(*passing, *failing)
    expected = list(range(len(passing), len(passing) + len(failing)))
    assert failing_rows(Table.RESPONSES, frame, rule) == expected
    # The head row has every optional fact null and passes every rule.
    nulls = response_frame(counted(5), *with_nulls)
    assert failing_rows(Table.RESPONSES, nulls, rule) == list(range(1, len(with_nulls) + 1))


def test_missing_tokens_is_the_only_rule_of_a_record_without_a_path() -> None:
    failing = validate(Table.RESPONSES, response_frame(response())).failing
    assert set(failing) == {"missing_tokens"}


def test_failed_request_is_not_missing_tokens() -> None:
    failing = validate(Table.RESPONSES, response_frame(response(failed_request=True))).failing
    assert set(failing) == {"failed_requests"}


def test_malformed_line_is_only_malformed() -> None:
    failing = validate(Table.RESPONSES, response_frame("invalid JSON: x")).failing
    assert set(failing) == {"malformed_lines"}


def test_counted_column_marks_valid_counts_only() -> None:
    frame = response_frame(counted(0), counted(4), counted(-2), response(), "bad")
    table = validate(Table.RESPONSES, frame).table
    assert table["counted"].tolist() == [True, True, False, False, False]


def test_a_fact_outside_the_schema_raises_instead_of_counting() -> None:
    frame = response_frame(response(format="flat", count_type="mystery", completion_tokens=1))
    with pytest.raises(pa.errors.SchemaErrors):
        validate(Table.RESPONSES, frame)


def tok(n: int | None, loss_len: int | None = None, loss_sum: int | None = None) -> Facts:
    """A tokenized row."""
    return TOKENIZED.make(n_tokens=n, loss_len=loss_len, loss_sum=loss_sum)


TOKENIZED_CASES = {
    "tokenized_missing_tokens": ([tok(3), tok(0)], [tok(None, 2, 1)], [tok(None)]),
    "tokenized_zero_tokens": ([tok(3), tok(None)], [tok(0, 0, 0)], [tok(0)]),
    "loss_mask_mismatch": (
        [tok(3, 3, 1), tok(3), tok(None, 4, 1)],
        [tok(3, 2, 1), tok(2, 3, 1)],
        [tok(0, 1, 1)],
    ),
    "no_trainable_tokens": (
        [tok(3, 3, 1), tok(0, 0, 0), tok(3)],
        [tok(3, 3, 0)],
        [tok(2, 5, 0)],
    ),
    "malformed_lines": ([tok(3)], ["invalid JSON: x"], ["array holds a non-object element"]),
}


@pytest.mark.parametrize("rule", sorted(TOKENIZED_CASES))
def test_each_tokenized_rule_passes_fails_and_fails_with_nulls(rule: str) -> None:
    passing, failing, with_nulls = TOKENIZED_CASES[rule]
    assert failing_rows(Table.TOKENIZED, tokenized_frame(*passing), rule) == []
    frame = tokenized_frame(*passing, *failing)
    expected = list(range(len(passing), len(passing) + len(failing)))
    assert failing_rows(Table.TOKENIZED, frame, rule) == expected
    nulls = tokenized_frame(tok(None, None, None), *with_nulls)
    got = failing_rows(Table.TOKENIZED, nulls, rule)
    assert got == ([0] if rule == "tokenized_missing_tokens" else []) + list(
        range(1, len(with_nulls) + 1)
    )


def id_frame(ids: list[str], files: list[str] | None = None) -> pd.DataFrame:
    """An id table in dataset order."""
    return pd.DataFrame(
        {
            "file": pd.array(files or ["raw_responses.jsonl"] * len(ids), dtype=object),
            "line": pd.array(range(1, len(ids) + 1), dtype="int64"),
            "record_id": pd.array(ids, dtype=object),
        }
    )


def test_unique_ids_pass_and_every_repeat_after_the_first_fails() -> None:
    assert failing_rows(Table.IDS, id_frame(["a", "b", "c"]), "duplicate_ids") == []
    frame = id_frame(["a", "b", "a", "a", "b"])
    assert failing_rows(Table.IDS, frame, "duplicate_ids") == [2, 3, 4]


def test_an_empty_id_table_has_no_duplicates() -> None:
    assert failing_rows(Table.IDS, id_frame([]), "duplicate_ids") == []


def test_a_null_id_is_rejected_by_the_schema_not_counted() -> None:
    frame = id_frame(["a"])
    frame.loc[0, "record_id"] = None
    with pytest.raises(pa.errors.SchemaErrors):
        validate(Table.IDS, frame)


def file_frame(rows: list[tuple[str, int, str | None]]) -> pd.DataFrame:
    """A file table: (role, records, error) per file."""
    return pd.DataFrame(
        {
            "file": pd.array([f"f{i}.jsonl" for i in range(len(rows))], dtype=object),
            "role": pd.array([r[0] for r in rows], dtype=object),
            "records": pd.array([r[1] for r in rows], dtype="int64"),
            "error": pd.array([r[2] for r in rows], dtype=object),
        }
    )


def test_file_rules_flag_unreadable_and_empty_files_separately() -> None:
    frame = file_frame(
        [("responses", 3, None), ("tokenized", 0, None), ("responses", 0, "vanished")]
    )
    assert failing_rows(Table.FILES, frame, "unreadable_files") == [2]
    assert failing_rows(Table.FILES, frame, "empty_files") == [1]
    clean = file_frame([("responses", 1, None)])
    assert validate(Table.FILES, clean).failing == {}


def dataset_frame(n_done: int, n_nonzero: int) -> pd.DataFrame:
    """The one-row dataset table."""
    return pd.DataFrame(
        {"n_done": pd.array([n_done], dtype="int64"), "n_nonzero": pd.array([n_nonzero], "int64")}
    )


@pytest.mark.parametrize(
    ("n_done", "n_nonzero", "fails"), [(0, 0, False), (5, 1, False), (5, 0, True), (1, 0, True)]
)
def test_dataset_fails_when_records_exist_without_a_nonzero_count(
    n_done: int, n_nonzero: int, fails: bool
) -> None:
    rows = failing_rows(
        Table.DATASET, dataset_frame(n_done, n_nonzero), "all_tokens_zero_or_missing"
    )
    assert rows == ([0] if fails else [])


def test_each_schema_declares_exactly_its_tables_rule_columns() -> None:
    from genledger.rules.catalogue import RULES, rules_of
    from genledger.rules.models import schema_of

    for table in Table:
        declared = set(schema_of(table).columns)
        wanted = {rule.name for rule in rules_of(table)}
        assert wanted <= declared, (table, wanted - declared)
        other_rules = {r.name for r in RULES} & declared - wanted
        assert not other_rules, (table, other_rules)
