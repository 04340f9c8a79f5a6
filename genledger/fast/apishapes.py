"""Typed shapes of the hosted APIs' records and batch output lines (docs/formats.md).

OpenAI Responses, Anthropic messages and the Message Batch lines that succeeded, Gemini (REST /
`by_alias` camelCase and the google-genai SDK's snake_case dumps) and its Batch output lines
that succeeded, Cohere v2 chat, vLLM offline `RequestOutput` dumps with n samples, and the
Bedrock (a Claude body) and Vertex AI batch output lines that succeeded, each
declared key by key like `genledger.fast.shapes` (whose helpers and rules they share): a line
that decodes into one of them has a known structure, and its facts are written down from the
declaration's paths (`genledger.parse.declarations`) the way `formats.response_facts` reads
them; the comments name the rule. Anything outside the shapes — a failed request, an unknown
key, a count that is not an int64, a tool call, a `"thought"` part where it matters — raises,
and the slower paths decide. tests/genledger/fast/test_lines.py checks these against the
general path.
"""

# No `from __future__ import annotations`: msgspec reads these structs' annotations when a
# decoder is made and when a shape is inspected, and strings it must evaluate first (a
# small refresh's decoders and inspections took 15 ms with them, 7.5 without).

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from genledger.fast.shapes import (
    NO_TEXT,
    USAGE,
    Finish,
    Int64,
    Text,
    Unusual,
    _given,
    _ids_len,
    _raw_value,
    _reason,
    _Shape,
    _shows_text,
    _think_tag_in,
    answer_key,
    key_of_texts,
    part_text,
)
from genledger.fast.shapes import visible as visible_value
from genledger.parse.formats import FINISH_SEPARATOR, text_value, time_value
from genledger.parse.schema import RESPONSES, Facts
from genledger.parse.tokenized import INT64_MAX
from genledger.parse.usage import settle

Empty = Annotated[list[None], msgspec.Meta(max_length=0)]  # a list the shape allows only empty
EXACT_FLOAT = 2**53  # below it a JSON number read as a double is the exact integer written


def _texts(plain: bool, *texts: msgspec.Raw) -> None:
    """Each text is a valid JSON string or null (`_think_tag_in` raises otherwise); a raw
    text's think tag is never a leak in these formats (none declares `messages`)."""
    for text in texts:
        _think_tag_in(text, plain)


def _sum(*values: int | None) -> int | None:
    """A `+` field of int64 values as `Field.raw` then `_valid_int` give it: absent terms left
    out, one term as it is, else the sum, or the first term that is no count (< 0)."""
    found = [v for v in values if v is not None]
    if len(found) <= 1:
        return found[0] if found else None
    out = 0
    for value in found:
        if value < 0:
            return value
        out += value
    return out if out <= INT64_MAX else None


def _completion(value: int | None) -> int:
    """A completion count the typed facts can state; a missing or overflowing one: the
    general path words it."""
    if value is None:
        raise Unusual
    return value


# No output_ids in these shapes, no failed request (raised before), no think leak (none of
# these formats declares `messages`).
_facts = RESPONSES.positional(
    "record_id", "format", *USAGE, "cached_tokens", "cache_write_tokens", "total_tokens",
    "n_samples", "finish_reason", "more_finishes", "empty_output", "answer_hash",
    count_type="int",
)  # fmt: skip
# Formats that name their model (and their time): the same facts and those.
_named_facts = RESPONSES.positional(
    "record_id", "format", *USAGE, "cached_tokens", "cache_write_tokens", "total_tokens",
    "n_samples", "finish_reason", "more_finishes", "empty_output", "model", "created",
    "answer_hash", count_type="int",
)  # fmt: skip


# --- OpenAI Responses API ----------------------------------------------------------------


class _RPart(_Shape):
    type: str
    text: Text = NO_TEXT
    refusal: Text = NO_TEXT
    annotations: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON
    logprobs: msgspec.Raw = NO_TEXT


class _RSummary(_Shape):
    type: str
    text: Text = NO_TEXT


