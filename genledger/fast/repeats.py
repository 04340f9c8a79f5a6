"""The duplicate rules' count and first examples without a Python object per key.

`genledger.rules.rows._repeats` defines the rules: how many keys of a dataset's files were
seen before, walked file after file and each file in line order, and the first of them (for
answers, `_first_lines` adds where each one's key was first seen). `_repeats.c` makes the
same walk over the files' buffers (the ids' bytes and the answer keys' int64s read in
place): one hash table gives the count and the first `wanted` repeats, then a scan that stops
early finds where their keys were first seen, so the rules look up only those few lines
(`benchmarks/repeats.py`). The refresh gives the result to the rules
(`refresh/dataset.py`). Where the extension was not built (a machine without a compiler)
these return None and the rules walk with their own sets (slower, the same stats; the tests
fail there).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any

from genledger.fast.extension import built

# the count, and the first repeats as (file, index, key, first file, first index): the
# rules' `genledger.rules.result.Repeats` (the speed wing imports no rules)
Repeats = tuple[int, list[tuple[int, int, Any, int, int]]]
Walk = Callable[[Any, int], Repeats]


_C = built("_repeats")
# the C walks of ids and of ints; None where the extension was not built
_NATIVE: tuple[Walk, Walk] | None = None if _C is None else (_C.first_ids, _C.first_ints)
NATIVE = _NATIVE is not None  # whether the C walk is in use (tests need it)


def _int64s(*values: object) -> bool:
    return all(isinstance(v, array) and v.typecode == "q" for v in values)


def repeated_ids(
    files: Sequence[tuple[bytes | bytearray, Sequence[int], Sequence[int]]], wanted: int
) -> Repeats | None:
    """The duplicate-id walk over `files` (a dataset's files in order, each as its ids' UTF-8
    bytes one after another, their lengths and their lines: `IdList.data`, `.lengths`,
    `.lines`), with its first `wanted` repeats; None if the extension was not built or the
    lists are not int64 arrays."""
    if _NATIVE is None or not all(_int64s(lengths, lines) for _, lengths, lines in files):
        return None
    return _NATIVE[0](files, wanted)


def repeated_ints(
    files: Sequence[tuple[Sequence[int], Sequence[int]]], wanted: int
) -> Repeats | None:
    """The duplicate-answer walk over `files` (a dataset's files' answer keys and their lines
    in order, `HashList.keys` and `.lines`), with its first `wanted` repeats; None if the
    extension was not built or they are not int64 arrays."""
    if _NATIVE is None or not all(_int64s(keys, lines) for keys, lines in files):
        return None
    return _NATIVE[1](files, wanted)
