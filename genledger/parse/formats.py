"""Record formats: find the completion-token count of a response record (docs/design.md §3).

Every function here reads a parsed JSON object defensively: any field may be absent, `null`
or of another type. Nothing here decides what is a defect; it only reports facts (which
path matched, the JSON type of the value found, lengths). The rules live in `genledger.rules`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from genledger.parse.tokenized import INT64_MAX, INT64_MIN, unwrap

THINK_CLOSE = "</think>"
REASONING_KEYS = ("reasoning_content", "reasoning")


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


class CountPath(NamedTuple):
    """Where one format keeps its completion count, prompt count and finish reason."""

    format: str
    completion: tuple[str | int, ...]
    prompt: tuple[str | int, ...] | None
    finish: tuple[str | int, ...]


# Order matters: the first path whose key is present with a non-null value wins.
COUNT_PATHS: tuple[CountPath, ...] = (
    CountPath(
        "sglang_generate",
        ("meta_info", "completion_tokens"),
        ("meta_info", "prompt_tokens"),
        ("meta_info", "finish_reason"),
    ),
    CountPath(
        "openai_chat",
        ("usage", "completion_tokens"),
        ("usage", "prompt_tokens"),
        ("choices", 0, "finish_reason"),
    ),
    CountPath(
        "openai_batch",
        ("response", "body", "usage", "completion_tokens"),
        ("response", "body", "usage", "prompt_tokens"),
        ("response", "body", "choices", 0, "finish_reason"),
    ),
    CountPath(
        "wrapped_openai",
        ("response", "usage", "completion_tokens"),
        ("response", "usage", "prompt_tokens"),
        ("response", "choices", 0, "finish_reason"),
    ),
    CountPath("tgi", ("details", "generated_tokens"), None, ("details", "finish_reason")),
    CountPath("flat", ("completion_tokens",), ("prompt_tokens",), ("finish_reason",)),
)
DERIVED_FINISH: tuple[tuple[str | int, ...], ...] = (
    ("finish_reason",),
    ("outputs", 0, "finish_reason"),
    ("meta_info", "finish_reason"),
)
FORMATS: tuple[str, ...] = (
    "sglang_generate",
    "openai_chat",
    "openai_completion",
    "openai_batch",
    "wrapped_openai",
    "tgi",
    "flat",
    "derived",
)


class ResponseFacts(NamedTuple):
    """What one response record says about its tokens (one row of the token table)."""

    record_id: str | None
    format: str | None
    count_type: str | None  # JSON type of the completion count found; None: no path
    completion_tokens: int | None  # the count when it is a JSON int in int64 range
    count_raw: str | None  # short repr of a count that is not an int, for examples
    prompt_tokens: int | None
    finish_reason: str | None
    output_len: int | None  # len(output_ids) when it is a list
    failed_request: bool
    request_detail: str | None
    think_leak: bool


def record_id(obj: dict[str, Any]) -> str | None:
    """`custom_id`, else `id`, else `meta_info.id` (non-empty strings and ints only)."""
    for value in (obj.get("custom_id"), obj.get("id"), dig(obj, "meta_info", "id")):
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def _is_batch_line(obj: dict[str, Any]) -> bool:
    """An OpenAI Batch output line: a `custom_id`, a `status_code`, or `response` beside `error`."""
    if "response" not in obj:
        return False
    response = obj["response"]
    return (
        "custom_id" in obj
        or "error" in obj
        or (isinstance(response, dict) and "status_code" in response)
    )


def batch_failure(obj: dict[str, Any]) -> str | None:
    """Why an OpenAI Batch output line failed (`response: null` or non-200), else None."""
    if not _is_batch_line(obj):
        return None
    response = obj["response"]
    if response is None:
        code = dig(obj, "error", "code")
        return f"no response (error {code})" if code else "no response"
    if isinstance(response, dict) and response.get("status_code", 200) != 200:
        return f"status_code {short_repr(response.get('status_code'))}"
    return None


def _valid_int(value: Any) -> int | None:
    """`value` when it is a JSON integer in int64 range (bools excluded), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and json_type(value) == "int":
        return value
    return None


def _derived_count(obj: dict[str, Any]) -> Any:
    """`output_ids`, else vLLM's `outputs[0].token_ids`: the list whose length is the count."""
    ids = obj.get("output_ids")
    if ids is None:
        ids = dig(obj, "outputs", 0, "token_ids")
    return _ids(ids)


