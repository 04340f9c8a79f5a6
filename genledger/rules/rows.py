"""The rules evaluated row by row: the catalogue's conditions compiled to one function a table,
and the failures they find, counted with their first examples.

Every refresh evaluates them this way (CLI, forked workers, Dagster assets alike), so the stats
JSON and the asset checks come from the same code: the token tables inside the books' one
pass (`ledger.books`), the small tables (ids, files, folder, dataset) here. No pandas
(importing pandas and pandera costs about a second, more than reading a 1 % append); the
audit (`rules.audit`) evaluates the same conditions with pandera, and
tests/genledger/rules/test_audit.py proves both fail the same rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Protocol

from genledger.rules.catalogue import (
    RULES_BY_NAME,
    TABLE_COLUMNS,
    Table,
    rules_of,
)
from genledger.rules.expr import RowFunction, row_function
from genledger.rules.result import MAX_EXAMPLES, Ids, RuleTally

Row = dict[str, Any]
Values = tuple[Any, ...]


@cache
def failing_rules(table: Table) -> RowFunction:
    """The compiled conditions of `table`: a row tuple → the rules it fails, catalogue order."""
    rules = [(r.name, r.when) for r in rules_of(table) if r.when is not None]
    return row_function(rules, TABLE_COLUMNS[table])


class Failures:
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


def _dict_tallies(table: Table, rows: Iterable[Mapping[str, Any]]) -> dict[str, RuleTally]:
    """Count and exemplify the failing rules of a small table given as dicts."""
    columns = TABLE_COLUMNS[table]
    failed_of = failing_rules(table)
    failures = Failures(table)
    for row in rows:
        values = tuple(row[c] for c in columns)
        failed = failed_of(values)
        if failed:
            failures.add(values, failed, columns)
    return failures.tallies()


def id_failures(files: Iterable[tuple[str, Ids]]) -> dict[str, RuleTally]:
    """The duplicate-id rule: an id seen before in the dataset's shards, in file order."""
    failures = Failures(Table.IDS)
    for values in _repeated(files):
        failures.add(values, ["duplicate_ids"], TABLE_COLUMNS[Table.IDS])
    return failures.tallies()


def prompt_id_failures(files: Iterable[tuple[str, Ids]]) -> dict[str, RuleTally]:
    """The duplicate-prompt-id rule: a prompt id seen before in the dataset's prompts files,
    in file order."""
    failures, columns = Failures(Table.PROMPTS), TABLE_COLUMNS[Table.PROMPTS]
    for name, line, key in _repeated(files):
        failures.add((name, line, key, None), ["duplicate_prompt_ids"], columns)
    return failures.tallies()


def prompt_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """The row rules of a prompts file's lines (a line that is no JSON): rows of the PROMPTS
    table's columns; only lines that may fail need be given."""
    return _dict_tallies(Table.PROMPTS, rows)


def _repeated(files: Iterable[tuple[str, Ids]]) -> list[Values]:
    """(file, line, id) of each id already seen in an earlier line or file, in file order."""
    seen: set[bytes] = set()  # ids as their UTF-8 bytes: equal bytes, equal ids
    duplicates: list[Values] = []
    for name, ids in files:
        keys = ids.keys()
        fresh = set(keys)
        if len(fresh) == len(keys) and seen.isdisjoint(fresh):
            # the usual file: no id twice, none seen before (set operations in C)
            seen.update(fresh)  # in place: a new set per file made 50,000 shards quadratic
            continue
        for line, key in _by_line(ids.lines, keys):
            if key in seen:  # only failing rows become rows of the rule's table
                duplicates.append((name, line, key.decode()))
            else:
                seen.add(key)
    return duplicates


class Keys(Protocol):
    """A file's answer keys with their lines (`genledger.ledger.hashlist.HashList`)."""

    @property
    def keys(self) -> Sequence[int]:
        """The keys, in file order."""
        ...

    @property
    def lines(self) -> Sequence[int]:
        """Each key's line."""
        ...

    def __len__(self) -> int: ...


def answer_failures(files: Iterable[tuple[str, Keys]]) -> dict[str, RuleTally]:
    """The duplicate-answer rule: an answer key seen before in the dataset's shards, in file
    order; each example names where the answer was first seen."""
    listed = list(files)
    seen: set[int] = set()
    count = 0
    first: list[Values] = []
    for name, found in listed:
        keys = found.keys
        fresh = set(keys)
        if len(fresh) == len(keys) and seen.isdisjoint(fresh):
            seen |= fresh  # the usual file: no answer twice, none seen before (in C)
            continue
        for line, key in _by_line(found.lines, keys):
            if key in seen:
                count += 1
                if len(first) < MAX_EXAMPLES:
                    first.append((name, line, key))
            else:
                seen.add(key)
    if not count:
        return {}
    examples = [
        {"file": name, "line": line, "reason": _first_seen(listed, key, name)}
        for name, line, key in first
    ]
    return {"duplicate_outputs": RuleTally(count, examples)}


def _by_line(lines: Iterable[int], keys: Iterable[Any]) -> list[tuple[int, Any]]:
    """(line, key) pairs in line order (a stable sort: records of one line keep their order).
    A streamed request is listed when its stream settles, after records on later lines, and
    a refresh or a worker's piece may settle it elsewhere: in line order every path reports
    the same first repeats."""
    return sorted(zip(lines, keys, strict=True), key=lambda pair: pair[0])


def _first_seen(files: list[tuple[str, Keys]], key: int, name: str) -> str:
    for where, found in files:
        if key in found.keys:  # a C search of the array
            line = min(n for n, k in zip(found.lines, found.keys, strict=True) if k == key)
            return f"the same answer as line {line}" + ("" if where == name else f" of {where}")
    return "the same answer as an earlier record"


def file_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Unreadable and empty data files of a dataset, and last lines that never end: rows of
    the FILES table's columns (`FileState.rule_row`)."""
    return _dict_tallies(Table.FILES, rows)


def folder_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """Files of a dataset folder that match no pattern: rows of file, recognised."""
    return _dict_tallies(Table.FOLDER, rows)


def dataset_failures(n_done: int, n_nonzero: int) -> dict[str, RuleTally]:
    """The aggregate rule: responses exist but not one valid non-zero count."""
    return _dict_tallies(Table.DATASET, [{"n_done": n_done, "n_nonzero": n_nonzero}])


def provider_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """The provider's books set against genledger's: rows of file, measure, provider,
    genledger (`ledger.provider`)."""
    return _dict_tallies(Table.PROVIDER, rows)


def root_failures(n_datasets: int) -> dict[str, RuleTally]:
    """The data root's own rule: it holds at least one dataset."""
    return _dict_tallies(Table.ROOT, [{"n_datasets": n_datasets}])
