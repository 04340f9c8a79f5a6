"""Streams saved event by event, as data (docs/formats.md, "Streams"): which lines are a
provider's stream events, the id that groups them, the events that start and end a request,
and how each event folds into the request's final object — the object the provider's SDK
accumulator would build (an Anthropic `message`, a `chat.completion`, a Converse reply...),
read afterwards by the same declarations as a reply that was never streamed.

A fold is a monoid: `combine(fold(a), fold(b)) == fold(a + b)` for any cut of a stream's
events, so pieces of a file read apart assemble as in one pass (`genledger.ledger.streams`).
Usage is merged per field, as the usage buckets' table says each count combines in each
family's streams (`genledger.parse.buckets`: cumulative providers report running totals, of
which the last counts; delta providers' counts are summed); a field no event reports stays
missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from genledger.parse.buckets import BUCKETS, SIDES, Bucket, Side, merge_in
from genledger.parse.declarations import BUILT_IN
from genledger.parse.paths import (
    ANY,
    Condition,
    Field,
    all_hold,
    parse_condition,
    parse_field,
)

Acc = dict[str, Any]  # a fold: JSON-able, so open streams travel in the state file
INCOMPLETE = "stream ended without its final event"


def _when(*alternatives: str) -> tuple[tuple[Condition, ...], ...]:
    return tuple(tuple(parse_condition(c) for c in alt.split(" & ")) for alt in alternatives)


def _holds(alternatives: tuple[tuple[Condition, ...], ...], obj: dict[str, Any]) -> bool:
    for conditions in alternatives:  # a loop: tested on every event
        if all_hold(conditions, obj):
            break
    else:
        return False
    return True


def _field(text: str | None) -> Field | None:
    return None if text is None else parse_field(text, sums=False)


@dataclass(frozen=True)
class Family:
    """One provider's stream: its events, grouping and fold (paths read on each event)."""

    name: str
    events: tuple[tuple[Condition, ...], ...]  # lines that are events (never records alone)
    start: tuple[tuple[Condition, ...], ...] = ()  # begins a request
    end: tuple[tuple[Condition, ...], ...] = ()  # ends it
    # records a declaration reads alone (a reply, or a stream's last object): they end an open
    # stream of the family, and are the whole request when none is open
    closers: frozenset[str] = frozenset()
    key: Field | None = None
    usage: Field | None = None  # the event's usage object (merged per field)
    text: Field | None = None
    reasoning: Field | None = None
    tools: Field | None = None
    finish: Field | None = None
    model: Field | None = None
    base: Field | None = None  # an object the request's final object starts from (the last)
    parts: Field | None = None  # Gemini: content parts, concatenated
    whole: bool = False  # the event itself is the base (Ollama's, llama.cpp's, TGI's last object)
    trailing: tuple[tuple[Condition, ...], ...] = ()  # usage after the finish: joins, ends
    # a stream's first event (OpenAI's first chunk names the role): an event of an id no open
    # request has begins one only if it is an opener; else it joins the latest open request
    # (Groq's compound models give every chunk of a stream a new id)
    opener: tuple[tuple[Condition, ...], ...] = ()
    error_ends: bool = True  # an error event ends the request (Responses: `response.failed` does)
    # `choices[].index` tells a request's choices apart (n > 1): each is folded on its own, as
    # the SDK's accumulator keeps one choice per index
    indexed: bool = False
    build: Callable[[Acc], dict[str, Any]] = lambda acc: acc.get("b") or {}

    def paths(self) -> list[Any]:
        """Every path the family reads (a Parquet shard decodes these columns)."""
        found = [c.path for alts in (self.events, self.start, self.end, self.trailing)
                 for alt in alts for c in alt]  # fmt: skip
        fields = (self.key, self.usage, self.text, self.reasoning, self.tools, self.finish,
                  self.model, self.base, self.parts)  # fmt: skip
        return found + [p for f in fields if f is not None for p in f.paths]


