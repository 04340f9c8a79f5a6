"""Response records as real pipelines write them: built with each client library's own models and
dumped the ways pipelines dump them; SGLang and vLLM records follow their source.

Each builder returns a `Dataset`: the JSONL lines and the truth docs/formats.md gives for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

Dump = Callable[[Any], bytes]


@dataclass
class Truth:
    """What the stats JSON must say about a dataset (docs/formats.md and docs/stats-json.md)."""

    n_done: int
    total_comp: int
    total_prompt: int
    total_reasoning: int | None = None
    total_cached_prompt: int | None = None
    total_cache_write: int | None = None  # Anthropic's cache_creation_input_tokens
    n_samples: int | None = None  # None: n_done (one completion per record)
    stream_chunks: int = 0  # every event of a stream, its last included (DESIGN v4 §13a)
    counters: dict[str, int] = field(default_factory=dict)  # quality counters that are not 0
    formats: dict[str, int] = field(default_factory=dict)


@dataclass
class Dataset:
    """JSONL lines and their truth."""

    lines: list[bytes]
    truth: Truth


def pydantic_dumps(**options: Any) -> Dump:
    """`model.model_dump_json(**options)`, the way pipelines write SDK models."""
    return lambda model: model.model_dump_json(**options).encode()


PYDANTIC_DUMPS: dict[str, Dump] = {
    "model_dump_json": pydantic_dumps(),
    "exclude_none": pydantic_dumps(exclude_none=True),
    "exclude_unset": pydantic_dumps(exclude_unset=True),
    "by_alias": pydantic_dumps(by_alias=True),
}


# --- OpenAI (openai-python types; Mistral and huggingface_hub share the chat shape) ---------


def openai_chat(
    rid: str,
    prompt: int,
    completion: int,
    content: str | None = "4",
    reasoning: int | None = None,
    cached: int | None = None,
    n: int = 1,
    finish: str = "stop",
    reasoning_content: str | None = "",
) -> Any:
    """A `ChatCompletion` (openai-python `types/chat/chat_completion.py`)."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.completion_usage import (
        CompletionTokensDetails,
        CompletionUsage,
        PromptTokensDetails,
    )

    extra = {} if reasoning_content == "" else {"reasoning_content": reasoning_content}
    usage = CompletionUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        completion_tokens_details=None
        if reasoning is None
        else CompletionTokensDetails(reasoning_tokens=reasoning),
        prompt_tokens_details=None if cached is None else PromptTokensDetails(cached_tokens=cached),
    )
    choices = [
        Choice(
            index=i,
            message=ChatCompletionMessage(role="assistant", content=content, **extra),
            finish_reason=finish,  # type: ignore[arg-type]
        )
        for i in range(n)
    ]
    return ChatCompletion(
        id=rid,
        object="chat.completion",
        created=1_764_000_000,
        model="o4-mini",
        choices=choices,
        usage=usage,
    )


def openai_chat_dataset(dump: Dump) -> Dataset:
    """Plain, reasoning with cached prompt, n=4 samples, a think-tag leak, an exhausted budget."""
    records = [
        openai_chat("c1", 10, 20),
        openai_chat("c2", 100, 900, reasoning=700, cached=64),
        openai_chat("c3", 30, 400, n=4, reasoning=0, cached=0),
        openai_chat("c4", 12, 50, content="<think>hm</think>4", reasoning_content=None),
        openai_chat("c5", 40, 2048, content="", reasoning=2048, finish="length"),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=5,
            total_comp=20 + 900 + 400 + 50 + 2048,
            total_prompt=10 + 100 + 30 + 12 + 40,
            total_reasoning=700 + 0 + 2048,
            total_cached_prompt=64,
            n_samples=1 + 1 + 4 + 1 + 1,
            counters={"think_tag_leaks": 1, "empty_outputs": 1},
            formats={"openai_chat": 5},
        ),
    )


def openai_stream_dataset(dump: Dump) -> Dataset:
    """Chunks appended one per line (`stream_options.include_usage`): fragments, then usage."""
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta
    from openai.types.completion_usage import CompletionUsage

    lines = []
    for request in ("s1", "s2"):
        for i, piece in enumerate(("Par", "is", ".")):
            delta = ChoiceDelta(role="assistant" if i == 0 else None, content=piece)
            chunk = ChatCompletionChunk(
                id=request,
                object="chat.completion.chunk",
                created=1,
                model="gpt-4.1",
                choices=[Choice(index=0, delta=delta, finish_reason="stop" if i == 2 else None)],
            )
            lines.append(dump(chunk))
        usage = CompletionUsage(prompt_tokens=9, completion_tokens=3, total_tokens=12)
        last = ChatCompletionChunk(
            id=request,
            object="chat.completion.chunk",
            created=1,
            model="gpt-4.1",
            choices=[],
            usage=usage,
        )
        lines.append(dump(last))
    return Dataset(
        lines,
        Truth(n_done=2, total_comp=6, total_prompt=18, stream_chunks=8, formats={"openai_chat": 2}),
    )


def openai_response(
    rid: str,
    prompt: int,
    completion: int,
    reasoning: int,
    cached: int,
    text: str | None = "4",
    failed: bool = False,
) -> Any:
    """A Responses API `Response` (openai-python `types/responses/response.py`)."""
    from openai.types.responses import (
        Response,
        ResponseError,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
        ResponseUsage,
    )
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    output: list[Any] = [ResponseReasoningItem(id=f"rs_{rid}", type="reasoning", summary=[])]
    if text is not None:
        part = ResponseOutputText(type="output_text", text=text, annotations=[])
        output.append(
            ResponseOutputMessage(
                id=f"msg_{rid}",
                type="message",
                role="assistant",
                status="completed",
                content=[part],
            )
        )
    return Response(
        id=rid,
        object="response",
        created_at=1_764_000_000,
        model="o3",
        output=output,
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        status="failed" if failed else "completed",
        error=ResponseError(code="server_error", message="The model failed") if failed else None,
        usage=ResponseUsage(
            input_tokens=prompt,
            input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
            output_tokens=completion,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
            total_tokens=prompt + completion,
        ),
    )


