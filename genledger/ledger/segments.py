"""A record's big arrays kept beside it, in a file that grows by segments.

A dataset's record holds every record id and answer key it counted (the duplicate rules need
them all), so written as JSON it grows with the run, and a refresh that read 1 % more data
rewrote (and fsynced) the other 99 % too. Here each array is written once into the dataset's
segment file and named in the record by its extents (where its bytes lie, in order); a later
refresh writes only what the array gained since it was loaded, and the record itself stays
small.

- `Segments` collects what one record write adds: each array gets its extents, reusing those
  it was loaded from (`Stored`, which `+` and `joined` carry from the loaded array to the
  longer one). An extent shorter than `MERGE_RATIO` times the bytes after it is written again
  with them, so an array keeps a logarithmic number of extents and each byte is written
  again only a few times.
- A record names its file and committed length (`SegmentsHead`); bytes past that length were
  left by a writer that stopped before its commit, and are written over. When the dead
  bytes (rewritten extents, files read again) outweigh the live ones, the next write starts a
  new generation holding only live bytes, and the old file is deleted after the commit.
- `Blob` reads the arrays back from the committed bytes; any extent outside them is damage.

The arrays' bytes are native int64s and UTF-8, as in memory; without an active `Segments`
(`writing`) arrays go into the JSON as base64 (`idlist.pack_ints`), which is also still read.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from mmap import mmap
from typing import Any, Protocol

Bytes = bytes | mmap  # a segment file's committed bytes, read or mapped
MERGE_RATIO = 4  # the last two extents merge while the earlier is under 4x the later
COMPACT_SLACK = 4 << 20  # dead bytes tolerated beyond the live ones before a new generation


@dataclass(frozen=True)
class Stored:
    """Where an array's first `nbytes` bytes lie in the committed segment file."""

    extents: tuple[tuple[int, int], ...]  # (offset, length) in array order
    nbytes: int


@dataclass(frozen=True)
class SegmentsHead:
    """A record's segment file: its generation, committed length and live bytes."""

    gen: int = 0
    length: int = 0
    live: int = 0

    def to_dict(self) -> dict[str, int]:
        """JSON-able form."""
        return {"gen": self.gen, "length": self.length, "live": self.live}

    def compacts(self) -> bool:
        """Whether the next write starts a new generation (mostly dead bytes)."""
        return self.length > 2 * self.live + COMPACT_SLACK


@dataclass
class Segments:
    """The bytes one record write appends to its segment file, and the extents it hands out."""

    head: SegmentsHead
    fresh: bool = False  # a new generation: no extent of the old file is reused
    pieces: list[bytes | memoryview] = field(default_factory=list)
    added: int = 0
    live: int = 0

    @classmethod
    def after(cls, head: SegmentsHead | None, unused: int = 1) -> Segments:
        """The writer of the record whose committed file is `head` (None: none known, then
        a new file of generation `unused`, which no committed record names)."""
        if head is None:
            return cls(SegmentsHead(gen=unused), fresh=True)
        if head.compacts():
            return cls(SegmentsHead(gen=head.gen + 1), fresh=True)
        return cls(head)

    @property
    def start(self) -> int:
        """Where the appended bytes begin in the file."""
        return 0 if self.fresh else self.head.length

    def new_head(self) -> SegmentsHead:
        """The head to commit with the record."""
        return SegmentsHead(self.head.gen, self.start + self.added, self.live)

    def put(self, data: Any, stored: Stored | None) -> dict[str, Any]:
        """The stored form of array bytes `data` (its extents), appending only what `stored`
        (where its first bytes were loaded from) does not cover."""
        view = memoryview(data).cast("B")
        n = len(view)
        extents: list[tuple[int, int]] = []
        if stored is not None and not self.fresh and stored.nbytes <= n:
            extents = list(stored.extents)
        covered = sum(length for _, length in extents)
        # an extent shorter than MERGE_RATIO times what follows it is written again with it:
        # the extents shrink geometrically, so an array keeps few of them
        while extents and extents[-1][1] < MERGE_RATIO * (n - covered):
            covered -= extents.pop()[1]
        if n > covered:
            extents.append((self._append(view[covered:]), n - covered))
        self.live += n
        return {"at": [list(e) for e in extents], "n": n}

    def _append(self, view: memoryview) -> int:
        offset = self.start + self.added
        self.pieces.append(view)
        self.added += len(view)
        return offset


