"""Record formats: the facts of one response record, read by the declarations (docs/formats.md).

Every function here reads a parsed JSON object defensively: any field may be absent, `null`
or of another type. Nothing here decides what is a defect; it only reports facts (which
declaration matched, the JSON type of the value found, lengths, what failed). The rules live
in `genledger.rules`; where each format keeps its fields lives in `genledger.parse.declarations`.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from genledger.parse.answer import key_of_texts, part_text
from genledger.parse.declarations import (
    BUILT_IN_ONLY,
    COMPLETION,
    MESSAGE_CHARS,
    Declaration,
    Failure,
    FormatSet,
    inner_candidates,
)
from genledger.parse.paths import (
    MAX_DEPTH,
    Field,
    PathError,
    in_int64,
    parse_field,
    parse_path,
)
from genledger.parse.schema import FRAGMENT, RESPONSES, Facts
from genledger.parse.streams import FAMILIES, event_family
from genledger.parse.tokenized import INT64_MAX, INT64_MIN, unwrap
from genledger.parse.usage import PARTS, SETTLED, settle

# A reply with a reasoning field keeps its trace there; a think tag in its content means the
# trace leaked into the answer, or the reply was cut inside an unclosed `<think>`.
THINK_TAGS = ("</think>", "<think>")
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")  # `thinking`: Ollama's
ID_FALLBACK = ("custom_id", "id")
MAX_KEYS = 30  # keys named in a missing-count reason
KEY_DEPTH = 3  # how deep a missing-count reason names nested objects' keys
# Objects of request settings, never counts: a missing-count reason names them, not their keys
# (llama.cpp's `generation_settings`, xAI's `settings`, a pipeline's `sampling_params`, ...).
SETTINGS = frozenset({
    "generation_settings", "settings", "sampling_params", "generationConfig",
    "generation_config", "options", "parameters", "ResponseMetadata", "modelInput", "request",
    "timings", "metrics", "time_info", "kv_transfer_params",
})  # fmt: skip
MESSAGE_KEYS = ("message", "errorMessage", "error", "detail", "msg")  # an error object's text
FINISH_SEPARATOR = "\n"  # joins the finish reasons of a record's later samples
CHAT_MESSAGES = parse_path("choices[].message")  # where a record without a count has messages


def dig(obj: Any, *path: str | int) -> Any:
    """Follow dict keys / list indices; None when any step is absent, null or mistyped."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
        if obj is None:
            return None
    return obj


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value; ints outside int64 are 'bigint'."""
    if value is True or value is False:
        return "bool"
    if isinstance(value, int):
        return "int" if INT64_MIN <= value <= INT64_MAX else "bigint"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def short_repr(value: Any, limit: int = 40) -> str:
    """A short printable form of a raw value for failure examples."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reason_name(value: Any) -> str | None:
    """A finish reason as a string: SGLang's `{"type": ...}` objects are unwrapped."""
    if isinstance(value, dict):
        value = value.get("type")
    return value if isinstance(value, str) else None


# The declared columns other than the completion count, each read as the schema says.
OTHER_COUNTS = tuple(c for c in RESPONSES.declared if c != COMPLETION)


def _valid_int(value: Any) -> int | None:
    """`value` when it is a JSON integer in int64 range (bools excluded), else None."""
    return value if in_int64(value) else None


def record_id(
    obj: dict[str, Any], decl: Declaration | None = None, formats: FormatSet = BUILT_IN_ONLY
) -> str | None:
    """The user's id path (`response_key`), else the format's id, else `custom_id`, else `id`,
    else `meta_info.id` (non-empty strings and ints only)."""
    found = [] if formats.id is None else [formats.id.first(obj)]
    found += [] if decl is None or decl.id is None else decl.id.all_values(obj)[:1]
    found += [obj.get(k) for k in ID_FALLBACK]
    found.append(dig(obj, "meta_info", "id"))
    for value in found:
        if isinstance(value, str) and value:
            return value
        if type(value) is int:
            return str(value)
    return None


def has_think_tag(text: str) -> bool:
    """`</think>` or `<think>` in a text."""
    return "think>" in text and any(tag in text for tag in THINK_TAGS)


def _holds_think_tag(text: Any) -> bool:
    """A think tag in a string, or in the string `text` of a content list's parts."""
    if isinstance(text, str):
        return has_think_tag(text)
    if isinstance(text, list):
        # One level only: content parts are flat, and hostile nesting must not recurse.
        parts = (p.get("text") for p in text if isinstance(p, dict))
        return any(isinstance(t, str) and has_think_tag(t) for t in parts)
    return False


