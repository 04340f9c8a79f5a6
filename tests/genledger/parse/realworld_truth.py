"""A test-side reading of ../shared/realworld2: each dataset's requests and counts worked out
from the records by each provider's documented rules, with none of genledger's code.

Streams are cut into requests the simple way each provider documents (Anthropic's
message_start, a Responses stream's closing event, a chunk stream's id changing after its
finish reason, Gemini's finishReason, ConverseStream's metadata, Cohere's message-end, an
Interactions stream's interaction.completed); a request's usage is the merge of its events'
(later values win per field: every provider here reports running totals).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Usage = dict[str, Any]


@dataclass
class Counts:
    """A dataset's requests and token sums (None: no request reports the bucket)."""

    records: int = 0
    completion: int = 0
    prompt: int = 0
    reasoning: int | None = None
    cached: int | None = None
    cache_write: int | None = None
    chunks: int = 0
    failed: int = 0
    empty: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def add(self, bucket: str, value: Any) -> None:
        """Add a reported figure to a bucket (an absent one leaves it as it is)."""
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(self, bucket, (getattr(self, bucket) or 0) + value)


def dig(obj: Any, *path: str) -> Any:
    """Follow keys; None where one is absent."""
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def merged(usages: list[Usage]) -> Usage:
    """Per field, the last value reported (nested objects merged the same way)."""
    out: Usage = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merged([out[key], value])
            elif value is not None:
                out[key] = value
    return out


# --- each provider's usage rules ---------------------------------------------------------------


def chat(c: Counts, u: Usage, beside: bool = False) -> None:
    """OpenAI chat usage: reasoning inside completion_tokens (xAI, and gateways passing its
    figures: beside it, total = prompt + completion + reasoning), cached inside the prompt."""
    reasoning = dig(u, "completion_tokens_details", "reasoning_tokens")
    completion = u["completion_tokens"]
    total = u.get("total_tokens")
    if beside:
        completion += reasoning or 0
    elif total is not None and total > u["prompt_tokens"] + completion:
        completion = total - u["prompt_tokens"]
    c.add("completion", completion)
    c.add("prompt", u["prompt_tokens"])
    c.add("reasoning", reasoning)
    c.add("cached", dig(u, "prompt_tokens_details", "cached_tokens"))
    c.add("cache_write", dig(u, "prompt_tokens_details", "cache_write_tokens"))


def responses(c: Counts, u: Usage) -> None:
    """Responses usage: reasoning inside output_tokens, cached inside input_tokens."""
    c.add("completion", u["output_tokens"])
    c.add("prompt", u["input_tokens"])
    c.add("reasoning", dig(u, "output_tokens_details", "reasoning_tokens"))
    c.add("cached", dig(u, "input_tokens_details", "cached_tokens"))


def anthropic(c: Counts, u: Usage) -> None:
    """Anthropic usage: cache reads and writes beside input_tokens."""
    read, write = u.get("cache_read_input_tokens"), u.get("cache_creation_input_tokens")
    c.add("completion", u["output_tokens"])
    c.add("prompt", u["input_tokens"] + (read or 0) + (write or 0))
    c.add("cached", read)
    c.add("cache_write", write)
    c.add("reasoning", dig(u, "output_tokens_details", "thinking_tokens"))


def gemini(c: Counts, u: Usage) -> None:
    """Gemini usage: thoughts beside the candidates, tool-use prompt beside the prompt."""
    thoughts = u.get("thoughtsTokenCount")
    c.add("completion", u.get("candidatesTokenCount", 0) + (thoughts or 0))
    c.add("prompt", u["promptTokenCount"] + u.get("toolUsePromptTokenCount", 0))
    c.add("reasoning", thoughts)
    c.add("cached", u.get("cachedContentTokenCount"))


def converse(c: Counts, u: Usage) -> None:
    """Converse usage: cache reads and writes beside inputTokens."""
    read, write = u.get("cacheReadInputTokens"), u.get("cacheWriteInputTokens")
    c.add("completion", u["outputTokens"])
    c.add("prompt", u["inputTokens"] + (read or 0) + (write or 0))
    c.add("cached", read)
    c.add("cache_write", write)


def cohere(c: Counts, u: Usage) -> None:
    """Cohere v2: usage.tokens (billed_units is what is charged), cached inside the input."""
    c.add("completion", u["tokens"]["output_tokens"])
    c.add("prompt", u["tokens"]["input_tokens"])
    c.add("cached", u.get("cached_tokens"))


def interactions(c: Counts, u: Usage) -> None:
    """Gemini Interactions: thoughts beside the output, tool use beside the input."""
    c.add("completion", u["total_output_tokens"] + u.get("total_thought_tokens", 0))
    c.add("prompt", u["total_input_tokens"] + u.get("total_tool_use_tokens", 0))
    c.add("reasoning", u.get("total_thought_tokens"))
    c.add("cached", u.get("total_cached_tokens"))


