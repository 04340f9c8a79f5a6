"""The rules evaluated row by row: the catalogue's conditions compiled to one function a table.

This is how every refresh counts (CLI, forked workers, Dagster assets alike), so the stats JSON
and the asset checks come from the same code. It streams over the token table's row tuples
without pandas (importing pandas and pandera costs about a second, more than reading a 1 %
append). `rules.frame` evaluates the same conditions with the pandera models;
tests/genledger/rules/test_rows.py proves both tally the same on every defect and on
generated tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from genledger.ledger.tally import MAX_EXAMPLES, FileTally, RuleTally
from genledger.parse.table import POSITION, RESPONSE_COLUMNS, TOKENIZED_COLUMNS
from genledger.rules.catalogue import (
    COUNTED,
    RULES_BY_NAME,
    TABLE_COLUMNS,
    Table,
    rules_of,
)
from genledger.rules.expr import RowFunction, condition_function, row_function

Row = dict[str, Any]
Values = tuple[Any, ...]


@cache
def failing_rules(table: Table) -> RowFunction:
    """The compiled conditions of `table`: a row tuple → the rules it fails, catalogue order."""
    rules = [(r.name, r.when) for r in rules_of(table) if r.when is not None]
    return row_function(rules, TABLE_COLUMNS[table])


_counted = condition_function(COUNTED, RESPONSE_COLUMNS)


def _position(columns: tuple[str, ...], name: str) -> int:
    return columns.index(name)


# Row positions of the builder's tuples (genledger.parse.table): rows stay tuples on the hot
# path, and only the few that become examples are turned into dicts.
R_FORMAT, R_COUNT, R_PROMPT, R_FINISH, R_ID, R_LINE = (
    _position(RESPONSE_COLUMNS, name)
    for name in ("format", "completion_tokens", "prompt_tokens", "finish_reason", "record_id",
                 "line")
)  # fmt: skip
PARSE_ERROR = POSITION.index("parse_error")  # both tables start with the position columns
T_TOKENS, T_LOSS_SUM = (_position(TOKENIZED_COLUMNS, n) for n in ("n_tokens", "loss_sum"))


class _Failures:
    """Failing-rule counts and first examples, fed one row at a time."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.counts: Counter[str] = Counter()
        self.rows: dict[str, list[Row]] = {}

    def add(self, values: Values, failed: list[str], columns: Sequence[str]) -> None:
        """A table row that fails the rules `failed`."""
        row: Row | None = None
        for name in failed:
            self.counts[name] += 1
            examples = self.rows.setdefault(name, [])
            if len(examples) < MAX_EXAMPLES:
                row = row or dict(zip(columns, values, strict=True))
                examples.append(row)

    def tallies(self) -> dict[str, RuleTally]:
        """A RuleTally per failing rule, in catalogue order like pandera's."""
        return {
            rule.name: RuleTally(
                self.counts[rule.name], [_example(r, rule.name) for r in self.rows[rule.name]]
            )
            for rule in rules_of(self.table)
            if self.counts[rule.name]
        }


def _example(row: Row, rule: str) -> dict[str, Any]:
    example: dict[str, Any] = {"file": row.get("file"), "line": row.get("line", 0)}
    example["reason"] = RULES_BY_NAME[rule].reason(row)
    if "offset" in row:
        example["offset"] = row["offset"]
    return example


def _records(
    rows: Iterable[Values], failures: _Failures, failed_of: RowFunction, columns: Sequence[str]
) -> Iterator[Values]:
    """Every row's failures go to `failures`; the rows that are records (parsed) come out."""
    for v in rows:
        failed = failed_of(v)
        if failed:
            failures.add(v, failed, columns)
        if v[PARSE_ERROR] is None:
            yield v


def tally_responses(rows: Iterable[Values]) -> FileTally:
    """The FileTally of one responses table's row tuples."""
    failures = _Failures(Table.RESPONSES)
    tally = FileTally()
    formats: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    failed_of = failing_rules(Table.RESPONSES)
    for v in _records(rows, failures, failed_of, RESPONSE_COLUMNS):
        tally.records += 1
        if _counted(v):
            count = v[R_COUNT]
            tally.counted += 1
            tally.nonzero += count > 0
            tally.total_comp += count
        prompt = v[R_PROMPT]
        if prompt is not None and prompt >= 0:
            tally.total_prompt += prompt
        if isinstance(v[R_FORMAT], str):
            formats[v[R_FORMAT]] += 1
        if isinstance(v[R_FINISH], str):
            reasons[v[R_FINISH]] += 1
        if v[R_ID] is not None:
            tally.ids.append(v[R_LINE], v[R_ID])
    tally.formats, tally.finish_reasons = dict(formats), dict(reasons)
    tally.failures = failures.tallies()
    return tally


def tally_tokenized(rows: Iterable[Values]) -> FileTally:
    """The FileTally of one tokenized table's row tuples."""
    failures = _Failures(Table.TOKENIZED)
    tally = FileTally()
    for v in _records(rows, failures, failing_rules(Table.TOKENIZED), TOKENIZED_COLUMNS):
        tally.records += 1
        n = v[T_TOKENS]
        if n is not None:
            tally.counted += 1
            tally.nonzero += n > 0
            tally.total_tokens += n
        if v[T_LOSS_SUM] is not None:
            tally.total_loss_tokens += v[T_LOSS_SUM]
    tally.failures = failures.tallies()
    return tally


def _dict_tallies(table: Table, rows: Iterable[Mapping[str, Any]]) -> dict[str, RuleTally]:
    """Count and exemplify the failing rules of a small table given as dicts."""
    columns = TABLE_COLUMNS[table]
    failed_of = failing_rules(table)
    failures = _Failures(table)
    for row in rows:
        values = tuple(row[c] for c in columns)
        failed = failed_of(values)
        if failed:
            failures.add(values, failed, columns)
    return failures.tallies()


def id_failures(files: Iterable[tuple[str, FileTally]]) -> dict[str, RuleTally]:
    """The duplicate-id rule: an id seen before in the dataset's shards, in file order."""
    seen: set[bytes] = set()  # ids as their UTF-8 bytes: equal bytes, equal ids
    duplicates: list[Values] = []
    for name, tally in files:
        for line, key in tally.ids.encoded():
            if key in seen:  # only failing rows become rows of the rule's table
                duplicates.append((name, line, key.decode()))
            else:
                seen.add(key)
    failures = _Failures(Table.IDS)
    for values in duplicates:
        failures.add(values, ["duplicate_ids"], TABLE_COLUMNS[Table.IDS])
    return failures.tallies()


def file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Unreadable and empty data files of a dataset: rows of file, role, records, error."""
    return _dict_tallies(Table.FILES, rows)


def folder_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Files of a dataset folder that match no pattern: rows of file, recognised."""
    return _dict_tallies(Table.FOLDER, rows)


def dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """The aggregate rule: responses exist but not one valid non-zero count."""
    return _dict_tallies(Table.DATASET, [{"n_done": n_done, "n_nonzero": n_nonzero}])
