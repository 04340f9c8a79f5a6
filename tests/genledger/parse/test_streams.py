"""Stream events as data (parse/streams.py): which objects are events of which provider's
stream, and how events fold (usage merged per field, texts joined, a lone record kept)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genledger.parse.streams import (
    BY_NAME,
    FAMILIES,
    Acc,
    Family,
    combine,
    combine_into,
    event_family,
    final_object,
    fold,
)

from ..fast.test_events import objects

EVENTS = [
    ({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}}, "anthropic"),
    ({"type": "response.output_text.delta", "delta": "x"}, "openai_responses"),
    ({"id": "c", "object": "chat.completion.chunk", "choices": []}, "openai_chat"),
    ({"id": "", "choices": [], "prompt_filter_results": [{}]}, "openai_chat"),
    (
        {"id": "t", "object": "text_completion", "choices": [{"text": "a"}], "usage": None},
        "openai_completion",
    ),
    ({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}, "gemini"),
    ({"contentBlockDelta": {"delta": {"text": "a"}}}, "bedrock_converse"),
    ({"metadata": {"usage": {"outputTokens": 1}}}, "bedrock_converse"),
    ({"type": "content-delta", "delta": {"message": {"content": {"text": "a"}}}}, "cohere"),
    ({"event_type": "step.delta", "delta": {"text": "a"}}, "gemini_interactions"),
    ({"done": False, "created_at": "t", "message": {"content": "a"}}, "ollama"),
    ({"stop": False, "content": "a"}, "llamacpp"),
    ({"index": 1, "token": {"text": "a"}, "generated_text": None, "details": None}, "tgi"),
]
REPLIES = [  # records a declaration reads alone: never events
    {"id": "c", "object": "chat.completion", "choices": [], "usage": {"completion_tokens": 1}},
    {"id": "r", "object": "response", "metadata": {}, "usage": {"output_tokens": 1}},
    {"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}], "usageMetadata": {}},
    {"done": True, "created_at": "t", "eval_count": 3},
    {"object": "text_completion", "choices": [{"text": "a"}], "usage": {"completion_tokens": 1}},
]


@pytest.mark.parametrize(("event", "family"), EVENTS)
def test_each_providers_events_are_told_by_their_own_fields(event: Any, family: str) -> None:
    found = event_family(event)
    assert found is not None and found.name == family


@pytest.mark.parametrize("reply", REPLIES)
def test_a_reply_is_no_event(reply: Any) -> None:
    assert event_family(reply) is None


def test_usage_merges_per_field_and_a_field_no_event_reports_stays_missing() -> None:
    anthropic = BY_NAME["anthropic"]
    start = {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 40,
             "output_tokens": 1}}}  # fmt: skip
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"output_tokens": 9}}  # fmt: skip
    acc = combine(anthropic, fold(anthropic, start), fold(anthropic, delta))
    usage = final_object(anthropic, acc)["usage"]
    assert usage == {"input_tokens": 40, "output_tokens": 9}
    assert "cache_read_input_tokens" not in usage


def test_a_lone_record_is_read_as_it_is() -> None:
    gemini = BY_NAME["gemini"]
    reply = REPLIES[2]
    assert final_object(gemini, fold(gemini, reply, record=True)) is reply


def _chat_stream(call: str, args: list[str]) -> list[dict[str, Any]]:
    """An OpenAI chat stream that calls tool `call` with arguments streamed in `args`."""
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": call}}
    chunks = [{"object": "chat.completion.chunk", "id": "s", "choices": [{"index": 0, "delta": {
        "role": "assistant", "tool_calls": [first]}}]}]  # fmt: skip
    for piece in args:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        chunks.append({"object": "chat.completion.chunk", "id": "s",
                       "choices": [{"index": 0, "delta": delta}]})  # fmt: skip
    return chunks


def _streamed_answer(events: list[dict[str, Any]]) -> Any:
    chat = BY_NAME["openai_chat"]
    acc: dict[str, Any] = {}
    for event in events:
        acc = combine(chat, acc, fold(chat, event))
    return final_object(chat, acc)["choices"][0]["message"]["tool_calls"]


def test_a_streamed_tool_call_is_its_own_answer_so_different_calls_are_no_duplicates() -> None:
    weather = _streamed_answer(_chat_stream("weather", ['{"city": ', '"Paris"}']))
    again = _streamed_answer(_chat_stream("weather", ['{"city": "Par', 'is"}']))
    other = _streamed_answer(_chat_stream("weather", ['{"city": ', '"Rome"}']))
    assert weather != other  # another city: another answer
    assert weather == again  # the same call, its stream cut elsewhere: the same answer
    assert weather[0]["function"]["arguments"] == 'call_1weather{"city": "Paris"}'


N_CHOICES = {0: ["The", " sky"], 1: ["Blue", "!"], 2: ["It", " is", " blue"]}


def _n_choice_stream() -> list[dict[str, Any]]:
    """An n=3 chat stream as the OpenAI SDK yields it: the choices' deltas interleaved, each
    choice ending with its own finish reason, then the usage chunk."""
    from openai.types.chat import ChatCompletionChunk

    def chunk(choices: list[Any], usage: Any = None) -> dict[str, Any]:
        made = ChatCompletionChunk.model_validate({
            "id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-mini", "choices": choices, "usage": usage})  # fmt: skip
        return made.model_dump(mode="json", exclude_none=True)

    roles = [{"index": i, "delta": {"role": "assistant", "content": ""}} for i in N_CHOICES]
    events = [chunk(roles)]
    for step in range(max(len(words) for words in N_CHOICES.values())):
        events.append(chunk([{"index": i, "delta": {"content": words[step]}}
                             for i, words in N_CHOICES.items() if step < len(words)]))  # fmt: skip
    events += [chunk([{"index": i, "delta": {}, "finish_reason": "stop"}]) for i in N_CHOICES]
    events.append(chunk([], {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}))
    return events


def test_a_stream_of_n_choices_keeps_one_answer_per_index_however_it_is_cut() -> None:
    from genledger.parse.formats import response_facts

    chat, events = BY_NAME["openai_chat"], _n_choice_stream()
    whole: dict[str, Any] = {}
    for event in events:
        whole = combine(chat, whole, fold(chat, event))
    reply = final_object(chat, whole)
    # as the SDK's accumulator: a choice per index, each its own text and finish reason
    assert [c["index"] for c in reply["choices"]] == list(N_CHOICES)
    assert [c["message"]["content"] for c in reply["choices"]] == [
        "".join(words) for words in N_CHOICES.values()
    ]
    assert all(c["finish_reason"] == "stop" for c in reply["choices"])
    facts = response_facts(reply)
    assert (facts.n_samples, facts.completion_tokens, facts.prompt_tokens) == (3, 7, 9)
    for cut in range(1, len(events)):  # a fold is a monoid: any cut combines to the whole
        left: dict[str, Any] = {}
        right: dict[str, Any] = {}
        for event in events[:cut]:
            left = combine(chat, left, fold(chat, event))
        for event in events[cut:]:
            right = combine(chat, right, fold(chat, event))
        assert combine(chat, left, right) == whole


def test_the_families_signature_is_stable_and_moves_with_a_family(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses
    import subprocess
    import sys

    from genledger.parse import streams

    code = "from genledger.parse.streams import signature; print(signature())"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}  # fmt: skip
    assert runs == {streams.signature() + "\n"}  # not a set's or a function's address
    before = streams.signature()
    chat = dataclasses.replace(streams.BY_NAME["openai_chat"], indexed=False)
    monkeypatch.setattr(
        streams, "FAMILIES", tuple(chat if f.name == chat.name else f for f in streams.FAMILIES)
    )
    assert streams.signature() != before


# --- a fold written in place equals `combine` ---------------------------------------------


@st.composite
def _folds(draw: st.DrawFn) -> tuple[Family, list[Acc]]:
    """A family and the folds of a run of objects near its events (as a pass reads them)."""
    family = draw(st.sampled_from(FAMILIES))
    made = draw(st.lists(objects(family), min_size=1, max_size=8))
    return family, [fold(family, obj) for obj in made]


@settings(max_examples=400, deadline=None)
@given(_folds())
def test_a_fold_written_in_place_equals_combine(made: tuple[Family, list[Acc]]) -> None:
    family, folds = made
    kept = copy.deepcopy(folds)
    by_combine, in_place = folds[0], copy.deepcopy(folds[0])
    for acc in folds[1:]:
        by_combine = combine(family, by_combine, acc)
        in_place = combine_into(family, in_place, acc)
    assert in_place == by_combine
    assert folds == kept  # the folds combined in are left as they were


def test_a_fold_with_other_choices_or_a_record_is_combined_anew() -> None:
    chat = BY_NAME["openai_chat"]
    two = fold(chat, {"choices": [{"index": 1, "delta": {"content": "b"}}]})
    first = fold(chat, {"choices": [{"delta": {"content": "a"}}]})
    assert "x" in two
    assert combine_into(chat, dict(first), two) == combine(chat, first, two)
    record = fold(chat, {"id": "c"}, record=True)
    assert "o" not in combine_into(chat, record, first)
