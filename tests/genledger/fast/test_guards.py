"""A typed shape never states a count it was not written for: its guard sends a record that
carries one to the general path."""

from __future__ import annotations

import msgspec
import orjson
import pytest

from genledger.fast import apishapes, shapes
from genledger.fast.guards import unstated_guard
from genledger.fast.lines import RESPONSE_SHAPES, _Typed
from genledger.parse.schema import states_of

ANTHROPIC = {
    "type": "message",
    "usage": {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": None},
    "content": [{"type": "text", "text": "4"}],
}


def decoded(shape: type, record: dict) -> object:
    return msgspec.json.decode(orjson.dumps(record), type=shape)


def test_every_shape_states_every_count_its_formats_declare() -> None:
    # Today no record needs a guard: the shapes were written for every declared count.
    assert all(guard is None for guard in _Typed(RESPONSE_SHAPES).guards)


def test_a_count_the_shape_does_not_state_sends_records_carrying_it_on() -> None:
    states = tuple(s for s in states_of(apishapes.Anthropic.MAKER) if s != "cached_tokens")
    guard = unstated_guard(apishapes.Anthropic, states, apishapes.Anthropic.FORMATS)
    assert guard is not None
    assert not guard(decoded(apishapes.Anthropic, ANTHROPIC))  # null: nothing unstated
    carrying = {**ANTHROPIC, "usage": {**ANTHROPIC["usage"], "cache_read_input_tokens": 9}}
    assert guard(decoded(apishapes.Anthropic, carrying))


def test_the_guard_follows_a_record_read_under_another_one() -> None:
    states = tuple(s for s in states_of(apishapes.AnthropicBatch.MAKER) if s != "cached_tokens")
    guard = unstated_guard(apishapes.AnthropicBatch, states, apishapes.AnthropicBatch.FORMATS)
    assert guard is not None
    line = {"custom_id": "r", "result": {"type": "succeeded", "message": ANTHROPIC}}
    assert not guard(decoded(apishapes.AnthropicBatch, line))
    line["result"]["message"]["usage"]["cache_read_input_tokens"] = 2
    assert guard(decoded(apishapes.AnthropicBatch, line))


def test_the_guard_reads_renamed_keys_and_lists() -> None:
    states = tuple(s for s in states_of(apishapes.Gemini.MAKER) if s != "reasoning_tokens")
    guard = unstated_guard(apishapes.Gemini, states, apishapes.Gemini.FORMATS)
    assert guard is not None
    record = {"usageMetadata": {"candidatesTokenCount": 3}, "candidates": []}
    assert not guard(decoded(apishapes.Gemini, record))
    record["usageMetadata"]["thoughtsTokenCount"] = 7
    assert guard(decoded(apishapes.Gemini, record))


@pytest.mark.parametrize("shape", [shapes.Flat, shapes.TGI])
def test_a_key_the_shape_has_no_field_for_needs_no_guard(shape: type) -> None:
    # flat declares reasoning_tokens; the Flat shape has no such key, so a record holding
    # one never decodes into it: nothing to guard.
    states = tuple(s for s in states_of(shape.MAKER) if s != "reasoning_tokens")
    assert unstated_guard(shape, states, shape.FORMATS) is None