def _merge_usage(a: Any, b: Any, summed: frozenset[str], name: str = "") -> Any:
    """Per field: b's reported values over a's (the sum of both for a field in `summed`:
    delta counts); nested objects merged the same way; a field neither reports stays absent."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        if name in summed and type(a) is int and type(b) is int:
            return a + b
        return a if b is None else b
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge_usage(out.get(key), value, summed, key) if key in out else value
    return out


def _usage_fields() -> dict[str, frozenset[str]]:
    """Each usage field name the built-in declarations read a count from (the last key of
    its path: `usage.output_tokens` is `output_tokens`), with the facts columns it feeds."""
    found: dict[str, set[str]] = {}
    for decl in BUILT_IN:
        for column, value in decl.counts:
            for path in value.paths:
                if path.steps and path.steps[-1][0] != ANY:
                    found.setdefault(path.steps[-1][0], set()).add(column)
    return {name: frozenset(columns) for name, columns in found.items()}


USAGE_FIELDS = _usage_fields()
_USAGE_ROWS: tuple[Side | Bucket, ...] = (*SIDES, *BUCKETS)
_ROWS: dict[str, Side | Bucket] = {row.column: row for row in _USAGE_ROWS}


def summed_fields(family: str) -> frozenset[str]:
    """The usage fields a stream of `family` sums across its events: those of a whole or a
    bucket whose counts the family's events report as deltas (`parse.buckets`)."""
    return frozenset(
        name
        for name, columns in USAGE_FIELDS.items()
        if any(c in _ROWS and merge_in(_ROWS[c], family) == "sum" for c in columns)
    )


