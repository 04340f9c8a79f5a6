"""The books' pass over columns: the same `Accounted` as `books.account`, array-wise.

A chunk's columns are taken once (`fast.columns`, handed in by `refresh.count`), then every
entry of `books.BOOKS` and every rule of the catalogue is taken over whole columns:
conditions by `rules.expr.evaluate_arrays` (the rules' own expressions, no second copy),
counts and sums by numpy, tallies of coded texts by `np.bincount` over their codes, price
keys by runs of one key (`np.add.reduceat`) grouped by their parts' codes (`_groups`). The
row pass (`books.account`) stays the definition: where a column is not clean or a sum could
pass int64 this pass says None, and the caller takes the row pass, which reads any value.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from functools import cache
from math import prod
from typing import Any

from genledger.ledger.books import (
    BOOKS,
    IDS_KEY,
    Accounted,
    Count,
    Hashes,
    Ids,
    Params,
    Priced,
    Quantile,
    Sum,
    Tally,
    Trail,
    window_limit,
)
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.usage import SLOT_S, TIER_STARTS
from genledger.ledger.window import Ends
from genledger.parse.schema import TABLES
from genledger.rules.catalogue import Table, rules_of
from genledger.rules.expr import Logic, Not, evaluate_arrays
from genledger.rules.rows import Failures

COLUMN_ROWS = 4096  # rows from which the columns repay taking them (below: the row pass)
INT64_MAX = (1 << 63) - 1

Rows = list[tuple[Any, ...]]
# the columns of rows as `fast.columns.Columns` (`n`, `arrays`, `coded`), None where not clean
Taker = Callable[[Rows], Any]
ColumnPass = Callable[[Rows], Accounted | None]


def columns_used(role: str) -> tuple[tuple[str, str], ...]:
    """The columns `role`'s books and rules read, in the table's order, each with how:
    `read` by a condition, a tally, a price key or a trail, else `listed` (only an id
    list reads it: its texts need no codes)."""
    read: set[str] = {"line"}
    listed: set[str] = set()
    for rule in rules_of(Table(role)):
        if rule.when is not None:
            read |= rule.when.columns()
    for entry in BOOKS[role]:
        when = getattr(entry, "when", None)
        read |= when.columns() if when is not None else set()
        names = [getattr(entry, n, None) for n in ("column", "tier", "time", "value", "label")]
        names += list(getattr(entry, "by", ()))
        (listed if isinstance(entry, Ids) else read).update(n for n in names if isinstance(n, str))
    return tuple(
        (name, "read" if name in read else "listed")
        for name in TABLES[role].names
        if name in read | listed
    )


class TooBig(Exception):
    """A sum that could pass int64 (the row pass adds Python ints)."""


@cache
def column_account(role: str, take: Taker, params: Params = ()) -> ColumnPass:
    """The books' pass of `role` over the columns `take` makes of rows (those
    `columns_used` names): rows → `Accounted` equal to `books.account(role, params)(rows)`,
    or None where the row pass must read them. numpy is imported by the caller first."""
    names = TABLES[role].names
    rules = [r for r in rules_of(Table(role)) if r.when is not None]
    # the price keys last: they add up what the counts and sums add a row
    entries = sorted(BOOKS[role], key=lambda e: isinstance(e, Priced))
    trails = [e for e in BOOKS[role] if isinstance(e, Trail)]
    limit = window_limit(params)
    bound = dict(params)

    def one_pass(rows: list[tuple[Any, ...]]) -> Accounted | None:
        columns = take(rows)
        if columns is None:
            return None
        books = _Books(columns, bound)
        try:
            for entry in entries:
                books.take(entry)
        except TooBig:
            return None
        failures = Failures(Table(role))
        _fail(rules, books, rows, failures, names)
        ends = {e.key: books.trail(e, limit) for e in trails}
        return Accounted(
            books.sums,
            books.counters,
            books.ids,
            failures.tallies(),
            books.groups,
            books.lists,
            books.hashes,
            books.values,
            ends,
        )

    return one_pass


def _fail(
    rules: list[Any],
    books: _Books,
    rows: list[tuple[Any, ...]],
    failures: Failures,
    names: tuple[str, ...],
) -> None:
    """The rows failing each rule, added in row order with the rules they fail (in the
    catalogue's order), as the row pass adds them."""
    import numpy as np

    verdicts = [(r.name, books.where(r.when)) for r in rules]
    if not verdicts:
        return
    failing = np.logical_or.reduce([v for _, v in verdicts])
    for i in np.flatnonzero(failing).tolist():
        failures.add(rows[i], [name for name, v in verdicts if v[i]], names)


class _Books:
    """The entries of a table's books taken one by one over a chunk's columns."""

    def __init__(self, columns: Any, params: dict[str, Any]) -> None:
        self.columns = columns
        self.params = params
        self.sums: dict[str, int] = {}
        self.counters: dict[str, dict[str, int]] = {}
        self.groups: dict[str, dict[tuple[Any, ...], list[int]]] = {}
        self.ids = IdList()
        self.lists: dict[str, IdList] = {}
        self.hashes: dict[str, HashList] = {}
        self.values: dict[str, array[int]] = {}
        # what each summed key adds a row: (mask, values, or None for a count of 1)
        self.adds: dict[str, tuple[Any, Any]] = {}
        self.masks: dict[str, Any] = {}

    def where(self, when: Any) -> Any:
        """The rows a condition holds for (each distinct condition evaluated once)."""
        key = repr(when)
        found = self.masks.get(key)
        if found is None:
            found = self.masks[key] = self._condition(when)
        return found

    def _condition(self, when: Any) -> Any:
        """A condition over the columns; one that reads a single coded text is decided over
        its distinct values, then looked up by each row's code (a row's verdict depends on
        its value alone)."""
        import numpy as np

        read = when.columns()
        coded = self.columns.coded
        if len(read) == 1 and (name := next(iter(read))) in coded:
            codes, distinct = coded[name]
            values = np.empty(len(distinct), object)
            values[:] = distinct
            small = {name: (values, values != None)}  # noqa: E711 - elementwise
            return evaluate_arrays(when, small, len(distinct), self.params)[codes]
        if isinstance(when, Logic):
            combine = np.logical_and if when.op == "and" else np.logical_or
            return combine.reduce([self.where(part) for part in when.parts])
        if isinstance(when, Not):
            return ~self.where(when.inner)
        return evaluate_arrays(when, self.columns.arrays, self.columns.n, self.params)

    def take(self, entry: Any) -> None:
        """Add one entry's values (ratios, given values and trails are not the pass's)."""
        if isinstance(entry, Count):
            mask = self.where(entry.when)
            self.sums[entry.key] = int(mask.sum())
            self.adds[entry.key] = (mask, None)
        elif isinstance(entry, Sum):
            self._sum(entry)
        elif isinstance(entry, Tally):
            self._tally(entry)
        elif isinstance(entry, Ids):
            self._ids(entry)
        elif isinstance(entry, Hashes):
            lines, keys = self._ints(entry.column, entry.when)
            found = self.hashes.setdefault(entry.key, HashList())
            found.lines.frombytes(lines.tobytes())
            found.keys.frombytes(keys.tobytes())
        elif isinstance(entry, Quantile):
            _, values = self._ints(entry.column, entry.when)
            self.values[entry.key] = array("q", values.tobytes())
        elif isinstance(entry, Priced):
            self.groups[entry.key] = self._priced(entry)

    def _ints(self, column: str, when: Any) -> tuple[Any, Any]:
        """The lines and the values of an int column where `when` holds and it is not null."""
        values, present = self.columns.arrays[column]
        mask = self.where(when) & present
        return self.columns.arrays["line"][0][mask], values[mask]

    def _sum(self, entry: Sum) -> None:
        import numpy as np

        values, _ = self.columns.arrays[entry.column]
        mask = self.where(entry.when)
        taken = values[mask]
        # exact in int64 only while no partial sum can pass it (else: the row pass)
        if len(taken) and int(np.abs(taken).max()) * len(taken) > INT64_MAX:
            raise TooBig(entry.key)
        self.sums[entry.key] = int(taken.sum())
        self.adds[entry.key] = (mask, values)
        if entry.known is not None:
            self.sums[entry.known] = int(mask.sum())
            self.adds[entry.known] = (mask, None)

    def _tally(self, entry: Tally) -> None:
        import numpy as np

        codes, distinct = self.columns.coded[entry.column]
        counts = np.bincount(codes[self.where(entry.when)], minlength=len(distinct)).tolist()
        counter = self.counters.setdefault(entry.key, {})
        for value, count in zip(distinct, counts, strict=True):
            if not count:
                continue
            if entry.label is not None:
                keys = [entry.label(value)]
            elif value.__class__ is not str:
                continue  # a null is no value to count
            else:
                keys = value.split(entry.split) if entry.split is not None else [value]
            for key in keys:
                counter[key] = counter.get(key, 0) + count

    def _ids(self, entry: Ids) -> None:
        from itertools import compress

        values, present = self.columns.arrays[entry.column]
        mask = self.where(entry.when) & present
        lines = self.columns.arrays["line"][0][mask]
        found = self.ids if entry.key == IDS_KEY else self.lists.setdefault(entry.key, IdList())
        ids = values if mask.all() else list(compress(values, mask.tolist()))
        found.add_many(array("q", lines.tobytes()), ids)

    def trail(self, entry: Trail, limit: int) -> Ends:
        """The first and last `limit` records of `entry.when` as (flags, value, label), as
        `books.trail_readers` reads them from the rows' ends."""
        import numpy as np

        rows = np.flatnonzero(self.where(entry.when))
        head = self._compact(entry, rows[:limit])
        if len(rows) < limit:
            return Ends(limit, head)  # every record is in the head
        return Ends(limit, head, self._compact(entry, rows[len(rows) - limit :]))

    def _compact(self, entry: Trail, rows: Any) -> list[tuple[int, Any, Any]]:
        import numpy as np

        bits = np.zeros(len(rows), np.int64)
        for i, (_, when) in enumerate(entry.flags):
            bits |= self.where(when)[rows].astype(np.int64) << i
        values, present = self.columns.arrays[entry.value]
        valid = self.where(entry.valid)[rows]
        shown = np.where(valid, values[rows], -1).tolist()
        for i in np.flatnonzero(valid & ~present[rows]).tolist():
            shown[i] = None  # a valid row's null value, as the row shows it
        if entry.label in self.columns.coded:
            codes, distinct = self.columns.coded[entry.label]
            labels = [distinct[c] for c in codes[rows].tolist()]
        else:  # a label that is no text: its values as they are, null as null
            found, known = self.columns.arrays[entry.label]
            pairs = zip(found[rows].tolist(), known[rows].tolist(), strict=True)
            labels = [v if k else None for v, k in pairs]
        return list(zip(bits.tolist(), shown, labels, strict=True))

    def _priced(self, entry: Priced) -> dict[tuple[Any, ...], list[int]]:
        """Each price key's sums over the rows of `when`, keys in the order they first
        occur (as the row pass makes them): the rows cut into runs of one key, each run's
        sums added up by `np.add.reduceat`, the runs grouped by their keys."""
        import numpy as np

        arrays, coded = self.columns.arrays, self.columns.coded
        rows = np.flatnonzero(self.where(entry.when))
        if not len(rows):
            return {}
        tier, tier_ok = arrays[entry.tier]
        time, time_ok = arrays[entry.time]
        known = time_ok[rows]
        parts = [coded[name][0][rows] for name in entry.by]
        parts.append(np.where(tier_ok[rows], np.searchsorted(TIER_STARTS, tier[rows], "left"), 0))
        parts += [known.astype(np.int64), np.where(known, time[rows] // SLOT_S, 0)]
        changed = np.zeros(len(rows), bool)
        changed[0] = True
        for part in parts:
            changed[1:] |= part[1:] != part[:-1]
        starts = np.flatnonzero(changed)
        heads = [part[starts] for part in parts]
        first, group = _groups(heads)
        totals = np.zeros((len(first), len(entry.sums)), np.int64)
        for j, key in enumerate(entry.sums):
            mask, values = self.adds[key]
            add = mask[rows].astype(np.int64) if values is None else np.where(mask, values, 0)[rows]
            np.add.at(totals[:, j], group, np.add.reduceat(add, starts))
        groups: dict[tuple[Any, ...], list[int]] = {}
        distinct = [coded[name][1] for name in entry.by]
        for g in np.argsort(first, kind="stable").tolist():  # the keys as they first occur
            run = int(first[g])
            *codes, band, has, slot = (int(h[run]) for h in heads)
            texts = (d[c] for d, c in zip(distinct, codes, strict=True))
            groups[(*texts, band, slot if has else None)] = totals[g].tolist()
        return groups


def _groups(parts: list[Any]) -> tuple[Any, Any]:
    """Of rows keyed by int64 `parts` (one array a part of the key): each distinct key's
    first row, and each row's key's index. The parts joined into one int64 by their ranges
    where it holds them all (keys looked up in a table when it is small, else sorted), else
    the rows compared whole (`np.unique` over rows)."""
    import numpy as np

    lows = [int(part.min()) for part in parts]
    sizes = [int(part.max()) - low + 1 for part, low in zip(parts, lows, strict=True)]
    rows = len(parts[0])
    if prod(sizes) >= 1 << 62:
        _, first, group = np.unique(
            np.stack(parts, 1), axis=0, return_index=True, return_inverse=True
        )
        return first, group.reshape(-1)
    joined = np.zeros(rows, np.int64)
    for part, low, size in zip(parts, lows, sizes, strict=True):
        joined = joined * size + (part - low)
    if prod(sizes) > max(4 * rows, 1 << 16):
        _, first, group = np.unique(joined, return_index=True, return_inverse=True)
        return first, group.reshape(-1)
    seen = np.zeros(prod(sizes), bool)
    seen[joined] = True
    group = (np.cumsum(seen) - 1)[joined]  # keys in ascending order, as `np.unique` numbers them
    first = np.full(int(seen.sum()), rows, np.int64)
    np.minimum.at(first, group, np.arange(rows))
    return first, group
