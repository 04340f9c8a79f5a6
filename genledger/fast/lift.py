"""Long integer arrays counted from their bytes, never decoded (the lift lever).

All the facts need from an id array is its length, and from a 0/1 mask its length and its
ones. A line's long flat arrays are found by their brackets (memchr), each is checked to be
a JSON array of integers by SIMD byte-class scans (stringzilla: ~15-30 GB/s a pass), counted
(its commas, or its ones as a byte sum), and replaced by a stand-in: a short JSON string that
states the counts. The rest of the line, now small, is then decoded as usual (orjson, or a
typed msgspec shape), which checks everything else exactly as before.

Why this is exact:
- An array is lifted only when its bytes are a complete JSON array of integers that orjson
  accepts: `[`, then integers without leading zeros (at most 308 digits: a longer one
  overflows orjson's double) separated by `,` or `, `, then `]`. Anything else (floats,
  exponents, strings, null, true/false, nested arrays, tabs, other spacing, empty elements)
  stays in the line and is decoded as before.
- A stand-in is a JSON string starting with U+0001, which a JSON text can only spell as the
  escape `\\u0001` (a raw control character is no valid JSON), and the line's other bytes
  are checked not to hold that escape: every such string in the decoded line is a stand-in.
- Replacing one complete JSON value by another keeps the line's validity and structure
  wherever the array was a value; a `[` inside a string makes the stand-in's quote end that
  string early and leaves a backslash outside any string, which no decoder accepts: the line
  then takes the slower paths, which decide.
So the decoded small line is the original record with some arrays replaced by strings that
say their counts; the callers read a stand-in where the array was, and treat one found
anywhere else (or a line whose small form does not decode) as a line for the slower paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache

import stringzilla as sz

from genledger.fast.extension import built

ESCAPE = b"\\u0001"  # how a JSON text spells a stand-in's first character
MARK = "\x01"  # a stand-in's first character, decoded
MIN_SPAN = 128  # shorter arrays stay in the line: decoding them costs no more than this
MAX_BRACKETS = 64  # `[` looked at per line before the rest of it stays as it is
MAX_DIGITS = 308  # a longer integer literal overflows orjson's double: the line is malformed

DIGITS = b"0123456789"
INTEGER_BYTES = DIGITS + b", -"
SIGNED_DIGITS = DIGITS + b"-"
SPACE, COMMA, OPEN, CLOSE, COLON, QUOTE, ZERO, MINUS = b' ,[]:"0-'


def _table(mapping: dict[bytes, int], default: int) -> bytes:
    """A 256-byte translation table: each byte of each key maps to its value."""
    table = bytearray([default]) * 256
    for chars, value in mapping.items():
        for char in chars:
            table[char] = value
    return bytes(table)


# Each array is read through byte maps (one SIMD pass each): commas as 1, all else 0 (their
# count is the map's byte sum); spaces as 1, digits, commas and minus signs 0, anything else 2.
COMMA_ONE = _table({b",": 1}, 0)
SPACE_ONE = _table({b" ": 1, SIGNED_DIGITS + b",": 0}, 2)
ONE_AS_ZERO = _table({bytes([b]): b for b in range(256)} | {b"1": ZERO}, 0)
# With minus signs: classes of bytes, and the places a sign cannot be.
CLASSES = _table({DIGITS: ord("d"), b",": COMMA, b" ": SPACE, b"-": MINUS}, ord("!"))
NOT_A_SIGN = (b"d-", b"--", b"-,", b"- ")
EMPTY_ELEMENT = {2: b"\x01\x01", 3: b"\x01\x00\x01"}  # `,,` / `, ,` in the comma map
# A 0/1 array's bytes with its ones read as zeros, by its step (bytes an element takes);
# grown on demand.
TEMPLATES = {2: b"0," * (1 << 16), 3: b"0, " * (1 << 16)}
ZEROS = bytes(1 << 16)


class _Scratch(threading.local):
    """Reused output buffers of the byte maps (a fresh buffer per array costs page faults),
    one pair per thread (a Dagster server may refresh in several)."""

    def __init__(self) -> None:
        self.buffers = [bytearray(1 << 16), bytearray(1 << 16)]

    def get(self, index: int, size: int) -> bytearray:
        if len(self.buffers[index]) < size:
            self.buffers[index] = bytearray(max(size, 2 * len(self.buffers[index])))
        return self.buffers[index]


_scratch = _Scratch()


def stand_in(n: int, ones: int | None) -> bytes:
    """The JSON string that replaces a lifted array: its length, and its ones for a 0/1 one."""
    return b'"%s%d%s"' % (ESCAPE, n, b"" if ones is None else b":%d" % ones)


def counts_of(text: str) -> tuple[int, int | None] | None:
    """(length, ones or None) of a decoded stand-in string; None when `text` is none."""
    if text[:1] != MARK:
        return None
    length, _, ones = text[1:].partition(":")
    return int(length), int(ones) if ones else None


def raw_counts(raw: bytes) -> tuple[int, int | None] | None:
    """`counts_of` a stand-in as raw JSON (a typed shape's `msgspec.Raw`); None for others."""
    if not raw.startswith(b'"' + ESCAPE):
        return None
    length, _, ones = raw[1 + len(ESCAPE) : -1].partition(b":")
    return int(length), int(ones) if ones else None


# `defined_lift` in C, the same bytes (tests/genledger/fast/test_lift_native.py): of keys'
# arrays, and of every array that is a value; None where the extension was not built
_NATIVE = built("_lift")
NATIVE: Callable[[bytes, tuple[bytes, ...], int, int], bytes | None] | None = (
    None if _NATIVE is None else _NATIVE.lift_keys
)
NATIVE_ANY: Callable[[bytes, int, int, int, int], bytes | None] | None = (
    None if _NATIVE is None else _NATIVE.lift_any
)
MAX_NATIVE_KEYS = 16


@lru_cache(maxsize=64)
def _native_keys(keys: tuple[bytes, ...]) -> bool:
    """Whether the C lift takes `keys`: a few keys of 6 bytes or more, ending alike."""
    ending = keys[0][-5:] if keys else b""
    return 0 < len(keys) <= MAX_NATIVE_KEYS and all(
        len(key) > len(ending) == 5 and key.endswith(ending) for key in keys
    )


def lift(
    content: bytes, keys: tuple[bytes, ...] | None = None, start: int = 0, stop: int = -1
) -> bytes | None:
    """`content` (or its line `content[start:stop]`, not copied) with each long flat integer
    array that is an object's value (or a row of one, when `keys` is None) replaced by its
    stand-in; None when no array was lifted (or the line spells `\\u0001` itself). `keys`: lift
    only the values of these keys (spelled `"key"`, all ending alike, as `_ids"`). Lifted in
    C where it was built (one pass an array, no Python step in it)."""
    if keys is None:
        if NATIVE_ANY is not None:
            end = len(content) if stop < 0 else stop
            return NATIVE_ANY(content, start, end, MIN_SPAN, MAX_BRACKETS)
    elif NATIVE is not None and not start and stop < 0 and _native_keys(keys):
        return NATIVE(content, keys, MIN_SPAN, MAX_BRACKETS)
    return defined_lift(content, keys, start, stop)


def defined_lift(
    content: bytes, keys: tuple[bytes, ...] | None = None, start: int = 0, stop: int = -1
) -> bytes | None:
    """`lift` by the definition: Python over stringzilla's byte scans."""
    stop = len(content) if stop < 0 else stop
    if keys is None:
        pieces = _any_arrays(content, start, stop)
    else:
        pieces = _key_arrays(content[start:stop] if start or stop < len(content) else content, keys)
    if not pieces:
        return None
    if any(sz.find(piece, ESCAPE) >= 0 for piece in pieces[0::2]):
        return None  # the line spells a stand-in's mark itself: it stays as it is
    return b"".join(pieces)


def _any_arrays(content: bytes, first: int, stop: int) -> list[bytes]:
    """The line `content[first:stop]` cut into its own bytes and stand-ins, alternately
    (nothing lifted: [])."""
    find, min_span = content.find, MIN_SPAN
    at = find(b"[", first, stop)
    pieces: list[bytes] = []
    start, looked = first, 0
    while at >= 0 and looked < MAX_BRACKETS:
        looked += 1
        if not _opens_value(content, at, first):
            at = find(b"[", at + 1, stop)
            continue
        end = find(b"]", at, stop)
        if end < 0:
            break
        counts = _counts(content, at, end) if end - at > min_span else None
        if counts is not None:
            pieces += (content[start:at], stand_in(*counts))
            start = end + 1
        elif (inner := find(b"[", at + 1, end)) >= 0:
            at = inner  # rows of a tensor: each row is looked at on its own
            continue
        at = find(b"[", end + 1, stop)
    return [*pieces, content[start:stop]] if pieces else pieces


def _opens_value(content: bytes, at: int, first: int = 0) -> bool:
    """Whether the `[` at `at` follows `:`, `[` or `,` (one space allowed between) within
    the line that starts at `first`."""
    before = at - 1
    if before >= first and content[before] == SPACE:
        before -= 1
    return before >= first and content[before] in (COLON, OPEN, COMMA)


def _key_arrays(content: bytes, keys: tuple[bytes, ...]) -> list[bytes]:
    """`_any_arrays` of the values of `keys` only, found by their common ending (SIMD)."""
    ending = keys[0][-5:]
    at, min_span, wanted = sz.find(content, ending), MIN_SPAN, frozenset(keys)
    pieces: list[bytes] = []
    start = looked = 0
    while at >= 0 and looked < MAX_BRACKETS:
        looked += 1
        key_end = at + len(ending)
        opens = _value_after(content, key_end)
        if opens >= 0 and content[content.rfind(b'"', 0, at) : key_end] in wanted:
            end = content.find(b"]", opens)
            if end < 0:
                break
            counts = _counts(content, opens, end) if end - opens > min_span else None
            if counts is not None:
                pieces += (content[start:opens], stand_in(*counts))
                start = key_end = end + 1
        at = sz.find(content, ending, key_end)
    return [*pieces, content[start:]] if pieces else pieces


VALUE_STARTS = ((b": [", 2), (b":[", 1), (b" : [", 3), (b" :[", 2))  # `[`'s offset after each


def _value_after(content: bytes, key_end: int) -> int:
    """Where the array after a key ending at `key_end` opens (`: [`, one space allowed on
    each side of the colon); -1 when no array follows."""
    after = content[key_end : key_end + 4]
    for spelling, offset in VALUE_STARTS:
        if after.startswith(spelling):
            return key_end + offset
    return -1


def _counts(content: bytes, at: int, end: int) -> tuple[int, int | None] | None:
    """(length, ones for a 0/1 array, else None) of the array `content[at:end + 1]` when it
    is a JSON array of integers orjson accepts, written with `,` or `, ` throughout; else
    None. An integer literal beyond 64 bits counts as one element, as the general path counts
    the float orjson reads it as. (Known limit: one of 309+ digits counts too, while orjson
    refuses the line: it overflows a double. No JSON writer writes one.)"""
    first, size = at + 1, end - at - 1
    if size <= 0 or content[first] not in SIGNED_DIGITS or content[end - 1] not in DIGITS:
        return None  # empty, or an empty first or last element, or a trailing sign
    mask = _mask(content, first, end, size)
    if mask is not None:
        return mask
    comma = content.find(b",", first, end)
    step = 3 if comma >= 0 and content[comma + 1] == SPACE else 2
    commas = sz.translate(content, COMMA_ONE, start=first, end=end, out=_scratch.get(0, size))
    spaces = sz.translate(content, SPACE_ONE, start=first, end=end, out=_scratch.get(1, size))
    comma_map, space_map = sz.Str(commas)[:size], sz.Str(spaces)[:size]
    # `, ` throughout: the spaces are the commas moved on by one (and no other byte is found);
    # `,` throughout: no space (nor other byte) at all.
    if step == 3:
        fits = space_map[0] == "\x00" and sz.equal(space_map[1:], comma_map[: size - 1])
    else:
        fits = sz.equal(space_map, sz.Str(_zeros(size))[:size])
    if not fits or comma_map.find(EMPTY_ELEMENT[step]) >= 0:
        return None
    signed = content.find(b"-", first, end) >= 0
    if signed and _misplaced_sign(content, first, end, size):
        return None
    if _leading_zero(content, first, end, step, signed):
        return None
    return sz.bytesum(comma_map) + 1, None


def _zeros(size: int) -> bytes:
    global ZEROS
    zeros = ZEROS
    if len(zeros) < size:
        zeros = ZEROS = bytes(2 * size)
    return zeros


def _misplaced_sign(content: bytes, first: int, end: int, size: int) -> bool:
    """A minus sign anywhere but before an integer's first digit."""
    classes = sz.translate(content, CLASSES, start=first, end=end, out=_scratch.get(1, size))
    view = sz.Str(classes)[:size]
    return any(view.find(bad) >= 0 for bad in NOT_A_SIGN)


def _leading_zero(content: bytes, first: int, end: int, step: int, signed: bool) -> bool:
    """An integer written with a leading zero (`01`, `-01`), which JSON forbids."""
    if _zero_then_digit(content, first, end):
        return True
    start = b", 0" if step == 3 else b",0"  # where an integer after the first starts
    for prefix in (start, b"-0") if signed else (start,):
        at = sz.find(content, prefix, first, end)
        while at >= 0:
            if _zero_then_digit(content, at + len(prefix) - 1, end):
                return True
            at = sz.find(content, prefix, at + len(prefix), end)
    return False


def _zero_then_digit(content: bytes, at: int, end: int) -> bool:
    """Whether the integer starting at `at` (maybe with its sign) is `0` then a digit."""
    if content[at] == MINUS:
        at += 1
    return content[at] == ZERO and at + 1 < end and content[at + 1] in DIGITS


def _mask(content: bytes, first: int, end: int, size: int) -> tuple[int, int] | None:
    """(length, ones) when the array's elements are all `0` or `1`, written `0,1` or `0, 1`
    throughout (its bytes, ones read as zeros, equal a template); else None."""
    if size < 3 or content[first + 1] != COMMA or content[first] not in (ZERO, ZERO + 1):
        return None
    step = 3 if content[first + 2] == SPACE else 2
    if (size + step - 1) % step:
        return None
    template = TEMPLATES[step]
    if size > len(template):
        template = TEMPLATES[step] = template[:step] * (2 * size // step)
    zeros = sz.translate(content, ONE_AS_ZERO, start=first, end=end, out=_scratch.get(0, size))
    if not sz.equal(sz.Str(zeros)[:size], sz.Str(template)[:size]):
        return None
    n = (size + step - 1) // step
    expected = n * ZERO + (n - 1) * (COMMA + (SPACE if step == 3 else 0))
    return n, sz.bytesum(sz.Str(content)[first:end]) - expected
