"""Fixed-size answer keys and their line numbers, for the duplicate-answer rule.

Each record with a visible answer costs 16 bytes here (its 8-byte key, `genledger.parse.
answer`, and its 8-byte line), whatever the answer's length, so memory and state grow with
the records, never with the texts.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from genledger.ledger import segments
from genledger.ledger.idlist import joined_into, leading, moved, pack_ints, unpack_ints
from genledger.ledger.segments import Stored

BYTES_PER_RECORD = 16


class HashList:
    """Keys in file order with their 1-based line numbers; appendable, addable, comparable."""

    __slots__ = ("keys", "lines", "stored")

    def __init__(self) -> None:
        self.keys = array("q")
        self.lines = array("q")
        self.stored: dict[str, Stored] = {}  # as `IdList.stored`

    def append(self, line: int, key: int) -> None:
        """One more key, found on `line`."""
        self.keys.append(key)
        self.lines.append(line)

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        """(line, key) pairs, in order."""
        return zip(self.lines, self.keys, strict=True)

    @classmethod
    def joined(cls, parts: list[HashList], shifts: Sequence[int] = ()) -> HashList:
        """`parts` one after another, lines moved on and `parts` emptied as
        `IdList.joined`'s."""
        return joined_into(cls(), parts, shifts)

    def nbytes(self) -> int:
        """The bytes its arrays hold: two int64s a key."""
        return 16 * len(self)

    def extend(self, other: HashList, shift: int = 0) -> None:
        """`other`'s keys after these, in place, as `IdList.extend`."""
        if not len(self):
            self.stored = leading(other, shift)
        self.keys += other.keys
        self.lines += moved(other.lines, shift)

    def __add__(self, other: HashList) -> HashList:
        if not len(other):
            return self  # as `IdList.__add__`
        if not len(self):
            return other
        out = HashList()
        out.keys = self.keys + other.keys
        out.lines = self.lines + other.lines
        out.stored = segments.leading([self, other])
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HashList):
            return NotImplemented
        return (self.keys, self.lines) == (other.keys, other.lines)

    def __repr__(self) -> str:
        return f"HashList(n={len(self)})"

    def shifted(self, lines: int) -> HashList:
        """The same keys with every line number moved by `lines`."""
        out = HashList()
        out.keys = self.keys
        out.lines = moved(self.lines, lines)
        out.stored = {k: v for k, v in self.stored.items() if k != "lines"}
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: in a record write, both arrays' extents in the segment file
        (`genledger.ledger.segments`); else both as base64 of int64s."""
        if segments.writer() is None:
            return {"keys": pack_ints(self.keys), "lines": pack_ints(self.lines)}
        return {
            "keys": segments.put(self.keys, self.stored.get("keys")),
            "lines": segments.put(self.lines, self.stored.get("lines")),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HashList:
        """Inverse of `to_dict`; raises ValueError on a damaged form."""
        out = cls()
        if isinstance(data["keys"], str):
            out.keys, out.lines = unpack_ints(data["keys"]), unpack_ints(data["lines"])
        else:
            out.keys = segments.get_ints(data["keys"], out.stored, "keys")
            out.lines = segments.get_ints(data["lines"], out.stored, "lines")
        if len(out.keys) != len(out.lines):
            raise ValueError("damaged key list")
        return out
