"""The compiled tests and walks of paths without a list read as the general walk does."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.parse.declarations import BUILT_IN
from genledger.parse.paths import Condition, Field, parse_condition, parse_field, parse_path

KEYS = ["a", "b", "type", "delta"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5]),
    st.sampled_from(["", "x", "xy", "1", "true", "message_stop"]),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=8,
)
# scalars at each level: most conditions test a value one or two keys deep
NESTED = st.dictionaries(st.sampled_from(KEYS), st.one_of(SCALARS, VALUES), max_size=3)
RECORDS = st.dictionaries(st.sampled_from(KEYS), st.one_of(SCALARS, NESTED, VALUES), max_size=4)
PATHS = st.lists(st.sampled_from(KEYS), min_size=1, max_size=3).map(".".join)
LITERALS = st.sampled_from(['"x"', "x", "1", "1.0", "true", "false", "null", '""', "message_stop"])
CONDITIONS = st.one_of(
    PATHS, PATHS.map("!{}".format), PATHS.map("has({})".format),
    st.tuples(PATHS, st.sampled_from(["==", "!=", "="]), LITERALS).map(" ".join),
    st.tuples(PATHS, st.sampled_from(['"x"', '""'])).map(lambda t: f"{t[0]} ^= {t[1]}"),
)  # fmt: skip
FIELDS = st.lists(st.lists(PATHS, min_size=1, max_size=2).map(" + ".join), min_size=1, max_size=3)


def _general(condition: Condition) -> Condition:
    return replace(condition, test=None)


@settings(max_examples=3000, deadline=None)
@given(CONDITIONS, RECORDS)
def test_a_compiled_condition_holds_where_the_general_one_does(text: str, record: Any) -> None:
    condition = parse_condition(text)
    assert condition.holds(record) is _general(condition).holds(record)


@settings(max_examples=2000, deadline=None)
@given(FIELDS.map(" | ".join), RECORDS)
def test_a_compiled_field_reaches_what_the_general_walk_reaches(text: str, record: Any) -> None:
    field = parse_field(text)
    general = replace(field, getters=None)
    assert field.getters is not None
    assert field.all_values(record) == general.all_values(record)
    assert field.first(record) == general.first(record)


def test_only_paths_without_a_list_are_compiled() -> None:
    assert parse_field("a[].b | c").getters is None
    assert parse_field("a.* | c").getters is None
    assert parse_condition("a[].b == 1").test is None
    assert parse_condition("has(a.b)").test is None
    assert parse_condition("a.b == 1").test is not None


def test_the_built_in_declarations_survive_a_pickle() -> None:
    """Workers receive the declarations pickled; the compiled parts are rebuilt."""
    assert pickle.loads(pickle.dumps(BUILT_IN)) == BUILT_IN


def test_a_condition_and_a_field_pickle_with_their_compiled_parts() -> None:
    condition = pickle.loads(pickle.dumps(parse_condition("type == 'x'")))
    assert condition.test is not None and condition == parse_condition("type == 'x'")
    field: Field = pickle.loads(pickle.dumps(parse_field("a.b | c")))
    assert field.getters is not None and field.first({"c": 3}) == 3


SPREAD = st.lists(
    st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS).map("{}[]".format), st.just("*")),
    min_size=1,
    max_size=4,
).map(".".join)


@settings(max_examples=3000, deadline=None)
@given(SPREAD.filter(lambda t: not t.startswith("*")), RECORDS)
def test_a_compiled_walk_reaches_what_the_general_walk_reaches(text: str, record: Any) -> None:
    path = parse_path(text)
    general = replace(path, get=None, walk=None, thoughtless=None)
    assert path.values(record) == general.values(record)
    assert path.values(record, skip_thoughts=True) == general.values(record, skip_thoughts=True)
