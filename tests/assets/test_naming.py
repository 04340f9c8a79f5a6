"""Dataset names of any characters become valid, stable, distinct asset-key prefixes."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from assets.naming import dataset_key, dataset_keys

VALID = re.compile(r"^[A-Za-z0-9_]+$")


def test_spaces_dots_and_dashes_become_underscores() -> None:
    assert dataset_key("B2 open-code.v1") == "B2_open_code_v1"


def test_a_valid_name_is_kept_as_it_is() -> None:
    assert dataset_key("A1_pretokenized") == "A1_pretokenized"


def test_names_that_sanitise_alike_get_distinct_hashed_keys() -> None:
    keys = dataset_keys(["a-b", "a.b", "a_b"])
    assert keys["a_b"] == "a_b"
    assert len(set(keys.values())) == 3
    assert keys["a-b"].startswith("a_b_") and keys["a.b"].startswith("a_b_")


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6, unique=True))
def test_any_set_of_names_gets_valid_distinct_keys(names: list[str]) -> None:
    keys = dataset_keys(names)
    assert all(VALID.match(k) for k in keys.values())
    assert len(set(keys.values())) == len(names)