def openai_responses_dataset(dump: Dump) -> Dataset:
    """Answers, an exhausted reasoning budget (no message), a failed response."""
    records = [
        openai_response("r1", 812, 1533, 1280, 512),
        openai_response("r2", 100, 4000, 4000, 0, text=None),
        openai_response("r3", 50, 0, 0, 0, failed=True),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=3,
            total_comp=1533 + 4000,
            total_prompt=812 + 100 + 50,
            total_reasoning=1280 + 4000,
            total_cached_prompt=512,
            total_cache_write=0,  # `input_tokens_details.cache_write_tokens`, reported as 0
            n_samples=2,
            counters={"empty_outputs": 1, "failed_requests": 1},
            formats={"openai_responses": 3},
        ),
    )


def openai_batch_dataset(dump: Dump) -> Dataset:
    """Batch output lines (the Batch guide's shape) around SDK bodies: chat and `/v1/responses`,
    a 400 and an expired request."""

    def line(custom_id: str, body: Any, status: int = 200, error: Any = None) -> bytes:
        response = None if body is None else {"status_code": status, "request_id": "req_1"}
        if response is not None:
            response["body"] = json.loads(dump(body)) if hasattr(body, "model_dump") else body
        return orjson.dumps(
            {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": response,
             "error": error}
        )  # fmt: skip

    error_body = {"error": {"message": "Invalid 'messages'", "type": "invalid_request_error"}}
    lines = [
        line("b1", openai_chat("c1", 22, 2)),
        line("b2", openai_response("r1", 30, 300, 200, 16)),
        line("b3", error_body, status=400),
        line("b4", None, error={"code": "batch_expired", "message": "expired"}),
    ]
    return Dataset(
        lines,
        Truth(
            n_done=4,
            total_comp=302,
            total_prompt=52,
            total_reasoning=200,
            total_cached_prompt=16,
            total_cache_write=0,  # the `/v1/responses` body reports it, as 0
            n_samples=2,
            counters={"failed_requests": 2},
            formats={"openai_batch": 4},
        ),
    )


# --- Anthropic ------------------------------------------------------------------------------


def anthropic_message(
    rid: str, prompt: int, completion: int, thinking: int, cache_read: int, text: bool = True
) -> Any:
    """A `Message` (anthropic-sdk-python `types/message.py`) with a thinking block."""
    from anthropic.types import Message, TextBlock, ThinkingBlock, Usage
    from anthropic.types.output_tokens_details import OutputTokensDetails

    content: list[Any] = [ThinkingBlock(type="thinking", thinking="...", signature="Eq1")]
    if text:
        content.append(TextBlock(type="text", text="4"))
    return Message(
        id=rid,
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=content,
        stop_reason="end_turn" if text else "max_tokens",
        stop_sequence=None,
        usage=Usage(
            input_tokens=prompt,
            cache_creation_input_tokens=8,
            cache_read_input_tokens=cache_read,
            output_tokens=completion,
            output_tokens_details=OutputTokensDetails(thinking_tokens=thinking),
        ),
    )


def anthropic_dataset(dump: Dump) -> Dataset:
    """Messages, one whose thinking used the whole budget."""
    records = [
        anthropic_message("m1", 300, 497, 328, 2048),
        anthropic_message("m2", 20, 1024, 1024, 0, text=False),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=2,
            total_comp=497 + 1024,
            total_prompt=(300 + 8 + 2048) + (20 + 8 + 0),
            total_reasoning=328 + 1024,
            total_cached_prompt=2048,
            total_cache_write=8 + 8,
            counters={"empty_outputs": 1},
            formats={"anthropic_message": 2},
        ),
    )


def anthropic_batch_dataset(dump: Dump) -> Dataset:
    """Message Batch results: succeeded, errored, canceled, expired."""
    from anthropic.types import ErrorResponse, InvalidRequestError
    from anthropic.types.messages import (
        MessageBatchCanceledResult,
        MessageBatchErroredResult,
        MessageBatchExpiredResult,
        MessageBatchIndividualResponse,
        MessageBatchSucceededResult,
    )

    error = ErrorResponse(
        type="error",
        error=InvalidRequestError(type="invalid_request_error", message="prompt is too long"),
    )
    results = [
        MessageBatchSucceededResult(
            type="succeeded", message=anthropic_message("m1", 10, 40, 5, 0)
        ),
        MessageBatchErroredResult(type="errored", error=error),
        MessageBatchCanceledResult(type="canceled"),
        MessageBatchExpiredResult(type="expired"),
    ]
    records = [
        MessageBatchIndividualResponse(custom_id=f"req-{i}", result=result)
        for i, result in enumerate(results)
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=4,
            total_comp=40,
            total_prompt=18,
            total_reasoning=5,
            total_cached_prompt=0,
            total_cache_write=8,
            n_samples=1,
            counters={"failed_requests": 3},
            formats={"anthropic_batch": 4},
        ),
    )


# --- Gemini (google-genai) ------------------------------------------------------------------


def gemini_response(
    rid: str, prompt: int, candidates: int | None, thoughts: int, cached: int, answer: bool = True
) -> Any:
    """A `GenerateContentResponse` with a thought part (google-genai `types.py`)."""
    from google.genai import types

    parts = [types.Part(text="let me think", thought=True)]
    if answer:
        parts.append(types.Part(text="4"))
    return types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(role="model", parts=parts),
                finish_reason=types.FinishReason.STOP if answer else types.FinishReason.MAX_TOKENS,
                index=0,
            )
        ],
        model_version="gemini-2.5-pro",
        response_id=rid,
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt,
            cached_content_token_count=cached,
            candidates_token_count=candidates,
            thoughts_token_count=thoughts,
            total_token_count=prompt + (candidates or 0) + thoughts,
        ),
    )


