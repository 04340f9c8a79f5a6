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
    stream_chunks: int = 0
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
        Truth(n_done=2, total_comp=6, total_prompt=18, stream_chunks=6, formats={"openai_chat": 2}),
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
    """Cohere v2 chat responses: counts typed as floats by the SDK."""
    import cohere

    def response(rid: str, prompt: int, completion: int) -> Any:
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
            ),
        )

    records = [response("co-1", 1449, 2295), response("co-2", 10, 47)]
    return Dataset(
        [dump(r) for r in records],
        Truth(n_done=2, total_comp=2342, total_prompt=1456 + 17, formats={"cohere_chat": 2}),
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
            stream_chunks=2,
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
