"""Whole-read checks that let the typed shapes keep long texts as raw JSON (the text lever).

Decoding a text into a Python string was half the parse, yet the facts only need two things
from it: that it is a valid string (what the decode would have checked: UTF-8, escapes) and
whether it holds `</think>`. msgspec's skip checks the escapes; this module checks the rest
once per read (1 MB) instead of once per text, with vectorised scans: a read that is valid
UTF-8 and spells neither `</` nor `<\\/`, nor a `\\u00XX` escape of an ASCII character (the
only ways to write `</think>` otherwise), makes each of its lines "plain": its texts are
checked by their first byte alone. Lines of a read that has such a spelling are looked at one
by one; a line that has one decodes its texts exactly, as before.

UTF-8 is checked with simdjson's SIMD pass (`genledger.fast.utf8`, ~4 GB/s); the escape
search is vectorised with numpy (`genledger.fast.vector`, loaded only for big scans), and
plain `bytes` methods stand in for it without numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from genledger.fast import vector
from genledger.fast.utf8 import by_decode, valid_utf8

BACKSLASH, LETTER_U, ZERO, SEVEN = (ord(c) for c in "\\u07")
# A `\\u00` escape of an ASCII character (`\\u0000`-`\\u007f`): the only kind that can spell a
# character of `</think>`. Other escapes (`\\u00e9`, CJK, surrogate pairs, which msgspec's skip
# checks exactly as orjson does) are harmless.
ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")
BOM = b"\xef\xbb\xbf"  # cut from a file's first line by `rows()`


@dataclass(frozen=True, slots=True)
class ReadFlags:
    """What one read's complete lines may hold, conservatively (True: maybe)."""

    utf8: bool  # all valid UTF-8
    risky_escapes: bool = True  # a `\\u00XX` escape of an ASCII character
    close_tags: bool = True  # `</` or `<\\/`
    # With close tags: the lengths a line holding one may have (as `rows()` cuts it), so the
    # other lines skip their own search; None: every line searches.
    tag_lines: frozenset[int] | None = None
    # a `\u` or `\/` escape: without one, every text is written as orjson writes it (the
    # answer keys hash its bytes as they are, genledger.parse.answer)
    respelled: bool = True


NOTHING_PLAIN = ReadFlags(utf8=False)
# What `plain_line` says of a line: its texts need decoding (0), may be checked by their first
# byte (PLAIN), and moreover are spelled as orjson spells them (SPELLED, also true).
PLAIN, SPELLED = 1, 3


def inspect(data: bytes, end: int) -> ReadFlags:
    """The flags of `data[:end]`, a read's complete lines."""
    return vectorised_flags(data, end) if vector.loaded() else bytes_flags(data, end)


def bytes_flags(data: bytes, end: int) -> ReadFlags:
    """`inspect` without numpy (small reads): UTF-8 by Python's decoder (for a small refresh,
    cheaper than importing simdjson) and the escape search by `bytes` methods."""
    return _flags(data, end, None)


def vectorised_flags(data: bytes, end: int) -> ReadFlags:
    """`inspect` with numpy, which must be loaded (`vector.load`): UTF-8 by simdjson's SIMD
    pass and the escape search by numpy masks."""
    return _flags(data, end, vector.numpy())


def _flags(data: bytes, end: int, np: Any) -> ReadFlags:
    valid = by_decode if np is None else valid_utf8
    if not data.isascii() and not valid(memoryview(data)[:end]):
        return NOTHING_PLAIN
    # The memchr walk before the numpy scan: the other order measured ~4 % slower a read.
    tags = _close_tags_in(data, end)
    if np is None:
        escapes = _risky_escapes(data, end)
        respelled = True  # a small read: each text is looked at instead (no search here)
    else:
        raw = np.frombuffer(data, np.uint8, count=end)
        any_u = _backslash_u_in(np, raw)
        escapes = any_u and _escapes_in(np, raw)
        respelled = any_u or _escaped_slash_in(np, data, raw, end)
    return ReadFlags(True, escapes, tags, _tag_lines(data, end) if tags else None, respelled)


def plain_line(content: bytes, flags: ReadFlags) -> int:
    """Whether the texts of one line of a read with `flags` may be checked by first byte:
    0 (no), `PLAIN`, or `SPELLED` (plain, and no text has a `\\u` or `\\/` escape)."""
    if not flags.utf8:
        return 0
    if flags.risky_escapes and _risky_escapes(content, len(content)):
        return 0
    plain = PLAIN if flags.respelled else SPELLED
    if not flags.close_tags:
        return plain
    lengths = flags.tag_lines
    if lengths is not None and len(content) not in lengths:
        return plain  # no close tag in this line (a read's few tagged lines are known)
    # Without \u00 escapes, `</think>` can only be written with a literal `think>`.
    return plain if b"think>" not in content else 0


def _risky_escapes(data: bytes, end: int) -> bool:
    """A `\\u00XX` escape of an ASCII character in `data[:end]` (a memchr-like search first)."""
    return data.find(b"\\u00", 0, end) >= 0 and ASCII_ESCAPE.search(data, 0, end) is not None