def _parts(a: list[Any], b: list[Any]) -> list[Any]:
    """Content parts in order, adjacent text parts of the same kind joined (as one reply)."""
    out = list(a)
    for part in b:
        last = out[-1] if out else None
        if (
            isinstance(part, dict)
            and isinstance(last, dict)
            and set(part) <= {"text", "thought"}
            and set(last) <= {"text", "thought"}
            and isinstance(part.get("text"), str)
            and isinstance(last.get("text"), str)
            and bool(part.get("thought")) == bool(last.get("thought"))
        ):
            out[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            out.append(part)
    return out


def combine(family: Family, a: Acc, b: Acc) -> Acc:
    """The fold of a's events then b's."""
    if not a:
        return b
    if not b:
        return a
    out: Acc = {"n": a["n"] + b["n"]}
    if "u" in a or "u" in b:
        out["u"] = _merge_usage(a.get("u"), b.get("u"), SUMMED[family.name])
    for key in ("t", "r", "tl"):  # texts, reasoning, tool calls: their deltas in order
        if key in a or key in b:
            out[key] = a.get(key, "") + b.get(key, "")
    if "p" in a or "p" in b:
        out["p"] = _parts(a.get("p", []), b.get("p", []))
    for key in ("f", "b", "e"):  # the last reported
        value = b.get(key, a.get(key))
        if value is not None:
            out[key] = value
    for key in ("m", "i"):  # the first reported
        value = a.get(key, b.get(key))
        if value is not None:
            out[key] = value
    if "x" in a or "x" in b:  # the other choices, each folded as the first
        ours, theirs = a.get("x", {}), b.get("x", {})
        out["x"] = {k: combine(family, ours.get(k, {}), theirs.get(k, {}))
                    for k in dict.fromkeys([*ours, *theirs])}  # fmt: skip
    return out


TEXT_KEYS = ("t", "r", "tl")  # a fold's texts: joined in order
LAST_KEYS = ("f", "b", "e")  # the last reported
FIRST_KEYS = ("m", "i")  # the first reported


def combine_into(family: Family, a: Acc, b: Acc) -> Acc:
    """`combine(family, a, b)` written into `a` and returned (no new fold an event): for a
    fold only its owner holds, made by `fold` and `combine` (no other choices `x`, no
    record `o`; those take `combine`). Equal to `combine`'s (its keys perhaps in another
    order)."""
    if not a or not b or "x" in a or "x" in b or "o" in a:
        return combine(family, a, b)
    for key, value in b.items():
        if key == "n":
            a["n"] += value
        elif key in TEXT_KEYS:
            a[key] = a.get(key, "") + value
        elif key == "u":
            a["u"] = _merge_usage(a.get("u"), value, SUMMED[family.name])
        elif key == "p":
            a["p"] = _parts(a.get("p", []), value)
        elif key in LAST_KEYS:
            a[key] = value
        elif key in FIRST_KEYS:
            a.setdefault(key, value)
    return a


def _texts(path: Field | None, obj: dict[str, Any]) -> str | None:
    if path is None:
        return None
    found = [v for v in path.all_values(obj) if isinstance(v, str)]
    return "".join(found) if found else None


def fold(family: Family, obj: dict[str, Any], record: bool = False) -> Acc:
    """One event as a fold; `record`: a record a declaration reads alone (kept whole, so a
    request of that one event is read exactly as before)."""
    if family.indexed and not record:
        others = _other_choices(obj)
        if others:
            return _indexed(family, obj, others)
    return _fold(family, obj, record)


def _fold(family: Family, obj: dict[str, Any], record: bool = False) -> Acc:
    acc: Acc = {"n": 1}
    if record:
        acc["o"] = obj
    if "error" in obj or obj.get("type") == "error" or _is_error_key(obj):
        acc["e"] = obj
    usage = None if family.usage is None else family.usage.first(obj)
    if isinstance(usage, dict):
        acc["u"] = usage
    for key, path in (("t", family.text), ("r", family.reasoning)):
        text = _texts(path, obj)
        if text is not None:
            acc[key] = text
    if family.parts is not None:
        parts = [p for p in family.parts.all_values(obj)]
        if parts:
            acc["p"] = _parts([], parts)
    for key, path in (("f", family.finish), ("m", family.model), ("i", family.key)):
        value = None if path is None else path.first(obj)
        if value is not None and value != "":
            acc[key] = value
    if family.tools is not None:
        calls = "".join(_tool_text(v) for v in family.tools.all_values(obj) if v is not None)
        if calls:
            acc["tl"] = calls
    base = obj if family.whole else None if family.base is None else family.base.first(obj)
    if isinstance(base, dict):
        acc["b"] = base
    return acc


def _choice_index(choice: Any) -> int:
    index = choice.get("index", 0) if isinstance(choice, dict) else 0
    return index if type(index) is int else 0


def _other_choices(obj: dict[str, Any]) -> dict[int, list[Any]]:
    """The event's choices of an index other than 0, by index (none for most events)."""
    choices = obj.get("choices")
    if not isinstance(choices, list):
        return {}
    others: dict[int, list[Any]] = {}
    for choice in choices:
        if _choice_index(choice) != 0:
            others.setdefault(_choice_index(choice), []).append(choice)
    return others


def _indexed(family: Family, obj: dict[str, Any], others: dict[int, list[Any]]) -> Acc:
    """An event of several choices: the first choice's fold, with each other choice's own
    (`x`, by index: texts and finish reason only; the event counts once)."""
    first = [c for c in obj["choices"] if _choice_index(c) == 0]
    acc = _fold(family, {**obj, "choices": first})
    acc["x"] = {}
    for index, choices in sorted(others.items()):
        own = _fold(family, {"choices": choices})
        own["n"] = 0
        acc["x"][str(index)] = own  # a text key: the fold travels as JSON
    return acc


TOOL_NOISE = frozenset({"index", "type", "signature"})  # how a piece is sent, not what


def _tool_text(value: Any, depth: int = 0) -> str:
    """A tool call's streamed piece as text: its call id, name and argument fragments in the
    order written, so the pieces of one request joined tell its calls apart however the
    stream was cut (a call's id is part of its answer, as in a reply never streamed: two
    calls are no duplicate answers)."""
    if isinstance(value, str):
        return value
    if depth > 8:  # hostile nesting must not recurse for ever
        return ""
    if isinstance(value, dict):
        items = (v for k, v in value.items() if k not in TOOL_NOISE)
        return "".join(_tool_text(v, depth + 1) for v in items)
    if isinstance(value, list):
        return "".join(_tool_text(v, depth + 1) for v in value)
    return ""


ERROR_KEYS = (  # a Bedrock stream's exception events, each `{"<name>": {"message": ...}}`
    "internalServerException", "modelStreamErrorException", "validationException",
    "throttlingException", "serviceUnavailableException",
)  # fmt: skip


def _is_error_key(obj: dict[str, Any]) -> bool:
    return any(key in obj for key in ERROR_KEYS)


def final_object(family: Family, acc: Acc) -> dict[str, Any]:
    """The request's final object: the lone record itself, the error it ended in, or the
    provider's accumulated reply."""
    if acc.get("n") == 1 and "o" in acc:
        return acc["o"]  # type: ignore[no-any-return]
    built = family.build(acc)
    if "e" in acc and not _succeeded(built):
        return acc["e"]  # type: ignore[no-any-return]
    return built


def _succeeded(obj: dict[str, Any]) -> bool:
    return obj.get("status") in ("completed", "incomplete", "failed")


# --- the final objects ------------------------------------------------------------------------


def _anthropic(acc: Acc) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": acc.get("t", "")}]
    if acc.get("tl"):
        content.append({"type": "tool_use", "input": {"streamed": acc["tl"]}})
    return {
        "type": "message", "id": acc.get("i"), "model": acc.get("m"), "role": "assistant",
        "content": content, "stop_reason": acc.get("f"), "usage": acc.get("u"),
    }  # fmt: skip


def _chat(acc: Acc) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": acc.get("t")}
    if "r" in acc:
        message["reasoning_content"] = acc["r"]
    if acc.get("tl"):
        message["tool_calls"] = [{"type": "function", "function": {"arguments": acc["tl"]}}]
    choice = {"index": 0, "message": message, "finish_reason": acc.get("f")}
    out = {"object": "chat.completion", "id": acc.get("i"), "model": acc.get("m")}
    choices = [choice, *(_chat(own)["choices"][0] | {"index": int(index)}
                         for index, own in sorted(acc.get("x", {}).items(),
                                                  key=lambda item: int(item[0])))]  # fmt: skip
    return {**out, "choices": choices, "usage": acc.get("u")}


def _text_completion(acc: Acc) -> dict[str, Any]:
    choice = {"index": 0, "text": acc.get("t", ""), "finish_reason": acc.get("f")}
    out = {"object": "text_completion", "id": acc.get("i"), "model": acc.get("m")}
    others = sorted(acc.get("x", {}).items(), key=lambda item: int(item[0]))
    choices = [choice, *(_text_completion(own)["choices"][0] | {"index": int(index)}
                         for index, own in others)]  # fmt: skip
    return {**out, "choices": choices, "usage": acc.get("u")}


def _gemini(acc: Acc) -> dict[str, Any]:
    usage = acc.get("u")
    # the Python SDK's snake_case dump, or REST's camelCase: named as the stream named them
    snake = isinstance(usage, dict) and any("_" in key for key in usage)
    names = (
        ("usage_metadata", "finish_reason", "model_version", "response_id")
        if snake
        else ("usageMetadata", "finishReason", "modelVersion", "responseId")
    )
    candidate = {"content": {"role": "model", "parts": acc.get("p", [])}, names[1]: acc.get("f")}
    out: dict[str, Any] = {
        "candidates": [candidate],
        names[2]: acc.get("m"),
        names[3]: acc.get("i"),
    }
    if usage is not None:
        out[names[0]] = usage
    return out


def _converse(acc: Acc) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"text": acc.get("t", "")}]
    if acc.get("tl"):
        content.append({"toolUse": {"input": acc["tl"]}})
    message = {"role": "assistant", "content": content}
    return {"output": {"message": message}, "stopReason": acc.get("f"), "usage": acc.get("u")}


