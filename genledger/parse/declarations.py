"""Record formats as declarations (docs/formats.md): the one place that says where each
format keeps its counts. The built-in formats below and a user's `[[formats]]` in
genledger.toml are the same kind of value, read by `genledger.parse.formats` (the definition
of correct) and by the fast path alike. Path syntax: `genledger.parse.paths`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from genledger.parse.paths import (
    TERMS,
    Condition,
    Field,
    Path,
    PathError,
    all_hold,
    parse_condition,
    parse_field,
    parse_path,
)
from genledger.parse.schema import RESPONSES


@dataclass(frozen=True)
class Failure:
    """A failed request: when `when` holds; the reason is `label` with `{path}` values filled
    in, then `: message` when `detail` reaches the source's own message (a string, or an
    object's `message`), cut to `MESSAGE_CHARS`; with no label, the message alone."""

    when: Condition
    label: str
    detail: Field | None = None


MESSAGE_CHARS = 200  # a failed request's own message, as much of it as a reason keeps


@dataclass(frozen=True)
class Declaration:
    """One record format: how to detect it and where its fields are."""

    name: str
    detect: tuple[tuple[Condition, ...], ...]  # alternatives of all-must-hold conditions
    counts: tuple[tuple[str, Field], ...] = ()  # (declared count column, its field)
    finish: Field | None = None  # `[]` paths: every sample's reason (the first is the record's)
    id: Field | None = None
    answer: tuple[Path, ...] = ()  # where the visible answer is (for empty outputs)
    messages: Path | None = None  # chat messages (for think-tag leaks)
    samples: Path | None = None  # `len(...)`: completions in the record
    failures: tuple[Failure, ...] = ()
    inner: Path | None = None  # the sub-record read as one of `inner_formats`
    inner_formats: tuple[str, ...] = ()
    float_counts: bool = False  # integral JSON floats are valid counts (Cohere's SDK)
    each_finish: bool = False  # every sample's finish reason counts (else the record's first)
    streams: bool = False  # also a stream's last event: a missing count is a stream without usage
    user: bool = False
    # who priced the request (a genai-prices provider id, or SELF_HOSTED), and whether it went
    # through the provider's batch API (priced at its batch rate): docs/cost.md
    provider: str | None = None
    batch: bool = False
    # per detect alternative: the top-level keys it needs (a quick test before the conditions)
    requires: tuple[frozenset[str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        needed = tuple(
            frozenset(c.path.top for c in conditions if c.op != "absent")
            for conditions in self.detect
        )
        object.__setattr__(self, "requires", needed)
        unknown = [name for name, _ in self.counts if name not in RESPONSES.declared]
        if unknown:
            raise PathError(f"{self.name}: {unknown[0]!r} is no declared count of the schema")

    def count(self, column: str) -> Field | None:
        """The field of a declared count column, if the format has one."""
        for name, found in self.counts:
            if name == column:
                return found
        return None

    @property
    def completion(self) -> Field | None:
        """The completion count's field (the format's detect default and main count)."""
        return self.count(COMPLETION)

    def detects(self, obj: dict[str, Any]) -> bool:
        """Whether the record is of this format."""
        keys = obj.keys()
        for needed, conditions in zip(self.requires, self.detect, strict=True):
            if keys >= needed and all_hold(conditions, obj):  # a loop: run for every record
                return True
        return False

    def fields(self) -> list[Field]:
        """Every field the declaration reads values from (counts, finish, id)."""
        found = [f for _, f in self.counts]
        return found + [f for f in (self.finish, self.id) if f is not None]

    def paths(self) -> list[Path]:
        """Every path the declaration reads."""
        found: list[Path] = [c.path for conditions in self.detect for c in conditions]
        for value in self.fields():
            found.extend(value.paths)
        found.extend(self.answer)
        found.extend(p for p in (self.messages, self.samples, self.inner) if p is not None)
        for failure in self.failures:
            found.append(failure.when.path)
            found.extend(failure.detail.paths if failure.detail is not None else ())
        return found


COMPLETION = "completion_tokens"  # the main count: a user declaration's required path


def _f(text: str | None, sums: bool = True) -> Field | None:
    return None if text is None else parse_field(text, sums)


def _detect(*alternatives: str) -> tuple[tuple[Condition, ...], ...]:
    return tuple(tuple(parse_condition(c) for c in alt.split(" & ")) for alt in alternatives)


def _fail(when: str, label: str, detail: str | None = None) -> Failure:
    return Failure(parse_condition(when), label, _f(detail, sums=False))


def declare(
    name: str,
    detect: tuple[str, ...],
    finish: str | None = None,
    id: str | None = None,
    answer: tuple[str, ...] = (),
    messages: str | None = None,
    samples: str | None = None,
    failures: tuple[Failure, ...] = (),
    inner: str | None = None,
    inner_formats: tuple[str, ...] = (),
    float_counts: bool = False,
    each_finish: bool = False,
    streams: bool = False,
    user: bool = False,
    provider: str | None = None,
    batch: bool = False,
    **counts: str | None,
) -> Declaration:
    """A declaration from path texts; `counts` name declared count columns of the facts
    schema (`completion_tokens="usage.completion_tokens"`). Raises `PathError` on a bad one."""
    return Declaration(
        name=name,
        detect=_detect(*detect),
        counts=tuple((column, parse_field(text)) for column, text in counts.items() if text),
        finish=_f(finish, sums=False),
        id=_f(id, sums=False),
        answer=tuple(parse_path(p) for p in answer),
        messages=None if messages is None else parse_path(messages),
        samples=None if samples is None else parse_path(samples),
        failures=failures,
        inner=None if inner is None else parse_path(inner),
        inner_formats=inner_formats,
        float_counts=float_counts,
        each_finish=each_finish,
        streams=streams,
        user=user,
        provider=provider,
        batch=batch,
    )


SELF_HOSTED = "self-hosted"  # a format written by the run's own servers: priced by the fleet

CHAT_ANSWER = (
    "choices[].message.content",
    "choices[].message.tool_calls",
    "choices[].message.function_call",
    "choices[].message.refusal",
    "choices[].text",
)


def _chat_fields(usage: str = "usage") -> dict[str, Any]:
    """An OpenAI chat completion's fields, its usage under `usage`: reasoning inside the
    completion, cache reads inside the prompt (OpenAI, DeepSeek, the HF router, OpenRouter)."""
    return dict(
        completion_tokens=f"{usage}.completion_tokens",
        prompt_tokens=f"{usage}.prompt_tokens",
        reasoning_tokens=(
            f"{usage}.completion_tokens_details.reasoning_tokens | {usage}.reasoning_tokens"
        ),
        # OpenAI's details; the HF router's and Cohere-style flat `cached_tokens`; DeepSeek's
        # `prompt_cache_hit_tokens` (its `prompt_cache_miss_tokens` is the rest of the prompt)
        cached_tokens=(
            f"{usage}.prompt_tokens_details.cached_tokens | {usage}.cached_tokens"
            f" | {usage}.prompt_cache_hit_tokens"
        ),
        cache_write_tokens=f"{usage}.prompt_tokens_details.cache_write_tokens",  # OpenRouter
        total_tokens=f"{usage}.total_tokens",
        finish="choices[].finish_reason",
        answer=CHAT_ANSWER,
        messages="choices[].message",
        samples="len(choices)",
        model="model",
        created="created",
        provider="openai",
    )


CHAT_FIELDS: dict[str, Any] = _chat_fields()
RESPONSES_FAILURES = (
    _fail("status=failed", "failed {error.code}", "error.message"),
    _fail("error", "error {error.code}", "error.message"),
)


def _gemini(camel: bool) -> Declaration:
    """Gemini as REST/`by_alias` (camelCase) or as the Python SDK's default dump (snake_case).

    `candidatesTokenCount` leaves out the thoughts (`thoughtsTokenCount`, billed as output) and
    `promptTokenCount` the tool-use prompt (`toolUsePromptTokenCount`, billed as input); the
    cached content is inside the prompt. A streamed chunk carries `usageMetadata` too: the one
    with a `finishReason` is the request's record, the others are fragments."""

    def name(text: str) -> str:
        return text if camel else re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), text)

    usage, feedback = name("usageMetadata"), name("promptFeedback.blockReason")
    thoughts = f"{usage}.{name('thoughtsTokenCount')}"
    finish, content = name("candidates[].finishReason"), name("candidates[].content")
    parts = "candidates[].content.parts[]"
    return declare(
        "gemini",
        (feedback, f"{usage} & {finish}", f"{usage} & !{content}", f"{finish} & !{usage}"),
        completion_tokens=f"{usage}.{name('candidatesTokenCount')} + {thoughts}",
        prompt_tokens=(
            f"{usage}.{name('promptTokenCount')} + {usage}.{name('toolUsePromptTokenCount')}"
        ),
        reasoning_tokens=thoughts,
        cached_tokens=f"{usage}.{name('cachedContentTokenCount')}",
        total_tokens=f"{usage}.{name('totalTokenCount')}",
        finish=finish,
        id=name("responseId"),
        answer=(f"{parts}.text", name(f"{parts}.functionCall")),
        failures=(
            _fail(
                feedback, "blocked {" + feedback + "}", name("promptFeedback.blockReasonMessage")
            ),
        ),
        streams=True,
        model=name("modelVersion"),
        created=name("createTime"),
        provider="google",
    )