def _ids(value: Any) -> Any:
    """A token-id list with a saved tensor's `[[...]]` unwrapped; other values unchanged."""
    ids = unwrap(value)
    return value if ids is None else ids


def _openai_kind(choices_owner: dict[str, Any]) -> str:
    """Chat vs legacy completions, by `object` or by the shape of the first choice."""
    kind = choices_owner.get("object")
    if kind == "text_completion":
        return "openai_completion"
    if kind == "chat.completion":
        return "openai_chat"
    first = dig(choices_owner, "choices", 0)
    if isinstance(first, dict) and "text" in first and "message" not in first:
        return "openai_completion"
    return "openai_chat"


def _texts_with_reasoning(obj: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    """(text, the object holding its reasoning fields) for every place text can sit."""
    owners: list[Any] = [obj, obj.get("response"), dig(obj, "response", "body")]
    found: list[tuple[Any, dict[str, Any]]] = []
    for owner in owners:
        if not isinstance(owner, dict):
            continue
        found.extend((owner.get(key), owner) for key in ("text", "generated_text"))
        for choice in _dicts(owner.get("choices")):
            message = choice.get("message")
            if isinstance(message, dict):
                found.append((message.get("content"), message))
            found.append((choice.get("text"), choice))
    found.extend((output.get("text"), output) for output in _dicts(obj.get("outputs")))
    return found


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The dict elements of `value` when it is a list, else nothing."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _has_think_close(text: Any) -> bool:
    """`</think>` in a string, or in the string `text` of a content list's parts."""
    if isinstance(text, str):
        return THINK_CLOSE in text
    if isinstance(text, list):
        # One level only: content parts are flat, and hostile nesting must not recurse.
        parts = (p.get("text") for p in text if isinstance(p, dict))
        return any(isinstance(t, str) and THINK_CLOSE in t for t in parts)
    return False


def think_leak(obj: dict[str, Any]) -> bool:
    """Content or text holds `</think>` while its reasoning field is null or absent."""
    for text, owner in _texts_with_reasoning(obj):
        if _has_think_close(text) and all(owner.get(k) is None for k in REASONING_KEYS):
            return True
    return False


def _finish(obj: dict[str, Any], paths: tuple[tuple[str | int, ...], ...]) -> str | None:
    """The first finish reason found along `paths`."""
    for path in paths:
        reason = reason_name(dig(obj, *path))
        if reason is not None:
            return reason
    return None


ALL_FINISH_PATHS = tuple(p.finish for p in COUNT_PATHS) + DERIVED_FINISH


def response_facts(obj: dict[str, Any]) -> ResponseFacts:
    """Resolve format, counts, finish reason and defects-as-facts of one response record."""
    ids = _ids(obj.get("output_ids"))
    output_len = len(ids) if isinstance(ids, list) else None
    failure = batch_failure(obj)
    fmt: str | None = None
    raw: Any = None
    prompt: Any = None
    finish: str | None = None
    if failure is None:
        fmt, raw, prompt, finish = _resolve(obj)
    count_type = None if fmt is None else json_type(raw)
    completion = _valid_int(raw)
    return ResponseFacts(
        record_id=record_id(obj),
        format=fmt,
        count_type=count_type,
        completion_tokens=completion,
        count_raw=None if fmt is None or completion is not None else short_repr(raw),
        prompt_tokens=_valid_int(prompt),
        finish_reason=finish if finish is not None else _finish(obj, ALL_FINISH_PATHS),
        output_len=output_len,
        failed_request=failure is not None,
        request_detail=failure,
        think_leak=think_leak(obj),
    )


def _resolve(obj: dict[str, Any]) -> tuple[str | None, Any, Any, str | None]:
    """(format, raw completion, raw prompt, finish reason) of the first match, docs/design.md §3."""
    for path in COUNT_PATHS:
        raw = dig(obj, *path.completion)
        if raw is None:
            continue
        fmt = path.format
        if fmt == "openai_chat":
            fmt = _openai_kind(obj)
        prompt = dig(obj, *path.prompt) if path.prompt else None
        return fmt, raw, prompt, _finish(obj, (path.finish,))
    ids = _derived_count(obj)
    if ids is None:
        return None, None, None, None
    count: Any = len(ids) if isinstance(ids, list) else ids
    input_ids = _ids(obj.get("input_ids"))
    prompt = len(input_ids) if isinstance(input_ids, list) else None
    return "derived", count, prompt, _finish(obj, DERIVED_FINISH)