def _cohere(acc: Acc) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    message["content"] = [{"type": "text", "text": acc.get("t", "")}]
    if acc.get("tl"):
        message["tool_calls"] = [{"type": "function", "function": {"arguments": acc["tl"]}}]
    return {
        "id": acc.get("i"),
        "finish_reason": acc.get("f"),
        "message": message,
        "usage": acc.get("u"),
    }


def _last(acc: Acc) -> dict[str, Any]:
    """The stream's last object (it carries the counts), its text the whole stream's."""
    out = dict(acc.get("b") or {})
    message = out.get("message")
    if isinstance(message, dict):  # Ollama /api/chat
        out["message"] = {**message, "content": acc.get("t", "")}
        if "r" in acc:
            out["message"]["thinking"] = acc["r"]
    elif "response" in out:  # Ollama /api/generate
        out["response"] = acc.get("t", "")
    elif "content" in out:  # llama.cpp
        out["content"] = acc.get("t", "")
    return out


def _interaction(acc: Acc) -> dict[str, Any]:
    out = dict(acc.get("b") or {})
    steps: list[dict[str, Any]] = [
        {"type": "model_output", "content": [{"type": "text", "text": acc.get("t", "")}]}
    ]
    if acc.get("tl"):
        steps.append({"type": "function_call", "arguments": acc["tl"]})
    return {**out, "steps": steps}


