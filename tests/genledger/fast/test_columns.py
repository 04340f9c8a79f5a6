"""The books' columns out of row tuples (`genledger.fast.columns`): the C pass
(`_columns.c`) makes exactly what the Python definition `taken` makes, for any values,
clean or not; a value that does not fit its kind makes the chunk not clean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast import columns
from genledger.fast.columns import code_of, taken, taker
from genledger.ledger.arraybooks import columns_used

from .builds import FAST, current_build
from .planted import planted


class Text(str):
    """A str subclass: no exact text, so not clean in a coded column."""


VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**30, 0, 1]),
    st.floats(allow_nan=False),
    st.sampled_from(["stop", "length", "", "é中😀", "gpt-4o", Text("stop"), b"x"]),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
CODES = st.lists(st.sampled_from(b"ibco"), min_size=1, max_size=5).map(bytes)


def _rows(width: int) -> st.SearchStrategy[list[Any]]:
    row = st.lists(VALUE, min_size=width, max_size=width).map(tuple)
    return st.lists(row | st.sampled_from([(), (1,), [1, 2, 3, 4, 5]]), max_size=12)


@settings(max_examples=600, deadline=None)
@given(CODES.flatmap(lambda codes: st.tuples(st.just(codes), _rows(len(codes) + 1))))
def test_the_c_pass_takes_any_rows_as_the_definition(drawn: tuple[bytes, list[Any]]) -> None:
    codes, rows = drawn
    native = current_build("_columns")
    places = tuple(range(1, len(codes) + 1))
    assert native.columns(rows, places, codes) == taken(rows, places, codes)


def test_values_that_do_not_fit_their_kind_are_not_clean() -> None:
    for code, value in [(b"i", 1.5), (b"i", 2**63), (b"i", "7"), (b"c", Text("a")), (b"c", [1])]:
        rows = [(0, 5), (0, value)] if code == b"i" else [(0, "a"), (0, value)]
        assert taken(rows, (1,), code) is None
        assert current_build("_columns").columns(rows, (1,), code) is None
    assert taken([(0, True), (0, 2**63 - 1)], (1,), b"i") is not None  # a bool is an int


def test_texts_are_coded_in_first_seen_order_and_flags_are_true_itself() -> None:
    rows = [(0, "b", 1), (0, None, True), (0, "a", 0), (0, "b", True)]
    found = current_build("_columns").columns(rows, (1, 2), b"cb")
    assert found is not None
    (codes, present, distinct), (flags, _, _) = found
    assert distinct == ["b", None, "a"]
    assert list(memoryview(codes).cast("q")) == [0, 1, 2, 0]
    assert list(present) == [1, 0, 1, 1]
    assert list(flags) == [0, 1, 0, 1]  # 1 is no flag's True


def test_the_responses_books_read_texts_coded_and_ids_as_a_list() -> None:
    used = {n: code_of("responses", n, how == "read") for n, how in columns_used("responses")}
    assert used["record_id"] == b"o"  # only the id lists read it
    assert used["model"] == used["finish_reason"] == b"c"
    assert used["completion_tokens"] == b"i" and used["failed_request"] == b"b"


def test_without_the_build_the_definition_takes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columns, "_C", None)
    taker.cache_clear()
    try:
        used = (("line", b"i"), ("model", b"c"))
        assert taker("responses", used)([(0,) * 60]) is None  # a zero in a text: not clean
        assert taker("responses", used)([(0, 1) + ("m",) * 58]) is not None
    finally:
        taker.cache_clear()


@pytest.mark.parametrize(
    "bug",
    [
        ("return m->last_code;", "return m->last_code + 1;"),  # a repeated object miscoded
        (
            "        *present = v != Py_None;\n        return 1;\n    }\n    default:",
            "        *present = 1;\n        return 1;\n    }\n    default:",
        ),  # a null text present
        ("if (!PyLong_CheckExact(v) && !PyBool_Check(v))", "if (0)"),  # a float taken
    ],
)
def test_a_planted_bug_is_caught(tmp_path: Path, bug: tuple[str, str]) -> None:
    wrong = planted(FAST / "_columns.c", tmp_path, bug)
    rows = [(0, "a", 1, True), (0, "a", 2.5, True), (0, None, None, False)]
    for codes in (b"cib", b"ci", b"c"):
        places = tuple(range(1, len(codes) + 1))
        try:
            made = wrong.columns(rows, places, codes)
        except (SystemError, TypeError):
            return  # caught as an error
        if made != taken(rows, places, codes):
            return
    raise AssertionError(f"the bug {bug} was not caught")
