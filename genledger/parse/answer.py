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
its bytes as they are; any other takes `escaped`, the definition both paths share.
`collapsed_escaped` defines the collapse of whitespace runs on such escaped bytes; the typed
decoders key texts with the same collapse in C (`genledger.fast.answerkeys`), tested equal
to it, and fall back to it where the C one was not built.
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


def collapsed_escaped(body: Buffer) -> Buffer:
    """`collapsed` of an escaped text, kept escaped: the definition of the C collapse
    (`genledger/fast/_collapse.c`). Whitespace inside a JSON string is a space or an
    escape: without a backslash or a double space there is nothing to do (the input itself
    is returned, its ends as they are); without an escaped backslash every `\\n` is a line
    feed: replaced by a space."""
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
