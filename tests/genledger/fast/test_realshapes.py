"""The shapes of genledger.fast.realshapes (and the keys real servers add to the older shapes)
give the general path's facts: on the real records they hold (../shared/realworld*/data) and on
records near them built with the providers' SDK models (openai's `Completion`, ollama's
`ChatResponse` / `GenerateResponse`)."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson
import pytest
from anthropic.types import (
    Message,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ollama import ChatResponse, GenerateResponse
from ollama import Message as OllamaMessage
from openai.types import Completion, CompletionChoice, CompletionUsage, ErrorObject
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.completion_usage import CompletionTokensDetails

from genledger.fast import apishapes, realshapes, shapes
from genledger.fast import lines as fastparse
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
        ("xai_rest", realshapes.XaiChat),
        ("xai_chat_reasoning", realshapes.XaiChat),
        ("vllm_openai_server", realshapes.TextCompletion),
        ("ollama_chat_native", realshapes.Ollama),
        ("ollama_generate_native", realshapes.Ollama),
        ("sglang_generate", shapes.SGLang),  # meta_info's routed_experts, cache_miss_count
        ("groq_chat", shapes.Chat),  # x_groq
        ("anthropic_messages", apishapes.Anthropic),  # tool uses, tool results, compactions
        ("vertex_claude_messages", apishapes.Anthropic),
        ("dashscope_native", realshapes.DashScope),
        ("bedrock_batch_titan", realshapes.BedrockBatchTitan),  # its line that succeeded
        ("bedrock_batch_titan", realshapes.BedrockBatchError),  # and its line that failed
        ("provider_error_bodies", realshapes.ErrorBody),
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
        failures = (realshapes.ErrorBody, realshapes.BedrockBatchError)
        if facts[0].failed_request != (shape in failures):
            continue
        bare = line.startswith(b'{"message"')  # the `message` rule: the general path's
        if bare or facts[0].format not in _named(shape):
            continue
        assert typed.decode(line, NOTHING_PLAIN) == facts, line[:200]
        assert typed.shapes[typed.last] is shape
        held += 1
    assert held


def _named(shape: type[Any]) -> set[str]:
    """The format names a shape's records take: its formats', or its batch's."""
    return (
        {"bedrock_batch"}
        if shape is realshapes.BedrockBatchTitan
        else {f for f, _ in shape.FORMATS}
    )


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
        message = OllamaMessage(role="assistant", content=content, thinking=thinking)
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


INPUT = st.one_of(
    st.none(),
    st.just({}),
    st.just({"location": "Florence,Italy"}),
    st.just({"text": ""}),  # shows nothing (a part with an empty text)
    st.just({"thought": True, "q": 1}),
    st.just({"b": [1, {"z": None}], "a": "é"}),
    st.just([]),
    st.just("raw"),
)


def _block(kind: str, text: str | None, tool_input: Any) -> dict[str, Any]:
    if kind == "text":
        return TextBlock.model_construct(type="text", text=text, citations=None).model_dump(
            mode="json", warnings=False
        )
    if kind == "thinking":
        block = ThinkingBlock.model_construct(type="thinking", thinking=text, signature="s")
        return block.model_dump(mode="json", warnings=False)
    maker = ToolUseBlock if kind == "tool_use" else ServerToolUseBlock
    block = maker.model_construct(
        type=kind, id="toolu_1", name="weather", input=tool_input, caller={"type": "direct"}
    )
    return block.model_dump(mode="json", warnings=False, exclude_unset=True)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["text", "thinking", "tool_use", "server_tool_use"]), TEXT, INPUT
        ),
        max_size=4,
    ),
    st.one_of(VALID, COUNT),
    st.sampled_from(["message", "batch", "bedrock"]),
)
@example([("text", "I'll check.", None), ("tool_use", None, {"location": "F"})], 68, "message")
@example([("tool_use", None, {})], 5, "message")  # an empty input still shows a call
@example([("tool_use", None, None)], 5, "message")  # no input: nothing shown
def test_anthropic_tool_uses_near_the_shape_give_the_general_facts(
    blocks: list[tuple[str, str | None, Any]], output: Any, where: str
) -> None:
    # Messages built with the anthropic SDK's blocks (text, thinking, tool use, server tool
    # use with `caller`), as a message, a Message Batch result and a Bedrock batch line.
    content = [_block(kind, text, tool_input) for kind, text, tool_input in blocks]
    usage = Usage.model_construct(input_tokens=16, output_tokens=output)
    message = Message.model_construct(
        id="msg_1", type="message", role="assistant", model="claude-3-7-sonnet-20250219",
        content=[], stop_reason="tool_use", stop_sequence=None, usage=usage,
    ).model_dump(mode="json", warnings=False, exclude_unset=True)  # fmt: skip
    message["content"] = content
    record: dict[str, Any] = message
    if where == "batch":
        record = {"custom_id": "r1", "result": {"type": "succeeded", "message": message}}
    elif where == "bedrock":
        record = {"recordId": "r1", "modelInput": {}, "modelOutput": message}
    assert_same(orjson.dumps(record), "responses")