@dataclass(frozen=True)
class Blob:
    """A record's committed segment bytes (or a mapping of them), from which its arrays are
    read."""

    data: Bytes

    def get(self, ref: Any) -> tuple[list[memoryview], Stored]:
        """The bytes an array's stored form names, as views of its extents (not copied), and
        where they lie; ValueError if it is damaged."""
        if not isinstance(ref, dict) or not isinstance(ref.get("at"), list):
            raise ValueError("damaged array reference")
        view = memoryview(self.data)
        extents = tuple(_extent(e, len(view)) for e in ref["at"])
        n = sum(length for _, length in extents)
        if ref.get("n") != n:
            raise ValueError("array reference of the wrong length")
        return [view[offset : offset + length] for offset, length in extents], Stored(extents, n)


def _extent(value: Any, size: int) -> tuple[int, int]:
    """One (offset, length) within `size` bytes; ValueError otherwise."""
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)):
        raise ValueError("damaged extent")
    offset, length = value
    if offset < 0 or length <= 0 or offset + length > size:
        raise ValueError("extent outside the segment file")
    return offset, length


_WRITING: ContextVar[Segments | None] = ContextVar("segments_writing", default=None)
_READING: ContextVar[Blob | None] = ContextVar("segments_reading", default=None)


@contextmanager
def _set(var: ContextVar[Any], value: Any) -> Iterator[Any]:
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


def writing(segments: Segments) -> AbstractContextManager[Segments]:
    """Arrays serialised in this block go to `segments` (`idlist`, `hashlist`)."""
    return _set(_WRITING, segments)


def reading(blob: Blob) -> AbstractContextManager[Blob]:
    """Arrays deserialised in this block are read from `blob`."""
    return _set(_READING, blob)


def writer() -> Segments | None:
    """The active `Segments`, if a record write is under way."""
    return _WRITING.get()


class _Segmented(Protocol):
    stored: dict[str, Stored]

    def __len__(self) -> int: ...


def leading(parts: Sequence[_Segmented]) -> dict[str, Stored]:
    """Where the arrays of `parts` joined in order begin in a segment file: the stored
    extents of the first part holding anything, when every part before it is empty."""
    for part in parts:
        if len(part):
            return part.stored
    return {}


def put(data: Any, stored: Stored | None) -> dict[str, Any]:
    """The stored form of array bytes `data` in the active record write (`Segments.put`)."""
    segments = _WRITING.get()
    if segments is None:
        raise RuntimeError("no record write under way")
    return segments.put(data, stored)


def _pieces(ref: Any) -> tuple[list[memoryview], Stored]:
    """`Blob.get` in the active record read; ValueError outside one."""
    found = _READING.get()
    if found is None:
        raise ValueError("an array kept in a segment file, read without it")
    return found.get(ref)


def get(ref: Any) -> tuple[bytearray, Stored]:
    """The bytes `ref` names in the active record read (copied once), and where they lie."""
    pieces, stored = _pieces(ref)
    data = bytearray()
    for piece in pieces:
        data += piece
    return data, stored


def get_ints(ref: Any, stored: dict[str, Stored], name: str) -> array[int]:
    """The int64 array `ref` names (`get`), noting where it lies in `stored[name]`."""
    pieces, stored[name] = _pieces(ref)
    values = array("q")
    for piece in pieces:
        values.frombytes(piece)  # ValueError unless a whole number of int64s
    return values