def gemini_blocked() -> Any:
    """A prompt blocked by safety: no candidates, a block reason."""
    from google.genai import types

    return types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(
            block_reason=types.BlockedReason.SAFETY
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=12, total_token_count=12
        ),
    )


GEMINI_DUMPS: dict[str, Dump] = {
    **PYDANTIC_DUMPS,
    "to_json_dict": lambda model: orjson.dumps(model.to_json_dict()),
}


def gemini_dataset(dump: Dump) -> Dataset:
    """Answers with thoughts, a budget spent on thoughts alone, a blocked prompt."""
    records = [
        gemini_response("g1", 2472, 2353, 4507, 1024),
        gemini_response("g2", 100, None, 8192, 0, answer=False),
        gemini_blocked(),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=3,
            total_comp=2353 + 4507 + 8192,
            total_prompt=2472 + 100 + 12,
            total_reasoning=4507 + 8192,
            total_cached_prompt=1024,
            n_samples=2,
            counters={"empty_outputs": 1, "failed_requests": 1},
            formats={"gemini": 3},
        ),
    )


def gemini_batch_dataset(dump: Dump) -> Dataset:
    """Batch output lines `{key, response}` and `{key, error}`."""
    from google.genai import types

    error = types.JobError(code=3, message="Invalid request")
    answered = gemini_response("", 5, 7, 3, 0)
    lines = [
        orjson.dumps({"key": "k-1", "response": orjson.loads(dump(answered))}),
        orjson.dumps({"key": "k-2", "error": error.to_json_dict()}),
    ]
    return Dataset(
        lines,
        Truth(
            n_done=2,
            total_comp=10,
            total_prompt=5,
            total_reasoning=3,
            total_cached_prompt=0,
            n_samples=1,
            counters={"failed_requests": 1},
            formats={"gemini_batch": 2},
        ),
    )


# --- Cohere, Mistral, huggingface_hub ---------------------------------------------------------


def cohere_dataset(dump: Dump) -> Dataset:
    """Cohere v2 chat responses: counts typed as floats by the SDK; `usage.cached_tokens`."""
    import cohere

    def response(rid: str, prompt: int, completion: int, cached: int | None = None) -> Any:
        return cohere.V2ChatResponse(
            id=rid,
            finish_reason="COMPLETE",
            message=cohere.AssistantMessageResponse(
                role="assistant",
                content=[cohere.TextAssistantMessageResponseContentItem(type="text", text="4")],
            ),
            usage=cohere.Usage(
                billed_units=cohere.UsageBilledUnits(input_tokens=prompt, output_tokens=completion),
                tokens=cohere.UsageTokens(input_tokens=prompt + 7, output_tokens=completion),
                cached_tokens=cached,  # a part of the input tokens
            ),
        )

    records = [
        response("co-1", 1449, 2295),
        response("co-2", 10, 47),
        response("co-3", 2928, 4, 2921),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=3,
            total_comp=2295 + 47 + 4,
            total_prompt=1456 + 17 + 2935,
            total_cached_prompt=2921,
            formats={"cohere_chat": 3},
        ),
    )


def mistral_dataset(dump: Dump) -> Dataset:
    """Mistral chat completions (OpenAI's shape)."""
    from mistralai.client import models

    def response(rid: str, prompt: int, completion: int) -> Any:
        return models.ChatCompletionResponse(
            id=rid,
            object="chat.completion",
            model="mistral-large-latest",
            created=1,
            usage=models.UsageInfo(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            ),
            choices=[
                models.ChatCompletionChoice(
                    index=0, message=models.AssistantMessage(content="4"), finish_reason="stop"
                )
            ],
        )

    records = [response("mi-1", 11, 22), response("mi-2", 3, 4)]
    return Dataset(
        [dump(r) for r in records],
        Truth(n_done=2, total_comp=26, total_prompt=14, formats={"openai_chat": 2}),
    )


def huggingface_dataset() -> Dataset:
    """huggingface_hub's inference types (dicts): a chat output, a TGI `/generate` output, a
    TGI stream (token events, then the final event with `details.input_length`)."""
    import huggingface_hub as hf

    chat = hf.ChatCompletionOutput(
        choices=[
            hf.ChatCompletionOutputComplete(
                finish_reason="stop",
                index=0,
                message=hf.ChatCompletionOutputMessage(role="assistant", content="4"),
            )
        ],
        created=1,
        id="hf-1",
        model="tgi",
        system_fingerprint="3.0",
        usage=hf.ChatCompletionOutputUsage(completion_tokens=5, prompt_tokens=6, total_tokens=11),
    )
    generate = hf.TextGenerationOutput(
        generated_text=" Paris.",
        details=hf.TextGenerationOutputDetails(
            finish_reason="eos_token", generated_tokens=3, prefill=[], tokens=[], seed=None
        ),
    )
    token = hf.TextGenerationStreamOutputToken(id=5, logprob=-0.1, special=False, text=" Paris")
    events = [
        hf.TextGenerationStreamOutput(index=i + 1, token=token, generated_text=None, details=None)
        for i in range(2)
    ]
    final = hf.TextGenerationStreamOutput(
        index=3,
        token=hf.TextGenerationStreamOutputToken(id=2, logprob=0.0, special=True, text="</s>"),
        generated_text=" Paris</think>.",
        details=hf.TextGenerationStreamOutputStreamDetails(
            finish_reason="eos_token", generated_tokens=3, input_length=531, seed=None
        ),
    )
    records: list[Any] = [chat, generate, *events, final]
    return Dataset(
        [json.dumps(r).encode() for r in records],
        Truth(
            n_done=3,
            total_comp=5 + 3 + 3,
            total_prompt=6 + 531,
            stream_chunks=3,
            formats={"openai_chat": 1, "tgi": 2},
        ),
    )