CONTENT = st.one_of(
    TEXT,
    st.lists(st.fixed_dictionaries({"text": TEXT}), max_size=2),
    st.just([{"image": "x.png"}]),
    st.just(7),
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(FINISH, st.one_of(st.none(), CONTENT)), max_size=3),
    st.one_of(st.none(), CONTENT),
    FINISH,
    st.fixed_dictionaries(
        {"output_tokens": st.one_of(VALID, VALID, COUNT)},
        optional={
            "input_tokens": st.one_of(VALID, COUNT),
            "total_tokens": COUNT,
            "image_tokens": VALID,
            "prompt_tokens_details": st.fixed_dictionaries({"cached_tokens": COUNT}),
            "output_tokens_details": st.fixed_dictionaries({"reasoning_tokens": COUNT}),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "status_code": st.sampled_from([200, 200, 400, None, "200"]),
            "request_id": st.sampled_from(["", "1e1ba78d", None, 5]),
            "code": st.sampled_from(["", "InvalidParameter"]),
            "model": st.sampled_from(["qwen-plus", ""]),
            "choices_null": st.just(True),
        },
    ),
)
@example([("stop", "我是通义千问。")], None, None, {"output_tokens": 17, "input_tokens": 23}, {})
@example([("stop", [{"text": "A cat."}])], None, None, {"output_tokens": 16}, {})
@example([], "a text reply", "stop", {"output_tokens": 3}, {"choices_null": True})
def test_dashscope_replies_near_the_shape_give_the_general_facts(
    choices: list[tuple[Any, Any]],
    text: Any,
    finish: Any,
    usage: dict[str, Any],
    top: dict[str, Any],
) -> None:
    # The dashscope SDK's GenerationResponse as its to-dict writes it (the SDK is not a test
    # dependency: the keys are its documented ones and the real records'): text and multimodal
    # contents, a reply in `output.text`, finishes at both places, failed and odd status codes,
    # request ids of every kind, counts out of range.
    output: dict[str, Any] = {"text": text, "finish_reason": finish}
    if top.pop("choices_null", False):
        output["choices"] = None
    else:
        output["choices"] = [
            {"finish_reason": f, "message": {"role": "assistant", "content": c}} for f, c in choices
        ]
    record = {"status_code": 200, "request_id": "r1", "code": "", "message": ""}
    record.update(top)
    if record["request_id"] is None:
        del record["request_id"]
    record.update(output=output, usage=usage)
    assert_same(orjson.dumps(record), "responses")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"tokenCount": st.one_of(VALID, VALID, COUNT)},
            optional={"outputText": TEXT, "completionReason": FINISH, "index": st.just(0)},
        ),
        max_size=2,
    ),
    st.one_of(VALID, COUNT),
    st.sampled_from(["body", "batch", "batch with error", "batch without id"]),
)
@example([{"tokenCount": 3, "outputText": "blue\n", "completionReason": "FINISH"}], 8, "batch")
@example([{"tokenCount": 3, "outputText": ""}], 8, "body")  # an empty reply
def test_titan_bodies_near_the_shape_give_the_general_facts(
    results: list[dict[str, Any]], prompt: Any, where: str
) -> None:
    # Amazon Titan Text's InvokeModel body (its documented keys, as the real batch line holds
    # them), alone and as a Bedrock batch line's modelOutput: several results, odd counts,
    # texts with think tags, an error beside the output, a line without its record id.
    body = {"inputTextTokenCount": prompt, "results": results}
    record: dict[str, Any] = body
    if where != "body":
        record = {"recordId": "3223593EFGH", "modelInput": {"inputText": "Roses"}}
        record["modelOutput"] = body
        if where == "batch with error":
            record["error"] = {"errorCode": 400, "errorMessage": "bad request"}
        elif where == "batch without id":
            del record["recordId"]
    assert_same(orjson.dumps(record), "responses")


LABEL = st.one_of(
    st.none(),
    st.sampled_from(["model_not_found", "invalid_request_error", "", "a ?b", "x" * 70]),
    st.sampled_from([404, 429, 0, -1, 2**63, True, 1.5]),
    st.just({"nested": 1}),
)
MESSAGE = st.one_of(
    st.sampled_from(["The model `gpt-5.2-proo` does not exist.", "", "y" * 260, "é ?"]),
    st.none(),
    st.just({"message": "inner"}),
    st.just(7),
)