class _ROutput(_Shape):
    type: str
    id: str | None = None
    role: str | None = None
    status: str | None = None
    content: list[_RPart] | None = None
    summary: list[_RSummary] | None = None
    arguments: Text = NO_TEXT
    name: str | None = None
    call_id: Text = NO_TEXT
    result: Text = NO_TEXT  # an image generation's
    encrypted_content: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON
    action: msgspec.Raw = NO_TEXT


class _RInputDetails(_Shape):
    cached_tokens: Int64 | None = None
    cache_write_tokens: Int64 | None = None


class _ROutputDetails(_Shape):
    reasoning_tokens: Int64 | None = None


class _RUsage(_Shape):
    output_tokens: Int64  # required: the detect's `usage.output_tokens`
    input_tokens: Int64 | None = None
    input_tokens_details: _RInputDetails | None = None
    output_tokens_details: _ROutputDetails | None = None
    total_tokens: Int64 | None = None
    # xAI's, read by no declaration of a Responses object: only checked JSON
    num_sources_used: msgspec.Raw = NO_TEXT
    num_server_side_tools_used: msgspec.Raw = NO_TEXT


class _Incomplete(_Shape):
    reason: str | None = None


class Responses(_Shape):
    """`{"object": "response", "output": [...], "usage": {...}}` that did not fail."""

    FORMATS: ClassVar = (("openai_responses", ""),)
    MAKER: ClassVar = _named_facts

    object: Literal["response"]  # the detect's `object=response`
    usage: _RUsage
    id: str = ""
    created_at: float | None = None
    model: str | None = None
    status: str | None = None
    error: None = None  # a failure rule: `error` present
    incomplete_details: _Incomplete | None = None
    output: list[_ROutput] | None = None
    instructions: Text = NO_TEXT
    previous_response_id: str | None = None
    service_tier: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    parallel_tool_calls: bool | None = None
    tool_choice: msgspec.Raw = NO_TEXT
    tools: msgspec.Raw = NO_TEXT
    metadata: dict[str, str] | None = None
    # the request's settings echoed and the provider's notes, read by no declaration: only
    # checked JSON
    background: msgspec.Raw = NO_TEXT
    billing: msgspec.Raw = NO_TEXT
    max_output_tokens: msgspec.Raw = NO_TEXT
    max_tool_calls: msgspec.Raw = NO_TEXT
    prompt_cache_key: msgspec.Raw = NO_TEXT
    prompt_cache_retention: msgspec.Raw = NO_TEXT
    reasoning: msgspec.Raw = NO_TEXT
    safety_identifier: msgspec.Raw = NO_TEXT
    store: msgspec.Raw = NO_TEXT
    text: msgspec.Raw = NO_TEXT
    top_logprobs: msgspec.Raw = NO_TEXT
    truncation: msgspec.Raw = NO_TEXT
    user: msgspec.Raw = NO_TEXT
    completed_at: msgspec.Raw = NO_TEXT
    frequency_penalty: msgspec.Raw = NO_TEXT
    presence_penalty: msgspec.Raw = NO_TEXT
    content_filters: msgspec.Raw = NO_TEXT
    moderation: msgspec.Raw = NO_TEXT

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        if self.status == "failed":
            raise Unusual  # a failure rule: `status=failed`
        _texts(plain, self.instructions)
        visible = False
        texts, refusals, arguments, calls, results = [], [], [], [], []
        for item in self.output or ():
            _texts(plain, item.arguments, item.call_id, item.result)
            # output[].arguments, .call_id (a tool call of any kind), .result (an image)
            visible = visible or any(map(_shows_text, (item.arguments, item.call_id, item.result)))
            arguments.append(item.arguments)
            calls.append(item.call_id)
            results.append(item.result)
            for part in item.content or ():
                _texts(plain, part.text, part.refusal)
                visible = visible or _shows_text(part.text) or _shows_text(part.refusal)
                texts.append(part.text)
                refusals.append(part.refusal)
            for summary in item.summary or ():
                _texts(plain, summary.text)
        usage = self.usage
        inputs, outputs = usage.input_tokens_details, usage.output_tokens_details
        reason = self.incomplete_details.reason if self.incomplete_details is not None else None
        cached = None if inputs is None else inputs.cached_tokens
        written = None if inputs is None else inputs.cache_write_tokens
        reasoning = None if outputs is None else outputs.reasoning_tokens
        total = usage.total_tokens
        return _named_facts(
            self.id or None,  # no declared id: custom_id, then id (a non-empty string)
            "openai_responses",
            *settle(usage.input_tokens, usage.output_tokens, total, reasoning, cached, written),
            cached,
            written,
            total,
            1,
            reason if reason is not None else self.status,  # incomplete_details.reason | status
            None,
            self.output is not None and not visible,  # the answer's place is `output`
            text_value(self.model),
            time_value(self.created_at),
            # the answer paths in order: output[].content[].text, .refusal, output[].arguments,
            # .call_id, .result
            answer_key(plain, *texts, *refusals, *arguments, *calls, *results),
        )