# --- SGLang and vLLM: shapes from their source ---------------------------------------------------


def sglang_dataset() -> Dataset:
    """SGLang native `/generate` records as `tokenizer_manager.py` builds `meta_info`
    (sglang `python/sglang/srt/managers/tokenizer_manager.py`, `_handle_batch_output`:
    id, finish_reason, prompt_tokens, weight_version, completion_tokens, cached_tokens,
    reasoning_tokens; an abort is `{"type": "abort", "message": ...}`,
    `schedule_batch.py` `FINISH_ABORT.to_json`). Raw `text` carries the whole reasoning trace."""

    def record(rid: str, prompt: int, completion: int, finish: Any, text: str) -> bytes:
        meta = {
            "id": rid,
            "finish_reason": finish,
            "prompt_tokens": prompt,
            "weight_version": "default",
            "completion_tokens": completion,
            "cached_tokens": prompt // 2,
            "reasoning_tokens": completion // 2,
            "e2e_latency": 0.5,
        }
        return orjson.dumps(
            {"text": text, "output_ids": list(range(completion)), "meta_info": meta}
        )

    trace = "<think>\nlong reasoning\n</think>\n\nThe answer is 4."
    lines = [
        record("a1", 10, 40, {"type": "stop", "matched": 151645}, trace),
        record("a2", 20, 60, {"type": "length", "length": 60}, trace),
        record("a3", 30, 0, {"type": "abort", "message": "Abort in waiting queue"}, ""),
    ]
    # One batch request returns a JSON array of such objects on one line.
    batch = [
        orjson.loads(record(f"b{i}", 4, 8, {"type": "stop", "matched": 2}, trace)) for i in (1, 2)
    ]
    lines.append(orjson.dumps(batch))
    return Dataset(
        lines,
        Truth(
            n_done=5,
            total_comp=40 + 60 + 0 + 16,
            total_prompt=10 + 20 + 30 + 8,
            total_reasoning=20 + 30 + 0 + 8,
            total_cached_prompt=5 + 10 + 15 + 4,
            n_samples=4,
            counters={"failed_requests": 1},
            formats={"sglang_generate": 5},
        ),
    )


def vllm_dataset() -> Dataset:
    """vLLM offline `RequestOutput` dumps with `SamplingParams(n=4)`: the fields of
    `vllm/outputs.py` (`RequestOutput`: request_id, prompt, prompt_token_ids, outputs,
    finished, num_cached_tokens; `CompletionOutput`: index, text, token_ids, cumulative_logprob,
    logprobs, finish_reason, stop_reason), written as `dataclasses.asdict`-style dicts."""

    def sample(i: int, n_tokens: int, finish: str) -> dict[str, Any]:
        return {
            "index": i,
            "text": "<think>x</think>4",
            "token_ids": list(range(n_tokens)),
            "cumulative_logprob": None,
            "logprobs": None,
            "finish_reason": finish,
            "stop_reason": None,
        }

    def record(rid: str, prompt: int, lengths: list[int]) -> bytes:
        outputs = [sample(i, n, "length" if i else "stop") for i, n in enumerate(lengths)]
        return orjson.dumps(
            {
                "request_id": rid,
                "prompt": "What is 2 + 2?",
                "prompt_token_ids": list(range(prompt)),
                "outputs": outputs,
                "finished": True,
                "num_cached_tokens": 3,
            }
        )

    lines = [record("0", 12, [10, 20, 30, 40]), record("1", 8, [5, 5, 5, 5])]
    return Dataset(
        lines,
        Truth(
            n_done=2,
            total_comp=100 + 20,
            total_prompt=20,
            total_cached_prompt=6,
            n_samples=8,
            formats={"vllm_offline": 2},
        ),
    )


# --- v3 sources (docs/formats.md) --------------------------------------------------------


def json_dump(value: Any) -> bytes:
    """`json.dumps(response, default=str)`: how pipelines save boto3's dicts."""
    return json.dumps(value, default=str).encode()


