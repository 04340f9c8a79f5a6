"""Arrays counted from their bytes (genledger/fast/lift.py) are exactly the arrays orjson reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from genledger.config import Config, Switches
from genledger.fast import lift
from genledger.refresh.collect import refresh
from genledger.synth.corpus import write_corpus

from ..hard_lines import RESPONSE_LINES, TOKENIZED_LINES
from .test_lines import lifting_every_array

# Bytes an integer array is made of, and a few that make it something else.
ARRAY_BYTES = st.sampled_from(list(b"0123456789, -") * 3 + list(b'[]\t.e"n'))


def decoded(span: bytes) -> Any:
    try:
        return orjson.loads(span)
    except orjson.JSONDecodeError:
        return None


def _integer_literal(value: Any) -> bool:
    """An element orjson read from an integer literal: an int, or a float for a literal beyond
    64 bits (the general path counts those elements alike)."""
    if type(value) is float:
        return value.is_integer() and (value <= -(2**63) or value >= 2**64)
    return type(value) is int


@settings(max_examples=2000, deadline=None)
@given(st.lists(ARRAY_BYTES, max_size=40).map(bytes))
@example(b"20000000000000000000, -9223372036854775809")  # orjson reads both as floats
def test_a_counted_array_is_a_flat_integer_array_of_that_length(inner: bytes) -> None:
    span = b"[" + inner + b"]"
    counts = lift._counts(span, 0, len(span) - 1)
    if counts is None:
        return
    value = decoded(span)
    assert isinstance(value, list) and all(map(_integer_literal, value)), span
    n, ones = counts
    assert n == len(value), span
    if ones is not None:
        assert set(value) <= {0, 1} and ones == sum(value), span


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.integers(-(2**70), 2**70), min_size=1, max_size=30),
    st.sampled_from([(",", ": "), (", ", ": "), (",", ":")]),
)
def test_integer_arrays_as_writers_write_them_are_counted(values: list[int], seps: Any) -> None:
    span = json.dumps(values, separators=seps).encode()
    assert lift._counts(span, 0, len(span) - 1) == (len(values), None) or set(values) <= {0, 1}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0, 1]), min_size=2, max_size=60), st.booleans())
def test_masks_as_writers_write_them_give_their_ones(values: list[int], spaced: bool) -> None:
    span = json.dumps(values, separators=(", " if spaced else ",", ": ")).encode()
    assert lift._counts(span, 0, len(span) - 1) == (len(values), sum(values))


JSON = st.recursive(
    st.one_of(
        st.integers(-300, 300),
        st.sampled_from(["", "a: [1, 2]", "[0, 1]", '"x": [1]', "\x01", "数据", "\\u0001"]),
        st.lists(st.integers(0, 200_000), max_size=12),
        st.lists(st.sampled_from([0, 1]), max_size=12),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["input_ids", "loss_mask", "output_ids", "token_ids", "x", "t"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=10,
)


def same_but_stand_ins(original: Any, small: Any) -> None:
    """`small` is `original` with some lists replaced by stand-ins stating their counts."""
    if isinstance(small, str) and small.startswith(lift.MARK):
        counts = lift.counts_of(small)
        assert isinstance(original, list) and counts is not None
        assert all(type(v) is int for v in original)
        assert counts[0] == len(original)
        if counts[1] is not None:
            assert set(original) <= {0, 1} and counts[1] == sum(original)
    elif isinstance(original, dict):
        assert isinstance(small, dict) and small.keys() == original.keys()
        for key, value in original.items():
            same_but_stand_ins(value, small[key])
    elif isinstance(original, list):
        assert isinstance(small, list) and len(small) == len(original)
        for value, stood in zip(original, small, strict=True):
            same_but_stand_ins(value, stood)
    else:
        assert small == original


@settings(max_examples=500, deadline=None)
@given(JSON, st.sampled_from([(", ", ": "), (",", ":"), (" , ", " : ")]), st.booleans())
def test_a_lifted_line_decodes_to_the_record_with_stand_ins_for_arrays(
    value: Any, separators: Any, keys: bool
) -> None:
    line = json.dumps(value, separators=separators, ensure_ascii=False).encode()
    with lifting_every_array():
        small = lift.lift(line, (b'"output_ids"', b'"token_ids"') if keys else None)
    if small is None:
        return
    assert lift.ESCAPE not in line  # a line spelling the mark is never lifted
    lifted = decoded(small)
    if lifted is not None:  # else (an array inside a text) the slower paths decide
        same_but_stand_ins(orjson.loads(line), lifted)


PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b",", b", ", b":", b": ", b'"', b'"k"', b'"input_ids"', b"1", b"0",
     b"12", b"-3", b"01", b"1.5", b"null", b"\\", b"\\u0001", b" ", b"[1, 2]", b"[0,1]", b"x"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=16).map(b"".join))
def test_lifting_never_makes_a_line_valid_or_changes_what_it_holds(line: bytes) -> None:
    with lifting_every_array():
        small = lift.lift(line)
    if small is None:
        return
    lifted = decoded(small)
    if lifted is not None:
        same_but_stand_ins(orjson.loads(line), lifted)  # raises if the line was not JSON


@pytest.mark.parametrize(
    "line",
    [
        b'{"t": "a: [1, 2, 3]"}',  # an array inside a text
        b'{"t": "x", "u": "[1, 2]"}',
        b'["a, [1, 2]"]',
        b'{"a: [1, 2]": 1}',
    ],
)
def test_an_array_inside_a_string_never_lifts_into_a_valid_line(line: bytes) -> None:
    with lifting_every_array():
        small = lift.lift(line)
    if small is not None:
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(small)


def test_a_line_spelling_the_mark_is_not_lifted() -> None:
    with lifting_every_array():
        assert lift.lift(b'{"a": [1, 2], "t": "\\u0001"}') is None
        assert lift.lift(b'{"a": [1, 2], "t": "\\u00012"}') is None
        assert lift.lift(b'{"a": [1, 2], "t": "x"}') == b'{"a": "\\u00012", "t": "x"}'


def test_short_arrays_stay_in_the_line_by_default() -> None:
    assert lift.lift(b'{"input_ids": [1, 2, 3]}') is None
    long = json.dumps({"input_ids": list(range(100))}).encode()
    assert lift.lift(long) == b'{"input_ids": "\\u0001100"}'


def test_masks_longer_than_the_templates_are_counted() -> None:
    values = [0, 1] * 100_000
    span = json.dumps(values).encode()
    assert lift._counts(span, 0, len(span) - 1) == (200_000, 100_000)


def test_the_lift_switch_is_read_from_the_environment() -> None:
    assert Switches.from_env({"GENLEDGER_LIFT": "0"}).lift is False
    assert Switches.from_env({}).lift is True


@pytest.mark.parametrize("shape", ["reference", "variants"])
def test_a_refresh_counts_the_same_with_and_without_the_lift(shape: str, tmp_path: Path) -> None:
    # Whole files through the refresh (reads, line spans, every tier, the books): lifting
    # long arrays changes no number of either corpus shape, hard lines appended.
    root = tmp_path / "data"
    write_corpus(root, 2, seed=3, shape=shape)
    tokenized = next(root.glob("*/tokenized_data*.jsonl"))
    responses = next(root.glob("*/raw_responses*.jsonl"))
    with tokenized.open("ab") as out:
        out.write(b"\n".join(TOKENIZED_LINES) + b"\n")
    with responses.open("ab") as out:
        out.write(b"\n".join(RESPONSE_LINES) + b"\n")

    def stats(switches: Switches, where: str) -> Any:
        config = Config(
            data_root=root,
            stats_path=tmp_path / where / "s.json",
            state_dir=tmp_path / where / "st",
            switches=switches,
        )
        found = refresh(config, full=True).stats
        return {key: value for key, value in found.items() if key not in ("generated_at",)}

    assert stats(Switches(lift=True, workers=1), "on") == stats(
        Switches(lift=False, workers=1), "off"
    )


def test_threads_lifting_at_once_count_their_own_arrays() -> None:
    # The byte maps' buffers are per thread: a Dagster server may refresh in several.
    import concurrent.futures

    spans = [json.dumps([i % 2] * (50 + i) + list(range(i, i + 200))).encode() for i in range(8)]
    expected = [lift._counts(span, 0, len(span) - 1) for span in spans]

    def count_all(_: int) -> list[Any]:
        return [lift._counts(span, 0, len(span) - 1) for span in spans * 50]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for found in pool.map(count_all, range(8)):
            assert found == expected * 50
