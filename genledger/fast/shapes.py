"""Facts straight from typed msgspec Structs for the common record shapes (the typed lever).

Each shape below declares every key it allows, at every level, with an exact type; a line that
decodes into one of them has a known structure, so its facts can be written down directly
instead of building a record and walking it with `formats.response_facts`. The facts of each
shape are those `response_facts` / `tokenized_facts` give for that structure, key by key
(the comments say which rule of theirs makes each one so); tests/genledger/fast/test_lines.py
checks them against the general path on generated records.

Anything outside the shapes raises: `msgspec.ValidationError` (an unknown key, a null where a
value is typed, an int beyond int64, a string where an int is typed) or `Unusual` (a
think tag in a text, an id array that is not a flat list of numbers, a failed request).
The caller then takes the slower paths, which decide.
"""

# No `from __future__ import annotations`: msgspec reads these structs' annotations when a
# decoder is made and when a shape is inspected, and strings it must evaluate first (a
# small refresh's decoders and inspections took 15 ms with them, 7.5 without).

import threading
from typing import Annotated, Any, ClassVar

import msgspec
import orjson

from genledger.fast.answerkeys import key_of_escaped, key_of_spelled, key_of_spelled_bytes
from genledger.fast.lift import raw_counts
from genledger.fast.rawtext import SPELLED
from genledger.fast.vector import count_commas
from genledger.parse.answer import escaped, key_of_texts, part_text
from genledger.parse.declarations import BUILT_IN
from genledger.parse.formats import _visible as visible
from genledger.parse.formats import has_think_tag, text_value, time_value
from genledger.parse.schema import RESPONSES, TOKENIZED, Facts
from genledger.parse.tokenized import INT64_MAX, INT64_MIN
from genledger.parse.usage import SETTLED, settle

Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
# Facts are built by positional constructors of the schema (`FactTable.positional`): each
# names the facts it takes, checked at import; the rest take their defaults. A NamedTuple's
# keyword constructor costs ~0.9 µs a record (the typed tier makes one per line). The usage
# counts go through `parse.usage.settle`, as on the general path: its results fill the
# constructors' `USAGE` positions (the buckets' table says which: `parse.buckets`).
USAGE = SETTLED  # (prompt, completion, reasoning, input_uncached, output_visible, detail)
WHITESPACE = b" \t\r\n"


class Unusual(Exception):
    """This record needs a slower path."""