def _responses(acc: Acc) -> dict[str, Any]:
    return dict(acc.get("b") or {})


ANTHROPIC_EVENTS = (
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping",
)  # fmt: skip
CONVERSE_EVENTS = (
    "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop",
)  # fmt: skip
COHERE_EVENTS = (
    "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
    "tool-call-start", "tool-call-delta", "tool-call-end", "citation-start", "citation-end",
    "message-end", "debug",
)  # fmt: skip
CHUNK_USAGE = "usage | x_groq.usage"  # Groq: the usage only in the last chunk's `x_groq`


FAMILIES: tuple[Family, ...] = (
    # Anthropic Messages (also Claude on Vertex and Bedrock's InvokeModelWithResponseStream):
    # message_delta's usage is cumulative, and may report only output_tokens
    Family(
        "anthropic",
        events=_when(*(f"type={t}" for t in ANTHROPIC_EVENTS)),
        start=_when("type=message_start"),
        end=_when("type=message_stop"),
        closers=frozenset({"error"}),
        key=_field("message.id"),
        usage=_field("message.usage | usage"),
        text=_field("delta.text"),
        reasoning=_field("delta.thinking"),
        tools=_field("content_block.name | delta.partial_json"),
        finish=_field("delta.stop_reason"),
        model=_field("message.model"),
        build=_anthropic,
    ),
    # OpenAI Responses (also Azure, xAI, LM Studio): the closing event carries the response
    Family(
        "openai_responses",
        events=_when('type ^= "response."'),
        start=_when("type=response.created"),
        end=_when("type=response.completed", "type=response.failed", "type=response.incomplete"),
        closers=frozenset({"error"}),
        key=_field("response.id"),
        base=_field("response"),
        error_ends=False,
        build=_responses,
    ),
    # OpenAI chat chunks (and every OpenAI-compatible server's, Perplexity's running usage,
    # Groq's `x_groq.usage`): up to the chunk with `finish_reason` and the usage chunk after it
    Family(
        "openai_chat",
        events=_when(
            "object=chat.completion.chunk",
            "object=chat.completion.done",
            # Azure's first chunk: no id, no choices, only the prompt's filter results
            "prompt_filter_results & !choices[] & !usage",
        ),
        end=_when("object=chat.completion.done"),
        trailing=_when("!choices[] & usage", "!choices[] & x_groq.usage"),
        opener=_when("choices[].delta.role"),
        closers=frozenset({"error"}),
        key=_field("id"),
        usage=_field(CHUNK_USAGE),
        text=_field("choices[].delta.content"),
        reasoning=_field("choices[].delta.reasoning_content | choices[].delta.reasoning"),
        tools=_field("choices[].delta.tool_calls"),
        finish=_field("choices[].finish_reason"),
        model=_field("model"),
        indexed=True,
        build=_chat,
    ),
    # OpenAI legacy /v1/completions streams: usage only on a last chunk with no choices
    Family(
        "openai_completion",
        events=_when("object=text_completion & !usage"),
        closers=frozenset({"openai_completion", "error"}),
        key=_field("id"),
        usage=_field("usage"),
        text=_field("choices[].text"),
        finish=_field("choices[].finish_reason"),
        model=_field("model"),
        indexed=True,
        build=_text_completion,
    ),
    # Gemini streamGenerateContent (REST camelCase, or the Python SDK's snake_case dump):
    # usageMetadata holds running totals; the chunk with a finishReason ends the request
    Family(
        "gemini",
        events=_when(
            "candidates[].content & !candidates[].finishReason & !promptFeedback.blockReason"
            " & !candidates[].finish_reason & !prompt_feedback.block_reason",
        ),
        closers=frozenset({"gemini", "error"}),
        key=_field("responseId | response_id"),
        usage=_field("usageMetadata | usage_metadata"),
        parts=_field("candidates[].content.parts[]"),
        finish=_field("candidates[].finishReason | candidates[].finish_reason"),
        model=_field("modelVersion | model_version"),
        build=_gemini,
    ),
    # Bedrock ConverseStream, as boto3 yields it: usage in the closing `metadata` event
    Family(
        "bedrock_converse",
        events=_when(*(f"has({e})" for e in CONVERSE_EVENTS), "metadata.usage & !object & !id"),
        start=_when("has(messageStart)"),
        end=_when("metadata.usage"),
        closers=frozenset({"error"}),
        usage=_field("metadata.usage"),
        text=_field("contentBlockDelta.delta.text"),
        reasoning=_field("contentBlockDelta.delta.reasoningContent.text"),
        tools=_field("contentBlockStart.start.toolUse | contentBlockDelta.delta.toolUse.input"),
        finish=_field("messageStop.stopReason"),
        build=_converse,
    ),
    # Cohere v2 chat streams: message-start … message-end (its delta carries the usage)
    Family(
        "cohere",
        events=_when(*(f"type={t}" for t in COHERE_EVENTS)),
        start=_when("type=message-start"),
        end=_when("type=message-end"),
        closers=frozenset({"error"}),
        key=_field("id"),
        usage=_field("delta.usage"),
        text=_field("delta.message.content.text"),
        reasoning=_field("delta.message.content.thinking"),
        tools=_field("delta.message.tool_calls"),
        finish=_field("delta.finish_reason"),
        build=_cohere,
    ),
    # Gemini Interactions API streams: interaction.created … interaction.completed
    Family(
        "gemini_interactions",
        events=_when('event_type ^= "interaction."', 'event_type ^= "step."'),
        start=_when("event_type=interaction.created"),
        end=_when("event_type=interaction.completed", "event_type=interaction.failed"),
        closers=frozenset({"error"}),
        key=_field("interaction.id"),
        base=_field("interaction"),
        text=_field("delta.text"),
        tools=_field("step.name | delta.arguments"),
        build=_interaction,
    ),
    # Ollama native: `done: false` objects, then the last (`done: true`) with the counts
    Family(
        "ollama",
        events=_when("done=false & created_at"),
        closers=frozenset({"ollama", "error"}),
        text=_field("message.content | response"),
        reasoning=_field("message.thinking | thinking"),
        whole=True,
        build=_last,
    ),
    # llama.cpp /completion streams: `stop: false` objects, then the last (`stop: true`)
    Family(
        "llamacpp",
        events=_when("stop=false & has(content)"),
        closers=frozenset({"llamacpp_completion", "error"}),
        text=_field("content"),
        whole=True,
        build=_last,
    ),
    # TGI token events, then the final event (`generated_text`, `details`)
    Family(
        "tgi",
        events=_when("has(token) & has(index) & !details & !generated_text & !choices"),
        closers=frozenset({"tgi", "error"}),
        whole=True,
    ),
)