def _converse(names: str, usage: str = "usage") -> dict[str, Any]:
    """Bedrock Converse's usage: cache reads and writes beside `inputTokens` (`totalTokens` =
    input + output + cache read + cache write). `names`: the Converse API's (`...Tokens`) or
    Nova's InvokeModel body's (`...TokenCount`)."""
    read, write = f"{usage}.cacheRead{names}", f"{usage}.cacheWrite{names}"
    return dict(
        completion_tokens=f"{usage}.outputTokens",
        prompt_tokens=f"{usage}.inputTokens + {read} + {write}",
        cached_tokens=read,
        cache_write_tokens=write,
        total_tokens=f"{usage}.totalTokens",
        provider="aws",
    )


# A Converse reply's (not its stream's) stop reason and answer places.
CONVERSE_REPLY: dict[str, Any] = dict(
    finish="stopReason",
    answer=("output.message.content[].text", "output.message.content[].toolUse"),
)


def _anthropic(usage: str = "usage") -> dict[str, Any]:
    """Anthropic's usage: cache reads and writes beside `input_tokens`; thinking inside
    `output_tokens`."""
    read, write = f"{usage}.cache_read_input_tokens", f"{usage}.cache_creation_input_tokens"
    return dict(
        completion_tokens=f"{usage}.output_tokens",
        prompt_tokens=f"{usage}.input_tokens + {write} + {read}",
        reasoning_tokens=f"{usage}.output_tokens_details.thinking_tokens",
        cached_tokens=read,
        cache_write_tokens=write,
    )


