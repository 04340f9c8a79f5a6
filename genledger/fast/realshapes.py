"""Typed shapes of records real servers write that the other shape modules did not hold.

OpenAI's legacy text completions (`"object": "text_completion"`, also vLLM's and llama.cpp's
`/v1/completions`), xAI's chat completions, Ollama's native `/api/chat` and `/api/generate`
replies, DashScope's native Generation replies that succeeded, Amazon Titan Text bodies (also
in Bedrock batch output lines), providers' error bodies and Bedrock batch lines that failed,
declared key by key like `genledger.fast.shapes` (whose rules and helpers they share), with
the keys real records, the providers' docs and SDK models (`openai.types.Completion`,
`ollama.ChatResponse`, `ollama.GenerateResponse`) hold, nulls where they write nulls. Their
facts are those `formats.response_facts` gives for the declarations `openai_completion`,
`xai_chat`, `ollama`, `dashscope`, `bedrock_titan`, `bedrock_batch` and `error`; anything
outside the shapes raises and the slower paths decide. tests/genledger/fast/test_realshapes.py
checks them against the general path.
"""

# No `from __future__ import annotations`: msgspec reads these structs' annotations when a
# decoder is made (see genledger.fast.shapes).

from typing import Any, ClassVar, Literal

import msgspec

from genledger.fast.apishapes import _sum
from genledger.fast.shapes import (
    CHAT_FACTS,
    NO_TEXT,
    RAW_NULL,
    USAGE,
    Chat,
    Finish,
    Int64,
    SGLang,
    Text,
    Unusual,
    _chat_facts,
    _Choice,
    _Message,
    _no_think,
    _raw_value,
    _reason,
    _Shape,
    _shows_text,
    _think_tag_in,
    _Usage,
    answer_key,
    text_key,
)
from genledger.parse.answer import key_of_texts, part_text
from genledger.parse.declarations import MESSAGE_CHARS
from genledger.parse.formats import _visible as visible  # as fast/shapes.py reads it
from genledger.parse.formats import text_value, time_value
from genledger.parse.schema import RESPONSES, Facts
from genledger.parse.usage import settle

# --- OpenAI legacy text completions ---------------------------------------------------------


class _TextChoice(_Shape):
    text: Text  # required: the answer path `choices[].text` (a chat choice has `message`)
    index: Int64 | None = None
    finish_reason: Finish = None
    logprobs: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON
    # vLLM's: read by no declaration, only checked JSON
    stop_reason: msgspec.Raw = NO_TEXT
    prompt_logprobs: msgspec.Raw = NO_TEXT


_COMPLETION = RESPONSES.positional(
    "record_id", *USAGE, "cached_tokens", "cache_write_tokens", "total_tokens", "n_samples",
    "finish_reason", "model", "created", "answer_hash", "empty_output",
    format="openai_completion", count_type="int",
)  # fmt: skip


class TextCompletion(_Shape):
    """`{"object": "text_completion", "choices": [{"text", ...}], "usage": {...}}`."""

    FORMATS: ClassVar = (("openai_completion", ""),)
    MAKER: ClassVar = _COMPLETION

    object: Literal["text_completion"]  # the detect's `object=text_completion`
    usage: _Usage  # no `num_sources_used`: xAI's records are `xai_chat`'s
    choices: list[_TextChoice]
    id: str = ""
    created: Int64 | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None
    kv_transfer_params: msgspec.Raw = NO_TEXT  # vLLM's: read by no declaration

    def facts(self, plain: int) -> Facts:
        """The response facts of this record (the `openai_completion` declaration's)."""
        choices = self.choices
        if len(choices) == 1:  # the usual record, without the lists below
            choice = choices[0]
            text = choice.text
            _think_tag_in(text, bool(plain))  # a raw text is never a leak; checked
            return _COMPLETION(
                self.id or None, *self.usage.counts(), 1, _reason(choice.finish_reason),
                text_value(self.model), time_value(self.created), text_key(plain, text),
                not _shows_text(text),
            )  # fmt: skip
        if not choices:
            raise Unusual  # no answer: `n_samples` and the finish read as declared
        for choice in choices:
            _think_tag_in(choice.text, bool(plain))
        # the answer paths of `CHAT_ANSWER` hold only `choices[].text` here (no messages)
        answer = answer_key(plain, *(choice.text for choice in choices))
        found = [r for r in (_reason(c.finish_reason) for c in choices) if r is not None]
        return _COMPLETION(
            self.id or None, *self.usage.counts(), len(choices), found[0] if found else None,
            text_value(self.model), time_value(self.created), answer,
            not any(_shows_text(choice.text) for choice in choices),
        )  # fmt: skip


