"""A request's final object read by the typed shapes (`fast.events.final_facts`) has the
general path's facts: on every request the real recorded streams of ../shared/realworld*/data
assemble into, and on final objects folded from generated events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.config import Switches
from genledger.fast.events import RETRY, FinalFacts, decoded, final_facts
from genledger.fast.lines import fast_decoder
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.ledger.streams import Partial, StreamState, request_object
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.formats import response_facts
from genledger.parse.streams import (
    FAMILIES,
    Family,
    combine,
    event_family,
    final_object,
    read_event,
)

from .realfiles import FILES, SHARED
from .test_events import EVENTS

ON, OFF = Switches(), Switches(typed_shapes=False)


def _requests(path: Path) -> list[Partial]:
    """Every request the events of `path` assemble into, read in one pass."""
    state, done = StreamState(anchored=True), []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        obj = decoded(line)
        family = None if obj is None else event_family(obj)
        if obj is not None and family is not None:
            done += state.feed(family, obj, number, 0, None)
    return done + state.settle()


STREAMS = [(p, r) for p in FILES if (r := _requests(p))]


def test_the_real_streams_assemble_requests_of_most_families() -> None:
    if not FILES:
        pytest.skip(f"no real recorded responses at {SHARED}")
    assert len(STREAMS) >= 20
    families = {p.family for _, requests in STREAMS for p in requests}
    assert len(families) >= 7


@pytest.mark.parametrize(
    ("path", "requests"), STREAMS, ids=[f"{p.parents[2].name}/{p.parent.name}" for p, _ in STREAMS]
)
def test_every_real_request_reads_as_the_general_path(path: Path, requests: list[Any]) -> None:
    for p in requests:
        obj = request_object(p)
        assert final_facts(obj, BUILT_IN_ONLY, ON) == response_facts(obj), (path, p.line)
        assert final_facts(obj, BUILT_IN_ONLY, OFF) == response_facts(obj)


@pytest.mark.parametrize(
    ("path", "requests"), STREAMS, ids=[f"{p.parents[2].name}/{p.parent.name}" for p, _ in STREAMS]
)
def test_every_real_request_in_file_order_reads_as_the_general_path_by_one_reader(
    path: Path, requests: list[Any]
) -> None:
    """`FinalFacts` as a read uses it: one reader for a file's requests, in their order (its
    memo of the key sets the typed shapes missed is what changes from one to the next)."""
    read = FinalFacts(BUILT_IN_ONLY, ON)
    for p in requests:
        obj = request_object(p)
        assert read(obj) == response_facts(obj), (path, p.line)


def test_after_a_miss_a_key_set_skips_the_typed_shapes_then_tries_them_again() -> None:
    read = FinalFacts(BUILT_IN_ONLY, ON)
    tried: list[bytes] = []
    typed = read.typed
    assert typed is not None
    decode = typed.decode

    def counting(line: bytes, flags: Any) -> Any:
        tried.append(line)
        return decode(line, flags)

    typed.decode = counting  # type: ignore[method-assign]
    try:
        missed = {"object": "text_completion", "id": "c", "model": "m", "usage": None,
                "choices": [{"index": 0, "text": "a", "finish_reason": "stop"}]}  # fmt: skip
        assert decode(orjson.dumps(missed), NOTHING_PLAIN) is None  # no typed shape holds it
        for _ in range(RETRY + 2):
            assert read(missed) == response_facts(missed)
    finally:
        del typed.decode
    assert len(tried) == 2  # a miss, RETRY - 1 read without the shapes, then a retry


def test_the_typed_shapes_hold_most_real_final_objects() -> None:
    """The shortcut is taken (else the test above would prove nothing of it)."""
    if not STREAMS:
        pytest.skip(f"no real recorded responses at {SHARED}")
    typed = fast_decoder("responses", BUILT_IN_ONLY, ON).typed
    assert typed is not None
    objects = [request_object(p) for _, requests in STREAMS for p in requests]
    held = sum(typed.decode(orjson.dumps(o), NOTHING_PLAIN) is not None for o in objects)
    assert held > len(objects) // 2


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENTS, min_size=1, max_size=4), st.sampled_from(FAMILIES))
def test_a_final_object_of_generated_events_reads_as_the_general_path(
    made: list[tuple[Family, dict[str, Any]]], family: Family
) -> None:
    acc: dict[str, Any] = {}
    for _, obj in made:
        acc = combine(family, acc, read_event(family, obj).acc)
    final = final_object(family, acc)
    assert final_facts(final, BUILT_IN_ONLY, ON) == response_facts(final)
    assert FinalFacts(BUILT_IN_ONLY, ON)(final) == response_facts(final)
