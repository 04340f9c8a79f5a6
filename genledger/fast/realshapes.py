"""Typed shapes of records real servers write that the other shape modules did not hold.

OpenAI's legacy text completions (`"object": "text_completion"`, also vLLM's and llama.cpp's
`/v1/completions`) and Ollama's native `/api/chat` and `/api/generate` replies, declared key
by key like `genledger.fast.shapes` (whose rules and helpers they share), with the keys real
records and the providers' SDK models (`openai.types.Completion`, `ollama.ChatResponse`,
`ollama.GenerateResponse`) hold, nulls where they write nulls. Their facts are those
`formats.response_facts` gives for the declarations `openai_completion` and `ollama`; anything
outside the shapes raises and the slower paths decide. tests/genledger/fast/test_realshapes.py
checks them against the general path.
"""

# No `from __future__ import annotations`: msgspec reads these structs' annotations when a
# decoder is made (see genledger.fast.shapes).

from typing import Any, ClassVar, Literal

import msgspec

from genledger.fast.shapes import (
    NO_TEXT,
    USAGE,
    Finish,
    Int64,
    Text,
    Unusual,
    _no_think,
    _reason,
    _Shape,
    _shows_text,
    _think_tag_in,
    _Usage,
    answer_key,
    text_key,
)
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
        if not choices:
            raise Unusual  # no answer: `n_samples` and the finish read as declared
        for choice in choices:
            _think_tag_in(choice.text, bool(plain))  # a raw text is never a leak; checked
        # the answer paths of `CHAT_ANSWER` hold only `choices[].text` here (no messages)
        if len(choices) == 1:
            answer = text_key(plain, choices[0].text)
        else:
            answer = answer_key(plain, *(choice.text for choice in choices))
        found = [r for r in (_reason(c.finish_reason) for c in choices) if r is not None]
        usage = self.usage
        details = usage.completion_tokens_details
        reasoning = details.reasoning_tokens if details is not None else None
        if reasoning is None:
            reasoning = usage.reasoning_tokens
        prompt_details = usage.prompt_tokens_details
        cached = usage.cached()
        write = None if prompt_details is None else prompt_details.cache_write_tokens
        total = usage.total_tokens
        return _COMPLETION(
            self.id or None,
            *settle(usage.prompt_tokens, usage.completion_tokens, total, reasoning, cached, write),
            cached, write, total, len(choices), found[0] if found else None,
            text_value(self.model), time_value(self.created), answer,
            not any(_shows_text(choice.text) for choice in choices),
        )  # fmt: skip


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


REAL_SHAPES: tuple[type[Any], ...] = (TextCompletion, Ollama)
