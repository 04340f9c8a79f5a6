"""A record's visible answer as a fixed-size key, for the duplicate-answer rule.

The key is the 64-bit xxh3 hash of the answer's text — its visible parts (the declaration's
answer paths, reasoning left out) joined by a space, with ASCII whitespace (space, tab,
line feed, carriage return, vertical tab, form feed) stripped from both ends — written as
JSON writes a string (orjson's escaping: `\\"`, `\\\\`, `\\n`, `\\t`, ..., other control
characters as `\\u00XX`, everything else as its UTF-8 bytes), each run of ASCII whitespace
inside it one space (answers differing only in spacing or line breaks are duplicates). An
answer that is empty after stripping has no key.

Why JSON's escaping: the typed decoders keep texts as the raw JSON bytes of the line
(`genledger.fast.rawtext`), and a JSON string holding no `\\u` and no `\\/` escape is written
exactly as orjson writes it (the other escapes have one spelling). Such a text is hashed from
its bytes as they are; any other takes `escaped`, the definition both paths share. Runs of
whitespace are collapsed by C scans only: a text with no backslash and no double space has
none to collapse and is hashed as it is; any other is decoded and collapsed by one regex.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import orjson
import xxhash

WHITESPACE = " \t\n\r\x0b\x0c"  # ASCII whitespace, as bytes.strip() and str.isspace() agree
# The escaped forms of the whitespace characters at a text's ends (vertical tab is `\u000b`,
# which the raw-bytes path never meets: a `\u` escape sends a text to `escaped`).
ESCAPED_SPACE = (b" ", b"\\n", b"\\t", b"\\r", b"\\f")
hash64 = _hash = xxhash.xxh3_64_intdigest  # the typed decoders hash in place too
SIGN = 1 << 63  # the unsigned hash less this: the signed value an Int64 column holds
Buffer = bytes | memoryview  # a text's escaped bytes, or a view of them in the line
# The JSON escapes of ASCII whitespace (orjson's spelling): a line feed, a tab, ...
# a run of whitespace escapes (and the spaces after them): it starts at a backslash, which the
# regex engine finds by its literal prefix
ESCAPE_RUNS = re.compile(rb"\\(?:[ntrf]|u000b)(?:\\(?:[ntrf]|u000b)| )*")
SPACES, SPACES_B = re.compile("  +"), re.compile(b"  +")  # a literal prefix: searched fast


def escaped(text: str) -> bytes:
    """A text as orjson writes it inside a JSON string (no quotes)."""
    return orjson.dumps(text)[1:-1]


def collapsed(text: str) -> str:
    """A text with each run of ASCII whitespace one space, and none at its ends (C passes
    only: a replace per kind of whitespace present, a literal search for double spaces)."""
    for char in "\t\n\r\x0b\x0c":
        if char in text:
            text = text.replace(char, " ")
    if "  " in text:
        text = SPACES.sub(" ", text)
    return text.strip(" ")


def _collapsed_escaped(body: Buffer) -> Buffer:
    """`collapsed` of an escaped text, kept escaped (whitespace inside a JSON string is a
    space or an escape: without a backslash or a double space there is nothing to do; without
    an escaped backslash every `\\n` is a line feed: replaced by a space)."""
    data = body if isinstance(body, bytes) else bytes(body)
    if b"\\" not in data:
        if b"  " not in data:
            return body
    elif b"\\\\" in data:
        return escaped(collapsed(orjson.loads(b'"' + data + b'"')))
    else:
        data = ESCAPE_RUNS.sub(b" ", data)
    if b"  " in data:
        data = SPACES_B.sub(b" ", data)
    return data.strip(b" ")


def part_text(value: Any) -> str | None:
    """The text of one value on an answer path: a string as it is, a tool call (an object)
    as its JSON with sorted keys; None for null."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def key_of_texts(texts: Iterable[str]) -> int | None:
    """The key of an answer given as its parts' texts (the general path)."""
    joined = collapsed(" ".join(texts))
    return _hash(escaped(joined)) - SIGN if joined else None


def key_of_escaped(parts: list[Buffer]) -> int | None:
    """The key of an answer given as its parts' escaped bytes, each as orjson writes it."""
    body = _strip_escaped(parts[0] if len(parts) == 1 else b" ".join(parts))
    body = _collapsed_escaped(body) if body else body
    return _hash(body) - SIGN if body else None


def key_of_spelled(raw: Buffer) -> int | None:
    """The key of an answer of one JSON string (with its quotes) spelled as orjson spells
    it: most answers neither start nor end with whitespace, so they are hashed in place."""
    view = memoryview(raw)
    size = len(view)
    if size > 3:
        first, last = view[1], view[-2]
        if first != 32 and first != 92 and last != 32 and view[-3] != 92:
            inner = view[1:-1]
            body = _collapsed_escaped(inner)
            if body is inner:
                return _hash(inner) - SIGN  # nothing to strip or collapse
            # a collapse that did anything stripped the ends too: no second pass
            return _hash(body) - SIGN if body else None
    return key_of_escaped([view[1:-1]])


def key_of_spelled_bytes(data: bytes) -> int | None:
    """`key_of_spelled` of a JSON string's bytes (with its quotes), step for step on the
    bytes: no view made, no copy of a text to collapse."""
    if len(data) > 3:
        first, last = data[1], data[-2]
        if first != 32 and first != 92 and last != 32 and data[-3] != 92:
            inner = data[1:-1]
            body = _collapsed_escaped(inner)
            if body is inner:
                return _hash(inner) - SIGN
            return _hash(body) - SIGN if body else None
    return key_of_spelled(data)


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
