"""This round's typed records (genledger.fast.realshapes `GeminiOpenAI` and `SGLangEnvelope`,
the chat shape's think leaks, the typed tier's shape before the last) give the general path's
facts: on every real record they hold (../shared/realworld*/data) and on records near them
built with the openai SDK's chat models (SGLang has none: its recorded record, varied); a bug
planted in each is caught."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.responses import (
    Response,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)

from genledger.config import Switches
from genledger.fast import apishapes, realshapes, shapes
from genledger.fast import lines as fastparse
from genledger.fast.rawtext import NOTHING_PLAIN
from genledger.parse.declarations import BUILT_IN_ONLY
from genledger.parse.line import facts_of_line
from genledger.parse.schema import RESPONSES

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
LEAK = RESPONSES.fact("think_leak")


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
    ("sglang_wrapped_raw", realshapes.SGLangEnvelope),
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
                leaks += any(f[LEAK] for f in facts)
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
    for line in (good, bad) * 2:
        assert typed.decode(line, NOTHING_PLAIN) == facts_of_line(line, "responses")
    found = len(tried)
    for line in (good, bad) * 3:
        assert typed.decode(line, NOTHING_PLAIN) == facts_of_line(line, "responses")
    # once both shapes were found, each line costs the last shape's decode and the one before
    assert len(tried) - found == 12 and len(set(tried[found:])) == 2


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
    settled = shapes._Usage.settled

    def wrong(self: Any, completion: Any, reasoning: Any) -> Any:
        return settled(self, completion, None)  # the thoughts left out of the facts

    monkeypatch.setattr(shapes._Usage, "settled", wrong)
    assert _held("gemini_openai_compat", realshapes.GeminiOpenAI)[1]


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_a_bug_planted_in_the_think_leak_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    check = shapes._Message.check
    monkeypatch.setattr(shapes._Message, "check", lambda self, plain: check(self, plain) and 0)
    assert _held("llamacpp_openai_compat", shapes.Chat)[1]


SGLANG_RAW: dict[str, Any] = {
    "text": "\uff1f\u6211",  # a full-width question mark, CJK
    "output_ids": [3837, 35946, 85106],
    "meta_info": {"id": "a1", "finish_reason": {"type": "length", "length": 64},
                  "prompt_tokens": 2, "completion_tokens": 64, "cached_tokens": 1},
}  # fmt: skip
SAMPLING = st.one_of(
    st.none(),
    st.just({}),
    st.just({"temperature": 0.0, "max_new_tokens": 64}),
    st.just({"temperature": 1, "stop": ["\n"], "top_k": -1, "ignore_eos": False}),
    st.just({"temperature": {"a": 1}}),  # an object: the general path
    st.just({"usage": {"completion_tokens": 3}}),  # a second record: no envelope reading
    st.just([1]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries(
        {"raw": st.just(SGLANG_RAW)},
        optional={
            "phase": st.one_of(st.none(), st.just("generate_result"), st.just(3)),
            "prompt": st.one_of(TEXT, st.just(["a", "b"]), st.just({"text": "x"})),
            "text": TEXT,
            "sampling_params": SAMPLING,
            "id": st.sampled_from(["outer", "", None]),  # the envelope's id wins
            "usage": st.just({"completion_tokens": 5}),  # then the envelope is a record
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "completion_tokens": COUNT,
            "finish_reason": st.sampled_from([None, "stop", {"type": "abort", "message": "x"}]),
            "id": st.sampled_from(["", None, 7]),
        },
    ),
    st.sampled_from([None, "", "<think>x</think>", 5]),
)
@example({"raw": SGLANG_RAW, "phase": "generate_result", "prompt": "你是谁"}, {}, None)
def test_sglang_envelopes_near_the_shape_give_the_general_facts(
    envelope: dict[str, Any], meta: dict[str, Any], text: Any
) -> None:
    # A pipeline's envelope around an SGLang /generate record (no SDK model: the recorded
    # record, varied): other keys, prompts and sampling parameters that are objects or
    # records, the record's counts, finish and id, its text.
    raw = {**SGLANG_RAW, "meta_info": {**SGLANG_RAW["meta_info"], **meta}}
    if text != 5:
        raw["text"] = text
    assert_same(orjson.dumps({**envelope, "raw": raw}), "responses")


class _LooseEnvelope(realshapes.SGLangEnvelope):
    """The envelope's shape with a bug planted: its sampling parameters any JSON value."""

    sampling_params: msgspec.Raw = msgspec.Raw()  # type: ignore[assignment]


