"""JSON for the stats and the state records: orjson, and exact integers past 64 bits.

orjson refuses integers outside 64 bits ("Integer exceeds 64-bit range") and reads them back as
floats, yet sums of counts near 2**63 exceed that: a document holding one is written by the
standard library instead, exactly, after one leading space. JSON allows the space; `loads`
takes it as the sign to read the document with the standard library too.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

BIG = b" "  # leads a document written with the standard library (it holds a big integer)


def dumps(value: Any, indent: bool = False) -> bytes:
    """`value` as JSON bytes (indented by two spaces with `indent`), integers exact."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=False, allow_nan=False)
    return BIG + text.encode()


def loads(raw: bytes) -> Any:
    """The value of a JSON document written by `dumps` (or anything else), integers exact."""
    if raw.startswith(BIG):
        return json.loads(raw)
    return orjson.loads(raw)
