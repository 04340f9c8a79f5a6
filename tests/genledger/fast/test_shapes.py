"""The chat shape's usual message (`fast.shapes._sole_answer`: one choice, no call, a text
content) gives the general path's facts whatever else the message holds, on every kind of
read; a planted bug in it is caught."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.fast import shapes
from genledger.fast.answerkeys import key_of_spelled_bytes
from genledger.fast.lines import ON, fast_decoder, fast_facts
from genledger.fast.rawtext import NOTHING_PLAIN, bytes_flags
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.formats import response_facts
from genledger.synth.records import openai_chat

ABSENT = object()
TEXTS = st.one_of(
    st.sampled_from(["", " ", "4", "a\nb", "  x  ", "<think>t</think>4", "é", "\\", '"q"']),
    st.text(max_size=8),
)
VALUES = st.one_of(st.just(ABSENT), st.none(), TEXTS, st.integers(0, 3))
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": " x  y"}'}}
# what a message's `tool_calls` may hold: real calls, parts with text or thoughts (shown or
# not by `formats._visible`), and values no provider writes (the general path still reads them)
PARTS = st.one_of(
    st.just(CALL),
    st.fixed_dictionaries({"text": VALUES.filter(lambda v: v is not ABSENT)}),
    st.fixed_dictionaries({"thought": st.sampled_from([True, False, 1]), "text": TEXTS}),
    st.dictionaries(st.sampled_from(["id", "type", "thought"]), st.one_of(st.booleans(), TEXTS)),
    st.lists(st.fixed_dictionaries({"text": TEXTS}), max_size=2),
    TEXTS,
    st.none(),
)
CALLS = st.one_of(
    st.just(ABSENT),
    st.none(),
    st.just([CALL]),
    st.lists(PARTS, max_size=3),
    st.fixed_dictionaries({"thought": st.booleans()}),
    TEXTS,
    st.integers(0, 3),
)
MESSAGES = st.fixed_dictionaries(
    {"content": VALUES, "refusal": VALUES, "reasoning_content": VALUES, "tool_calls": CALLS}
)


def chat_line(fields: dict[str, Any]) -> bytes:
    """A chat completion line whose message holds `fields` (ABSENT ones left out)."""
    record = openai_chat("c", 3, 4, random.Random(1))
    message = {"role": "assistant"}
    message.update({k: v for k, v in fields.items() if v is not ABSENT})
    record["choices"][0]["message"] = message
    return orjson.dumps(record)


def differs(fields: dict[str, Any]) -> bool:
    """The fast facts (where the typed tier takes the line) differ from the general path's,
    the line read alone and as a read's line (whose flags may make its texts plain)."""
    line = chat_line(fields)
    general = [response_facts(orjson.loads(line))]
    for flags in (NOTHING_PLAIN, bytes_flags(line, len(line))):
        fast_decoder("responses", BUILT_IN_ONLY, ON).wake()  # the typed tier rests after misses
        fast = fast_facts(line, "responses", flags)
        if fast is not None and fast != general:
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(MESSAGES)
def test_any_message_gives_the_general_facts(fields: dict[str, Any]) -> None:
    assert not differs(fields)


def test_a_sole_answer_that_ignores_the_refusal_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # planted bug: the content keyed alone, a refusal beside it left out of the answer
    def planted(message: Any, plain: int) -> Any:
        data = bytes(message.content)
        if len(data) <= 2 or data[0] != shapes.QUOTE:
            return shapes.SLOW
        return key_of_spelled_bytes(data)

    monkeypatch.setattr(shapes, "_sole_answer", planted)
    refused = {"content": "4", "refusal": "no", "reasoning_content": ABSENT, "tool_calls": None}
    assert differs(refused)
    assert not differs({**refused, "refusal": None})


@settings(max_examples=400, deadline=None)
@given(CALLS.filter(lambda v: v not in (ABSENT, None)), st.sampled_from([ABSENT, None]))
def test_a_message_of_calls_alone_gives_the_general_facts(calls: Any, empty: Any) -> None:
    # the usual call (`fast.shapes._sole_call`): content and refusal absent or null
    assert not differs({"content": empty, "refusal": empty, "reasoning_content": ABSENT,
                        "tool_calls": calls})  # fmt: skip


def test_a_sole_call_shown_unlooked_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # planted bug: a list of calls taken as shown without looking at its first part
    monkeypatch.setattr(shapes, "_shows", lambda value: True)
    thought = {"content": None, "refusal": None, "reasoning_content": ABSENT,
               "tool_calls": [{"thought": True, "text": "hm"}]}  # fmt: skip
    assert differs(thought)
    monkeypatch.undo()
    assert not differs(thought)