class _BatchResponsesOutput(_Shape):
    body: Responses
    status_code: Int64 = 200  # formats.batch_failure reads a missing one as 200
    request_id: str | None = None


class BatchResponses(_Shape):
    """An OpenAI Batch output line of the Responses endpoint that succeeded: the body's facts
    (its declaration `openai_responses`, under `response.body`) named by the batch."""

    FORMATS: ClassVar = (("openai_responses", "response.body"),)
    MAKER: ClassVar = _named_facts

    response: _BatchResponsesOutput
    custom_id: str = ""
    id: str = ""
    error: None = None  # a failure rule: `error` present

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        if self.response.status_code != 200:
            raise Unusual  # a failed request
        facts: Any = self.response.body.facts(plain)
        # openai_batch's id: custom_id, then id (a non-empty string)
        return facts._replace(record_id=self.custom_id or self.id or None, format="openai_batch")  # type: ignore[no-any-return]


# --- Anthropic Messages ----------------------------------------------------------------------


class _APart(_Shape):
    type: str
    text: Text = NO_TEXT
    thinking: Text = NO_TEXT
    signature: str | None = None
    citations: None = None
    # a (server) tool use: its `input` an answer path (`content[].input`), read by the general
    # answer rules when given; the anthropic SDK's ToolUseBlock and ServerToolUseBlock keys
    input: msgspec.Raw = NO_TEXT
    id: str | None = None
    name: str | None = None
    caller: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON
    toolset_name: msgspec.Raw = NO_TEXT
    # a tool result's or a compaction's blocks (no answer path reaches them): only checked JSON
    tool_use_id: msgspec.Raw = NO_TEXT
    content: msgspec.Raw = NO_TEXT


class _AThinking(_Shape):
    thinking_tokens: Int64 | None = None


class _ACacheCreation(_Shape):
    ephemeral_5m_input_tokens: Int64 | None = None
    ephemeral_1h_input_tokens: Int64 | None = None


class _AUsage(_Shape):
    output_tokens: Int64  # required: the detect's `usage.output_tokens`
    input_tokens: Int64 | None = None
    cache_creation_input_tokens: Int64 | None = None
    cache_read_input_tokens: Int64 | None = None
    output_tokens_details: _AThinking | None = None
    cache_creation: _ACacheCreation | None = None
    service_tier: str | None = None
    # read by no declaration (the SDK's full dumps write some as null): only checked JSON
    server_tool_use: msgspec.Raw = NO_TEXT
    inference_geo: msgspec.Raw = NO_TEXT
    speed: msgspec.Raw = NO_TEXT
    iterations: msgspec.Raw = NO_TEXT


# Anthropic also states the prompt tokens written to a cache (cache_creation_input_tokens).
_ANTHROPIC = RESPONSES.positional(
    "record_id", "format", *USAGE, "cached_tokens", "cache_write_tokens", "finish_reason",
    "empty_output", "model", "answer_hash", count_type="int", n_samples=1,
)  # fmt: skip