def test_a_bug_planted_in_the_envelope_is_caught() -> None:
    # A second record under the envelope: the general path reads no envelope, the loose
    # shape reads the first record.
    line = orjson.dumps({"sampling_params": {"usage": {"completion_tokens": 3}}, "raw": SGLANG_RAW})
    loose = fastparse._Typed((_LooseEnvelope,))
    assert loose.decode(line, NOTHING_PLAIN) != facts_of_line(line, "responses")
    strict = fastparse._Typed((realshapes.SGLangEnvelope,))
    assert strict.decode(line, NOTHING_PLAIN) is None


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
@pytest.mark.parametrize("name", ["bedrock_batch_titan", "vllm_openai_server"])
def test_the_run_reader_reads_a_file_alternating_two_shapes(name: str) -> None:
    # Once the tiers have read both shapes, the run reader reads every line of the file, in
    # the last shape or the one before it, with the general facts.
    lines = _lines(name) * 2
    decoder = fastparse.FastDecoder("responses", BUILT_IN_ONLY, Switches())
    for line in lines[:8]:
        decoder.facts(line)
    run = decoder.run_reader(NOTHING_PLAIN)
    assert run is not None
    read = [run(line) for line in lines]
    assert all(facts is not None for facts in read)
    assert read == [facts_of_line(line, "responses")[0] for line in lines]


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_real_bare_error_bodies_take_their_shape() -> None:
    bare = [line for line in _lines("provider_error_bodies") if line.startswith(b'{"message"')]
    assert bare and _held("provider_error_bodies", realshapes.BareError) == (len(bare), 0)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(TEXT, st.just("m" * 700), st.integers(0, 3), st.just({"message": "x"})),
    st.fixed_dictionaries(
        {},
        optional={
            "code": st.one_of(
                st.none(), st.integers(-1, 500), st.just("x" * 80), st.just(True), st.just(1.5)
            ),
            "type": st.sampled_from(["error", "x", None]),
            "id": st.just("r"),
            "usage": st.just({"completion_tokens": 1}),
            "error": st.just({"message": "inner"}),
            "request_id": st.just("q"),
        },
    ),
)
@example("The provided model identifier is invalid.", {})
@example("m" * 700, {"code": 404})  # a message cut, a code as a label
def test_bare_error_bodies_near_the_shape_give_the_general_facts(
    message: Any, more: dict[str, Any]
) -> None:
    # A bare message with a code or without, of any length and kind, and the keys that make
    # it another rule's record or none.
    assert_same(orjson.dumps({"message": message, **more}), "responses")


class _UncutBare(realshapes.BareError):
    """The bare error's shape with a bug planted: its message not cut."""

    def facts(self, plain: int) -> Any:
        return realshapes._ERROR(f"error: {self.message}", *realshapes.settle(None, None, None))


def test_a_bug_planted_in_the_bare_error_is_caught() -> None:
    line = orjson.dumps({"message": "m" * 700})
    planted = fastparse._Typed((_UncutBare,)).decode(line, NOTHING_PLAIN)
    assert planted is not None and planted != facts_of_line(line, "responses")


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
@pytest.mark.parametrize(
    ("name", "shape"),
    [("openai_batch_responses", apishapes.BatchResponses), ("xai_responses", apishapes.Responses)],
)
def test_real_responses_lines_take_their_shapes(name: str, shape: type[Any]) -> None:
    held, wrong = _held(name, shape)
    assert held == len(_lines(name)) and not wrong


def _response(text: Any, status: Any, usage: dict[str, Any]) -> dict[str, Any]:
    part = ResponseOutputText.model_construct(type="output_text", text=text, annotations=[])
    message = ResponseOutputMessage.model_construct(
        id="msg_1", type="message", role="assistant", status="completed", content=[part]
    )
    return Response.model_construct(
        id="resp_1", object="response", created_at=1765322923, model="gpt-4o-mini",
        status=status, output=[message], usage=ResponseUsage.model_construct(**usage),
        error=None, incomplete_details=None,
    ).model_dump(mode="json", exclude_unset=True, warnings=False)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    TEXT,
    st.sampled_from(["completed", "incomplete", "failed", None]),
    st.fixed_dictionaries(
        {"output_tokens": st.one_of(VALID, VALID, COUNT)},
        optional={
            "input_tokens": COUNT,
            "total_tokens": COUNT,
            "input_tokens_details": st.just({"cached_tokens": 2}),
            "output_tokens_details": st.just({"reasoning_tokens": 3}),
            "num_sources_used": st.sampled_from([0, None]),  # xAI's
            "num_server_side_tools_used": st.just(1),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "status_code": st.sampled_from([200, 400, None, "200"]),
            "request_id": st.sampled_from(["e668", None]),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "custom_id": st.sampled_from(["req-1", "", None]),
            "id": st.sampled_from(["batch_req_1", "", None]),
            "error": st.one_of(st.none(), st.just({"code": "x", "message": "m"})),
        },
    ),
)
@example("Hi", "completed", {"output_tokens": 9, "input_tokens": 4}, {"status_code": 200}, {})
def test_batch_responses_lines_near_the_shape_give_the_general_facts(
    text: Any,
    status: Any,
    usage: dict[str, Any],
    output: dict[str, Any],
    line: dict[str, Any],
) -> None:
    # A Batch output line around a Responses object built with the openai SDK's models:
    # statuses that fail, counts of every kind, xAI's usage keys, ids and errors of the line.
    body = _response(text, status, usage)
    record = {**line, "response": {**output, "body": body}}
    assert_same(orjson.dumps(record), "responses")
    assert_same(orjson.dumps(body), "responses")


class _BatchIdFirst(apishapes.BatchResponses):
    """The batch line's shape with a bug planted: its `id` before its `custom_id`."""

    def facts(self, plain: bool) -> Any:
        facts: Any = self.response.body.facts(plain)
        return facts._replace(record_id=self.id or self.custom_id or None, format="openai_batch")


@pytest.mark.skipif(not FILES, reason="no real recorded responses")
def test_a_bug_planted_in_the_batch_responses_is_caught() -> None:
    typed = fastparse._Typed((_BatchIdFirst,))
    lines = _lines("openai_batch_responses")
    wrong = [typed.decode(ln, NOTHING_PLAIN) != facts_of_line(ln, "responses") for ln in lines]
    assert any(wrong)
