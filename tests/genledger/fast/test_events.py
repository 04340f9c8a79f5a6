"""Stream events read once (`genledger.fast.events`) equal the definitions of
`genledger.parse.streams`, and the event tier's shortcut (an event line's facts are
`FRAGMENT`, without the fact decoders) is what the general path and the fast tiers say, on
every real recorded line of ../shared/realworld*/data and on generated objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import genledger.fast.events as events
from genledger.fast.events import decoded, event_kind, fast_event
from genledger.parse.formats import response_facts
from genledger.parse.line import facts_of_line
from genledger.parse.schema import FRAGMENT
from genledger.parse.streams import (
    ERROR_KEYS,
    FAMILIES,
    TOLD_BY,
    Family,
    event_family,
    is_neutral,
    read_event,
)
from genledger.refresh.count import line_reader

from .realfiles import FILES, SHARED


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _events(path: Path) -> list[tuple[bytes, dict[str, Any], Family]]:
    """The lines of `path` that are one stream event, with the event and its family."""
    found = []
    for line in _lines(path):
        obj = decoded(line)
        family = None if obj is None else event_family(obj)
        if obj is not None and family is not None:
            found.append((line, obj, family))
    return found


EVENT_FILES = [p for p in FILES if _events(p)]


def test_the_real_data_has_stream_events() -> None:
    if not FILES:
        pytest.skip(f"no real recorded responses at {SHARED}")
    assert len(EVENT_FILES) >= 20  # the stream datasets of realworld2 and realworld
    seen = {family.name for path in EVENT_FILES for _, _, family in _events(path)}
    assert len(seen) >= 7


def _name(path: Path) -> str:
    return f"{path.parents[2].name}/{path.parent.name}"


@pytest.mark.parametrize("path", EVENT_FILES, ids=[_name(p) for p in EVENT_FILES])
def test_every_real_event_reads_as_the_definition(path: Path) -> None:
    for number, (_, obj, family) in enumerate(_events(path), start=1):
        fast = fast_event(family, obj)
        assert fast == read_event(family, obj), (_name(path), number)
        assert fast.neutral == is_neutral(family, obj), (_name(path), number)


@pytest.mark.parametrize("path", EVENT_FILES, ids=[_name(p) for p in EVENT_FILES])
def test_every_real_line_finds_its_family_and_reading_by_its_key_set(path: Path) -> None:
    """`event_kind`: the family lookup cut to a line's key set, and the reader made for that
    key set and the text that told the family, equal the definitions on every line."""
    for number, line in enumerate(_lines(path), start=1):
        obj = decoded(line)
        if obj is not None:
            _same_kind(obj, (_name(path), number))


def _same_kind(obj: dict[str, Any], where: Any = None) -> None:
    kind, family = event_kind(obj), event_family(obj)
    assert (kind and kind[0]) == family, where
    if kind is not None and family is not None:
        fast = kind[1](obj)
        assert fast == read_event(family, obj), where
        assert fast.neutral == is_neutral(family, obj), where


@pytest.mark.parametrize("path", EVENT_FILES, ids=[_name(p) for p in EVENT_FILES])
def test_an_event_line_has_the_facts_the_shortcut_gives(path: Path) -> None:
    """The shortcut's proof on real lines: the general path and the fast tiers (read in file
    order, as a refresh reads them) both give an event line `[FRAGMENT]`."""
    facts = line_reader("responses")
    for line in _lines(path):
        obj = decoded(line)
        if obj is None or event_family(obj) is None:
            facts(line)  # the tiers see the file's other lines too
            continue
        assert facts_of_line(line, "responses") == [FRAGMENT]
        assert facts(line) == [FRAGMENT]


def test_a_line_that_is_no_single_object_is_left_to_the_general_path() -> None:
    event = orjson.dumps({"type": "message_stop"})
    assert decoded(event) == {"type": "message_stop"}
    for line in (b"[" + event + b"]", b"{", b"1", b'"x"', b"\xef\xbb\xbf" + event, b"{\x0c}"):
        assert decoded(line) is None


# --- generated objects: any family's reader on any object built of the keys they read ---------

KEYS = sorted(
    {key for family in FAMILIES for path in family.paths() for key, _ in path.steps if key != "*"}
    | {"error", "index", "thought", "text", "type", "signature", *ERROR_KEYS}
)
TEXTS = sorted(
    {
        c.value
        for family in FAMILIES
        for alts in (family.events, family.start, family.end, family.trailing, family.opener)
        for alt in alts
        for c in alt
        if isinstance(c.value, str)
    }
    | {"error", "response.output_text.delta", ""}
)
SCALARS = (
    st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(TEXTS) | st.text(max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=12,
)


def _reaching(draw: st.DrawFn, steps: tuple[tuple[str, bool], ...]) -> Any:
    """A value along `steps` (a path's), other keys and list elements beside it."""
    if not steps:
        return draw(SCALARS | VALUES)
    key, each = steps[0]
    inner = _reaching(draw, steps[1:])
    node = draw(st.lists(st.just(inner) | VALUES, max_size=3)) if each else inner
    if key == "*":
        key = draw(st.sampled_from(KEYS))
    others = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2))
    return {**others, key: node}