# --- cutting streams into requests -------------------------------------------------------------


def lines(path: Path) -> list[dict[str, Any]]:
    """The records of a dataset's JSONL file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def anthropic_streams(events: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Requests begin at message_start."""
    current: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "message_start" and current:
            yield current
            current = []
        current.append(event)
    if current:
        yield current


def chunk_streams(chunks: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """A chunk stream ends at Perplexity's `chat.completion.done`, or when the id changes
    after the finish reason came (a leading chunk with another id and no finish joins)."""
    current: list[dict[str, Any]] = []
    finished = False
    for chunk in chunks:
        if current and finished and chunk.get("id") != current[-1].get("id"):
            yield current
            current, finished = [], False
        current.append(chunk)
        finished = finished or any(c.get("finish_reason") for c in chunk.get("choices") or [])
        if chunk.get("object") == "chat.completion.done":
            yield current
            current, finished = [], False
    if current:
        yield current


def until(events: list[dict[str, Any]], last: Callable[[dict[str, Any]], bool]) -> Iterator[Any]:
    """Requests end at the event `last` holds for."""
    current: list[dict[str, Any]] = []
    for event in events:
        current.append(event)
        if last(event):
            yield current
            current = []
    if current:
        yield current


def chunk_text(stream: list[dict[str, Any]]) -> str:
    """A chunk stream's answer: its content deltas and tool calls."""
    text = ""
    for chunk in stream:
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text += delta.get("content") or ""
            text += json.dumps(delta["tool_calls"]) if delta.get("tool_calls") else ""
    return text.strip()


def count_chunk_streams(records: list[dict[str, Any]], beside: bool = False) -> Counts:
    """OpenAI-compatible chat streams."""
    c = Counts(chunks=len(records))
    for stream in chunk_streams(records):
        c.records += 1
        c.empty += not chunk_text(stream)
        usage = merged([u for ch in stream if isinstance(u := ch.get("usage"), dict)])
        chat(c, usage, beside or thoughts_beside(stream[-1]))
    return c


def thoughts_beside(record: dict[str, Any]) -> bool:
    """Gemini through a gateway: its thoughts (reasoning_tokens) are billed beside the
    candidates (completion_tokens), as Gemini's own usage has them."""
    return str(record.get("model", "")).startswith("google/")


def count_anthropic_streams(records: list[dict[str, Any]]) -> Counts:
    """Anthropic Messages streams (direct, Vertex, Bedrock InvokeModelWithResponseStream)."""
    c = Counts(chunks=len(records))
    for stream in anthropic_streams(records):
        c.records += 1
        usages = [dig(e, "message", "usage") or e.get("usage") for e in stream]
        anthropic(c, merged([u for u in usages if isinstance(u, dict)]))
        text = "".join(dig(e, "delta", "text") or "" for e in stream)
        tools = any(dig(e, "content_block", "type") == "tool_use" for e in stream)
        c.empty += not text.strip() and not tools
    return c


def count_responses_streams(records: list[dict[str, Any]]) -> Counts:
    """Responses streams: the closing event carries the response (an error event before a
    `response.failed` is that request's, not another)."""
    c = Counts(chunks=len(records))
    ends = ("response.completed", "response.failed", "response.incomplete")
    for event in records:
        if event.get("type") in ends:
            c.records += 1
            response = event["response"]
            c.failed += response["status"] == "failed"
            c.empty += response["status"] != "failed" and not answered(response)
            if response.get("usage"):
                responses(c, response["usage"])
    return c


def answered(response: dict[str, Any]) -> bool:
    """A response shows an answer: a message's text, or a call of a tool of any kind."""
    for item in response.get("output") or []:
        kind = item.get("type", "")
        if kind.endswith("_call") or kind == "mcp_approval_request":
            return True
        if kind == "message" and any(p.get("text") for p in item.get("content") or []):
            return True
    return False


def count_gemini_streams(records: list[dict[str, Any]]) -> Counts:
    """Gemini chunks up to the one with a finishReason; usageMetadata holds running totals."""
    c = Counts()
    finished = lambda ch: any(x.get("finishReason") for x in ch.get("candidates") or [])  # noqa: E731
    for stream in until(records, finished):
        c.records += 1
        c.chunks += len(stream) if len(stream) > 1 else 0  # one chunk: a reply, not a stream
        gemini(c, merged([ch["usageMetadata"] for ch in stream if "usageMetadata" in ch]))
    return c


def count_converse_streams(records: list[dict[str, Any]]) -> Counts:
    """ConverseStream: messageStart … metadata (its usage)."""
    c = Counts(chunks=len(records))
    for stream in until(records, lambda e: "metadata" in e):
        c.records += 1
        converse(c, stream[-1]["metadata"]["usage"])
    return c


def count_cohere_streams(records: list[dict[str, Any]]) -> Counts:
    """Cohere v2: message-start … message-end (its delta.usage)."""
    c = Counts(chunks=len(records))
    for stream in until(records, lambda e: e.get("type") == "message-end"):
        c.records += 1
        cohere(c, stream[-1]["delta"]["usage"])
    return c


def count_interaction_streams(records: list[dict[str, Any]]) -> Counts:
    """Interactions: interaction.created … interaction.completed (the interaction's usage)."""
    c = Counts(chunks=len(records))
    for stream in until(records, lambda e: e.get("event_type") == "interaction.completed"):
        c.records += 1
        interactions(c, stream[-1]["interaction"]["usage"])
        text = "".join(dig(e, "delta", "text") or "" for e in stream).strip()
        # a function call is an answer (docs/checks.md: empty means no text and no tool call)
        calls = any(dig(e, "step", "type") == "function_call" for e in stream)
        c.empty += not text and not calls
    return c


def count_each(records: list[dict[str, Any]], rule: Callable[[Counts, Usage], None]) -> Counts:
    """Replies that were never streamed: one request each, its usage under `usage`."""
    c = Counts()
    for record in records:
        c.records += 1
        if record.get("usage") and rule is chat:
            chat(c, record["usage"], thoughts_beside(record))
        elif record.get("usage"):
            rule(c, record["usage"])
        else:
            c.failed += 1
    return c


def count_text_completion_stream(records: list[dict[str, Any]]) -> Counts:
    """A legacy completions stream: usage only on its last chunk."""
    c = Counts(records=1, chunks=len(records))
    chat(c, merged([r["usage"] for r in records if r.get("usage")]))
    return c


def count_dashscope(records: list[dict[str, Any]]) -> Counts:
    """DashScope native: usage.input_tokens / output_tokens; a non-200 status failed."""
    c = Counts()
    for record in records:
        c.records += 1
        if record.get("status_code") != 200:
            c.failed += 1
            continue
        c.add("completion", record["usage"]["output_tokens"])
        c.add("prompt", record["usage"]["input_tokens"])
    return c


def count_errors(records: list[dict[str, Any]]) -> Counts:
    """Error bodies returned instead of a generation: each a failed request."""
    return Counts(records=len(records), failed=len(records))


READERS: dict[str, Callable[[list[dict[str, Any]]], Counts]] = {
    "anthropic_stream_events": count_anthropic_streams,
    "avian_kimi_stream_chunks": count_chunk_streams,
    "azure_openai_chat": lambda r: count_each(r, chat),
    "azure_openai_chat_stream_chunks": count_chunk_streams,
    "azure_openai_responses": lambda r: count_each(r, responses),
    "azure_openai_responses_stream_events": count_responses_streams,
    "bedrock_converse_stream_events": count_converse_streams,
    "bedrock_invoke_stream_events": count_anthropic_streams,
    "cohere_v2_stream_events": count_cohere_streams,
    "dashscope_compat_chat": lambda r: count_each(r, chat),
    "dashscope_compat_stream_chunks": count_chunk_streams,
    "dashscope_native": count_dashscope,
    "gemini_interactions": lambda r: count_each(r, interactions),
    "gemini_interactions_stream_events": count_interaction_streams,
    "gemini_stream_chunks": count_gemini_streams,
    "lmstudio_responses": lambda r: count_each(r, responses),
    "lmstudio_responses_stream_events": count_responses_streams,
    "openai_responses_stream_events": count_responses_streams,
    "openai_text_completion": lambda r: count_each(r, chat),
    "openai_text_completion_stream": count_text_completion_stream,
    "openrouter_stream_chunks": count_chunk_streams,
    "perplexity_chat": lambda r: count_each(r, chat),
    "perplexity_stream_chunks": count_chunk_streams,
    "provider_error_bodies": count_errors,
    "vercel_gateway_chat": lambda r: count_each(r, chat),
    "vercel_gateway_stream_chunks": count_chunk_streams,
    "vertex_claude_messages": lambda r: count_each(r, anthropic),
    "vertex_claude_stream_events": count_anthropic_streams,
    "vertex_gemini_stream_chunks": count_gemini_streams,
    "xai_chat_reasoning": lambda r: count_each(r, lambda c, u: chat(c, u, beside=True)),
    "xai_chat_stream_chunks": lambda r: count_chunk_streams(r, beside=True),
    "xai_responses": lambda r: count_each(r, responses),
    "xai_responses_stream_events": count_responses_streams,
}


def truth_of(folder: Path) -> Counts:
    """A dataset's counts by its provider's rules."""
    return READERS[folder.name](lines(folder / "raw_responses.jsonl"))