def boto3_response(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """What `boto3.client("bedrock-runtime").<operation>()` returns for this HTTP body: the
    body parsed by botocore's own parser against the service model's output shape."""
    import botocore.session
    from botocore import parsers

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model(operation).output_shape
    http = {
        "body": json.dumps(body).encode(),
        "headers": {"x-amzn-requestid": "req-1", "content-type": "application/json"},
        "status_code": 200,
    }
    parsed: dict[str, Any] = parsers.create_parser(model.metadata["protocol"]).parse(http, shape)
    return parsed


def bedrock_event(event: dict[str, Any]) -> dict[str, Any]:
    """A ConverseStream event as boto3's EventStream yields it, checked against botocore's
    `ConverseStreamOutput` shape (an unknown or missing member fails here)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    report = ParamValidator().validate(event, model.shape_for("ConverseStreamOutput"))
    assert not report.has_errors(), report.generate_report()
    return event


def bedrock_converse_dataset() -> Dataset:
    """Converse replies as boto3 returns them (AWS docs: `usage.inputTokens` leaves out the
    cache reads and writes; totalTokens = input + output + cacheRead + cacheWrite): a plain
    reply, one that reads and writes the prompt cache, one with reasoning (Converse itemises
    none), one whose only content is reasoning."""

    def reply(content: list[Any], usage: dict[str, int], stop: str = "end_turn") -> bytes:
        body = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {**usage, "totalTokens": sum(usage.values())},
            "metrics": {"latencyMs": 420},
        }
        return json_dump(boto3_response("Converse", body))

    thinking = {"reasoningContent": {"reasoningText": {"text": "...", "signature": "s"}}}
    lines = [
        reply([{"text": "Paris."}], {"inputTokens": 20, "outputTokens": 40}),
        reply(
            [{"text": "Done."}],
            {
                "inputTokens": 3,
                "outputTokens": 121,
                "cacheReadInputTokens": 1712,
                "cacheWriteInputTokens": 236,
            },
        ),
        reply([thinking, {"text": "4"}], {"inputTokens": 15, "outputTokens": 300}),
        reply([thinking], {"inputTokens": 15, "outputTokens": 55}, stop="max_tokens"),
    ]
    return Dataset(
        lines,
        Truth(
            n_done=4,
            total_comp=40 + 121 + 300 + 55,
            total_prompt=20 + (3 + 1712 + 236) + 15 + 15,
            total_cached_prompt=1712,
            total_cache_write=236,
            counters={"empty_outputs": 1},
            formats={"bedrock_converse": 4},
        ),
    )


def bedrock_stream_dataset() -> Dataset:
    """ConverseStream events saved one per line: the `metadata` event carries the request's
    usage, the others are pieces; a second stream ends in a `modelStreamErrorException`."""
    start = {"messageStart": {"role": "assistant"}}
    delta = {"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}}
    events = [
        start,
        delta,
        delta,
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {
            "metadata": {
                "usage": {
                    "inputTokens": 12,
                    "outputTokens": 30,
                    "totalTokens": 42,
                    "cacheReadInputTokens": 0,
                },
                "metrics": {"latencyMs": 300},
            }
        },
        start,
        delta,
        {
            "modelStreamErrorException": {
                "message": "Model stream failed",
                "originalStatusCode": 500,
            }
        },
    ]
    return Dataset(
        [json_dump(bedrock_event(e)) for e in events],
        Truth(
            n_done=2,
            total_comp=30,
            total_prompt=12,
            total_cached_prompt=0,
            n_samples=1,
            stream_chunks=9,
            counters={"failed_requests": 1},
            formats={"bedrock_converse": 1, "error": 1},
        ),
    )


def bedrock_batch_dataset(dump: Dump) -> Dataset:
    """Bedrock batch inference output lines (AWS docs, "View the results of a batch inference
    job": `recordId`, `modelInput`, then `modelOutput` or `error`): a Claude body built with
    the anthropic SDK (Bedrock's Claude speaks the Messages API), Titan Text, Llama and Nova
    bodies as their model pages print them, and a failed record."""
    from anthropic.types import Message, TextBlock, Usage

    claude = Message(
        id="msg_bdrk_1",
        type="message",
        role="assistant",
        model="claude-3-haiku-20240307",
        content=[TextBlock(type="text", text="Bonjour")],
        stop_reason="end_turn",
        stop_sequence=None,
        usage=Usage(input_tokens=111, output_tokens=73),
    )
    bodies: list[Any] = [
        orjson.loads(dump(claude)),
        {"inputTextTokenCount": 8, "results": [
            {"tokenCount": 3, "outputText": "blue\n", "completionReason": "FINISH"}]},
        {"generation": " Paris.", "prompt_token_count": 10, "generation_token_count": 20,
         "stop_reason": "stop"},
        {"output": {"message": {"role": "assistant", "content": [{"text": "4"}]}},
         "stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 7,
         "totalTokens": 12, "cacheReadInputTokenCount": 0, "cacheWriteInputTokenCount": 0}},
    ]  # fmt: skip
    lines = [
        orjson.dumps({"recordId": f"r{i}", "modelInput": {"prompt": "x"}, "modelOutput": body})
        for i, body in enumerate(bodies)
    ]
    lines.append(
        orjson.dumps(
            {
                "recordId": "r9",
                "modelInput": {"inputText": "Hello world"},
                "error": {"errorCode": 400, "errorMessage": "Malformed input request"},
            }
        )
    )
    return Dataset(
        lines,
        Truth(
            n_done=5,
            total_comp=73 + 3 + 20 + 7,
            total_prompt=111 + 8 + 10 + 5,
            total_cached_prompt=0,  # Nova's body reports its cache counts (0)
            total_cache_write=0,
            n_samples=4,
            counters={"failed_requests": 1},
            formats={"bedrock_batch": 5},
        ),
    )


def vertex_batch_dataset(dump: Dump) -> Dataset:
    """Vertex AI batch prediction output lines (Google Cloud docs, "Batch inference from Cloud
    Storage"): `"status": ""` with the google-genai response, and a failed request whose
    status holds the error (its `response` is `{}`)."""
    answered = gemini_response("v1", 9, 10, 5, 0)
    tool = gemini_response("v2", 95, 66, 132, 0)
    tool.usage_metadata.tool_use_prompt_token_count = 439  # type: ignore[union-attr]
    tool.usage_metadata.total_token_count = 95 + 439 + 66 + 132  # type: ignore[union-attr]
    request = {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}

    def line(status: str, response: Any) -> bytes:
        return orjson.dumps(
            {"status": status, "processed_time": "2025-09-19T21:29:47.352+00:00",
             "request": request, "response": response}
        )  # fmt: skip

    failed = (
        'Bad Request: {"error": {"code": 400, "message": "Please use a valid role: user, model."}}'
    )
    lines = [
        line("", orjson.loads(dump(answered))),
        line("", orjson.loads(dump(tool))),
        line(failed, {}),
    ]
    return Dataset(
        lines,
        Truth(
            n_done=3,
            total_comp=(10 + 5) + (66 + 132),
            total_prompt=9 + (95 + 439),
            total_reasoning=5 + 132,
            total_cached_prompt=0,
            n_samples=2,
            counters={"failed_requests": 1},
            formats={"vertex_batch": 3},
        ),
    )


def ollama_dataset(dump: Dump) -> Dataset:
    """Ollama's native replies built with the ollama client's types (`ChatResponse`,
    `GenerateResponse`; API docs: `eval_count` tokens in the reply, `prompt_eval_count` in the
    prompt): a chat reply, a chat stream (objects with `done: false`, then the last with the
    counts), a generate reply leaking `</think>` into a chat message, and a `done` object with
    no counts (a model load: a stream without usage)."""
    import ollama

    def chat(content: str, done: bool, **counts: Any) -> Any:
        message = ollama.Message(role="assistant", content=content)
        return ollama.ChatResponse(
            model="llama3.2", created_at="2024-07-22T20:33:28Z", message=message, done=done,
            done_reason="stop" if done else None, **counts,
        )  # fmt: skip

    records = [
        chat("Hello! How are you today?", True, prompt_eval_count=26, eval_count=298),
        chat("The", False),
        chat(" sky", False),
        chat("", True, prompt_eval_count=14, eval_count=110, total_duration=10),
        chat("<think>hm</think>4", True, prompt_eval_count=3, eval_count=96),
        ollama.GenerateResponse(
            model="llama3.1:8b", created_at="2024-10-27T13:44:12Z", response="Once upon",
            done=True, done_reason="length", context=[1, 2, 3], prompt_eval_count=14,
            eval_count=10,
        ),
        ollama.GenerateResponse(
            model="llama3.2", created_at="2024-10-27T13:44:12Z", response="", done=True,
            done_reason="load",
        ),
    ]  # fmt: skip
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=5,
            total_comp=298 + 110 + 96 + 10,
            total_prompt=26 + 14 + 3 + 14,
            stream_chunks=3,
            counters={"think_tag_leaks": 1, "missing_tokens": 1},
            formats={"ollama": 5},
        ),
    )


def llamacpp_dataset() -> Dataset:
    """llama.cpp server `/completion` (its README: `tokens_predicted`, `tokens_evaluated`,
    `timings.cache_n` prompt tokens reused from the cache, `stop_type`): a stream's objects
    (`stop: false`), its last one with the counts, and a non-streamed reply."""

    def final(content: str, predicted: int, evaluated: int, cache_n: int) -> dict[str, Any]:
        return {
            "index": 0, "content": content, "tokens": [], "id_slot": 0, "stop": True,
            "model": "gpt-3.5-turbo", "tokens_predicted": predicted,
            "tokens_evaluated": evaluated,
            "generation_settings": {"n_predict": 128, "temperature": 0.8, "stream": True},
            "prompt": "Hello", "has_new_line": False, "truncated": False, "stop_type": "eos",
            "stopping_word": "", "tokens_cached": evaluated + predicted - 1,
            "timings": {"cache_n": cache_n, "prompt_n": evaluated - cache_n, "prompt_ms": 10.0,
                        "predicted_n": predicted, "predicted_ms": 100.0},
        }  # fmt: skip

    chunk = {"index": 0, "content": "Hel", "tokens": [9906], "stop": False, "id_slot": 0}
    records = [chunk, chunk, final("", 7, 14, 10), final("Paris.", 3, 4, 0)]
    return Dataset(
        [orjson.dumps(r) for r in records],
        Truth(
            n_done=2,
            total_comp=10,
            total_prompt=18,
            total_cached_prompt=10,
            stream_chunks=3,
            formats={"llamacpp_completion": 2},
        ),
    )


def openai_responses_events_dataset(dump: Dump) -> Dataset:
    """Responses stream events (openai-python `types/responses/*_event.py`) saved one per line:
    a stream ending in `response.completed`, one in `response.failed`, one in an `error`
    event."""
    from openai.types.responses import (
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseFailedEvent,
        ResponseInProgressEvent,
        ResponseTextDeltaEvent,
    )
    from openai.types.responses.response_error_event import ResponseErrorEvent

    def started(rid: str) -> list[Any]:
        pending = openai_response(rid, 1, 0, 0, 0, text=None).model_copy(
            update={"status": "in_progress", "usage": None}
        )
        return [
            ResponseCreatedEvent(type="response.created", sequence_number=0, response=pending),
            ResponseInProgressEvent(
                type="response.in_progress", sequence_number=1, response=pending
            ),
        ]

    delta = ResponseTextDeltaEvent(
        type="response.output_text.delta", sequence_number=2, item_id="msg_1",
        output_index=1, content_index=0, delta="4", logprobs=[],
    )  # fmt: skip
    done = openai_response("r1", 812, 1533, 1280, 512)
    failed = openai_response("r2", 50, 0, 0, 0, failed=True)
    events = [
        *started("r1"), delta, delta,
        ResponseCompletedEvent(type="response.completed", sequence_number=5, response=done),
        *started("r2"),
        ResponseFailedEvent(type="response.failed", sequence_number=2, response=failed),
        *started("r3"),
        ResponseErrorEvent(type="error", sequence_number=2, code="server_error",
                           message="The server had an error", param=None),
    ]  # fmt: skip
    return Dataset(
        [dump(e) for e in events],
        Truth(
            n_done=3,
            total_comp=1533,
            total_prompt=812 + 50,
            total_reasoning=1280,
            total_cached_prompt=512,
            total_cache_write=0,
            n_samples=1,
            stream_chunks=11,
            counters={"failed_requests": 2},
            formats={"openai_responses": 2, "error": 1},
        ),
    )


def anthropic_events_dataset(dump: Dump) -> Dataset:
    """Anthropic message stream events (anthropic-sdk-python `types/raw_*_event.py`) saved one
    per line: `message_delta` carries the final usage (cumulative, input and cache counts
    included); a second stream ends in an `error` event."""
    from anthropic.types import (
        ErrorResponse,
        MessageDeltaUsage,
        OverloadedError,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
        TextBlock,
        TextDelta,
    )
    from anthropic.types.raw_message_delta_event import Delta

    start = anthropic_message("m1", 300, 1, 0, 2048, text=False).model_copy(
        update={"content": [], "stop_reason": None}
    )
    text_delta = RawContentBlockDeltaEvent(
        type="content_block_delta", index=0, delta=TextDelta(type="text_delta", text="4")
    )
    usage = MessageDeltaUsage(
        output_tokens=497, input_tokens=300, cache_creation_input_tokens=8,
        cache_read_input_tokens=2048,
    )  # fmt: skip
    events: list[Any] = [
        RawMessageStartEvent(type="message_start", message=start),
        RawContentBlockStartEvent(
            type="content_block_start", index=0, content_block=TextBlock(type="text", text="")
        ),
        text_delta,
        text_delta,
        RawContentBlockStopEvent(type="content_block_stop", index=0),
        RawMessageDeltaEvent(
            type="message_delta", delta=Delta(stop_reason="end_turn"), usage=usage
        ),
        RawMessageStopEvent(type="message_stop"),
        RawMessageStartEvent(type="message_start", message=start),
        ErrorResponse(
            type="error", error=OverloadedError(type="overloaded_error", message="Overloaded")
        ),
    ]
    return Dataset(
        [dump(e) for e in events],
        Truth(
            n_done=2,
            total_comp=497,
            total_prompt=300 + 8 + 2048,
            total_cached_prompt=2048,
            total_cache_write=8,
            # message_start's usage reports thinking_tokens 0 and no later event another
            # value: the field is reported (merged per field, never dropped)
            total_reasoning=0,
            n_samples=1,
            stream_chunks=9,
            counters={"failed_requests": 1},
            formats={"anthropic_message": 1, "error": 1},
        ),
    )


def gemini_stream_dataset(dump: Dump) -> Dataset:
    """A `generate_content_stream` saved chunk by chunk (google-genai types): every chunk has
    `usage_metadata`; the one with a `finish_reason` is the request's record."""
    from google.genai import types

    def chunk(text: str, finish: Any, candidates: int | None) -> Any:
        return types.GenerateContentResponse(
            candidates=[
                types.Candidate(
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                    finish_reason=finish,
                    index=0,
                )
            ],
            response_id="g-stream",
            model_version="gemini-2.5-flash",
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=10,
                candidates_token_count=candidates,
                thoughts_token_count=5 if finish else None,
                total_token_count=10 + (candidates or 0) + (5 if finish else 0),
            ),
        )

    chunks = [
        chunk("The", None, None),
        chunk(" answer", None, 2),
        chunk(" is 4.", types.FinishReason.STOP, 20),
    ]
    return Dataset(
        [dump(c) for c in chunks],
        Truth(
            n_done=1,
            total_comp=25,
            total_prompt=10,
            total_reasoning=5,
            stream_chunks=3,
            formats={"gemini": 1},
        ),
    )


def groq_stream_dataset(dump: Dump) -> Dataset:
    """Groq chat chunks (openai-python's `ChatCompletionChunk`, which keeps Groq's extra
    `x_groq`): the usage only in the last chunk's `x_groq.usage`; a second stream ends in an
    `error` event (`{"error": {...}}`, openai-python's `ErrorObject`)."""
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta
    from openai.types.shared import ErrorObject

    def chunk(rid: str, text: str, finish: Any = None, **extra: Any) -> Any:
        choice = Choice(index=0, delta=ChoiceDelta(content=text), finish_reason=finish)
        return ChatCompletionChunk(
            id=rid, object="chat.completion.chunk", created=1, model="llama-3.3-70b-versatile",
            choices=[choice], **extra,
        )  # fmt: skip

    usage = {"queue_time": 0.05, "prompt_tokens": 21, "prompt_time": 0.01,
             "completion_tokens": 988, "completion_time": 3.4, "total_tokens": 1009}  # fmt: skip
    error = ErrorObject(
        message="Tool call validation failed", type="invalid_request_error",
        code="tool_use_failed", param=None,
    )  # fmt: skip
    records = [
        chunk("g1", "Hi", x_groq={"id": "req_1"}),
        chunk("g1", " there"),
        chunk("g1", "", "stop", x_groq={"id": "req_1", "usage": usage}),
        chunk("g2", "Hi", x_groq={"id": "req_2"}),
    ]
    return Dataset(
        [dump(r) for r in records] + [orjson.dumps({"error": error.model_dump()})],
        Truth(
            n_done=2,
            total_comp=988,
            total_prompt=21,
            n_samples=1,
            stream_chunks=5,
            counters={"failed_requests": 1},
            formats={"openai_chat": 1, "error": 1},
        ),
    )


def openai_compatible_dataset(dump: Dump) -> Dataset:
    """OpenAI-compatible replies whose fields mean something else (openai-python types, which
    keep the providers' extra keys): xAI (docs.x.ai: `completion_tokens` leaves out
    `reasoning_tokens`, total = prompt + completion + reasoning; its usage names
    `num_sources_used`), Gemini's OpenAI-compatible endpoint (the thoughts only in
    `total_tokens`; its messages carry `extra_content.google`), the HF router (`usage.
    cached_tokens`), DeepSeek (`prompt_cache_hit_tokens` + `prompt_cache_miss_tokens`)."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.completion_usage import CompletionTokensDetails, CompletionUsage

    def reply(rid: str, usage: CompletionUsage, **message: Any) -> Any:
        return ChatCompletion(
            id=rid, object="chat.completion", created=1, model="m",
            choices=[Choice(index=0, finish_reason="stop",
                            message=ChatCompletionMessage(role="assistant", content="4",
                                                          **message))],
            usage=usage,
        )  # fmt: skip

    xai = CompletionUsage(
        prompt_tokens=13, completion_tokens=1, total_tokens=233, num_sources_used=0,
        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=219),
    )  # fmt: skip
    gemini = CompletionUsage(prompt_tokens=35, completion_tokens=12, total_tokens=109)
    hf = CompletionUsage(prompt_tokens=16, completion_tokens=216, total_tokens=232, cached_tokens=8)
    deepseek = CompletionUsage(
        prompt_tokens=563, completion_tokens=116, total_tokens=679,
        prompt_cache_hit_tokens=512, prompt_cache_miss_tokens=51,
    )  # fmt: skip
    records = [
        reply("x1", xai),
        reply("g1", gemini, extra_content={"google": {"thought": True, "thought_signature": "A"}}),
        reply("h1", hf),
        reply("d1", deepseek),
    ]
    return Dataset(
        [dump(r) for r in records],
        Truth(
            n_done=4,
            total_comp=(1 + 219) + (109 - 35) + 216 + 116,
            total_prompt=13 + 35 + 16 + 563,
            total_reasoning=219 + (109 - 35 - 12),
            total_cached_prompt=8 + 512,
            formats={"xai_chat": 1, "gemini_openai": 1, "openai_chat": 2},
        ),
    )


def tgi_stream_without_details_dataset() -> Dataset:
    """A TGI stream (huggingface_hub's types) whose request asked for no details: its last
    event has the text but no counts — one record, missing its usage."""
    import huggingface_hub as hf

    token = hf.TextGenerationStreamOutputToken(id=5, logprob=-0.1, special=False, text=" P")
    events = [
        hf.TextGenerationStreamOutput(index=i + 1, token=token, generated_text=None, details=None)
        for i in range(3)
    ]
    events.append(
        hf.TextGenerationStreamOutput(index=4, token=token, generated_text=" P P P", details=None)
    )
    return Dataset(
        [json.dumps(e).encode() for e in events],
        Truth(
            n_done=1,
            total_comp=0,
            total_prompt=0,
            stream_chunks=4,
            counters={"missing_tokens": 1, "all_tokens_zero_or_missing": 1},
            formats={"tgi": 1},
        ),
    )


def distilabel_dataset() -> Dataset:
    """distilabel rows (its docs: `distilabel_metadata.statistics_<step name>` holds
    `input_tokens` and `output_tokens` per step, lists of one per generation in newer
    releases): two steps add up."""

    def row(generation: str, *steps: tuple[str, Any, Any]) -> bytes:
        metadata: dict[str, Any] = {}
        for name, inputs, outputs in steps:
            metadata[f"raw_output_{name}"] = generation
            metadata[f"statistics_{name}"] = {"input_tokens": inputs, "output_tokens": outputs}
        return orjson.dumps(
            {"instruction": "Write a persona", "generation": generation,
             "distilabel_metadata": metadata, "model_name": "glm-4p5-air"}
        )  # fmt: skip

    lines = [
        row("Elena", ("text_generation_0", 73, 58)),
        row("Marco", ("text_generation_0", [40], [120]), ("ultra_feedback_0", [300], [20])),
    ]
    return Dataset(
        lines,
        Truth(
            n_done=2,
            total_comp=58 + 120 + 20,
            total_prompt=73 + 40 + 300,
            formats={"distilabel": 2},
        ),
    )


def anthropic_vertex_stream_dataset(dump: Dump) -> Dataset:
    """Claude on Vertex AI / Bedrock as anthropic-sdk-python types: `message_start` carries
    the input and cache counts, `message_delta` only `output_tokens` (its other fields null or
    absent): the request's prompt is message_start's, its completion message_delta's."""
    from anthropic.types import (
        MessageDeltaUsage,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
        TextBlock,
        TextDelta,
    )
    from anthropic.types.raw_message_delta_event import Delta

    def stream(rid: str, text: str, output: int) -> list[Any]:
        start = anthropic_message(rid, 120, 1, 0, 30, text=False).model_copy(
            update={"content": [], "stop_reason": None}
        )
        return [
            RawMessageStartEvent(type="message_start", message=start),
            RawContentBlockStartEvent(
                type="content_block_start", index=0, content_block=TextBlock(type="text", text="")
            ),
            RawContentBlockDeltaEvent(
                type="content_block_delta", index=0, delta=TextDelta(type="text_delta", text=text)
            ),
            RawContentBlockStopEvent(type="content_block_stop", index=0),
            RawMessageDeltaEvent(
                type="message_delta",
                delta=Delta(stop_reason="end_turn"),
                usage=MessageDeltaUsage(output_tokens=output),
            ),
            RawMessageStopEvent(type="message_stop"),
        ]

    events = stream("msg_vrtx_1", "Paris", 9) + stream("msg_vrtx_2", "  Paris\n", 11)
    return Dataset(
        [dump(e) for e in events],
        Truth(
            n_done=2,
            total_comp=9 + 11,
            # input + cache read + cache creation (8, `anthropic_message`), all from the start
            total_prompt=2 * (120 + 30 + 8),
            total_reasoning=0,  # the start's thinking_tokens 0, no later event another
            total_cached_prompt=60,
            total_cache_write=16,
            n_samples=2,
            stream_chunks=12,
            counters={},
            formats={"anthropic_message": 2},
        ),
    )


def gemini_textless_last_chunk_dataset(dump: Dump) -> Dataset:
    """A google-genai stream whose last chunk has a finish reason and the usage but no text (as
    14 of 33 real Gemini streams do): the request's answer is its earlier chunks', so no empty
    output."""
    from google.genai import types

    def chunk(parts: list[Any], finish: Any, usage: Any) -> Any:
        return types.GenerateContentResponse(
            candidates=[
                types.Candidate(
                    content=types.Content(role="model", parts=parts), finish_reason=finish, index=0
                )
            ],
            response_id="g-2",
            model_version="gemini-2.5-flash",
            usage_metadata=usage,
        )

    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=7, candidates_token_count=4, total_token_count=11
    )
    chunks = [
        chunk([types.Part(text="The answer")], None, None),
        chunk([types.Part(text=" is 4.")], None, None),
        chunk([], types.FinishReason.STOP, usage),
    ]
    return Dataset(
        [dump(c) for c in chunks],
        Truth(n_done=1, total_comp=4, total_prompt=7, stream_chunks=3, formats={"gemini": 1}),
    )