class Anthropic(_Shape):
    """An Anthropic Message (`"type": "message"`) of text and thinking blocks."""

    FORMATS: ClassVar = (("anthropic_message", ""),)
    MAKER: ClassVar = _ANTHROPIC

    type: Literal["message"]  # the detect's `type=message`
    usage: _AUsage
    id: str = ""
    role: str | None = None
    model: str | None = None
    content: list[_APart] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    # read by no declaration (the SDK's full dumps write them as null): only checked JSON
    container: msgspec.Raw = NO_TEXT
    diagnostics: msgspec.Raw = NO_TEXT
    stop_details: msgspec.Raw = NO_TEXT
    context_management: msgspec.Raw = NO_TEXT

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        return self.read(plain, self.id or None, "anthropic_message")

    def read(self, plain: bool, record_id: str | None, fmt: str) -> Facts:
        """The facts of this message, as its own record or as a batch result's."""
        visible = called = False
        for part in self.content or ():
            _texts(plain, part.text, part.thinking)
            visible = visible or _shows_text(part.text)
            called = called or _given(part.input)
        if called:  # tool inputs are objects: the general answer rules on the decoded values
            answer, empty = _anthropic_called(self.content or [])
        else:  # content[].text alone
            answer = answer_key(plain, *(part.text for part in self.content or ()))
            empty = self.content is not None and not visible
        usage = self.usage
        details = usage.output_tokens_details
        read, written = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
        return _ANTHROPIC(
            record_id,
            fmt,
            *settle(
                _sum(usage.input_tokens, written, read),  # cache reads and writes beside it
                usage.output_tokens,
                None,
                None if details is None else details.thinking_tokens,
                read,
                written,
            ),
            read,
            written,
            self.stop_reason,
            empty,
            text_value(self.model),
            answer,
        )


def _anthropic_called(parts: list[_APart]) -> tuple[int | None, bool]:
    """(answer key, empty output) of a message with tool inputs, by the general answer rules
    on the answer values in path order: every `content[].text`, then every `content[].input`."""
    values = [
        value
        for key in ("text", "input")
        for part in parts
        if (value := _raw_value(getattr(part, key))) is not None
    ]
    texts = [text for value in values if (text := part_text(value)) is not None]
    return (key_of_texts(texts) if texts else None), not any(map(visible_value, values))


class _ASucceeded(_Shape):
    type: Literal["succeeded"]  # errored/canceled/expired: a failure rule, the general path
    message: Anthropic  # read as `anthropic_message` (the declaration's inner format)


class AnthropicBatch(_Shape):
    """A Message Batch result line that succeeded: `{"custom_id", "result": {"message"}}`."""

    FORMATS: ClassVar = (("anthropic_message", "result.message"),)
    MAKER: ClassVar = _ANTHROPIC

    custom_id: str  # the detect: `result.type & custom_id`
    result: _ASucceeded

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record: the message's, named by the batch."""
        # the declared id `custom_id` (a non-empty string); the message's own id is not read
        return self.result.message.read(plain, self.custom_id or None, "anthropic_batch")


class BedrockBatch(_Shape, rename={"record_id": "recordId", "model_input": "modelInput",
                                   "model_output": "modelOutput"}):  # fmt: skip
    """A Bedrock batch inference output line with a Claude body: `{"recordId", "modelInput",
    "modelOutput": <an Anthropic message>}`."""

    FORMATS: ClassVar = (("anthropic_message", "modelOutput"),)
    MAKER: ClassVar = _ANTHROPIC

    record_id: str  # the detect: `recordId & modelOutput`
    model_output: Anthropic  # read as `anthropic_message`, the first inner format
    model_input: msgspec.Raw = msgspec.Raw()  # the request: skipped

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record: the body's, named by the batch."""
        # the declared id `recordId` (a non-empty string); no `error` key (a failure rule)
        return self.model_output.read(plain, self.record_id or None, "bedrock_batch")


# --- Gemini: REST / by_alias (camelCase) and the Python SDK's default dumps (snake_case) ------


