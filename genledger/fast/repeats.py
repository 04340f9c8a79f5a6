"""The duplicate rules' count without a Python object per key.

`genledger.rules.rows._repeats` defines the rules: how many keys of a dataset's files were
seen before, in file order, and the first of them. The count alone is the number of keys less
the number of distinct keys, whatever the order, so one hash table over the files' buffers
gives it (`_repeats.c`: the ids' bytes and the answer keys' int64s read in place, 5 to 36x the
definition's pace on 100k to 1M keys, `benchmarks/repeats.py`). The refresh gives it to the
rules (`refresh/dataset.py`), whose ordered walk for the examples then runs only when it is
not 0, which a refresh of a clean dataset never reaches. Where the extension was not built (a
machine without a compiler) these return None and the rules count with their own sets
(slower, the same stats; the tests fail there).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any


def _built() -> tuple[Callable[[Any], int], Callable[[Any], int]] | None:
    """The C counts, or None if the extension was not built."""
    try:
        from genledger.fast._repeats import repeated_ids, repeated_ints
    except ImportError:  # installed without a compiler (the build is optional)
        return None
    return repeated_ids, repeated_ints


_NATIVE = _built()
NATIVE = _NATIVE is not None  # whether the C count is in use (tests need it)


def _int64s(values: object) -> bool:
    return isinstance(values, array) and values.typecode == "q"


def repeated_ids(files: Sequence[tuple[bytes | bytearray, Sequence[int]]]) -> int | None:
    """How many ids of `files` (a dataset's files in order, each as its ids' UTF-8 bytes one
    after another and their lengths, `IdList.data` and `.lengths`) were seen before; None if
    the extension was not built or the lengths are not int64 arrays."""
    if _NATIVE is None or not all(_int64s(lengths) for _, lengths in files):
        return None
    return _NATIVE[0](files)


def repeated_ints(keys: Sequence[Sequence[int]]) -> int | None:
    """How many of `keys` (a dataset's files' answer keys in order, `HashList.keys`) were
    seen before; None if the extension was not built or they are not int64 arrays."""
    if _NATIVE is None or not all(map(_int64s, keys)):
        return None
    return _NATIVE[1](keys)