BACKSLASH_U = 0x755C  # the bytes `\\u` read as one little-endian uint16


MAX_SLASH_WALK = 256  # `/` looked at per read before numpy searches for `\\/` instead
BACKSLASH_SLASH = 0x2F5C  # the bytes `\\/` read as one little-endian uint16


def _escaped_slash_in(np: Any, data: bytes, raw: Any, end: int) -> bool:
    """Whether `\\/` occurs: `/` is rare in most texts and memchr finds it at memory speed,
    so a few are looked at one by one; many, and the bytes are searched as uint16 pairs."""
    at, walked = data.find(b"/", 0, end), 0
    while at >= 0 and walked < MAX_SLASH_WALK:
        if at and data[at - 1] == BACKSLASH:
            return True
        at, walked = data.find(b"/", at + 1, end), walked + 1
    return at >= 0 and _pair_in(np, raw, BACKSLASH_SLASH)


def _escapes_in(np: Any, raw: Any) -> bool:
    """A risky `\\u00XX` escape, once `\\u` is known to occur."""
    # A backslash before `u` (an escaped backslash before a literal u counts too: that only
    # makes the answer more careful). Whole-array masks first: positions only when one is found.
    escapes, letters = _masks(np, raw.size - 1)
    np.equal(raw[:-1], BACKSLASH, out=escapes)
    np.equal(raw[1:], LETTER_U, out=letters)
    np.logical_and(escapes, letters, out=escapes)
    if not escapes.any():
        return False
    where = np.flatnonzero(escapes)
    if where[-1] + 4 >= raw.size:
        return True  # cut short: not valid JSON anyway
    ascii_range = (raw[where + 2] == ZERO) & (raw[where + 3] == ZERO)
    fifth = raw[where + 4]
    return bool((ascii_range & (fifth >= ZERO) & (fifth <= SEVEN)).any())


def _backslash_u_in(np: Any, raw: Any) -> bool:
    """Whether `\\u` occurs: the bytes read as uint16 pairs from an even and from an odd
    offset (half the comparisons of a byte-wise search, ~2.5x faster per read)."""
    return _pair_in(np, raw, BACKSLASH_U)


def _pair_in(np: Any, raw: Any, pair: int) -> bool:
    """Whether two bytes (`pair`, little-endian) occur in a row somewhere in `raw`."""
    size = raw.size
    if size < 2:
        return False
    even, odd = size // 2, (size - 1) // 2
    found, spare = _masks(np, even)
    np.equal(raw[: 2 * even].view("<u2"), pair, out=found[:even])
    if found[:even].any():
        return True
    np.equal(raw[1 : 1 + 2 * odd].view("<u2"), pair, out=spare[:odd])
    return bool(spare[:odd].any())


_scratch: list[Any] = []


def _masks(np: Any, size: int) -> tuple[Any, Any]:
    """Two reused boolean arrays of `size`: fresh 1 MB temporaries per read cost 10x the
    comparisons themselves here, in page faults (measured: 1.3 ms against 0.13 ms a read)."""
    if not _scratch or _scratch[0].size < size:
        _scratch[:] = [np.empty(max(size, 1 << 21), bool), np.empty(max(size, 1 << 21), bool)]
    return _scratch[0][:size], _scratch[1][:size]


def _close_tags_in(data: bytes, end: int) -> bool:
    # `<` is rare in most texts and memchr finds it at memory speed: walk a few occurrences,
    # then search for the pairs themselves (~1 GB/s).
    at, walked = data.find(b"<", 0, end), 0
    while at >= 0 and walked < 256:
        if data[at + 1 : at + 2] == b"/" or data[at + 1 : at + 3] == b"\\/":
            return True
        at, walked = data.find(b"<", at + 1, end), walked + 1
    return at >= 0 and (data.find(b"</", at, end) >= 0 or data.find(b"<\\/", at, end) >= 0)


MAX_TAG_WALK = 512  # `<` looked at per read before every line searches for itself instead


def _tag_lines(data: bytes, end: int) -> frozenset[int] | None:
    """The lengths of the lines of `data[:end]` holding `</` or `<\\/`, each also less a
    `\\r` and a BOM (which `rows()` cuts off); None when `<` is too common to walk.
    Searching a read's few tagged lines once costs less than searching every line
    (~6 % of a scan of texts with a few `<think>` blocks, measured)."""
    lengths: set[int] = set()
    at, walked = data.find(b"<", 0, end), 0
    while at >= 0:
        walked += 1
        if walked > MAX_TAG_WALK:
            return None
        if data[at + 1 : at + 2] == b"/" or data[at + 1 : at + 3] == b"\\/":
            start = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at, end)
            n = (end if stop < 0 else stop) - start
            lengths.update((n, n - 1, n - len(BOM), n - len(BOM) - 1))
        at = data.find(b"<", at + 1, end)
    return frozenset(lengths)
