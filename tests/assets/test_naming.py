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


def test_a_name_shaped_like_a_hashed_key_keeps_it_and_the_hashed_one_moves_aside() -> None:
    import hashlib

    mimic = "a_b_" + hashlib.blake2b(b"a-b", digest_size=3).hexdigest()
    keys = dataset_keys(["a-b", "a_b", mimic])
    assert keys["a_b"] == "a_b" and keys[mimic] == mimic
    assert len(set(keys.values())) == 3 and VALID.match(keys["a-b"])


@given(st.lists(st.sampled_from(["a-b", "a_b", "a.b", "a b", "x"]), min_size=1, max_size=5))
def test_names_and_the_hashed_keys_of_their_neighbours_never_collide(base: list[str]) -> None:
    hashed = list(dataset_keys(base).values())  # every key another name may have been given
    names = list(dict.fromkeys([*base, *hashed]))
    keys = dataset_keys(names)
    assert len(set(keys.values())) == len(names)
    assert all(keys[n] == n for n in names if VALID.match(n))