BY_NAME = {family.name: family for family in FAMILIES}


def signature() -> str:
    """A text that changes when a stream family changes (kept in state records): its fields,
    its final object's builder by name."""

    def stable(value: Any) -> Any:  # a set's order changes from process to process
        return sorted(value) if isinstance(value, frozenset) else value

    return repr([
        [*(stable(getattr(f, x.name)) for x in fields(f) if x.name != "build"),
         f.build.__qualname__]
        for f in FAMILIES
    ])  # fmt: skip


SUMMED = {family.name: summed_fields(family.name) for family in FAMILIES}
# A closer record's family, by the format that reads it alone (`error`: any open stream's)
CLOSER_FORMATS = frozenset(f for family in FAMILIES for f in family.closers)
CLOSERS = {
    form: tuple(family for family in FAMILIES if form in family.closers) for form in CLOSER_FORMATS
}


Alt = tuple[Condition, ...]


def _index() -> tuple[
    dict[tuple[str, str], Family], tuple[tuple[Family, Any, Any], ...], tuple[Alt, ...]
]:
    """Events told by one top-level text (`type=message_start`) are looked up in a dict; the
    rest are tried after a quick test of the keys they need (this runs for every record),
    each with its alternative's conditions (`genledger.fast.events` cuts them to key sets)."""
    exact: dict[tuple[str, str], Family] = {}
    rest: list[tuple[Family, Any, Any]] = []
    alts: list[Alt] = []
    for family in FAMILIES:
        for alt in family.events:
            only = alt[0] if len(alt) == 1 else None
            if (
                only is not None
                and only.op == "eq"
                and len(only.path.steps) == 1
                and isinstance(only.value, str)
            ):
                exact[(only.path.top, only.value)] = family
                continue
            needed = frozenset(c.path.top for c in alt if c.op != "absent")
            rest.append((family, needed, tuple(c.test or c.holds for c in alt)))
            alts.append(alt)
    return exact, tuple(rest), tuple(alts)


