"""The compiled reader (fast/records.py) gives `response_facts`' facts: on every real recorded
record read in file order by one reader (so the remembered detection crosses shapes), and on
generated runs of records built from the declarations' own paths, which share key sets and
differ in the values the detect conditions read. A planted bug (the previous declaration
trusted without its witnesses) is caught by the same comparison."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from genledger.fast import records
from genledger.fast.records import (
    RecordReader,
    Search,
    condition_test,
    field_first,
    field_raw,
    field_values,
)
from genledger.parse.declarations import BUILT_IN, BUILT_IN_ONLY, FormatSet, user_declaration
from genledger.parse.formats import response_facts
from genledger.parse.jsonline import Malformed, records_of
from genledger.parse.paths import parse_condition, parse_field

from .realfiles import FILES, SHARED

# --- generated records: the declarations' paths, set to values that make conditions differ ------

PATHS = sorted(
    {p for d in BUILT_IN for p in d.paths() if not p.text.startswith("len(")}, key=lambda p: p.text
)
# 2**64 - 1: the largest int orjson reads (beyond int64); larger ones it reads as floats
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 40), st.sampled_from([2**64 - 1, 1.0, 2.5, -1.0]),
    st.sampled_from([
        "", "stop", "length", "text_completion", "response", "interaction", "error",
        "failed", "abort", "x </think>", "chat.completion",
    ]),
)  # fmt: skip
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.fixed_dictionaries({"thought": st.booleans(), "text": SCALARS}),
    st.fixed_dictionaries({"type": SCALARS, "message": SCALARS}),
)


def _put(record: dict[str, Any], steps: tuple[tuple[str, bool], ...], value: Any) -> None:
    """Set `value` where the path's steps lead, making objects (and one-element lists)."""
    node = record
    for index, (key, each) in enumerate(steps):
        key = "k" if key == "*" else key
        last = index == len(steps) - 1
        if last and not each:
            node[key] = value
            return
        if each:
            items = node.get(key)
            if not isinstance(items, list) or not items or not isinstance(items[0], dict):
                items = node[key] = [{}]
            if last:
                node[key] = [value]
                return
            node = items[0]
        else:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child


@st.composite
def shaped_records(draw: st.DrawFn) -> dict[str, Any]:
    """A record holding a few declaration paths with drawn values."""
    record: dict[str, Any] = {}
    for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=6)):
        _put(record, path.steps, draw(VALUES))
    return record


# Runs of records of a few shapes (as a file holds them): a record may repeat another's keys
# with other values, which is where a remembered detection must be proven again.
RUNS = st.lists(shaped_records(), min_size=1, max_size=4).flatmap(
    lambda shapes: st.lists(
        st.tuples(st.sampled_from(shapes), st.lists(st.tuples(st.sampled_from(PATHS), VALUES))),
        min_size=1,
        max_size=12,
    )
)


def _records(run: list[tuple[dict[str, Any], list[Any]]]) -> list[dict[str, Any]]:
    """Each record of a run: its shape with some values redrawn at its paths."""
    out = []
    for shape, changes in run:
        record = _copy(shape)
        for path, value in changes:
            if path.top in record:
                _put(record, path.steps, value)
        out.append(record)
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _differs(reader: RecordReader, run: list[Any]) -> bool:
    return any(reader.facts(r) != response_facts(r) for r in _records(run))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS)
def test_a_run_of_generated_records_reads_as_the_definition(run: list[Any]) -> None:
    assert not _differs(RecordReader(BUILT_IN_ONLY), run)


class _Trusting(Search):
    """The planted bug: the previous declaration trusted while its alternative holds."""

    def find(self, obj: dict[str, Any]) -> int | None:
        if self.memo is not None and all(test(obj) for test in self.memo[2]):
            return self.memo[0]
        return self.search(obj)


def test_a_reader_without_witnesses_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "Search", _Trusting)
    settings_ = settings(max_examples=3000, deadline=None, database=None)
    run = find(RUNS, lambda run: _differs(RecordReader(BUILT_IN_ONLY), run), settings=settings_)
    assert len(run) >= 2  # it takes a record after another of the same keys


def test_a_record_of_the_same_keys_is_detected_again() -> None:
    """OpenAI's chat then xAI's (its usage names the live-search sources): same top keys."""
    chat = {"id": "a", "choices": [], "usage": {"completion_tokens": 3}}
    xai = {"id": "b", "choices": [], "usage": {"completion_tokens": 3, "num_sources_used": 0}}
    reader = RecordReader(BUILT_IN_ONLY)
    assert [reader.facts(r).format for r in (chat, xai, chat)] == [
        "openai_chat",
        "xai_chat",
        "openai_chat",
    ]


# --- user declarations and an id path ------------------------------------------------------------

USER = FormatSet(
    (
        user_declaration(
            {"name": "mine", "completion_tokens": "stats.out", "detect": "stats.out & kind=gen"},
            "test",
        ),
    ),
    id_path="meta.key",
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"stats": st.fixed_dictionaries({"out": SCALARS}), "kind": SCALARS},
            optional={"meta": st.fixed_dictionaries({"key": SCALARS}), "usage": VALUES},
        ),
        max_size=6,
    )
)
def test_user_declarations_read_as_the_definition(run: list[dict[str, Any]]) -> None:
    reader = RecordReader(USER)
    assert [reader.facts(r) for r in run] == [response_facts(r, USER) for r in run]


# --- fields as closures --------------------------------------------------------------------------

FIELD_PATHS = st.sampled_from(["a", "a.b", "len(a)", "a[].b", "c", "b.c"])
FIELDS = st.lists(
    st.lists(FIELD_PATHS, min_size=1, max_size=3).map(" + ".join), min_size=1, max_size=3
).map(" | ".join)
FIELD_RECORDS = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(st.just("b"), SCALARS)),
)


@settings(max_examples=2000, deadline=None)
@given(FIELDS, st.booleans(), FIELD_RECORDS)
def test_a_field_as_a_closure_reads_its_raw_value(text: str, floats: bool, record: Any) -> None:
    field = parse_field(text)
    assert field_raw(field, floats)(record) == field.raw(record, floats)


@settings(max_examples=1000, deadline=None)
@given(FIELDS.filter(lambda t: "+" not in t), FIELD_RECORDS)
def test_a_field_as_a_closure_reaches_its_values(text: str, record: Any) -> None:
    field = parse_field(text.replace("len(a)", "a"), sums=False)
    assert field_first(field)(record) == field.first(record)
    assert field_values(field)(record) == field.all_values(record)


@settings(max_examples=2000, deadline=None)
@given(
    FIELD_PATHS.filter(lambda t: "len" not in t),
    st.sampled_from(["has({})", "{}", "!{}"]),
    FIELD_RECORDS,
)
def test_a_test_as_a_closure_holds_where_the_condition_does(
    text: str, form: str, record: Any
) -> None:
    condition = parse_condition(form.format(text))
    assert condition_test(condition)(record) is condition.holds(record)


# --- every real record ---------------------------------------------------------------------------


def _real_records() -> list[dict[str, Any]]:
    out = []
    for path in FILES:
        for line in path.read_bytes().splitlines():
            try:
                out += records_of(line) if line.strip() else []
            except Malformed:
                continue
    return out


@pytest.mark.skipif(not FILES, reason=f"no real recorded responses at {SHARED}")
def test_every_real_record_in_file_order_reads_as_the_definition() -> None:
    reader = RecordReader(BUILT_IN_ONLY)
    found = _real_records()
    assert len(found) > 10_000
    for number, record in enumerate(found):
        assert reader.facts(record) == response_facts(record), number