# One declaration, two spellings: each key is written snake_case here and built twice, as is and
# renamed to camelCase (msgspec applies `rename` only to a class's own fields, so each family
# is made by `defstruct`). Keys the SDK's full dumps write as null and nothing reads are typed
# `None`: any other value there takes the slower paths, which decide.
_NULL = (None, None)
_GPART = {
    "text": (Text, NO_TEXT),
    "thought": (bool | None, None),
    "thought_signature": (str | None, None),
    # an answer path (`parts[].functionCall`), read by the general answer rules when given
    "function_call": (msgspec.Raw, NO_TEXT),
    "tool_call": (msgspec.Raw, NO_TEXT),  # read by no declaration: only checked JSON
    **dict.fromkeys(
        (
            "media_resolution", "code_execution_result", "executable_code", "file_data",
            "function_response", "inline_data", "video_metadata", "tool_response",
            "part_metadata", "audio_transcription", "media_processing", "speech_metadata",
            "document_metadata", "spreadsheet_metadata", "audio_metadata",
        ),
        _NULL,
    ),
}  # fmt: skip
_GMODALITY = {"modality": (str | None, None), "token_count": (Int64 | None, None)}
_GCANDIDATE_NULLS = (
    "citation_metadata", "grounding_metadata", "logprobs_result", "safety_ratings",
    "url_context_metadata", "continuation_token",
)  # fmt: skip
_GUSAGE_COUNTS = (
    "prompt_token_count", "candidates_token_count", "thoughts_token_count",
    "cached_content_token_count", "total_token_count", "tool_use_prompt_token_count",
)  # fmt: skip
_GUSAGE_DETAILS = (
    "prompt_tokens_details", "candidates_tokens_details", "cache_tokens_details",
    "tool_use_prompt_tokens_details",
)  # fmt: skip
# `prompt_feedback` only null: `promptFeedback.blockReason` is a failure rule
_GTOP_NULLS = (
    "sdk_http_response", "prompt_feedback", "model_status", "automatic_function_calling_history",
    "parsed",
)  # fmt: skip


Rename = Literal["camel"] | None


def _struct(name: str, fields: dict[str, Any], rename: Rename) -> Any:
    """A shape of `fields` (key: (type, default)), its keys spelled by `rename`."""
    specs = [(key, kind, default) for key, (kind, default) in fields.items()]
    return msgspec.defstruct(name, specs, bases=(_Shape,), rename=rename)


def _list_of(shape: Any) -> Any:
    """`list[shape] | None` of a shape made at import."""
    return list[shape] | None  # type: ignore[valid-type]


def _gemini_facts(record: Any, plain: bool, record_id: str | None, fmt: str) -> Facts:
    """The response facts of a Gemini response, as its own record or as a batch line's."""
    visible, finish, contents, texts, calls = False, None, False, [], []
    for candidate in record.candidates or ():
        if finish is None:
            finish = candidate.finish_reason  # candidates[].finishReason: the first
        content = candidate.content
        contents = contents or content is not None
        for part in (content.parts if content is not None else None) or ():
            _texts(plain, part.text)
            # parts[].text; a `"thought": true` part is reasoning, no answer
            visible = visible or (part.thought is not True and _shows_text(part.text))
            if part.thought is not True:
                texts.append(part.text)
                calls.append(part.function_call)
    if finish is None and contents:
        raise Unusual  # a streamed chunk before the last: a fragment
    answer = answer_key(plain, *texts)
    if any(map(_given, calls)):  # the answer values in path order: every text, then every call
        values = [v for raw in (*texts, *calls) if (v := _raw_value(raw)) is not None]
        strings = [text for value in values if (text := part_text(value)) is not None]
        answer = key_of_texts(strings) if strings else None
        visible = any(map(visible_value, values))
    usage = record.usage_metadata
    thoughts, cached = usage.thoughts_token_count, usage.cached_content_token_count
    total = usage.total_token_count
    return _named_facts(
        record_id,
        fmt,
        *settle(
            _sum(usage.prompt_token_count, usage.tool_use_prompt_token_count),  # tool use: input
            _completion(_sum(usage.candidates_token_count, thoughts)),  # candidates + thoughts
            total,
            thoughts,
            cached,
        ),
        cached,
        None,
        total,
        1,
        finish,
        None,
        record.candidates is not None and not visible,
        text_value(record.model_version),
        time_value(record.create_time),
        answer,
    )


class _GeminiRecord(_Shape):
    """Base of the Gemini `GenerateContentResponse` shapes (their keys: `_gemini_shapes`)."""

    FORMATS: ClassVar = (("gemini", ""),)
    MAKER: ClassVar = _named_facts

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        # the declared id (`responseId` / `response_id`), then custom_id / id (none here)
        return _gemini_facts(self, plain, self.response_id or None, "gemini")  # type: ignore[attr-defined]