class _Shape(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """Base: an unknown key anywhere fails the decode (so nothing is skipped unchecked).

    A record shape says which formats it reads, and where (`FORMATS`: format name, the path of
    the record read as it), and which constructor states its facts (`MAKER`): a declared count
    it does not state sends a record carrying one to the general path (`fast.guards`).

    Not tracked by the garbage collector (`gc=False`, inherited): a decoded record is a tree of
    JSON values, never part of a cycle, and tracking 3-7 structs a line made the collector
    run over and over (cold collect 1.23 -> 1.18 s, alternating).
    """


class _FinishObject(_Shape):
    type: str
    matched: Int64 | str | None = None
    length: Int64 | None = None
    message: str | None = None


Finish = str | _FinishObject | None


def _reason(value: Finish) -> str | None:
    # formats.reason_name: a string, or the `type` string of an object.
    if value is None or isinstance(value, str):
        return value
    return value.type


def flat_len(data: bytes) -> int | None:
    """Elements of a flat array of numbers/null (syntax already checked), else None."""
    # msgspec checked the syntax, so without strings and inner arrays every comma separates
    # two elements (`{}` holds none; non-ASCII bytes outside strings would not have parsed).
    if not _flat(data):
        return None
    commas = count_commas(data)
    if commas:
        return commas + 1
    return 0 if not data[1:-1].strip(WHITESPACE) else 1


def _flat(data: bytes) -> bool:
    """A flat array of numbers/null (syntax already checked): no strings, no inner arrays,
    no exponent (maybe beyond a double), no true/false."""
    if data[:1] != b"[" or b'"' in data or data.find(b"[", 1) >= 0:
        return False
    return not (b"e" in data or b"E" in data)


class _Line(threading.local):
    """What the typed tier knows of the line being decoded (per thread)."""

    lifted = False  # its long id arrays were lifted: a stand-in string is one of them


LINE = _Line()


def _stand_in(data: bytes) -> tuple[int, int | None] | None:
    """The counts of a lifted array's stand-in (`genledger.fast.lift`); None for any other
    value, and for every value of a line that was not lifted (where a string spelled like a
    stand-in is the line's own)."""
    return raw_counts(data) if LINE.lifted else None


def _ids_checked(raw: msgspec.Raw) -> None:
    """An id array only checked, not counted: a flat list or a lifted one's stand-in
    (`genledger.fast.lift`), or absent; else unusual."""
    if raw:
        data = bytes(raw)
        if not _flat(data) and _stand_in(data) is None:
            raise Unusual


def _ids_len(raw: msgspec.Raw) -> int | None:
    """len() of an id array, or of the one a stand-in replaced (`genledger.fast.lift`); None
    when absent; anything but a flat list is unusual."""
    if not raw:
        return None
    data = bytes(raw)
    if data[:1] == b'"':
        counts = _stand_in(data)
        if counts is None:
            raise Unusual
        return counts[0]
    n = flat_len(data)
    if n is None:
        raise Unusual
    return n


_STRING = msgspec.json.Decoder(str)
QUOTE, NULL_N, SPACE, BACKSLASH = ord('"'), ord("n"), ord(" "), ord("\\")


def _think_tag_in(raw: msgspec.Raw, plain: bool) -> bool:
    """Whether a text field holds a think tag; a value other than a JSON string or null is
    unusual. Texts stay raw JSON (`genledger.fast.rawtext`): msgspec's skip checked the value's
    syntax and escapes, and of a plain line's texts nothing more is needed."""
    if not raw:
        return False
    if plain:
        if memoryview(raw)[0] in (QUOTE, NULL_N):  # a valid JSON value: a string or null
            return False
        raise Unusual
    data = bytes(raw)
    if data == b"null":
        return False
    try:
        return has_think_tag(_STRING.decode(data))  # exactly as a `str` field decodes
    except msgspec.DecodeError:  # not a string, or not valid UTF-8
        raise Unusual from None


def _shows_text(raw: msgspec.Raw) -> bool:
    """A JSON string other than `""` (absent, null and `""` show nothing)."""
    return bool(raw) and memoryview(raw)[0] == QUOTE and len(raw) > 2


def _raw_text_empty(raw: msgspec.Raw, plain: bool) -> bool:
    """A raw completion's `text`: checked to be a valid string or null; whether it is `""`."""
    _think_tag_in(raw, plain)  # never a leak, yet it must be a valid string
    return bool(raw) and len(raw) == 2 and memoryview(raw)[0] == QUOTE


def _escaped_text(raw: msgspec.Raw, spelled: bool) -> bytes | memoryview | None:
    """A checked text's bytes as orjson escapes them (None: absent or null). Without a `\\u`
    or `\\/` escape the raw bytes are orjson's spelling already (genledger.parse.answer);
    `spelled`: the line holds neither (`rawtext.SPELLED`), so no text is searched."""
    if not raw or memoryview(raw)[0] != QUOTE:
        return None
    if spelled:
        return memoryview(raw)[1:-1]
    data = bytes(raw)
    if b"\\u" in data or b"\\/" in data:
        return escaped(_STRING.decode(data))
    return data[1:-1]


def text_key(plain: int, raw: msgspec.Raw) -> int | None:
    """`answer_key` of one checked text (the usual answer), with as few steps as may be: a
    string of a spelled line with nothing to strip or collapse is hashed in place."""
    if plain != SPELLED or not raw:
        return answer_key(plain, raw)
    view = memoryview(raw)
    if view[0] != QUOTE:
        return None  # null
    return key_of_spelled(view)  # whitespace runs collapse there (fast.answerkeys, in C)


def answer_key(plain: int, *texts: msgspec.Raw) -> int | None:
    """The answer key (`genledger.parse.answer`) of checked texts, in answer-path order, of a
    line `plain_line` said `plain` of."""
    spelled = plain == SPELLED
    if spelled:
        strings = [raw for raw in texts if raw and memoryview(raw)[0] == QUOTE]
        if len(strings) == 1:  # the usual answer: one text, hashed in place
            return key_of_spelled(strings[0])
    parts = [part for text in texts if (part := _escaped_text(text, spelled)) is not None]
    return key_of_escaped(parts) if parts else None


def _no_think(raw: msgspec.Raw, plain: bool) -> None:
    # A think tag may be a leak (formats.think_leak): the general path decides.
    if _think_tag_in(raw, plain):
        raise Unusual


Text = msgspec.Raw  # a JSON string or null, checked by `_think_tag_in`
NO_TEXT = msgspec.Raw()


# --- SGLang /generate -------------------------------------------------------------------


class _SGLangMeta(_Shape):
    completion_tokens: Int64  # required: then sglang_generate is detected (the first format)
    id: str = ""
    prompt_tokens: Int64 | None = None
    finish_reason: Finish = None
    weight_version: str | None = None
    reasoning_tokens: Int64 | None = None
    cached_tokens: Int64 | None = None
    cached_tokens_details: None = None
    e2e_latency: float | None = None
    # what recent servers write beside the counts, read by no declaration: only checked JSON
    routed_experts: msgspec.Raw = NO_TEXT
    cache_miss_count: msgspec.Raw = NO_TEXT


_SGLANG = RESPONSES.positional(
    "record_id", *USAGE, "cached_tokens", "finish_reason", "output_len", "empty_output",
    "answer_hash",
    format="sglang_generate", count_type="int", n_samples=1,
)  # fmt: skip


class SGLang(_Shape):
    """`{"text", "output_ids", "meta_info": {...}}`."""

    FORMATS: ClassVar = (("sglang_generate", ""),)
    MAKER: ClassVar = _SGLANG

    meta_info: _SGLangMeta
    text: Text = NO_TEXT
    output_ids: msgspec.Raw = msgspec.Raw()

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        meta = self.meta_info
        finish = _reason(meta.finish_reason)
        if finish == "abort":
            raise Unusual  # a failed request
        # meta_info.id when non-empty (no custom_id / id); no think leak (raw text carries the
        # trace by design); whether `text` is "".
        cached = meta.cached_tokens
        return _SGLANG(
            meta.id or None,
            *settle(meta.prompt_tokens, meta.completion_tokens, None, meta.reasoning_tokens,
                    cached),
            cached, finish, _ids_len(self.output_ids), _raw_text_empty(self.text, plain),
            text_key(plain, self.text),
        )  # fmt: skip


# --- flat (pipeline-flattened) and derived (vLLM-ish dumps with only output ids) ----------


_FLAT = RESPONSES.positional(
    "record_id", "format", *USAGE, "finish_reason", "output_len", "empty_output",
    "answer_hash", count_type="int", n_samples=1,
)  # fmt: skip


class Flat(_Shape):
    """Top-level counts and ids; without `completion_tokens`, the derived format."""

    FORMATS: ClassVar = (("flat", ""), ("derived", ""))
    MAKER: ClassVar = _FLAT

    id: str = ""
    request_id: str | None = None
    text: Text = NO_TEXT
    input_ids: msgspec.Raw = msgspec.Raw()
    output_ids: msgspec.Raw = msgspec.Raw()
    prompt_tokens: Int64 | None = None
    completion_tokens: Int64 | None = None
    finish_reason: Finish = None

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        empty = _raw_text_empty(self.text, plain)
        output_len = _ids_len(self.output_ids)
        if self.completion_tokens is not None:
            _ids_checked(self.input_ids)  # unused, yet orjson must accept it: not counted
            fmt, count, prompt = "flat", self.completion_tokens, self.prompt_tokens
        elif output_len is not None:  # no count path: len(output_ids), prompt len(input_ids)
            fmt, count, prompt = "derived", output_len, _ids_len(self.input_ids)
        else:
            _ids_checked(self.input_ids)
            raise Unusual  # no count at all (or output_ids null)
        finish = _reason(self.finish_reason)  # the only finish path present
        # one sample; no think leak (raw text carries the trace by design)
        usage = settle(prompt, count, None)
        return _FLAT(
            self.id or None, fmt, *usage, finish, output_len, empty, text_key(plain, self.text)
        )


# --- OpenAI chat completions: plain, inside a Batch output line, wrapped -------------------


class _Message(_Shape):
    content: Text = NO_TEXT
    role: str | None = None
    reasoning_content: Text = NO_TEXT
    reasoning: Text = NO_TEXT
    refusal: Text = NO_TEXT
    # answers other than a text (`CHAT_ANSWER`): read by the general answer rules when present
    tool_calls: msgspec.Raw = NO_TEXT
    function_call: msgspec.Raw = NO_TEXT
    # what real providers write beside the answer, read by no declaration: only checked JSON
    annotations: msgspec.Raw = NO_TEXT
    audio: msgspec.Raw = NO_TEXT
    name: msgspec.Raw = NO_TEXT
    reasoning_details: msgspec.Raw = NO_TEXT
    provider_metadata: msgspec.Raw = NO_TEXT

    def calls(self) -> bool:
        """Whether the message answers with a tool or function call (not null)."""
        return _given(self.tool_calls) or _given(self.function_call)

    def check(self, plain: bool) -> bool:
        """Every text is a valid string or null; `content` is a non-empty string (an empty
        answer: the general path decides), unless the message calls a tool (then its answer
        is read by the general answer rules). Whether the content leaks a think tag
        (`formats.think_leak`: a tag, and every reasoning key absent or null)."""
        if not self.calls() and not _shows_text(self.content):
            raise Unusual
        tagged = _think_tag_in(self.content, plain)
        for text in (self.reasoning_content, self.reasoning, self.refusal):
            _think_tag_in(text, plain)
        return tagged and not (_given(self.reasoning_content) or _given(self.reasoning))


def _given(raw: msgspec.Raw) -> bool:
    """A raw value present and not null."""
    return bool(raw) and memoryview(raw)[0] != NULL_N


class _Choice(_Shape):
    message: _Message  # required: never a legacy completion choice
    index: Int64 | None = None
    finish_reason: Finish = None
    logprobs: msgspec.Raw = NO_TEXT
    # read by no declaration (vLLM's, OpenRouter's, Azure's, ...): only checked JSON
    seed: msgspec.Raw = NO_TEXT
    stop_reason: msgspec.Raw = NO_TEXT
    native_finish_reason: msgspec.Raw = NO_TEXT
    prompt_logprobs: msgspec.Raw = NO_TEXT
    content_filter_results: msgspec.Raw = NO_TEXT


class _CompletionDetails(_Shape):
    reasoning_tokens: Int64 | None = None
    audio_tokens: Int64 | None = None
    accepted_prediction_tokens: Int64 | None = None
    rejected_prediction_tokens: Int64 | None = None
    text_tokens: Int64 | None = None
    image_tokens: Int64 | None = None


class _PromptDetails(_Shape):
    cached_tokens: Int64 | None = None
    cache_write_tokens: Int64 | None = None  # OpenRouter's
    audio_tokens: Int64 | None = None
    text_tokens: Int64 | None = None
    image_tokens: Int64 | None = None
    video_tokens: Int64 | None = None


class _Usage(_Shape):
    completion_tokens: Int64
    prompt_tokens: Int64 | None = None
    total_tokens: Int64 | None = None
    reasoning_tokens: Int64 | None = None  # SGLang's server
    completion_tokens_details: _CompletionDetails | None = None
    prompt_tokens_details: _PromptDetails | None = None
    cached_tokens: Int64 | None = None  # the HF router's
    prompt_cache_hit_tokens: Int64 | None = None  # DeepSeek's
    prompt_cache_miss_tokens: Int64 | None = None
    # read by no declaration (Groq's times, OpenRouter's and others' costs): only checked JSON
    completion_time: msgspec.Raw = NO_TEXT
    prompt_time: msgspec.Raw = NO_TEXT
    queue_time: msgspec.Raw = NO_TEXT
    total_time: msgspec.Raw = NO_TEXT
    cost: msgspec.Raw = NO_TEXT
    cost_details: msgspec.Raw = NO_TEXT
    estimated_cost: msgspec.Raw = NO_TEXT
    market_cost: msgspec.Raw = NO_TEXT
    is_byok: msgspec.Raw = NO_TEXT
    server_tool_use_details: msgspec.Raw = NO_TEXT
    latency_checkpoint: msgspec.Raw = NO_TEXT
    audio_prompt_tokens: msgspec.Raw = NO_TEXT
    cache_creation_input_tokens: msgspec.Raw = NO_TEXT  # Anthropic's name: read beside `type`

    def counts(self) -> tuple[Any, ...]:
        """`settle`'s facts, then the cache reads, the cache writes and the total: the usage
        columns of a chat or completion record, in its constructor's order."""
        details = self.completion_tokens_details
        reasoning = details.reasoning_tokens if details is not None else None
        if reasoning is None:
            reasoning = self.reasoning_tokens
        return self.settled(self.completion_tokens, reasoning)

    def settled(self, completion: int | None, reasoning: int | None) -> tuple[Any, ...]:
        """`counts` of a declaration whose completion and reasoning counts are these (xAI's
        and Gemini's add or subtract the usage's), the other columns as the chat's."""
        prompt_details = self.prompt_tokens_details
        cached = self.cached()
        write = None if prompt_details is None else prompt_details.cache_write_tokens
        total = self.total_tokens
        return (*settle(self.prompt_tokens, completion, total, reasoning, cached, write),
                cached, write, total)  # fmt: skip

    def cached(self) -> int | None:
        """The cache reads, by the declaration's alternatives in order (first present)."""
        details = self.prompt_tokens_details
        if details is not None and details.cached_tokens is not None:
            return details.cached_tokens
        if self.cached_tokens is not None:
            return self.cached_tokens
        return self.prompt_cache_hit_tokens


_CHAT = RESPONSES.positional(
    "record_id", "format", *USAGE, "cached_tokens", "cache_write_tokens", "total_tokens",
    "n_samples", "finish_reason", "more_finishes", "model", "created", "answer_hash",
    "empty_output", count_type="int",
)  # fmt: skip
CHAT_FACTS = _CHAT  # the chat facts' constructor, also called by the native tier (fast.chatline)
CHAT_BODIES = ("openai_chat", "openai_completion", "xai_chat")  # the declarations of a chat body


class Chat(_Shape):
    """An OpenAI chat completion with `usage`."""

    FORMATS: ClassVar = (("openai_chat", ""), ("openai_completion", ""))
    MAKER: ClassVar = _CHAT

    usage: _Usage
    choices: list[_Choice] = []
    id: str = ""
    object: str | None = None
    created: Int64 | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None
    # read by no declaration (Groq's, OpenRouter's, vLLM's, Azure's, Perplexity's, ...):
    # only checked JSON
    usage_breakdown: msgspec.Raw = NO_TEXT
    provider: msgspec.Raw = NO_TEXT
    moderation: msgspec.Raw = NO_TEXT
    prompt: msgspec.Raw = NO_TEXT
    kv_transfer_params: msgspec.Raw = NO_TEXT
    prompt_logprobs: msgspec.Raw = NO_TEXT
    prompt_filter_results: msgspec.Raw = NO_TEXT
    citations: msgspec.Raw = NO_TEXT
    generationId: msgspec.Raw = NO_TEXT  # the provider's key
    time_info: msgspec.Raw = NO_TEXT
    request_id: msgspec.Raw = NO_TEXT  # Z.ai's (vLLM's offline id, read beside `outputs`)
    x_groq: msgspec.Raw = NO_TEXT  # Groq's request id (its `usage` only in a stream's chunk)
    timings: msgspec.Raw = NO_TEXT  # llama.cpp's (`timings.cache_n` read beside a /completion)

    def finishes(self, plain: bool) -> tuple[str | None, str | None, bool]:
        """The first finish reason, the later ones joined, and whether a message leaks a
        think tag; checks every choice's texts."""
        choices = self.choices
        if not choices or self.object == "chat.completion.chunk":
            raise Unusual  # no answer place, or a stream's last chunk: the general path
        if len(choices) == 1:  # the common case, without building lists
            choice = choices[0]
            return _reason(choice.finish_reason), None, choice.message.check(plain)
        leaks = [choice.message.check(plain) for choice in choices]
        found = [r for r in (_reason(c.finish_reason) for c in choices) if r is not None]
        # a record's first finish: chat counts records
        return (found[0] if found else None), None, any(leaks)

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        # choices always hold a `message`, so only `object` can say "text_completion".
        fmt = "openai_completion" if self.object == "text_completion" else "openai_chat"
        return _chat_facts(self, self.id or None, fmt, plain)


def _chat_facts(
    chat: Chat, record_id: str | None, fmt: str, plain: bool, counts: tuple[Any, ...] = ()
) -> Facts:
    """A chat body's facts; `counts`: its usage columns (`_Usage.counts`'s) where its
    declaration reads them otherwise."""
    choices = chat.choices
    answer: Any = SLOW
    leak = False
    if plain and len(choices) == 1 and chat.object != "chat.completion.chunk":
        answer = _sole_answer(choices[0].message, plain)
    if answer is SLOW:
        first, more, leak = chat.finishes(plain)
        if any(choice.message.calls() for choice in choices):
            answer, empty = _called_answer(choices)
        else:  # every choice shows a non-empty content (checked): no empty output
            answer, empty = _chat_answer(choices, plain), False
    else:
        first, more, empty = _reason(choices[0].finish_reason), None, False
    facts = _CHAT(
        record_id, fmt, *(counts or chat.usage.counts()), len(chat.choices), first, more,
        text_value(chat.model), time_value(chat.created), answer, empty,
    )  # fmt: skip
    # a leak is rare (a think tag, no reasoning key): stated apart from the usual facts
    return facts._replace(think_leak=True) if leak else facts  # type: ignore[attr-defined]


SLOW = object()  # not the usual message: `Chat.finishes` and the answer rules decide
RAW_NULL = msgspec.Raw(b"null")  # compared whole: cheaper than a view of a value's first byte


def _sole_answer(message: _Message, plain: int) -> Any:
    """The answer key of a plain line's sole message in the usual case — no call, no
    refusal, a string content other than `""`, other texts absent, null or strings — as
    `Chat.finishes` checks it and `_chat_answer` keys it; `SLOW` for any other message."""
    tools, function, refusal = message.tool_calls, message.function_call, message.refusal
    if (tools and tools != RAW_NULL) or (function and function != RAW_NULL):
        return SLOW
    if refusal and refusal != RAW_NULL:
        return SLOW
    for text in (message.reasoning_content, message.reasoning):
        if text and memoryview(text)[0] not in (QUOTE, NULL_N):
            return SLOW  # not a string or null: `_think_tag_in` calls it unusual
    data = bytes(message.content)
    if len(data) <= 2 or data[0] != QUOTE:
        return SLOW  # absent, null, "" or not a string: no answer shown
    # a plain line holds no think tag: a string content is no leak
    return key_of_spelled_bytes(data) if plain == SPELLED else answer_key(plain, message.content)


# A chat body is read by one of these declarations (also under a batch line's or a wrapper's
# key: their inner formats), each reading think leaks in the shape's messages.
if {d.messages.text if d.messages else None for d in BUILT_IN if d.name in CHAT_BODIES} != {
    "choices[].message"
}:
    raise ImportError("the chat messages moved: update fast.shapes._chat_facts's think leak")

# The chat declarations share their answer paths (`CHAT_ANSWER`): the message keys they read.
CHAT_DECLARATION = next(d for d in BUILT_IN if d.name == "openai_chat" and d.answer)
ANSWER_KEYS = tuple(dict.fromkeys(
    p.steps[-1][0] for p in CHAT_DECLARATION.answer if p.text.startswith("choices[].message.")
))  # fmt: skip


# The shape has no `choices[].text` (a legacy completion's): every other answer path is a
# message key, read in `_called_answer` (a new answer path fails here, not in silence).
if {p.text for p in CHAT_DECLARATION.answer} != {
    "choices[].text",
    *(f"choices[].message.{key}" for key in ANSWER_KEYS),
}:
    raise ImportError("the chat answer paths changed: update fast.shapes._called_answer")


def _raw_value(raw: msgspec.Raw | bytes) -> Any:
    """A checked raw value as the general path decodes it (absent: None)."""
    try:
        return orjson.loads(memoryview(raw)) if raw else None
    except orjson.JSONDecodeError:
        raise Unusual from None  # valid JSON orjson refuses (a lone surrogate): general path


def _called_answer(choices: list[_Choice]) -> tuple[int | None, bool]:
    """(answer key, empty output) of choices answering with calls, by the general answer
    rules (`formats.answer_key`, `formats.empty_output`) on the answer values in path order
    (tool calls are objects: no raw-text shortcut); `choices` is never null, so the record
    has a place for its answer."""
    if len(choices) == 1:
        message = choices[0].message
        if not (_given(message.content) or _given(message.function_call)) and not _given(
            message.refusal
        ):
            return _sole_call(message.tool_calls)
    raws = [getattr(choice.message, key) for key in ANSWER_KEYS for choice in choices]
    # absent and null hold no answer: only the others are decoded
    values = [
        value for raw in raws if raw and raw != RAW_NULL and (value := _raw_value(raw)) is not None
    ]
    texts = [text for value in values if (text := part_text(value)) is not None]
    return (key_of_texts(texts) if texts else None), not any(map(_shows, values))


def _sole_call(raw: msgspec.Raw | bytes) -> tuple[int | None, bool]:
    """`_called_answer` of a sole message whose only answer value is its tool calls (the
    usual call: content and refusal null): one value, so one text and no lists between."""
    value = _raw_value(raw)
    text = part_text(value)  # None only for null, which `_given` ruled out
    if text is None:
        return None, True
    return key_of_texts((text,)), not _shows(value)


sole_call = _sole_call  # also called by the native tier (fast.chatline), with the calls' bytes


def _shows(value: Any) -> bool:
    """`formats._visible` of an answer value, the usual tool calls' list decided at its first
    call (an object with neither `text` nor `"thought": true` shows itself)."""
    if value.__class__ is list and value:
        first = value[0]
        if first.__class__ is dict and "text" not in first and first.get("thought") is not True:
            return True
    return visible(value)


def _chat_answer(choices: list[_Choice], plain: int) -> int | None:
    """The answer key of checked choices: every content, then every refusal (the answer
    paths' order: `choices[].message.content`, ..., `choices[].message.refusal`)."""
    if len(choices) == 1:
        message = choices[0].message
        refusal = message.refusal
        if not refusal or memoryview(refusal)[0] == NULL_N:
            return text_key(plain, message.content)
        return answer_key(plain, message.content, refusal)
    contents = [c.message.content for c in choices]
    return answer_key(plain, *contents, *(c.message.refusal for c in choices))


class _BatchResponse(_Shape):
    body: Chat
    status_code: Int64 = 200  # formats.batch_failure reads a missing one as 200
    request_id: str | None = None


class Batch(_Shape):
    """An OpenAI Batch output line that succeeded."""

    FORMATS: ClassVar = (("openai_chat", "response.body"), ("openai_completion", "response.body"))
    MAKER: ClassVar = _CHAT

    response: _BatchResponse
    custom_id: str = ""
    id: str = ""
    error: None = None

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        if self.response.status_code != 200:
            raise Unusual  # a failed request
        # response.body.usage wins over wrapped_openai's response.usage (COUNT_PATHS order)
        return _chat_facts(
            self.response.body, self.custom_id or self.id or None, "openai_batch", plain
        )


class Wrapped(_Shape):
    """A chat completion under `response` (no `body`, no status: not a batch line)."""

    FORMATS: ClassVar = (("openai_chat", "response"), ("openai_completion", "response"))
    MAKER: ClassVar = _CHAT

    response: Chat
    id: str = ""

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        return _chat_facts(self.response, self.id or None, "wrapped_openai", plain)


# --- TGI /generate with details ------------------------------------------------------------


class _TGIDetails(_Shape):
    generated_tokens: Int64
    finish_reason: Finish = None
    seed: Int64 | None = None
    input_length: Int64 | None = None


_TGI = RESPONSES.positional(
    *USAGE, "finish_reason", "empty_output", "answer_hash", format="tgi", count_type="int",
    n_samples=1,
)  # fmt: skip


class TGI(_Shape):
    """`{"generated_text", "details": {...}}`."""

    FORMATS: ClassVar = (("tgi", ""),)
    MAKER: ClassVar = _TGI

    details: _TGIDetails
    generated_text: Text = NO_TEXT

    def facts(self, plain: bool) -> Facts:
        """The response facts of this record."""
        details = self.details
        # no record id (none of custom_id, id, meta_info.id); no think leak (raw text carries
        # the trace by design); whether generated_text is ""
        return _TGI(
            *settle(details.input_length, details.generated_tokens, None),
            _reason(details.finish_reason),
            _raw_text_empty(self.generated_text, plain),
            text_key(plain, self.generated_text),
        )


# --- tokenized training samples --------------------------------------------------------------


_TOKENIZED = TOKENIZED.positional("n_tokens", "loss_len", "loss_sum")


class Tokenized(_Shape):
    """`{"id", "input_ids", "loss_mask"}` with flat arrays."""

    FORMATS: ClassVar = ()  # tokenized facts are no format's
    MAKER: ClassVar = _TOKENIZED

    id: str | Int64 | None = None
    input_ids: msgspec.Raw = msgspec.Raw()
    loss_mask: msgspec.Raw = msgspec.Raw()

    def facts(self, plain: bool) -> Facts:
        """The tokenized facts of this record."""
        length, ones = _mask_counts(self.loss_mask)
        return _TOKENIZED(_ids_len(self.input_ids), length, ones)


def _mask_counts(raw: msgspec.Raw) -> tuple[int | None, int | None]:
    """(len, sum) of a flat 0/1 mask; (None, None) when absent; anything else is unusual."""
    if not raw:
        return None, None
    data = bytes(raw)
    lifted = _stand_in(data)
    if lifted is not None:
        if lifted[1] is None:
            raise Unusual  # not a 0/1 mask: its sum needs its values
        return lifted[0], lifted[1]
    counts = _bits(data)
    if counts is not None:
        return counts
    n = flat_len(data)  # spaced, empty or not 0/1
    if n is None:
        raise Unusual
    if n == 0:
        return 0, 0
    counts = _bits(data.translate(None, WHITESPACE))
    if counts is None:
        raise Unusual
    return counts


def _bits(data: bytes) -> tuple[int, int] | None:
    """(n, ones) when `data` is exactly `[d,d,...,d]` with every d a 0 or a 1, else None."""
    n = len(data) // 2
    if not len(data) % 2 or data[:1] != b"[" or data[-1:] != b"]":
        return None
    # n one-character elements at the odd offsets, commas at the even ones between them
    if data[2:-1:2] != COMMAS[: n - 1]:
        return None
    digits = data[1::2]
    ones = digits.count(b"1")
    if ones + digits.count(b"0") != n:
        return None
    return n, ones


COMMAS = b"," * (1 << 18)  # masks up to 256k tokens take the quick check


RESPONSE_SHAPES: tuple[type[Any], ...] = (SGLang, Flat, Chat, Batch, Wrapped, TGI)
TOKENIZED_SHAPES: tuple[type[Any], ...] = (Tokenized,)
