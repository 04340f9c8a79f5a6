"""Record ids and their line numbers, kept compact for the duplicate-id rule.

The rule needs every id of a dataset, across files and refreshes. As Python strings and ints
a record cost ~130 bytes of the parent's memory (and of its state file); here it is its id's
UTF-8 bytes plus two 8-byte integers, so memory stays nearly flat as a run grows.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, pairwise
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pybase64

from genledger.ledger import heap, segments
from genledger.ledger.segments import Stored

if TYPE_CHECKING:
    from genledger.ledger.hashlist import HashList

T = TypeVar("T")


class IdList:
    """Ids in file order with their 1-based line numbers; appendable, addable, comparable."""

    __slots__ = ("data", "lengths", "lines", "stored")

    def __init__(self) -> None:
        self.data = bytearray()  # the ids' UTF-8 bytes, one after another
        self.lengths = array("q")  # each id's length in `data`: lists add up in C
        self.lines = array("q")
        # where each array's first bytes lie in the segment file it was loaded from
        # (`genledger.ledger.segments`): a longer list made from it writes only the rest
        self.stored: dict[str, Stored] = {}

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, str]]) -> IdList:
        """From (line, id) pairs."""
        ids = cls()
        for line, rid in pairs:
            ids.append(line, rid)
        return ids

    def append(self, line: int, rid: str) -> None:
        """One more id, found on `line`."""
        encoded = rid.encode()
        self.data += encoded
        self.lengths.append(len(encoded))
        self.lines.append(line)

    def add_many(self, lines: Iterable[int], ids: list[str]) -> None:
        """Ids found on `lines`, one each, in order (`append` of every pair)."""
        text = "".join(ids)
        data = text.encode()
        if len(data) == len(text):  # ASCII: an id's bytes are its characters
            self.lengths.extend(map(len, ids))
        else:
            self.lengths.extend(len(rid.encode()) for rid in ids)
        self.data += data
        self.lines.extend(lines)

    def sinks(self) -> tuple[Callable[[int], None], Callable[[str], None], Callable[[], None]]:
        """`append` split for the books' pass: the appends of a record's line and of its id
        (C methods: no Python call a record), and `settle`, which encodes the ids gathered
        into the list once the pass is done (every id in one `join`)."""
        gathered: list[str] = []

        def settle() -> None:
            encoded = list(map(str.encode, gathered))
            self.data += b"".join(encoded)
            self.lengths.extend(map(len, encoded))
            gathered.clear()

        return self.lines.append, gathered.append, settle

    def __len__(self) -> int:
        return len(self.lines)

    def keys(self) -> list[bytes]:
        """The ids as UTF-8 bytes, in order."""
        data, bounds = bytes(self.data), list(accumulate(self.lengths, initial=0))
        return [data[start:end] for start, end in pairwise(bounds)]

    def encoded(self) -> Iterator[tuple[int, bytes]]:
        """(line, id as UTF-8 bytes) pairs, in order: comparing bytes needs no decoding."""
        return zip(self.lines, self.keys(), strict=True)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """(line, id) pairs, in order."""
        for line, key in self.encoded():
            yield line, key.decode()

    @classmethod
    def joined(cls, parts: list[IdList], shifts: Sequence[int] = ()) -> IdList:
        """`parts` one after another (as `a + b + ...`), each part's line numbers moved on by
        its shift (none: 0). Each byte is copied once, and `parts` is emptied as it goes: a
        part the caller no longer holds is freed once copied."""
        return joined_into(cls(), parts, shifts)

    def nbytes(self) -> int:
        """The bytes its arrays hold: the ids' text and two int64s an id."""
        return len(self.data) + 16 * len(self)

    def extend(self, other: IdList, shift: int = 0) -> None:
        """`other`'s ids after these, its lines moved on by `shift`: in place, so only for a
        list being built (`joined`, `ledger.chain`), never one a tally holds."""
        if not len(self):
            self.stored = leading(other, shift)
        self.data += other.data
        self.lengths += other.lengths
        self.lines += moved(other.lines, shift)

    def __add__(self, other: IdList) -> IdList:
        if not len(other):
            return self  # lists are never changed once counted: the empty side adds nothing
        if not len(self):
            return other
        out = IdList()
        out.data = self.data + other.data
        out.lengths = self.lengths + other.lengths
        out.lines = self.lines + other.lines
        out.stored = segments.leading([self, other])
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdList):
            return NotImplemented
        return (self.data, self.lengths, self.lines) == (other.data, other.lengths, other.lines)

    def __repr__(self) -> str:
        return f"IdList({list(self)[:3]!r}{'...' if len(self) > 3 else ''}, n={len(self)})"

    def shifted(self, lines: int) -> IdList:
        """The same ids with every line number moved by `lines`."""
        out = IdList()
        out.data, out.lengths = self.data, self.lengths
        out.lines = moved(self.lines, lines)
        out.stored = {k: v for k, v in self.stored.items() if k != "lines"}
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: in a record write, each array's extents in the segment file
        (`genledger.ledger.segments`); else the ids as one string, the integers as base64
        of int64s."""
        if segments.writer() is None:
            return {
                "text": self.data.decode(),
                "lengths": pack_ints(self.lengths),
                "lines": pack_ints(self.lines),
            }
        return {
            "data": segments.put(self.data, self.stored.get("data")),
            "lengths": segments.put(self.lengths, self.stored.get("lengths")),
            "lines": segments.put(self.lines, self.stored.get("lines")),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IdList:
        """Inverse of `to_dict`; raises ValueError on a damaged form."""
        ids = cls()
        if "text" in data:
            ids.data = bytearray(str(data["text"]).encode())
            ids.lengths, ids.lines = unpack_ints(data["lengths"]), unpack_ints(data["lines"])
        else:
            ids.data, ids.stored["data"] = segments.get(data["data"])
            if not ids.data.isascii():
                str(ids.data, "utf-8")  # the ids are text: UnicodeDecodeError is a ValueError
            ids.lengths = segments.get_ints(data["lengths"], ids.stored, "lengths")
            ids.lines = segments.get_ints(data["lines"], ids.stored, "lines")
        if len(ids.lengths) != len(ids.lines) or sum(ids.lengths) != len(ids.data):
            raise ValueError("damaged id list")
        if ids.lengths and min(ids.lengths) < 0:
            raise ValueError("damaged id list")
        return ids


def moved(lines: array[int], shift: int) -> array[int]:
    """`lines` with `shift` added to each (themselves when 0)."""
    return array("q", map(shift.__add__, lines)) if shift else lines


def leading(first: IdList | HashList, shift: int) -> dict[str, Stored]:
    """Where the arrays of a list that begins with `first` (its lines moved by `shift`)
    begin in a segment file (`segments.leading`): moved lines are not the stored ones."""
    if not len(first):
        return {}
    return {k: v for k, v in first.stored.items() if not (shift and k == "lines")}


class _Joinable(Protocol):
    def __len__(self) -> int: ...
    def extend(self, other: Any, shift: int = 0) -> None: ...
    def nbytes(self) -> int: ...


J = TypeVar("J", bound=_Joinable)


def joined_into(out: J, parts: list[J], shifts: Sequence[int] = ()) -> J:
    """`parts` extended onto the empty `out` one after another, each part's lines moved on by
    its shift (none: 0), `parts` emptied as it goes; a lone unmoved part is itself."""
    shifts = list(shifts) or [0] * len(parts)
    if len(parts) == 1 and not shifts[0]:
        return parts.pop()  # lists are not changed once counted: nothing to copy
    copied = 0
    for part, shift in zip(drained(parts), shifts, strict=True):
        out.extend(part, shift)
        copied += part.nbytes()
        if copied >= heap.TRIM_BYTES:  # the parts copied are free: give their pages back
            copied = 0
            heap.give_back()
    return out


def drained(parts: list[T]) -> Iterator[T]:
    """The items of `parts` in order, each removed from the list before it is handed out
    (the joins free what they copied as they go)."""
    parts.reverse()
    while parts:
        yield parts.pop()


def pack_ints(values: array[int]) -> str:
    """int64s as base64 text (the state file's form of an array)."""
    return pybase64.b64encode(values.tobytes()).decode()


def unpack_ints(text: str) -> array[int]:
    """Inverse of `pack_ints`."""
    values = array("q")
    values.frombytes(pybase64.b64decode(text, validate=True))
    return values