class _GeminiBatchLine(_Shape):
    """Base of the Gemini Batch output line shapes: `{"key", "response"}` that succeeded."""

    FORMATS: ClassVar = (("gemini", "response"),)
    MAKER: ClassVar = _named_facts

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record: the response's, named by the batch."""
        # the declared id `key`; `error` (a failure rule) is no key of the shape
        key, response = self.key, self.response  # type: ignore[attr-defined]
        return _gemini_facts(response, plain, key or None, "gemini_batch")


def _gemini_shapes(rename: Rename) -> tuple[Any, Any]:
    """The response and batch-line shapes of one spelling (None: snake_case)."""
    part = _struct("_GPart", _GPART, rename)
    content = _struct(
        "_GContent", {"parts": (_list_of(part), None), "role": (str | None, None)}, rename
    )
    candidate = _struct(
        "_GCandidate",
        {
            "content": (content | None, None),
            "finish_reason": (str | None, None),
            "index": (Int64 | None, None),
            "avg_logprobs": (float | None, None),
            "finish_message": (str | None, None),
            "token_count": (Int64 | None, None),
            **dict.fromkeys(_GCANDIDATE_NULLS, _NULL),
        },
        rename,
    )
    modality = _struct("_GModality", _GMODALITY, rename)
    usage = _struct(
        "_GUsage",
        {
            **dict.fromkeys(_GUSAGE_COUNTS, (Int64 | None, None)),
            **dict.fromkeys(_GUSAGE_DETAILS, (_list_of(modality), None)),
            "traffic_type": (str | None, None),
            "service_tier": (msgspec.Raw, NO_TEXT),  # read by no declaration: only checked
        },
        rename,
    )
    response = msgspec.defstruct(
        "Gemini",
        [
            ("usage_metadata", usage),  # required: the detect's `usageMetadata`
            ("candidates", _list_of(candidate), None),
            ("model_version", str | None, None),
            ("response_id", str | None, None),
            ("create_time", str | None, None),
            *((key, None, None) for key in _GTOP_NULLS),
        ],
        bases=(_GeminiRecord,),
        rename=rename,
    )
    # the detect: `key & response` (both non-null); read as `gemini` (the inner format)
    batch = msgspec.defstruct(
        "GeminiBatch", [("key", str), ("response", response)], bases=(_GeminiBatchLine,)
    )
    return response, batch


Gemini, GeminiBatch = _gemini_shapes("camel")
GeminiSnake, GeminiBatchSnake = _gemini_shapes(None)
NULL = b"null"


class _VertexBatchLine(_Shape):
    """Base of the Vertex AI batch prediction output line shapes: `{"status": "", "request",
    "response": <a Gemini response>}` that succeeded (their keys: `_vertex_shape`)."""

    FORMATS: ClassVar = (("gemini", "response"),)
    MAKER: ClassVar = _named_facts

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record: the response's, named by the batch."""
        status, request = self.status, self.request  # type: ignore[attr-defined]
        if status or bytes(request) == NULL:
            raise Unusual  # a failure rule (`status != ""`), or no request: another format
        # no declared id, and no custom_id / id at the top
        return _gemini_facts(self.response, plain, None, "vertex_batch")  # type: ignore[attr-defined]


def _vertex_shape(response: Any) -> Any:
    """The Vertex batch line shape around one spelling's Gemini response."""
    return msgspec.defstruct(
        "VertexBatch",
        [
            ("status", str),  # the detect: `has(status) & request & has(response)`
            ("request", msgspec.Raw),  # the request: skipped (but present and not null)
            ("response", response),  # read as `gemini`
            ("processed_time", str | None, None),
        ],
        bases=(_VertexBatchLine,),
    )


VertexBatch, VertexBatchSnake = _vertex_shape(Gemini), _vertex_shape(GeminiSnake)


# --- Cohere v2 chat ----------------------------------------------------------------------------


class _CPart(_Shape):
    type: str
    text: Text = NO_TEXT
    thinking: Text = NO_TEXT