def think_leak(decl: Declaration | None, obj: Any) -> bool:
    """A chat message's content holds `</think>` or `<think>` (a reply cut inside an unclosed
    one) while its reasoning field is null or absent. Raw completions (`text`) carry the whole
    trace by design and are never leaks."""
    messages = CHAT_MESSAGES if decl is None else decl.messages  # no count: read as chat
    if messages is None:
        return False
    for message in messages.values(obj):
        if (
            isinstance(message, dict)
            and _holds_think_tag(message.get("content"))
            and all(message.get(k) is None for k in REASONING_KEYS)
        ):
            return True
    return False


def _visible(value: Any, depth: int = 0) -> bool:
    """Whether an answer value shows something: a non-empty string, a part with text, a tool
    call; reasoning parts (`"thought": true`) show nothing."""
    if isinstance(value, str):
        return value != ""
    if isinstance(value, list):
        return depth < MAX_DEPTH and any(_visible(v, depth + 1) for v in value)
    if isinstance(value, dict):
        if value.get("thought") is True:
            return False
        if "text" in value:
            return depth < MAX_DEPTH and _visible(value["text"], depth + 1)
        return True
    return value is not None


def answer_key(decl: Declaration | None, obj: Any) -> int | None:
    """The key of the record's visible answer (`genledger.parse.answer`): the values on its
    answer paths, reasoning parts left out; None when there is none."""
    if decl is None or not decl.answer:
        return None
    texts = [
        text
        for p in decl.answer
        for v in p.values(obj, skip_thoughts=True)
        if (text := part_text(v)) is not None
    ]
    return key_of_texts(texts) if texts else None


def empty_output(decl: Declaration | None, obj: Any) -> bool:
    """The record has a place for its answer (the answer paths' top key) and nothing visible
    there."""
    if decl is None or not decl.answer:
        return False
    if not any(obj.get(p.top) is not None for p in decl.answer):
        return False
    return not any(_visible(v) for p in decl.answer for v in p.values(obj, skip_thoughts=True))


TEMPLATE = re.compile(r"\{([^{}]+)\}")


@lru_cache(maxsize=256)  # a label's paths are parsed once, not for every failed record
def _label_field(text: str) -> Field:
    return parse_field(text, sums=False)


def _fill(label: str, obj: Any) -> str:
    def value(match: re.Match[str]) -> str:
        found = _label_field(match.group(1)).first(obj)
        return "?" if found is None else str(found)[:60]

    return TEMPLATE.sub(value, label).replace(" ?", "")


