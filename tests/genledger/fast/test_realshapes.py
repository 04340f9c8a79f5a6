"""The shapes of genledger.fast.realshapes (and the keys real servers add to the older shapes)
give the general path's facts: on the real records they hold (../shared/realworld*/data) and on
records near them built with the providers' SDK models (openai's `Completion`, ollama's
`ChatResponse` / `GenerateResponse`)."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ollama import ChatResponse, GenerateResponse, Message
from openai.types import Completion, CompletionChoice, CompletionUsage

from genledger.fast import lines as fastparse
from genledger.fast import realshapes, shapes
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.parse.line import facts_of_line

from .realfiles import FILES
from .test_lines import assert_same

TEXT = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "hi", "a\nb", "<think>x</think>y", "</think>", "é \\u00e9 😀"]),
    st.text(max_size=8),
)
COUNT = st.one_of(st.none(), st.integers(-3, 10**6), st.just(2**63), st.just("7"), st.just(1.5))
VALID = st.integers(0, 10**6)  # most records near a shape hold counts it reads
FINISH = st.one_of(st.none(), st.sampled_from(["stop", "length", "", "abort"]))


def _lines(name: str) -> list[bytes]:
    paths = [p for p in FILES if p.parent.name == name]
    return [line for p in paths for line in p.read_bytes().splitlines() if line.strip()]


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("openai_text_completion", realshapes.TextCompletion),
        ("vllm_openai_server", realshapes.TextCompletion),
        ("ollama_chat_native", realshapes.Ollama),
        ("ollama_generate_native", realshapes.Ollama),
        ("sglang_generate", shapes.SGLang),  # meta_info's routed_experts, cache_miss_count
        ("groq_chat", shapes.Chat),  # x_groq
    ],
)
def test_real_records_take_their_typed_shape(name: str, shape: type[Any]) -> None:
    # Every real record of the shape's kind decodes into it and gives the general facts.
    typed = fastparse._Typed(fastparse.RESPONSE_SHAPES)
    held = 0
    for line in _lines(name):
        facts = facts_of_line(line, "responses")
        if b"think>" in line:
            continue  # a possible leak: the general path decides
        if facts[0].format not in {fmt for fmt, _ in shape.FORMATS}:
            continue
        assert typed.decode(line, NOTHING_PLAIN) == facts, line[:200]
        assert typed.shapes[typed.last] is shape
        held += 1
    assert held


def _completion(
    texts: list[str | None], finishes: list[Any], usage: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    choices = [
        CompletionChoice.model_construct(text=t, index=i, logprobs=None, finish_reason=f)
        for i, (t, f) in enumerate(zip(texts, finishes, strict=False))
    ]
    record = Completion.model_construct(
        id="cmpl-1",
        object="text_completion",
        created=1770934479,
        model="gpt-3.5-turbo-instruct",
        choices=choices,
        usage=CompletionUsage.model_construct(**usage),
    ).model_dump(mode="json", exclude_unset=True, warnings=False)
    return {**record, **extra}


@settings(max_examples=400, deadline=None)
@given(
    st.lists(TEXT, max_size=3),
    st.lists(FINISH, min_size=3, max_size=3),
    st.fixed_dictionaries(
        {"completion_tokens": st.one_of(VALID, VALID, COUNT)},
        optional={"prompt_tokens": COUNT, "total_tokens": COUNT, "num_sources_used": COUNT},
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "system_fingerprint": st.one_of(st.none(), st.just("fp_1")),
            "object": st.sampled_from(["chat.completion", None]),
            "id": st.sampled_from(["", None, 7]),
            "created": st.one_of(st.none(), st.just(1770934479000), st.just("2024-01-01")),
            "kv_transfer_params": st.none(),
            "error": st.just({"message": "x"}),
        },
    ),
)
@example(["hi"], ["length", None, None], {"completion_tokens": 16, "prompt_tokens": 14}, {})
@example([""], ["stop", None, None], {"completion_tokens": 0}, {})  # an empty reply
@example([None, "x"], [None, "stop", None], {"completion_tokens": 3}, {})  # a later finish
def test_text_completions_near_the_shape_give_the_general_facts(
    texts: list[str | None], finishes: list[Any], usage: dict[str, Any], extra: dict[str, Any]
) -> None:
    # Built with the openai SDK's models: nulls, empty texts, think tags, escapes, counts out
    # of range or of the wrong type, xAI's usage key (another format), other objects, errors.
    record = _completion(texts, finishes, usage, extra)
    assert_same(orjson.dumps(record), "responses")


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["chat", "generate", "neither"]),
    TEXT,
    TEXT,
    st.fixed_dictionaries(
        {
            "eval_count": st.one_of(VALID, VALID, COUNT),
            "done": st.sampled_from([True, True, True, False, None]),
        },
        optional={
            "prompt_eval_count": st.one_of(VALID, COUNT),
            "done_reason": FINISH,
            "created_at": st.one_of(st.none(), st.just("2024-12-06T00:48:09.983619Z")),
            "context": st.just([1, 2, 3]),
            "total_duration": st.integers(0, 10**10),
            "id": st.just("x"),
            "error": st.just("boom"),
        },
    ),
)
@example("chat", "Hello!", None, {"eval_count": 298, "done": True, "prompt_eval_count": 26})
@example("chat", "<think>a</think>b", None, {"eval_count": 2, "done": True})  # a leak
@example("chat", "<think>a</think>b", "a", {"eval_count": 2, "done": True})  # no leak
@example("generate", "", None, {"eval_count": 2, "done": False})  # a stream's event
@example("chat", "hi", None, {"eval_count": 2, "done": True, "done_reason": ""})  # a finish ""
def test_ollama_replies_near_the_shape_give_the_general_facts(
    kind: str, content: str | None, thinking: str | None, top: dict[str, Any]
) -> None:
    # Built with the ollama SDK's models (its full dumps write nulls), then varied: done
    # false or null, counts of every kind, think tags with and without `thinking`, ids, errors.
    base = dict(model="llama3.2", created_at="2023-08-04T19:22:45.499127Z", done=True)
    if kind == "chat":
        message = Message(role="assistant", content=content, thinking=thinking)
        record = ChatResponse(**base, message=message).model_dump(mode="json")
    else:
        record = GenerateResponse(**base, response=content or "", thinking=thinking)
        record = record.model_dump(mode="json", exclude_none=kind == "neither")
    record.update(top)
    assert_same(orjson.dumps(record), "responses")


def test_an_unknown_key_leaves_the_shapes() -> None:
    # Every key is declared: a key neither the SDKs nor the real records hold is not skipped.
    line = _lines("ollama_generate_native")[0] if FILES else b""
    record = orjson.loads(line) if line else {"eval_count": 1, "done": True}
    record["surprise"] = 1
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(orjson.dumps(record), type=realshapes.Ollama)
