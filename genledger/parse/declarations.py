"""Record formats as declarations (docs/formats.md): the one place that says where each
format keeps its counts. The built-in formats below and a user's `[[formats]]` in
genledger.toml are the same kind of value, read by `genledger.parse.formats` (the definition
of correct) and by the fast path alike. Path syntax: `genledger.parse.paths`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from genledger.parse.paths import (
    Condition,
    Field,
    Path,
    PathError,
    parse_condition,
    parse_field,
    parse_path,
)
from genledger.parse.schema import RESPONSES


@dataclass(frozen=True)
class Failure:
    """A failed request: when `when` holds; the reason is `label` with `{path}` values filled
    in, then `: detail` when the detail path has a value."""

    when: Condition
    label: str
    detail: Path | None = None


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
            if keys >= needed:  # plain loops: this runs for every record
                for condition in conditions:
                    if not condition.holds(obj):
                        break
                else:
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
            found.extend([failure.detail] if failure.detail is not None else [])
        return found


COMPLETION = "completion_tokens"  # the main count: a user declaration's required path


def _f(text: str | None, sums: bool = True) -> Field | None:
    return None if text is None else parse_field(text, sums)


def _detect(*alternatives: str) -> tuple[tuple[Condition, ...], ...]:
    return tuple(tuple(parse_condition(c) for c in alt.split(" & ")) for alt in alternatives)


def _fail(when: str, label: str, detail: str | None = None) -> Failure:
    return Failure(parse_condition(when), label, None if detail is None else parse_path(detail))


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
CHAT_FIELDS: dict[str, Any] = dict(
    completion_tokens="usage.completion_tokens",
    prompt_tokens="usage.prompt_tokens",
    reasoning_tokens="usage.completion_tokens_details.reasoning_tokens | usage.reasoning_tokens",
    cached_tokens="usage.prompt_tokens_details.cached_tokens",
    finish="choices[].finish_reason",
    answer=CHAT_ANSWER,
    messages="choices[].message",
    samples="len(choices)",
    model="model",
    created="created",
    provider="openai",
)
RESPONSES_FAILURES = (
    _fail("status=failed", "failed {error.code}", "error.message"),
    _fail("error", "error {error.code}", "error.message"),
)


def _gemini(camel: bool) -> Declaration:
    """Gemini as REST/`by_alias` (camelCase) or as the Python SDK's default dump (snake_case)."""

    def name(text: str) -> str:
        return text if camel else re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), text)

    usage, feedback = name("usageMetadata"), name("promptFeedback.blockReason")
    thoughts = f"{usage}.{name('thoughtsTokenCount')}"
    parts = "candidates[].content.parts[]"
    return declare(
        "gemini",
        (usage, feedback),
        completion_tokens=f"{usage}.{name('candidatesTokenCount')} + {thoughts}",
        prompt_tokens=f"{usage}.{name('promptTokenCount')}",
        reasoning_tokens=thoughts,
        cached_tokens=f"{usage}.{name('cachedContentTokenCount')}",
        finish=name("candidates[].finishReason"),
        id=name("responseId"),
        answer=(f"{parts}.text", name(f"{parts}.functionCall")),
        failures=(_fail(feedback, "blocked {" + feedback + "}"),),
        model=name("modelVersion"),
        created=name("createTime"),
        provider="google",
    )


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
    # A stream's last chunk carries the request's usage; its answer was streamed before it.
    declare(
        "openai_chat",
        ("usage.completion_tokens & object=chat.completion.chunk",),
        **{**CHAT_FIELDS, "answer": (), "messages": None, "samples": None},
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
    declare(
        "openai_responses",
        ("usage.output_tokens & object=response",),
        completion_tokens="usage.output_tokens",
        prompt_tokens="usage.input_tokens",
        reasoning_tokens="usage.output_tokens_details.reasoning_tokens",
        cached_tokens="usage.input_tokens_details.cached_tokens",
        finish="incomplete_details.reason | status",
        answer=("output[].content[].text", "output[].content[].refusal", "output[].arguments"),
        failures=RESPONSES_FAILURES,
        model="model",
        created="created_at",
        provider="openai",
    ),
    declare(
        "anthropic_message",
        ("usage.output_tokens & type=message",),
        completion_tokens="usage.output_tokens",
        prompt_tokens=(
            "usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens"
        ),
        reasoning_tokens="usage.output_tokens_details.thinking_tokens",
        cached_tokens="usage.cache_read_input_tokens",
        cache_write_tokens="usage.cache_creation_input_tokens",
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
    declare(
        "cohere_chat",
        ("usage.tokens.output_tokens",),
        completion_tokens="usage.tokens.output_tokens",
        prompt_tokens="usage.tokens.input_tokens",
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
        ("details.generated_tokens",),
        completion_tokens="details.generated_tokens",
        prompt_tokens="details.input_length",
        finish="details.finish_reason",
        answer=("generated_text",),
        provider=SELF_HOSTED,
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
    declare(
        "flat",
        ("completion_tokens",),
        completion_tokens="completion_tokens",
        prompt_tokens="prompt_tokens",
        reasoning_tokens="reasoning_tokens",
        cached_tokens="cached_tokens",
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
)
# A streamed chunk without usage is a piece of a request, not a record (docs/formats.md).
STREAM_FRAGMENTS = _detect(
    "object=chat.completion.chunk & !usage",
    "has(token) & has(index) & !details & !choices",  # TGI's token events
)


# --- user declarations (genledger.toml `[[formats]]`) ---------------------------------------

USER_KEYS = (
    "name", *RESPONSES.declared, "finish_reason", "id", "text", "detect", "failed_when",
    "samples", "float_counts", "provider", "batch",
)  # fmt: skip


def user_declaration(raw: Mapping[str, Any], where: str) -> Declaration:
    """One `[[formats]]` table as a declaration; raises `PathError` naming the bad entry."""
    unknown = sorted(set(raw) - set(USER_KEYS))
    if unknown:
        raise PathError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(USER_KEYS)})")
    name, completion = raw.get("name"), raw.get(COMPLETION)
    if not isinstance(name, str) or not name:
        raise PathError(f"{where}: `name` must be a non-empty string")
    where = f"{where} ({name})"
    if not isinstance(completion, str):
        raise PathError(f"{where}: `{COMPLETION}` (a path) is required")
    try:
        detect = raw.get("detect", completion.split("|")[0].split("+")[0].strip())
        conditions = [detect] if isinstance(detect, str) else detect
        if not isinstance(conditions, list) or not conditions:
            raise PathError("`detect` must be a condition or a list of them")
        text = raw.get("text")
        failed_when = raw.get("failed_when")
        float_counts = raw.get("float_counts", False)
        if not isinstance(float_counts, bool):
            raise PathError("`float_counts` must be true or false")
        batch = raw.get("batch", False)
        if not isinstance(batch, bool):
            raise PathError("`batch` must be true or false")
        counts: dict[str, Any] = {
            column: _optional(raw.get(column), column) for column in RESPONSES.declared
        }
        return declare(
            name,
            (" & ".join(_string(c, "detect") for c in conditions),),
            finish=_optional(raw.get("finish_reason"), "finish_reason"),
            id=_optional(raw.get("id"), "id"),
            answer=() if text is None else tuple(_string(text, "text").split("|")),
            samples=_optional(raw.get("samples"), "samples"),
            failures=()
            if failed_when is None
            else (_fail(_string(failed_when, "failed_when"), f"failed_when {failed_when}"),),
            float_counts=float_counts,
            user=True,
            provider=_optional(raw.get("provider"), "provider"),
            batch=batch,
            **counts,
        )
    except PathError as exc:
        raise PathError(f"{where}: {exc}") from None


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
    all: tuple[Declaration, ...] = field(init=False)
    # Records of one format share their keys: the declarations whose detect can hold for a key
    # set (its keys include what a detect alternative needs) are worked out once per key set.
    _possible: dict[frozenset[str], tuple[Declaration, ...]] = field(
        init=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "all", self.user + BUILT_IN)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FormatSet) and other.user == self.user

    def __hash__(self) -> int:
        return hash(self.user)

    def __reduce__(self) -> tuple[Any, ...]:
        return FormatSet, (self.user,)  # forked workers get the value, not the memo

    @property
    def built_in_only(self) -> bool:
        """No user declaration: the typed decoders (the built-in formats') may answer first."""
        return not self.user

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
        return repr(self.user)


BUILT_IN_ONLY = FormatSet()


@cache
def inner_candidates(names: tuple[str, ...]) -> tuple[Declaration, ...]:
    """The built-in declarations a sub-record may be read as, in table order."""
    wanted = set(names)
    return tuple(d for d in BUILT_IN if d.name in wanted and d.inner is None)


def built_in_signature() -> str:
    """A text that changes when a built-in declaration changes (kept in state records)."""
    return repr(BUILT_IN)