def message_of(value: Any, depth: int = 0) -> str | None:
    """The source's own message in a value: a non-empty string, or an error object's
    `message` (`errorMessage`, a nested `error`, ...)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict) and depth < 2:
        for key in MESSAGE_KEYS:
            found = message_of(value.get(key), depth + 1)
            if found:
                return found
    return None


def _reason(failure: Failure, obj: Any) -> str:
    """A failed request's reason: its label, then the source's message (cut)."""
    label = _fill(failure.label, obj)
    detail = None
    if failure.detail is not None:
        for terms in failure.detail.alternatives:
            detail = next((m for p in terms for v in p.values(obj) if (m := message_of(v))), None)
            if detail:
                break
    if not detail:
        return label or "failed"
    detail = detail[:MESSAGE_CHARS]
    return f"{label}: {detail}" if label else detail


def failure_reason(decl: Declaration | None, obj: Any) -> str | None:
    """Why the request failed, by the first failure rule that holds; None when none does."""
    if decl is None:
        return None
    for failure in decl.failures:
        if failure.when.holds(obj):
            return _reason(failure, obj)
    return None


def keys_seen(obj: dict[str, Any]) -> str:
    """`keys: id, type, usage{input_tokens, output_tokens_details{reasoning_tokens}}, content`:
    what the record holds, nested objects three levels deep (a list of objects by its first
    element, `choices[]{...}`), at most `MAX_KEYS` names, a settings object by its name
    only, so a user can declare it."""
    budget = [MAX_KEYS]
    text = _keys(obj, 1, budget)
    if not text:
        return "keys: none (an empty object)"
    return "keys: " + text


def _keys(obj: dict[str, Any], depth: int, budget: list[int]) -> str:
    parts = []
    for key, value in obj.items():
        if budget[0] <= 0:
            parts.append("…")
            break
        budget[0] -= 1
        name, inner = str(key), None
        if isinstance(value, list) and value and isinstance(value[0], dict):
            name, value = f"{name}[]", value[0]
        if isinstance(value, dict) and value:
            if key in SETTINGS:
                inner = "…"
            elif depth < KEY_DEPTH:
                inner = _keys(value, depth + 1, budget)
        parts.append(name if inner is None else f"{name}{{{inner}}}")
    return ", ".join(parts)


def find_declaration(
    obj: dict[str, Any],
    formats: FormatSet = BUILT_IN_ONLY,
    candidates: tuple[Declaration, ...] | None = None,
) -> Declaration | None:
    """The first declaration of `formats` (or of `candidates`) whose detect holds."""
    pool = formats.possible(frozenset(obj)) if candidates is None else candidates
    for decl in pool:
        if decl.detects(obj):
            return decl
    return None


def _fragment(obj: dict[str, Any]) -> bool:
    return event_family(obj) is not None


def response_facts(
    obj: dict[str, Any], formats: FormatSet = BUILT_IN_ONLY, envelope: bool = True
) -> Facts:
    """Resolve format, counts, finish reason and defects-as-facts of one response record;
    `envelope`: a record no declaration detects may be a known one under a single key."""
    if event_family(obj) is not None:  # an event: its request is assembled (ledger.streams)
        return FRAGMENT
    keys = frozenset(obj)
    outer = find_declaration(obj, formats, formats.possible(keys))
    if outer is None:
        inner = _enveloped(obj, formats) if envelope else None
        if inner is not None:
            return inner
    decl, body = outer, obj
    if outer is not None and outer.inner is not None:
        sub = outer.inner.first(obj)
        candidates = inner_candidates(outer.inner_formats)
        inner_decl = find_declaration(sub, formats, candidates) if isinstance(sub, dict) else None
        decl, body = inner_decl, sub
    failure = failure_reason(outer, obj) if outer is not decl else None
    failure = failure or failure_reason(decl, body)
    floats = decl is not None and decl.float_counts
    raw = None if decl is None or decl.completion is None else decl.completion.raw(body, floats)
    completion = _valid_int(raw)
    finishes = _finishes(decl, body)
    counts = {column: _count(decl, column, body, floats) for column in OTHER_COUNTS}
    settled = settle(counts["prompt_tokens"], completion, counts["total_tokens"],
                     *(counts[column] for column in PARTS))  # fmt: skip
    counts.update(zip(SETTLED, settled, strict=True))
    return RESPONSES.make(  # type: ignore[no-any-return]
        record_id=record_id(obj, outer, formats),
        format=None if outer is None else outer.name,
        count_type=None if raw is None else json_type(raw),
        count_raw=None if raw is None or completion is not None else short_repr(raw),
        n_samples=_samples(decl, body, failed=failure is not None),
        finish_reason=finishes[0] if finishes else None,
        more_finishes=FINISH_SEPARATOR.join(finishes[1:]) or None,
        output_len=_output_len(obj),
        failed_request=failure is not None,
        request_detail=failure,
        think_leak=think_leak(decl, body),
        empty_output=empty_output(decl, body),
        missing_detail=None if raw is not None or failure else _missing(outer, decl, obj),
        answer_hash=answer_key(decl, body),
        **counts,
    )


def _enveloped(obj: dict[str, Any], formats: FormatSet) -> Facts | None:
    """A pipeline's envelope around one known record (`{"phase": ..., "raw": {...}}`): the
    facts of the record under its single key, named by the envelope's id where it has one;
    None when no key, or more than one, holds a known record."""
    found = [
        value
        for value in obj.values()
        if isinstance(value, dict) and (find_declaration(value, formats) or _fragment(value))
    ]
    if len(found) != 1:
        return None
    facts: Any = response_facts(found[0], formats, envelope=False)  # a facts namedtuple
    outer_id = record_id(obj)
    if outer_id is not None and not facts.stream_chunk:
        facts = facts._replace(record_id=outer_id)
    return facts  # type: ignore[no-any-return]


def _count(decl: Declaration | None, column: str, body: Any, floats: bool) -> Any:
    """A declared column's value: a count, a text or a time, as the schema says it reads."""
    spec = None if decl is None else decl.count(column)
    if spec is None:
        return None
    reads = READS[column]
    if reads == "count":
        return _valid_int(spec.raw(body, floats))
    value = spec.first(body)
    return text_value(value) if reads == "text" else time_value(value)