# --- xAI chat completions (REST): reasoning beside the completion ------------------------------


class _XaiUsage(_Usage, kw_only=True):
    num_sources_used: msgspec.Raw  # required: the detect's `has(usage.num_sources_used)`
    cost_in_usd_ticks: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON


class XaiChat(Chat, kw_only=True):
    """An xAI chat completion (`usage.num_sources_used`): the `xai_chat` declaration, the
    chat fields but its completion `completion_tokens + completion_tokens_details.
    reasoning_tokens` and its reasoning only the latter."""

    # one format where the chat shape names two (a ClassVar's type is its first value's)
    FORMATS: ClassVar = (("xai_chat", ""),)  # type: ignore[assignment]
    MAKER: ClassVar = CHAT_FACTS

    usage: _XaiUsage

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record (the chat shape's, its counts as declared)."""
        usage = self.usage
        details = usage.completion_tokens_details
        reasoning = None if details is None else details.reasoning_tokens
        completion = _sum(usage.completion_tokens, reasoning)
        if completion is None:
            raise Unusual  # a sum beyond int64: the general path words it
        counts = usage.settled(completion, reasoning)
        return _chat_facts(self, self.id or None, "xai_chat", plain, counts)


# --- Gemini through its OpenAI-compatible endpoint -------------------------------------------


class _GoogleExtra(_Shape):
    google: msgspec.Raw  # required: the detect's `choices[].message.extra_content.google`


class _GeminiMessage(_Message, kw_only=True):
    extra_content: _GoogleExtra  # required: in every message (a record of some: general path)
    thought_signature: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON


class _GeminiChoice(_Choice, kw_only=True):
    message: _GeminiMessage


class GeminiOpenAI(Chat, kw_only=True):
    """A chat completion of Gemini's OpenAI-compatible endpoint (`extra_content.google` in
    its messages): the `gemini_openai` declaration, the chat fields but its completion
    `usage.total_tokens - usage.prompt_tokens` (the thoughts are only in the total) and its
    reasoning that less `usage.completion_tokens`."""

    FORMATS: ClassVar = (("gemini_openai", ""),)  # type: ignore[assignment]
    MAKER: ClassVar = CHAT_FACTS

    choices: list[_GeminiChoice]  # type: ignore[assignment]

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record (the chat shape's, its counts as declared)."""
        if any(choice.message.extra_content.google == RAW_NULL for choice in self.choices):
            raise Unusual  # null is absent to the detect: the general path detects the record
        usage = self.usage
        total, prompt, visible = usage.total_tokens, usage.prompt_tokens, usage.completion_tokens
        if any(n is not None and n < 0 for n in (total, prompt, visible)):
            raise Unusual  # a count that is none: the general path words it
        if total is None:  # the first alternative has no added term: `usage.completion_tokens`
            completion, reasoning = visible, None
        else:
            completion = total - (prompt or 0)
            reasoning = completion - visible
            if completion < 0 or reasoning < 0:
                raise Unusual  # a difference below zero: the general path words it
        counts = usage.settled(completion, reasoning)
        return _chat_facts(self, self.id or None, "gemini_openai", plain, counts)


# --- A pipeline's envelope around an SGLang /generate record ----------------------------------


class _SamplingParams(_Shape):
    # SGLang's sampling parameters, scalars and texts only: no value is an object, so none is a
    # second record the envelope's reading could find
    temperature: float | None = None
    top_p: float | None = None
    top_k: Int64 | None = None
    min_p: float | None = None
    max_new_tokens: Int64 | None = None
    min_new_tokens: Int64 | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    stop: str | list[str] | None = None
    n: Int64 | None = None
    seed: Int64 | None = None
    ignore_eos: bool | None = None
    skip_special_tokens: bool | None = None


class SGLangEnvelope(_Shape):
    """`{"phase", "prompt", "sampling_params", "text", "raw": {SGLang's record}}`: no
    declaration detects the envelope and `raw` is its one object holding a known record, so its
    facts are the record's (`formats.response_facts` of an envelope), its id the record's (the
    envelope has none)."""

    FORMATS: ClassVar = (("sglang_generate", "raw"),)
    MAKER: ClassVar = SGLang.MAKER

    raw: SGLang  # required: the record
    phase: str | None = None
    prompt: Text = NO_TEXT  # a string or null (checked): no object, no second record
    text: Text = NO_TEXT
    sampling_params: _SamplingParams | None = None

    def facts(self, plain: bool) -> Facts:
        """The response facts of the record under `raw`."""
        _think_tag_in(self.prompt, plain)  # a valid string or null, else the general path
        _think_tag_in(self.text, plain)
        return self.raw.facts(plain)


# --- Ollama native /api/chat and /api/generate ------------------------------------------------


class _OllamaMessage(_Shape):
    role: str | None = None
    content: Text = NO_TEXT
    thinking: Text = NO_TEXT
    # read by no declaration (`ollama` reads no answer): only checked JSON
    images: msgspec.Raw = NO_TEXT
    tool_name: msgspec.Raw = NO_TEXT
    tool_calls: msgspec.Raw = NO_TEXT


_OLLAMA = RESPONSES.positional(
    *USAGE, "finish_reason", format="ollama", count_type="int", n_samples=1
)


class Ollama(_Shape):
    """An Ollama reply (`"done": true`, `eval_count`), of /api/chat (`message`) or of
    /api/generate (`response`)."""

    FORMATS: ClassVar = (("ollama", ""),)
    MAKER: ClassVar = _OLLAMA

    eval_count: Int64  # required: the detect's `eval_count & done`
    done: bool  # `done: false` is a stream's event: the general path
    model: str | None = None
    created_at: str | None = None
    done_reason: str | None = None
    prompt_eval_count: Int64 | None = None
    message: _OllamaMessage | None = None
    response: Text = NO_TEXT
    thinking: Text = NO_TEXT
    # read by no declaration: only checked JSON
    total_duration: msgspec.Raw = NO_TEXT
    load_duration: msgspec.Raw = NO_TEXT
    prompt_eval_duration: msgspec.Raw = NO_TEXT
    eval_duration: msgspec.Raw = NO_TEXT
    context: msgspec.Raw = NO_TEXT
    logprobs: msgspec.Raw = NO_TEXT

    def facts(self, plain: int) -> Facts:
        """The response facts of this record (the `ollama` declaration's: no id, no answer)."""
        if self.done is not True:
            raise Unusual
        message = self.message
        if message is not None:
            # `messages="message"`: a think tag in its content may be a leak
            _no_think(message.content, bool(plain))
            _think_tag_in(message.thinking, bool(plain))
        _think_tag_in(self.response, bool(plain))  # a raw text: never a leak, yet checked
        _think_tag_in(self.thinking, bool(plain))
        return _OLLAMA(*settle(self.prompt_eval_count, self.eval_count, None), self.done_reason)


# --- Alibaba DashScope native Generation / MultiModalConversation ---------------------------


class _DSMessage(_Shape):
    role: str | None = None
    content: msgspec.Raw = NO_TEXT  # an answer path: a text, or a list of `{"text"}` parts
    # read by no declaration (`dashscope` reads no messages): only checked JSON
    reasoning_content: msgspec.Raw = NO_TEXT
    tool_calls: msgspec.Raw = NO_TEXT


class _DSChoice(_Shape):
    finish_reason: str | None = None
    message: _DSMessage | None = None
    logprobs: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON


class _DSOutput(_Shape):
    text: msgspec.Raw = NO_TEXT  # an answer path (`output.text`)
    finish_reason: str | None = None
    choices: list[_DSChoice] | None = None
    search_info: msgspec.Raw = NO_TEXT  # read by no declaration: only checked JSON


class _DSPromptDetails(_Shape):
    cached_tokens: Int64 | None = None


class _DSOutputDetails(_Shape):
    reasoning_tokens: Int64 | None = None


class _DSUsage(_Shape):
    output_tokens: Int64  # required: the detect's `usage.output_tokens`
    input_tokens: Int64 | None = None
    total_tokens: Int64 | None = None
    prompt_tokens_details: _DSPromptDetails | None = None
    output_tokens_details: _DSOutputDetails | None = None
    # a multimodal reply's parts of the input, read by no declaration: only checked JSON
    image_tokens: msgspec.Raw = NO_TEXT
    video_tokens: msgspec.Raw = NO_TEXT
    audio_tokens: msgspec.Raw = NO_TEXT
    input_tokens_details: msgspec.Raw = NO_TEXT


_DASHSCOPE = RESPONSES.positional(
    "record_id", *USAGE, "cached_tokens", "total_tokens", "finish_reason", "model",
    "empty_output", "answer_hash", format="dashscope", count_type="int", n_samples=1,
)  # fmt: skip


class DashScope(_Shape):
    """`{"status_code": 200, "request_id", "output": {...}, "usage": {...}}` (the dashscope
    SDK's GenerationResponse / MultiModalConversationResponse)."""

    FORMATS: ClassVar = (("dashscope", ""),)
    MAKER: ClassVar = _DASHSCOPE

    request_id: str  # the detect: `output & usage.output_tokens & has(request_id)`
    output: _DSOutput
    usage: _DSUsage
    status_code: Int64 | None = None
    code: msgspec.Raw = NO_TEXT  # the failure's words: read only when it failed
    message: msgspec.Raw = NO_TEXT
    model: str | None = None

    def facts(self, plain: int) -> Facts:
        """The response facts of this record (the `dashscope` declaration's)."""
        if self.status_code is not None and self.status_code != 200:
            raise Unusual  # a failure rule: `status_code != 200`
        output, usage = self.output, self.usage
        choices = output.choices or ()
        for choice in choices:
            if choice.message is not None:
                _think_tag_in(choice.message.reasoning_content, bool(plain))
        # finish: `output.choices[].finish_reason | output.finish_reason`, the first reached
        finishes = [c.finish_reason for c in choices if c.finish_reason is not None]
        finish = finishes[0] if finishes else output.finish_reason
        # answer: every `output.choices[].message.content`, then `output.text`, by the general
        # answer rules on the decoded values (a content may be a list of parts)
        raws = [c.message.content for c in choices if c.message is not None]
        values = [v for raw in (*raws, output.text) if (v := _raw_value(raw)) is not None]
        texts = [text for value in values if (text := part_text(value)) is not None]
        details = usage.prompt_tokens_details
        cached = None if details is None else details.cached_tokens
        reasoning = usage.output_tokens_details
        return _DASHSCOPE(
            self.request_id or None,
            *settle(
                usage.input_tokens, usage.output_tokens, usage.total_tokens,
                None if reasoning is None else reasoning.reasoning_tokens, cached,
            ),
            cached, usage.total_tokens, finish, text_value(self.model),
            not any(map(visible, values)),  # `output` is the answer's place, never null here
            key_of_texts(texts) if texts else None,
        )  # fmt: skip


# --- Amazon Titan Text on Bedrock (InvokeModel bodies and batch output lines) ----------------


class _TitanResult(_Shape, rename="camel"):
    token_count: Int64  # the detect's `results[].tokenCount`
    output_text: Text = NO_TEXT  # the answer path `results[].outputText`
    completion_reason: str | None = None


_TITAN = RESPONSES.positional(
    "record_id", "format", *USAGE, "finish_reason", "empty_output", "answer_hash",
    count_type="int", n_samples=1,
)  # fmt: skip


class Titan(_Shape, rename="camel"):
    """`{"inputTextTokenCount", "results": [{"tokenCount", "outputText", ...}]}` with one
    result (Titan Text's InvokeModel body)."""

    FORMATS: ClassVar = (("bedrock_titan", ""),)
    MAKER: ClassVar = _TITAN

    input_text_token_count: Int64  # the detect's `inputTextTokenCount`
    results: list[_TitanResult]

    def facts(self, plain: int) -> Facts:
        """The response facts of this record (the `bedrock_titan` declaration's)."""
        return self.read(plain, None, "bedrock_titan")

    def read(self, plain: int, record_id: str | None, fmt: str) -> Facts:
        """The facts of this body, as its own record or as a batch line's."""
        if len(self.results) != 1:
            raise Unusual  # several results' counts add up as declared: the general path
        result = self.results[0]
        _think_tag_in(result.output_text, bool(plain))  # a raw text: never a leak, checked
        return _TITAN(
            record_id,
            fmt,
            *settle(self.input_text_token_count, result.token_count, None),
            result.completion_reason,
            not _shows_text(result.output_text),  # `results` is the answer's place
            text_key(plain, result.output_text),
        )


class BedrockBatchTitan(_Shape, rename="camel"):
    """A Bedrock batch inference output line with a Titan Text body: `{"recordId",
    "modelInput", "modelOutput": {...}}`."""

    FORMATS: ClassVar = (("bedrock_titan", "modelOutput"),)
    MAKER: ClassVar = _TITAN

    record_id: str  # the detect: `recordId & modelOutput`
    model_output: Titan  # read as `bedrock_titan` (neither Anthropic's nor Converse's keys)
    model_input: msgspec.Raw = NO_TEXT  # the request: skipped

    def facts(self, plain: int) -> Facts:
        """The response facts of this record: the body's, named by the batch."""
        # the declared id `recordId` (a non-empty string); no `error` key (a failure rule)
        return self.model_output.read(plain, self.record_id or None, "bedrock_batch")


# --- a provider's error body saved as a line (OpenAI, Anthropic, Gemini, Groq, OpenRouter) -----


class _ErrorObject(_Shape):
    message: str  # the reason's detail (`error.message`, the first place ERROR_MESSAGE names)
    code: str | Int64 | None = None  # the label: `error {error.code | error.type | ...}`
    type: str | None = None
    # read by no declaration (openai's ErrorObject, Gemini's, Groq's, OpenRouter's extras):
    # only checked JSON
    param: msgspec.Raw = NO_TEXT
    status: msgspec.Raw = NO_TEXT
    details: msgspec.Raw = NO_TEXT
    failed_generation: msgspec.Raw = NO_TEXT
    metadata: msgspec.Raw = NO_TEXT
    misalignment: msgspec.Raw = NO_TEXT


_ERROR = RESPONSES.positional(
    "request_detail", *USAGE, format="error", failed_request=True, n_samples=0
)


class ErrorBody(_Shape):
    """`{"error": {"message", "code" or "type", ...}}`, also Anthropic's `{"type": "error",
    "error": {...}, "request_id"}`: the `error` declaration's first failure rule."""

    FORMATS: ClassVar = (("error", ""),)
    MAKER: ClassVar = _ERROR

    error: _ErrorObject  # the detect `error`; its failure rule `error`, the first that holds
    type: Literal["error"] | None = None  # no stream event's type
    request_id: msgspec.Raw = NO_TEXT  # read by no declaration (no id path): only checked
    user_id: msgspec.Raw = NO_TEXT  # OpenRouter's: read by no declaration, only checked

    def facts(self, plain: int) -> Facts:
        """The response facts of this record: a failed request, its reason
        `error <code or type>: <message>` as `formats.failure_reason` writes it."""
        error = self.error
        if not error.message:
            raise Unusual  # the message is looked for in the other places: the general path
        label = error.code if error.code is not None else error.type
        return _ERROR(_failure("error", label, error.message), *settle(None, None, None))


class BareError(_Shape):
    """Bedrock's HTTP error body, a bare `{"message"}` (with a `code` too): the `error`
    declaration's last detect and its `message` failure rule (no `error` key: not the first)."""

    FORMATS: ClassVar = (("error", ""),)
    MAKER: ClassVar = _ERROR

    message: str  # the detect `message ^= ""` and the reason's detail
    code: str | Int64 | None = None  # the label: `error {code}`

    def facts(self, plain: int) -> Facts:
        """The response facts of this record: a failed request, its reason
        `error <code>: <message>` as `formats.failure_reason` writes it."""
        if not self.message:
            raise Unusual  # an empty detail is left out of the reason: the general path
        return _ERROR(_failure("error", self.code, self.message), *settle(None, None, None))


class _BedrockError(_Shape, rename="camel"):
    error_message: str  # the reason's detail (`error.errorMessage`, the first place named)
    error_code: str | Int64 | None = None  # the label: `error {error.errorCode}`


_BATCH_ERROR = RESPONSES.positional(
    "record_id", "request_detail", *USAGE, format="bedrock_batch", failed_request=True,
    n_samples=0,
)  # fmt: skip


class BedrockBatchError(_Shape, rename="camel"):
    """A Bedrock batch output line whose request failed: `{"recordId", "modelInput",
    "error": {"errorCode", "errorMessage"}}` (no `modelOutput`)."""

    FORMATS: ClassVar = (("bedrock_batch", ""),)
    MAKER: ClassVar = _BATCH_ERROR

    record_id: str  # the detect: `recordId & error`
    error: _BedrockError  # the first failure rule, `error`
    model_input: msgspec.Raw = NO_TEXT  # the request: skipped

    def facts(self, plain: int) -> Facts:
        """The response facts of this record: a failed request, its reason
        `error <errorCode>: <errorMessage>` as `formats.failure_reason` writes it."""
        error = self.error
        if not error.error_message:
            raise Unusual  # the message is looked for in the other places: the general path
        return _BATCH_ERROR(
            self.record_id or None,
            _failure("error", error.error_code, error.error_message),
            *settle(None, None, None),
        )


def _failure(label: str, value: str | int | None, message: str) -> str:
    """`formats.failure_reason` of a rule labelled `<label> {<a path>}` whose path reached
    `value`, with a non-empty `message`: a value as `str(...)[:60]`, a missing one `?`, then
    " ?" dropped (`formats._fill`), and the message cut at `MESSAGE_CHARS`."""
    text = f"{label} " + ("?" if value is None else str(value)[:60])
    return f"{text.replace(' ?', '')}: {message[:MESSAGE_CHARS]}"


REAL_SHAPES: tuple[type[Any], ...] = (
    TextCompletion, XaiChat, GeminiOpenAI, SGLangEnvelope, Ollama, DashScope, Titan,
    BedrockBatchTitan, ErrorBody, BareError, BedrockBatchError,
)  # fmt: skip
