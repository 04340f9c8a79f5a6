"""Record ids and their line numbers, kept compact for the duplicate-id rule.

The rule needs every id of a dataset, across files and refreshes. As Python strings and ints
a record cost ~130 bytes of the parent's memory (and of its state file); here it is its id's
UTF-8 bytes plus two 8-byte integers, so memory stays nearly flat as a run grows.
"""

from __future__ import annotations

import base64
from array import array
from collections.abc import Iterable, Iterator
from typing import Any


class IdList:
    """Ids in file order with their 1-based line numbers; appendable, addable, comparable."""

    __slots__ = ("data", "ends", "lines")

    def __init__(self) -> None:
        self.data = bytearray()  # the ids' UTF-8 bytes, one after another
        self.ends = array("q")  # where each id ends in `data`
        self.lines = array("q")

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, str]]) -> IdList:
        """From (line, id) pairs."""
        ids = cls()
        for line, rid in pairs:
            ids.append(line, rid)
        return ids

    def append(self, line: int, rid: str) -> None:
        """One more id, found on `line`."""
        self.data += rid.encode()
        self.ends.append(len(self.data))
        self.lines.append(line)

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """(line, id) pairs, in order."""
        start, data = 0, self.data
        for end, line in zip(self.ends, self.lines, strict=True):
            yield line, data[start:end].decode()
            start = end

    def __add__(self, other: IdList) -> IdList:
        out = IdList()
        out.data = self.data + other.data
        shift = len(self.data)
        out.ends = self.ends + array("q", (end + shift for end in other.ends))
        out.lines = self.lines + other.lines
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdList):
            return NotImplemented
        return (self.data, self.ends, self.lines) == (other.data, other.ends, other.lines)

    def __repr__(self) -> str:
        return f"IdList({list(self)[:3]!r}{'...' if len(self) > 3 else ''}, n={len(self)})"

    def shifted(self, lines: int) -> IdList:
        """The same ids with every line number moved by `lines`."""
        out = IdList()
        out.data, out.ends = self.data, self.ends
        out.lines = array("q", (line + lines for line in self.lines))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: the ids as one string, the integers as base64 of int64s."""
        return {"text": self.data.decode(), "ends": _pack(self.ends), "lines": _pack(self.lines)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IdList:
        """Inverse of `to_dict`; raises ValueError on a damaged form."""
        ids = cls()
        ids.data = bytearray(str(data["text"]).encode())
        ids.ends, ids.lines = _unpack(data["ends"]), _unpack(data["lines"])
        if len(ids.ends) != len(ids.lines) or (ids.ends and ids.ends[-1] != len(ids.data)):
            raise ValueError("damaged id list")
        return ids


def _pack(values: array[int]) -> str:
    return base64.b64encode(values.tobytes()).decode()


def _unpack(text: str) -> array[int]:
    values = array("q")
    values.frombytes(base64.b64decode(text))
    return values