class _CMessage(_Shape):
    role: str | None = None
    content: list[_CPart] | None = None
    tool_calls: None = None
    tool_plan: Text = NO_TEXT
    citations: None = None


class _CTokens(_Shape):
    input_tokens: float | None = None
    output_tokens: float | None = None


class _CUsage(_Shape):
    tokens: _CTokens
    billed_units: _CTokens | None = None
    cached_tokens: float | None = None  # a part of the input tokens


def _float_count(value: float | None) -> int | None:
    """A count where the format allows integral floats (`float_counts`); anything a double
    cannot hold exactly (or not integral): the general path decides."""
    if value is None:
        return None
    if value.is_integer() and -EXACT_FLOAT < value < EXACT_FLOAT:
        return int(value)
    raise Unusual


class Cohere(_Shape):
    """A Cohere v2 chat response (its SDK types the counts as floats)."""

    FORMATS: ClassVar = (("cohere_chat", ""),)
    MAKER: ClassVar = _facts

    usage: _CUsage
    id: str = ""
    finish_reason: str | None = None
    message: _CMessage | None = None
    logprobs: None = None

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        visible, texts = False, []
        message = self.message
        if message is not None:
            _texts(plain, message.tool_plan)
            for part in message.content or ():
                _texts(plain, part.text, part.thinking)
                visible = visible or _shows_text(part.text)  # message.content[].text
                texts.append(part.text)
        tokens = self.usage.tokens
        cached = _float_count(self.usage.cached_tokens)
        return _facts(
            self.id or None,
            "cohere_chat",
            *settle(
                _float_count(tokens.input_tokens),
                _completion(_float_count(tokens.output_tokens)),
                None,
                None,
                cached,
            ),
            cached,
            None,
            None,
            1,
            self.finish_reason,
            None,
            message is not None and not visible,
            answer_key(plain, *texts),
        )


# --- vLLM offline RequestOutput (n samples) ----------------------------------------------------


class _VOutput(_Shape):
    index: Int64 | None = None
    text: Text = NO_TEXT
    token_ids: msgspec.Raw = msgspec.Raw()
    cumulative_logprob: float | None = None
    logprobs: None = None
    finish_reason: Finish = None
    stop_reason: Int64 | str | None = None
    lora_request: None = None


class VLLM(_Shape):
    """`{"request_id", "prompt_token_ids", "outputs": [{"token_ids", ...}, ...]}`."""

    FORMATS: ClassVar = (("vllm_offline", ""),)
    MAKER: ClassVar = _facts

    outputs: list[_VOutput]
    request_id: str | None = None
    prompt: Text = NO_TEXT
    prompt_token_ids: msgspec.Raw = msgspec.Raw()
    num_cached_tokens: Int64 | None = None
    finished: bool | None = None
    prompt_logprobs: None = None
    encoder_prompt: None = None
    encoder_prompt_token_ids: None = None
    metrics: None = None
    lora_request: None = None

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        _texts(plain, self.prompt)
        prompt = _ids_len(self.prompt_token_ids)  # len(prompt_token_ids)
        completion, visible, finishes = None, False, []
        for output in self.outputs:
            _texts(plain, output.text)
            visible = visible or _shows_text(output.text)  # outputs[].text
            n = _ids_len(output.token_ids)
            if n is not None:
                completion = n if completion is None else completion + n
            reason = _reason(output.finish_reason)
            if reason is not None:
                finishes.append(reason)  # each sample's reason counts (each_finish)
        # the detect: outputs[].token_ids & (request_id | prompt_token_ids)
        if completion is None or (self.request_id is None and prompt is None):
            raise Unusual
        cached = self.num_cached_tokens
        return _facts(
            self.request_id or None,
            "vllm_offline",
            *settle(prompt, completion, None, None, cached),
            cached,
            None,
            None,
            len(self.outputs),  # detected, so at least one output: len(outputs)
            finishes[0] if finishes else None,
            FINISH_SEPARATOR.join(finishes[1:]) or None,
            not visible,
            answer_key(plain, *(output.text for output in self.outputs)),
        )


# --- Bedrock Converse ------------------------------------------------------------------------


