"""Decode one JSONL line into records: an object, or an array of objects (an SGLang batch)."""

from __future__ import annotations

from typing import Any

import orjson


class Malformed(ValueError):
    """A line that is not JSON, or neither an object nor an array of objects."""


def records_of(content: bytes) -> list[dict[str, Any]]:
    """The records a non-blank line holds; raises `Malformed` with a short reason."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise Malformed(f"invalid JSON: {exc}") from None
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        if all(isinstance(item, dict) for item in value):
            return value
        raise Malformed("array holds a non-object element")
    raise Malformed(f"not a JSON object (a {type(value).__name__})")
