"""This round's typed records (genledger.fast.realshapes `GeminiOpenAI`, the chat shape's think
leaks, the typed tier's shape before the last) give the general path's facts: on every real
record they hold (../shared/realworld*/data) and on records near them built with the openai
SDK's chat models; a bug planted in each is caught by the real records."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice

from genledger.fast import lines as fastparse
from genledger.fast import realshapes, shapes
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.parse.line import facts_of_line

from .realfiles import FILES
from .test_lines import assert_same

TEXT = st.one_of(
    st.none(),
    st.sampled_from(
        ["", "hi", "<think>x</think>y", "</think>", "<think>cut", "a\\u00e9 <think>", "é 😀"]
    ),
    st.text(max_size=8),
)
COUNT = st.one_of(
    st.none(), st.integers(-3, 10**6), st.just(2**63 - 1), st.just(2**63), st.just("7")
)
VALID = st.integers(0, 10**6)


def _lines(name: str) -> list[bytes]:
    paths = [p for p in FILES if p.parent.name == name]
    return [line for p in paths for line in p.read_bytes().splitlines() if line.strip()]


def _held(name: str, shape: type[Any]) -> tuple[int, int]:
    """(records of `name` the typed tier held in `shape`, those that differ from the general
    facts)."""
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    held = wrong = 0
    for line in _lines(name):
        facts = typed.decode(line, NOTHING_PLAIN)
        if facts is None or typed.shapes[typed.last] is not shape:
            continue
        held += 1
        wrong += facts != facts_of_line(line, "responses")
    return held, wrong


REAL = [
    ("gemini_openai_compat", realshapes.GeminiOpenAI),
    ("llamacpp_openai_compat", shapes.Chat),  # think tags, no reasoning key: leaks
    ("hf_router_chat", shapes.Chat),  # think tags
    ("groq_chat", shapes.Chat),  # x_groq, think tags
]


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
@pytest.mark.parametrize(("name", "shape"), REAL)
def test_real_records_take_the_shapes(name: str, shape: type[Any]) -> None:
    # Every real record of these datasets takes its typed shape, with the general facts.
    held, wrong = _held(name, shape)
    assert held == len(_lines(name)) and not wrong


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_every_real_think_tag_line_the_typed_tier_holds_gives_the_general_facts() -> None:
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    held = leaks = 0
    for path in FILES:
        for line in path.read_bytes().splitlines():
            if b"think>" not in line:
                continue
            facts = typed.decode(line, NOTHING_PLAIN)
            if facts is not None:
                held += 1
                assert facts == facts_of_line(line, "responses"), line[:200]
                leaks += any(f.think_leak for f in facts)
    assert held and leaks


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_a_file_alternating_two_shapes_tries_the_one_before_the_last() -> None:
    # Bedrock's batch output: a result that succeeded, one that failed, and again.
    good, bad = _lines("bedrock_batch_titan")[:2]
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    tried: list[int] = []
    decoder = typed.decoder

    def counting(index: int) -> Any:
        tried.append(index)
        return decoder(index)

    typed.decoder = counting  # type: ignore[method-assign]
    for line in (good, bad) * 4:
        assert typed.decode(line, NOTHING_PLAIN) == facts_of_line(line, "responses")
    # once both shapes were found, each line costs the last shape's decode and the one before
    assert len(tried[-6:]) == 6 and len(set(tried[-6:])) == 2


def _chat(
    messages: list[dict[str, Any]], usage: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    choices = [
        Choice.model_construct(
            index=i,
            finish_reason="stop",
            message=ChatCompletionMessage.model_construct(role="assistant", **message),
        )
        for i, message in enumerate(messages)
    ]
    record = ChatCompletion.model_construct(
        id="chatcmpl-1", object="chat.completion", created=1748902365, model="m",
        choices=choices, usage=CompletionUsage.model_construct(**usage),
    ).model_dump(mode="json", exclude_unset=True, warnings=False)  # fmt: skip
    return {**record, **extra}


MESSAGE = st.fixed_dictionaries(
    {"content": TEXT},
    optional={
        "reasoning_content": TEXT,
        "reasoning": TEXT,
        "refusal": st.none(),
        "tool_calls": st.just([{"id": "", "type": "function", "function": {"name": "f"}}]),
    },
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(MESSAGE, min_size=1, max_size=3),
    st.fixed_dictionaries({"completion_tokens": VALID}, optional={"prompt_tokens": COUNT}),
    st.fixed_dictionaries(
        {}, optional={"timings": st.just({"prompt_n": 10}), "x_groq": st.just({"id": "r"})}
    ),
)
@example([{"content": "<think>\n\n</think>\n\nYes."}], {"completion_tokens": 35}, {})  # a leak
@example([{"content": "<think>a</think>b", "reasoning_content": "a"}], {"completion_tokens": 2}, {})
@example([{"content": "<think>a", "reasoning": None}], {"completion_tokens": 2}, {})  # a leak
def test_chat_records_with_think_tags_give_the_general_facts(
    messages: list[dict[str, Any]], usage: dict[str, Any], extra: dict[str, Any]
) -> None:
    # Built with the openai SDK's chat models: think tags in the content with and without a
    # reasoning key (null, a string), escapes, calls, several choices, llama.cpp's and Groq's keys.
    assert_same(orjson.dumps(_chat(messages, usage, extra)), "responses")


GOOGLE = st.sampled_from(
    [
        {"google": {"thought": True, "thought_signature": "AVSo"}},
        {"google": {}},
        {"google": None},  # absent to the detect
        {"google": "x"},
        {},
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(MESSAGE, st.one_of(GOOGLE, st.none())), min_size=1, max_size=3),
    st.fixed_dictionaries(
        {"completion_tokens": st.one_of(VALID, VALID, COUNT)},
        optional={
            "prompt_tokens": st.one_of(VALID, COUNT),
            "total_tokens": st.one_of(VALID, VALID, COUNT),
            "prompt_tokens_details": st.just({"cached_tokens": 3}),
            "num_sources_used": st.just(0),  # xAI's key: another format
        },
    ),
)
@example(
    [({"content": "The current time is Noon."}, {"google": {"thought": True}})],
    {"completion_tokens": 6, "prompt_tokens": 66, "total_tokens": 100},
)
@example([({"content": "hi"}, {"google": {}})], {"completion_tokens": 9, "total_tokens": 5})
@example([({"content": "hi"}, {"google": {}})], {"completion_tokens": 9, "prompt_tokens": 2})
@example(
    [({"content": "hi"}, {"google": {}})],
    {"completion_tokens": 1, "prompt_tokens": 2**63 - 1, "total_tokens": 2**63 - 1},
)
def test_gemini_openai_records_near_the_shape_give_the_general_facts(
    messages: list[tuple[dict[str, Any], dict[str, Any] | None]], usage: dict[str, Any]
) -> None:
    # The openai SDK's chat models with Gemini's `extra_content` in some, all or none of the
    # messages (null, empty, not an object), counts that do not add up, out of range, xAI's.
    record = _chat([m for m, _ in messages], usage, {})
    for choice, (message, extra) in zip(record["choices"], messages, strict=True):
        if extra is not None:
            choice["message"]["extra_content"] = extra
            if message.get("content") is not None:
                choice["message"]["thought_signature"] = "AVSo"
    assert_same(orjson.dumps(record), "responses")


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_a_bug_planted_in_the_gemini_counts_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    settle = realshapes.settle

    def wrong(prompt: Any, completion: Any, total: Any, reasoning: Any, *rest: Any) -> Any:
        return settle(prompt, completion, total, None, *rest)

    monkeypatch.setattr(realshapes, "settle", wrong)  # the thoughts left out of the facts
    assert _held("gemini_openai_compat", realshapes.GeminiOpenAI)[1]


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_a_bug_planted_in_the_think_leak_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    check = shapes._Message.check
    monkeypatch.setattr(shapes._Message, "check", lambda self, plain: check(self, plain) and 0)
    assert _held("llamacpp_openai_compat", shapes.Chat)[1]
