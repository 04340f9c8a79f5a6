"""A file's tallies added in order as they come: the pieces workers read, chunks of rows.

`Chain.add` adds a tally's sums, counters, failures, windows and streams as `FileTally`'s
`+` does, and keeps only its id and answer-key arrays (the rest of it, such as its window of
records, is freed at once); `Chain.tally` joins the arrays once, each part freed as it is
copied. Adding tallies one by one with `+` copied the growing lists at every step (three
whole lists alive at the end), and joining a file's pieces only once all were read held
every piece whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList
from genledger.ledger.tally import FileTally, lists_by_line


class Chain:
    """`t0.shifted(s0) + t1.shifted(s1) + ...`, taken one tally at a time, in file order."""

    __slots__ = ("hashes", "ids", "lists", "total")

    def __init__(self) -> None:
        self.total = FileTally()  # everything but the lists
        # each list's parts (the tallies' own arrays, as compact as they came) and their
        # shifts, joined once by `tally`: growing one array piece by piece left the heap
        # full of the places it had outgrown (glibc reallocates it between other objects)
        self.ids: Parts[IdList] = ([], [])
        self.lists: dict[str, Parts[IdList]] = {}
        self.hashes: dict[str, Parts[HashList]] = {}

    def add(self, tally: FileTally, shift: int = 0) -> None:
        """`tally`, its line numbers moved on by `shift`, after all added before."""
        self.total = self.total + _bare(tally).shifted(shift)
        settled = self.total  # its lists: the requests the join settled, alone
        self.total = _bare(settled)
        if len(settled.ids) or settled.lists or settled.hashes:
            # they end among this tally's lines (a head waits for the join wherever it ends)
            self._keep(lists_by_line(settled, tally.shifted(shift)), 0)
        else:
            self._keep(tally, shift)

    def _keep(self, tally: FileTally, shift: int) -> None:
        _put(self.ids, tally.ids, shift)
        for key, ids in tally.lists.items():
            _put(self.lists.setdefault(key, ([], [])), ids, shift)
        for key, keys in tally.hashes.items():
            _put(self.hashes.setdefault(key, ([], [])), keys, shift)

    def tally(self) -> FileTally:
        """The sum of everything added; the chain is emptied (each part freed once copied)."""
        lists = {key: IdList.joined(*self.lists.pop(key)) for key in list(self.lists)}
        hashes = {key: HashList.joined(*self.hashes.pop(key)) for key in list(self.hashes)}
        ids = IdList.joined(*self.ids)
        return replace(self.total, ids=ids, lists=lists, hashes=hashes)


L = TypeVar("L", IdList, HashList)
Parts = tuple[list[L], list[int]]  # a list's parts in order, and their shifts


def _put(parts: Parts[L], found: L, shift: int) -> None:
    if len(found):
        parts[0].append(found)
        parts[1].append(shift)


def chained(tallies: list[FileTally], shifts: list[int] | None = None) -> FileTally:
    """The `Chain` of `tallies` (none of `shifts`: 0), emptying the list as it goes, so
    each tally is freed once added."""
    shifts = shifts or [0] * len(tallies)
    chain = Chain()
    tallies.reverse()
    shifts.reverse()
    while tallies:
        chain.add(tallies.pop(), shifts.pop())
    return chain.tally()


def _bare(tally: FileTally) -> FileTally:
    """`tally` without its id and key lists."""
    if not (len(tally.ids) or tally.lists or tally.hashes):
        return tally
    return replace(tally, ids=IdList(), lists={}, hashes={})
