"""Answer keys from a text's escaped bytes: the typed decoders' raw JSON, hashed in place.

`genledger.parse.answer` defines the key (`key_of_texts`) and its collapse of whitespace runs
on escaped bytes (`collapsed_escaped`). The functions here key a text from the bytes orjson
wrote, or would write, without decoding it; their collapse is the same one in C
(`_collapse.c`, built by the package's install: a byte scan 16 bytes at a time, ~10x the
definition's pace on the corpora's answers, `benchmarks/answers.py`). Texts outside
orjson's spelling that the C scan cannot decide alone go back to the definition, and so does
every text when the extension was not built (a machine without a compiler: slower, the same
keys; the tests fail there).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from genledger.fast.extension import built
from genledger.parse.answer import SIGN, Buffer, collapsed_escaped, hash64

_C = built("_collapse")
# `collapsed_escaped` of an escaped text: the C scan, handing what it cannot decide alone to
# the definition; the definition itself where the extension was not built
collapse: Callable[[Buffer], Buffer] = (
    collapsed_escaped if _C is None else partial(_C.collapsed_escaped, collapsed_escaped)
)
NATIVE = collapse is not collapsed_escaped  # whether the C collapse is in use (tests need it)


def key_of_escaped(parts: list[Buffer]) -> int | None:
    """The key of an answer given as its parts' escaped bytes, each as orjson writes it."""
    body = _strip_escaped(parts[0] if len(parts) == 1 else b" ".join(parts))
    body = collapse(body) if body else body
    return hash64(body) - SIGN if body else None


def spelled_steps(raw: Buffer) -> int | None:
    """The key of an answer of one JSON string (with its quotes) spelled as orjson spells
    it, step by step in Python: most answers neither start nor end with whitespace, so they
    are hashed in place."""
    view = memoryview(raw)
    size = len(view)
    if size > 3:
        first, last = view[1], view[-2]
        if first != 32 and first != 92 and last != 32 and view[-3] != 92:
            inner = view[1:-1]
            body = collapse(inner)
            if body is inner:
                return hash64(inner) - SIGN  # nothing to strip or collapse
            # a collapse that did anything stripped the ends too: no second pass
            return hash64(body) - SIGN if body else None
    return key_of_escaped([view[1:-1]])


def spelled_bytes_steps(data: bytes) -> int | None:
    """`spelled_steps` of a JSON string's bytes (with its quotes), step for step on the
    bytes: no view made, no copy of a text to collapse."""
    if len(data) > 3:
        first, last = data[1], data[-2]
        if first != 32 and first != 92 and last != 32 and data[-3] != 92:
            inner = data[1:-1]
            body = collapse(inner)
            if body is inner:
                return hash64(inner) - SIGN
            return hash64(body) - SIGN if body else None
    return spelled_steps(data)


# The key of a spelled string in one C call (`_collapse.spelled_key`: strip test, collapse
# and hash, no slice and no bytes object where nothing collapses), its Python steps as its
# fallback; None where the extension was not built.
_native_key: Callable[[Buffer], int | None] | None = (
    None if _C is None else partial(_C.spelled_key, spelled_steps, hash64)
)
# The key of an answer of one JSON string (with its quotes, any buffer) spelled as orjson
# spells it: in C where it was built (~1.4 µs a 5 kB answer less than the steps), else the
# steps; `key_of_spelled_bytes` is the same for a bytes object.
key_of_spelled: Callable[[Buffer], int | None] = _native_key or spelled_steps
key_of_spelled_bytes: Callable[[bytes], int | None] = _native_key or spelled_bytes_steps


def _strip_escaped(data: Buffer) -> Buffer:
    """Escaped text less the escaped whitespace at its ends (`\\n`, `\\t`, `\\r`,
    `\\f`, orjson's `\\u000b` for a vertical tab, and spaces)."""
    start, end = 0, len(data)
    while start < end:
        size = _space_at(data, start)
        if not size:
            break
        start += size
    while end > start:
        size = _space_before(data, start, end)
        if not size:
            break
        end -= size
    return data[start:end] if start or end < len(data) else data


def _space_at(data: Buffer, at: int) -> int:
    """The length of the escaped whitespace starting at `at` (0: none). Read from the
    start, a backslash always begins an escape."""
    if data[at] == 32:
        return 1
    if data[at] != 92:
        return 0
    if data[at + 1 : at + 2] in (b"n", b"t", b"r", b"f"):
        return 2
    return 6 if data[at + 1 : at + 6] == b"u000b" else 0


def _space_before(data: Buffer, start: int, end: int) -> int:
    """The length of the escaped whitespace ending at `end` (0: none)."""
    if data[end - 1] == 32:
        return 1
    for size, tail in ((2, (b"n", b"t", b"r", b"f")), (6, (b"u000b",))):
        at = end - size
        if (
            at >= start
            and data[at] == 92
            and data[at + 1 : end] in tail
            and _escapes(data, start, at)
        ):
            return size
    return 0


def _escapes(data: Buffer, start: int, at: int) -> bool:
    """Whether the backslash at `at` begins an escape: the run of backslashes before it is
    even (an odd run ends in an escaped backslash)."""
    before = at
    while before > start and data[before - 1] == 92:
        before -= 1
    return (at - before) % 2 == 0
