"""Mergeable per-file counters: what a refresh adds to what earlier refreshes counted.

`a + b` equals counting a's bytes then b's; the dict shape never depends on the values (its
keys are the books', `genledger.ledger.books`). Examples keep the first `MAX_EXAMPLES`
failing rows in file order, so merging a delta onto earlier counts keeps the same examples a
full scan would. The output-length summaries (`ledger.quantiles`) merge within their stated
error; the trail of first and last records (`ledger.window`) travels with a scan's delta
only (a dataset's record keeps its windows), so it is neither compared nor kept in state.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from genledger.ledger.books import (
    COUNTER_KEYS,
    GROUP_FIELDS,
    GROUP_KEYS,
    HASH_KEYS,
    LIST_KEYS,
    QUANTILE_KEYS,
    SUM_KEYS,
    Accounted,
)
from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.quantiles import Quantiles
from genledger.ledger.streams import Partial, StreamState
from genledger.ledger.window import Ends
from genledger.rules.result import RuleTally, merge_failures


def _zeros() -> dict[str, int]:
    return dict.fromkeys(SUM_KEYS, 0)


Groups = dict[tuple[Any, ...], list[int]]  # price key -> the values `books.GROUP_FIELDS` names


def _merged_groups(a: Groups, b: Groups) -> Groups:
    if not b:
        return a
    if not a:
        return b
    out = {key: list(values) for key, values in a.items()}
    for key, values in b.items():
        mine = out.get(key)
        out[key] = (
            list(values) if mine is None else [x + y for x, y in zip(mine, values, strict=True)]
        )
    return out


@dataclass
class FileTally:
    """Counters of one data file (responses, tokenized or prompts), keyed as the books say."""

    sums: dict[str, int] = field(default_factory=_zeros)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: dict[str, RuleTally] = field(default_factory=dict)
    ids: IdList = field(default_factory=IdList)  # record ids and their lines
    groups: dict[str, Groups] = field(default_factory=dict)  # per price key (books `Priced`)
    lists: dict[str, IdList] = field(default_factory=dict)  # the other id lists, by key
    hashes: dict[str, HashList] = field(default_factory=dict)  # answer keys, by key
    quantiles: dict[str, Quantiles] = field(default_factory=dict)
    trail: Ends = field(default_factory=Ends, compare=False)
    # the requests of streams still open, or waiting for the stretch before (ledger.streams)
    streams: StreamState = field(default_factory=StreamState, compare=False)
    # accounts the requests a merge settles (refresh.assemble.StreamBooks); not kept in state
    books: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, **sums: int) -> FileTally:
        """A tally with the given sums (the rest 0); an unknown key fails."""
        unknown = set(sums) - set(SUM_KEYS)
        if unknown:
            raise KeyError(f"no sum named {sorted(unknown)[0]!r} in the books")
        return cls(sums={**_zeros(), **sums})

    @classmethod
    def accounted(cls, done: Accounted) -> FileTally:
        """The tally of one pass of the books over some rows."""
        sums = {**_zeros(), **done.sums}
        counters = {k: v for k, v in done.counters.items() if v}
        groups = {k: v for k, v in done.groups.items() if v}
        lists = {k: v for k, v in done.lists.items() if len(v)}
        hashes = {k: v for k, v in done.hashes.items() if len(v)}
        quantiles = {k: Quantiles.of(v) for k, v in done.values.items() if len(v)}
        trail = next(iter(done.trails.values()), Ends())
        # a request that settles after later lines is a later row: examples are listed by line
        failures = {k: v.by_line(RuleTally()) for k, v in done.failures.items()}
        return cls(sums, counters, failures, done.ids, groups, lists, hashes, quantiles, trail)

    def __getitem__(self, key: str) -> int:
        return self.sums[key]

    def counter(self, key: str) -> dict[str, int]:
        """One counter of the books (empty when nothing was counted)."""
        return self.counters.get(key, {})

    def group(self, key: str) -> Groups:
        """One `Priced` entry's values per price key (empty when nothing was counted)."""
        return self.groups.get(key, {})

    def id_list(self, key: str) -> IdList:
        """One id list of the books (`ids` or another; empty when none was found)."""
        return self.ids if key == "ids" else self.lists.get(key, IdList())

    def empty(self) -> bool:
        """Nothing counted: adding it changes nothing (the trail aside, which travels alone)."""
        return not (
            any(self.sums.values())
            or self.counters
            or self.failures
            or len(self.ids)
            or self.groups
            or self.lists
            or self.hashes
            or self.quantiles
        )

    def __add__(self, other: FileTally) -> FileTally:
        if not other.trail.head and other.empty() and other.streams.empty:
            return self  # an unchanged file's delta: 50,000 of them cost nothing
        streams, done = self.streams.merge(other.streams)
        books = self.books or other.books
        # the requests the join settles end among other's lines (a head waits for the join
        # however late in its stretch it ends): their ids and answers go in by line, as one
        # pass counts them (examples are listed by line already)
        tail = _by_line(self._settled(done, books), other) if done else other
        merged = self._plus(tail)
        merged.streams, merged.books = streams, books
        return merged

    @staticmethod
    def _settled(done: list[Partial], books: Any) -> FileTally:
        if books is None:  # a stretch read without books: the built-in formats'
            from genledger.ledger.streambooks import StreamBooks

            books = StreamBooks("")
        return books(done)  # type: ignore[no-any-return]

    def settle_streams(self, books: Any) -> FileTally:
        """The file settled: its open streams are requests now (`StreamState.settle`)."""
        if not (self.streams.open or self.streams.heads):
            return self
        streams = self.streams.copy()
        done = streams.settle()
        settled = self._plus(self._settled(done, books or self.books))
        settled.streams, settled.books = streams, books or self.books
        return settled

    def _plus(self, other: FileTally) -> FileTally:
        sums = {key: self.sums.get(key, 0) + other.sums.get(key, 0) for key in SUM_KEYS}
        counters = {}
        for key in COUNTER_KEYS:
            if key not in self.counters and key not in other.counters:
                continue  # the usual case, without building two Counters
            merged = Counter(self.counter(key)) + Counter(other.counter(key))
            if merged:
                counters[key] = dict(merged)
        groups = {}
        for key in GROUP_KEYS:
            merged_groups = _merged_groups(self.group(key), other.group(key))
            if merged_groups:
                groups[key] = merged_groups
        return FileTally(
            sums,
            counters,
            merge_failures(self.failures, other.failures, by_line=True),
            self.ids + other.ids,
            groups,
            _merged(self.lists, other.lists),
            _merged(self.hashes, other.hashes),
            _merged(self.quantiles, other.quantiles),
            self.trail + other.trail,
        )

    @classmethod
    def sum_of(cls, tallies: Iterable[FileTally]) -> FileTally:
        """`sum(tallies, FileTally())` (its summaries side by side), with the id and key lists
        joined once: adding 50,000 shards' tallies one by one copied the growing lists each
        time (quadratic)."""
        items = [t for t in tallies if t.trail.head or not t.empty()]
        if len(items) < 3:  # different files: their open streams never join (`_plus`)
            bare = (replace(t, quantiles={}) if t.quantiles else t for t in items)
            summed = functools.reduce(lambda a, b: a._plus(b), bare, cls())
            return replace(summed, quantiles=_side_by_side(items))
        sums = _zeros()
        counters: dict[str, dict[str, int]] = {}
        failures: dict[str, RuleTally] = {}
        groups: dict[str, Groups] = {}
        trail = Ends()
        for t in items:
            for key, value in t.sums.items():
                if key in sums:
                    sums[key] += value
            for key, counts in t.counters.items():
                if key in COUNTER_KEYS:
                    mine = counters.setdefault(key, {})
                    for label, n in counts.items():
                        mine[label] = mine.get(label, 0) + n
            failures = merge_failures(failures, t.failures)
            for key, found in t.groups.items():
                groups[key] = _merged_groups(groups.get(key, {}), found)
            trail = trail + t.trail
        counters = {k: {n: c for n, c in v.items() if c > 0} for k, v in counters.items()}
        return cls(
            sums,
            {k: v for k, v in counters.items() if v},
            failures,
            IdList.joined([t.ids for t in items]),
            {k: v for k, v in groups.items() if v},
            _joined(items, "lists", IdList.joined),
            _joined(items, "hashes", HashList.joined),
            _side_by_side(items),
            trail,
        )

    def shifted(self, lines: int) -> FileTally:
        """The same counts with every line number moved by `lines` (a piece read from the
        middle of a file numbers its lines from 0)."""
        if not lines:
            return self
        failures = {
            name: RuleTally(rule.count, [{**e, "line": e["line"] + lines} for e in rule.examples])
            for name, rule in self.failures.items()
        }
        return replace(
            self,
            failures=failures,
            ids=self.ids.shifted(lines),
            streams=self.streams.shifted(lines),
            lists={k: v.shifted(lines) for k, v in self.lists.items()},
            hashes={k: v.shifted(lines) for k, v in self.hashes.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the state file."""
        return {
            "sums": self.sums,
            "counters": self.counters,
            "failures": {k: v.to_dict() for k, v in self.failures.items()},
            "ids": self.ids.to_dict(),
            "groups": {
                key: [[*price_key, *values] for price_key, values in found.items()]
                for key, found in self.groups.items()
            },
            "lists": {k: v.to_dict() for k, v in self.lists.items()},
            "hashes": {k: v.to_dict() for k, v in self.hashes.items()},
            "quantiles": {k: v.to_dict() for k, v in self.quantiles.items()},
            "streams": self.streams.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileTally:
        """Inverse of `to_dict`; raises ValueError, KeyError or TypeError on a damaged form."""
        sums = {key: int(data["sums"].get(key, 0)) for key in SUM_KEYS}
        counters = {
            str(key): {str(k): int(n) for k, n in counts.items()}
            for key, counts in data["counters"].items()
            if key in COUNTER_KEYS
        }
        return cls(
            sums,
            counters,
            {k: RuleTally.from_dict(v) for k, v in data["failures"].items()},
            IdList.from_dict(data["ids"]),
            _groups_from(data.get("groups", {})),
            {k: IdList.from_dict(v) for k, v in data["lists"].items() if k in LIST_KEYS},
            {k: HashList.from_dict(v) for k, v in data["hashes"].items() if k in HASH_KEYS},
            {k: Quantiles.from_dict(v) for k, v in data["quantiles"].items() if k in QUANTILE_KEYS},
            streams=StreamState.from_dict(data.get("streams")),
        )


def _groups_from(data: dict[str, Any]) -> dict[str, Groups]:
    """Inverse of the `groups` of `FileTally.to_dict`; raises on a damaged form."""
    groups: dict[str, Groups] = {}
    for key, rows in data.items():
        if key not in GROUP_FIELDS:
            continue
        width = len(GROUP_FIELDS[key])
        found: Groups = {}
        for row in rows:
            if not isinstance(row, list) or len(row) <= width:
                raise ValueError(f"a damaged price key of {key}")
            found[tuple(row[:-width])] = [int(v) for v in row[-width:]]
        groups[key] = found
    return groups


def _joined(items: list[FileTally], attr: str, join: Callable[[list[Any]], Any]) -> dict[str, Any]:
    """Key-wise join of the tallies' id or key lists (`lists`, `hashes`), in order."""
    keys: dict[str, None] = {}
    for t in items:
        keys.update(dict.fromkeys(getattr(t, attr)))
    return {k: join([getattr(t, attr)[k] for t in items if k in getattr(t, attr)]) for k in keys}


def _side_by_side(items: list[FileTally]) -> dict[str, Quantiles]:
    """Key-wise union of the files' summaries (`Quantiles.union`): a sum of files is read for
    its stats only, never kept or added to, so it is never compacted (which loads numpy)."""
    keys = dict.fromkeys(key for t in items for key in t.quantiles)
    return {k: Quantiles.union(t.quantiles[k] for t in items if k in t.quantiles) for k in keys}


def _by_line(settled: FileTally, other: FileTally) -> FileTally:
    """`settled + other` with the lists in line order (`lists_by_line`)."""
    lists = lists_by_line(settled, other)
    return replace(settled._plus(other), ids=lists.ids, lists=lists.lists, hashes=lists.hashes)


def lists_by_line(settled: FileTally, other: FileTally) -> FileTally:
    """The lists (ids, other id lists, answer keys) of `settled` and `other` merged in line
    order, `settled`'s first on a line, the rest empty: one pass adds a request's ids on its
    last line, and a request a join settles may end after some of the later stretch's."""
    keys = (settled.lists.keys() | other.lists.keys(), settled.hashes.keys() | other.hashes.keys())
    return FileTally(
        ids=_interleave(settled.ids, other.ids, IdList),
        lists={k: _interleave(settled.id_list(k), other.id_list(k), IdList) for k in keys[0]},
        hashes={k: _interleave(_keys(settled, k), _keys(other, k), HashList) for k in keys[1]},
    )


def _keys(tally: FileTally, key: str) -> HashList:
    return tally.hashes.get(key, HashList())


def _interleave(a: Any, b: Any, kind: Any) -> Any:
    """Two lists of (line, item), merged by line (a stable merge: `a`'s first on ties)."""
    if not len(a) or not len(b) or a.lines[-1] <= b.lines[0]:
        return a + b  # the usual join: what it settled ends in the later stretch's first lines
    out = kind()
    for line, item in heapq.merge(a, b, key=lambda pair: pair[0]):
        out.append(line, item)
    return out


def _merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Key-wise sum of two maps of mergeable values."""
    if not b:
        return a
    out = dict(a)
    for key, value in b.items():
        out[key] = out[key] + value if key in out else value
    return out