class _CvPart(_Shape):
    text: Text = NO_TEXT
    toolUse: msgspec.Raw = NO_TEXT  # an answer (`content[].toolUse`): read by the general rules
    # read by no declaration: only checked JSON
    reasoningContent: msgspec.Raw = NO_TEXT
    toolResult: msgspec.Raw = NO_TEXT


class _CvMessage(_Shape):
    content: list[_CvPart] | None = None
    role: str | None = None


class _CvOutput(_Shape):
    message: _CvMessage | None = None


class _CvUsage(_Shape):
    outputTokens: Int64  # required: the detects' `usage.outputTokens`
    inputTokens: Int64 | None = None
    totalTokens: Int64 | None = None
    cacheReadInputTokens: Int64 | None = None
    cacheWriteInputTokens: Int64 | None = None
    cacheReadInputTokenCount: Int64 | None = None  # Nova's InvokeModel body's names
    cacheWriteInputTokenCount: Int64 | None = None
    # read by no declaration: only checked JSON
    serverToolUsage: msgspec.Raw = NO_TEXT
    cacheDetails: msgspec.Raw = NO_TEXT

    def cache(self) -> tuple[int | None, int | None]:
        """(read, written) by the declaration that detects the record: the Converse API's
        names (`cacheReadInputTokens` present, or `cacheReadInputTokenCount` absent), else
        Nova's (`...TokenCount`)."""
        if self.cacheReadInputTokens is not None or self.cacheReadInputTokenCount is None:
            return self.cacheReadInputTokens, self.cacheWriteInputTokens
        return self.cacheReadInputTokenCount, self.cacheWriteInputTokenCount


_CONVERSE = RESPONSES.positional(
    *USAGE, "cached_tokens", "cache_write_tokens", "total_tokens", "finish_reason",
    "empty_output", "answer_hash", format="bedrock_converse", count_type="int", n_samples=1,
)  # fmt: skip


class Converse(_Shape):
    """A Bedrock Converse reply (`{"output": {"message": ...}, "usage": {...}}`)."""

    FORMATS: ClassVar = (("bedrock_converse", ""),)
    MAKER: ClassVar = _CONVERSE

    usage: _CvUsage
    output: _CvOutput  # the answer's place (present: an empty reply is an empty output)
    stopReason: str | None = None
    # read by no declaration: only checked JSON
    metrics: msgspec.Raw = NO_TEXT
    trace: msgspec.Raw = NO_TEXT
    additionalModelResponseFields: msgspec.Raw = NO_TEXT
    performanceConfig: msgspec.Raw = NO_TEXT
    serviceTier: msgspec.Raw = NO_TEXT

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        message = self.output.message
        parts = (message.content if message is not None else None) or []
        for part in parts:
            _texts(plain, part.text)
        usage = self.usage
        read, written = usage.cache()
        if any(_given(part.toolUse) for part in parts):
            answer, empty = _used_tools(parts)
        else:
            answer = answer_key(plain, *(part.text for part in parts))
            empty = not any(_shows_text(part.text) for part in parts)
        return _CONVERSE(
            *settle(
                _sum(usage.inputTokens, read, written),  # cache reads and writes beside it
                usage.outputTokens,
                usage.totalTokens,
                None,
                read,
                written,
            ),
            read,
            written,
            usage.totalTokens,
            self.stopReason,
            empty,
            answer,
        )


def _used_tools(parts: list[_CvPart]) -> tuple[int | None, bool]:
    """(answer key, empty output) of a reply calling tools, by the general answer rules on
    the answer values in path order (every text, then every tool use)."""
    values = [
        value
        for key in ("text", "toolUse")
        for part in parts
        if (value := _raw_value(getattr(part, key))) is not None
    ]
    texts = [text for value in values if (text := part_text(value)) is not None]
    return (key_of_texts(texts) if texts else None), not any(map(visible_value, values))


API_SHAPES: tuple[type[Any], ...] = (
    Responses, BatchResponses, Anthropic, AnthropicBatch, Gemini, GeminiSnake, GeminiBatch,
    GeminiBatchSnake, Cohere, VLLM, BedrockBatch, VertexBatch, VertexBatchSnake, Converse,
)  # fmt: skip