EXACT, REST, REST_CONDITIONS = _index()
TOLD_BY = tuple(dict.fromkeys(key for key, _ in EXACT))  # the keys whose text tells an event


def event_family(obj: dict[str, Any]) -> Family | None:
    """The family whose stream event `obj` is (never a record alone), else None."""
    for key in TOLD_BY:
        value = obj.get(key)
        if type(value) is str:
            found = EXACT.get((key, value))
            if found is not None:
                return found
    keys = obj.keys()
    for family, needed, tests in REST:
        if keys >= needed:
            for test in tests:  # loops, not all(...): a generator costs more than the tests
                if not test(obj):
                    break
            else:
                return family
    return None


def closer_families(form: str | None) -> tuple[Family, ...]:
    """The families a record of format `form` may end (none for most formats)."""
    return CLOSERS.get(form, ())  # type: ignore[arg-type]


def is_start(family: Family, obj: dict[str, Any]) -> bool:
    """The event begins a request."""
    return bool(family.start) and _holds(family.start, obj)


def is_end(family: Family, obj: dict[str, Any]) -> bool:
    """The event ends its request."""
    return bool(family.end) and _holds(family.end, obj)


def is_opener(family: Family, obj: dict[str, Any]) -> bool:
    """The event may begin a request of a new id (families whose ids can change mid-stream)."""
    return not family.opener or _holds(family.opener, obj)


def is_trailing(family: Family, obj: dict[str, Any]) -> bool:
    """A usage-only event after the finish: it joins the finished request and ends it."""
    return bool(family.trailing) and _holds(family.trailing, obj)


def is_neutral(family: Family, obj: dict[str, Any], acc: Acc | None = None) -> bool:
    """An event with nothing of a request (Azure's first chunk with no id and no choices, a
    leading chunk with only a role, a ping): counted, and it changes no request. `acc`: the
    event's `fold`, when the caller has it already."""
    if is_start(family, obj) or is_end(family, obj) or is_trailing(family, obj):
        return False
    return set(fold(family, obj) if acc is None else acc) <= NEUTRAL_KEYS


NEUTRAL_KEYS = frozenset({"n", "m", "i"})  # a fold of only these changes no request


class Event(NamedTuple):
    """One event read once: its fold and the tests a stream's state asks of it."""

    acc: Acc
    start: bool
    end: bool
    trailing: bool
    opener: bool

    @property
    def neutral(self) -> bool:
        """`is_neutral` of the event."""
        return not (self.start or self.end or self.trailing) and NEUTRAL_KEYS.issuperset(self.acc)


def read_event(family: Family, obj: dict[str, Any]) -> Event:
    """An event's fold and tests (`genledger.fast.events.fast_event` reads the same, faster)."""
    return Event(
        fold(family, obj),
        is_start(family, obj),
        is_end(family, obj),
        is_trailing(family, obj),
        is_opener(family, obj),
    )