@settings(max_examples=500, deadline=None)
@given(
    LABEL,
    LABEL,
    MESSAGE,
    st.fixed_dictionaries(
        {},
        optional={
            "param": st.one_of(st.none(), st.just("model")),
            "errorCode": st.just(400),
            "errorMessage": st.just("bad request"),
            "status": st.just("NOT_FOUND"),
            "failed_generation": st.just("maybe"),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["error", "message_start", None]),
            "request_id": st.sampled_from(["req_011", None]),
            "id": st.sampled_from(["x", ""]),
            "message": st.just("top"),
            "usage": st.just({"completion_tokens": 3}),
            "error_null": st.just(True),
        },
    ),
)
@example("model_not_found", None, "The model does not exist.", {}, {})
@example(None, "not_found_error", "model: x", {}, {"type": "error", "request_id": "req_1"})
@example(None, None, "no label", {}, {})  # `error` alone: its " ?" dropped
@example("a ?b", None, "m", {}, {})  # " ?" inside a code is dropped as well
def test_error_bodies_near_the_shape_give_the_general_facts(
    code: Any, kind: Any, message: Any, more: dict[str, Any], top: dict[str, Any]
) -> None:
    # openai's ErrorObject (and Anthropic's, Gemini's, Groq's error bodies, as the real ones
    # hold them): codes and types of every JSON type, long and empty messages, messages in
    # other places, stream events' types, ids and counts beside the error.
    error = ErrorObject.model_construct(code=code, message=message, type=kind)
    record: dict[str, Any] = {"error": {**error.model_dump(warnings=False), **more}}
    if top.pop("error_null", False):
        record["error"] = None
    record.update(top)
    assert_same(orjson.dumps(record), "responses")


@settings(max_examples=400, deadline=None)
@given(
    LABEL,
    MESSAGE,
    st.fixed_dictionaries(
        {},
        optional={
            "recordId": st.sampled_from(["", 7, None]),
            "modelOutput": st.sampled_from([None, {"inputTextTokenCount": 1}]),
            "modelInput": st.just({"inputText": "Hello world"}),
            "error_message": st.just({"message": "inner"}),
        },
    ),
)
@example(400, "bad request", {})
@example(None, "no code", {})  # `error` alone: its " ?" dropped
def test_bedrock_batch_failures_near_the_shape_give_the_general_facts(
    code: Any, message: Any, top: dict[str, Any]
) -> None:
    # A Bedrock batch output line that failed (its documented `error` object, as the real line
    # holds it): codes of every JSON type, messages missing, empty or elsewhere, a modelOutput
    # beside the error, record ids of every kind.
    error: dict[str, Any] = {"errorCode": code, "errorMessage": message}
    if "error_message" in top:
        error = {"errorCode": code, "message": top.pop("error_message")["message"]}
    record = {"recordId": "1223213ABCD", "error": error, **top}
    assert_same(orjson.dumps(record), "responses")


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(VALID, VALID, COUNT),
    st.one_of(st.none(), VALID, COUNT, st.just("no details")),
    st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": st.one_of(VALID, COUNT),
            "total_tokens": st.one_of(VALID, COUNT),
            "reasoning_tokens": VALID,  # SGLang's flat key: no xai_chat count
            "cost_in_usd_ticks": st.just(2488500),
        },
    ),
    st.sampled_from([0, None, "x"]),
    st.one_of(TEXT, st.just("The answer is 4.")),
)
@example(76, 320, {"prompt_tokens": 41, "total_tokens": 117}, 0, "Hi!")
@example(2**63 - 1, 5, {}, 0, "overflow")  # a sum beyond int64
@example(9, "no details", {"reasoning_tokens": 4}, 0, "flat")  # SGLang's key: not xAI's
def test_xai_chat_completions_near_the_shape_give_the_general_facts(
    completion: Any, reasoning: Any, more: dict[str, Any], sources: Any, content: Any
) -> None:
    # Built with the openai SDK's chat models, then xAI's usage keys: the sources count (null
    # too), reasoning beside the completion (absent, odd), its cost in ticks.
    message = ChatCompletionMessage.model_construct(role="assistant", content=content)
    choice = Choice.model_construct(index=0, message=message, finish_reason="stop")
    usage = CompletionUsage.model_construct(completion_tokens=completion)
    if reasoning != "no details":
        details = CompletionTokensDetails.model_construct(reasoning_tokens=reasoning)
        usage = CompletionUsage.model_construct(
            completion_tokens=completion, completion_tokens_details=details
        )
    record = ChatCompletion.model_construct(
        id="chatcmpl-1", object="chat.completion", created=1, model="grok-4", choices=[choice],
        usage=usage,
    ).model_dump(mode="json", exclude_unset=True, warnings=False)  # fmt: skip
    record["usage"].update(more, num_sources_used=sources)
    assert_same(orjson.dumps(record), "responses")
