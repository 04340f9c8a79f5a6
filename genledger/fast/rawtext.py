"""Whole-read checks that let the typed shapes keep long texts as raw JSON (the text lever).

Decoding a text into a Python string was half the parse, yet the facts only need two things
from it: that it is a valid string (what the decode would have checked: UTF-8, escapes) and
whether it holds a think tag (`</think>`, `<think>`). msgspec's skip checks the escapes; this
module checks the rest once per read (1 MB) instead of once per text, with vectorised scans: a
read that is valid UTF-8 and spells neither `think>` nor a `\\u00XX` escape of an ASCII
character (the only ways to write a think tag: `\\/` can only spell the `/`), makes each of
its lines "plain": its texts are
checked by their first byte alone. Lines of a read that has such a spelling are looked at one
by one; a line that has one decodes its texts exactly, as before. Whether a plain line is
moreover "spelled" (no `\\u` or `\\/` escape: its texts' bytes are orjson's) is said per line
in a read that has such escapes, so the lines without one (most of a corpus written with
ASCII escapes) keep the paths that need it.

UTF-8 is checked by the package's C scan (`genledger.fast.utf8`, AVX2, ~11 GB/s) where it was
built, else with simdjson's SIMD pass (~4 GB/s) once a scan is big enough to load it
(`genledger.fast.vector`), else by Python's decoder; the escape search is stringzilla's SIMD
substring search.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import stringzilla as sz

from genledger.fast import vector
from genledger.fast.utf8 import quick, valid_utf8

ZERO, SEVEN = ord("0"), ord("7")
# A `\\u00` escape of an ASCII character (`\\u0000`-`\\u007f`): the only kind that can spell a
# character of `<think>`. Other escapes (`\\u00e9`, CJK, surrogate pairs, which msgspec's skip
# checks exactly as orjson does) are harmless.
ASCII_ESCAPE = re.compile(rb"\\u00[0-7]")
BOM = b"\xef\xbb\xbf"  # cut from a file's first line by `rows()`


@dataclass(frozen=True, slots=True)
class ReadFlags:
    """What one read's complete lines may hold, conservatively (True: maybe)."""

    utf8: bool  # all valid UTF-8
    risky_escapes: bool = True  # a `\\u00XX` escape of an ASCII character
    think_tags: bool = True  # `think>`
    # With think tags: the lengths a line holding one may have (as `rows()` cuts it), so the
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
    """`inspect` of small reads: UTF-8 by the C check, else by Python's decoder (for a small
    refresh, cheaper than importing simdjson)."""
    return _flags(data, end, quick)


def vectorised_flags(data: bytes, end: int) -> ReadFlags:
    """`inspect` of big scans (`vector.load` first): UTF-8 by simdjson's SIMD pass."""
    return _flags(data, end, valid_utf8)


def _flags(data: bytes, end: int, valid: Callable[[memoryview], bool]) -> ReadFlags:
    if not data.isascii() and not valid(memoryview(data)[:end]):
        return NOTHING_PLAIN
    tags = sz.find(data, THINK_TAG, 0, end) >= 0
    # `\u` first: every risky escape is one, and most reads have none
    any_u = sz.find(data, b"\\u", 0, end) >= 0
    escapes = any_u and _risky_escapes(data, end)
    respelled = any_u or sz.find(data, b"\\/", 0, end) >= 0
    return ReadFlags(True, escapes, tags, _tag_lines(data, end) if tags else None, respelled)


def read_plain(flags: ReadFlags) -> int | None:
    """What `plain_line` says of every line of a read with `flags`, when it says the same of
    each; None when it depends on the line (an escape or a think tag in the read)."""
    if not flags.utf8:
        return 0
    if flags.risky_escapes or flags.respelled or flags.think_tags:
        return None
    return SPELLED


def read_clear(flags: ReadFlags) -> bool:
    """Whether every line of a read with `flags` is valid UTF-8: all the native tier needs of
    a read. Its scan refuses a line that spells `think>`, a `\\u` escape of an ASCII
    character or `\\/` (a line with none of them is then `SPELLED`), so a read with a few
    think tags keeps it for its other lines."""
    return flags.utf8


def plain_line(content: bytes, flags: ReadFlags) -> int:
    """Whether the texts of one line of a read with `flags` may be checked by first byte:
    0 (no), `PLAIN`, or `SPELLED` (plain, and no text has a `\\u` or `\\/` escape)."""
    if not flags.utf8:
        return 0
    if flags.risky_escapes and _risky_escapes(content, len(content)):
        return 0
    plain = PLAIN if flags.respelled and _respelled(content) else SPELLED
    if not flags.think_tags:
        return plain
    lengths = flags.tag_lines
    if lengths is not None and len(content) not in lengths:
        return plain  # no think tag in this line (a read's few tagged lines are known)
    return plain if THINK_TAG not in content else 0


def _respelled(content: bytes) -> bool:
    """A `\\u` or `\\/` escape in a line (or `\\\\u`, an escaped backslash then `u`: said
    respelled too, which only costs the spelled paths): CPython's substring search, cheaper
    for one line than stringzilla's call."""
    return b"\\u" in content or b"\\/" in content


MAX_ESCAPES_LOOKED = 16  # `\\u00` looked at one by one before a regex search takes the rest


def _risky_escapes(data: bytes, end: int) -> bool:
    """A `\\u00XX` escape of an ASCII character in `data[:end]`: SIMD searches for `\\u00`
    (stringzilla, ~0.1 ms a 1 MB read; numpy's masks took ~3x that, CPython's `find` ~6x),
    each found one's next byte looked at; past a few (texts written with ASCII escapes), a
    regex search from there."""
    at, looked = sz.find(data, b"\\u00", 0, end), 0
    while at >= 0:
        looked += 1
        if looked > MAX_ESCAPES_LOOKED:
            return ASCII_ESCAPE.search(data, at, end) is not None
        if at + 4 >= end or ZERO <= data[at + 4] <= SEVEN:
            return True  # cut short (no valid JSON anyway), or an ASCII character's escape
        at = sz.find(data, b"\\u00", at + 4, end)
    return False


# Without `\\u00` escapes (looked for apart), a think tag can only be written with this.
THINK_TAG = b"think>"
MAX_TAG_WALK = 512  # think tags looked at per read before every line searches for itself


def _tag_lines(data: bytes, end: int) -> frozenset[int] | None:
    """The lengths of the lines of `data[:end]` holding `think>`, each also less a `\\r` and a
    BOM (which `rows()` cuts off); None when the tags are too common to walk. Searching a read's
    few tagged lines once costs less than searching every line (~6 % of a scan of texts with a
    few `<think>` blocks, measured)."""
    lengths: set[int] = set()
    at, walked = sz.find(data, THINK_TAG, 0, end), 0
    while at >= 0:
        walked += 1
        if walked > MAX_TAG_WALK:
            return None
        start = data.rfind(b"\n", 0, at) + 1
        stop = data.find(b"\n", at, end)
        n = (end if stop < 0 else stop) - start
        lengths.update((n, n - 1, n - len(BOM), n - len(BOM) - 1))
        at = sz.find(data, THINK_TAG, at + len(THINK_TAG), end)
    return frozenset(lengths)
