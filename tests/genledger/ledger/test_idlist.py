"""The compact id list holds exactly the (line, id) pairs given, through every operation."""

from __future__ import annotations

import base64
from array import array
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from genledger.ledger.hashlist import HashList
from genledger.ledger.idlist import IdList

PAIRS = st.lists(st.tuples(st.integers(1, 2**40), st.text(max_size=12)), max_size=20)


@given(PAIRS, PAIRS, st.integers(-5, 10**6))
def test_pairs_survive_add_shift_and_the_state_file(
    a: list[tuple[int, str]], b: list[tuple[int, str]], shift: int
) -> None:
    ids = IdList.of(a) + IdList.of(b)
    assert list(ids) == a + b and len(ids) == len(a) + len(b)
    assert list(ids.shifted(shift)) == [(n + shift, r) for n, r in a + b]
    again = IdList.from_dict(orjson.loads(orjson.dumps(ids.to_dict())))
    assert again == ids and list(again) == a + b


SHIFTED = st.lists(st.tuples(PAIRS, st.integers(0, 10**6)), max_size=6)


@given(SHIFTED)
def test_a_join_of_parts_moved_on_is_their_sum_moved_on(parts: list[tuple[list[Any], int]]) -> None:
    lists, shifts = [IdList.of(p) for p, _ in parts], [s for _, s in parts]
    given_ = list(lists)
    joined = IdList.joined(given_, shifts)
    assert list(joined) == [(n + s, r) for p, s in parts for n, r in p]
    assert joined == sum((x.shifted(s) for x, s in zip(lists, shifts, strict=True)), IdList())
    assert given_ == []  # emptied: each part can be freed once copied


@given(SHIFTED)
def test_answer_keys_join_as_the_ids_do(parts: list[tuple[list[Any], int]]) -> None:
    pairs = [([(n, len(r) - 2**40) for n, r in p], s) for p, s in parts]
    lists = [HashList() for _ in pairs]
    for keys, (found, _) in zip(lists, pairs, strict=True):
        for line, key in found:
            keys.append(line, key)
    joined = HashList.joined(list(lists), [s for _, s in pairs])
    assert list(joined) == [(n + s, k) for p, s in pairs for n, k in p]


def test_adding_an_empty_list_copies_nothing() -> None:
    ids = IdList.of([(1, "a"), (2, "b")])
    assert ids + IdList() is ids and IdList() + ids is ids


def test_unicode_and_empty_ids_keep_their_boundaries() -> None:
    pairs = [(1, ""), (2, "数据 ü"), (3, "a\x00b"), (4, "🙂"), (5, "")]
    assert list(IdList.of(pairs)) == pairs


@pytest.mark.parametrize(
    "form",
    [
        {"text": "ab", "lengths": "AgAAAAAAAAA=", "lines": ""},  # one length, no line
        {"text": "ab", "lengths": "AQAAAAAAAAA=", "lines": "AQAAAAAAAAA="},  # short of the text
        {"text": "ab", "lengths": "not base64!", "lines": "AQAAAAAAAAA="},
        {"text": "ab"},
    ],
)
def test_a_damaged_form_is_refused(form: dict[str, str]) -> None:
    with pytest.raises((ValueError, KeyError)):
        IdList.from_dict(form)


def test_lengths_that_add_up_but_run_backwards_are_refused() -> None:
    form = IdList.of([(1, "ab"), (2, "")]).to_dict()
    form["lengths"] = base64.b64encode(array("q", [4, -2]).tobytes()).decode()
    with pytest.raises(ValueError):
        IdList.from_dict(form)


@given(
    st.lists(
        st.tuples(
            st.integers(1, 10**6), st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
        ),
        max_size=20,
    )
)
def test_ids_added_at_once_equal_ids_appended_one_by_one(pairs: list[tuple[int, str]]) -> None:
    one_by_one, at_once = IdList.of(pairs), IdList()
    at_once.add_many([line for line, _ in pairs], [rid for _, rid in pairs])
    assert at_once == one_by_one
    assert (at_once.data, at_once.lengths) == (one_by_one.data, one_by_one.lengths)
