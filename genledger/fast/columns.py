"""The columns the books read, taken out of a chunk's row tuples once.

Each column the books and the rules of a table read (`ledger.arraybooks.columns_used`)
becomes an array by its schema kind (`CODE`): an int or count column int64 values with a
present mask; a flag the rows where it is True itself (as a condition reads it); a text
column coded, each row's index into the column's distinct values in first-seen order (a
model, a format or a finish reason is a few texts over thousands of rows); a text only the
id lists read, a list.
`taken` is the definition; `_columns.columns` does the same in C (tested equal). A value
that does not fit its kind (a float in a count, an int past int64, a list in a text) makes
the chunk not clean: None, and the books' row pass reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from genledger.fast import vector
from genledger.fast.extension import built
from genledger.parse.schema import TABLES

_C = built("_columns")
INT64 = (-(1 << 63), (1 << 63) - 1)
Taken = tuple[Any, Any, list[Any] | None]  # (values, present, distinct) as `_columns.columns`


@dataclass(frozen=True)
class Columns:
    """A chunk's columns by name: each (values, present mask) for `rules.expr` (a coded
    text's values looked up), the coded ones' (codes, distinct values) too."""

    n: int
    arrays: dict[str, tuple[Any, Any]]
    coded: dict[str, tuple[Any, list[Any]]]


CODE = {"int": b"i", "count": b"i", "bool": b"b"}  # a schema kind's column code; texts: c or o


def code_of(role: str, name: str, conditions: bool) -> bytes:
    """The code of column `name` of `role`'s table: by its schema kind; a text coded where
    `conditions` (a condition, a tally or a price key reads it), else a list."""
    kind = TABLES[role].by_name[name].kind
    return CODE.get(kind, b"c" if conditions else b"o")


def taken(rows: list[tuple[Any, ...]], places: tuple[int, ...], codes: bytes) -> list[Taken] | None:
    """The definition of `_columns.columns`: the columns at `places` of `rows` by `codes`,
    each (values, present, distinct) — int64 values, present bytes, a coded text's distinct
    values — or None where a row or a value is not clean."""
    if any(not isinstance(row, tuple) or len(row) <= max(places, default=-1) for row in rows):
        return None
    out: list[Taken] = []
    for place, code in zip(places, codes, strict=True):
        values = [row[place] for row in rows]
        present = bytearray(v is not None for v in values)
        if code == ord("i"):
            if not all(v is None or _int64(v) for v in values):
                return None
            out.append((_int64s([0 if v is None else v for v in values]), present, None))
        elif code == ord("b"):
            out.append((bytearray(v is True for v in values), bytearray(b"\1" * len(rows)), None))
        elif code == ord("c"):
            if not all(v is None or v.__class__ is str for v in values):
                return None
            index: dict[Any, int] = {}
            for v in values:
                index.setdefault(v, len(index))
            out.append((_int64s([index[v] for v in values]), present, list(index)))
        else:
            out.append((values, present, None))
    return out


def _int64(value: Any) -> bool:
    return (value.__class__ is int or value.__class__ is bool) and (INT64[0] <= value <= INT64[1])


def _int64s(values: list[int]) -> bytearray:
    from array import array

    return bytearray(array("q", values).tobytes())


Taker = Callable[[list[tuple[Any, ...]]], Columns | None]


@cache
def taker(role: str, used: tuple[tuple[str, bytes], ...]) -> Taker:
    """The columns `used` (name, code) of `role`'s rows as `Columns` (numpy loaded), None
    where not clean: by C where it was built, else by `taken`."""
    names = tuple(name for name, _ in used)
    places = tuple(TABLES[role].names.index(name) for name in names)
    codes = b"".join(code for _, code in used)
    take = taken if _C is None else _C.columns

    def columns(rows: list[tuple[Any, ...]]) -> Columns | None:
        found = take(rows, places, codes)
        return None if found is None else arrays(found, names, codes, len(rows))

    return columns


def arrays(found: list[Taken], names: tuple[str, ...], codes: bytes, n: int) -> Columns:
    """`Columns` over the buffers and lists `taken` made."""
    np = vector.numpy()
    out, coded = {}, {}
    for name, code, (values, present, distinct) in zip(names, codes, found, strict=True):
        mask = np.frombuffer(present, bool) if n else np.zeros(0, bool)
        if code == ord("o"):
            out[name] = values, mask
            continue
        if code == ord("b"):
            out[name] = np.frombuffer(values, bool) if n else np.zeros(0, bool), mask
            continue
        ints = np.frombuffer(values, np.int64) if n else np.zeros(0, np.int64)
        if code == ord("c"):
            assert distinct is not None
            coded[name] = ints, distinct
        out[name] = ints, mask  # a coded text's values: `Texts` looks them up when read
    return Columns(n, Texts(out, coded), coded)


class Texts(dict[str, tuple[Any, Any]]):
    """The columns as `rules.expr` reads them: a coded text's values (an object array) are
    looked up from its codes the first time a condition reads them."""

    def __init__(self, arrays: dict[str, tuple[Any, Any]], coded: dict[str, tuple[Any, Any]]):
        super().__init__({k: v for k, v in arrays.items() if k not in coded})
        self.raw = arrays
        self.coded = coded

    def __missing__(self, name: str) -> tuple[Any, Any]:
        if name not in self.coded:
            raise KeyError(name)
        np = vector.numpy()
        codes, distinct = self.coded[name]
        lookup = np.empty(len(distinct), object)
        lookup[:] = distinct
        found = self[name] = lookup[codes], self.raw[name][1]
        return found
