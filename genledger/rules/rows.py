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
from genledger.rules.result import MAX_EXAMPLES, Ids, Repeats, RuleTally

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

    def add_counted(
        self, name: str, count: int, examples: list[Values], columns: Sequence[str]
    ) -> None:
        """`count` rows failing rule `name`, of which `examples` are the first."""
        self.counts[name] += count
        rows = self.rows.setdefault(name, [])
        rows += [dict(zip(columns, v, strict=True)) for v in examples[: MAX_EXAMPLES - len(rows)]]

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


def id_failures(
    files: Iterable[tuple[str, Ids]], found: Repeats | None = None
) -> dict[str, RuleTally]:
    """The duplicate-id rule: an id seen before in the dataset's shards, in file order
    (`found`: the walk if it was made elsewhere, see `_counted`)."""
    count, first = _counted(list(files), found)
    failures = Failures(Table.IDS)
    examples = [(name, line, key.decode()) for name, line, key in first]
    failures.add_counted("duplicate_ids", count, examples, TABLE_COLUMNS[Table.IDS])
    return failures.tallies()


def prompt_id_failures(
    files: Iterable[tuple[str, Ids]], found: Repeats | None = None
) -> dict[str, RuleTally]:
    """The duplicate-prompt-id rule: a prompt id seen before in the dataset's prompts files,
    in file order (`found`: the walk if it was made elsewhere, see `_counted`)."""
    count, first = _counted(list(files), found)
    failures = Failures(Table.PROMPTS)
    examples = [(name, line, key.decode(), None) for name, line, key in first]
    failures.add_counted("duplicate_prompt_ids", count, examples, TABLE_COLUMNS[Table.PROMPTS])
    return failures.tallies()


def prompt_failures(rows: list[dict[str, Any]]) -> dict[str, RuleTally]:
    """The row rules of a prompts file's lines (a line that is no JSON): rows of the PROMPTS
    table's columns; only lines that may fail need be given."""
    return _dict_tallies(Table.PROMPTS, rows)


def _counted(
    files: list[tuple[str, Ids]], found: Repeats | None
) -> tuple[int, list[tuple[str, int, Any]]]:
    """`_repeats` over `files`' ids, or its result read from `found` if the walk was made
    elsewhere (in C by `genledger.fast.repeats`, given by the refresh; None: not made): then
    only the examples' lines are looked up."""
    if found is None:
        return _repeats((name, ids.keys(), ids.lines) for name, ids in files)
    return found[0], _examples(files, found)


def _examples(files: Sequence[tuple[str, Lined]], found: Repeats) -> list[tuple[str, int, Any]]:
    """`found`'s first repeats as (file, line, key)."""
    return [(files[f][0], files[f][1].lines[at], key) for f, at, key, _, _ in found[1]]


def _repeats(
    files: Iterable[tuple[str, Sequence[Any], Iterable[int]]],
) -> tuple[int, list[tuple[str, int, Any]]]:
    """How many keys (each file's keys with their lines) were seen before in an earlier
    line or file, in file order, and the first `MAX_EXAMPLES` of them as (file, line, key).
    Counted with set operations in C; only a file holding a repeat is walked line by line,
    and only until the examples are found (a repeated corpus walked every key in Python)."""
    seen: set[Any] = set()
    count = 0
    first: list[tuple[str, int, Any]] = []
    for name, keys, lines in files:
        fresh = set(keys)
        # each key not seen before is new at its first line; every other one repeats
        repeats = len(keys) - len(fresh) + len(fresh & seen)
        if repeats and len(first) < MAX_EXAMPLES:
            for line, key in _by_line(lines, keys):
                if key in seen:
                    first.append((name, line, key))
                    if len(first) == MAX_EXAMPLES:
                        break
                else:
                    seen.add(key)
        count += repeats
        if seen:
            seen |= fresh  # in place: a new set per file made 50,000 shards quadratic
        else:
            seen = fresh  # the first file's keys as they are: no copy (a dataset of one big
            # file held its keys twice: ~30 MB a million)
    return count, first


class Lined(Protocol):
    """A file's keys' lines (`Ids` and `Keys`)."""

    @property
    def lines(self) -> Sequence[int]:
        """Each key's line."""
        ...


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


def answer_failures(
    files: Iterable[tuple[str, Keys]], found: Repeats | None = None
) -> dict[str, RuleTally]:
    """The duplicate-answer rule: an answer key seen before in the dataset's shards, in file
    order; each example names where the answer was first seen (`found`: the walk if it was
    made elsewhere, see `_counted`)."""
    listed = list(files)
    if found is None:
        count, first = _repeats((name, keys.keys, keys.lines) for name, keys in listed)
        seen = _first_lines(listed, {key for _, _, key in first}) if count else {}
    else:
        count, first = found[0], _examples(listed, found)
        seen = {key: (listed[f][0], listed[f][1].lines[at]) for _, _, key, f, at in found[1]}
    if not count:
        return {}
    examples = [
        {"file": name, "line": line, "reason": _first_seen(seen.get(key), name)}
        for name, line, key in first
    ]
    return {"duplicate_outputs": RuleTally(count, examples)}


def _by_line(lines: Iterable[int], keys: Iterable[Any]) -> Iterable[tuple[int, Any]]:
    """(line, key) pairs in line order (a stable sort: records of one line keep their order).
    A streamed request is listed when its stream settles, after records on later lines, and
    a refresh or a worker's piece may settle it elsewhere: in line order every path reports
    the same first repeats. Lines already in order (most files) are paired lazily: a walk
    that stops at its examples pairs no more."""
    ordered = list(lines)
    if ordered == sorted(ordered):
        return zip(ordered, keys, strict=True)
    return sorted(zip(ordered, keys, strict=True), key=lambda pair: pair[0])


def _first_lines(files: list[tuple[str, Keys]], keys: set[int]) -> dict[int, tuple[str, int]]:
    """The first file holding each of `keys`, and the key's earliest line there."""
    found: dict[int, tuple[str, int]] = {}
    for where, hashes in files:
        present = (keys - found.keys()).intersection(hashes.keys)  # a C pass of the array
        if not present:
            continue
        earliest: dict[int, int] = {}
        for line, key in zip(hashes.lines, hashes.keys, strict=True):
            if key in present and line < earliest.get(key, line + 1):
                earliest[key] = line
        found.update((key, (where, line)) for key, line in earliest.items())
        if len(found) == len(keys):
            break
    return found


def _first_seen(first: tuple[str, int] | None, name: str) -> str:
    if first is None:
        return "the same answer as an earlier record"
    where, line = first
    return f"the same answer as line {line}" + ("" if where == name else f" of {where}")


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