ERROR_KEYS = (  # a Bedrock stream's exception events, each `{"<name>": {"message": ...}}`
    "internalServerException", "modelStreamErrorException", "validationException",
    "throttlingException", "serviceUnavailableException",
)  # fmt: skip
# Where a record that is only an error keeps its message: OpenAI, Gemini, Anthropic, Groq,
# llama.cpp (`error.message`), Bedrock batch (`errorMessage`), Ollama and TGI (a string).
ERROR_MESSAGE = "error.message | error.errorMessage | error | message"


BUILT_IN: tuple[Declaration, ...] = (
    declare(
        "sglang_generate",
        ("meta_info.completion_tokens",),
        completion_tokens="meta_info.completion_tokens",
        prompt_tokens="meta_info.prompt_tokens",
        reasoning_tokens="meta_info.reasoning_tokens",
        cached_tokens="meta_info.cached_tokens",
        finish="meta_info.finish_reason",
        id="meta_info.id",
        answer=("text",),
        failures=(
            _fail("meta_info.finish_reason.type=abort", "abort", "meta_info.finish_reason.message"),
        ),
        provider=SELF_HOSTED,
    ),
    # xAI: reasoning beside the completion (total = prompt + completion + reasoning); its REST
    # usage names the live-search sources used
    declare(
        "xai_chat",
        ("usage.completion_tokens & has(usage.num_sources_used)",),
        **{
            **CHAT_FIELDS,
            "completion_tokens": (
                "usage.completion_tokens + usage.completion_tokens_details.reasoning_tokens"
            ),
            "reasoning_tokens": "usage.completion_tokens_details.reasoning_tokens",
            "provider": "x-ai",
        },
    ),
    # xAI's gRPC SDK response as a dict: `outputs`, reasoning beside the completion
    declare(
        "xai_sdk",
        ("usage.completion_tokens & outputs & !choices",),
        completion_tokens="usage.completion_tokens + usage.reasoning_tokens",
        prompt_tokens="usage.prompt_tokens",
        reasoning_tokens="usage.reasoning_tokens",
        cached_tokens="usage.cached_prompt_text_tokens",
        total_tokens="usage.total_tokens",
        finish="outputs[].finish_reason",
        answer=("outputs[].message.content", "outputs[].message.tool_calls"),
        messages="outputs[].message",
        model="model",
        provider="x-ai",
    ),
    # Gemini through its OpenAI-compatible endpoint: the thoughts are only in `total_tokens`
    # (its messages carry `extra_content.google`)
    declare(
        "gemini_openai",
        ("usage.completion_tokens & choices[].message.extra_content.google",),
        **{
            **CHAT_FIELDS,
            "completion_tokens": (
                "usage.total_tokens - usage.prompt_tokens | usage.completion_tokens"
            ),
            "reasoning_tokens": (
                "usage.total_tokens - usage.prompt_tokens - usage.completion_tokens"
            ),
            "provider": "google",
        },
    ),
    declare(
        "openai_completion",
        (
            "usage.completion_tokens & object=text_completion",
            "usage.completion_tokens & !object & choices[].text & !choices[].message",
        ),
        **CHAT_FIELDS,
    ),
    declare("openai_chat", ("usage.completion_tokens",), **CHAT_FIELDS),
    # Alibaba DashScope's native Generation / MultiModalConversation response (the dashscope
    # SDK's): `output`, `usage.input_tokens/output_tokens`, a non-200 `status_code` failed
    declare(
        "dashscope",
        ("output & usage.output_tokens & has(request_id)", "status_code & has(request_id) & code"),
        completion_tokens="usage.output_tokens",
        prompt_tokens="usage.input_tokens",
        reasoning_tokens="usage.output_tokens_details.reasoning_tokens",
        cached_tokens="usage.prompt_tokens_details.cached_tokens",
        total_tokens="usage.total_tokens",
        finish="output.choices[].finish_reason | output.finish_reason",
        id="request_id",
        answer=("output.choices[].message.content", "output.text"),
        failures=(_fail("status_code != 200", "status_code {status_code} {code}", "message"),),
        model="model",
        provider="alibaba",
    ),
    # Gemini Interactions API objects (and a stream's `interaction.completed`, assembled):
    # thoughts beside the output, tool-use input beside the input, cached inside the input
    declare(
        "gemini_interactions",
        ("usage.total_output_tokens & object=interaction", "usage.total_output_tokens & steps"),
        completion_tokens="usage.total_output_tokens + usage.total_thought_tokens",
        prompt_tokens="usage.total_input_tokens + usage.total_tool_use_tokens",
        reasoning_tokens="usage.total_thought_tokens",
        cached_tokens="usage.total_cached_tokens",
        total_tokens="usage.total_tokens",
        finish="status",
        id="id",
        answer=("steps[].content[].text", "steps[].arguments"),
        failures=(_fail("status=failed", "failed", "error.message"),),
        model="model",
        created="created",
        provider="google",
    ),
    declare(
        "openai_responses",
        ("usage.output_tokens & object=response",),
        completion_tokens="usage.output_tokens",
        prompt_tokens="usage.input_tokens",
        reasoning_tokens="usage.output_tokens_details.reasoning_tokens",
        cached_tokens="usage.input_tokens_details.cached_tokens",
        cache_write_tokens="usage.input_tokens_details.cache_write_tokens",
        total_tokens="usage.total_tokens",
        finish="incomplete_details.reason | status",
        # a message's text, or a tool call of any kind (shell, patch, MCP...: its call id; an
        # image generation: its result)
        answer=(
            "output[].content[].text",
            "output[].content[].refusal",
            "output[].arguments",
            "output[].call_id",
            "output[].result",
        ),
        failures=RESPONSES_FAILURES,
        model="model",
        created="created_at",
        provider="openai",
    ),
    declare(
        "anthropic_message",
        ("usage.output_tokens & type=message",),
        **_anthropic(),
        finish="stop_reason",
        answer=("content[].text", "content[].input"),
        model="model",
        provider="anthropic",
    ),
    declare(
        "openai_batch",
        (
            "response.body",
            "response.status_code",
            "custom_id & has(response) & !response",
            "error & has(response) & !response",
            "custom_id & error & !response.usage",
        ),
        id="custom_id",
        failures=(
            _fail("error", "error {error.code}", "error.message"),
            _fail(
                "response.status_code!=200",
                "status_code {response.status_code}",
                "response.body.error.message",
            ),
            _fail("!response", "no response"),
        ),
        inner="response.body",
        inner_formats=("openai_chat", "openai_completion", "openai_responses"),
        provider="openai",
        batch=True,
    ),
    declare(
        "anthropic_batch",
        ("result.type & custom_id",),
        id="custom_id",
        failures=(
            _fail("result.type=errored", "errored", "result.error.error.message"),
            _fail("result.type=canceled", "canceled"),
            _fail("result.type=expired", "expired"),
        ),
        inner="result.message",
        inner_formats=("anthropic_message",),
        provider="anthropic",
        batch=True,
    ),
    _gemini(camel=True),
    _gemini(camel=False),
    declare(
        "gemini_batch",
        ("key & response", "key & error"),
        id="key",
        failures=(
            _fail("error", "error {error.code}", "error.message"),
            _fail("!response", "no response"),
        ),
        inner="response",
        inner_formats=("gemini",),
        provider="google",
        batch=True,
    ),
    # Vertex AI batch prediction output: `"status": ""` is a success, any other status the
    # request's failure (its text the reason)
    declare(
        "vertex_batch",
        ("has(status) & request & has(response)", "has(status) & request & processed_time"),
        failures=(_fail('status != ""', "", "status"),),
        inner="response",
        inner_formats=("gemini", "anthropic_message", "openai_chat"),
        provider="google",
        batch=True,
    ),
    # Bedrock batch inference output: the model's own body under `modelOutput`
    declare(
        "bedrock_batch",
        ("recordId & modelOutput", "recordId & error", "recordId & modelInput"),
        id="recordId",
        failures=(
            _fail("error", "error {error.errorCode}", "error.errorMessage | error.message | error"),
            _fail("!modelOutput", "no modelOutput"),
        ),
        inner="modelOutput",
        inner_formats=(
            "anthropic_message",
            "bedrock_converse",
            "bedrock_titan",
            "bedrock_llama",
            "openai_chat",
            "openai_completion",
        ),
        provider="aws",
        batch=True,
    ),
    # Bedrock Converse (and Nova's InvokeModel body, whose cache counts end in `Count`)
    declare(
        "bedrock_converse",
        ("usage.outputTokens & !usage.cacheReadInputTokenCount", "usage.cacheReadInputTokens"),
        **_converse("InputTokens"),
        **CONVERSE_REPLY,
    ),
    declare(
        "bedrock_converse",
        ("usage.outputTokens",),
        **_converse("InputTokenCount"),
        **CONVERSE_REPLY,
    ),
    # InvokeModel bodies of Amazon Titan Text and Meta Llama (also Bedrock batch outputs)
    declare(
        "bedrock_titan",
        ("results[].tokenCount & inputTextTokenCount",),
        completion_tokens="results[].tokenCount",
        prompt_tokens="inputTextTokenCount",
        finish="results[].completionReason",
        answer=("results[].outputText",),
        provider="aws",
    ),
    declare(
        "bedrock_llama",
        ("generation_token_count",),
        completion_tokens="generation_token_count",
        prompt_tokens="prompt_token_count",
        finish="stop_reason",
        answer=("generation",),
        provider="aws",
    ),
    declare(
        "cohere_chat",
        ("usage.tokens.output_tokens",),
        completion_tokens="usage.tokens.output_tokens",
        prompt_tokens="usage.tokens.input_tokens",
        cached_tokens="usage.cached_tokens",  # a part of the input tokens
        finish="finish_reason",
        answer=("message.content[].text", "message.tool_calls"),
        float_counts=True,
        provider="cohere",
    ),
    declare(
        "wrapped_openai",
        ("response.usage.completion_tokens",),
        inner="response",
        inner_formats=("openai_chat", "openai_completion"),
        provider="openai",
    ),
    declare(
        "tgi",
        ("details.generated_tokens", "has(token) & generated_text"),
        completion_tokens="details.generated_tokens",
        prompt_tokens="details.input_length",
        finish="details.finish_reason",
        answer=("generated_text",),
        provider=SELF_HOSTED,
        streams=True,
    ),
    declare(
        "vllm_offline",
        ("outputs[].token_ids & request_id", "outputs[].token_ids & prompt_token_ids"),
        completion_tokens="len(outputs[].token_ids)",
        prompt_tokens="len(prompt_token_ids)",
        cached_tokens="num_cached_tokens",
        finish="outputs[].finish_reason",
        id="request_id",
        answer=("outputs[].text",),
        samples="len(outputs)",
        each_finish=True,
        provider=SELF_HOSTED,
    ),
    # Ollama's native /api/generate and /api/chat: a non-streamed reply, or a stream's last
    # object (`done: true`), whose text was streamed before it (so no answer is read here)
    declare(
        "ollama",
        ("eval_count & done", "done=true & created_at"),
        completion_tokens="eval_count",
        prompt_tokens="prompt_eval_count",
        finish="done_reason",
        messages="message",
        streams=True,
        provider=SELF_HOSTED,
    ),
    # llama.cpp server's /completion: the reply, or a stream's last object (`stop: true`)
    declare(
        "llamacpp_completion",
        ("tokens_predicted", "stop=true & has(content) & has(id_slot)"),
        completion_tokens="tokens_predicted",
        prompt_tokens="tokens_evaluated",
        cached_tokens="timings.cache_n",  # `tokens_cached` is the whole context kept, not this
        finish="stop_type",
        streams=True,
        provider=SELF_HOSTED,
    ),
    # distilabel rows: `distilabel_metadata.statistics_<step>` per step (a list per generation
    # in some versions); several steps add up
    declare(
        "distilabel",
        ("distilabel_metadata.*.output_tokens",),
        completion_tokens=(
            "distilabel_metadata.*.output_tokens[] | distilabel_metadata.*.output_tokens"
        ),
        prompt_tokens="distilabel_metadata.*.input_tokens[] | distilabel_metadata.*.input_tokens",
        answer=("generation", "generations[]"),
        samples="len(generations)",
    ),
    declare(
        "flat",
        ("completion_tokens",),
        completion_tokens="completion_tokens",
        prompt_tokens="prompt_tokens",
        reasoning_tokens="reasoning_tokens",
        cached_tokens="cached_tokens",
        total_tokens="total_tokens",
        finish="finish_reason",
        answer=("text",),
        model="model",
        provider=SELF_HOSTED,
    ),
    declare(
        "derived",
        ("output_ids",),
        completion_tokens="len(output_ids)",
        prompt_tokens="len(input_ids)",
        finish="finish_reason | meta_info.finish_reason",
        answer=("text",),
        provider=SELF_HOSTED,
    ),
    # A record that is only an error (an error response saved as a line, a stream's error
    # event): a failed request, its message the reason
    declare(
        "error",
        (
            "error",
            "type=error & message",
            "object=error & message",
            *ERROR_KEYS,
            # Bedrock's HTTP error body: a bare message
            'message ^= "" & !type & !object & !id & !model & !output & !content & !usage',
        ),
        failures=(
            _fail("error", "error {error.code | error.type | error.errorCode}", ERROR_MESSAGE),
            _fail("message", "error {code}", "message"),
            *(_fail(key, key, f"{key}.message") for key in ERROR_KEYS),
        ),
    ),
)
BUILT_IN_NAMES = frozenset(d.name for d in BUILT_IN)