@st.composite
def objects(draw: st.DrawFn, family: Family) -> dict[str, Any]:
    """An object with some keys at random and values along some of the paths `family` reads."""
    obj: dict[str, Any] = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3))
    paths = sorted({p.text: p for p in family.paths()}.values(), key=str)
    for path in draw(st.lists(st.sampled_from(paths), max_size=6)):
        obj.update(_reaching(draw, path.steps))
    return obj


EVENTS = st.sampled_from(FAMILIES).flatmap(lambda f: st.tuples(st.just(f), objects(f)))
OBJECTS = EVENTS.map(lambda pair: pair[1])


@settings(max_examples=500, deadline=None)
@given(EVENTS, st.sampled_from(FAMILIES))
def test_a_family_reads_any_object_as_the_definition(
    made: tuple[Family, dict[str, Any]], other: Family
) -> None:
    maker, obj = made
    for family in (maker, other):  # the family whose paths made it, and any other
        _same_reading(family, obj)


@st.composite
def told(draw: st.DrawFn) -> dict[str, Any]:
    """An object near a family's events: one built of its paths, its telling key (`type`,
    `object`, `event_type`) set to one of the texts the families test, keys in any order."""
    obj = draw(EVENTS)[1]
    for key in draw(st.lists(st.sampled_from(TOLD_BY), max_size=2)):
        obj[key] = draw(st.sampled_from(TEXTS) | SCALARS)
    items = draw(st.permutations(list(obj.items())))
    return dict(items)


@settings(max_examples=800, deadline=None)
@given(told())
def test_a_key_sets_family_and_reader_are_the_definitions(obj: dict[str, Any]) -> None:
    _same_kind(obj)


@settings(max_examples=100, deadline=None)
@given(told())
def test_past_the_key_sets_kept_the_family_reader_reads(obj: dict[str, Any]) -> None:
    kept, keys = events.KINDS_KEPT, events.KEYS_KEPT
    events.KINDS_KEPT = 0  # as if hostile lines had filled it
    try:
        if tuple(obj) not in events.KINDS:
            _same_kind(obj)
        events.KINDS_KEPT, events.KEYS_KEPT = kept, 0  # as if the object had too many keys
        if tuple(obj) not in events.KINDS:
            _same_kind(obj)
    finally:
        events.KINDS_KEPT, events.KEYS_KEPT = kept, keys


class _Reads(dict[str, Any]):
    """An object noting the top-level keys read from it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def test_a_reader_for_a_key_set_reads_only_what_the_set_leaves_open() -> None:
    """A content delta's reader reads nothing below `message` or `usage` (absent) and no
    `type` (it told the family, and settles start, end and error): only the delta."""
    anthropic = next(f for f in FAMILIES if f.name == "anthropic")
    obj = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "é"}}
    keyed = _Reads(obj)
    assert events.reader(anthropic, frozenset(obj), ("type", obj["type"]))(keyed) == read_event(
        anthropic, obj
    )
    assert keyed.read == {"delta"}
    general = _Reads(obj)
    assert fast_event(anthropic, general) == read_event(anthropic, obj)
    assert {"message", "usage", "type"} <= general.read


def _same_reading(family: Family, obj: dict[str, Any]) -> None:
    fast = fast_event(family, obj)
    assert fast == read_event(family, obj)
    assert fast.neutral == is_neutral(family, obj)


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_an_event_is_a_fragment_whatever_else_it_holds(obj: dict[str, Any]) -> None:
    """The shortcut's proof for any object: the general path names an event `FRAGMENT`."""
    if event_family(obj) is not None:
        assert response_facts(obj) == FRAGMENT
        assert facts_of_line(orjson.dumps(obj), "responses") == [FRAGMENT]
