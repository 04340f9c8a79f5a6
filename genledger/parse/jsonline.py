"""Decode one JSONL line into records: an object, or an array of objects (an SGLang batch)."""

from __future__ import annotations

import json
from typing import Any

import orjson


class Malformed(ValueError):
    """A line that is not JSON, or neither an object nor an array of objects."""


def records_of(content: bytes) -> list[dict[str, Any]]:
    """The records a non-blank line holds; raises `Malformed` with a short reason."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        value = _lenient(content, exc)
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        if all(isinstance(item, dict) for item in value):
            return value
        raise Malformed("array holds a non-object element")
    raise Malformed(f"not a JSON object (a {type(value).__name__})")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _lenient(content: bytes, error: orjson.JSONDecodeError) -> Any:
    """Accept raw control characters (a form feed, say) inside strings; nothing else.

    docs/tailing.md lets JSON strings hold raw form feeds, which strict parsers refuse. Only that
    refusal is retried, with the standard library's non-strict mode; NaN stays refused, and a
    value orjson cannot write back (lone surrogates) stays malformed.
    """
    if "control character" not in str(error):
        raise Malformed(f"invalid JSON: {error}") from None
    try:
        value = json.loads(content.decode("utf-8"), strict=False, parse_constant=_reject_constant)
        orjson.dumps(value)
    except (ValueError, TypeError, RecursionError, orjson.JSONEncodeError) as exc:
        raise Malformed(f"invalid JSON: {error}") from exc
    return value
