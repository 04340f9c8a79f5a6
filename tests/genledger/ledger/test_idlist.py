"""The compact id list holds exactly the (line, id) pairs given, through every operation."""

from __future__ import annotations

import base64
from array import array

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