READS = {c.name: c.value_read for c in RESPONSES.facts if c.declared}
MAX_TEXT = 100  # a declared text (a model name) is cut to this many characters
MILLISECONDS = 10**11  # an epoch number above this is milliseconds (seconds: year 5138)
FRACTION = re.compile(r"(\.\d{6})\d+")  # ISO texts with nanoseconds: Python reads 6 digits


def text_value(value: Any) -> str | None:
    """A declared text: a non-empty string, cut to `MAX_TEXT` characters; else None."""
    return value[:MAX_TEXT] if isinstance(value, str) and value else None


def time_value(value: Any) -> int | None:
    """A declared time as POSIX seconds: epoch seconds (or milliseconds) as a number, or an
    ISO-8601 text (without a zone: UTC); None for anything else."""
    kind = type(value)
    if kind is int:  # the common case first: this runs for every record that has a time
        if -MILLISECONDS < value < MILLISECONDS:
            return value  # type: ignore[no-any-return]
        seconds = value // 1000
        return seconds if in_int64(seconds) else None
    if kind is float:
        if not math.isfinite(value):
            return None
        seconds = int(value // 1000) if abs(value) >= MILLISECONDS else int(value // 1)
        return seconds if in_int64(seconds) else None
    if kind is str and 0 < len(value) <= 64:
        return _iso_seconds(value)
    return None


def _iso_seconds(text: str) -> int | None:
    try:
        moment = datetime.fromisoformat(FRACTION.sub(r"\1", text.strip()))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() // 1)


def _samples(decl: Declaration | None, body: Any, failed: bool) -> int:
    """len(choices) or len(outputs) where declared, else 1; 0 for a failed request (nothing
    usable was completed)."""
    if failed:
        return 0
    n = None if decl is None or decl.samples is None else decl.samples.raw(body, False)
    return n if isinstance(n, int) and in_int64(n) and n > 0 else 1


def _finishes(decl: Declaration | None, body: Any) -> list[str]:
    if decl is None or decl.finish is None:
        return []
    names = [n for n in (reason_name(v) for v in decl.finish.all_values(body)) if n is not None]
    # finish_reasons counts records (its v1 meaning); vLLM's samples each count (docs/formats.md)
    return names if decl.each_finish else names[:1]


def _output_len(obj: dict[str, Any]) -> int | None:
    ids = unwrap(obj.get("output_ids"))
    return len(ids) if ids is not None else None


@lru_cache(maxsize=8)
def keys_read(formats: FormatSet = BUILT_IN_ONLY) -> frozenset[str]:
    """The top-level keys `response_facts` reads under `formats`, except through `keys_seen`
    (which names a count-less record's keys): a Parquet shard decodes only these columns, and
    a row whose facts name its keys is read again whole."""
    tops = {"meta_info", "output_ids", CHAT_MESSAGES.top, *ID_FALLBACK}
    tops |= {c.path.top for f in FAMILIES for conditions in f.events for c in conditions}
    tops |= {p.top for f in FAMILIES for path in f.paths() for p in [path]}
    for decl in formats.all:
        tops |= {p.top for p in decl.paths()}
        for failure in decl.failures:  # `{path}` values filled into the reason
            tops |= _template_tops(failure.label)
    return frozenset(tops)


def _template_tops(label: str) -> set[str]:
    tops: set[str] = set()
    for match in TEMPLATE.finditer(label):
        try:
            tops.update(p.top for p in parse_field(match.group(1), sums=False).paths)
        except PathError:
            continue  # not a path: `_fill` would fail on it whatever the columns read
    return tops


def _missing(outer: Declaration | None, decl: Declaration | None, obj: dict[str, Any]) -> str:
    if decl is not None and decl.completion is not None:
        if decl.streams:
            note = " (a stream's last event without usage)"
            return f"no usage: no {decl.completion.text}{note}; {keys_seen(obj)}"
        return f"no {decl.completion.text}; {keys_seen(obj)}"
    if outer is not None and outer.inner is not None:
        return f"no known record under {outer.inner.text}; {keys_seen(obj)}"
    return f"no known format; {keys_seen(obj)}"