# --- user declarations (genledger.toml `[[formats]]`) ---------------------------------------

# The keys of a `[[formats]]` table (the schema of genledger.toml, `genledger.settings`, takes
# them from here).
USER_KEYS = (
    "name", "extends", *RESPONSES.declared, "finish_reason", "id", "text", "detect",
    "failed_when", "samples", "float_counts", "provider", "batch",
)  # fmt: skip


def user_declaration(raw: Mapping[str, Any], where: str) -> Declaration:
    """One `[[formats]]` table as a declaration; raises `PathError` naming the bad entry."""
    unknown = sorted(set(raw) - set(USER_KEYS))
    if unknown:
        raise PathError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(USER_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise PathError(f"{where}: `name` must be a non-empty string")
    if name in BUILT_IN_NAMES:
        # Its records would be reported as that format's (a user `openai_chat` relabelled
        # real OpenAI records).
        raise PathError(
            f"{where}: `name` = {name!r} is a built-in format's name: choose another "
            "(docs/formats.md lists the built-in ones)"
        )
    where = f"{where} ({name})"
    try:
        if raw.get("extends") is not None:
            return _extended(raw, name, _built_in(_string(raw["extends"], "extends")))
        completion = raw.get(COMPLETION)
        if not isinstance(completion, str):
            raise PathError(f"`{COMPLETION}` (a path) is required (or `extends`)")
        fields = _user_fields(raw)
        return declare(
            name,
            fields.pop("detect") or (TERMS.split(completion.split("|")[0])[0].strip(),),
            **fields,
            user=True,
        )
    except PathError as exc:
        raise PathError(f"{where}: {exc}") from None


def _user_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The `declare` arguments a `[[formats]]` table gives (absent ones None or empty)."""
    detect = raw.get("detect")
    conditions = [detect] if isinstance(detect, str) or detect is None else detect
    if not isinstance(conditions, list) or (detect is not None and not conditions):
        raise PathError("`detect` must be a condition or a list of them")
    text = raw.get("text")
    float_counts = raw.get("float_counts")
    if float_counts is not None and not isinstance(float_counts, bool):
        raise PathError("`float_counts` must be true or false")
    failed_when = _optional(raw.get("failed_when"), "failed_when")
    batch = raw.get("batch")
    if batch is not None and not isinstance(batch, bool):
        raise PathError("`batch` must be true or false")
    return dict(
        detect=() if detect is None else (" & ".join(_string(c, "detect") for c in conditions),),
        finish=_optional(raw.get("finish_reason"), "finish_reason"),
        id=_optional(raw.get("id"), "id"),
        answer=() if text is None else tuple(_string(text, "text").split("|")),
        samples=_optional(raw.get("samples"), "samples"),
        failures=() if failed_when is None else (_user_failure(failed_when),),
        float_counts=bool(float_counts),
        provider=_optional(raw.get("provider"), "provider"),
        batch=bool(batch),
        **{column: _optional(raw.get(column), column) for column in RESPONSES.declared},
    )


def _user_failure(when: str) -> Failure:
    """`failed_when`: the reason names the condition, then the source's message where the
    condition's path holds one (a string, or an object's `message`)."""
    condition = parse_condition(when)
    detail = None if condition.op in ("absent", "eq") else parse_field(condition.path.text, False)
    return Failure(condition, f"failed_when {when}", detail)


def _built_in(name: str) -> Declaration:
    for decl in BUILT_IN:
        if decl.name == name:
            return decl
    known = ", ".join(dict.fromkeys(d.name for d in BUILT_IN))
    raise PathError(f"`extends`: no built-in format {name!r} (known: {known})")


def _extended(raw: Mapping[str, Any], name: str, base: Declaration) -> Declaration:
    """`extends = "<built-in>"`: the built-in declaration (the first of that name) with the
    fields given changed; its checks, answer paths, inner record and failures stay
    (`failed_when` adds one, tried first)."""
    fields = _user_fields(raw)
    counts = dict(base.counts)
    counts.update((c, parse_field(t)) for c in RESPONSES.declared if (t := fields.pop(c)))
    given = {key: fields[key] for key in ("finish", "id", "samples") if fields[key] is not None}
    return replace(
        base,
        name=name,
        detect=_detect(*fields["detect"]) if fields["detect"] else base.detect,
        counts=tuple(counts.items()),
        finish=_f(given["finish"], sums=False) if "finish" in given else base.finish,
        id=_f(given["id"], sums=False) if "id" in given else base.id,
        samples=parse_path(given["samples"]) if "samples" in given else base.samples,
        answer=tuple(parse_path(p) for p in fields["answer"]) or base.answer,
        failures=fields["failures"] + base.failures,
        float_counts=fields["float_counts"] if "float_counts" in raw else base.float_counts,
        provider=fields["provider"] or base.provider,
        batch=fields["batch"] if "batch" in raw else base.batch,
        user=True,
    )


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise PathError(f"`{key}` must be a string")
    return value


def _optional(value: Any, key: str) -> str | None:
    return None if value is None else _string(value, key)


def user_declarations(raw: Iterable[Mapping[str, Any]], where: str) -> tuple[Declaration, ...]:
    """Every `[[formats]]` table of a config file, in order."""
    return tuple(user_declaration(r, f"{where}: formats[{i}]") for i, r in enumerate(raw))


# --- a set of declarations in force -----------------------------------------------------------

POSSIBLE_CACHE = 4096  # key sets remembered per format set: hostile ones must not grow it


@dataclass(frozen=True, eq=False)
class FormatSet:
    """The declarations a refresh reads records with: the user's (tried first, in order),
    then the built-in ones. A value carried by the configuration; what is derived from it is
    remembered on the value itself, never in module state."""

    user: tuple[Declaration, ...] = ()
    # `[datasets."X"] response_key`: the path of a record's id, tried before the format's own
    id_path: str | None = None
    all: tuple[Declaration, ...] = field(init=False)
    id: Path | None = field(init=False, default=None)
    # Records of one format share their keys: the declarations whose detect can hold for a key
    # set (its keys include what a detect alternative needs) are worked out once per key set.
    _possible: dict[frozenset[str], tuple[Declaration, ...]] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "all", self.user + BUILT_IN)
        object.__setattr__(self, "id", None if self.id_path is None else parse_path(self.id_path))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FormatSet) and (other.user, other.id_path) == (
            self.user,
            self.id_path,
        )

    def __hash__(self) -> int:
        return hash((self.user, self.id_path))

    def __reduce__(self) -> tuple[Any, ...]:
        return FormatSet, (self.user, self.id_path)  # workers get the value, not the memo

    @property
    def built_in_only(self) -> bool:
        """No user declaration and no id path of the user's: the typed decoders (the
        built-in formats') may answer first."""
        return not self.user and self.id_path is None

    def possible(self, keys: frozenset[str]) -> tuple[Declaration, ...]:
        """The declarations whose detect can hold for a record with top-level `keys`."""
        found = self._possible.get(keys)
        if found is None:
            if len(self._possible) >= POSSIBLE_CACHE:
                self._possible.clear()
            found = tuple(d for d in self.all if any(keys >= need for need in d.requires))
            self._possible[keys] = found
        return found

    def priced_as(self, name: str | None) -> tuple[str | None, bool]:
        """(provider, batch) of the format named `name` (the first declaration so named)."""
        for decl in self.all:
            if decl.name == name:
                return decl.provider, decl.batch
        return None, False

    def signature(self) -> str:
        """A text that changes when the user's declarations change (kept in state records)."""
        return repr((self.user, self.id_path))


BUILT_IN_ONLY = FormatSet()


@cache
def inner_candidates(names: tuple[str, ...]) -> tuple[Declaration, ...]:
    """The built-in declarations a sub-record may be read as, in table order."""
    wanted = set(names)
    return tuple(d for d in BUILT_IN if d.name in wanted and d.inner is None)


def built_in_signature() -> str:
    """A text that changes when a built-in declaration changes (kept in state records)."""
    return repr(BUILT_IN)
