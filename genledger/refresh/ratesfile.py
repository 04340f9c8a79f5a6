"""Every quiet dataset's rates (`ledger.records.Rates`) in one file of the state dir, by the
stem of its record: what a quiet refresh changes is written once a refresh, not once a
dataset (a file made and renamed for each of 69 quiet datasets was most of a no-op's writes).

Only the holder of a dataset's lock changes its entry, and every change is made under the
file's own lock on the file as it then stands, so refreshes of other datasets keep theirs.
The file is written atomically without fsync: lost or torn, it costs the samples of the
rate history taken since each record was written whole, never a count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec
import msgspec.json

from genledger.ledger.records import Rates
from genledger.refresh.atomic import atomic_write_many

Book = dict[str, Rates]  # by record stem


class RatesFile:
    """The rates file at `path`, read once for as long as it stands unchanged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, ...] | None = None  # the file read into `_book`
        self._book: Book = {}

    def book(self) -> Book:
        """The rates kept, by record stem (empty when absent, unreadable or damaged)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            self._seen, self._book = None, {}
            return self._book
        seen = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev)
        if seen != self._seen:
            self._seen, self._book = seen, _read(self.path)
        return self._book

    def update(self, kept: Mapping[str, Rates], drop: Iterable[str]) -> None:
        """Set the rates `kept` and drop the entries `drop` of the file as it stands now (the
        caller holds its lock), then write it whole, atomically."""
        book = _read(self.path)
        book.update(kept)
        for stem in drop:
            book.pop(stem, None)
        atomic_write_many([(self.path, msgspec.json.encode(book))], durable=False)


def _read(path: Path) -> Book:
    """The book in the file at `path`; empty when absent, unreadable or damaged."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=Book)
    except (OSError, msgspec.DecodeError, ValueError, TypeError):
        return {}
