"""The lift of keys' arrays in C (genledger/fast/_lift.c) equals its definition,
`genledger.fast.lift.defined_lift` and `_counts`, on generated arrays and lines (signs,
leading zeros, spacing, masks, empty elements, arrays across the scan's 64-byte blocks), on
every line of the real recorded responses and of both text-heavy corpora; a native variant
with a planted bug is caught by the same checks.

The extension is built by the package's install (`pip install -e .`; CI does it), so these
tests FAIL, never skip, when it is missing: a silent fallback to the definition would keep
the counts right but lose the speed the benchmarks report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from genledger.fast import lift
from genledger.fast.lines import LIFTED_RESPONSE_KEYS
from genledger.synth.corpus import write_corpus

from .builds import current_build
from .planted import planted as compiled
from .realfiles import FILES, SHARED

SOURCE = Path(lift.__file__).with_name("_lift.c")
KEYS = LIFTED_RESPONSE_KEYS
LiftKeys = Callable[[bytes, tuple[bytes, ...], int, int], bytes | None]

# The bytes of integer arrays and their near misses: long runs of them cross the 64-byte
# blocks at every offset.
ARRAY_PIECES = st.sampled_from(
    [b"0", b"1", b"7", b"12", b"305", b"-", b"-4", b"00", b"01", b",", b", ", b",  ", b" ",
     b",,", b", ,", b"-0", b"0,", b"1, ", b"9" * 20, b"\t", b".", b"e", b'"', b"]", b"["]
)  # fmt: skip
ARRAYS = st.lists(ARRAY_PIECES, max_size=200).map(b"".join)
# Arrays as writers write them: integers (a few signed), 0/1 masks, `,` or `, `.
WRITTEN = st.tuples(
    st.one_of(
        st.lists(st.integers(-5, 200_000), min_size=1, max_size=300),
        st.lists(st.integers(0, 1), min_size=1, max_size=300),
    ),
    st.sampled_from([",", ", "]),
).map(lambda args: json.dumps(args[0], separators=(args[1], ": ")).encode())
KEY_PIECES = st.sampled_from(
    [b'"output_ids"', b'"input_ids"', b'"token_ids"', b'"prompt_token_ids"', b'"x_ids"',
     b'_ids"', b"ids", b'"', b": ", b":", b" : ", b" :", b"{", b"}", b", ", b"\\u0001", b"\\",
     b'"text": "a: [1, 2]"', b"null", b"\xe6\x95\xb0"]
)  # fmt: skip
LINES = st.lists(st.one_of(KEY_PIECES, ARRAYS.map(lambda a: b"[" + a + b"]")), max_size=12).map(
    b"".join
)


def _native() -> LiftKeys:
    from genledger.fast import _lift  # an ImportError here fails the test, never skips

    return _lift.lift_keys


def _differs(native: LiftKeys, line: bytes, min_span: int) -> bool:
    """Whether `native` lifts `line` otherwise than the definition does."""
    saved, lift.MIN_SPAN = lift.MIN_SPAN, min_span
    try:
        expected = lift.defined_lift(line, KEYS)
    finally:
        lift.MIN_SPAN = saved
    return native(line, KEYS, min_span, lift.MAX_BRACKETS) != expected


def _counts_differ(counts: Callable[[bytes], Any], span: bytes) -> bool:
    return counts(span) != lift._counts(span, 0, len(span) - 1)


def test_the_extension_is_built_from_the_current_source() -> None:
    current_build("_lift")
    assert lift.NATIVE is not None


@settings(max_examples=3000, deadline=None)
@given(ARRAYS)
def test_any_array_bytes_are_counted_as_the_definition_counts_them(inner: bytes) -> None:
    from genledger.fast import _lift

    assert not _counts_differ(_lift.counts, b"[" + inner + b"]")


@settings(max_examples=1000, deadline=None)
@given(WRITTEN)
def test_arrays_as_writers_write_them_are_counted_alike(span: bytes) -> None:
    from genledger.fast import _lift

    assert not _counts_differ(_lift.counts, span)


@settings(max_examples=2000, deadline=None)
@given(LINES, st.sampled_from([0, 3, lift.MIN_SPAN]))
def test_any_line_is_lifted_as_the_definition_lifts_it(line: bytes, min_span: int) -> None:
    assert not _differs(_native(), line, min_span)


def test_the_edges_are_lifted_alike() -> None:
    native = _native()
    long_ids = json.dumps(list(range(100))).encode()
    lines = [
        b"", b"_ids", b'_ids"', b'"output_ids": [', b'"output_ids": [1, 2]',
        b'{"output_ids": ' + long_ids + b"}", b'{"output_ids":' + long_ids + b"}",
        b'{"output_ids" : ' + long_ids + b', "t": "\\u0001"}',
        b'{"input_ids": ' + long_ids + b', "output_ids": ' + long_ids + b"}",
        b'{"x": "a_ids": ' + long_ids + b"}",  # a key not wanted
        b'output_ids": ' + long_ids,  # no quote before the key
        b'{"output_ids": [' + b"0, 1, " * 40 + b"1]}",  # a mask: its ones
        b'{"output_ids": [' + b"-1, " * 40 + b"01]}",  # a leading zero
        b'{"output_ids": [[1, 2], ' + long_ids + b"]}",  # a tensor: not a key's flat array
    ]  # fmt: skip
    for line in lines:
        for min_span in (0, lift.MIN_SPAN):
            assert not _differs(native, line, min_span), line
    assert native(lines[5], KEYS, 128, 64) == b'{"output_ids": "\\u0001100"}'
    with pytest.raises(ValueError):
        native(b"{}", (b'"output_ids"', b'"loss_mask"'), 128, 64)  # keys that end otherwise
    with pytest.raises(TypeError):
        native("a str is no buffer", KEYS, 128, 64)  # type: ignore[arg-type]


def test_lift_takes_the_native_path_only_for_keys_it_can_take() -> None:
    assert lift._native_keys(KEYS)
    assert not lift._native_keys((b'"input_ids"', b'"loss_mask"'))
    assert not lift._native_keys((b'_ids"',))  # no byte before the ending


def _any_differs(line: bytes, min_span: int, first: int = 0, stop: int = -1) -> bool:
    """Whether the C lift of every array that is a value differs from the definition on the
    line `line[first:stop]`."""
    saved, lift.MIN_SPAN = lift.MIN_SPAN, min_span
    try:
        expected = lift.defined_lift(line, None, first, stop)
    finally:
        lift.MIN_SPAN = saved
    end = len(line) if stop < 0 else stop
    assert lift.NATIVE_ANY is not None, "genledger.fast._lift is not built"
    return lift.NATIVE_ANY(line, first, end, min_span, lift.MAX_BRACKETS) != expected


ROWS = st.lists(
    st.one_of(
        KEY_PIECES,
        ARRAYS.map(lambda a: b"[" + a + b"]"),
        st.sampled_from([b"[", b"[[", b"]]", b"], [", b", [", b":[", b",["]),
    ),
    max_size=14,
).map(b"".join)


@settings(max_examples=3000, deadline=None)
@given(ROWS, st.sampled_from([0, 3, lift.MIN_SPAN]), st.integers(0, 8), st.integers(0, 8))
def test_any_line_of_rows_is_lifted_as_the_definition_lifts_it(
    line: bytes, min_span: int, cut_first: int, cut_last: int
) -> None:
    assert not _any_differs(line, min_span)
    first = min(cut_first, len(line))
    stop = max(first, len(line) - cut_last)
    assert not _any_differs(line, min_span, first, stop)  # a line inside its read


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_real_line_is_lifted_as_the_definition_lifts_it() -> None:
    native = _native()
    lines = [line for path in FILES for line in path.read_bytes().splitlines()]
    assert len(lines) > 10_000
    assert [line for line in lines if _differs(native, line, 0)] == []
    assert [line for line in lines if _differs(native, line, lift.MIN_SPAN)] == []
    assert [line for line in lines if _any_differs(line, 0)] == []
    assert [line for line in lines if _any_differs(line, lift.MIN_SPAN)] == []


@pytest.mark.parametrize("shape", ["reference", "second", "variants"])
def test_every_line_of_the_text_heavy_corpora_is_lifted_alike(shape: str, tmp_path: Path) -> None:
    write_corpus(tmp_path, 4, seed=5, shape=shape)
    native = _native()
    lines = [line for path in tmp_path.glob("*/*.jsonl") for line in path.read_bytes().split(b"\n")]
    lifted = [line for line in lines if native(line, KEYS, lift.MIN_SPAN, 64) is not None]
    assert len(lifted) > 100 or shape == "variants"  # the corpora's id arrays are lifted
    assert [line for line in lines if _differs(native, line, lift.MIN_SPAN)] == []
    assert [line for line in lines if _any_differs(line, lift.MIN_SPAN)] == []


SPANS = st.one_of(ARRAYS.map(lambda inner: b"[" + inner + b"]"), WRITTEN)


@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        # a leading zero after a sign goes unseen
        ("uint64_t starts = k.comma | k.space | k.minus;", "uint64_t starts = k.comma | k.space;"),
        # the two bytes of one block are not carried into the next
        ("b = carried(k);", "b = (Before){0, 0, 0, 0, 0};"),
    ],
)
def test_a_native_lift_with_a_planted_bug_is_caught(right: str, wrong: str, tmp_path: Path) -> None:
    planted = compiled(SOURCE, tmp_path, (right, wrong))
    assert not _counts_differ(planted.counts, b"[1, 2, 3]")  # it works but for its bug
    found = find(
        SPANS,
        lambda span: _counts_differ(planted.counts, span),
        settings=settings(max_examples=5000, database=None),
    )
    assert found


def test_a_native_lift_of_rows_that_skips_the_value_test_is_caught(tmp_path: Path) -> None:
    # planted bug: a `[` lifted whatever comes before it (an array inside a text)
    right = "if (!opens_value(data, at, first)) {"
    planted = compiled(SOURCE, tmp_path, (right, "if (0) {"))

    def differs(line: bytes) -> bool:
        expected = lift.defined_lift(line, None)
        return planted.lift_any(line, 0, len(line), lift.MIN_SPAN, 64) != expected

    long_ids = json.dumps(list(range(100))).encode()
    assert not differs(b'{"input_ids": ' + long_ids + b"}")  # it works but for its bug
    assert differs(b'{"t": "a' + long_ids + b'"}')
